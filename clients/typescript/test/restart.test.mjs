// A blocking askUser survives askgate being killed (`kill -9`) and started
// again on the same data directory and port: it re-attaches to its question
// and returns the answer given after the restart.
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

test("askUser survives kill -9 and a restart of askgate, and returns the answer given after it", async () => {
  // Every request the client makes, and how each ended: the test proves the
  // client's long poll was cut off by the kill and that it came back.
  const attempts = [];
  const counting = async (url, init) => {
    const attempt = { url: String(url), outcome: "pending" };
    attempts.push(attempt);
    try {
      const response = await fetch(url, init);
      attempt.outcome = response.status;
      return response;
    } catch (error) {
      attempt.outcome = "failed";
      throw error;
    }
  };
  const client = new Client({ baseUrl: askgate.baseUrl, token: AGENT_TOKEN, pollSeconds: 30, fetch: counting });

  let settled = false;
  const asked = client.askUser([DEPLOY], { to: RECIPIENT, timeoutSeconds: 600 });
  asked.finally(() => (settled = true)).catch(() => undefined);
  const id = await askgate.firstShown();
  // The client is holding its long poll on the question when askgate dies.
  await until(() => attempts.some((a) => a.url.includes(`/v1/questions/${id}?wait=`) && a.outcome === "pending"));

  await askgate.kill();
  // Down for a while: the client retries against a closed port.
  await until(() => attempts.filter((a) => a.outcome === "failed").length >= 2);
  assert.equal(settled, false, "askUser gave up while askgate was down");

  await askgate.restart();
  await askgate.shown(id);
  assert.equal(settled, false, "askUser returned before the question was answered");
  await askgate.answer(id, { deploy_target: { options: [1] } });

  assert.deepEqual(await asked, {
    status: "answered",
    answers: { deploy_target: ["Production"] },
    questionId: id,
  });
  // One question was asked, however often the client reconnected.
  assert.equal(attempts.filter((a) => a.url.endsWith("/v1/questions")).length, 1);
  assert.ok(attempts.some((a) => a.outcome === "failed"));
});

test("a reply lost after askgate accepted the question is retried with the same key: one question", async () => {
  // The first POST reaches askgate, which stores the question, but its reply
  // never reaches the client (as when the connection drops at that moment).
  let posts = 0;
  const lossy = async (url, init) => {
    const response = await fetch(url, init);
    if (init?.method === "POST" && String(url).endsWith("/v1/questions") && posts++ === 0) {
      await response.text();
      throw new TypeError("fetch failed", { cause: new Error("the reply was lost") });
    }
    return response;
  };
  const client = new Client({ baseUrl: askgate.baseUrl, token: AGENT_TOKEN, pollSeconds: 5, fetch: lossy });
  const asked = client.askUser([DEPLOY], { to: RECIPIENT, timeoutSeconds: 600 });
  const id = await askgate.firstShown();
  await askgate.answer(id, { deploy_target: { options: [0] } });
  assert.deepEqual(await asked, {
    status: "answered",
    answers: { deploy_target: ["Staging (Recommended)"] },
    questionId: id,
  });
  assert.equal(posts, 2, "the client did not retry the POST");
  assert.deepEqual(await askgate.pendingIds(), [], "the retry asked a second question");
  const state = await askgate.page("GET", "state");
  assert.equal(state.pendingCount, 0);
});

test("askUser called while askgate is down asks once it is back", async () => {
  await askgate.kill();
  let refused = 0;
  const counting = (url, init) =>
    fetch(url, init).catch((error) => {
      refused += 1;
      throw error;
    });
  const client = new Client({ baseUrl: askgate.baseUrl, token: AGENT_TOKEN, pollSeconds: 5, fetch: counting });
  const asked = client.askUser([DEPLOY], { to: RECIPIENT, timeoutSeconds: 600 });
  // The client has found askgate down, and keeps trying.
  await until(() => refused >= 2);
  await askgate.run();
  const id = await askgate.firstShown();
  await askgate.skip(id);
  assert.deepEqual(await asked, { status: "no_answer", reason: "skipped", questionId: id });
});

async function until(probe, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
