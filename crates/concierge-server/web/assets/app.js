// concierge's web chat: the page's wiring. It talks only to the HTTP API
// (/api/v1): the catalogue, sessions, messages, confirm, choose, and each
// session's resumable event stream.

import { api } from './api.js';
import { h } from './dom.js';
import { Conversation, agentName, agentNames } from './conversation.js';
import { Panel } from './panel.js';
import { SessionStream, forgetKept } from './stream.js';
import { drawGoals, drawSessions, rememberSession, sessionMeta } from './sidebar.js';

const $ = (id) => document.getElementById(id);
const ui = {
  welcome: $('welcome'), catalogue: $('catalogue'), log: $('log'), working: $('working'), workingText: $('working-text'),
  toast: $('toast'), composer: $('composer'), input: $('composer-input'), send: $('send'), badge: $('agent-badge'),
  connection: $('connection'), goals: $('goal-list'), sessions: $('session-list'), newChat: $('new-chat'),
  menu: $('menu-toggle'), panelToggle: $('panel-toggle'),
};
const panel = new Panel($('panel'));

/** The open session: { id, conversation, stream, busy, refresh }. */
let current = null;
let goals = [];
let sending = false;

const sessionFromHash = () => {
  const match = /^#\/s\/(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
};

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
  ui.working.hidden = !busy;
  ui.workingText.textContent = busy ? `${agentName(current.conversation.agent)} is working…` : '';
  ui.send.disabled = busy || sending;
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
  if (!current) return;
  current.stream.close();
  clearTimeout(current.refresh);
  current = null;
  ui.working.hidden = true;
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
  ui.welcome.hidden = true;
  ui.log.hidden = false;
  const conversation = new Conversation(id, ui.log, actions);
  const goal = goals.find((g) => g.id === sessionMeta()[id]?.goal);
  conversation.greet(goal);
  conversation.agent = view.agent;
  panel.reset();
  panel.showView(view);
  setBadge(view.agent);
  const session = { id, conversation, busy: false, refresh: null };
  current = session;
  session.stream = new SessionStream(id, (event, how) => onEvent(session, event, how), (status) => {
    if (current !== session) return;
    ui.connection.textContent = CONNECTION[status] ?? '';
    document.body.dataset.stream = status;
  });
  ui.input.placeholder = PLACEHOLDER;
  session.stream.start(view.last_event_id);
  setBusy(session.busy);
  document.body.classList.remove('show-sidebar');
  ui.menu.setAttribute('aria-expanded', 'false');
  refreshSessions();
}

function onEvent(session, event, { replayed }) {
  if (current !== session) return;
  session.conversation.apply(event);
  panel.apply(event);
  // A child's answer resumes the parent's run too.
  if (event.type === 'choice_resolved' || event.type === 'confirmation_resolved') setBusy(true);
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
    case 'awaiting_confirmation':
    case 'choice_requested':
      // The run is parked: the person answers (a button, or typing "yes" or "2").
      setBusy(false);
      ui.input.placeholder =
        event.type === 'choice_requested' ? 'Pick an option above, or type its number…' : 'Approve or deny above, or type yes or no…';
      break;
    case 'run_finished':
      setBusy(false);
      if (!replayed) refreshSessions();
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
      if (current === session) panel.showView(view);
    } catch {
      // The next event tries again.
    }
  }, 150);
}

let listing = null;
function refreshSessions() {
  clearTimeout(listing);
  listing = setTimeout(() => drawSessions(ui.sessions, current?.id, (id) => (location.hash = `#/s/${encodeURIComponent(id)}`)), 100);
}

/** Starts a session with a goal's agent; its starter prompt greets the person. */
async function startGoal(goal) {
  try {
    const session = await api.create(goal?.id);
    if (goal) rememberSession(session.id, { goal: goal.id });
    location.hash = `#/s/${encodeURIComponent(session.id)}`;
    refreshSessions();
    ui.input.focus();
  } catch (error) {
    toast(error.message);
  }
}

/** Sends the person's message (starting a conversation with the hub when none is open). */
async function send(text) {
  text = text.trim();
  if (!text || sending) return false;
  if (current?.busy) {
    toast('The assistant is still answering; your message can follow when it is done.');
    return false;
  }
  sending = true;
  ui.send.disabled = true;
  try {
    if (!current) {
      const session = await api.create(null);
      location.hash = `#/s/${encodeURIComponent(session.id)}`;
      await open(session.id);
    }
    await api.send(current.id, text);
    return true;
  } catch (error) {
    toast(error.message);
    return false;
  } finally {
    sending = false;
    ui.send.disabled = current?.busy ?? false;
  }
}

const actions = {
  send: async (text) => {
    if (await send(text)) ui.input.focus();
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

ui.composer.addEventListener('submit', async (event) => {
  event.preventDefault();
  const text = ui.input.value;
  if (await send(text)) {
    ui.input.value = '';
    grow();
  }
  ui.input.focus();
});

ui.input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  }
});

function grow() {
  ui.input.style.height = 'auto';
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 200)}px`;
}
ui.input.addEventListener('input', grow);

ui.newChat.addEventListener('click', () => {
  location.hash = '#/';
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
  for (const [cls, button] of [['show-sidebar', ui.menu], ['show-panel', ui.panelToggle]]) {
    if (document.body.classList.contains(cls)) {
      document.body.classList.remove(cls);
      button.setAttribute('aria-expanded', 'false');
      button.focus();
    }
  }
});

function route() {
  const id = sessionFromHash();
  if (id) open(id);
  else home();
}
window.addEventListener('hashchange', route);
window.addEventListener('pagehide', () => current?.stream.close());
window.addEventListener('pageshow', (event) => {
  if (event.persisted && current) current.stream.open();
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
  document.body.classList.add('ready');
  route();
}

init();
