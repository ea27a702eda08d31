// The web chat's MCP parts in a real browser against a real `concierge
// serve` on the assistant example with a small MCP server (notes_mcp.py):
// the server's prompts as conversation starters on the empty conversation
// (one asks for its argument first), and a resource attached to a message.
// Every wait is for something on the page; nothing sleeps.
//
//   scripts/setup-browser.sh && cargo build -p concierge-cli
//   cd crates/concierge-server/tests/browser && npm test

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, openBrowser, screenshot } from './harness.mjs';

const notes = path.join(path.dirname(fileURLToPath(import.meta.url)), 'notes_mcp.py');

let server;
before(async () => {
  server = await startServer([], {
    prepare: (dir) =>
      appendFileSync(
        path.join(dir, 'assistant', 'concierge.toml'),
        `\n[mcp_servers.notes]\ncommand = "python3"\nargs = [${JSON.stringify(notes)}]\n`,
      ),
  });
});
after(async () => {
  await server?.stop();
});

async function chat(t) {
  const browser = await openBrowser();
  t.after(async () => {
    await browser.context.close();
    assert.deepEqual(browser.errors, [], 'no script errors');
  });
  await browser.page.goto(server.url);
  await browser.page.locator('#catalogue .goal').first().waitFor();
  return browser;
}

const userTexts = (page) => page.locator('#log li.msg.user .bubble').allTextContents();

test('the MCP prompts are conversation starters; one with an argument asks for it', async (t) => {
  const { page } = await chat(t);
  const starters = page.locator('.starters-section');
  await starters.getByRole('button', { name: 'Say hello' }).waitFor();
  await screenshot(page, 'mcp-01-starters');
  await starters.getByRole('button', { name: 'Say hello' }).click();
  await page.locator('#log li.msg.user .bubble', { hasText: 'Hello!' }).waitFor();
  assert.deepEqual(await userTexts(page), ['Hello!']);

  await page.locator('#new-chat').click();
  await starters.getByRole('button', { name: 'Summarize a topic' }).click();
  const form = page.locator('form.prompt-args');
  await form.getByLabel(/topic/).fill('refunds');
  await screenshot(page, 'mcp-02-prompt-arguments');
  await form.getByRole('button', { name: 'Start' }).click();
  await page.locator('#log li.msg.user .bubble', { hasText: 'refunds' }).waitFor();
  assert.deepEqual(await userTexts(page), ['Summarize what the notes say about refunds.']);
});

test('a resource attached to a message goes with it', async (t) => {
  const { page } = await chat(t);
  await page.getByRole('button', { name: 'Attach a resource' }).click();
  const menu = page.locator('.resource-menu');
  await menu.getByRole('option', { name: /handbook/ }).click();
  await page.locator('.attachment', { hasText: 'Attached: handbook' }).waitFor();
  await screenshot(page, 'mcp-03-attached');
  await page.locator('#composer-input').fill('How long do refunds take?');
  await page.locator('#composer-input').press('Enter');
  await page.locator('#log li.msg.user .bubble', { hasText: 'Refunds take five days.' }).waitFor();
  const [sent] = await userTexts(page);
  assert.equal(
    sent,
    'How long do refunds take?\n\n[Attached resource notes:notes://handbook]\nRefunds take five days.',
  );
  assert.equal(await page.locator('.attachment').isHidden(), true, 'the attachment went with the message');
});
