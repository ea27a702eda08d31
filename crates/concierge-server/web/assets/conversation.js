// The conversation: a session's events drawn as messages, tool cards,
// confirmations, choices and handoff dividers. Child runs (agents called
// as tools, whose events carry the session `<parent>:<call>`) are drawn
// inside their call's card.

import { h, append, clear, show, humanize, duration } from './dom.js';
import { elicitationBlock, elicitationAnswered } from './elicitation.js';

/** Names of agents for the page: set once the catalogue is loaded. */
export const agentNames = new Map();

/** An agent's display name. */
export function agentName(id) {
  if (!id) return 'Assistant';
  if (id === 'hub') return 'Concierge';
  return agentNames.get(id) ?? humanize(id);
}

/** The text after "Try:" in a starter prompt, as separate suggestions. */
export function suggestions(prompt) {
  const match = /Try:\s*(.+)$/s.exec(prompt ?? '');
  if (!match) return [];
  // Up to the first sentence that is not a suggestion ("Then tell me ...").
  const list = match[1].split(/(?<=[.?!])\s+(?=[A-Z])/)[0];
  return list
    .split(/,\s+(?:or\s+)?|\s+or\s+(?=[a-z])/)
    .map((s) => s.trim().replace(/[.]$/, ''))
    .filter((s) => s.length > 1 && s.length < 120);
}

/**
 * Draws one session's conversation into `list` (an `ol` with role=log).
 * `actions` has `confirm(pending, decision)`, `choose(number)`, `send(text)`,
 * for a message that could not be sent `retry(entry)` and `edit(entry)`,
 * and for a past message the server has `editPast({ text, seq, li })`
 * (`seq`: its event's number).
 * `session` is null for a conversation not started yet (its first message
 * creates the session; `session` is set then).
 */
export class Conversation {
  constructor(session, list, actions) {
    this.session = session;
    this.list = list;
    this.actions = actions;
    this.cards = new Map(); // `${session}/${call}` → card parts
    this.children = new Map(); // child session → the element its events go in
    this.runs = new Map(); // `${session}/${run}` → { bubble, spoke }
    this.confirms = new Map(); // call id → confirmation block parts
    this.choices = new Map(); // call id → choice block parts
    this.questions = new Map(); // `${session}/${call}/${n}` → a tool's question block parts
    this.statuses = new Map(); // `${session}/${server}` → the tool server's status line
    // The person's messages shown before the session's stream has them:
    // { text, li, bubble, foot, state: 'sending' | 'sent' | 'failed', answer }.
    this.outbox = [];
    this.agent = null;
    /** The note saying where a forked conversation comes from, once drawn. */
    this.forkNote = null;
    clear(list);
  }

  /**
   * Shows the person's message at once, before the server has it. `answer`:
   * it may answer a question the run waits on (typing "yes" or "2"), which
   * the stream records as the answer rather than as a message.
   */
  outgoing(text, answer = false) {
    const bubble = h('div', { class: 'bubble' }, text);
    const foot = h('div', { class: 'send-state', hidden: true });
    const li = h('li', { class: 'msg user sending' }, bubble, foot);
    const entry = { text, li, bubble, foot, state: 'sending', answer };
    this.outbox.push(entry);
    this.add(li);
    return entry;
  }

  /** Whether a question (an approval or a choice) waits in this conversation. */
  asking() {
    return [...this.confirms.values(), ...this.choices.values(), ...this.questions.values()].some((parts) => !parts.resolved);
  }

  /** Messages sent or being sent that the stream has not shown yet. */
  unsettled() {
    return this.outbox.some((e) => e.state !== 'failed');
  }

  /** The server took the message: its run (`run`, its id) starts, and the stream shows it next. */
  sent(entry, run) {
    if (entry.state !== 'sending') return;
    entry.state = 'sent';
    entry.run = run ?? null;
  }

  /** Sending again a message that failed. */
  resending(entry) {
    entry.state = 'sending';
    entry.li.className = 'msg user sending';
    entry.foot.hidden = true;
    clear(entry.foot);
    if (!this.outbox.includes(entry)) this.outbox.push(entry);
    this.add(entry.li); // to the end, after what came meanwhile
  }

  /** The message could not be sent: it stays, marked, with why, and can be sent again. */
  failed(entry, why) {
    if (entry.state !== 'sending' && entry.state !== 'sent') return;
    entry.state = 'failed';
    entry.li.className = 'msg user failed';
    clear(entry.foot);
    append(entry.foot, [
      h('span', { class: 'send-why' }, h('span', { class: 'send-mark', 'aria-hidden': 'true' }, '!'), `Not sent: ${why}`),
      h('span', { class: 'send-actions' },
        h('button', { type: 'button', class: 'link', onclick: () => this.actions.retry?.(entry) }, 'Try again'),
        h('button', { type: 'button', class: 'link', onclick: () => this.actions.edit?.(entry) }, 'Edit'),
      ),
    ]);
    entry.foot.setAttribute('role', 'alert');
    entry.foot.hidden = false;
  }

  /** Takes a message out of the conversation (to edit it, or once it became an answer). */
  drop(entry) {
    this.outbox = this.outbox.filter((e) => e !== entry);
    entry.li.remove();
  }

  /** A shown message the server now has, as a plain message. */
  settle(entry, text) {
    this.outbox = this.outbox.filter((e) => e !== entry);
    entry.state = 'settled';
    entry.li.className = 'msg user';
    entry.foot.remove();
    if (text !== undefined && text !== entry.text) entry.bubble.textContent = text;
  }

  /**
   * The shown message that is the stream's user message `text` of run
   * `run`: the first one with that text on its way, else the one whose
   * sending started that run.
   */
  claim(text, run) {
    const going = this.outbox.filter((e) => e.state === 'sending' || e.state === 'sent');
    return going.find((e) => e.text === text.trim()) ?? going.find((e) => e.run && e.run === run) ?? null;
  }

  /** The welcome bubble of a conversation started from a goal, with its suggestions as buttons. */
  greet(goal) {
    if (!goal?.starter_prompt) return;
    const chips = suggestions(goal.starter_prompt).map((text) =>
      h('button', { type: 'button', class: 'chip', onclick: () => this.actions.send(text) }, text),
    );
    // With the suggestions as buttons, the bubble says only what comes before them.
    const intro = chips.length ? goal.starter_prompt.split(/\s*Try:/)[0] : goal.starter_prompt;
    this.add(
      h('li', { class: 'msg assistant greeting' },
        h('div', { class: 'who' }, agentName(goal.id)),
        h('div', { class: 'bubble' }, intro || goal.starter_prompt),
        chips.length ? h('div', { class: 'chips', role: 'group', 'aria-label': 'Suggestions' }, chips) : null,
      ),
    );
  }

  /**
   * Says, at the top, that this conversation was forked from another
   * (`origin`: `{ session_id, note }`, the session view's `forked_from`),
   * with a link back to it. Drawn once.
   */
  forkedFrom(origin) {
    if (!origin || this.forkNote) return;
    const back = origin.session_id
      ? h('p', {}, 'Back to ', h('a', { href: `#/s/${encodeURIComponent(origin.session_id)}` }, 'the original conversation'), '.')
      : null;
    this.forkNote = h('li', { class: 'note info forked' },
      h('p', {}, origin.note || 'This conversation was forked from an earlier one.'),
      back,
    );
    this.list.prepend(this.forkNote);
  }

  add(node, into = this.list) {
    into.append(node);
    if (into === this.list) node.scrollIntoView?.({ block: 'nearest' });
    return node;
  }

  /** The element a session's events are drawn in: the log, or a call card's nested list. */
  place(event) {
    return event.session === this.session ? this.list : this.children.get(event.session) ?? null;
  }

  run(event) {
    const key = `${event.session}/${event.run}`;
    if (!this.runs.has(key)) this.runs.set(key, { bubble: null, spoke: false });
    return this.runs.get(key);
  }

  /** Applies one event. */
  apply(event) {
    const into = this.place(event);
    if (!into) return; // a child whose start this page did not see
    const root = into === this.list;
    switch (event.type) {
      case 'session_opened':
        // A fork's first event says where it comes from (its session in the
        // engine's name, `<tenant>/<id>` on a server with tenants).
        if (root && event.forked_from) {
          const origin = String(event.forked_from.session ?? '');
          this.forkedFrom({ session_id: origin.slice(origin.lastIndexOf('/') + 1), note: event.forked_from.note });
        }
        break;
      case 'run_started':
        if (root) this.agent = event.agent;
        break;
      case 'agent_changed':
        if (root) {
          this.agent = event.to;
          this.add(divider(event));
        }
        break;
      case 'model_delta':
        this.delta(event, into);
        break;
      case 'message':
        this.message(event, into, root);
        break;
      case 'tool_requested':
        this.toolRequested(event, into);
        break;
      case 'tool_reused': {
        const card = this.cards.get(`${event.session}/${event.call_id}`);
        if (card) setStatus(card, 'ok', 'Reused earlier result');
        break;
      }
      case 'tool_finished':
        this.toolFinished(event);
        break;
      case 'tool_progress': {
        // A running call says what it does (a remote agent's status).
        const card = this.cards.get(`${event.session}/${event.call_id}`);
        if (card && !card.status.classList.contains('ok')) card.status.textContent = event.message;
        break;
      }
      case 'child_started':
        this.childStarted(event);
        break;
      // A child's question reaches the person through the parent's event;
      // its answer may be recorded by the child alone.
      case 'awaiting_confirmation':
        this.waiting(event.pending, 'Waiting for approval');
        if (root) this.confirmation(event.pending);
        break;
      case 'confirmation_resolved':
        this.confirmationResolved(event);
        this.answered();
        break;
      case 'choice_requested':
        this.waiting(event.pending, 'Waiting for your choice');
        if (root) this.choice(event.pending);
        break;
      case 'choice_resolved':
        this.choiceResolved(event);
        this.answered();
        break;
      case 'elicitation_requested':
        this.waiting(event.pending, 'Waiting for your answer');
        if (root) this.elicitation(event);
        break;
      case 'elicitation_answered':
        elicitationAnswered(this.questions.get(`${event.session}/${event.call_id}/${event.question}`), event.answer);
        this.answered();
        break;
      case 'tools_status':
        this.toolsStatus(event, into);
        break;
      case 'cap_reached':
        if (root) this.add(note('info', 'This run reached one of its limits, so the assistant sums up what it has.'));
        break;
      case 'guardrail_tripped':
        if (root) this.add(note('info', guardrailNote(event)));
        break;
      case 'run_finished':
        this.runFinished(event, into, root);
        break;
      case 'error':
        this.add(note('error', event.message), into);
        break;
      case 'session_ended':
        if (root) this.add(note('info', 'This conversation has ended.'));
        break;
      default:
        break;
    }
  }

  delta(event, into) {
    if (into !== this.list) return; // a child's answer shows as its call's result
    const run = this.run(event);
    if (!run.bubble) {
      run.bubble = assistantBubble(this.agentOf(event), '', into !== this.list);
      run.bubble.li.classList.add('streaming');
      run.bubble.text.setAttribute('aria-busy', 'true');
      this.add(run.bubble.li, into);
    }
    run.bubble.text.append(document.createTextNode(event.text));
  }

  agentOf(event) {
    return event.session === this.session ? this.agent : null;
  }

  message(event, into, root) {
    const message = event.message ?? {};
    if (message.role === 'user') {
      if (!root) return;
      const content = message.content ?? '';
      // The message shown when the person sent it: it is this one.
      const shown = this.claim(content, event.run);
      const last = this.list.lastElementChild;
      if (!shown && event.run && last?.classList.contains('divider') && last.dataset.run === String(event.run)) {
        // The question a choice of agent answered, passed on to the agent
        // chosen: the person asked it once, above.
        this.add(note('passed-on', `Passed on: “${content}”`));
        return;
      }
      if (shown) this.settle(shown, content);
      const li = shown?.li ?? h('li', { class: 'msg user' }, h('div', { class: 'bubble' }, content));
      this.editable(li, content, event.seq);
      // After what came before it in the stream, but before the status lines
      // of the tool servers its run waited for (sent before the run's events).
      let first = null;
      for (let node = this.list.lastElementChild; node?.classList.contains('tools-status'); node = node.previousElementSibling) {
        if (node !== li) first = node;
      }
      if (first) {
        this.list.insertBefore(li, first);
        li.scrollIntoView?.({ block: 'nearest' });
      } else {
        this.add(li);
      }
      return;
    }
    // A child's answer shows as its call's result.
    if (message.role !== 'assistant' || !message.content || !root) return;
    const run = this.run(event);
    if (run.bubble) {
      // The streamed text is replaced by the message as it was kept.
      run.bubble.text.textContent = message.content;
      run.bubble.text.removeAttribute('aria-busy');
      run.bubble.li.classList.remove('streaming');
      run.bubble = null;
    } else {
      this.add(assistantBubble(message.agent, message.content, !root).li, into);
    }
    run.spoke = true;
  }

  /**
   * Offers to edit a past message and send it again (in a new conversation
   * forked just before it): only one the server has, with an event before it.
   */
  editable(li, text, seq) {
    if (!this.actions.editPast || typeof seq !== 'number' || seq < 2 || li.querySelector('.msg-actions')) return;
    li.append(
      h('div', { class: 'msg-actions' },
        h('button', {
          type: 'button', class: 'link edit-past', 'aria-label': 'Edit and resend this message',
          title: 'Edit this message and send it again in a new conversation',
          onclick: () => this.actions.editPast({ text, seq, li }),
        }, 'Edit'),
      ),
    );
  }

  toolRequested(event, into) {
    const key = `${event.session}/${event.call_id}`;
    if (this.cards.has(key)) return;
    const status = h('span', { class: 'status running' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Running');
    const time = h('span', { class: 'duration' });
    const result = h('div', { class: 'result', hidden: true });
    const nested = h('ol', { class: 'nested', hidden: true, 'aria-label': `Steps of ${humanize(event.tool)}` });
    const card = h('li', { class: 'tool', 'data-call': event.call_id, 'data-tool': event.tool },
      h('div', { class: 'tool-head' },
        h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'),
        h('span', { class: 'tool-name' }, humanize(event.tool)),
        status,
        time,
      ),
      argumentsTable(event.arguments),
      nested,
      result,
    );
    this.cards.set(key, { card, status, time, result, nested });
    this.add(card, into);
  }

  toolFinished(event) {
    const parts = this.cards.get(`${event.session}/${event.call_id}`);
    if (!parts) return;
    setStatus(parts, event.ok ? 'ok' : 'failed', event.ok ? 'Done' : 'Failed');
    parts.time.textContent = duration(event.duration_ms);
    const outcome = event.outcome ?? {};
    const value = 'ok' in outcome ? outcome.ok : outcome.error;
    clear(parts.result);
    append(parts.result, [resultView(value, !event.ok)]);
    parts.result.hidden = false;
  }

  childStarted(event) {
    const parts = this.cards.get(`${event.session}/${event.call_id}`);
    if (!parts) return;
    parts.nested.hidden = false;
    append(parts.nested, [h('li', { class: 'child-head' }, `Handed to ${agentName(event.agent)}`)]);
    this.children.set(event.child, parts.nested);
  }

  /** Marks the card of a call that waits for the person. */
  waiting(pending, text) {
    const session = pending.session ?? this.session;
    const parts = this.cards.get(`${session}/${pending.call_id}`);
    if (parts && parts.status.classList.contains('running')) setStatus(parts, 'waiting', text);
  }

  /** The key of the call a question is about: its session and call id. */
  askKey(pending) {
    return `${pending.session ?? this.session}/${pending.call_id}`;
  }

  confirmation(pending) {
    const key = this.askKey(pending);
    const earlier = this.confirms.get(key);
    if (earlier?.fingerprint === pending.fingerprint) return;
    if (earlier && !earlier.resolved) {
      // Changed arguments are asked about again: the earlier question is over.
      earlier.resolved = true;
      earlier.buttons.remove();
      earlier.form.remove();
      earlier.title.textContent = 'Approval';
      earlier.block.classList.add('answered');
      earlier.outcome.textContent = '✎ Changed';
    }
    const card = this.cards.get(key);
    if (card && earlier) {
      const table = argumentsTable(pending.arguments);
      card.card.querySelector(':scope > table.args')?.replaceWith(table ?? '');
    }
    const approve = h('button', { type: 'button', class: 'primary', onclick: () => decide('approve') }, 'Approve');
    const deny = h('button', { type: 'button', class: 'secondary', onclick: () => decide('deny') }, 'Deny');
    const args = pending.arguments && typeof pending.arguments === 'object' ? pending.arguments : {};
    const edit = Object.keys(args).length
      ? h('button', { type: 'button', class: 'secondary', 'aria-expanded': 'false', onclick: () => toggleEdit() }, 'Edit')
      : null;
    const outcome = h('div', { class: 'outcome', role: 'status' });
    const buttons = h('div', { class: 'actions' }, approve, deny, edit);
    const form = editForm(args, pending.tool, (changed) => decide('amend', changed), () => toggleEdit());
    const title = h('div', { class: 'ask-title' }, 'Needs your approval');
    const block = h('li', { class: 'ask confirm', 'data-call': pending.call_id },
      title,
      h('p', { class: 'ask-text' }, pending.message),
      buttons,
      form,
      outcome,
    );
    const parts = { block, title, approve, deny, buttons, form, outcome, fingerprint: pending.fingerprint };
    const controls = () => [approve, deny, edit, ...form.querySelectorAll('button, input')].filter(Boolean);
    const toggleEdit = () => {
      form.hidden = !form.hidden;
      edit?.setAttribute('aria-expanded', String(!form.hidden));
      if (!form.hidden) form.querySelector('input')?.focus();
      else edit?.focus();
    };
    const decide = async (decision, changed) => {
      for (const c of controls()) c.disabled = true;
      outcome.textContent = { approve: 'Approving…', deny: 'Denying…', amend: 'Approving with your changes…' }[decision];
      const ok = await this.actions.confirm(pending, decision, changed);
      if (!ok && !parts.resolved) {
        for (const c of controls()) c.disabled = false;
        outcome.textContent = '';
      }
    };
    this.confirms.set(key, parts);
    this.add(block);
  }

  confirmationResolved(event) {
    const parts = this.confirms.get(`${event.session}/${event.call_id}`);
    if (!parts || parts.resolved) return;
    parts.resolved = true;
    parts.buttons.remove();
    parts.form.remove();
    parts.title.textContent = 'Approval';
    parts.block.classList.add(event.approved ? 'approved' : 'denied');
    parts.outcome.textContent = event.approved ? '✓ Approved' : '✕ Denied';
  }

  choice(pending) {
    const key = this.askKey(pending);
    if (this.choices.has(key)) return;
    const options = pending.choice?.options ?? [];
    const buttons = options.map((option, i) =>
      h('button', {
        type: 'button', class: 'option', 'data-number': i + 1, 'data-id': JSON.stringify(option.id),
        onclick: () => pick(i + 1),
      }, h('span', { class: 'number' }, String(i + 1)), h('span', {}, option.label)),
    );
    const group = h('div', { class: 'options', role: 'group', 'aria-label': pending.choice?.question ?? 'Options' }, buttons);
    group.addEventListener('keydown', (e) => moveFocus(e, buttons));
    const outcome = h('div', { class: 'outcome', role: 'status' });
    const title = h('div', { class: 'ask-title' }, 'Choose one');
    const block = h('li', { class: 'ask choice', 'data-call': pending.call_id },
      title,
      h('p', { class: 'ask-text' }, pending.choice?.question ?? ''),
      group,
      outcome,
    );
    const parts = { block, title, buttons, outcome, options };
    const pick = async (number) => {
      for (const b of buttons) b.disabled = true;
      const ok = await this.actions.choose(number);
      if (!ok && !parts.resolved) for (const b of buttons) b.disabled = false;
    };
    this.choices.set(key, parts);
    this.add(block);
  }

  /** A tool's server asks the person something while its call runs. */
  elicitation(event) {
    const pending = event.pending;
    const key = `${event.session}/${pending.call_id}/${pending.question}`;
    if (this.questions.has(key)) return;
    const parts = elicitationBlock(pending, (action, content) => this.actions.answer(pending, action, content));
    this.questions.set(key, parts);
    this.add(parts.block);
  }

  choiceResolved(event) {
    const parts = this.choices.get(`${event.session}/${event.call_id}`);
    if (!parts || parts.resolved) return;
    parts.resolved = true;
    parts.title.textContent = 'Your choice';
    parts.block.classList.add('answered');
    const index = parts.options.findIndex((o) => JSON.stringify(o.id) === JSON.stringify(event.chosen));
    parts.buttons.forEach((b, i) => {
      b.disabled = true;
      if (i === index) b.classList.add('chosen');
    });
    parts.outcome.textContent = index >= 0 ? `✓ ${parts.options[index].label}` : 'Answered in your own words';
  }

  /**
   * A question was answered: a typed answer on its way ("yes", "2") is
   * shown as the question's outcome, not as a message.
   */
  answered() {
    for (const entry of this.outbox.filter((e) => e.answer && e.state !== 'failed')) this.drop(entry);
  }

  /**
   * A tool server the run waits for: a quiet line while it starts, replaced
   * by the next state; a failure stays as an error note.
   */
  toolsStatus(event, into) {
    const server = String(event.server ?? '');
    const key = `${event.session}/${server}`;
    const state = ['starting', 'ready', 'failed'].includes(event.state) ? event.state : 'starting';
    const name = humanize(server) || 'Tool';
    const text =
      event.message ||
      { starting: `Starting the ${name} tools…`, ready: `The ${name} tools are ready.`, failed: `The ${name} tools could not start.` }[state];
    let line = this.statuses.get(key);
    // A line still starting is replaced; one that is done stays, and a new one follows.
    if (!line || line.state !== 'starting') {
      line = { li: h('li', { 'data-server': server }), state };
      this.statuses.set(key, line);
      this.add(line.li, into);
    }
    line.state = state;
    line.li.className = state === 'failed' ? 'note error tools-status failed' : `tools-status ${state}`;
    line.li.setAttribute('role', state === 'failed' ? 'alert' : 'status');
    clear(line.li);
    append(line.li, [
      state === 'starting'
        ? h('span', { class: 'spinner', 'aria-hidden': 'true' })
        : h('span', { class: 'tools-mark', 'aria-hidden': 'true' }, state === 'ready' ? '✓' : '!'),
      h('span', { class: 'tools-text' }, text),
    ]);
  }

  runFinished(event, into, root) {
    const run = this.run(event);
    if (run.bubble) {
      run.bubble.li.classList.remove('streaming');
      run.bubble.text.removeAttribute('aria-busy');
      run.bubble = null;
      run.spoke = true;
    }
    const waiting = ['awaiting_confirmation', 'awaiting_choice', 'awaiting_input'].includes(event.status);
    if (!root || waiting) return;
    // A message that started this run and that the stream did not show: a plain message now.
    for (const entry of this.outbox.filter((e) => e.state === 'sent' && e.run === event.run)) this.settle(entry);
    if (event.status === 'failed') {
      this.add(note('error', event.reply || 'The run failed.'));
    } else if (event.status === 'cancelled') {
      this.add(note('info', 'The run was cancelled.'));
    } else if (event.reply && !run.spoke) {
      // The run's output, when no message said it.
      this.add(assistantBubble(this.agent, event.reply, false).li);
    }
    run.spoke = true;
  }
}

function assistantBubble(agent, text, nested) {
  const body = h('div', { class: 'bubble' }, text);
  const li = h('li', { class: nested ? 'msg assistant nested-msg' : 'msg assistant' },
    nested ? null : h('div', { class: 'who' }, agentName(agent)),
    body,
  );
  return { li, text: body };
}

function divider(event) {
  const from = agentName(event.from);
  const to = agentName(event.to);
  const byHub = /\bhub\b/i.test(event.reason ?? '');
  const text =
    event.to === 'hub'
      ? `${from} is done · back to the hub`
      : event.from === 'hub'
        ? `The hub hands you to ${to}`
        : byHub
          ? `The hub hands you from ${from} to ${to}`
          : `${from} hands the conversation to ${to}`;
  return h(
    'li',
    { class: 'divider', role: 'separator', 'aria-label': text, title: event.reason ?? '', 'data-run': event.run },
    h('span', {}, text),
  );
}

function note(kind, text) {
  return h('li', { class: `note ${kind}`, role: kind === 'error' ? 'alert' : null }, text);
}

function setStatus(parts, kind, text) {
  parts.status.className = `status ${kind}`;
  parts.status.textContent = text;
}

function argumentsTable(args) {
  const entries = args && typeof args === 'object' && !Array.isArray(args) ? Object.entries(args) : [];
  if (!entries.length) return null;
  return h('table', { class: 'args', 'aria-label': 'Arguments' },
    h('tbody', {}, entries.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, humanize(k)), h('td', {}, show(v))))),
  );
}

/**
 * A form to change a call's arguments before approving it: one field per
 * argument; a field keeps its argument's type (a number stays a number).
 */
function editForm(args, tool, onSubmit, onCancel) {
  const fields = Object.entries(args).map(([key, value], i) => {
    const id = `edit-${tool}-${key}-${Math.random().toString(36).slice(2, 8)}-${i}`;
    const input = h('input', { id, name: key, value: show(value), autocomplete: 'off' });
    return { key, value, input, row: h('div', { class: 'field' }, h('label', { for: id }, humanize(key)), input) };
  });
  const form = h('form', { class: 'edit', hidden: true, 'aria-label': `Change the arguments of ${humanize(tool)}` },
    fields.map((f) => f.row),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, 'Approve with changes'),
      h('button', { type: 'button', class: 'secondary', onclick: onCancel }, 'Cancel'),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const changed = {};
    for (const { key, value, input } of fields) changed[key] = typed(input.value, value);
    onSubmit(changed);
  });
  return form;
}

/** The text of a field as a value of the type `like` had. */
function typed(text, like) {
  if (typeof like === 'string') return text;
  if (typeof like === 'number') {
    const n = Number(text);
    return text.trim() !== '' && Number.isFinite(n) ? n : text;
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * A tool's result, compact: its first line (the `message` of a result that
 * has one) as the summary of a disclosure that holds the rest. A failure's
 * sentence is shown whole.
 */
function resultView(value, failed) {
  const sentence =
    typeof value === 'string'
      ? value
      : value && typeof value === 'object' && typeof value.message === 'string'
        ? value.message
        : null;
  const json = typeof value === 'string' ? null : JSON.stringify(value, null, 2);
  if (failed) {
    return [
      sentence ? h('p', { class: 'result-text error' }, sentence) : null,
      json ? h('details', {}, h('summary', {}, 'Details'), h('pre', {}, json)) : null,
    ];
  }
  const [first, ...rest] = (sentence ?? '').split('\n');
  const more = rest.join('\n').trim();
  return h('details', { class: 'result-more' },
    h('summary', {}, h('span', { class: 'result-summary' }, first || 'Result')),
    more ? h('p', { class: 'result-text' }, more) : null,
    json ? h('pre', {}, json) : null,
  );
}

/** Arrow keys move between a group's buttons. */
function moveFocus(event, buttons) {
  const i = buttons.indexOf(document.activeElement);
  if (i < 0) return;
  const step = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 }[event.key];
  if (!step) return;
  event.preventDefault();
  buttons[(i + step + buttons.length) % buttons.length].focus();
}

/** Which guardrail stopped a run, and where, in words (its reason is the agent's reply). */
function guardrailNote(event) {
  const where = {
    input: 'your message',
    output: 'the answer',
    tool_input: `the call to ${event.tool || 'a tool'}`,
    tool_output: `the result of ${event.tool || 'a tool'}`,
  }[event.stage] || 'the run';
  return `The guardrail "${event.guardrail}" stopped ${where}.`;
}
