// The left column: the goals catalogue and the person's sessions. Titles
// of sessions (their first message) are remembered in localStorage, and
// fetched from the API for sessions this browser has not seen. A session
// with no message yet is not listed (unless it is the one open).

import { h, append, clear, ago } from './dom.js';
import { agentName } from './conversation.js';
import { api } from './api.js';

const META = 'concierge:sessions';

/** Sessions whose first message was looked up already, this page: id → what was found. */
const probed = new Map();

/** How many untitled sessions one drawing looks up. */
const PROBES = 20;

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

/**
 * Draws the session list; `onOpen(id)` switches to one. `currentTitle`
 * names the open session while this browser has no title for it yet.
 */
export async function drawSessions(list, current, onOpen, currentTitle) {
  let page;
  try {
    // The server lists conversations only (child runs are reached through them), a page at a time.
    page = await api.sessions();
  } catch (error) {
    clear(list).append(h('li', { class: 'empty' }, error.message));
    return;
  }
  clear(list);
  const none = h('li', { class: 'empty' }, 'No conversations yet.');
  list.append(none);
  const showNone = () => (none.hidden = [...list.children].some((li) => li !== none && !li.hidden));
  // Each page's sessions, then a button for the older ones while there are more.
  const drawPage = async ({ sessions = [], next }) => {
    const untitled = drawItems(list, sessions, current, onOpen, currentTitle);
    showNone();
    if (next) {
      const more = h('li', { class: 'more' });
      more.append(h('button', {
        type: 'button', class: 'session-more',
        onclick: async () => {
          try {
            const older = await api.sessions(next);
            more.remove();
            await drawPage(older);
          } catch (error) {
            more.replaceChildren(h('span', { class: 'empty' }, error.message));
          }
        },
      }, 'Show older conversations'));
      list.append(more);
    }
    await titleUntitled(untitled, current);
    showNone();
  };
  await drawPage(page);
}

/** Adds `sessions` to the list; returns those whose title is still to be looked up. */
function drawItems(list, sessions, current, onOpen, currentTitle) {
  const meta = sessionMeta();
  // A session with no message yet is not a conversation to go back to:
  // looking it up found no message of the person's, as of its `updated_at`.
  const empty = (s) => s.id !== current && probed.get(s.id)?.empty && probed.get(s.id).at === s.updated_at;
  const untitled = [];
  for (const s of sessions.filter((s) => !empty(s))) {
    const known = meta[s.id]?.title ?? probed.get(s.id)?.title ?? (s.id === current ? currentTitle : null);
    const title = h('span', { class: 'session-title' }, known ?? 'New conversation');
    // One without a title is shown once it is known to have a message (the open one at once).
    const item = h('li', { hidden: !known && s.id !== current });
    if (!known) {
      if (untitled.length < PROBES) untitled.push({ session: s, title, item });
      else item.hidden = false;
    }
    list.append(
      append(item,
        [h('button', {
          type: 'button', class: 'session', 'data-session': s.id,
          'aria-current': s.id === current ? 'true' : null,
          onclick: () => onOpen(s.id),
        },
          title,
          h('span', { class: 'session-meta' }, agentName(s.agent), s.updated_at ? ` · ${ago(s.updated_at)}` : ''),
        )],
      ),
    );
  }
  return untitled;
}

/**
 * Sessions started elsewhere: their first message is their title, and
 * one without any is left out.
 */
async function titleUntitled(untitled, current) {
  await Promise.all(
    untitled.map(async ({ session, title, item }) => {
      try {
        const view = await api.session(session.id);
        const first = view.history?.find((m) => m.role === 'user');
        probed.set(session.id, { at: session.updated_at, empty: !first, title: first?.text ?? null });
        if (first) {
          title.textContent = first.text;
          rememberSession(session.id, { title: first.text });
        }
        if (first || session.id === current) item.hidden = false;
      } catch {
        item.hidden = false; // Left as it is.
      }
    }),
  );
}
