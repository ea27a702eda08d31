//! concierge's session events translated to AG-UI events, one at a time.
//!
//! - model deltas → `TEXT_MESSAGE_START` + `TEXT_MESSAGE_CONTENT` (the message
//!   ends when the session records it); an agent's message that was not
//!   streamed (a rules agent's) → start, its whole text as one content, end;
//! - `tool_requested` → `TOOL_CALL_START` / `ARGS` / `END`; the tool message
//!   the result becomes → `TOOL_CALL_RESULT`;
//! - `phase_changed` → `STEP_FINISHED` of the old phase, `STEP_STARTED` of the new;
//! - an agent called as a tool (`child_started`, then the child session's
//!   events) → `SUBAGENT_STARTED`, the child's events with `subagentRunId` =
//!   the child session's id, then `SUBAGENT_FINISHED` (success, or suspended
//!   on its interrupts) or `SUBAGENT_ERROR`;
//! - `tools_status` (a run waits for an MCP server's tools: starting, ready
//!   or failed; live only) → `CUSTOM` named `tools_status`, the event as its
//!   value (`server`, `state`, `message`), so a client can show the sentence;
//! - every other kind (`usage`, `agent_changed`, `agent_routed`,
//!   `model_requested`, `confirmation_resolved`, `data_changed`...) →
//!   `CUSTOM` named by the kind, the concierge event as its value.
//!
//! The root run's end (its `run_finished`, or the park on a confirmation or
//! a choice) is the driver's: it needs the session as it stands then.

use std::collections::BTreeMap;

use concierge::{Event, EventKind, Message, RunStatus, SessionId, Usage};
use serde_json::{Value, json};

use super::events::{AguiEvent, SubagentOutcome};
use super::interrupts::{Interrupts, Parked};
use super::messages::{arguments_text, message_id, tool_call_id};
use crate::ground::scope::Relabel;

/// A session's place in the translation (the root's or a child's).
#[derive(Debug, Default)]
struct Track {
    /// How many messages the session's history has.
    messages: usize,
    /// The streamed text message in progress.
    open_text: Option<String>,
    /// The phase step in progress.
    step: Option<String>,
    /// The last assistant message and the calls it made.
    last_assistant: Option<(String, Vec<String>)>,
    /// The agent that speaks in the session.
    agent: Option<String>,
}

/// A child run in progress.
#[derive(Debug, Default)]
struct Child {
    /// The interrupts it raised.
    interrupts: Vec<String>,
    /// The last error it reported.
    error: Option<String>,
}

/// The translation of one AG-UI run.
#[derive(Debug)]
pub struct Translator {
    root: SessionId,
    /// How the client names the root and its children.
    relabel: Relabel,
    thread: SessionId,
    tracks: BTreeMap<SessionId, Track>,
    children: BTreeMap<SessionId, Child>,
    interrupts: Interrupts,
    usage: Usage,
    error: Option<String>,
}

impl Translator {
    /// A translation of `root`'s events, whose history holds `messages` messages now.
    pub fn new(root: SessionId, messages: usize, interrupts: Interrupts) -> Self {
        let mut tracks = BTreeMap::new();
        tracks.insert(
            root.clone(),
            Track {
                messages,
                ..Track::default()
            },
        );
        Self {
            thread: root.clone(),
            relabel: Relabel::new(root.clone(), root.clone()),
            root,
            tracks,
            children: BTreeMap::new(),
            interrupts,
            usage: Usage::default(),
            error: None,
        }
    }

    /// The client calls the root session `thread`: subagent runs are named after it.
    pub fn named(mut self, thread: &str) -> Self {
        self.relabel = Relabel::new(self.root.clone(), thread);
        self
    }

    /// The tokens the run used (its `usage` events' running total).
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// The last error the root run reported.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Whether `child` is a child run this translation has opened.
    pub fn knows_child(&self, child: &SessionId) -> bool {
        self.children.contains_key(child)
    }

    /// The AG-UI id of `call` of `session` (named the client's way).
    fn call_id(&self, session: &SessionId, call: &str) -> String {
        tool_call_id(&self.relabel.session(&self.root), &self.relabel.session(session), call)
    }

    fn subagent(&self, session: &SessionId) -> Option<String> {
        (session != &self.root).then(|| self.relabel.session(session).to_string())
    }

    fn track(&mut self, session: &SessionId) -> &mut Track {
        self.tracks.entry(session.clone()).or_default()
    }

    /// Opens a child run met without its `child_started` (a run resumed after
    /// a child parked): `child` is `<parent>.<call>`, run by `agent`.
    pub fn adopt_child(&mut self, child: &SessionId, agent: &str, messages: usize, out: &mut Vec<AguiEvent>) {
        let (parent, call) = match child.parent_and_call() {
            Some((parent, call)) => (parent, call.to_string()),
            None => (self.root.clone(), child.to_string()),
        };
        self.open_child(&parent, &call, agent, child, out);
        self.track(child).messages = messages;
    }

    fn open_child(&mut self, parent: &SessionId, call: &str, agent: &str, child: &SessionId, out: &mut Vec<AguiEvent>) {
        out.push(AguiEvent::SubagentStarted {
            subagent_run_id: self.relabel.session(child).to_string(),
            name: agent.to_string(),
            parent_tool_call_id: self.call_id(parent, call),
            parent_subagent_run_id: self.subagent(parent).filter(|_| self.children.contains_key(parent)),
        });
        self.children.insert(child.clone(), Child::default());
        self.track(child).agent = Some(agent.to_string());
    }

    /// Translates one event into `out`. The root run's end is not translated
    /// (see [`Translator::ends_root`]).
    pub fn event(&mut self, event: &Event, out: &mut Vec<AguiEvent>) {
        let session = event.session.clone();
        let sub = self.subagent(&session);
        match &event.kind {
            EventKind::RunStarted { agent, .. } => {
                self.track(&session).agent = Some(agent.to_string());
            }
            EventKind::PhaseChanged { to, .. } => {
                let name = phase_name(to);
                let track = self.track(&session);
                let previous = track.step.replace(name.clone());
                if let Some(previous) = previous {
                    out.push(AguiEvent::StepFinished {
                        step_name: previous,
                        subagent_run_id: sub.clone(),
                    });
                }
                out.push(AguiEvent::StepStarted {
                    step_name: name,
                    subagent_run_id: sub,
                });
            }
            EventKind::ModelDelta { text } => {
                let label = self.relabel.session(&session);
                let track = self.track(&session);
                let id = match &track.open_text {
                    Some(id) => id.clone(),
                    None => {
                        let id = message_id(&label, track.messages);
                        track.open_text = Some(id.clone());
                        let name = track.agent.clone();
                        out.push(AguiEvent::TextMessageStart {
                            message_id: id.clone(),
                            role: "assistant",
                            name,
                            subagent_run_id: sub.clone(),
                        });
                        id
                    }
                };
                out.push(AguiEvent::TextMessageContent {
                    message_id: id,
                    delta: text.clone(),
                    subagent_run_id: sub,
                });
            }
            EventKind::Message { message } => self.message(&session, message, sub, out),
            EventKind::ToolRequested {
                call_id,
                tool,
                arguments,
            } => {
                self.end_text(&session, out);
                let id = self.call_id(&session, call_id.as_str());
                let parent_message_id = self
                    .track(&session)
                    .last_assistant
                    .as_ref()
                    .filter(|(_, calls)| calls.iter().any(|c| c == call_id.as_str()))
                    .map(|(message, _)| message.clone());
                out.push(AguiEvent::ToolCallStart {
                    tool_call_id: id.clone(),
                    tool_call_name: tool.to_string(),
                    parent_message_id,
                    subagent_run_id: sub.clone(),
                });
                out.push(AguiEvent::ToolCallArgs {
                    tool_call_id: id.clone(),
                    delta: arguments_text(arguments),
                    subagent_run_id: sub.clone(),
                });
                out.push(AguiEvent::ToolCallEnd {
                    tool_call_id: id,
                    subagent_run_id: sub,
                });
            }
            // The result goes out with the tool message it becomes (above),
            // where its id in the history is known.
            EventKind::ToolFinished { .. } => {}
            EventKind::ChildStarted { call_id, agent, child } => {
                self.open_child(&session, call_id.as_str(), agent.as_str(), child, out);
            }
            EventKind::AwaitingConfirmation { pending } if session != self.root => {
                let parked = Parked::Confirmation(pending.clone());
                self.raise_in_child(&session, &parked);
            }
            EventKind::ChoiceRequested { pending } if session != self.root => {
                let parked = Parked::Choice(pending.clone());
                self.raise_in_child(&session, &parked);
            }
            // The root's park ends the run: the driver raises the interrupt.
            EventKind::AwaitingConfirmation { .. } | EventKind::ChoiceRequested { .. } => {}
            EventKind::RunFinished { status, reply } if session != self.root => {
                self.finish_child(&session, *status, reply.as_deref(), out);
            }
            EventKind::RunFinished { .. } => {}
            EventKind::Usage { run_total, .. } => {
                if session == self.root {
                    self.usage = *run_total;
                }
                out.push(custom(event, sub));
            }
            EventKind::Error { message } => {
                if session == self.root {
                    self.error = Some(message.clone());
                } else if let Some(child) = self.children.get_mut(&session) {
                    child.error = Some(message.clone());
                }
                out.push(custom(event, sub));
            }
            // AG-UI has no status of a tool server: the event, as CUSTOM.
            EventKind::ToolsStatus { .. } => out.push(custom(event, sub)),
            // No AG-UI equivalent (including kinds added later, such as
            // `data_changed`): a CUSTOM event named by the kind.
            _ => out.push(custom(event, sub)),
        }
    }

    fn message(&mut self, session: &SessionId, message: &Message, sub: Option<String>, out: &mut Vec<AguiEvent>) {
        let label = self.relabel.session(session);
        let track = self.track(session);
        let id = message_id(&label, track.messages);
        track.messages += 1;
        match message {
            Message::Assistant {
                agent,
                content,
                tool_calls,
            } => {
                let streamed = track.open_text.take();
                track.agent = Some(agent.to_string());
                track.last_assistant = Some((
                    id.clone(),
                    tool_calls.iter().map(|c| c.id.as_str().to_string()).collect(),
                ));
                match streamed {
                    Some(open) => out.push(AguiEvent::TextMessageEnd {
                        message_id: open,
                        subagent_run_id: sub,
                    }),
                    None if !content.is_empty() => {
                        out.push(AguiEvent::TextMessageStart {
                            message_id: id.clone(),
                            role: "assistant",
                            name: Some(agent.to_string()),
                            subagent_run_id: sub.clone(),
                        });
                        out.push(AguiEvent::TextMessageContent {
                            message_id: id.clone(),
                            delta: content.clone(),
                            subagent_run_id: sub.clone(),
                        });
                        out.push(AguiEvent::TextMessageEnd {
                            message_id: id,
                            subagent_run_id: sub,
                        });
                    }
                    None => {}
                }
            }
            Message::Tool { call_id, outcome, .. } => {
                out.push(AguiEvent::ToolCallResult {
                    message_id: id,
                    tool_call_id: self.call_id(session, call_id.as_str()),
                    content: outcome.to_model_text(),
                    role: "tool",
                    subagent_run_id: sub,
                });
            }
            // The person's and the caller's messages are the client's own.
            Message::User { .. } | Message::System { .. } => {}
        }
    }

    fn raise_in_child(&mut self, session: &SessionId, parked: &Parked) {
        let id = self.call_id(session, parked.call_id().as_str());
        let interrupt = self.interrupts.raise(
            &self.thread,
            parked,
            id,
            Some(self.relabel.session(session).to_string()),
        );
        if let Some(child) = self.children.get_mut(session) {
            child.interrupts.push(interrupt.id);
        }
    }

    fn finish_child(&mut self, child: &SessionId, status: RunStatus, reply: Option<&str>, out: &mut Vec<AguiEvent>) {
        self.close_session(child, out);
        let Some(state) = self.children.remove(child) else {
            return;
        };
        let subagent_run_id = self.relabel.session(child).to_string();
        match status {
            RunStatus::Completed | RunStatus::NeedsInput | RunStatus::Blocked => {
                out.push(AguiEvent::SubagentFinished {
                    subagent_run_id,
                    result: reply.map(|r| json!(r)),
                    outcome: SubagentOutcome::Success,
                })
            }
            RunStatus::AwaitingConfirmation | RunStatus::AwaitingChoice | RunStatus::AwaitingInput => {
                out.push(AguiEvent::SubagentFinished {
                    subagent_run_id,
                    result: None,
                    outcome: SubagentOutcome::Suspended {
                        interrupt_ids: state.interrupts,
                    },
                })
            }
            RunStatus::Failed => out.push(AguiEvent::SubagentError {
                subagent_run_id,
                message: state
                    .error
                    .unwrap_or_else(|| format!("the agent called as {child} failed")),
            }),
            RunStatus::Cancelled => out.push(AguiEvent::SubagentError {
                subagent_run_id,
                message: "the agent's run was cancelled".to_string(),
            }),
        }
    }

    /// Ends what `session` left open: its text message and its step.
    fn close_session(&mut self, session: &SessionId, out: &mut Vec<AguiEvent>) {
        let sub = self.subagent(session);
        self.end_text(session, out);
        if let Some(step) = self.track(session).step.take() {
            out.push(AguiEvent::StepFinished {
                step_name: step,
                subagent_run_id: sub,
            });
        }
    }

    fn end_text(&mut self, session: &SessionId, out: &mut Vec<AguiEvent>) {
        let sub = self.subagent(session);
        if let Some(open) = self.track(session).open_text.take() {
            out.push(AguiEvent::TextMessageEnd {
                message_id: open,
                subagent_run_id: sub,
            });
        }
    }

    /// Closes everything still open before the run ends: children still
    /// running are reported suspended (the root parked while they wait),
    /// then the root's text and step.
    pub fn close(&mut self, out: &mut Vec<AguiEvent>) {
        let children: Vec<SessionId> = self.children.keys().cloned().collect();
        // The deepest first: a child's child ends before its parent.
        for child in children.iter().rev() {
            self.close_session(child, out);
            if let Some(state) = self.children.remove(child) {
                out.push(AguiEvent::SubagentFinished {
                    subagent_run_id: self.relabel.session(child).to_string(),
                    result: None,
                    outcome: SubagentOutcome::Suspended {
                        interrupt_ids: state.interrupts,
                    },
                });
            }
        }
        let root = self.root.clone();
        self.close_session(&root, out);
    }

    /// Whether `event` ends the root run: its `run_finished`, or its park on
    /// a confirmation or a choice (a parked run reports no `run_finished`).
    pub fn ends_root(&self, event: &Event) -> bool {
        event.session == self.root
            && matches!(
                event.kind,
                EventKind::RunFinished { .. }
                    | EventKind::AwaitingConfirmation { .. }
                    | EventKind::ChoiceRequested { .. }
                    | EventKind::ElicitationRequested { .. }
            )
    }
}

/// A concierge event as a CUSTOM event named by its kind.
fn custom(event: &Event, subagent_run_id: Option<String>) -> AguiEvent {
    AguiEvent::Custom {
        name: event.kind.name().to_string(),
        value: serde_json::to_value(event).unwrap_or(Value::Null),
        subagent_run_id,
    }
}

fn phase_name(phase: &concierge::Phase) -> String {
    match serde_json::to_value(phase) {
        Ok(Value::String(name)) => name,
        _ => format!("{phase:?}").to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use concierge::{Timestamp, ToolsState};

    use super::*;

    #[test]
    fn a_tools_status_becomes_a_custom_event_carrying_its_sentence() {
        let root = SessionId::new("s");
        let mut translator = Translator::new(root.clone(), 0, Interrupts::default());
        let event = Event {
            seq: 3,
            delta: 1,
            at: Timestamp(0),
            session: root,
            run: None,
            kind: EventKind::ToolsStatus {
                server: "orders".into(),
                state: ToolsState::Starting,
                message: "starting the orders tools…".into(),
            },
        };
        let mut out = Vec::new();
        translator.event(&event, &mut out);
        let [AguiEvent::Custom { name, value, .. }] = out.as_slice() else {
            panic!("one CUSTOM event: {out:?}");
        };
        assert_eq!(name, "tools_status");
        assert_eq!(value["server"], "orders");
        assert_eq!(value["state"], "starting");
        assert_eq!(value["message"], "starting the orders tools…");
    }
}
