// askgate's web page for everyone: "Skip all" confirmed in the page, a
// three-question prompt answered with the keyboard alone, an axe-core audit
// of every state of the page (light and dark), and screenshots at a phone's
// and a desktop's width for a person to look at. Run by tests/e2e/browser.rs
// after web.test.mjs, with the same environment; it leaves nothing pending.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import {
  WAIT_MS,
  agent,
  card,
  env,
  launch,
  openPage,
  option,
  recentCard,
  shots,
  visible,
} from './common.mjs';

const API = env('ASKGATE_URL').replace(/\/+$/, '');
const LINK = env('ASKGATE_WEB_LINK');
const { api, ask, ended } = agent(API, env('ASKGATE_TOKEN'), env('ASKGATE_RECIPIENT'), `a11y-${Date.now().toString(36)}`);
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

const single = (id, header, question, labels) => ({
  id,
  header,
  question,
  options: labels.map((label) => ({ label })),
});
const THREE = [
  single('db', 'Database', 'Which DB?', ['SQLite (Recommended)', 'PostgreSQL']),
  { ...single('notify', 'Notify', 'Who should be told?', ['Team channel', 'On-call', 'Nobody']), multiSelect: true },
  single('when', 'When', 'Deploy when?', ['Now', 'Tonight']),
];
const ONE = [
  {
    id: 'deploy_target',
    header: 'Deploy',
    question: 'Where should build 42 go?',
    options: [
      { label: 'Staging (Recommended)', description: 'safe, resets nightly' },
      { label: 'Production', description: 'live traffic' },
    ],
  },
];

// Every question this file asked and left pending is cancelled at the end.
const asked = [];
async function askNow(questions, extra = {}) {
  const id = await ask({ questions, ...extra });
  asked.push(id);
  return id;
}

// axe-core on the page as it is now: any violation of impact serious or
// critical fails, each printed with the nodes it found.
async function audit(page, state) {
  // Colours ease between states in 0.12 s: audit the state, not the fade.
  await page.waitForTimeout(300);
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.addScriptTag({ path: AXE });
  const results = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const said = bad
    .map(
      (v) =>
        `  [${v.impact}] ${v.id}: ${v.help}\n` +
        v.nodes.map((n) => `      ${n.target.join(' ')}: ${n.failureSummary.split('\n').join(' ')}`).join('\n'),
    )
    .join('\n');
  assert.equal(bad.length, 0, `axe-core found serious or critical violations on ${state}:\n${said}`);
  console.log(`  axe: ${state}: no serious or critical violation (${results.violations.length} minor)`);
}

// The focused element, and whether it shows a visible focus ring (on itself or its option).
async function focused(page) {
  return page.evaluate(() => {
    const node = document.activeElement;
    const ringed = node.closest('.option') || node;
    const style = getComputedStyle(ringed);
    const card = node.closest('[data-testid="question-card"]');
    return {
      card: card ? card.dataset.questionId : '',
      testid: node.dataset.testid || '',
      label: (node.closest('[data-testid="option"]') || {}).dataset?.label || '',
      ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
    };
  });
}

async function press(page, key, expect) {
  await page.keyboard.press(key);
  const now = await focused(page);
  if (expect) {
    for (const [name, value] of Object.entries(expect)) {
      assert.equal(now[name], value, `after ${key}: focus ${JSON.stringify(now)}, expected ${name} = ${value}`);
    }
    assert.ok(now.ring, `after ${key}: the focused control ${JSON.stringify(now)} shows no focus ring`);
  }
  return now;
}

// --- scenarios ---

async function skipAll(page) {
  const id = await askNow(THREE);
  const c = card(page, id);
  await visible(c, 'the three-question prompt');
  const skip = c.locator('[data-testid="skip"]');
  assert.equal(await skip.textContent(), 'Skip all');
  await option(c, 'PostgreSQL').click();
  await c.locator('[data-testid="next"]').click();
  await skip.click();
  const dialog = page.locator('[data-testid="skip-dialog"]');
  await visible(dialog, 'the Skip all confirmation');
  const text = await dialog.locator('[data-testid="skip-text"]').textContent();
  assert.match(text, /You answered 1 of 3: “Database”\. Skip all and send no answer\?/, text);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'skip-cancel', 'Cancel has the focus');
  await audit(page, 'the Skip all confirmation');
  await dialog.locator('[data-testid="skip-cancel"]').click();
  await dialog.waitFor({ state: 'hidden', timeout: WAIT_MS });
  assert.equal((await api('GET', `/v1/questions/${id}`)).json.status, 'pending', 'Cancel kept the question');
  assert.equal(await c.locator('[data-testid="step-count"]').textContent(), '2 / 3', 'Cancel kept the step');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'skip', 'the focus is back on Skip all');
  await skip.click();
  await visible(dialog, 'the confirmation again');
  await dialog.locator('[data-testid="skip-confirm"]').click();
  const resource = await ended(id);
  assert.equal(resource.status, 'skipped');
  assert.deepEqual(resource.result, { status: 'no_answer' });
  await visible(recentCard(page, id), 'the skipped prompt in Recent');
}

async function keyboardOnly(page) {
  const id = await askNow(THREE);
  const c = card(page, id);
  await visible(c, 'the prompt for the keyboard');
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await page.evaluate(() => window.scrollTo(0, 0));
  // From the top of the page, Tab reaches the first option of the card.
  let now = null;
  for (let n = 0; n < 20 && !(now && now.card === id && now.label === 'SQLite (Recommended)'); n++) {
    now = await press(page, 'Tab');
  }
  assert.equal(now.label, 'SQLite (Recommended)', `Tab reaches the first option: ${JSON.stringify(now)}`);
  assert.ok(now.ring, 'the first option shows its focus');
  // Step 1: the arrow key moves and chooses; Tab to the field, Tab to Next, Enter.
  await press(page, 'ArrowDown', { label: 'PostgreSQL' });
  assert.equal(await option(c, 'PostgreSQL').locator('input').isChecked(), true, 'the arrow key chose PostgreSQL');
  await press(page, 'Tab', { testid: 'other-input' });
  await press(page, 'Tab', { testid: 'next' });
  await press(page, 'Enter', { label: 'Team channel' });
  // Step 2: Space ticks, Tab moves on; own words typed in the field.
  await press(page, 'Space', { label: 'Team channel' });
  await press(page, 'Tab', { label: 'On-call' });
  await press(page, 'Space', { label: 'On-call' });
  await press(page, 'Tab', { label: 'Nobody' });
  await press(page, 'Tab', { testid: 'other-input' });
  await page.keyboard.type('Sam');
  await press(page, 'Shift+Tab', { label: 'Nobody' });
  await press(page, 'Tab', { testid: 'other-input' });
  await press(page, 'Tab', { testid: 'back' });
  await press(page, 'Tab', { testid: 'next' });
  await press(page, 'Enter', { label: 'Now' });
  assert.equal(await c.locator('[data-testid="step-count"]').textContent(), '3 / 3');
  // Step 3: Space chooses the focused option; Submit by Tab and Enter.
  await press(page, 'Space', { label: 'Now' });
  await press(page, 'Tab', { testid: 'other-input' });
  await press(page, 'Tab', { testid: 'back' });
  await press(page, 'Tab', { testid: 'submit' });
  await page.keyboard.press('Enter');
  const resource = await ended(id);
  assert.deepEqual(resource.result, {
    status: 'answered',
    answers: { answers: { db: ['PostgreSQL'], notify: ['Team channel', 'On-call', 'Sam'], when: ['Now'] } },
  });
}

// Every state of the page through axe-core, in one colour scheme.
async function auditStates(page, scheme, expiring) {
  const one = await askNow(ONE);
  await visible(card(page, one), 'the one-question card');
  const three = await askNow(THREE);
  const c = card(page, three);
  await visible(c, 'the multi-question card');
  await audit(page, `${scheme}: a pending one-question card and a multi-question card`);
  await option(c, 'SQLite (Recommended)').click();
  await c.locator('[data-testid="next"]').click();
  await option(c, 'On-call').click();
  await audit(page, `${scheme}: the multi-question card mid-steps`);
  // A send askgate refused: the error under the card.
  const route = `**/api/questions/${one}/answer`;
  await page.route(route, (request) =>
    request.fulfill({
      status: 503,
      contentType: 'application/json',
      body: JSON.stringify({ error: { code: 'store_unavailable', message: 'The answer could not be saved.' } }),
    }),
  );
  await option(card(page, one), 'Production').click();
  await card(page, one).locator('[data-testid="submit"]').click();
  await visible(card(page, one).locator('[data-testid="card-error"]'), 'the error of a failed send');
  await audit(page, `${scheme}: a failed send`);
  await page.unroute(route);
  await card(page, one).locator('[data-testid="submit"]').click();
  await ended(one);
  await visible(recentCard(page, one), 'the answered card in Recent');
  await audit(page, `${scheme}: an answered question in Recent`);
  if (expiring) {
    await ended(expiring, 45_000);
    await visible(recentCard(page, expiring), 'the expired question in Recent');
    assert.equal(await recentCard(page, expiring).getAttribute('data-status'), 'expired');
    await audit(page, `${scheme}: an expired question in Recent`);
  }
  await api('POST', `/v1/questions/${three}/cancel`);
}

async function notFound(context, scheme) {
  const page = await context.newPage();
  const response = await page.goto(`${LINK}x`, { waitUntil: 'load' });
  assert.equal(response.status(), 404);
  await audit(page, `${scheme}: the page of a link that does not work`);
  await page.close();
}

async function screenshots(browser) {
  const files = [];
  const one = await askNow(ONE);
  const three = await askNow(THREE);
  for (const width of [390, 1280]) {
    for (const colorScheme of ['light', 'dark']) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme, locale: 'en-US' });
      const page = await openPage(context, LINK);
      await visible(card(page, three), 'the multi-question card');
      await visible(card(page, one), 'the one-question card');
      // Step 1 answered once: it is saved, and every later page opens on step 2.
      if ((await card(page, three).locator('[data-testid="step-count"]').textContent()) === '1 / 3') {
        await option(card(page, three), 'PostgreSQL').click();
        await card(page, three).locator('[data-testid="next"]').click();
      }
      await page.evaluate(() => document.activeElement && document.activeElement.blur());
      await page.evaluate(() => window.scrollTo(0, 0));
      const file = path.join(shots, `page-${width}-${colorScheme}.png`);
      await page.screenshot({ path: file, fullPage: true });
      files.push(file);
      await context.close();
    }
  }
  for (const file of files) console.log(`  screenshot: ${file}`);
}

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  const browser = await launch();
  let passed = 0;
  let failed = 0;
  // Asked first, so that it has expired (30 s) by the time the audit reads it.
  const expiring = await askNow(ONE, { timeoutSeconds: 30 });
  try {
    const light = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'en-US', bypassCSP: true });
    const dark = await browser.newContext({
      viewport: { width: 390, height: 844 },
      locale: 'en-US',
      colorScheme: 'dark',
      bypassCSP: true,
    });
    const page = await openPage(light, LINK);
    const darkPage = await openPage(dark, LINK);
    const scenarios = [
      ['(h) Skip all asks first, names what was answered; Cancel keeps it, Skip all ends it no_answer', () => skipAll(page)],
      ['(i) a three-question prompt answered with the keyboard alone', () => keyboardOnly(page)],
      ['(j) axe-core: every state in light mode', () => auditStates(page, 'light', null)],
      ['(k) axe-core: every state in dark mode, an expired question included', () => auditStates(darkPage, 'dark', expiring)],
      ['(l) axe-core: the page of a link that does not work, light and dark', async () => {
        await notFound(light, 'light');
        await notFound(dark, 'dark');
      }],
      ['(m) screenshots at 390 and 1280 px, light and dark', () => screenshots(browser)],
    ];
    for (const [name, run] of scenarios) {
      try {
        await run();
        const logged = [...page.problems, ...darkPage.problems];
        assert.deepEqual(logged, [], 'the page logged no errors');
        passed++;
        console.log(`ok - ${name}`);
      } catch (error) {
        failed++;
        const file = path.join(shots, `a11y-failed-${passed + failed}.png`);
        await page.screenshot({ path: file, fullPage: true }).catch(() => {});
        console.log(`not ok - ${name}\n  ${String(error.stack || error).split('\n').join('\n  ')}\n  screenshot: ${file}`);
      }
    }
  } finally {
    for (const id of asked) await api('POST', `/v1/questions/${id}/cancel`).catch(() => {});
    await browser.close();
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0;
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (error) => {
    console.error(`web.a11y.test.mjs failed before its scenarios ran: ${error.stack || error}`);
    process.exit(1);
  },
);
