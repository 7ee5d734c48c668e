// The Vercel AI SDK tool: called the way the SDK calls a tool (its input
// validated against the tool's schema, then `execute(input, {toolCallId,
// messages, abortSignal})`), with fixed arguments and no model, it returns
// the answer given on the page as askgate's MCP tool result.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { asSchema } from "ai";

import { Client, TOOL_DESCRIPTION } from "../dist/index.js";
import { askUserTool } from "../dist/ai.js";
import { AGENT_TOKEN, Askgate, DEPLOY, RECIPIENT } from "./harness.mjs";

let askgate;
let client;

before(async () => {
  askgate = await Askgate.start();
  client = new Client({ baseUrl: askgate.baseUrl, token: AGENT_TOKEN, pollSeconds: 5 });
});

after(async () => {
  await askgate?.stop();
});

/** What the SDK does with a model's tool call before it runs the tool. */
async function callLikeTheSdk(tool, args, toolCallId) {
  const parsed = await asSchema(tool.inputSchema).validate(args);
  if (!parsed.success) throw parsed.error;
  return tool.execute(parsed.value, { toolCallId, messages: [], abortSignal: new AbortController().signal });
}

test("the AI SDK tool's execute returns the answer given on the page", async () => {
  const tool = askUserTool(client, { to: RECIPIENT, timeoutSeconds: 600 });
  assert.equal(tool.description, TOOL_DESCRIPTION);

  const running = callLikeTheSdk(tool, { questions: [DEPLOY] }, "call_deploy_1");
  const id = await askgate.firstShown();
  // The SDK's tool call id is the question's idempotency key: the same call
  // again finds the same question.
  const again = await client.ask([DEPLOY], { to: RECIPIENT, timeoutSeconds: 600, toolCallId: "call_deploy_1" });
  assert.equal(again.id, id);
  await askgate.answer(id, { deploy_target: { options: [0] } });
  assert.deepEqual(await running, {
    status: "answered",
    answers: { answers: { deploy_target: ["Staging (Recommended)"] } },
  });
});

test("the AI SDK tool returns no_answer for a skipped question", async () => {
  const tool = askUserTool(client, { to: RECIPIENT, timeoutSeconds: 600 });
  const running = callLikeTheSdk(tool, { questions: [DEPLOY] }, "call_deploy_2");
  const id = await askgate.firstShown();
  await askgate.skip(id);
  assert.deepEqual(await running, { status: "no_answer" });
});

test("the tool's schema refuses what askgate would refuse before anything is asked", async () => {
  const tool = askUserTool(client, { to: RECIPIENT });
  const parsed = await asSchema(tool.inputSchema).validate({
    questions: [{ ...DEPLOY, options: [{ label: "Only one" }] }],
  });
  assert.equal(parsed.success, false);
  assert.deepEqual(await askgate.pendingIds(), []);
});
