// The MCP servers' prompts as conversation starters on the empty
// conversation (GET /api/v1/mcp/servers/{server}/prompts): picking one
// fills it in (POST .../prompts/{name}, asking first for its arguments)
// and sends its text as the first message.

import { api } from './api.js';
import { h, clear } from './dom.js';

/**
 * Draws the starters into `container` (hidden when there are none);
 * `send(text)` sends the filled-in prompt, `toast(message)` shows an error.
 */
export async function drawStarters(container, send, toast) {
  let servers = [];
  try {
    servers = ((await api.mcpServers()).servers ?? []).map((s) => s.name);
  } catch {
    servers = [];
  }
  const starters = [];
  for (const server of servers) {
    try {
      for (const prompt of (await api.prompts(server)).prompts ?? []) starters.push({ server, ...prompt });
    } catch {
      // A server that is down offers no starters now.
    }
  }
  clear(container);
  container.hidden = starters.length === 0;
  if (!starters.length) return;
  container.append(h('h2', {}, 'Conversation starters'));
  const list = h('ul', { class: 'starters' });
  for (const prompt of starters) {
    const title = prompt.title || prompt.name;
    list.append(h('li', {}, h('button', {
      type: 'button', class: 'chip', title: prompt.description || title,
      onclick: () => pick(container, prompt, send, toast),
    }, title)));
  }
  container.append(list);
}

/** Fills in `prompt` (asking for its arguments first, if it has any) and sends it. */
function pick(container, prompt, send, toast) {
  const args = prompt.arguments ?? [];
  if (!args.length) return fill(prompt, {}, send, toast);
  container.querySelector('form.prompt-args')?.remove();
  const fields = args.map((arg) => {
    const id = `prompt-arg-${arg.name}`;
    return h('label', { for: id },
      `${arg.name}${arg.required ? ' (required)' : ''}`,
      arg.description ? h('span', { class: 'muted' }, ` — ${arg.description}`) : null,
      h('input', { id, name: arg.name, required: arg.required ? true : null, autocomplete: 'off' }));
  });
  const form = h('form', { class: 'prompt-args', 'aria-label': `Arguments of ${prompt.title || prompt.name}` },
    h('p', {}, prompt.description || prompt.title || prompt.name),
    ...fields,
    h('button', { type: 'submit', class: 'primary' }, 'Start'),
    h('button', { type: 'button', class: 'link', onclick: () => form.remove() }, 'Cancel'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const values = {};
    for (const input of form.querySelectorAll('input')) {
      if (input.value.trim()) values[input.name] = input.value;
    }
    if (await fill(prompt, values, send, toast)) form.remove();
  });
  container.append(form);
  form.querySelector('input')?.focus();
}

async function fill(prompt, values, send, toast) {
  try {
    const filled = await api.prompt(prompt.server, prompt.name, values);
    send(filled.text);
    return true;
  } catch (error) {
    toast(error.message);
    return false;
  }
}
