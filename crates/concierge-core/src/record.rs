//! Reading a session's events back: the [`Fork`] of a session at one of its
//! events, and a [`RunRecord`] — one past run as its events tell it: what
//! the person wrote, what the run answered, and every tool call it made
//! with its result, which a replay answers its tools from.
//!
//! Both are read from events, not from the journal: events are kept on
//! every engine, including a journal compacted since, so any event can be
//! forked from.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::fingerprint;
use crate::event::{Event, EventKind};
use crate::fork::{DoneCall, Fork, ForkError, ForkOrigin};
use crate::id::{AgentId, CallId, RunId, SessionId, ToolId};
use crate::message::Message;
use crate::output::RunStatus;

impl Fork {
    /// The fork of `origin` at its event `at`: everything up to and including
    /// that event (`events` are the session's durable events in order, at
    /// least up to `at`; model deltas are skipped).
    pub fn from_events(origin: &SessionId, events: &[Event], at: u64) -> Result<Self, ForkError> {
        let durable = || events.iter().filter(|e| e.delta == 0);
        let last = durable().map(|e| e.seq).max().unwrap_or(0);
        if at == 0 || at > last {
            return Err(ForkError::NoSuchEvent { at, last });
        }
        let mut agent = None;
        let mut messages = Vec::new();
        let mut calls = Calls::default();
        for event in durable().take_while(|e| e.seq <= at) {
            match &event.kind {
                EventKind::SessionOpened { agent: to, .. }
                | EventKind::RunStarted { agent: to, .. }
                | EventKind::AgentChanged { to, .. } => agent = Some(to.clone()),
                EventKind::Message { message } => messages.push(message.clone()),
                _ => calls.see(event),
            }
        }
        let agent = agent.ok_or(ForkError::Empty(at))?;
        drop_unanswered_calls(&mut messages);
        let after: Vec<ToolId> = durable()
            .filter(|e| e.seq > at)
            .filter_map(|e| match &e.kind {
                EventKind::DataChanged { tool, .. } => Some(tool.clone()),
                _ => None,
            })
            .collect();
        let done = calls.done;
        let note = fork_note(&done, &after);
        Ok(Self {
            origin: ForkOrigin {
                session: origin.clone(),
                seq: at,
                note,
            },
            agent,
            messages,
            done,
        })
    }
}

/// The tool calls seen in a stretch of events: requested, then finished.
#[derive(Default)]
struct Calls {
    requested: HashMap<CallId, (RunId, ToolId, Value)>,
    done: Vec<DoneCall>,
}

impl Calls {
    fn see(&mut self, event: &Event) {
        match &event.kind {
            EventKind::ToolRequested {
                call_id,
                tool,
                arguments,
            } => {
                let run = event.run.clone().unwrap_or_else(|| RunId::new(""));
                self.requested
                    .insert(call_id.clone(), (run, tool.clone(), arguments.clone()));
            }
            EventKind::ToolFinished { call_id, outcome, .. } => {
                if let Some((run_id, tool, arguments)) = self.requested.remove(call_id) {
                    self.done.push(DoneCall {
                        run_id,
                        call_id: call_id.clone(),
                        tool,
                        fingerprint: fingerprint(&arguments),
                        arguments,
                        outcome: outcome.clone(),
                        changed: false,
                    });
                }
            }
            EventKind::DataChanged { call_id, .. } => {
                if let Some(call) = self.done.iter_mut().rev().find(|c| &c.call_id == call_id) {
                    call.changed = true;
                }
            }
            _ => {}
        }
    }
}

/// Cuts `messages` before the last assistant message whose tool calls were
/// not all answered: a model cannot be sent calls without their results.
fn drop_unanswered_calls(messages: &mut Vec<Message>) {
    let Some(last) = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()))
    else {
        return;
    };
    let Message::Assistant { tool_calls, .. } = &messages[last] else {
        return;
    };
    let answered = tool_calls.iter().all(|call| {
        messages[last + 1..]
            .iter()
            .any(|m| matches!(m, Message::Tool { call_id, .. } if call_id == &call.id))
    });
    if !answered {
        messages.truncate(last);
    }
}

/// The sentence a fork's `session_opened` event carries.
fn fork_note(done: &[DoneCall], after: &[ToolId]) -> String {
    let changed: Vec<&str> = done.iter().filter(|c| c.changed).map(|c| c.tool.as_str()).collect();
    let mut note = String::from("This conversation was forked from an earlier one.");
    if changed.is_empty() {
        note.push_str(" Nothing had been changed before the fork point.");
    } else {
        note.push_str(&format!(
            " Done before the fork point, and not done again here: {}.",
            list(&changed)
        ));
    }
    if !after.is_empty() {
        let after: Vec<&str> = after.iter().map(ToolId::as_str).collect();
        note.push_str(&format!(
            " The original conversation is unchanged: what it did after the fork point still stands ({}).",
            list(&after)
        ));
    }
    note
}

/// `a, b and c`, each name once, in order.
fn list(names: &[&str]) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for name in names {
        if !unique.contains(name) {
            unique.push(name);
        }
    }
    match unique.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// One past run as its events tell it, for a replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run.
    pub run_id: RunId,
    /// The seq of its `run_started` event (a replay forks just before it).
    pub started_seq: u64,
    /// The agent that took it.
    pub agent: AgentId,
    /// What the person wrote to start it.
    pub messages: Vec<Message>,
    /// How it ended (or where it stopped for the person, if it is parked).
    pub status: RunStatus,
    /// What it answered.
    pub reply: Option<String>,
    /// The tool calls it made that finished, in order.
    pub calls: Vec<DoneCall>,
}

impl RunRecord {
    /// Reads run `run_id` from a session's `events`.
    pub fn from_events(events: &[Event], run_id: &RunId) -> Result<Self, ForkError> {
        let mut record: Option<RunRecord> = None;
        let mut status = None;
        let mut calls = Calls::default();
        for event in events.iter().filter(|e| e.delta == 0 && e.run.as_ref() == Some(run_id)) {
            match (&event.kind, record.as_mut()) {
                (EventKind::RunStarted { agent, .. }, None) => {
                    record = Some(RunRecord {
                        run_id: run_id.clone(),
                        started_seq: event.seq,
                        agent: agent.clone(),
                        messages: Vec::new(),
                        status: RunStatus::Completed,
                        reply: None,
                        calls: Vec::new(),
                    });
                }
                (EventKind::Message { message }, Some(record)) if matches!(message, Message::User { .. }) => {
                    record.messages.push(message.clone());
                }
                (EventKind::RunFinished { status: stopped, reply }, Some(record)) => {
                    status = Some(*stopped);
                    record.reply = reply.clone();
                }
                // A run parked for the person stops there without finishing.
                (EventKind::AwaitingConfirmation { pending }, Some(record)) => {
                    status = Some(RunStatus::AwaitingConfirmation);
                    record.reply = Some(pending.message.clone());
                }
                (EventKind::ChoiceRequested { .. }, Some(_)) => status = Some(RunStatus::AwaitingChoice),
                (EventKind::ElicitationRequested { .. }, Some(_)) => status = Some(RunStatus::AwaitingInput),
                (_, Some(_)) => calls.see(event),
                (_, None) => {}
            }
        }
        let mut record = record.ok_or_else(|| ForkError::NoSuchRun(run_id.clone()))?;
        record.status = status.ok_or_else(|| ForkError::RunUnfinished(run_id.clone()))?;
        record.calls = calls.done;
        Ok(record)
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
