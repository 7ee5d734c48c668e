// What the browser suites share: the agent side (asking through the API,
// reading a question once it ended), waiting, and launching Chromium.

import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const shots = process.env.ASKGATE_SCREENSHOT_DIR || path.resolve(here, '..', '..', 'target', 'browser');
export const CHROMIUM = process.env.ASKGATE_CHROMIUM || '/usr/bin/chromium';
export const WAIT_MS = 15_000;

export function env(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`the environment variable ${name} is not set (see the comment at the top of web.test.mjs).`);
    process.exit(2);
  }
  return value;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The agent API of askgate at `base`, with `token`, asking `recipient`.
export function agent(base, token, recipient, run) {
  let sessions = 0;
  async function api(method, route, body) {
    const response = await fetch(base + route, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: response.status, json, text };
  }
  async function ask(args) {
    const body = { ...args, to: recipient, sessionId: `${run}-${++sessions}` };
    const response = await api('POST', '/v1/questions', body);
    assert.equal(response.status, 201, `POST /v1/questions answered ${response.status}: ${response.text}`);
    return response.json.id;
  }
  // The question's resource once it is no longer pending.
  async function ended(id, within = WAIT_MS) {
    const deadline = Date.now() + within;
    let last = null;
    while (Date.now() < deadline) {
      last = await api('GET', `/v1/questions/${id}`);
      assert.equal(last.status, 200, `GET /v1/questions/${id} answered ${last.status}: ${last.text}`);
      if (last.json.status !== 'pending') return last.json;
      await sleep(100);
    }
    throw new Error(`question ${id} is still pending after ${within} ms: ${last && last.text}`);
  }
  return { api, ask, ended };
}

export async function until(what, check) {
  const deadline = Date.now() + WAIT_MS;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await check();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    await sleep(50);
  }
  throw new Error(`timed out after ${WAIT_MS} ms waiting until ${what}${last instanceof Error ? ` (${last.message})` : ''}`);
}

export async function visible(locator, what) {
  try {
    await locator.waitFor({ state: 'visible', timeout: WAIT_MS });
  } catch (error) {
    throw new Error(`${what} did not appear on the page: ${error.message.split('\n')[0]}`);
  }
}

export const card = (page, id) => page.locator(`[data-testid="question-card"][data-question-id="${id}"]`);
export const recentCard = (page, id) => page.locator(`[data-testid="recent-card"][data-question-id="${id}"]`);

// The option whose label (as the agent wrote it) is `label`.
export function option(scope, label) {
  return scope.locator(`[data-testid="option"][data-label="${label.replace(/["\\]/g, '\\$&')}"]`);
}

export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
  });
}

// Opens `link` in `context`; resolves once the page's stream is live.
export async function openPage(context, link) {
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  const response = await page.goto(link, { waitUntil: 'load' });
  assert.equal(response && response.status(), 200, `GET ${link} answered ${response && response.status()}`);
  await page.locator('[data-testid="connection"][data-state="live"]').waitFor({ timeout: WAIT_MS });
  page.problems = problems;
  return page;
}
