// The side panel: the session's agent and phase, its blackboard, usage
// and cost, and a timeline of the current run's model and tool calls.

import { h, clear, show, humanize, duration } from './dom.js';
import { agentName } from './conversation.js';

export class Panel {
  constructor(root) {
    this.agent = root.querySelector('[data-panel=agent]');
    this.phase = root.querySelector('[data-panel=phase]');
    this.blackboard = root.querySelector('[data-panel=blackboard]');
    this.usage = root.querySelector('[data-panel=usage]');
    this.timeline = root.querySelector('[data-panel=timeline]');
    this.reset();
  }

  /** Empties the panel (no session open). */
  reset() {
    this.session = null;
    this.runUsage = null;
    this.bars = [];
    this.open = new Map();
    this.runStart = null;
    this.runEnd = null;
    this.agent.textContent = '—';
    this.phase.textContent = '—';
    this.showBlackboard({});
    this.showUsage(null);
    this.drawTimeline();
  }

  /** The session's state as the API shows it. */
  showView(view) {
    this.session = view.id;
    this.agent.textContent = agentName(view.agent);
    this.phase.textContent = view.phase ? humanize(view.phase) : view.ended ? 'Ended' : 'Idle';
    this.showBlackboard(view.blackboard ?? {});
    this.showUsage(view.usage);
  }

  showBlackboard(board) {
    const rows = Object.entries(board);
    clear(this.blackboard);
    if (!rows.length) {
      this.blackboard.append(h('p', { class: 'empty' }, 'Nothing known yet.'));
      return;
    }
    this.blackboard.append(
      h('dl', { class: 'kv' }, rows.map(([k, v]) => [h('dt', {}, humanize(k)), h('dd', {}, show(v))])),
    );
  }

  showUsage(total) {
    clear(this.usage);
    this.total = total;
    if (!total) {
      this.usage.append(h('p', { class: 'empty' }, 'No conversation open.'));
      return;
    }
    const cost = (u) => {
      const usd = u?.cost_usd;
      if (usd === null || usd === undefined) return 'unknown';
      return `$${usd.toFixed(usd > 0 && usd < 0.01 ? 4 : 2)}`;
    };
    const tokens = (u) => `${(u?.input_tokens ?? 0).toLocaleString()} in · ${(u?.output_tokens ?? 0).toLocaleString()} out`;
    this.usage.append(
      h('dl', { class: 'kv' },
        h('dt', {}, 'Session tokens'), h('dd', {}, tokens(total)),
        h('dt', {}, 'Session cost'), h('dd', {}, cost(total)),
        this.runUsage ? [h('dt', {}, 'This run'), h('dd', {}, `${tokens(this.runUsage)} · ${cost(this.runUsage)}`)] : null,
      ),
    );
  }

  /** Follows one event (the session's own, or a child's). */
  apply(event) {
    const root = event.session === this.session;
    const at = event.at ?? Date.now();
    switch (event.type) {
      case 'run_started':
        if (root) {
          this.agent.textContent = agentName(event.agent);
          this.bars = [];
          this.open = new Map();
          this.runStart = at;
          this.runEnd = null;
          this.runUsage = null;
        }
        break;
      case 'agent_changed':
        if (root) this.agent.textContent = agentName(event.to);
        break;
      case 'phase_changed':
        if (root) this.phase.textContent = humanize(event.to);
        break;
      case 'model_requested': {
        const bar = { kind: 'model', label: root ? `Model call ${event.call}` : `↳ model call ${event.call}`, start: at, end: null };
        this.bars.push(bar);
        this.open.set(`model/${event.session}`, bar);
        break;
      }
      case 'tool_requested': {
        this.closeModel(event.session, at);
        const bar = { kind: 'tool', label: root ? humanize(event.tool) : `↳ ${humanize(event.tool)}`, start: at, end: null };
        this.bars.push(bar);
        this.open.set(`tool/${event.session}/${event.call_id}`, bar);
        break;
      }
      case 'tool_finished': {
        const bar = this.open.get(`tool/${event.session}/${event.call_id}`);
        if (bar) {
          bar.end = at;
          // The bar covers the call itself, not a wait for the person's approval.
          bar.start = Math.max(bar.start, at - (event.duration_ms ?? 0));
          bar.ok = event.ok;
          bar.ms = event.duration_ms;
        }
        break;
      }
      case 'awaiting_confirmation':
      case 'choice_requested':
        // The run is parked: its open calls wait for the person.
        for (const bar of this.bars) if (bar.end === null) bar.waiting = true;
        break;
      case 'confirmation_resolved':
      case 'choice_resolved':
        for (const bar of this.bars) bar.waiting = false;
        break;
      case 'usage':
        this.closeModel(event.session, at);
        if (root) {
          this.runUsage = event.run_total;
          this.showUsage(this.total);
        }
        break;
      case 'message':
        if (event.message?.role === 'assistant') this.closeModel(event.session, at);
        break;
      case 'run_finished':
        this.closeModel(event.session, at);
        if (root) this.runEnd = at;
        break;
      default:
        break;
    }
    if (event.type !== 'model_delta') this.drawTimeline(at);
  }

  closeModel(session, at) {
    const bar = this.open.get(`model/${session}`);
    if (bar && bar.end === null) {
      bar.end = at;
      bar.ms = at - bar.start;
    }
    this.open.delete(`model/${session}`);
  }

  drawTimeline(now) {
    clear(this.timeline);
    if (!this.bars.length) {
      this.timeline.append(h('p', { class: 'empty' }, this.runStart ? 'No model or tool calls in this run.' : 'No run yet.'));
      return;
    }
    const start = this.runStart ?? this.bars[0].start;
    const end = Math.max(this.runEnd ?? now ?? start, ...this.bars.map((b) => b.end ?? b.start));
    const span = Math.max(end - start, 1);
    const rows = this.bars.map((bar) => {
      const state = bar.end !== null ? '' : bar.waiting ? ' waiting' : ' running';
      const fill = h('span', { class: `bar ${bar.kind}${state}${bar.ok === false ? ' failed' : ''}` });
      fill.style.left = `${((bar.start - start) / span) * 100}%`;
      fill.style.width = `${(((bar.end ?? end) - bar.start) / span) * 100}%`;
      const label = bar.end !== null ? duration(bar.ms ?? bar.end - bar.start) : bar.waiting ? 'waiting' : 'running';
      return h('li', { class: 'row', 'aria-label': `${bar.label}: ${label}` },
        h('span', { class: 'label' }, bar.label),
        h('span', { class: 'track', 'aria-hidden': 'true' }, fill),
        h('span', { class: 'time' }, label),
      );
    });
    this.timeline.append(
      h('ol', { class: 'bars' }, rows),
      h('div', { class: 'axis', 'aria-hidden': 'true' }, h('span', {}, '0'), h('span', {}, duration(end - start))),
    );
  }
}
