// The left column: the goals catalogue and the person's sessions. Titles
// of sessions (their first message) are remembered in localStorage, and
// fetched from the API for sessions this browser has not seen.

import { h, clear, ago } from './dom.js';
import { agentName } from './conversation.js';
import { api } from './api.js';

const META = 'concierge:sessions';

/** Sessions whose first message was looked up already (found or not), this page. */
const probed = new Set();

/** What this browser remembers of its sessions: id → { title, goal }. */
export function sessionMeta() {
  try {
    return JSON.parse(localStorage.getItem(META) ?? '{}') ?? {};
  } catch {
    return {};
  }
}

/** Remembers something about a session (its title, the goal it started with). */
export function rememberSession(id, patch) {
  const meta = sessionMeta();
  meta[id] = { ...(meta[id] ?? {}), ...patch };
  try {
    localStorage.setItem(META, JSON.stringify(meta));
  } catch {
    // Titles are a convenience: without storage the list shows ids.
  }
}

/** Draws the goals as buttons; `onPick(goal)` starts one. */
export function drawGoals(list, goals, onPick, compact) {
  clear(list);
  for (const goal of goals) {
    list.append(
      h('li', {},
        h('button', {
          type: 'button', class: compact ? 'goal compact' : 'goal', 'data-goal': goal.id,
          'aria-label': `Start ${goal.name}: ${goal.description}`,
          onclick: () => onPick(goal),
        },
          h('span', { class: 'goal-name' }, goal.name),
          h('span', { class: 'goal-desc' }, goal.description),
          compact ? null : h('span', { class: 'goal-prompt' }, goal.starter_prompt ?? ''),
        ),
      ),
    );
  }
}

/** Draws the session list; `onOpen(id)` switches to one. */
export async function drawSessions(list, current, onOpen) {
  let sessions;
  try {
    // The server lists conversations only (child runs are reached through them).
    sessions = (await api.sessions()).sessions ?? [];
  } catch (error) {
    clear(list).append(h('li', { class: 'empty' }, error.message));
    return;
  }
  const meta = sessionMeta();
  clear(list);
  if (!sessions.length) list.append(h('li', { class: 'empty' }, 'No conversations yet.'));
  const untitled = [];
  for (const s of sessions) {
    const title = h('span', { class: 'session-title' }, meta[s.id]?.title ?? 'New conversation');
    if (!meta[s.id]?.title && !probed.has(s.id)) untitled.push([s.id, title]);
    list.append(
      h('li', {},
        h('button', {
          type: 'button', class: 'session', 'data-session': s.id,
          'aria-current': s.id === current ? 'true' : null,
          onclick: () => onOpen(s.id),
        },
          title,
          h('span', { class: 'session-meta' }, agentName(s.agent), s.updated_at ? ` · ${ago(s.updated_at)}` : ''),
        ),
      ),
    );
  }
  // Titles of sessions started elsewhere: their first message.
  for (const [id, node] of untitled.slice(0, 20)) {
    probed.add(id);
    try {
      const view = await api.session(id);
      const first = view.history?.find((m) => m.role === 'user');
      if (first) {
        node.textContent = first.text;
        rememberSession(id, { title: first.text });
      }
    } catch {
      // Left as it is.
    }
  }
}
