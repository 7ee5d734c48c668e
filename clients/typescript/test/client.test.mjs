// The client against the real askgate: a question asked through it and
// answered (or skipped) on the web page, a cancelled one, and askgate's
// refusals, each coming back typed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AskgateError, Client, resultOf, toToolResult } from "../dist/index.js";
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

test("askUser returns the answers given on the web page, typed", async () => {
  const questions = [
    DEPLOY,
    {
      id: "notify",
      header: "Notify",
      question: "Who should hear about the deploy?",
      options: [{ label: "The team (Recommended)" }, { label: "Nobody" }, { label: "Everyone" }],
      multiSelect: true,
    },
    {
      id: "release_name",
      header: "Name",
      question: "What should the release be called?",
      options: [{ label: "v2 (Recommended)" }, { label: "v1.1" }],
    },
  ];
  const asked = client.askUser(questions, { to: RECIPIENT, timeoutSeconds: 600, sessionId: "session-answered" });
  const id = await askgate.firstShown();
  await askgate.answer(id, {
    deploy_target: { options: [1] },
    notify: { options: [0, 2] },
    release_name: { text: "Aurora" },
  });
  const result = await asked;
  assert.deepEqual(result, {
    status: "answered",
    answers: {
      deploy_target: ["Production"],
      notify: ["The team (Recommended)", "Everyone"],
      release_name: ["Aurora"],
    },
    questionId: id,
  });
  assert.deepEqual(toToolResult(result), {
    status: "answered",
    answers: { answers: result.answers },
  });

  // The resource says the same, and `wait` on an ended question returns at once.
  const question = await client.get(id);
  assert.equal(question.status, "answered");
  assert.deepEqual(question.result, toToolResult(result));
  assert.deepEqual(await client.wait(id), result);
});

test("agent names the token and the recipients it may ask", async () => {
  const agent = await client.agent();
  assert.equal(agent.name, "one");
  assert.deepEqual(agent.recipients, [{ name: RECIPIENT, displayName: "Me" }]);
});

test("ask does not wait; wait picks the answer up", async () => {
  const question = await client.ask([DEPLOY], { to: RECIPIENT, timeoutSeconds: 600 });
  assert.equal(question.status, "pending");
  assert.equal(question.to, RECIPIENT);
  assert.equal(resultOf(question), undefined);
  await askgate.shown(question.id);
  const waiting = client.wait(question.id);
  await askgate.answer(question.id, { deploy_target: { options: [0] } });
  assert.deepEqual(await waiting, {
    status: "answered",
    answers: { deploy_target: ["Staging (Recommended)"] },
    questionId: question.id,
  });
});

test("the same idempotency key asks once", async () => {
  const options = { to: RECIPIENT, timeoutSeconds: 600, idempotencyKey: "ts-once" };
  const first = await client.ask([DEPLOY], options);
  const again = await client.ask([DEPLOY], options);
  assert.equal(again.id, first.id);
  await client.cancel(first.id);
});

test("a question skipped on the page is no_answer, reason skipped", async () => {
  const asked = client.askUser([DEPLOY], { to: RECIPIENT, timeoutSeconds: 600 });
  const id = await askgate.firstShown();
  await askgate.skip(id);
  assert.deepEqual(await asked, { status: "no_answer", reason: "skipped", questionId: id });
});

test("a cancelled question is no_answer, reason cancelled, for the waiting askUser", async () => {
  const asked = client.askUser([DEPLOY], { to: RECIPIENT, timeoutSeconds: 600 });
  const id = await askgate.firstShown();
  const cancelled = await client.cancel(id);
  assert.equal(cancelled.status, "cancelled");
  assert.deepEqual(await asked, { status: "no_answer", reason: "cancelled", questionId: id });
  // Cancelling again is harmless.
  assert.equal((await client.cancel(id)).status, "cancelled");
});

test("aborting askUser cancels its question", async () => {
  const controller = new AbortController();
  const asked = client.askUser([DEPLOY], { to: RECIPIENT, timeoutSeconds: 600, signal: controller.signal });
  const id = await askgate.firstShown();
  controller.abort(new Error("the run was stopped"));
  await assert.rejects(asked, { message: "the run was stopped" });
  const question = await client.get(id);
  assert.equal(question.status, "cancelled");
});

test("validation errors come back as AskgateError with askgate's code, path and message", async () => {
  const bad = [{ id: "Deploy Target", header: "Deploy", question: "Where?", options: [{ label: "Only one" }] }];
  const error = await client.askUser(bad, { to: RECIPIENT }).then(
    () => assert.fail("askgate accepted an invalid question"),
    (error) => error,
  );
  assert.ok(error instanceof AskgateError, `not an AskgateError: ${error}`);
  assert.equal(error.status, 422);
  assert.equal(error.code, "invalid_id");
  assert.equal(error.path, "questions[0].id");
  assert.match(error.message, /snake_case/);
  assert.deepEqual(
    error.errors.map(({ code, path }) => [code, path]),
    [
      ["invalid_id", "questions[0].id"],
      ["option_count", "questions[0].options"],
    ],
  );
});

test("other refusals are typed too: unknown recipient, a callback URL not allowed, unknown question, bad token", async () => {
  await assert.rejects(client.ask([DEPLOY], { to: "nobody" }), (error) => {
    assert.ok(error instanceof AskgateError);
    assert.equal(error.path, "to");
    assert.ok(error.status === 403 || error.status === 422, `status ${error.status}`);
    return true;
  });
  // This agent takes no callbacks: a question's own callbackUrl is refused at its path.
  await assert.rejects(client.ask([DEPLOY], { to: RECIPIENT, callbackUrl: "https://hooks.example.com/x" }), {
    name: "AskgateError",
    status: 422,
    code: "invalid_callback_url",
    path: "callbackUrl",
  });
  await assert.rejects(client.get("01ARZ3NDEKTSV4RRFFQ69G5FAV"), {
    name: "AskgateError",
    status: 404,
    code: "not_found",
  });
  const stranger = new Client({ baseUrl: askgate.baseUrl, token: "not-a-token-askgate-knows-0123456789" });
  await assert.rejects(stranger.ask([DEPLOY], { to: RECIPIENT }), {
    name: "AskgateError",
    status: 401,
    code: "unauthorized",
  });
});

test("an askgate that cannot be reached fails with connection_failed once the client stops retrying", async () => {
  const nowhere = new Client({ baseUrl: "http://127.0.0.1:9", token: AGENT_TOKEN, reconnectForMs: 500 });
  await assert.rejects(nowhere.get("01ARZ3NDEKTSV4RRFFQ69G5FAV"), {
    name: "AskgateError",
    code: "connection_failed",
    status: 0,
  });
});
