// One page of askgate's web page in headless Chromium, driven step by step by
// a Rust test (tests/e2e/support/browser.rs): one JSON command per line on stdin,
// one JSON answer per line on stdout ({"ok": true, ...} or {"ok": false,
// "error": "...", "screenshot": "..."}). The Rust side acts in a chat app's
// fake between steps, so one scenario can tap in Telegram and watch the page.
//
// Commands:
//   {"open": LINK}                       open the page; answers once its stream is live
//   {"card": ID}                          wait for question ID's card; answers its option labels
//                                         (as the agent wrote them, " (Recommended)" included)
//   {"tap": {"id": ID, "label": LABEL}}   tap that option on ID's card (its current step): it selects
//   {"reload": true}                      reload the page; answers once its stream is live again
//   {"steps": ID}                         which steps of ID's card show as done, and the current one
//   {"press": {"id": ID, "button": TESTID}}  press a button of ID's card (submit, next, back, skip)
//   {"summary": ID}                       wait for ID to show as ended; answers its summary,
//                                         checking it came live (no reload, no second state read)
//   {"close": true}                       close the browser and exit

import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const shots = process.env.ASKGATE_SCREENSHOT_DIR || path.resolve(here, '..', '..', 'target', 'browser');
const CHROMIUM = process.env.ASKGATE_CHROMIUM || '/usr/bin/chromium';
const WAIT_MS = 20_000;

let browser = null;
let page = null;
let stateReads = 0;
const problems = [];
let commands = 0;

const card = (id) => page.locator(`[data-testid="question-card"][data-question-id="${id}"]`);
const recentCard = (id) => page.locator(`[data-testid="recent-card"][data-question-id="${id}"]`);

// A string inside a CSS attribute selector's double quotes.
function cssString(text) {
  return text.replace(/["\\]/g, '\\$&');
}

async function visible(locator, what) {
  try {
    await locator.waitFor({ state: 'visible', timeout: WAIT_MS });
  } catch (error) {
    throw new Error(`${what} did not appear on the page: ${error.message.split('\n')[0]}`);
  }
}

function expect(condition, message) {
  if (!condition) throw new Error(message);
}

async function open(link) {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'en-US' });
  page = await context.newPage();
  page.on('request', (request) => {
    if (new URL(request.url()).pathname.endsWith('/api/state')) stateReads++;
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  const response = await page.goto(link, { waitUntil: 'load' });
  expect(response && response.status() === 200, `the page answered ${response && response.status()}`);
  await page.evaluate(() => {
    window.__askgateLoadMarker = 'first load';
  });
  const live = page.locator('[data-testid="connection"][data-state="live"]');
  await live.waitFor({ state: 'attached', timeout: WAIT_MS });
  return {};
}

async function showCard(id) {
  const c = card(id);
  await visible(c, `the card of question ${id}`);
  const options = c.locator('[data-testid="option"]');
  return { labels: await options.evaluateAll((nodes) => nodes.map((node) => node.dataset.label)) };
}

async function tap({ id, label }) {
  const c = card(id);
  await visible(c, `the card of question ${id}`);
  const option = c.locator(`[data-testid="option"][data-label="${cssString(label)}"]`);
  await option.click();
  expect(await option.locator('input').isChecked(), `tapping "${label}" selected it`);
  return {};
}

async function steps(id) {
  const c = card(id);
  await visible(c, `the card of question ${id}`);
  const segments = c.locator('[data-testid="segment"]');
  const count = await segments.count();
  const done = [];
  let current = null;
  for (let index = 0; index < count; index++) {
    const classes = (await segments.nth(index).getAttribute('class')) || '';
    done.push(classes.split(/\s+/).includes('done'));
    if (classes.split(/\s+/).includes('current')) current = index;
  }
  const header = await c.locator('[data-testid="question-header"]').first().textContent();
  return { done, current, header };
}

async function press({ id, button }) {
  const c = card(id);
  await visible(c, `the card of question ${id}`);
  const target = c.locator(`[data-testid="${button}"]`);
  await target.click();
  return {};
}

async function summary(id) {
  const done = recentCard(id);
  await visible(done, `the summary of question ${id}`);
  await card(id).waitFor({ state: 'detached', timeout: WAIT_MS });
  const text = await done.locator('[data-testid="summary"]').textContent();
  const marker = await page.evaluate(() => window.__askgateLoadMarker);
  expect(marker === 'first load', 'the page was reloaded');
  expect(stateReads === 1, `the page read its whole state ${stateReads} times: the change did not come over the stream`);
  expect(problems.length === 0, `the page logged errors: ${problems.join('; ')}`);
  return { summary: text };
}

async function reload() {
  // The reloaded page reads its state once, as a page opened anew does.
  stateReads = 0;
  await page.reload({ waitUntil: 'load' });
  await page.evaluate(() => {
    window.__askgateLoadMarker = 'first load';
  });
  await page.locator('[data-testid="connection"][data-state="live"]').waitFor({ state: 'attached', timeout: WAIT_MS });
  return {};
}

async function run(command) {
  if ('open' in command) return open(command.open);
  if ('reload' in command) return reload();
  if ('card' in command) return showCard(command.card);
  if ('tap' in command) return tap(command.tap);
  if ('summary' in command) return summary(command.summary);
  if ('steps' in command) return steps(command.steps);
  if ('press' in command) return press(command.press);
  throw new Error(`unknown command ${JSON.stringify(command)}`);
}

async function close() {
  if (browser) await browser.close().catch(() => {});
  process.exit(0);
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  let command;
  try {
    command = JSON.parse(line);
  } catch (error) {
    console.log(JSON.stringify({ ok: false, error: `not JSON: ${line}` }));
    continue;
  }
  if (command.close) await close();
  commands++;
  try {
    const answer = await run(command);
    console.log(JSON.stringify({ ok: true, ...answer }));
  } catch (error) {
    let screenshot = null;
    if (page) {
      fs.mkdirSync(shots, { recursive: true });
      screenshot = path.join(shots, `driver-failed-${process.pid}-${commands}.png`);
      await page.screenshot({ path: screenshot, fullPage: true }).catch(() => {
        screenshot = null;
      });
    }
    console.log(JSON.stringify({ ok: false, error: error.stack || String(error), screenshot }));
  }
}
await close();
