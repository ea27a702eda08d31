// The web chat in a real browser (Debian's chromium, driven by
// playwright-core) against a real `concierge serve` on the assistant
// example, its goals on their rules: pick a goal, chat, confirm a side
// effect, answer a numbered choice, reload mid-stream, a phone-width window.
// Every wait is for something on the page; nothing sleeps.
//
//   scripts/setup-browser.sh && cargo build -p concierge-cli
//   cd crates/concierge-server/tests/browser && npm test

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, openBrowser, screenshot, scriptedModel } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

/** A page on the chat, with a fresh browser; closed (and checked for script errors) by `done`. */
async function chat(t, size) {
  const browser = await openBrowser(size);
  t.after(async () => {
    await browser.context.close();
  });
  await browser.page.goto(server.url);
  await browser.page.locator('#catalogue .goal').first().waitFor();
  return browser;
}

const log = (page) => page.locator('#log');
const assistantTexts = (page) => log(page).locator('li.msg.assistant:not(.greeting) .bubble').allTextContents();
const userTexts = (page) => log(page).locator('li.msg.user .bubble').allTextContents();

/** Starts a goal from the catalogue (its session is created with the first message). */
async function startGoal(page, id) {
  await page.locator(`#catalogue .goal[data-goal="${id}"]`).click();
  await page.locator('#log li.greeting').waitFor();
}

/** Types a message and sends it with Enter. */
async function say(page, text) {
  await page.locator('#composer-input').fill(text);
  await page.locator('#composer-input').press('Enter');
}

/** Waits until the run in progress has finished (the working indicator is gone and the last reply is `text`). */
async function replied(page, text) {
  await log(page).locator('li.msg.assistant .bubble', { hasText: text }).last().waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
}

test('the catalogue starts a goal; a side effect is approved with the button, another by typing "yes"', async (t) => {
  const { page, errors } = await chat(t);
  await screenshot(page, '01-catalogue');
  await startGoal(page, 'hr');
  assert.equal(await page.locator('#agent-badge').textContent(), 'HR');

  // A suggestion from the starter prompt is a button that sends it.
  await page.locator('#log .chip', { hasText: "I'd like to take next Friday off" }).click();
  const confirm = log(page).locator('li.ask.confirm').last();
  await confirm.getByRole('button', { name: 'Approve' }).waitFor();
  assert.match(await confirm.locator('.ask-text').textContent(), /I'll book PTO for next Friday\. Proceed\?/);
  const card = log(page).locator('li.tool[data-tool="book_pto"]').last();
  await card.locator('.status', { hasText: 'Waiting for approval' }).waitFor();
  assert.deepEqual(await card.locator('.args th').allTextContents(), ['Start']);
  assert.deepEqual(await card.locator('.args td').allTextContents(), ['next Friday']);
  await screenshot(page, '02-confirmation');

  // A reload while the run waits: the question is still there, once, and still answers.
  await page.reload();
  await page.locator('body[data-stream="live"]').waitFor();
  await confirm.getByRole('button', { name: 'Approve' }).waitFor();
  assert.equal(await log(page).locator('li.ask.confirm').count(), 1);
  assert.equal(await log(page).locator('li.tool').count(), 1);

  await confirm.getByRole('button', { name: 'Approve' }).click();
  await confirm.locator('.outcome', { hasText: 'Approved' }).waitFor();
  await card.locator('.status', { hasText: 'Done' }).waitFor();
  assert.match(await card.locator('.duration').textContent(), /^\d+(\.\d+)? m?s$/);
  assert.match(await card.locator('.result').textContent(), /Booked PTO for Friday/);
  await replied(page, 'Booked PTO for Friday');
  // The side panel: agent, the run's timeline with the tool call.
  assert.equal(await page.locator('[data-panel=agent]').textContent(), 'HR');
  await page.locator('[data-panel=timeline] .row', { hasText: 'Book pto' }).waitFor();
  await screenshot(page, '03-approved');

  // Typing "yes" answers a confirmation too (keyboard only).
  await say(page, "I'd like to take next Monday off");
  const second = log(page).locator('li.ask.confirm').nth(1);
  await second.getByRole('button', { name: 'Approve' }).waitFor();
  await say(page, 'yes');
  await second.locator('.outcome', { hasText: 'Approved' }).waitFor();
  await replied(page, 'Booked PTO for Monday');
  // Edit changes the arguments before approving them.
  await say(page, "I'd like to take next Friday off");
  const third = log(page).locator('li.ask.confirm').nth(2);
  await third.getByRole('button', { name: 'Edit' }).click();
  await third.getByLabel('Start').fill('next Tuesday');
  await third.getByRole('button', { name: 'Approve with changes' }).click();
  // The changed call is asked about again, and its card shows the new arguments.
  await third.locator('.outcome', { hasText: 'Changed' }).waitFor();
  const fourth = log(page).locator('li.ask.confirm').nth(3);
  await fourth.locator('.ask-text', { hasText: "I'll book PTO for next Tuesday. Proceed?" }).waitFor();
  assert.deepEqual(await log(page).locator('li.tool[data-tool="book_pto"]').last().locator('.args td').allTextContents(), ['next Tuesday']);
  await fourth.getByRole('button', { name: 'Approve' }).click();
  await fourth.locator('.outcome', { hasText: 'Approved' }).waitFor();
  await replied(page, 'Booked PTO for Tuesday');
  // The answer is recorded as the approval, not as a message.
  assert.deepEqual(await userTexts(page), [
    "I'd like to take next Friday off", "I'd like to take next Monday off", "I'd like to take next Friday off",
  ]);
  assert.deepEqual(errors, []);
});

test('a numbered choice is answered with a button, by keyboard; the child run is nested under its call', async (t) => {
  const { page, errors } = await chat(t);
  await startGoal(page, 'router');
  await say(page, 'had a call with John yesterday about the proposal');
  const choice = log(page).locator('li.ask.choice').last();
  await choice.locator('.option').first().waitFor();
  assert.equal(await choice.locator('.ask-text').textContent(), 'Which John do you mean?');
  assert.deepEqual(await choice.locator('.option .number').allTextContents(), ['1', '2']);
  // The specialist's run is nested under the router's call.
  const call = log(page).locator('li.tool[data-tool="interaction"]');
  await call.locator('.nested li.tool[data-tool="add_interaction_to_contact"]').waitFor();
  await screenshot(page, '04-choice');

  // Arrow keys move between the options; Enter picks one.
  await choice.locator('.option').first().focus();
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.number), '2');
  await page.keyboard.press('Enter');
  await choice.locator('.option.chosen .number', { hasText: '2' }).waitFor();
  await replied(page, 'Logged the call with John Park');
  await call.locator(':scope > .tool-head .status', { hasText: 'Done' }).waitFor();
  await screenshot(page, '05-chosen');

  // Typing the number answers the next one.
  await say(page, 'had a call with John today about pricing');
  const next = log(page).locator('li.ask.choice').nth(1);
  await next.locator('.option').first().waitFor();
  await say(page, '1');
  await next.locator('.option.chosen .number', { hasText: '1' }).waitFor();
  await replied(page, 'Logged the call with John Smith');
  assert.deepEqual(errors, []);
});

test('a reload between runs shows every event once, and the next run once', async (t) => {
  const { page, errors } = await chat(t);
  await startGoal(page, 'hr');
  await say(page, 'how much PTO do I have?');
  await replied(page, 'days of PTO');
  const snapshot = async () => ({
    users: await userTexts(page),
    replies: await assistantTexts(page),
    cards: await log(page).locator('li.tool').count(),
    dividers: await log(page).locator('li.divider').count(),
  });
  const before = await snapshot();
  // The tab keeps the session's stream position (and what it showed).
  await page.waitForFunction(() => Object.keys(sessionStorage).some((k) => k.startsWith('concierge:stream:')));

  await page.reload();
  await page.locator('body[data-stream="live"]').waitFor();
  await log(page).locator('li.msg.user').first().waitFor();
  assert.deepEqual(await snapshot(), before);

  await say(page, 'was my paycheck deposited?');
  await replied(page, 'paycheck');
  const afterRun = await snapshot();
  assert.deepEqual(afterRun.users, [...before.users, 'was my paycheck deposited?']);
  assert.equal(afterRun.replies.length, before.replies.length + 1);
  assert.deepEqual(afterRun.replies.slice(0, before.replies.length), before.replies);
  assert.equal(afterRun.cards, before.cards + 1);

  // A tab that kept nothing (a new one) draws the same conversation from the server's events.
  const other = await page.context().newPage();
  await other.goto(page.url());
  await other.locator('body[data-stream="live"]').waitFor();
  await log(other).locator('li.msg.user', { hasText: 'was my paycheck deposited?' }).waitFor();
  await log(other).locator('li.msg.assistant:not(.greeting)').nth(afterRun.replies.length - 1).waitFor();
  const fresh = await (async () => ({
    users: await userTexts(other),
    replies: await assistantTexts(other),
    cards: await log(other).locator('li.tool').count(),
    dividers: await log(other).locator('li.divider').count(),
  }))();
  assert.deepEqual(fresh, afterRun);
  await other.close();

  // The session list names the conversation by its first message; another
  // conversation opens from it, and this one comes back whole.
  const listed = page.locator('#session-list button.session[aria-current="true"]');
  await listed.locator('.session-title', { hasText: 'how much PTO do I have?' }).waitFor();
  await page.locator('#new-chat').click();
  await startGoal(page, 'food');
  await say(page, 'show me the food menu');
  await log(page).locator('li.tool[data-tool]').first().waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  await page.locator('#session-list button.session', { hasText: 'how much PTO do I have?' }).click();
  await page.locator('#agent-badge', { hasText: 'HR' }).waitFor();
  await log(page).locator('li.msg.user', { hasText: 'was my paycheck deposited?' }).waitFor();
  assert.deepEqual(await snapshot(), afterRun);
  assert.deepEqual(errors, []);
});

test('a reload in the middle of a streamed answer continues it, nothing shown twice or lost', async (t) => {
  const model = await scriptedModel(['Hello ', 'from ', 'the ', 'model.']);
  const streaming = await startServer(['--model', 'openai:scripted', '--base-url', model.baseUrl]);
  t.after(async () => {
    await model.stop();
    await streaming.stop();
  });
  const { context, page, errors } = await openBrowser();
  t.after(() => context.close());
  await page.goto(streaming.url);
  await startGoal(page, 'general');
  await say(page, 'hello there');
  const bubble = log(page).locator('li.msg.assistant:not(.greeting) .bubble');
  await log(page).locator('li.msg.streaming .bubble', { hasText: 'Hello' }).waitFor();
  model.release();
  await log(page).locator('li.msg.streaming .bubble', { hasText: 'Hello from' }).waitFor();
  // The tab keeps the id of the last model delta it showed.
  await page.waitForFunction(() => {
    const key = Object.keys(sessionStorage).find((k) => k.startsWith('concierge:stream:'));
    return key && /^\d+\.2$/.test(JSON.parse(sessionStorage.getItem(key)).last);
  });

  await page.reload();
  await page.locator('body[data-stream="live"]').waitFor();
  await log(page).locator('li.msg.streaming .bubble').waitFor();
  assert.deepEqual(await bubble.allTextContents(), ['Hello from ']);
  await screenshot(page, '06-reloaded-mid-stream');

  model.release();
  await log(page).locator('li.msg.streaming .bubble', { hasText: 'Hello from the' }).waitFor();
  assert.deepEqual(await bubble.allTextContents(), ['Hello from the ']);
  model.release();
  await log(page).locator('li.msg.assistant:not(.streaming):not(.greeting) .bubble').waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  assert.deepEqual(await bubble.allTextContents(), ['Hello from the model.']);
  assert.deepEqual(await userTexts(page), ['hello there']);
  // Usage from the model shows in the side panel.
  await page.locator('[data-panel=usage]', { hasText: '12 in' }).waitFor();
  await screenshot(page, '07-streamed');
  assert.deepEqual(errors, []);
});

test('a conversation without a goal starts at the hub; each handoff is marked and the badge follows', async (t) => {
  const { page, errors } = await chat(t);
  await say(page, 'how much PTO do I have?');
  await log(page).locator('li.divider', { hasText: 'The hub hands you to HR' }).waitFor();
  await replied(page, 'days of PTO');
  assert.equal(await page.locator('#agent-badge').textContent(), 'HR');
  await say(page, 'show me the food menu');
  await log(page).locator('li.divider', { hasText: 'from HR to Food ordering' }).waitFor();
  await replied(page, 'menu');
  assert.equal(await page.locator('#agent-badge').textContent(), 'Food ordering');
  assert.equal(await page.locator('[data-panel=agent]').textContent(), 'Food ordering');
  assert.equal(await log(page).locator('li.divider').count(), 2);
  await screenshot(page, '08-handoffs');
  assert.deepEqual(errors, []);
});

test('a question the hub asked which agent to send to is passed on once, not said again by the person', async (t) => {
  const { page, errors } = await chat(t);
  await say(page, 'I need help with money and PTO');
  await log(page).locator('li.msg.assistant .bubble', { hasText: 'Banking or HR?' }).waitFor();
  await say(page, 'I want HR help');
  await log(page).locator('li.divider', { hasText: 'The hub hands you to HR' }).waitFor();
  await replied(page, 'days of PTO');
  const passed = log(page).locator('li.note.passed-on');
  assert.equal(await passed.textContent(), 'Passed on: “I need help with money and PTO”');
  assert.deepEqual(await userTexts(page), ['I need help with money and PTO', 'I want HR help']);
  // The same after a reload, from the session's events alone.
  await page.reload();
  await page.locator('body[data-stream="live"]').waitFor();
  await log(page).locator('li.note.passed-on').waitFor();
  assert.equal(await log(page).locator('li.note.passed-on').count(), 1);
  assert.deepEqual(await userTexts(page), ['I need help with money and PTO', 'I want HR help']);
  assert.deepEqual(errors, []);
});

test('the side panel shows what the session knows as it learns it, and the run timeline', async (t) => {
  const { page, errors } = await chat(t);
  await startGoal(page, 'travel_events');
  await say(page, "what's on in Melbourne in March?");
  await replied(page, 'events in Melbourne');
  const board = page.locator('[data-panel=blackboard] dl');
  await board.locator('dt', { hasText: 'Event city' }).waitFor();
  assert.equal(await board.locator('dt:has-text("Event city") + dd').textContent(), 'Melbourne');
  await say(page, 'I fly from Sydney');
  await replied(page, 'flights from Sydney');
  await board.locator('dt', { hasText: 'Offer summary' }).waitFor();
  const rows = await page.locator('[data-panel=timeline] .row .label').allTextContents();
  assert.ok(rows.length >= 1, 'the run has tool calls on its timeline');
  await screenshot(page, '09-blackboard');
  assert.deepEqual(errors, []);
});

test('on a phone-width window the chat is one column, the goals a menu away', async (t) => {
  const { page, errors } = await chat(t, { width: 390, height: 844 });
  assert.equal(await page.locator('#sidebar').isVisible(), false);
  assert.equal(await page.locator('#panel').isVisible(), false);
  await screenshot(page, '10-phone-catalogue');
  await startGoal(page, 'hr');
  await page.locator('#log .chip', { hasText: "I'd like to take next Friday off" }).click();
  await log(page).locator('li.ask.confirm').getByRole('button', { name: 'Approve' }).waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the window`);
  await screenshot(page, '11-phone-confirmation');

  await page.locator('#menu-toggle').click();
  await page.locator('#sidebar').waitFor();
  assert.equal(await page.locator('#menu-toggle').getAttribute('aria-expanded'), 'true');
  await screenshot(page, '12-phone-menu');
  await page.keyboard.press('Escape');
  await page.locator('#sidebar').waitFor({ state: 'hidden' });
  await page.locator('#panel-toggle').click();
  await page.locator('#panel').waitFor();
  await screenshot(page, '13-phone-details');
  assert.deepEqual(errors, []);
});

test('text from the server is shown as text, never as markup', async (t) => {
  const { page, errors } = await chat(t);
  await startGoal(page, 'hr');
  const text = '<img src=x onerror="document.title=\'pwned\'"> <b>bold</b>';
  await say(page, text);
  await log(page).locator('li.msg.user .bubble').waitFor();
  assert.equal(await log(page).locator('li.msg.user .bubble').textContent(), text);
  assert.equal(await log(page).locator('img, b').count(), 0);
  await page.locator('#working').waitFor({ state: 'hidden' });
  assert.notEqual(await page.title(), 'pwned');
  assert.deepEqual(errors, []);
});
