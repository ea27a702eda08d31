// concierge's web chat: the page's wiring. It talks only to the HTTP API
// (/api/v1): the catalogue, sessions, messages, confirm, choose, and each
// session's resumable event stream.

import { api } from './api.js';
import { h } from './dom.js';
import { Conversation, agentName, agentNames } from './conversation.js';
import { Panel } from './panel.js';
import { MemoryPanel } from './memory.js';
import { drawStarters } from './prompts.js';
import { Attachments } from './resources.js';
import { SessionStream, after, forgetKept, parseId } from './stream.js';
import { drawGoals, drawSessions, rememberSession, sessionMeta } from './sidebar.js';

const $ = (id) => document.getElementById(id);
const ui = {
  welcome: $('welcome'), catalogue: $('catalogue'), log: $('log'), working: $('working'), workingText: $('working-text'),
  toast: $('toast'), composer: $('composer'), input: $('composer-input'), send: $('send'), badge: $('agent-badge'),
  connection: $('connection'), goals: $('goal-list'), sessions: $('session-list'), newChat: $('new-chat'),
  menu: $('menu-toggle'), panelToggle: $('panel-toggle'), memoryToggle: $('memory-toggle'),
  editing: $('editing'), editingCancel: $('editing-cancel'),
};
const panel = new Panel($('panel'));
const memory = new MemoryPanel(ui.memoryToggle);

/**
 * The open conversation: { id, goal, conversation, stream, busy, refresh }.
 * A conversation not started yet (a goal picked, or a first message on its
 * way) has no id and no stream: its session is created with its first
 * message, so opening the page or picking a goal leaves no empty session.
 */
let current = null;
let goals = [];
/** A message is on its way (creating the session, or posting it). */
let sending = false;
/** How long a first message waits for its new session's stream to open (ms). */
const STREAM_WAIT = 3000;
/**
 * A past message of the open session taken into the message box to be
 * sent again: `{ session, seq, li }` (`seq`: its event's number). Sending
 * forks the session just before it and sends the text in the fork.
 */
let editing = null;

const fromHash = (prefix) => {
  const match = new RegExp(`^#/${prefix}/(.+)$`).exec(location.hash);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return null;
  }
};
const sessionFromHash = () => fromHash('s');
const goalFromHash = () => fromHash('g');

function toast(message) {
  ui.toast.textContent = message;
  ui.toast.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (ui.toast.hidden = true), 8000);
}

function setBadge(agent) {
  ui.badge.hidden = !agent;
  ui.badge.textContent = agentName(agent);
}

const PLACEHOLDER = 'Write a message…';

function setBusy(busy) {
  if (!current) return;
  if (busy) ui.input.placeholder = PLACEHOLDER;
  current.busy = busy;
  showWorking();
}

/** The working indicator: while a run is under way, or a message is on its way to start one. */
function showWorking() {
  const working = Boolean(current && (current.busy || current.conversation.unsettled()));
  ui.working.hidden = !working;
  ui.workingText.textContent = working ? `${agentName(current.conversation.agent)} is working…` : '';
  ui.send.disabled = sending;
}

const CONNECTION = { live: '', reconnecting: 'Reconnecting…', closed: 'Disconnected' };

function home() {
  close();
  ui.input.placeholder = PLACEHOLDER;
  ui.welcome.hidden = false;
  ui.log.hidden = true;
  setBadge(null);
  panel.reset();
  ui.connection.textContent = '';
  refreshSessions();
}

function close() {
  delete document.body.dataset.stream;
  stopEditing();
  if (!current) return;
  current.stream?.close();
  clearTimeout(current.refresh);
  current = null;
  ui.working.hidden = true;
}

/** Shows the log (not the welcome) and closes the menu on a narrow screen. */
function showLog() {
  ui.welcome.hidden = true;
  ui.log.hidden = false;
  document.body.classList.remove('show-sidebar');
  ui.menu.setAttribute('aria-expanded', 'false');
}

/**
 * A conversation not started yet, with `goal`'s agent (its starter prompt
 * greets the person) or, without one, the hub's.
 */
function startDraft(goal) {
  if (current && !current.id && (current.goal ?? null) === (goal ?? null)) return current;
  close();
  const conversation = new Conversation(null, ui.log, actions);
  conversation.greet(goal);
  conversation.agent = goal?.id ?? null;
  current = { id: null, goal: goal ?? null, conversation, stream: null, busy: false, refresh: null };
  showLog();
  panel.reset();
  setBadge(goal?.id ?? null);
  ui.input.placeholder = PLACEHOLDER;
  showWorking();
  refreshSessions();
  return current;
}

let opening = null;

/** Opens session `id` (once, however many callers ask at the same time). */
function open(id) {
  if (current?.id === id) return Promise.resolve();
  if (opening?.id === id) return opening.promise;
  const promise = openNow(id).finally(() => {
    if (opening?.promise === promise) opening = null;
  });
  opening = { id, promise };
  return promise;
}

/** Draws what this tab kept of session `id`, then follows its stream. */
async function openNow(id) {
  close();
  let view;
  try {
    view = await api.session(id);
  } catch (error) {
    forgetKept(id);
    toast(error.message);
    location.hash = '#/';
    return;
  }
  if (sessionFromHash() !== id) return; // another session was chosen meanwhile
  showSession(id, view);
}

/** Shows session `id` (`view`, its state from the API) as the open one, and follows its stream. */
function showSession(id, view) {
  showLog();
  const conversation = new Conversation(id, ui.log, actions);
  const goal = goals.find((g) => g.id === sessionMeta()[id]?.goal);
  conversation.greet(goal);
  current = { id, goal: goal ?? null, conversation, stream: null, busy: false, refresh: null, drawn: null };
  follow(current, view);
  return current;
}

/** Shows session `session`'s state (`view`, from the API) and follows its event stream. */
function follow(session, view) {
  session.conversation.agent = view.agent;
  session.conversation.forkedFrom(view.forked_from);
  panel.reset();
  panel.showView(view);
  setBadge(view.agent);
  session.stream = new SessionStream(session.id, (event, how) => onEvent(session, event, how), (status) => {
    if (current !== session) return;
    ui.connection.textContent = CONNECTION[status] ?? '';
    document.body.dataset.stream = status;
  });
  ui.input.placeholder = PLACEHOLDER;
  session.stream.start(view.last_event_id);
  setBusy(session.busy);
  refreshSessions();
}

function onEvent(session, event, { replayed }) {
  if (current !== session) return;
  session.conversation.apply(event);
  session.drawn?.();
  showWorking();
  panel.apply(event);
  // A child's answer resumes the parent's run too.
  if (['choice_resolved', 'confirmation_resolved', 'elicitation_answered'].includes(event.type)) setBusy(true);
  if (event.session !== session.id) return;
  switch (event.type) {
    case 'run_started':
      setBadge(event.agent);
      setBusy(true);
      break;
    case 'agent_changed':
      setBadge(event.to);
      setBusy(session.busy);
      break;
    case 'elicitation_requested':
      setBusy(false);
      ui.input.placeholder = 'Answer the question above, or type your answer…';
      break;
    case 'awaiting_confirmation':
    case 'choice_requested':
      // The run is parked: the person answers (a button, or typing "yes" or "2").
      setBusy(false);
      ui.input.placeholder =
        event.type === 'choice_requested' ? 'Pick an option above, or type its number…' : 'Approve or deny above, or type yes or no…';
      break;
    case 'run_finished':
      setBusy(false);
      if (!replayed) {
        refreshSessions();
        memory.refreshIfOpen(); // the run may have remembered something
      }
      break;
    case 'message':
      if (event.message?.role === 'user' && !sessionMeta()[session.id]?.title) {
        rememberSession(session.id, { title: event.message.content });
        if (!replayed) refreshSessions();
      }
      break;
    default:
      break;
  }
  const changes = ['run_finished', 'tool_finished', 'awaiting_confirmation', 'choice_requested', 'data_changed', 'session_ended'];
  if (!replayed && changes.includes(event.type)) refreshView(session);
}

/** Reads the session's state again (blackboard, usage, phase) a moment later. */
function refreshView(session) {
  clearTimeout(session.refresh);
  session.refresh = setTimeout(async () => {
    try {
      const view = await api.session(session.id);
      // A read that left before events the stream has drawn since would
      // draw the panel as it was (the agent before a handoff): the next
      // event reads again.
      const drawn = String(parseId(session.stream?.last)[0]);
      if (current === session && !after(drawn, String(view.last_event_id ?? 0))) panel.showView(view);
    } catch {
      // The next event tries again.
    }
  }, 150);
}

let listing = null;
function refreshSessions() {
  clearTimeout(listing);
  listing = setTimeout(
    () => drawSessions(ui.sessions, current?.id, (id) => (location.hash = `#/s/${encodeURIComponent(id)}`), current?.title),
    100,
  );
}

/** Opens a conversation with a goal's agent; its starter prompt greets the person. */
function startGoal(goal) {
  const hash = `#/g/${encodeURIComponent(goal.id)}`;
  if (location.hash === hash) route();
  else location.hash = hash;
  ui.input.focus();
}

/**
 * Sends the person's message (starting a conversation with the hub when
 * none is open): it shows at once, and stays, marked with why, if the
 * server does not take it. False if nothing was sent (empty, or another
 * message is on its way).
 */
function send(text) {
  text = text.trim();
  if (!text || sending) return false;
  const session = current ?? startDraft(null);
  const { conversation } = session;
  const entry = conversation.outgoing(text, conversation.asking());
  deliver(session, entry);
  return true;
}

/**
 * Posts a shown message, creating its session first when it is the first
 * (with the goal's agent); the stream then shows it as the session's.
 */
async function deliver(session, entry) {
  const { conversation } = session;
  sending = true;
  showWorking();
  try {
    if (!session.id) {
      const view = await api.create(session.goal?.id ?? null);
      session.id = view.id;
      session.title = entry.text; // in the list until the stream's copy names it
      conversation.session = view.id;
      if (session.goal) rememberSession(view.id, { goal: session.goal.id });
      if (current === session) {
        follow(session, view);
        location.hash = `#/s/${encodeURIComponent(view.id)}`;
        // The answer streams to the page only if it listens when the run starts.
        await Promise.race([session.stream.opened, new Promise((resolve) => setTimeout(resolve, STREAM_WAIT))]);
      }
    }
    const accepted = await api.send(session.id, entry.text);
    conversation.sent(entry, accepted?.run_id);
  } catch (error) {
    conversation.failed(entry, error.message);
  } finally {
    sending = false;
    showWorking();
  }
}

/**
 * Resolves once `session`'s stream has drawn its events up to durable
 * event `last` (its stream is open then), or after STREAM_WAIT.
 */
function drawnUpTo(session, last) {
  const target = parseId(last)[0];
  const done = () => parseId(session.stream?.last)[0] >= target;
  return new Promise((resolve) => {
    if (done()) return resolve();
    const finish = () => {
      clearTimeout(timer);
      session.drawn = null;
      resolve();
    };
    const timer = setTimeout(finish, STREAM_WAIT);
    session.drawn = () => done() && finish();
  });
}

/** Takes a past message of the open session into the message box, to send it again changed. */
function startEditing(message) {
  if (!current?.id) return;
  stopEditing();
  editing = { session: current.id, seq: message.seq, li: message.li };
  message.li.classList.add('being-edited');
  ui.editing.hidden = false;
  ui.input.value = message.text;
  grow();
  ui.input.focus();
}

/** Leaves the message being edited as it was (`clearInput`: and empties the message box). */
function stopEditing(clearInput = false) {
  if (!editing) return;
  editing.li.classList.remove('being-edited');
  editing = null;
  ui.editing.hidden = true;
  if (clearInput) {
    ui.input.value = '';
    grow();
  }
}

/**
 * Sends the edited past message: forks the session just before it (the
 * original stays as it is), opens the fork and sends `text` there. If the
 * fork fails, the server's sentence shows and the edit stays, to try again.
 */
async function resend(text) {
  text = text.trim();
  if (!text || sending || !editing) return;
  const edit = editing;
  sending = true;
  showWorking();
  let view;
  try {
    view = await api.fork(edit.session, edit.seq - 1);
  } catch (error) {
    toast(`Not sent: ${error.message}`);
    sending = false;
    showWorking();
    return;
  }
  ui.toast.hidden = true; // a refusal before is over
  stopEditing(true);
  attachments.clear();
  const goal = sessionMeta()[edit.session]?.goal;
  if (goal) rememberSession(view.id, { goal });
  close();
  const session = showSession(view.id, view);
  location.hash = `#/s/${encodeURIComponent(view.id)}`;
  // The message goes after the conversation the fork carries.
  await drawnUpTo(session, view.last_event_id);
  const entry = session.conversation.outgoing(text);
  deliver(session, entry);
}

const actions = {
  send: (text) => {
    if (send(text)) ui.input.focus();
  },
  /** Sends again a message that was not sent. */
  retry: (entry) => {
    if (sending || !current) return;
    current.conversation.resending(entry);
    deliver(current, entry);
  },
  /** Takes a past message back into the message box, to send it again changed in a new conversation. */
  editPast: (message) => startEditing(message),
  /** Takes a message that was not sent back into the message box. */
  edit: (entry) => {
    current?.conversation.drop(entry);
    showWorking();
    ui.input.value = entry.text;
    grow();
    ui.input.focus();
  },
  confirm: async (pending, decision, args) => {
    try {
      await api.confirm(current.id, pending, decision, args);
      return true;
    } catch (error) {
      toast(error.message);
      return false;
    }
  },
  answer: async (pending, action, content) => {
    try {
      await api.answer(current.id, pending, action, content);
      return true;
    } catch (error) {
      toast(error.message);
      return false;
    }
  },
  choose: async (number) => {
    try {
      await api.choose(current.id, number);
      return true;
    } catch (error) {
      toast(error.message);
      return false;
    }
  },
};

const attachments = new Attachments(ui.composer, ui.send, toast);

ui.composer.addEventListener('submit', (event) => {
  event.preventDefault();
  if (editing) resend(attachments.wrap(ui.input.value));
  else if (send(attachments.wrap(ui.input.value))) {
    ui.input.value = '';
    attachments.clear();
    grow();
  }
  ui.input.focus();
});

ui.input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  } else if (event.key === 'Escape' && editing) {
    event.stopPropagation();
    stopEditing(true);
  }
});

ui.editingCancel.addEventListener('click', () => {
  stopEditing(true);
  ui.input.focus();
});

function grow() {
  ui.input.style.height = 'auto';
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 200)}px`;
}
ui.input.addEventListener('input', grow);

ui.newChat.addEventListener('click', () => {
  if (location.hash === '#/') route();
  else location.hash = '#/';
  document.body.classList.remove('show-sidebar');
  ui.input.focus();
});

function toggle(cls, button) {
  const on = document.body.classList.toggle(cls);
  button.setAttribute('aria-expanded', String(on));
}
ui.menu.addEventListener('click', () => toggle('show-sidebar', ui.menu));
ui.panelToggle.addEventListener('click', () => toggle('show-panel', ui.panelToggle));
document.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape') return;
  for (const [cls, button] of [['show-sidebar', ui.menu], ['show-panel', ui.panelToggle], ['show-memory', ui.memoryToggle]]) {
    if (document.body.classList.contains(cls)) {
      document.body.classList.remove(cls);
      button.setAttribute('aria-expanded', 'false');
      button.focus();
    }
  }
});

function route() {
  const id = sessionFromHash();
  const goal = goals.find((g) => g.id === goalFromHash());
  if (id) open(id);
  else if (goal) startDraft(goal);
  else home();
}
window.addEventListener('hashchange', route);
// Runs start without the person too (a schedule's, another tab's): the list
// of conversations is read again now and then while the page is in view.
setInterval(() => {
  if (document.visibilityState === 'visible') refreshSessions();
}, 15_000);
window.addEventListener('pagehide', () => current?.stream?.close());
window.addEventListener('pageshow', (event) => {
  if (event.persisted && current?.stream) current.stream.open();
});

async function init() {
  try {
    const [agentList, goalList] = await Promise.all([api.agents(), api.goals()]);
    for (const agent of agentList.agents ?? []) agentNames.set(agent.id, agent.name);
    goals = goalList.goals ?? [];
  } catch (error) {
    toast(error.message);
  }
  drawGoals(ui.catalogue, goals, startGoal, false);
  drawGoals(ui.goals, goals, startGoal, true);
  if (!goals.length) ui.catalogue.append(h('li', { class: 'empty' }, 'No goals are configured.'));
  const starters = h('section', { class: 'starters-section', hidden: true, 'aria-label': 'Conversation starters' });
  ui.welcome.insertBefore(starters, ui.catalogue);
  drawStarters(starters, send, toast);
  document.body.classList.add('ready');
  route();
}

init();
