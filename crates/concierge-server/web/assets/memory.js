// What the assistant remembers about the person, across conversations: a
// panel (opened from the top bar) listing the memories (GET
// /api/v1/memories), each with a button that forgets it (DELETE
// .../memories/{id}), a button that forgets everything (DELETE
// /api/v1/memories, after a second click), and a form to add one (POST
// /api/v1/memories). Errors show as the server's sentence.

import { api } from './api.js';
import { h, clear } from './dom.js';
import { agentName } from './conversation.js';

/** A time (ms since the epoch) as a readable day: "March 4, 2025". */
function day(ms) {
  if (!ms) return '';
  return new Date(ms).toLocaleDateString(undefined, { year: 'numeric', month: 'long', day: 'numeric' });
}

/** The memory panel, opened and closed by `button` (which toggles `show-memory` on the body). */
export class MemoryPanel {
  constructor(button) {
    this.button = button;
    this.loading = 0;
    this.input = h('input', {
      id: 'memory-input', name: 'text', type: 'text', autocomplete: 'off', maxlength: '2000',
      placeholder: 'Remember something…',
    });
    this.form = h('form', { class: 'memory-form', 'aria-label': 'Remember something' },
      h('label', { for: 'memory-input', class: 'sr-only' }, 'Remember something'),
      this.input,
      h('button', { type: 'submit', class: 'primary' }, 'Remember'),
    );
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.add();
    });
    this.error = h('p', { class: 'note error', role: 'alert', hidden: true });
    this.list = h('ul', { class: 'memory-list', 'aria-label': 'Memories' });
    this.empty = h('p', { class: 'empty', hidden: true }, 'Nothing is remembered about you yet.');
    this.forgetAll = h('div', { class: 'memory-forget-all', hidden: true });
    this.root = h('aside', { id: 'memory', class: 'memory-panel', 'aria-labelledby': 'memory-heading' },
      h('div', { class: 'memory-head' },
        h('h2', { id: 'memory-heading' }, 'Memory'),
        h('button', {
          type: 'button', class: 'link', 'aria-label': 'Close memory', onclick: () => this.close(),
        }, 'Close'),
      ),
      h('p', { class: 'muted memory-lead' }, 'What the assistant remembers about you across conversations.'),
      this.form,
      this.error,
      this.empty,
      this.list,
      this.forgetAll,
    );
    document.body.append(this.root);
    button.addEventListener('click', () => (this.isOpen() ? this.close() : this.open()));
  }

  isOpen() {
    return document.body.classList.contains('show-memory');
  }

  open() {
    document.body.classList.add('show-memory');
    this.button.setAttribute('aria-expanded', 'true');
    this.showError(null);
    this.refresh();
    this.input.focus();
  }

  close() {
    document.body.classList.remove('show-memory');
    this.button.setAttribute('aria-expanded', 'false');
    this.button.focus();
  }

  /** Reads the memories again (when the panel is open: an agent may have remembered something). */
  refreshIfOpen() {
    if (this.isOpen()) this.refresh();
  }

  async refresh() {
    const ticket = ++this.loading;
    let memories;
    try {
      memories = (await api.memories()).memories ?? [];
    } catch (error) {
      if (ticket === this.loading) this.showError(error.message);
      return;
    }
    if (ticket !== this.loading) return; // a newer read is on its way
    this.draw(memories);
  }

  draw(memories) {
    clear(this.list);
    for (const memory of memories) {
      const by = memory.agent ? `Remembered by ${agentName(memory.agent)}` : 'Added by you';
      this.list.append(h('li', { class: 'memory-item', 'data-memory': memory.id },
        h('p', { class: 'memory-text' }, memory.text),
        h('div', { class: 'memory-meta' },
          h('time', {
            datetime: new Date(memory.created_at).toISOString(), title: new Date(memory.created_at).toLocaleString(),
          }, day(memory.created_at)),
          h('span', {}, ` · ${by}`),
          h('button', {
            type: 'button', class: 'link memory-forget', 'aria-label': `Forget “${memory.text}”`,
            onclick: (event) => this.forget(memory, event.currentTarget),
          }, 'Forget'),
        ),
      ));
    }
    this.empty.hidden = memories.length > 0;
    this.list.hidden = memories.length === 0;
    this.drawForgetAll(memories.length > 0, false);
  }

  /** The "Forget everything" button, or (`asking`) its second step. */
  drawForgetAll(shown, asking) {
    clear(this.forgetAll);
    this.forgetAll.hidden = !shown;
    if (!shown) return;
    if (!asking) {
      this.forgetAll.append(h('button', {
        type: 'button', class: 'secondary', onclick: () => {
          this.drawForgetAll(true, true);
          this.forgetAll.querySelector('button')?.focus();
        },
      }, 'Forget everything'));
      return;
    }
    this.forgetAll.append(
      h('p', {}, 'Forget everything remembered about you? This cannot be undone.'),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'primary danger', onclick: () => this.eraseAll() }, 'Yes, forget everything'),
        h('button', { type: 'button', class: 'secondary', onclick: () => this.drawForgetAll(true, false) }, 'Cancel'),
      ),
    );
  }

  showError(message) {
    this.error.hidden = !message;
    this.error.textContent = message ?? '';
  }

  async add() {
    const text = this.input.value.trim();
    if (!text) {
      this.input.focus();
      return;
    }
    const submit = this.form.querySelector('button[type=submit]');
    submit.disabled = true;
    try {
      await api.remember(text);
      this.input.value = '';
      this.showError(null);
    } catch (error) {
      this.showError(error.message);
      return;
    } finally {
      submit.disabled = false;
      this.input.focus();
    }
    await this.refresh();
  }

  async forget(memory, button) {
    button.disabled = true;
    try {
      await api.forget(memory.id);
      this.showError(null);
    } catch (error) {
      button.disabled = false;
      if (error.status !== 404) {
        this.showError(error.message);
        return;
      }
      // Already gone (forgotten elsewhere): the list is drawn again without it.
      this.showError('That was already forgotten.');
    }
    await this.refresh();
    this.input.focus();
  }

  async eraseAll() {
    for (const button of this.forgetAll.querySelectorAll('button')) button.disabled = true;
    try {
      await api.forgetAll();
      this.showError(null);
    } catch (error) {
      this.showError(error.message);
      this.drawForgetAll(true, false);
      return;
    }
    await this.refresh();
    this.input.focus();
  }
}
