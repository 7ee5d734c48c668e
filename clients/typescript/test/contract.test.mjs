// The client's types and the model guidance it carries, checked against the
// OpenAPI document the askgate binary under test serves: src/openapi.ts is
// what `npm run generate` renders from that document, word for word, and
// the tool description and field descriptions are askgate's own (the ask
// operations' description, the schema's descriptions, and — when run by
// `cargo test --test e2e clients::` — askgate_core::guidance itself).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";

import { asSchema } from "ai";

import { FIELD_DESCRIPTIONS, TOOL_DESCRIPTION, TOOL_NAME } from "../dist/index.js";
import { askUserTool } from "../dist/ai.js";
import { render } from "../scripts/generate.mjs";
import { Askgate } from "./harness.mjs";

let askgate;
let document;

before(async () => {
  askgate = await Askgate.start();
  document = await (await fetch(`${askgate.baseUrl}/openapi.json`)).json();
});

after(async () => {
  await askgate?.stop();
});

test("src/openapi.ts is what the served /openapi.json generates (run `npm run generate` when it changed)", async () => {
  const committed = await readFile(new URL("../src/openapi.ts", import.meta.url), "utf8");
  const generated = await render(document);
  assert.equal(committed, generated);
});

test("the tool description is the ask operations' description", () => {
  assert.equal(TOOL_DESCRIPTION, document.paths["/v1/ask"].post.description);
  assert.equal(TOOL_DESCRIPTION, document.paths["/v1/questions"].post.description);
  assert.equal(document.paths["/v1/ask"].post.operationId, TOOL_NAME);
});

test("the tool description and field descriptions are askgate_core::guidance's, when the Rust test passes them", (t) => {
  const passed = process.env.ASKGATE_GUIDANCE;
  if (!passed) {
    t.skip("ASKGATE_GUIDANCE is set by `cargo test --test e2e clients::`");
    return;
  }
  const guidance = JSON.parse(passed);
  assert.equal(TOOL_DESCRIPTION, guidance.toolDescription);
  assert.equal(TOOL_NAME, guidance.toolName);
  assert.deepEqual({ ...FIELD_DESCRIPTIONS }, guidance.fields);
});

/** The descriptions of the ask_user arguments in a JSON Schema, by field path. */
function descriptions(schema, question, option) {
  return {
    questions: schema.properties.questions.description,
    "questions[].id": question.properties.id.description,
    "questions[].header": question.properties.header.description,
    "questions[].question": question.properties.question.description,
    "questions[].options": question.properties.options.description,
    "questions[].options[].label": option.properties.label.description,
    "questions[].options[].description": option.properties.description.description,
    "questions[].multiSelect": question.properties.multiSelect.description,
  };
}

test("the field descriptions are the served schema's, and the AI SDK tool's schema carries them", async () => {
  const request = document.components.schemas.QuestionRequest;
  const question = document.components.schemas.AskQuestion;
  const served = {
    ...descriptions(request, question, question.properties.options.items),
    timeoutSeconds: request.properties.timeoutSeconds.description,
  };
  assert.deepEqual({ ...FIELD_DESCRIPTIONS }, served);

  const tool = askUserTool(/* client */ {}, {});
  const schema = await asSchema(tool.inputSchema).jsonSchema;
  const toolQuestion = schema.properties.questions.items;
  const toolOption = toolQuestion.properties.options.items;
  const { timeoutSeconds: _, ...fields } = FIELD_DESCRIPTIONS;
  assert.deepEqual(descriptions(schema, toolQuestion, toolOption), fields);
  // The same limits askgate checks.
  assert.equal(schema.properties.questions.minItems, request.properties.questions.minItems);
  assert.equal(schema.properties.questions.maxItems, request.properties.questions.maxItems);
  assert.equal(toolQuestion.properties.options.minItems, question.properties.options.minItems);
  assert.equal(toolQuestion.properties.options.maxItems, question.properties.options.maxItems);
  assert.equal(toolQuestion.properties.id.pattern, question.properties.id.pattern);
  assert.deepEqual(toolQuestion.required.sort(), [...question.required].sort());
});
