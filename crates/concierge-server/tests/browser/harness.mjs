// What the browser tests share: a real `concierge serve` on a fresh copy of
// the examples, Debian's chromium driven by playwright-core, a scripted
// OpenAI-compatible model whose answer streams only as far as the test lets
// it, and a place for screenshots.

import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, existsSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const targetDir = process.env.CARGO_TARGET_DIR
  ? path.resolve(repo, process.env.CARGO_TARGET_DIR)
  : path.join(repo, 'target');
export const binary = process.env.CONCIERGE_BIN ?? path.join(targetDir, 'debug', 'concierge');
export const artifacts = process.env.CONCIERGE_TEST_ARTIFACTS ?? path.join(targetDir, 'browser-artifacts');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';

if (!existsSync(binary)) {
  throw new Error(`${binary} does not exist: build it first (cargo build --workspace)`);
}
mkdirSync(artifacts, { recursive: true });

/**
 * Whether a file of an example belongs in a test's copy: not the SQLite
 * files (`*.db` and its `-wal`, `-shm` and `-journal` files) that using the
 * example (scripts/demo.sh, `concierge run` in its folder) leaves there, so
 * a test never reads a person's sessions or data.
 */
export function isExampleSource(file) {
  return !/\.db(-wal|-shm|-journal)?$/.test(file);
}

/**
 * `concierge serve` on a free loopback port, run from a fresh copy of
 * examples/assistant (and the examples it borrows agents from), without
 * the databases the examples' use left there, so its SQLite files are new.
 * `extra` are more CLI options (e.g. a model); `prepare(dir)` may change
 * the copy (in `dir`) before the server starts.
 */
export async function startServer(extra = [], { prepare } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'concierge-web-'));
  for (const example of ['assistant', 'tasks', 'crm']) {
    cpSync(path.join(repo, 'examples', example), path.join(dir, example), {
      recursive: true,
      filter: isExampleSource,
    });
  }
  await prepare?.(dir);
  const child = spawn(binary, ['--config', 'concierge.toml', ...extra, 'serve', '--addr', '127.0.0.1:0'], {
    cwd: path.join(dir, 'assistant'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const url = await new Promise((resolve, reject) => {
    let stdout = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const match = /^(http:\/\/\S+)$/m.exec(stdout);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`concierge serve exited with ${code} before listening:\n${stderr}`)));
  });
  return {
    url,
    dir,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** A fresh chromium (its own user-data dir) with one page of `width`×`height`. */
export async function openBrowser({ width = 1280, height = 860 } = {}) {
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'concierge-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
    viewport: { width, height },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  return { context, page, errors };
}

/** Saves a screenshot of `page` as `<name>.png` in the artifacts folder. */
export async function screenshot(page, name) {
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

/**
 * An OpenAI-compatible chat completions server whose streamed answer is
 * `parts`, one chunk at a time: the first is sent at once (with `hold`,
 * when the test first calls `release()`), each next one when the test
 * calls `release()`. A request that does not stream gets the whole answer.
 */
export async function scriptedModel(parts, { hold = false } = {}) {
  let gates = [];
  const released = [];
  let requests = 0;
  const first = hold ? 0 : 1;
  const wait = (i) =>
    released[i] ? Promise.resolve() : new Promise((resolve) => (gates[i] = resolve));
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', async () => {
      requests += 1;
      let request = {};
      try {
        request = JSON.parse(body);
      } catch {
        request = {};
      }
      const usage = { prompt_tokens: 12, completion_tokens: parts.length };
      if (!request.stream) {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({
          id: 'chatcmpl-test', object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: parts.join('') }, finish_reason: 'stop' }],
          usage,
        }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (data) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      for (let i = 0; i < parts.length; i++) {
        if (i >= first) await wait(i);
        const last = i === parts.length - 1;
        send({
          id: 'chatcmpl-test', object: 'chat.completion.chunk',
          choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content: parts[i] } : { content: parts[i] }, finish_reason: last ? 'stop' : null }],
        });
      }
      send({ id: 'chatcmpl-test', object: 'chat.completion.chunk', choices: [], usage });
      res.end('data: [DONE]\n\n');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  let next = first;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return requests;
    },
    /** Lets the next chunk of the answer go. */
    release() {
      const i = next++;
      released[i] = true;
      gates[i]?.();
    },
    async stop() {
      for (let i = next; i < parts.length; i++) this.release();
      server.closeAllConnections();
      server.close();
      gates = [];
    },
  };
}
