// A question a tool's server asks the person in the middle of a call (MCP
// elicitation): a form built from the requested schema (text, number,
// whole number, yes/no and list fields) with Accept, Decline and Cancel;
// a page to visit; leave for the server to use the model; or a remote
// agent's question in words (A2A input-required), answered with a reply.

import { h, humanize } from './dom.js';

/** One input for a form field of the requested schema. */
function field(name, prop, required) {
  const id = `elicit-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const title = prop.title || humanize(name);
  const options = prop.enum ?? (prop.oneOf ?? []).map((o) => o.const).filter((v) => v !== undefined);
  let input;
  if (options.length) {
    input = h('select', { id, name }, [
      ...(required ? [] : [h('option', { value: '' }, '—')]),
      ...options.map((o) => h('option', { value: String(o) }, String(o))),
    ]);
  } else if (prop.type === 'boolean') {
    input = h('input', { id, name, type: 'checkbox' });
  } else if (prop.type === 'number' || prop.type === 'integer') {
    input = h('input', { id, name, type: 'number', step: prop.type === 'integer' ? '1' : 'any' });
    if (prop.minimum !== undefined) input.min = prop.minimum;
    if (prop.maximum !== undefined) input.max = prop.maximum;
  } else {
    input = h('input', { id, name, type: prop.format === 'email' ? 'email' : 'text' });
    if (prop.maxLength !== undefined) input.maxLength = prop.maxLength;
  }
  if (required && prop.type !== 'boolean') input.required = true;
  if (prop.default !== undefined) {
    if (prop.type === 'boolean') input.checked = Boolean(prop.default);
    else input.value = String(prop.default);
  }
  const label = h('label', { for: id }, required ? `${title} *` : title);
  const hint = prop.description ? h('div', { class: 'hint' }, prop.description) : null;
  const read = () => {
    if (prop.type === 'boolean') return input.checked;
    const text = input.value.trim();
    if (text === '') return undefined;
    if (prop.type === 'integer') return Number.parseInt(text, 10);
    if (prop.type === 'number') return Number(text);
    return text;
  };
  return { row: h('div', { class: 'field' }, label, input, hint), read, name, title };
}

/**
 * The block for a pending question. `answer(action, content)` sends the
 * answer and resolves to whether the server took it.
 */
export function elicitationBlock(pending, answer) {
  const question = pending.elicitation ?? {};
  const outcome = h('div', { class: 'outcome', role: 'status' });
  const reply = question.mode === 'reply';
  const title = h('div', { class: 'ask-title' }, `The ${question.server ?? 'tool'} ${reply ? 'agent' : 'server'} asks`);
  const buttons = [];
  const fields = [];
  let body;
  if (question.mode === 'form') {
    const schema = question.schema ?? {};
    const required = new Set(schema.required ?? []);
    for (const [name, prop] of Object.entries(schema.properties ?? {})) fields.push(field(name, prop, required.has(name)));
    body = fields.map((f) => f.row);
  } else if (reply) {
    // A remote agent's question: the person's words are the reply.
    fields.push(field('text', { type: 'string', title: 'Your reply' }, true));
    body = fields.map((f) => f.row);
  } else if (question.mode === 'url') {
    body = [h('a', { href: question.url, target: '_blank', rel: 'noopener noreferrer' }, 'Open the page')];
  } else {
    body = [h('p', { class: 'ask-text' }, `It wants to send the model: ${question.request ?? ''}`)];
  }
  const accept = question.mode === 'sampling' ? 'Allow' : reply ? 'Send' : 'Accept';
  const form = h('form', { class: 'elicitation' }, body);
  const send = async (action) => {
    let content;
    if (action === 'accept' && (question.mode === 'form' || reply)) {
      if (!form.reportValidity()) return;
      content = {};
      for (const f of fields) {
        const value = f.read();
        if (value !== undefined && !Number.isNaN(value)) content[f.name] = value;
      }
    }
    for (const b of buttons) b.disabled = true;
    const ok = await answer(action, content);
    if (!ok && !parts.resolved) for (const b of buttons) b.disabled = false;
  };
  for (const [action, label] of [['accept', accept], ['decline', 'Decline'], ['cancel', 'Cancel']]) {
    buttons.push(h('button', { type: 'button', class: action === 'accept' ? 'approve' : 'deny', onclick: () => send(action) }, label));
  }
  const block = h('li', { class: 'ask elicitation', 'data-call': pending.call_id },
    title,
    h('p', { class: 'ask-text' }, question.message ?? ''),
    form,
    h('div', { class: 'actions' }, buttons),
    outcome,
  );
  const parts = { block, title, form, buttons, outcome, resolved: false };
  return parts;
}

/** Marks a question's block answered with the person's action. */
export function elicitationAnswered(parts, answer) {
  if (!parts || parts.resolved) return;
  parts.resolved = true;
  parts.block.classList.add('answered');
  for (const b of parts.buttons) b.disabled = true;
  parts.form.remove();
  const said = { accept: '✓ Answered', decline: '✕ Declined', cancel: '✕ Cancelled' };
  parts.outcome.textContent = said[answer?.action] ?? 'Answered';
}
