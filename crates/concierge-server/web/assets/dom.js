// Building the page's elements. Text is always inserted as text (text
// nodes, textContent): nothing from the server becomes markup.

/**
 * An element: `h('button', { class: 'primary', onclick: fn, 'aria-label': 'Send' }, 'Send')`.
 * Children are nodes or strings (strings become text nodes); null and false are skipped.
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else if (key === 'hidden' || key === 'disabled') node[key] = Boolean(value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

/** Appends children (nodes, strings, arrays of them) to `node`. */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Removes every child of `node`. */
export function clear(node) {
  node.replaceChildren();
  return node;
}

/** A value as short readable text: strings as they are, the rest as compact JSON. */
export function show(value) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** "lookup_order" → "Lookup order". */
export function humanize(name) {
  const text = String(name ?? '').replace(/[_-]+/g, ' ').trim();
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Milliseconds as "12 ms" or "1.4 s". */
export function duration(ms) {
  if (ms === null || ms === undefined) return '';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}

/** A time (ms since the epoch) as "just now", "5 min ago", or a date. */
export function ago(ms) {
  if (!ms) return '';
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}
