// The person's message in the web chat from the moment it is sent: shown at
// once with the working indicator (before the server has answered the
// POST), kept and marked with the server's sentence when it is refused,
// sent again from there; a session is created only with a first message,
// so opening the page leaves no empty conversations; a tool server's
// status shows as a quiet line. Every wait is for something on the page.
//
//   scripts/setup-browser.sh && cargo build --workspace
//   cd crates/concierge-server/tests/browser && npm test

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, openBrowser, screenshot, scriptedModel, binary } from './harness.mjs';

const log = (page) => page.locator('#log');
const userTexts = (page) => log(page).locator('li.msg.user .bubble').allTextContents();
const assistantTexts = (page) => log(page).locator('li.msg.assistant:not(.greeting) .bubble').allTextContents();

/** Types a message and sends it with Enter. */
async function say(page, text) {
  await page.locator('#composer-input').fill(text);
  await page.locator('#composer-input').press('Enter');
}

/** The sessions the server lists (what the page's list is drawn from). */
async function listed(server) {
  const response = await fetch(new URL('/api/v1/sessions', server.url));
  return (await response.json()).sessions;
}

/** A server whose model (the `general` goal's) streams `parts` only as far as the test releases them. */
async function heldServer(t, parts) {
  const model = await scriptedModel(parts, { hold: true });
  const server = await startServer(['--model', 'openai:scripted', '--base-url', model.baseUrl]);
  t.after(async () => {
    await model.stop();
    await server.stop();
  });
  return { model, server };
}

/** A fresh browser on `url`, closed when the test ends. */
async function browse(t, url) {
  const browser = await openBrowser();
  t.after(() => browser.context.close());
  await browser.page.goto(url);
  await browser.page.locator('#catalogue .goal').first().waitFor();
  return browser;
}

test('the first message shows at once with the working indicator, before the server answers, and once', async (t) => {
  const { model, server } = await heldServer(t, ['Hello ', 'from the model.']);
  const { page, errors } = await browse(t, server.url);
  await page.locator('#catalogue .goal[data-goal="general"]').click();
  await log(page).locator('li.greeting').waitFor();
  // Picking a goal creates no session yet.
  assert.deepEqual(await listed(server), []);

  // The POST of the message is held: what the page shows meanwhile is its own.
  let letPostGo;
  const posted = new Promise((resolve) => (letPostGo = resolve));
  let posts = 0;
  let reached;
  const postReached = new Promise((resolve) => (reached = resolve));
  await page.route('**/api/v1/sessions/*/messages', async (route) => {
    posts += 1;
    reached();
    await posted;
    await route.continue();
  });
  await say(page, 'hello there');
  const mine = log(page).locator('li.msg.user');
  await mine.locator('.bubble', { hasText: 'hello there' }).waitFor();
  await page.locator('#working').waitFor();
  assert.match(await page.locator('#working').textContent(), /is working/);
  assert.equal(await page.locator('#composer-input').inputValue(), '');
  await page.waitForFunction(() => location.hash.startsWith('#/s/'));
  await postReached;
  assert.equal(posts, 1);
  assert.equal(await log(page).locator('li.msg.user.sending').count(), 1);
  assert.equal(await log(page).locator('li.msg.assistant:not(.greeting)').count(), 0);
  await screenshot(page, '14-first-message-sending');

  // The server takes it; the model holds its answer back: the stream's copy
  // of the message is the one shown, not a second.
  letPostGo();
  await page.locator('body[data-stream="live"]').waitFor();
  await log(page).locator('li.msg.user:not(.sending)').waitFor();
  assert.deepEqual(await userTexts(page), ['hello there']);
  assert.equal(await page.locator('#working').isVisible(), true);
  assert.equal(await log(page).locator('li.msg.assistant:not(.greeting)').count(), 0);
  // The session is listed under the message.
  await page.locator('#session-list button.session[aria-current="true"] .session-title', { hasText: 'hello there' }).waitFor();
  await screenshot(page, '15-first-message-waiting');

  model.release();
  await log(page).locator('li.msg.streaming .bubble', { hasText: 'Hello' }).waitFor();
  model.release();
  await log(page).locator('li.msg.assistant:not(.streaming):not(.greeting) .bubble', { hasText: 'Hello from the model.' }).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  assert.deepEqual(await userTexts(page), ['hello there']);
  assert.deepEqual(await assistantTexts(page), ['Hello from the model.']);
  assert.equal((await listed(server)).length, 1);

  // A reload draws the same conversation, the message once.
  await page.reload();
  await page.locator('body[data-stream="live"]').waitFor();
  await log(page).locator('li.msg.assistant:not(.greeting)').waitFor();
  assert.deepEqual(await userTexts(page), ['hello there']);
  assert.deepEqual(errors, []);
});

test('a message typed during a run waits its turn; one the server cannot take stays with why', async (t) => {
  const { model, server } = await heldServer(t, ['Working ', 'on it.']);
  const { page, errors } = await browse(t, server.url);
  await page.locator('#catalogue .goal[data-goal="general"]').click();
  await say(page, 'first question');
  await page.locator('body[data-stream="live"]').waitFor();
  await log(page).locator('li.msg.user:not(.sending)', { hasText: 'first question' }).waitFor();

  // A second message while the run is in progress: the page asks the server
  // to queue it, so it is shown at once, waits its turn (not refused), and
  // is answered after the first.
  await page.locator('#send:not([disabled])').waitFor();
  await say(page, 'second question');
  await log(page).locator('li.msg.user', { hasText: 'second question' }).waitFor();
  assert.equal(await log(page).locator('li.msg.user.failed').count(), 0);
  // The run goes on: the indicator stays.
  assert.equal(await page.locator('#working').isVisible(), true);
  await screenshot(page, '16-message-queued');

  model.release();
  model.release();
  await log(page).locator('li.msg.assistant:not(.streaming):not(.greeting)').nth(1).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  assert.equal(await log(page).locator('li.msg.user.failed, li.msg.user.sending').count(), 0);
  assert.deepEqual(await userTexts(page), ['first question', 'second question']);
  assert.deepEqual(await assistantTexts(page), ['Working on it.', 'Working on it.']);
  assert.deepEqual(errors, []);

  // The server is gone: the message stays with why; "Edit" takes it back into the box.
  await server.stop();
  await say(page, 'are you still there?');
  const unsent = log(page).locator('li.msg.user.failed');
  await unsent.locator('.send-why', { hasText: 'The server cannot be reached' }).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  await screenshot(page, '17-server-gone');
  // "Try again" sends it again; it fails again, and is shown once.
  await unsent.getByRole('button', { name: 'Try again' }).click();
  await unsent.locator('.send-why', { hasText: 'The server cannot be reached' }).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  assert.equal(await log(page).locator('li.msg.user.failed').count(), 1);
  await unsent.getByRole('button', { name: 'Edit' }).click();
  assert.equal(await page.locator('#composer-input').inputValue(), 'are you still there?');
  assert.equal(await log(page).locator('li.msg.user.failed').count(), 0);
  assert.deepEqual(await userTexts(page), ['first question', 'second question']);
});

test('opening the page, a goal, or a new conversation again and again lists no empty conversations', async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const { page, errors } = await browse(t, server.url);
  const list = page.locator('#session-list');
  for (let i = 0; i < 3; i++) {
    await page.reload();
    await page.locator('#catalogue .goal').first().waitFor();
  }
  await page.locator('#new-chat').click();
  await page.locator('#catalogue .goal[data-goal="hr"]').click();
  await log(page).locator('li.greeting').waitFor();
  await page.reload(); // on the goal: its greeting again, still no session
  await log(page).locator('li.greeting').waitFor();
  assert.equal(await page.locator('#agent-badge').textContent(), 'HR');
  await page.locator('#new-chat').click();
  await page.locator('#welcome').waitFor();
  assert.deepEqual(await listed(server), []);
  await list.locator('li.empty', { hasText: 'No conversations yet.' }).waitFor();

  // An empty session made elsewhere (as earlier versions of the page did on every visit) is not listed.
  const made = await fetch(new URL('/api/v1/sessions', server.url), {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}',
  });
  assert.equal(made.status, 201);
  // The page looks it up and finds no message.
  const probe = page.waitForResponse(
    (r) => /^\/api\/v1\/sessions\/[^/]+$/.test(new URL(r.url()).pathname) && r.request().method() === 'GET',
  );
  await page.reload();
  await page.locator('#catalogue .goal').first().waitFor();
  await probe;
  await list.locator('li.empty', { hasText: 'No conversations yet.' }).waitFor();
  assert.equal(await list.locator('button.session:visible').count(), 0);

  // The first message makes the one conversation listed.
  await say(page, 'how much PTO do I have?');
  await log(page).locator('li.msg.assistant .bubble', { hasText: 'days of PTO' }).waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  await list.locator('button.session .session-title', { hasText: 'how much PTO do I have?' }).waitFor();
  await page.reload();
  await page.locator('body[data-stream="live"]').waitFor();
  await list.locator('button.session .session-title', { hasText: 'how much PTO do I have?' }).waitFor();
  assert.equal(await list.locator('button.session:visible').count(), 1);
  assert.equal(await list.locator('li.empty').isVisible(), false);
  assert.equal((await listed(server)).length, 2); // the one made elsewhere is still there, unlisted
  await screenshot(page, '18-sessions-listed');
  assert.deepEqual(errors, []);
});

test('a tool server\'s status is a quiet line, replaced as it changes; a failure stays as an error', async (t) => {
  // The server may not send `tools_status` yet: the events are fed to the
  // page's conversation as its stream would deliver them.
  const server = await startServer();
  t.after(() => server.stop());
  const { page, errors } = await browse(t, server.url);
  const feed = (events) =>
    page.evaluate(async (events) => {
      const { Conversation } = await import('/assets/conversation.js');
      const list = document.getElementById('log');
      window.fed ??= new Conversation('s-fed', list, {});
      document.getElementById('welcome').hidden = true;
      list.hidden = false;
      for (const event of events) window.fed.apply({ session: 's-fed', run: 'run-1', ...event });
    }, events);
  await feed([
    { type: 'message', seq: 2, message: { role: 'user', content: 'where is my order 1042?' } },
    { type: 'tools_status', seq: 3, server: 'orders', state: 'starting', message: 'starting the orders tools…' },
  ]);
  const lines = log(page).locator('li.tools-status');
  await lines.first().waitFor();
  assert.equal(await lines.count(), 1);
  assert.equal(await lines.first().getAttribute('role'), 'status');
  assert.equal(await lines.first().textContent(), 'starting the orders tools…');
  assert.equal(await lines.first().locator('.spinner').count(), 1);
  await screenshot(page, '19-tools-starting');

  await feed([{ type: 'tools_status', seq: 4, server: 'orders', state: 'ready', message: 'the orders tools are ready' }]);
  assert.equal(await lines.count(), 1);
  assert.match(await lines.first().getAttribute('class'), /\bready\b/);
  assert.equal(await lines.first().textContent(), '✓the orders tools are ready');

  // Another server fails: its line becomes an error note and stays.
  await feed([
    { type: 'tools_status', seq: 5, server: 'billing', state: 'starting', message: 'starting the billing tools…' },
    { type: 'tools_status', seq: 6, server: 'billing', state: 'failed', message: 'the billing tools could not start: <b>exit 1</b>' },
    { type: 'message', seq: 7, message: { role: 'assistant', agent: 'hub', content: 'Your order 1042 ships tomorrow.' } },
  ]);
  assert.equal(await lines.count(), 2);
  const failed = log(page).locator('li.note.error.tools-status');
  assert.equal(await failed.getAttribute('role'), 'alert');
  assert.equal(await failed.textContent(), '!the billing tools could not start: <b>exit 1</b>');
  assert.equal(await log(page).locator('b').count(), 0);
  // A new start of a server whose last state was final is a new line.
  await feed([{ type: 'tools_status', seq: 8, server: 'orders', state: 'starting' }]);
  assert.equal(await lines.count(), 3);
  assert.equal(await lines.last().textContent(), 'Starting the Orders tools…');
  await screenshot(page, '20-tools-status');
  assert.deepEqual(errors, []);
});

test('a run that waits for a slow tool server shows its status under the message, and the answer after', async (t) => {
  // The orders tools start three seconds late. A server that does not send
  // `tools_status` (yet) shows no status line; the answer comes all the same.
  const orders = path.join(path.dirname(binary), 'concierge-orders');
  if (!existsSync(orders)) {
    t.skip(`${orders} is not built`);
    return;
  }
  const server = await startServer([], {
    prepare(dir) {
      const file = path.join(dir, 'assistant', 'agents', 'orders.toml');
      const slow = `command = "sh"\nargs = ["-c", ${JSON.stringify(`sleep 3; exec '${orders}'`)}]`;
      const toml = readFileSync(file, 'utf8').replace(/^command = .*$/m, slow);
      assert.match(toml, /sleep 3/);
      writeFileSync(file, toml);
    },
  });
  t.after(() => server.stop());
  const { page, errors } = await browse(t, server.url);
  await page.locator('#catalogue .goal[data-goal="orders"]').click();
  await say(page, 'where is my order 1001?');
  const answer = log(page).locator('li.msg.assistant:not(.greeting) .bubble', { hasText: 'Order 1001' });
  const status = log(page).locator('li.tools-status');
  // Whichever comes first: the status line (then the answer), or the answer.
  await Promise.race([status.first().waitFor({ timeout: 60000 }), answer.first().waitFor({ timeout: 60000 })]);
  if (await status.count()) await screenshot(page, '21-tools-waiting');
  await answer.first().waitFor();
  await page.locator('#working').waitFor({ state: 'hidden' });
  const order = async () => log(page).evaluate((list) => [...list.children].map((li) => li.className.split(' ')[0]));
  const drawn = await order();
  if (await status.count()) {
    // One line for the orders server, ready now, after the message and before the answer.
    assert.equal(await status.count(), 1);
    assert.match(await status.getAttribute('class'), /\bready\b/);
    assert.equal(await status.getAttribute('data-server'), 'orders');
    const at = drawn.indexOf('tools-status');
    assert.equal(drawn[at - 1], 'msg');
    assert.ok(drawn.lastIndexOf('msg') > at);
  }
  assert.deepEqual(await userTexts(page), ['where is my order 1001?']);
  // A reload draws the same.
  await page.reload();
  await page.locator('body[data-stream="live"]').waitFor();
  await answer.first().waitFor();
  assert.deepEqual(await order(), drawn);
  assert.deepEqual(errors, []);
});

test('a long list of conversations comes a page at a time; the older ones a click away', async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const post = (path, body) => fetch(new URL(path, server.url), {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  for (let n = 1; n <= 103; n++) {
    const made = await post('/api/v1/sessions', { id: `c${n}`, agent: 'calculator' });
    assert.equal(made.status, 201);
    const out = await post(`/api/v1/sessions/c${n}/messages?wait=true`, { text: `calculate ${n} + 1` });
    assert.equal(out.status, 200);
  }
  const { page, errors } = await browse(t, server.url);
  const list = page.locator('#session-list');
  const more = list.locator('button.session-more');
  await more.waitFor();
  assert.equal(await list.locator('button.session').count(), 100);
  // The newest first: the last one made is at the top.
  await list.locator('button.session').first().locator('.session-title', { hasText: 'calculate 103 + 1' }).waitFor();
  await more.click();
  await list.locator('button.session[data-session="c1"]').waitFor();
  assert.equal(await list.locator('button.session').count(), 103);
  assert.equal(await more.count(), 0);
  assert.deepEqual(errors, []);
});
