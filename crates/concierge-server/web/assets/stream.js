// A session's event stream that survives a reload: every event is applied
// once, in order. The stream's place (the last SSE id: the session's last
// event and, while child runs are open, theirs) and the events seen, to draw
// the conversation again, are kept in sessionStorage per session; a
// reloaded page draws what it had and reopens the stream at that place
// (`?after=`, since a browser's EventSource sends Last-Event-ID only on its
// own reconnects).

import { api } from './api.js';

/** Every event kind the server streams (SSE `event:` names). */
export const KINDS = [
  'run_started', 'phase_changed', 'agent_changed', 'agent_routed', 'model_requested', 'model_delta',
  'tool_requested', 'tool_reused', 'awaiting_confirmation', 'confirmation_resolved', 'tool_finished',
  'child_started', 'choice_requested', 'choice_resolved', 'message', 'usage', 'cap_reached',
  'run_finished', 'error', 'session_ended', 'data_changed', 'session_opened', 'tools_status',
  'elicitation_requested', 'elicitation_answered', 'tool_progress', 'guardrail_tripped',
];

/** The most sessionStorage keeps of one session's events (characters of JSON). */
const CACHE_LIMIT = 1_500_000;

/** "12.3" → [12, 3]; "12" → [12, 0]. */
export function parseId(id) {
  const [seq, delta] = String(id ?? '0').split('.');
  return [Number(seq) || 0, Number(delta) || 0];
}

/** Whether event id `a` comes after `b`. */
export function after(a, b) {
  const [sa, da] = parseId(a);
  const [sb, db] = parseId(b);
  return sa > sb || (sa === sb && da > db);
}

/** An event's id as the stream writes it. */
export function idOf(event) {
  return event.delta ? `${event.seq}.${event.delta}` : String(event.seq);
}

const key = (session) => `concierge:stream:${session}`;

/** What this tab kept of a session's stream: `{ last, children, events, complete }`. */
export function loadKept(session) {
  try {
    const kept = JSON.parse(sessionStorage.getItem(key(session)) ?? 'null');
    if (kept && typeof kept.last === 'string' && Array.isArray(kept.events)) return kept;
  } catch {
    // A damaged entry is as good as none.
  }
  return { last: '0', children: {}, events: [], complete: true };
}

/** Forgets what this tab kept of a session's stream. */
export function forgetKept(session) {
  sessionStorage.removeItem(key(session));
}

/**
 * Follows one session's events. `onEvent(event, { replayed })` gets each
 * event once; `onStatus('live' | 'reconnecting' | 'closed')` the connection's state.
 */
export class SessionStream {
  constructor(session, onEvent, onStatus) {
    this.session = session;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.kept = loadKept(session);
    this.size = JSON.stringify(this.kept).length;
    this.source = null;
    /** Resolves once the stream is first open (the server streams a model's answer only to listeners). */
    this.opened = new Promise((resolve) => (this.markOpened = resolve));
  }

  /** The id of the last of the session's own events applied. */
  get last() {
    return this.kept.last;
  }

  /**
   * Draws the kept events again, then opens the stream after the last one.
   * `serverLast` is the session's last durable event id on the server: a
   * cache that is ahead of it (another database) or incomplete is dropped,
   * and the stream replays the session from its start.
   */
  start(serverLast) {
    const stale = after(String(parseId(this.kept.last)[0]), serverLast ?? '0');
    if (!this.kept.complete || stale) {
      forgetKept(this.session);
      this.kept = loadKept(this.session);
      this.size = 0;
    }
    for (const event of this.kept.events) this.onEvent(event, { replayed: true });
    this.open();
  }

  open() {
    this.close();
    const source = new EventSource(api.eventsUrl(this.session, this.kept.cursor ?? this.kept.last));
    this.source = source;
    source.onopen = () => {
      this.markOpened();
      this.onStatus('live');
    };
    source.onerror = () => this.onStatus(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
    for (const kind of KINDS) source.addEventListener(kind, (message) => this.receive(message));
    source.addEventListener('stream_error', () => this.onStatus('reconnecting'));
  }

  receive(message) {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    if (!event || typeof event.seq !== 'number') return;
    const id = idOf(event);
    if (event.session === this.session) {
      if (!after(id, this.kept.last)) return;
      this.kept.last = id;
    } else {
      const seen = this.kept.children[event.session] ?? '0';
      if (!after(id, seen)) return;
      this.kept.children[event.session] = id;
    }
    // The SSE id is the place in the whole stream, children included.
    if (message.lastEventId) this.kept.cursor = message.lastEventId;
    this.keep(event);
    this.onEvent(event, { replayed: false });
  }

  keep(event) {
    if (this.kept.complete) {
      this.size += JSON.stringify(event).length + 1;
      if (this.size > CACHE_LIMIT) {
        this.kept.complete = false;
        this.kept.events = [];
      } else {
        this.kept.events.push(event);
      }
    }
    // Saved a moment later, together (events and last id in one entry, so a
    // reload never sees one without the other); at once when the page goes.
    if (!this.saving) this.saving = setTimeout(() => this.save(), 200);
  }

  /** Writes what is kept to sessionStorage now. */
  save() {
    clearTimeout(this.saving);
    this.saving = null;
    try {
      sessionStorage.setItem(key(this.session), JSON.stringify(this.kept));
    } catch {
      // Storage is full: keep only the last id; a reload replays from the server.
      this.kept.complete = false;
      this.kept.events = [];
      try {
        sessionStorage.setItem(key(this.session), JSON.stringify(this.kept));
      } catch {
        forgetKept(this.session);
      }
    }
  }

  close() {
    if (this.saving) this.save();
    if (this.source) {
      this.source.close();
      this.source = null;
    }
  }
}
