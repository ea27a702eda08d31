// The web chat's Memory panel in a real browser against a real `concierge
// serve` on the assistant example: what is remembered about the person
// (added through the API before the page opens) is listed with its day; a
// memory is added through the panel's form, one is forgotten with its
// button (gone from the page and from the API), a failure shows as the
// server's sentence, and "Forget everything" (after a second click) leaves
// the empty state. Every wait is for something on the page; nothing sleeps.
//
//   scripts/setup-browser.sh && cargo build -p concierge-cli
//   cd crates/concierge-server/tests/browser && node --test memory.test.mjs

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, openBrowser, screenshot } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

/** A call to the server's API: its status and its JSON body (null when empty). */
async function api(method, path, body) {
  const response = await fetch(new URL(`/api/v1${path}`, server.url), {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** The texts of the memories the API lists, newest first. */
async function remembered() {
  const { status, body } = await api('GET', '/memories');
  assert.equal(status, 200);
  return body.memories.map((m) => m.text);
}

test('the Memory panel lists, adds, forgets one and forgets everything', async (t) => {
  const seeded = await api('POST', '/memories', { text: 'I prefer a window seat.' });
  assert.equal(seeded.status, 201);
  assert.match(seeded.body.id, /^mem_/);

  const { context, page, errors } = await openBrowser();
  t.after(async () => {
    await context.close();
  });
  await page.goto(server.url);
  await page.locator('#catalogue .goal').first().waitFor();

  // Opening the panel lists what the API remembered, with a readable day.
  const toggle = page.locator('#memory-toggle');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
  await toggle.click();
  const panel = page.locator('#memory');
  await panel.waitFor();
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  const items = panel.locator('li.memory-item');
  const item = (text) => items.filter({ hasText: text });
  await item('I prefer a window seat.').waitFor();
  const expectedDay = await page.evaluate(
    (ms) => new Date(ms).toLocaleDateString(undefined, { year: 'numeric', month: 'long', day: 'numeric' }),
    seeded.body.created_at,
  );
  assert.equal(await item('I prefer a window seat.').locator('time').textContent(), expectedDay);
  assert.match(expectedDay, /\d{4}/);
  assert.equal(await panel.getByText('Nothing is remembered about you yet.').isVisible(), false);

  // One added through the form comes first (newest first), on the page and in the API.
  await panel.getByPlaceholder('Remember something…').fill('My badge number is 4471.');
  await panel.getByRole('button', { name: 'Remember', exact: true }).click();
  await item('My badge number is 4471.').waitFor();
  assert.deepEqual(await items.locator('.memory-text').allTextContents(), [
    'My badge number is 4471.',
    'I prefer a window seat.',
  ]);
  assert.equal(await panel.getByPlaceholder('Remember something…').inputValue(), '', 'the form is emptied');
  assert.deepEqual(await remembered(), ['My badge number is 4471.', 'I prefer a window seat.']);
  await screenshot(page, 'memory-01-listed');

  // Forgetting one: gone from the page and from the API.
  await item('I prefer a window seat.').getByRole('button', { name: 'Forget' }).click();
  await item('I prefer a window seat.').waitFor({ state: 'detached' });
  assert.deepEqual(await items.locator('.memory-text').allTextContents(), ['My badge number is 4471.']);
  assert.deepEqual(await remembered(), ['My badge number is 4471.']);

  // A memory forgotten elsewhere meanwhile: the server's sentence, never raw JSON.
  const other = await api('POST', '/memories', { text: 'I live in Lyon.' });
  assert.equal(other.status, 201);
  await toggle.click(); // closes
  assert.equal(await panel.isVisible(), false);
  await toggle.click(); // opens again: read again
  await item('I live in Lyon.').waitFor();
  assert.equal((await api('DELETE', `/memories/${other.body.id}`)).status, 204);
  await item('I live in Lyon.').getByRole('button', { name: 'Forget' }).click();
  const error = panel.locator('.note.error');
  await error.waitFor();
  const sentence = await error.textContent();
  assert.equal(sentence, 'That was already forgotten.');
  assert.doesNotMatch(sentence, /[{}]/, 'no raw JSON');
  await item('I live in Lyon.').waitFor({ state: 'detached' });

  // Forget everything, after a second click; the empty state is left.
  await panel.getByRole('button', { name: 'Forget everything' }).click();
  await panel.getByText('Forget everything remembered about you?').waitFor();
  assert.equal(await items.count(), 1, 'nothing is forgotten before the second click');
  await screenshot(page, 'memory-02-forget-everything');
  await panel.getByRole('button', { name: 'Yes, forget everything' }).click();
  await panel.getByText('Nothing is remembered about you yet.').waitFor();
  assert.equal(await items.count(), 0);
  assert.equal(await panel.getByRole('button', { name: /Forget everything/ }).count(), 0);
  assert.equal(await error.isVisible(), false, 'the earlier error is gone');
  assert.deepEqual(await remembered(), []);
  await screenshot(page, 'memory-03-empty');

  // Escape closes the panel.
  await page.keyboard.press('Escape');
  await panel.waitFor({ state: 'hidden' });
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');

  // The only console error is the browser's own line for the deliberate 404.
  const unexpected = errors.filter((e) => !/status of 404/.test(e));
  assert.deepEqual(unexpected, [], 'no script errors');
});
