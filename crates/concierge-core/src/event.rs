//! Typed, ordered events.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::guardrail::GuardStage;
use crate::hub::RouteSource;
use crate::id::{AgentId, CallId, RunId, SessionId, ToolId, TurnId};
use crate::message::Message;
use crate::model::Usage;
use crate::output::RunStatus;
use crate::pending::{PendingChoice, PendingConfirmation};
use crate::phase::Phase;
use crate::planner_mode::PlannerMode;
use crate::policy::Cap;
use crate::time::Timestamp;
use crate::tool::ToolOutcome;

/// Something that happened in a session.
///
/// `seq` numbers a session's durable events from 1 without gaps; a
/// subscriber resumes from any of them. Model deltas are live only: they carry
/// the seq of the durable event before them and their own number in `delta`
/// (from 1), so that every event a client sees has a unique, increasing
/// [`EventId`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Per-session sequence number.
    pub seq: u64,
    /// 0 for a durable event; for a model delta, its number after `seq`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delta: u32,
    /// When (the time of the input that caused it).
    pub at: Timestamp,
    /// The session the event belongs to.
    pub session: SessionId,
    /// The run, when the event belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    /// What happened, with its details (flattened into the event's JSON).
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A run began.
    RunStarted {
        /// The agent that takes the run.
        agent: AgentId,
        /// Whether the run plans with the model, the agent's rules, or a custom planner.
        planner: PlannerMode,
        /// The caller's turn id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<TurnId>,
        /// The caller's labels.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        labels: BTreeMap<String, String>,
        /// The caller's metadata.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        metadata: BTreeMap<String, Value>,
    },
    /// The run moved to another phase.
    PhaseChanged {
        /// The phase the run left.
        from: Phase,
        /// The phase the run entered.
        to: Phase,
    },
    /// The conversation moved to another agent.
    AgentChanged {
        /// The agent that had the conversation.
        from: AgentId,
        /// The agent that has it now.
        to: AgentId,
        /// Why it moved, in words (a handoff's reason, or e.g. "the person chooses an agent").
        reason: String,
    },
    /// The hub decided where a message goes (by the agents' intents, the
    /// history, the model or the person): to an agent, or to the person as a
    /// choice or the catalogue.
    AgentRouted {
        /// The agent that takes the message (none when the person is asked).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<AgentId>,
        /// The agents offered to the person, for a choice or the catalogue.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        candidates: Vec<AgentId>,
        /// The winning score (1 for a person's or the model's choice).
        score: f32,
        /// What made the choice: intents, earlier messages, the model, the person, or the fallback.
        source: RouteSource,
    },
    /// The model was asked (the `call`-th time in this run).
    ModelRequested {
        /// Model call number within the run.
        call: u32,
    },
    /// Streamed text from the model (live only).
    ModelDelta {
        /// The text streamed since the previous delta (not the reply so far).
        text: String,
    },
    /// A tool call was requested.
    ToolRequested {
        /// The call's id, quoted by its later `tool_finished` event.
        call_id: CallId,
        /// The tool to run.
        tool: ToolId,
        /// The arguments as the model or planner gave them.
        arguments: Value,
    },
    /// A cacheable tool's earlier result was reused instead of calling it again.
    ToolReused {
        /// The call that was answered from the log.
        call_id: CallId,
        /// The tool whose earlier result was reused.
        tool: ToolId,
        /// The call whose result was reused.
        from: CallId,
    },
    /// The run is parked until the person approves or declines a call.
    AwaitingConfirmation {
        /// The call to approve.
        pending: PendingConfirmation,
    },
    /// The person answered a confirmation.
    ConfirmationResolved {
        /// The parked call that was answered.
        call_id: CallId,
        /// Whether it was approved.
        approved: bool,
    },
    /// A tool call finished.
    ToolFinished {
        /// The call that finished, as in its `tool_requested` event.
        call_id: CallId,
        /// The tool that ran.
        tool: ToolId,
        /// Whether it succeeded.
        ok: bool,
        /// How long the tool ran, in milliseconds.
        duration_ms: u64,
        /// The result or the error.
        outcome: ToolOutcome,
    },
    /// A running call said how it is getting on (a remote agent's status).
    ToolProgress {
        /// The call, as in its `tool_requested` event.
        call_id: CallId,
        /// The tool that runs.
        tool: ToolId,
        /// What it is doing, in words.
        message: String,
    },
    /// An agent tool's call started a child run of another agent; the
    /// child's events carry its session id.
    ChildStarted {
        /// The parent's call the child answers.
        call_id: CallId,
        /// The agent that runs in the child.
        agent: AgentId,
        /// The child session.
        child: SessionId,
    },
    /// A call asks the person to choose (a question with numbered options);
    /// the run waits for the answer.
    ChoiceRequested {
        /// The call that asks (it runs again with the chosen option).
        pending: PendingChoice,
    },
    /// A running call asks the person something (MCP elicitation); the run
    /// waits for the answer while the call stays in flight.
    ElicitationRequested {
        /// The question, where it comes from, and in words.
        pending: crate::elicitation::PendingElicitation,
    },
    /// The person answered a running call's question.
    ElicitationAnswered {
        /// The call that asked.
        call_id: CallId,
        /// Which of its questions (from 0).
        question: u32,
        /// The answer.
        answer: crate::elicitation::ElicitationAnswer,
    },
    /// The person answered a choice.
    ChoiceResolved {
        /// The call that asked.
        call_id: CallId,
        /// The chosen option's id, or none when the answer matched no option
        /// (the planner then sees the options and the answer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chosen: Option<Value>,
    },
    /// A message was added to the history.
    Message {
        /// The message as appended to the session's history.
        message: Message,
    },
    /// Tokens used by a model call.
    Usage {
        /// Tokens and cost of this model call alone.
        usage: Usage,
        /// Tokens and cost of the run so far, this call included.
        run_total: Usage,
    },
    /// A run limit was reached; the run moves to synthesis.
    CapReached {
        /// The limit that was reached.
        cap: Cap,
    },
    /// The run finished (or parked).
    RunFinished {
        /// How the run ended, or `awaiting_confirmation` when it parked.
        status: RunStatus,
        /// The answer, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply: Option<String>,
    },
    /// A guardrail stopped the run (it then finishes as `blocked`, its
    /// reply saying why).
    GuardrailTripped {
        /// Where it checked: the person's message, the model's reply, a
        /// tool call's arguments or its result.
        stage: GuardStage,
        /// The check's name.
        guardrail: String,
        /// Why, as a clause ("it contains a card number").
        reason: String,
        /// The tool whose call or result it checked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<ToolId>,
    },
    /// Something failed.
    Error {
        /// What failed, in words (the run then finishes as failed).
        message: String,
    },
    /// A non-read-only tool succeeded: what it changed, so that an embedding
    /// application can refresh what it shows of it.
    DataChanged {
        /// The call that changed it.
        call_id: CallId,
        /// The tool that ran.
        tool: ToolId,
        /// What changed: the tool's declared `writes`, else its category,
        /// else the tool's name.
        changed: Vec<String>,
    },
    /// The session was opened before its first message.
    SessionOpened {
        /// The agent that takes its first message.
        agent: AgentId,
        /// The tenant the session belongs to, if the caller has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tenant: Option<String>,
        /// For a fork: the session it was forked from, at which event, and
        /// what that means for actions already done, in words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forked_from: Option<crate::fork::ForkOrigin>,
    },
    /// The session was ended; it accepts no more input.
    SessionEnded {
        /// Why the session was ended, as the `end` input gave it.
        reason: String,
    },
    /// A run waits for the tools of an MCP server (it is starting), or they
    /// became ready, or they could not start. Live only, like model deltas:
    /// it is about this process's server, not the conversation, so it is
    /// never journaled and a replay does not bring it back. It is numbered
    /// after the session's last durable event (`delta` from 1).
    ToolsStatus {
        /// The MCP server's name (its toolset's).
        server: String,
        /// Where the server is.
        state: ToolsState,
        /// What it means, as a sentence for people ("starting the orders tools…").
        message: String,
    },
}

/// Where an MCP server's tools are, for a [`EventKind::ToolsStatus`] event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolsState {
    /// The server is starting; the run waits for its tools.
    Starting,
    /// The server's tools are ready; the run goes on.
    Ready,
    /// The server could not start; the run cannot use its tools.
    Failed,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Event {
    /// The event's place in its session's stream.
    pub fn id(&self) -> EventId {
        EventId {
            seq: self.seq,
            delta: self.delta,
        }
    }
}

/// An event's place in its session's stream, ordered: `seq`, then `delta`.
/// Written `12` for a durable event and `12.3` for the third model delta
/// after it (the form Server-Sent Events' `Last-Event-ID` carries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventId {
    /// The durable event's sequence number (or the one before a delta).
    pub seq: u64,
    /// 0 for a durable event; a model delta's number after `seq`.
    pub delta: u32,
}

impl EventId {
    /// The largest sequence number an id may name (`i64::MAX`: what a
    /// store's signed 64-bit integers hold).
    pub const MAX_SEQ: u64 = i64::MAX as u64;

    /// The id of the durable event `seq`.
    pub fn durable(seq: u64) -> Self {
        Self { seq, delta: 0 }
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.delta == 0 {
            write!(f, "{}", self.seq)
        } else {
            write!(f, "{}.{}", self.seq, self.delta)
        }
    }
}

/// An event id that is not `N` or `N.M` (both whole numbers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidEventId(pub String);

impl std::fmt::Display for InvalidEventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is not an event id: expected a number such as 12, or 12.3 for a model delta (at most {})",
            self.0,
            EventId::MAX_SEQ
        )
    }
}

impl std::error::Error for InvalidEventId {}

impl std::str::FromStr for EventId {
    type Err = InvalidEventId;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidEventId(text.to_string());
        let (seq, delta) = match text.trim().split_once('.') {
            Some((seq, delta)) => (seq, delta.parse::<u32>().map_err(|_| bad())?),
            None => (text.trim(), 0),
        };
        let seq = seq.parse::<u64>().map_err(|_| bad())?;
        // Stores keep sequence numbers as signed 64-bit integers, and a
        // stream counts on from the id it is given: past these, a number
        // names no event there can ever be.
        if seq > Self::MAX_SEQ || delta == u32::MAX {
            return Err(bad());
        }
        Ok(Self { seq, delta })
    }
}

impl EventKind {
    /// The snake_case name of the kind.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run_started",
            EventKind::PhaseChanged { .. } => "phase_changed",
            EventKind::AgentChanged { .. } => "agent_changed",
            EventKind::AgentRouted { .. } => "agent_routed",
            EventKind::ModelRequested { .. } => "model_requested",
            EventKind::ModelDelta { .. } => "model_delta",
            EventKind::ToolRequested { .. } => "tool_requested",
            EventKind::ToolReused { .. } => "tool_reused",
            EventKind::AwaitingConfirmation { .. } => "awaiting_confirmation",
            EventKind::ConfirmationResolved { .. } => "confirmation_resolved",
            EventKind::ToolFinished { .. } => "tool_finished",
            EventKind::ChildStarted { .. } => "child_started",
            EventKind::ChoiceRequested { .. } => "choice_requested",
            EventKind::ChoiceResolved { .. } => "choice_resolved",
            EventKind::ElicitationRequested { .. } => "elicitation_requested",
            EventKind::ElicitationAnswered { .. } => "elicitation_answered",
            EventKind::Message { .. } => "message",
            EventKind::Usage { .. } => "usage",
            EventKind::CapReached { .. } => "cap_reached",
            EventKind::RunFinished { .. } => "run_finished",
            EventKind::GuardrailTripped { .. } => "guardrail_tripped",
            EventKind::Error { .. } => "error",
            EventKind::DataChanged { .. } => "data_changed",
            EventKind::SessionOpened { .. } => "session_opened",
            EventKind::SessionEnded { .. } => "session_ended",
            EventKind::ToolsStatus { .. } => "tools_status",
            EventKind::ToolProgress { .. } => "tool_progress",
        }
    }
}
