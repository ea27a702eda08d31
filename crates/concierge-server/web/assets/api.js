// The HTTP API the page talks to (and nothing else): /api/v1/...

const BASE = '/api/v1';

/** An API error, with the server's sentence as its message. */
export class ApiError extends Error {
  constructor(status, message, field) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

const TOKEN_KEY = 'concierge:token';

/** The API token this browser keeps for a server that needs one. */
function token() {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

/** Asks the person for the server's API token once; true if one was given. */
function askToken() {
  const given = window.prompt('This server needs an API token. Paste the token you were given:');
  if (!given || !given.trim()) return false;
  try {
    localStorage.setItem(TOKEN_KEY, given.trim());
  } catch {
    return false;
  }
  return true;
}

async function call(method, path, body, retried = false) {
  const init = { method, headers: { accept: 'application/json' } };
  const bearer = token();
  if (bearer) init.headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(BASE + path, init);
  } catch {
    throw new ApiError(0, 'The server cannot be reached. Is `concierge serve` still running?');
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.status === 401 && !retried && askToken()) {
    return call(method, path, body, true);
  }
  if (!response.ok) {
    const message = data && typeof data.error === 'string' ? data.error : `The server answered ${response.status}.`;
    throw new ApiError(response.status, message, data?.field);
  }
  return data;
}

const session = (id) => `/sessions/${encodeURIComponent(id)}`;

export const api = {
  goals: () => call('GET', '/goals'),
  agents: () => call('GET', '/agents'),
  sessions: (after) => call('GET', after ? `/sessions?after=${encodeURIComponent(after)}` : '/sessions'),
  session: (id) => call('GET', session(id)),
  create: (agent) => call('POST', '/sessions', agent ? { agent } : {}),
  // A message typed while the agent still works on the last one runs after it.
  send: (id, text) => call('POST', `${session(id)}/messages`, { text, multitask: 'enqueue' }),
  /** Approves, denies, or (`amend`, with the complete new `args`) approves changed arguments. */
  confirm: (id, pending, decision, args) =>
    call('POST', `${session(id)}/confirm`, {
      call_id: pending.call_id, fingerprint: pending.fingerprint, decision, ...(args ? { arguments: args } : {}),
    }),
  choose: (id, option) => call('POST', `${session(id)}/choose`, { option }),
  answer: (id, pending, action, content) =>
    call('POST', `${session(id)}/answer`, { call_id: pending.call_id, question: pending.question, action, content }),
  end: (id) => call('POST', `${session(id)}/end`, {}),
  /**
   * A new session with the conversation of session `id` up to its event
   * `at` (to edit a message and send it again: the event before it); the
   * original is untouched.
   */
  fork: (id, at) => call('POST', `${session(id)}/fork`, { at }),
  mcpServers: () => call('GET', '/mcp/servers'),
  resources: (server) => call('GET', `/mcp/servers/${encodeURIComponent(server)}/resources`),
  resource: (server, uri) =>
    call('GET', `/mcp/servers/${encodeURIComponent(server)}/resource?uri=${encodeURIComponent(uri)}`),
  prompts: (server) => call('GET', `/mcp/servers/${encodeURIComponent(server)}/prompts`),
  prompt: (server, name, args) =>
    call('POST', `/mcp/servers/${encodeURIComponent(server)}/prompts/${encodeURIComponent(name)}`, { arguments: args }),
  /** What is remembered about the person, newest first. */
  memories: () => call('GET', '/memories'),
  remember: (text) => call('POST', '/memories', { text }),
  forget: (id) => call('DELETE', `/memories/${encodeURIComponent(id)}`),
  forgetAll: () => call('DELETE', '/memories'),
  /**
   * The URL of a session's event stream, resuming after `after` (the last
   * SSE id seen) when given; with the API token in the query, since an
   * EventSource cannot send headers.
   */
  eventsUrl: (id, after) => {
    const query = new URLSearchParams();
    if (after && after !== '0') query.set('after', after);
    const bearer = token();
    if (bearer) query.set('access_token', bearer);
    const text = query.toString();
    return `${BASE}${session(id)}/events` + (text ? `?${text}` : '');
  },
};
