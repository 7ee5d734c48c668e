// askgate's web page in a real browser (headless Chromium through playwright-core).
//
// Run by tests/e2e/browser.rs against a real `askgate serve`; it can also be run by
// hand against a running server:
//
//   ASKGATE_URL=http://127.0.0.1:PORT ASKGATE_TOKEN=… ASKGATE_RECIPIENT=me \
//   ASKGATE_WEB_LINK=http://127.0.0.1:PORT/web/KEY node tests/browser/web.test.mjs
//
// Questions are asked through the agent API, answered on the page the way a
// person would (taps, typing), and every outcome is checked through the API.
// The page reaches askgate through a small TCP proxy, so that a scenario can
// take askgate away and bring it back; and the page's reads of the whole state
// are counted: after the first, changes must arrive over the event stream.
// Exits 0 when every scenario passed, 1 otherwise; a failed scenario leaves a
// screenshot beside web.png.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { chromium } from 'playwright-core';

import { CHROMIUM, WAIT_MS, agent, card, env, option, recentCard, shots, sleep, until, visible } from './common.mjs';

const API = env('ASKGATE_URL').replace(/\/+$/, '');
const TOKEN = env('ASKGATE_TOKEN');
const LINK = env('ASKGATE_WEB_LINK');
const RECIPIENT = env('ASKGATE_RECIPIENT');
const RUN = Date.now().toString(36);

// --- the agent side ---

// The agent API (tests/browser/common.mjs): ask, wait for the end.
const { api, ask, ended } = agent(API, TOKEN, RECIPIENT, `browser-${RUN}`);

// --- the person's side ---

// The browser reaches askgate through this TCP proxy, so that a test can cut
// every connection and refuse new ones for a while, as a restarting server does.
function proxy(target) {
  const { hostname, port } = new URL(target);
  const sockets = new Set();
  let refusing = false;
  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve({
        origin: `http://127.0.0.1:${server.address().port}`,
        // Cuts every connection; `down` refuses new ones until `up`.
        down() {
          refusing = true;
          for (const socket of sockets) socket.destroy();
        },
        up() {
          refusing = false;
        },
        close() {
          server.close();
          for (const socket of sockets) socket.destroy();
        },
      });
    });
  });
}

// Selects `label` on the card's step, then sends the answer with Send.
async function choose(scope, label) {
  await option(scope, label).click();
  await scope.locator('[data-testid="submit"]').click();
}

async function gone(locator, what) {
  try {
    await locator.waitFor({ state: 'detached', timeout: WAIT_MS });
  } catch (error) {
    throw new Error(`${what} is still on the page: ${error.message.split('\n')[0]}`);
  }
}

// A question arrived without a reload: the marker set on the first load survives.
async function assertNoReload(page) {
  assert.equal(await page.evaluate(() => window.__askgateLoadMarker), 'first load', 'the page was not reloaded');
}

// Phone rules: nothing wider than the screen, every control at least 44px tall.
async function assertPhoneLayout(page, scope, what) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `${what}: the page is ${overflow}px wider than the phone screen`);
  const controls = scope.locator('button:visible, input[type="text"]:visible, [data-testid="option"]:visible');
  const count = await controls.count();
  assert.ok(count > 0, `${what}: there are controls to check`);
  for (let index = 0; index < count; index++) {
    const box = await controls.nth(index).boundingBox();
    const name = await controls.nth(index).evaluate((node) => node.dataset.testid || node.textContent.trim());
    assert.ok(box && box.height >= 44, `${what}: "${name}" is ${box && box.height}px tall, less than 44px`);
    assert.ok(box.width >= 44, `${what}: "${name}" is ${box.width}px wide, less than 44px`);
  }
}

// --- the scenarios ---

const DEPLOY = {
  id: 'deploy_target',
  header: 'Deploy',
  question: 'Where should build <b>42</b> go?',
  options: [
    { label: 'Staging (Recommended)', description: 'safe, resets <i>nightly</i>' },
    { label: 'Production', description: 'live traffic' },
    { label: 'Canary' },
  ],
};

const NOTIFY = {
  id: 'notify',
  header: 'Notify',
  question: 'Who should be told?',
  options: [{ label: 'Team channel' }, { label: 'On-call' }, { label: 'Nobody' }],
  multiSelect: true,
};

async function singleTap(page) {
  // The page is open before the question exists: it has to arrive live.
  const id = await ask({ questions: [DEPLOY], timeoutSeconds: 900 });
  const c = card(page, id);
  await visible(c, 'the new question (delivered live, without a reload)');
  // Worded as the text prompt words it: "15 min" right after asking.
  const timeLeft = await c.locator('[data-testid="time-left"]').textContent();
  assert.match(timeLeft, /^Reply within 15 min · until /, `time left is shown: "${timeLeft}"`);
  await assertNoReload(page);

  // Agent text is shown as text: the markup in it stays literal.
  assert.equal(await c.locator('[data-testid="question-text"]').textContent(), 'Where should build <b>42</b> go?');
  assert.equal(await c.locator('b, i').count(), 0, 'agent text made no elements');
  assert.equal(await c.locator('[data-testid="question-header"]').textContent(), 'Deploy');
  const labels = await c.locator('[data-testid="option"]').evaluateAll((nodes) => nodes.map((n) => n.dataset.label));
  assert.deepEqual(labels, ['Staging (Recommended)', 'Production', 'Canary']);
  // The recommended one says so with a badge, and looks like the others until chosen.
  const shown = await c.locator('[data-testid="option-label"]').allTextContents();
  assert.deepEqual(shown, ['Staging', 'Production', 'Canary'], 'the suffix became a badge');
  assert.equal(await c.locator('[data-testid="recommended"]').count(), 1);
  assert.equal(await option(c, 'Staging (Recommended)').locator('[data-testid="recommended"]').textContent(), 'Recommended');
  const radios = c.locator('input[type="radio"]');
  assert.equal(await radios.count(), 3, 'every option has a radio mark');
  for (let index = 0; index < 3; index++) assert.equal(await radios.nth(index).isChecked(), false, 'nothing is chosen yet');
  const borders = await c
    .locator('[data-testid="option"]')
    .evaluateAll((nodes) => nodes.map((node) => getComputedStyle(node).borderColor));
  assert.equal(new Set(borders).size, 1, `every option has the same border before a choice: ${borders}`);
  const send = c.locator('[data-testid="submit"]');
  assert.equal(await send.textContent(), 'Send');
  assert.equal(await send.isDisabled(), true, 'Send waits for a choice');
  assert.equal(await send.getAttribute('aria-disabled'), 'true');
  assert.equal(await c.locator('[data-testid="skip"]').textContent(), 'Skip', 'one question: Skip, not Skip all');
  const descriptions = await c.locator('[data-testid="option-description"]').allTextContents();
  assert.deepEqual(descriptions, ['safe, resets <i>nightly</i>', 'live traffic']);
  assert.equal(await c.locator('[data-testid="step-bar"]').count(), 0, 'one question needs no step bar');
  assert.equal(await page.locator('[data-testid="empty"]').isVisible(), false, 'the empty note is gone');
  await assertPhoneLayout(page, c, 'the single-choice card');

  // A tap selects; only Send sends.
  await option(c, 'Production').click();
  assert.equal(await option(c, 'Production').locator('input').isChecked(), true, 'a tap selects');
  assert.equal(await send.isEnabled(), true, 'Send is enabled once something is chosen');
  await sleep(300);
  assert.equal((await api('GET', `/v1/questions/${id}`)).json.status, 'pending', 'a tap alone sends nothing');
  await send.click();

  const resource = await ended(id);
  assert.equal(resource.status, 'answered', `status: ${JSON.stringify(resource)}`);
  assert.deepEqual(resource.result, { status: 'answered', answers: { answers: { deploy_target: ['Production'] } } });

  const done = recentCard(page, id);
  await visible(done, 'the summary of the answered question');
  await gone(c, 'the answered question');
  const summary = await done.locator('[data-testid="summary"]').textContent();
  assert.match(summary, /Production/, `the summary names the answer: "${summary}"`);
  assert.equal(await done.getAttribute('data-status'), 'answered');
  assert.equal(await done.locator('[data-testid="status"]').textContent(), 'Answered');
  await assertNoReload(page);
}

async function stepper(page) {
  const id = await ask({ questions: [DEPLOY, NOTIFY] });
  const c = card(page, id);
  await visible(c, 'the two-question prompt');
  await assertNoReload(page);

  const stepCount = c.locator('[data-testid="step-count"]');
  const next = c.locator('[data-testid="next"]');
  const back = c.locator('[data-testid="back"]');
  const submit = c.locator('[data-testid="submit"]');
  const checkbox = (label) => option(c, label).locator('input[type="checkbox"]');

  // Step 1: a single-select question; no Submit yet, Next only after a choice.
  await visible(c.locator('[data-testid="step-bar"]'), 'the step bar');
  assert.equal(await stepCount.textContent(), '1 / 2');
  assert.equal(await c.locator('[data-testid="question-header"]').textContent(), 'Deploy');
  assert.equal(await submit.isVisible(), false, 'no Submit on the first of two steps');
  assert.equal(await back.isVisible(), false, 'no Back on the first step');
  assert.equal(await next.isDisabled(), true, 'Next waits for an answer');
  await assertPhoneLayout(page, c, 'step 1');

  await option(c, 'Staging (Recommended)').click();
  assert.equal(await option(c, 'Staging (Recommended)').locator('input').isChecked(), true, 'a tap selects');
  assert.equal(await next.isEnabled(), true, 'Next is enabled after a choice');
  // Choosing on step 1 of several does not send anything yet.
  assert.equal((await api('GET', `/v1/questions/${id}`)).json.status, 'pending');
  assert.equal(await c.locator('[data-testid="skip"]').textContent(), 'Skip all', 'Skip on several questions says what it does');
  await next.click();
  // Next saved step 1 as the question's progress: still pending, step 1 kept by askgate.
  await until('step 1 is saved as progress', async () => {
    const resource = (await api('GET', `/v1/questions/${id}`)).json;
    return resource.status === 'pending' && Array.isArray(resource.progress.deploy_target);
  });

  // Step 2: a multi-select question; Submit only once it has an answer.
  await until('step 2 is shown', async () => (await stepCount.textContent()) === '2 / 2');
  assert.equal(await c.locator('[data-testid="question-header"]').textContent(), 'Notify');
  assert.equal(await c.locator('input[type="checkbox"]').count(), 3, 'multi-select options are checkboxes');
  assert.equal(await next.isVisible(), false, 'no Next on the last step');
  assert.equal(await submit.isVisible(), true, 'Submit on the last step');
  assert.equal(await submit.isDisabled(), true, 'Submit waits until every question has an answer');
  await assertPhoneLayout(page, c, 'step 2');

  await option(c, 'On-call').click();
  assert.equal(await checkbox('On-call').isChecked(), true, 'a tap ticks the checkbox');
  assert.equal(await submit.isEnabled(), true, 'Submit is enabled once every question has an answer');

  // Back keeps what was chosen.
  await back.click();
  await until('step 1 is shown again', async () => (await stepCount.textContent()) === '1 / 2');
  assert.equal(await option(c, 'Staging (Recommended)').locator('input').isChecked(), true, 'step 1 kept its choice');
  await next.click();
  await until('step 2 is shown again', async () => (await stepCount.textContent()) === '2 / 2');
  assert.equal(await checkbox('On-call').isChecked(), true, 'step 2 kept its choice');

  await c.locator('[data-testid="other-input"]').fill('my manager');
  await submit.click();

  const resource = await ended(id);
  assert.equal(resource.status, 'answered', `status: ${JSON.stringify(resource)}`);
  assert.deepEqual(resource.result, {
    status: 'answered',
    answers: { answers: { deploy_target: ['Staging (Recommended)'], notify: ['On-call', 'my manager'] } },
  });

  const done = recentCard(page, id);
  await visible(done, 'the summary of the answered prompt');
  await gone(c, 'the answered prompt');
  const summary = await done.locator('[data-testid="summary"]').textContent();
  assert.match(summary, /Staging \(Recommended\)/, `the summary names the first answer: "${summary}"`);
  assert.match(summary, /my manager/, `the summary names the free text: "${summary}"`);
  await assertNoReload(page);
}

async function skip(page) {
  const id = await ask({
    questions: [
      {
        id: 'db_engine',
        header: 'Database',
        question: 'Which database should the service use?',
        options: [{ label: 'SQLite (Recommended)' }, { label: 'PostgreSQL' }],
      },
    ],
  });
  const c = card(page, id);
  await visible(c, 'the question to skip');
  await c.locator('[data-testid="skip"]').click();

  const resource = await ended(id);
  assert.equal(resource.status, 'skipped', `status: ${JSON.stringify(resource)}`);
  assert.deepEqual(resource.result, { status: 'no_answer' });

  const done = recentCard(page, id);
  await visible(done, 'the summary of the skipped question');
  await gone(c, 'the skipped question');
  assert.equal(await done.getAttribute('data-status'), 'skipped');
  const summary = await done.locator('[data-testid="summary"]').textContent();
  assert.match(summary, /Skipped/, `the summary says it was skipped: "${summary}"`);
  await assertNoReload(page);
}

// Changes come over the stream, one question at a time: a question ending
// elsewhere turns into its summary, and Recent keeps as many as the state does.
async function reminded(page) {
  // A reminder one second into the wait: askgate takes it within a sweep or
  // two, and the card hears of it over the stream.
  const id = await ask({ questions: [DEPLOY], timeoutSeconds: 600, remind: ['1s'] });
  const c = card(page, id);
  await visible(c, 'the question that will be reminded');
  const timeLeft = c.locator('[data-testid="time-left"]');
  assert.equal(await timeLeft.evaluate((node) => node.classList.contains('reminded')), false, 'not red before the reminder');
  const black = await timeLeft.evaluate((node) => getComputedStyle(node).color);
  await page.waitForFunction(
    (question) =>
      document
        .querySelector(`[data-testid="question-card"][data-question-id="${question}"] [data-testid="time-left"]`)
        ?.classList.contains('reminded'),
    id,
    { timeout: WAIT_MS },
  );
  const red = await timeLeft.evaluate((node) => getComputedStyle(node).color);
  assert.notEqual(red, black, `the countdown turned red: ${black} → ${red}`);
  assert.equal(red, 'rgb(180, 35, 24)', 'the page\'s "bad" red');
  await assertNoReload(page);
  const resource = await api('GET', `/v1/questions/${id}`);
  assert.ok(resource.json.reminders[0].sentAt, `the resource says it was sent: ${resource.text}`);
  await choose(c, 'Canary');
  assert.equal((await ended(id)).status, 'answered');
}

async function endedElsewhere(page) {
  const id = await ask({ questions: [DEPLOY] });
  const c = card(page, id);
  await visible(c, 'the question the agent will cancel');
  const cancelled = await api('POST', `/v1/questions/${id}/cancel`);
  assert.equal(cancelled.status, 200, `cancel: ${cancelled.text}`);

  const done = recentCard(page, id);
  await visible(done, 'the summary of the question cancelled by the agent');
  await gone(c, 'the cancelled question');
  assert.equal(await done.getAttribute('data-status'), 'cancelled');
  // Its badge, as an answered or skipped card has; "Cancelled" is all there is to say.
  assert.equal(await done.locator('[data-testid="status"]').textContent(), 'Cancelled');
  assert.equal(await done.locator('[data-testid="summary"]').count(), 0, 'the badge is not said twice');

  // More ended questions than Recent shows: the newest stay, as many as the state lists.
  const state = await (await fetch(`${LINK}/api/state`)).json();
  const limit = state.recentLimit;
  assert.ok(Number.isInteger(limit) && limit > 0, `the state says how many ended questions it lists: ${limit}`);
  const ids = [];
  for (let n = 0; n <= limit; n++) ids.push(await ask({ questions: [DEPLOY] }));
  const newest = ids[ids.length - 1];
  await until(`${ids.length} new questions are shown`, async () => (await card(page, newest).count()) === 1);
  for (const each of ids) assert.equal((await api('POST', `/v1/questions/${each}/cancel`)).status, 200);
  await visible(recentCard(page, newest), 'the newest cancelled question');
  await until('every cancelled question left the pending list', async () => {
    for (const each of ids) if ((await card(page, each).count()) > 0) return false;
    return true;
  });
  const shown = await page
    .locator('[data-testid="recent-card"]')
    .evaluateAll((nodes) => nodes.map((node) => node.dataset.questionId));
  const expected = ids.slice().reverse().slice(0, limit);
  assert.deepEqual(shown, expected, 'Recent shows the newest, newest first, as many as the state lists');
  const listed = (await (await fetch(`${LINK}/api/state`)).json()).recent.map((q) => q.id);
  assert.deepEqual(shown, listed, 'Recent on the page is what the state lists');
  await assertNoReload(page);
}

// An answer askgate could not take: the person reads askgate's own sentence,
// and the same tap works once askgate takes answers again.
async function refusedAnswer(page) {
  const id = await ask({ questions: [DEPLOY] });
  const c = card(page, id);
  await visible(c, 'the question whose first answer fails');
  const message = 'The answer could not be saved; try again in a moment.';
  const route = `**/api/questions/${id}/answer`;
  await page.route(route, (request) =>
    request.fulfill({
      status: 503,
      contentType: 'application/json',
      body: JSON.stringify({ error: { code: 'store_unavailable', message } }),
    }),
  );
  try {
    await choose(c, 'Canary');
    const error = c.locator('[data-testid="card-error"]');
    await visible(error, 'the error under the question');
    const text = await error.textContent();
    assert.ok(text.includes(message), `the error shows askgate's message: "${text}"`);
    assert.equal((await api('GET', `/v1/questions/${id}`)).json.status, 'pending');
  } finally {
    await page.unroute(route);
  }
  await c.locator('[data-testid="submit"]').click();
  const resource = await ended(id);
  assert.deepEqual(resource.result, { status: 'answered', answers: { answers: { deploy_target: ['Canary'] } } });
  await visible(recentCard(page, id), 'the summary of the question answered on the second tap');
  await gone(c, 'the question answered on the second tap');
}

// askgate goes away for a while (its connections cut, new ones refused) and
// comes back: the page reconnects, reads the whole state, and shows what
// changed meanwhile; a tap while askgate was away said it could not reach
// askgate, and that goes once the page is live again.
async function reconnect(page, link, reads) {
  const before = reads();
  const ending = await ask({ questions: [DEPLOY] });
  await visible(card(page, ending), 'the question that will end while askgate is away');
  const kept = await ask({ questions: [DEPLOY] });
  await visible(card(page, kept), 'the question tapped while askgate is away');
  link.down();
  await page.locator('[data-testid="connection"][data-state="reconnecting"]').waitFor({ timeout: WAIT_MS });
  await choose(card(page, kept), 'Canary');
  const unreachable = card(page, kept).locator('[data-testid="card-error"]');
  await visible(unreachable, 'the "could not reach askgate" error');
  assert.match(await unreachable.textContent(), /^Could not reach askgate\./);
  const asked = await ask({ questions: [DEPLOY] });
  assert.equal((await api('POST', `/v1/questions/${ending}/cancel`)).status, 200);
  link.up();
  await page.locator('[data-testid="connection"][data-state="live"]').waitFor({ timeout: WAIT_MS });
  try {
    await unreachable.waitFor({ state: 'hidden', timeout: WAIT_MS });
  } catch (error) {
    throw new Error(`"could not reach askgate" stayed after the page was live again: ${error.message.split('\n')[0]}`);
  }
  await card(page, kept).locator('[data-testid="submit"]').click();
  assert.deepEqual((await ended(kept)).result, {
    status: 'answered',
    answers: { answers: { deploy_target: ['Canary'] } },
  });
  await visible(card(page, asked), 'the question asked while askgate was away');
  await visible(recentCard(page, ending), 'the summary of the question that ended while askgate was away');
  await gone(card(page, ending), 'the question that ended while askgate was away');
  assert.ok(reads() > before, 'the page read the state after it reconnected');
  await assertNoReload(page);
  assert.equal((await api('POST', `/v1/questions/${asked}/cancel`)).status, 200);
  await visible(recentCard(page, asked), 'the summary of the question cancelled after the reconnect');
}

// More pending than the state lists: a page opened now shows the first page
// and counts them all; a question asked meanwhile counts at once and shows
// when the person pages to it, one that ends leaves the count, "Show more"
// loads the rest, and once every card is there a new one gets its card live.
async function paging(context) {
  const ids = [];
  for (let n = 0; n < 60; n++) ids.push(await ask({ questions: [DEPLOY], timeoutSeconds: 3600 }));
  const state = await (await fetch(`${LINK}/api/state`)).json();
  assert.equal(state.pendingCount, ids.length, `the state counts every pending question: ${state.pendingCount}`);
  const first = state.pending.length;
  assert.ok(first > 0 && first < ids.length, `the state lists one page (${first}) of ${ids.length}`);
  assert.equal(state.more, true, 'the state says more are pending');

  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  const count = page.locator('[data-testid="pending-count"]');
  const cards = page.locator('[data-testid="question-card"]');
  const more = page.locator('[data-testid="show-more"]');
  const shownOf = page.locator('[data-testid="shown-of"]');
  const counted = (n) =>
    until(`the page counts ${n} waiting`, async () => (await count.textContent()) === `${n} waiting`);
  try {
    await page.goto(LINK, { waitUntil: 'load' });
    await page.locator('[data-testid="connection"][data-state="live"]').waitFor({ timeout: WAIT_MS });
    await counted(ids.length);
    await until(`the first ${first} cards are shown`, async () => (await cards.count()) === first);
    assert.deepEqual(
      await cards.evaluateAll((nodes) => nodes.map((node) => node.dataset.questionId)),
      ids.slice(0, first),
      'the first page, oldest first',
    );
    await visible(more, 'the "Show more" button');
    assert.equal(await shownOf.textContent(), `Showing ${first} of ${ids.length}`);
    assert.equal(await page.title(), `(${ids.length}) askgate`);
    await assertPhoneLayout(page, page.locator('[data-testid="more"]'), 'Show more');

    // Asked now: counted at once, shown when the person pages to it.
    const late = await ask({ questions: [DEPLOY], timeoutSeconds: 3600 });
    ids.push(late);
    await counted(ids.length);
    assert.equal(await card(page, late).count(), 0, 'a question beyond the last card waits for Show more');
    // One not shown yet ends: it leaves the count.
    const unseen = ids[first + 2];
    assert.equal((await api('POST', `/v1/questions/${unseen}/cancel`)).status, 200);
    ids.splice(ids.indexOf(unseen), 1);
    await counted(ids.length);
    const note = `Showing ${first} of ${ids.length}`;
    await until('the note says how many are shown', async () => (await shownOf.textContent()) === note);

    await more.click();
    await until('every pending card is shown', async () => (await cards.count()) === ids.length);
    assert.deepEqual(
      await cards.evaluateAll((nodes) => nodes.map((node) => node.dataset.questionId)),
      ids,
      'Show more added the rest in order, the late one last',
    );
    await until('the "Show more" row goes once every card is shown', async () =>
      page.locator('[data-testid="more"]').isHidden(),
    );
    assert.equal(await count.textContent(), `${ids.length} waiting`);
    const focused = await page.evaluate(() => {
      const card = document.activeElement && document.activeElement.closest('[data-testid="question-card"]');
      return card ? card.dataset.questionId : null;
    });
    assert.equal(focused, ids[first], 'with the button gone, the focus is on the first card it showed');

    // Every card is there: a new question gets its card live, and one that ends leaves.
    const live = await ask({ questions: [DEPLOY] });
    ids.push(live);
    await visible(card(page, live), 'a question asked once every card is shown');
    await counted(ids.length);
    assert.equal((await api('POST', `/v1/questions/${ids[0]}/cancel`)).status, 200);
    await gone(card(page, ids[0]), 'the cancelled question');
    ids.shift();
    await counted(ids.length);
    assert.deepEqual(problems, [], 'the second page logged no errors');
  } finally {
    for (const id of ids) await api('POST', `/v1/questions/${id}/cancel`);
    await page.close();
  }
}

// --- running them ---

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  for (const old of fs.readdirSync(shots)) {
    if (/^web-failed-\d+\.png$/.test(old)) fs.rmSync(path.join(shots, old));
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  let passed = 0;
  let failed = 0;
  const link = await proxy(LINK);
  const proxied = link.origin + new URL(LINK).pathname;
  try {
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
      locale: 'en-US',
    });
    const page = await context.newPage();
    // Reads of the whole state: once the stream is open, and not again while it stays up.
    let stateReads = 0;
    page.on('request', (request) => {
      if (new URL(request.url()).pathname.endsWith('/api/state')) stateReads++;
    });
    const problems = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
    });

    // A wrong key opens nothing: JSON for an API client, a small page in a browser.
    for (const wrong of [`${LINK}x`, `${LINK}x/api/state`]) {
      const answer = await fetch(wrong);
      assert.equal(answer.status, 404, `GET ${wrong} (a wrong key) should answer 404, got ${answer.status}`);
      const type = answer.headers.get('content-type') || '';
      assert.ok(type.startsWith('application/json'), `GET ${wrong} without Accept: text/html is JSON, not ${type}`);
    }
    {
      const lost = await context.newPage();
      const problems = [];
      lost.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      lost.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
      const answer = await lost.goto(`${LINK}x`, { waitUntil: 'load' });
      assert.equal(answer && answer.status(), 404, 'a wrong key in a browser answers 404');
      const type = (answer && answer.headers()['content-type']) || '';
      assert.ok(type.startsWith('text/html'), `a wrong key in a browser gets a page, not ${type}`);
      const said = await lost.locator('[data-testid="notice"]').textContent();
      assert.equal(said, 'This link does not work. Ask for a new one.');
      const styled = await lost.evaluate(() => getComputedStyle(document.querySelector('.notice')).borderRadius);
      assert.notEqual(styled, '0px', "the page has the page's style");
      assert.deepEqual(problems, [], 'the wrong-key page loads cleanly');
      await lost.close();
      console.log('ok - a wrong key gets JSON for API clients and a small page in a browser');
    }

    const response = await page.goto(proxied, { waitUntil: 'load' });
    assert.equal(response && response.status(), 200, `GET ${proxied} should answer 200`);
    await page.evaluate(() => {
      window.__askgateLoadMarker = 'first load';
    });
    // Wait for the live stream before anything is asked, so that SSE delivers it.
    await page.locator('[data-testid="connection"][data-state="live"]').waitFor({ timeout: WAIT_MS });
    await visible(page.locator('[data-testid="empty"]'), 'the "nothing waiting" note on a fresh page');
    assert.equal(stateReads, 1, 'the page read the state once when it opened');

    // Each scenario but the last gets every change over the stream alone;
    // `failing` ones make requests fail, which the browser logs as errors.
    const scenarios = [
      ['(a) a question ending elsewhere turns into its summary; Recent stays bounded', endedElsewhere, {}],
      ['(b) a single-select question answered by a tap', singleTap, {}],
      ['(b2) a reminder turns the countdown red, live', reminded, {}],
      ['(c) a two-question prompt through the stepper', stepper, {}],
      ['(d) Skip gives no_answer', skip, {}],
      [
        '(e) more pending than a page: the count shows them all, Show more loads the rest, a new one counts live',
        () => paging(context),
        {},
      ],
      ["(f) a refused answer shows askgate's message; the next tap answers", refusedAnswer, { failing: true }],
      [
        '(g) after askgate comes back, the page reads the state and catches up',
        (page) => reconnect(page, link, () => stateReads),
        { failing: true, readsState: true },
      ],
    ];
    for (const [name, run, { failing, readsState }] of scenarios) {
      const before = problems.length;
      const readsBefore = stateReads;
      try {
        await run(page);
        const logged = problems
          .slice(before)
          .filter((problem) => !failing || !/^console error: Failed to load resource: /.test(problem));
        assert.deepEqual(logged, [], 'the page logged no errors');
        if (!readsState) {
          const message = 'every change came over the stream: the page did not read the whole state';
          assert.equal(stateReads - readsBefore, 0, message);
        }
        passed++;
        console.log(`ok - ${name}`);
      } catch (error) {
        failed++;
        const file = path.join(shots, `web-failed-${passed + failed}.png`);
        await page.screenshot({ path: file, fullPage: true }).catch(() => {});
        console.log(`not ok - ${name}\n${indent(error.stack || String(error))}\n  screenshot: ${file}`);
      }
    }

    // A pending prompt beside the summaries, for a person to look at.
    const id = await ask({ questions: [DEPLOY, NOTIFY] }).catch(() => null);
    if (id) {
      await visible(card(page, id), 'the prompt for the screenshot').catch(() => {});
      await option(card(page, id), 'Staging (Recommended)')
        .click({ timeout: 2000 })
        .catch(() => {});
    }
    await page.evaluate(() => window.scrollTo(0, 0));
    const file = path.join(shots, 'web.png');
    await page.screenshot({ path: file, fullPage: true });
    console.log(`screenshot: ${file}`);
  } finally {
    await browser.close();
    link.close();
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0;
}

function indent(text) {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (error) => {
    console.error(`web.test.mjs failed before its scenarios ran: ${error.stack || error}`);
    process.exit(1);
  },
);
