// A question nobody answers in time: askUser returns no_answer, reason
// expired, when askgate's deadline passes (30 seconds, askgate's shortest).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Client } from "../dist/index.js";
import { AGENT_TOKEN, Askgate, DEPLOY, RECIPIENT } from "./harness.mjs";

let askgate;

before(async () => {
  askgate = await Askgate.start();
});

after(async () => {
  await askgate?.stop();
});

test("a question nobody answers expires: no_answer, reason expired", { timeout: 90_000 }, async () => {
  const client = new Client({ baseUrl: askgate.baseUrl, token: AGENT_TOKEN, pollSeconds: 10 });
  const started = Date.now();
  const result = await client.askUser([DEPLOY], { to: RECIPIENT, timeoutSeconds: 30 });
  assert.deepEqual(result, { status: "no_answer", reason: "expired", questionId: result.questionId });
  assert.ok(Date.now() - started >= 29_000, `expired after ${Date.now() - started} ms, before its 30 s`);
  assert.equal((await client.get(result.questionId)).status, "expired");
});
