// Editing a past message and sending it again, in a real browser against a
// real `concierge serve` on the assistant example, the task manager's agent
// on its rules (it creates tasks in a SQLite file, after asking): Edit on a
// message the server has takes it into the message box; sending forks the
// conversation just before it (POST /sessions/{id}/fork), opens the fork and
// sends the changed text there. The fork says where it comes from and what
// that means for what was done, in words, with a link back; the original is
// unchanged. A fork the server refuses shows its sentence, and the edit
// stays to try again. Every wait is for something on the page; nothing sleeps.
//
//   scripts/setup-browser.sh && cargo build -p concierge-cli
//   cd crates/concierge-server/tests/browser && node --test fork.test.mjs

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

const log = (page) => page.locator('#log');
const userTexts = (page) => log(page).locator('li.msg.user .bubble').allTextContents();
const assistantTexts = (page) => log(page).locator('li.msg.assistant:not(.greeting) .bubble').allTextContents();
const forkNote = (page) => log(page).locator('li.note.forked');
const EDIT = 'Edit and resend this message';

/** A page on the chat, with a fresh browser, closed when the test ends. */
async function chat(t) {
  const browser = await openBrowser();
  t.after(() => browser.context.close());
  await browser.page.goto(server.url);
  await browser.page.locator('#catalogue .goal').first().waitFor();
  return browser;
}

/** The session the page shows (from its URL). */
const openSession = (page) => page.evaluate(() => decodeURIComponent(location.hash.replace(/^#\/s\//, '')));

/** A session as the API has it. */
async function view(id) {
  const response = await fetch(new URL(`/api/v1/sessions/${encodeURIComponent(id)}`, server.url));
  assert.equal(response.status, 200);
  return response.json();
}

/** Types a message and sends it with Enter. */
async function say(page, text) {
  await page.locator('#composer-input').fill(text);
  await page.locator('#composer-input').press('Enter');
}

/** Asks the task agent to create a task, approves it, and waits for the answer. */
async function createTask(page, text, title) {
  const asked = await log(page).locator('li.ask.confirm').count();
  await say(page, text);
  const confirm = log(page).locator('li.ask.confirm').nth(asked);
  await confirm.getByRole('button', { name: 'Approve' }).click();
  await confirm.locator('.outcome', { hasText: 'Approved' }).waitFor();
  await log(page).locator('li.msg.assistant .bubble', { hasText: `'${title}'` }).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
}

/** What the page shows in the conversation and around it, never raw JSON or internal ids. */
async function assertReadable(page) {
  const text = await page.locator('main').innerText();
  assert.doesNotMatch(text, /[{}]|"\w+"\s*:/, 'no raw JSON');
  assert.doesNotMatch(text, /\bs-[0-9a-f]{8,}|\brun-[0-9a-f]{8,}|\bseq\b/, 'no internal ids');
}

test('a past message is edited and sent again in a fork; the original stays as it was', async (t) => {
  const { page, errors } = await chat(t);
  await page.locator('#catalogue .goal[data-goal="task"]').click();
  await log(page).locator('li.greeting').waitFor();
  await createTask(page, 'create a task to fix the printer', 'Fix the printer');
  const original = await openSession(page);
  assert.match(original, /^s-/);
  const originalAnswers = await assistantTexts(page);
  assert.equal(originalAnswers.length, 1);
  assert.match(originalAnswers[0], /^Created task #\d+ 'Fix the printer'/);

  // Edit, then Cancel: the message box is left as it was, nothing changes.
  const mine = log(page).locator('li.msg.user').first();
  const edit = mine.getByRole('button', { name: EDIT });
  await edit.click();
  const editing = page.locator('#editing');
  await editing.waitFor();
  assert.match(await editing.textContent(), /Editing a past message: sending starts a new conversation from before it\. The original stays as it is\./);
  assert.equal(await page.locator('#composer-input').inputValue(), 'create a task to fix the printer');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'composer-input');
  await editing.getByRole('button', { name: 'Cancel' }).click();
  await editing.waitFor({ state: 'hidden' });
  assert.equal(await page.locator('#composer-input').inputValue(), '');
  assert.equal(await openSession(page), original);

  // Edit, change the text, send: a new conversation, forked before the message.
  await edit.click();
  await editing.waitFor();
  await screenshot(page, 'fork-01-editing');
  await say(page, 'create a task to fix the scanner');
  await page.waitForFunction((id) => /^#\/s\/s-/.test(location.hash) && !location.hash.endsWith(id), original);
  const fork = await openSession(page);
  assert.notEqual(fork, original);
  await editing.waitFor({ state: 'hidden' });
  assert.equal(await page.locator('#composer-input').inputValue(), '');

  // The fork says where it comes from, and what that means, in words.
  await forkNote(page).waitFor();
  const note = await forkNote(page).innerText();
  assert.match(note, /This conversation was forked from an earlier one\./);
  assert.match(note, /Nothing had been changed before the fork point\./);
  assert.match(note, /The original conversation is unchanged: what it did after the fork point still stands \(create_task\)\./);
  const back = forkNote(page).getByRole('link', { name: 'the original conversation' });
  assert.equal(await back.getAttribute('href'), `#/s/${original}`);
  assert.equal(await log(page).locator('li').first().evaluate((li) => li.classList.contains('forked')), true, 'the note is at the top');

  // The edited message is sent there, and answered there: the task is created once more.
  const confirm = log(page).locator('li.ask.confirm');
  await confirm.getByRole('button', { name: 'Approve' }).click();
  await log(page).locator('li.msg.assistant .bubble', { hasText: "'Fix the scanner'" }).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  assert.deepEqual(await userTexts(page), ['create a task to fix the scanner']);
  const forkAnswers = await assistantTexts(page);
  assert.equal(forkAnswers.length, 1);
  assert.match(forkAnswers[0], /^Created task #\d+ 'Fix the scanner'/);
  assert.notEqual(forkAnswers[0].match(/#\d+/)[0], originalAnswers[0].match(/#\d+/)[0], 'another task');
  // The sent message is the server's, and can be edited again in its turn.
  await log(page).locator('li.msg.user').getByRole('button', { name: EDIT }).waitFor();
  // The list of conversations shows the fork, as the open one, and the original.
  await page.locator(`#session-list button.session[data-session="${fork}"][aria-current="true"]`).waitFor();
  await page.locator(`#session-list button.session[data-session="${original}"]`).waitFor();
  await assertReadable(page);
  await screenshot(page, 'fork-02-forked');

  // The server agrees: the fork names its origin, the original has only its own message.
  const forked = await view(fork);
  assert.equal(forked.forked_from.session_id, original);
  assert.deepEqual(forked.history.filter((m) => m.role === 'user').map((m) => m.text), ['create a task to fix the scanner']);
  const kept = await view(original);
  assert.deepEqual(kept.history.filter((m) => m.role === 'user').map((m) => m.text), ['create a task to fix the printer']);
  assert.equal(kept.forked_from, null);

  // Both tasks exist: what the original did still stands, the fork's was done once.
  await say(page, 'list my tasks');
  await log(page).locator('li.msg.assistant .bubble', { hasText: 'Fix the scanner' }).nth(1).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  const listing = (await assistantTexts(page)).at(-1);
  assert.match(listing, /Fix the printer/);
  assert.equal(listing.match(/Fix the scanner/g).length, 1);

  // The link goes back to the original, unchanged.
  await back.click();
  await page.waitForFunction((id) => location.hash === `#/s/${id}`, original);
  await page.locator('body[data-stream="live"]').waitFor();
  await log(page).locator('li.msg.assistant:not(.greeting)').first().waitFor();
  assert.deepEqual(await userTexts(page), ['create a task to fix the printer']);
  assert.deepEqual(await assistantTexts(page), originalAnswers);
  assert.equal(await forkNote(page).count(), 0);
  assert.equal(await log(page).getByText('Fix the scanner').count(), 0);
  await assertReadable(page);
  await screenshot(page, 'fork-03-original');

  // The fork is a conversation to go back to from the list.
  await page.locator(`#session-list button.session[data-session="${fork}"]`).click();
  await forkNote(page).waitFor();
  await log(page).locator('li.msg.assistant .bubble', { hasText: 'Fix the printer' }).waitFor();
  assert.deepEqual(await userTexts(page), ['create a task to fix the scanner', 'list my tasks']);
  assert.deepEqual(errors, []);
});

test('a later message: the fork carries what came before it; a refused fork keeps the edit', async (t) => {
  const { page, errors } = await chat(t);
  await page.locator('#catalogue .goal[data-goal="task"]').click();
  await log(page).locator('li.greeting').waitFor();
  await createTask(page, 'create a task to call the plumber', 'Call the plumber');
  await createTask(page, 'create a task to water the plants', 'Water the plants');
  const original = await openSession(page);
  const before = { users: await userTexts(page), answers: await assistantTexts(page) };
  assert.equal(before.answers.length, 2);

  // The server refuses the fork (it is asked for an event the conversation
  // does not have): its sentence shows, and the edit stays.
  await page.route('**/api/v1/sessions/*/fork', (route) => route.continue({ postData: JSON.stringify({ at: 9999 }) }));
  await log(page).locator('li.msg.user').nth(1).getByRole('button', { name: EDIT }).click();
  await page.locator('#editing').waitFor();
  assert.ok(await log(page).locator('li.msg.user').nth(1).evaluate((li) => li.classList.contains('being-edited')));
  await page.locator('#composer-input').fill('create a task to water the garden');
  await page.locator('#send').click();
  const toast = page.locator('#toast');
  await toast.waitFor();
  assert.match(await toast.textContent(), /^Not sent: the conversation has no event 9999: its events go from 1 to \d+$/);
  assert.equal(await page.locator('#editing').isVisible(), true);
  assert.equal(await page.locator('#composer-input').inputValue(), 'create a task to water the garden');
  assert.equal(await openSession(page), original);
  assert.equal(await page.locator('#send').isDisabled(), false);
  await screenshot(page, 'fork-04-refused');

  // Sent again, it goes.
  await page.unroute('**/api/v1/sessions/*/fork');
  await page.locator('#composer-input').press('Enter');
  await page.waitForFunction((id) => /^#\/s\/s-/.test(location.hash) && !location.hash.endsWith(id), original);
  const fork = await openSession(page);
  await forkNote(page).waitFor();
  await toast.waitFor({ state: 'hidden' });
  const note = await forkNote(page).innerText();
  assert.match(note, /Done before the fork point, and not done again here: create_task\./);
  assert.match(note, /what it did after the fork point still stands \(create_task\)\./);
  const confirm = log(page).locator('li.ask.confirm');
  await confirm.getByRole('button', { name: 'Approve' }).click();
  await log(page).locator('li.msg.assistant .bubble', { hasText: "'Water the garden'" }).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  // What came before the edited message is carried, once, in order.
  assert.deepEqual(await userTexts(page), ['create a task to call the plumber', 'create a task to water the garden']);
  const answers = await assistantTexts(page);
  assert.equal(answers.length, 2);
  assert.equal(answers[0], before.answers[0]);
  assert.match(answers[1], /^Created task #\d+ 'Water the garden'/);
  assert.equal(await log(page).getByText('Water the plants').count(), 0);
  await assertReadable(page);
  await screenshot(page, 'fork-05-later-message');

  // The original, opened from the list, is as it was.
  await page.locator(`#session-list button.session[data-session="${original}"]`).click();
  await page.waitForFunction((id) => location.hash === `#/s/${id}`, original);
  await log(page).locator('li.msg.assistant .bubble', { hasText: 'Water the plants' }).waitFor();
  assert.deepEqual({ users: await userTexts(page), answers: await assistantTexts(page) }, before);
  assert.equal(await forkNote(page).count(), 0);
  assert.notEqual(fork, original);
  // The only console error is the browser's own line for the refused fork (no such event: 404).
  assert.deepEqual(errors.filter((e) => !/status of 404/.test(e)), []);
});
