// Attaching an MCP resource to a message: a button in the composer lists
// the resources of the configured MCP servers (GET /api/v1/mcp/servers,
// .../resources); the picked one's text (GET .../resource?uri=) goes with
// the next message, quoted after what the person wrote.

import { api } from './api.js';
import { h, clear } from './dom.js';

/** The resource attached to the next message, and the button that picks it. */
export class Attachments {
  /**
   * Adds the attach button to `composer`, before `before` (the Send button);
   * `toast(message)` shows an error. The button stays hidden when no MCP
   * server is configured.
   */
  constructor(composer, before, toast) {
    this.toast = toast;
    this.attached = null; // { server, uri, name, text }
    this.button = h('button', {
      type: 'button', class: 'icon-btn attach', hidden: true,
      'aria-haspopup': 'listbox', 'aria-expanded': 'false', title: 'Attach a resource',
      'aria-label': 'Attach a resource', onclick: () => this.toggle(),
    }, 'Attach');
    this.chip = h('div', { class: 'attachment', hidden: true, role: 'status' });
    this.menu = h('div', { class: 'resource-menu', hidden: true, role: 'listbox', 'aria-label': 'Resources' });
    composer.insertBefore(this.button, before);
    composer.prepend(this.chip);
    composer.append(this.menu);
    this.servers = [];
    api.mcpServers()
      .then((list) => {
        this.servers = (list.servers ?? []).map((s) => s.name);
        this.button.hidden = this.servers.length === 0;
      })
      .catch(() => { this.button.hidden = true; });
  }

  async toggle() {
    if (!this.menu.hidden) return this.closeMenu();
    this.menu.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    clear(this.menu).append(h('p', { class: 'muted' }, 'Loading resources…'));
    const items = [];
    for (const server of this.servers) {
      try {
        const list = await api.resources(server);
        for (const r of list.resources ?? []) items.push({ server, ...r });
      } catch (error) {
        items.push({ server, error: error.message });
      }
    }
    clear(this.menu);
    if (!items.length) this.menu.append(h('p', { class: 'muted' }, 'The MCP servers offer no resources.'));
    for (const item of items) {
      if (item.error) {
        this.menu.append(h('p', { class: 'muted' }, `${item.server}: ${item.error}`));
        continue;
      }
      const label = item.title || item.name || item.uri;
      this.menu.append(h('button', {
        type: 'button', role: 'option', class: 'resource-item', title: item.description || item.uri,
        onclick: () => this.attach(item),
      }, h('strong', {}, label), h('span', { class: 'muted' }, ` ${item.server} · ${item.uri}`)));
    }
  }

  closeMenu() {
    this.menu.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
  }

  async attach(item) {
    this.closeMenu();
    try {
      const read = await api.resource(item.server, item.uri);
      this.attached = { server: item.server, uri: item.uri, name: item.title || item.name || item.uri, text: read.text };
    } catch (error) {
      this.toast(error.message);
      return;
    }
    clear(this.chip).append(
      h('span', {}, `Attached: ${this.attached.name}`),
      h('button', { type: 'button', class: 'link', 'aria-label': 'Remove the attachment', onclick: () => this.clear() }, '×'),
    );
    this.chip.hidden = false;
  }

  /** The message to send: `text` with the attached resource's text after it. */
  wrap(text) {
    if (!this.attached) return text;
    const { server, uri, text: body } = this.attached;
    return `${text.trim()}\n\n[Attached resource ${server}:${uri}]\n${body}`.trim();
  }

  /** Forgets the attachment (after the message went). */
  clear() {
    this.attached = null;
    this.chip.hidden = true;
    clear(this.chip);
  }
}
