//! What drives a session.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::delegate::{Parent, Question};
use crate::id::{AgentId, CallId, RunId, TurnId};
use crate::message::Message;
use crate::model::{ModelReply, Usage};
use crate::pending::Decision;
use crate::planner_mode::PlannerMode;
use crate::policy::RunPolicy;
use crate::time::Timestamp;
use crate::tool::ToolOutcome;

/// One input to [`Session::step`](crate::Session::step). Engines journal
/// every accepted input; replaying the journal rebuilds the session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
pub enum Input {
    /// The person wrote: start a run.
    StartRun(StartRun),
    /// Open the session before its first message (it must be new).
    Open(OpenSession),
    /// The model answered.
    ModelReplied {
        /// The run whose model call this answers.
        run_id: RunId,
        /// Which model call of the run this answers.
        call: u32,
        /// The model's text, tool calls, usage and finish reason.
        reply: ModelReply,
        /// When the reply arrived, in milliseconds since the Unix epoch (engines supply it; the core reads no clock).
        at: Timestamp,
    },
    /// The model could not be reached or kept failing after retries.
    ModelFailed {
        /// The run whose model call failed.
        run_id: RunId,
        /// Which model call of the run failed (the `call` of the `call_model` effect).
        call: u32,
        /// The last error from the provider or transport, in words.
        error: String,
        /// When the engine gave up on the call.
        at: Timestamp,
    },
    /// A tool call finished.
    ToolFinished {
        /// The run that made the call.
        run_id: RunId,
        /// The id of the finished call, as in the `call_tool` effect.
        call_id: CallId,
        /// What the tool returned, or the error it failed with.
        outcome: ToolOutcome,
        /// How long the tool ran, in milliseconds.
        duration_ms: u64,
        /// Tokens a child run spent answering an agent tool's call: they
        /// count in the parent run's totals.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// When the call finished.
        at: Timestamp,
    },
    /// A call asks the person something instead of returning a result: a
    /// tool's choice, or the question a child run waits on. The run parks
    /// on it once the rest of its batch is done.
    ToolAsked {
        /// The run that made the call.
        run_id: RunId,
        /// The call that asks.
        call_id: CallId,
        /// What it asks.
        question: Question,
        /// Tokens a child run spent so far (see `tool_finished`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Where the call stood when it asked, for an engine that stops the
        /// call at its question and makes it again once the person answered
        /// (recorded as a [`CallReport`](crate::CallReport)'s checkpoint is).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<Value>,
        /// When the question came.
        at: Timestamp,
    },
    /// The person answered a question a running call asked (an
    /// [`Elicitation`](crate::Elicitation)); the answer goes back to the call.
    ElicitationAnswered {
        /// The run whose call asked.
        run_id: RunId,
        /// The call that asked (still running).
        call_id: CallId,
        /// Which of the call's questions is answered (from 0).
        question: u32,
        /// Accept (with the form's content), decline or cancel.
        answer: crate::elicitation::ElicitationAnswer,
        /// When the person answered.
        at: Timestamp,
    },
    /// A running call used the model on its server's behalf (MCP
    /// sampling): its tokens and cost count in the run's totals.
    Sampled {
        /// The run whose call it was.
        run_id: RunId,
        /// The call the server was answering.
        call_id: CallId,
        /// The model's usage and cost.
        usage: Usage,
        /// When the model answered.
        at: Timestamp,
    },
    /// A running call reported how it is getting on: where it stands (kept
    /// for an attempt after a crash), what it is doing in words, tokens it
    /// spent elsewhere (a remote agent's).
    ToolReported {
        /// The run whose call it is.
        run_id: RunId,
        /// The call (still running).
        call_id: CallId,
        /// What it reported.
        report: crate::report::CallReport,
        /// When.
        at: Timestamp,
    },
    /// The person answered a confirmation.
    Confirm(Confirmation),
    /// End the session (cancels a run in progress).
    End {
        /// Why the session is ended, in words (repeated in the `session_ended` event).
        reason: String,
        /// When the session was ended.
        at: Timestamp,
    },
    /// Cancel the run in progress; the session goes on (the next message
    /// starts a new run).
    CancelRun {
        /// Why, in words (the run's output says it).
        reason: String,
        /// When.
        at: Timestamp,
    },
    /// Time passes (lets the core notice a time budget running out).
    Tick {
        /// The current time, checked against the running run's time budget.
        at: Timestamp,
    },
}

impl Input {
    /// The time the input carries.
    pub fn at(&self) -> Timestamp {
        match self {
            Input::StartRun(start) => start.at,
            Input::Open(open) => open.at,
            Input::Confirm(confirmation) => confirmation.at,
            Input::ModelReplied { at, .. }
            | Input::ModelFailed { at, .. }
            | Input::ToolFinished { at, .. }
            | Input::ToolAsked { at, .. }
            | Input::ElicitationAnswered { at, .. }
            | Input::Sampled { at, .. }
            | Input::ToolReported { at, .. }
            | Input::End { at, .. }
            | Input::CancelRun { at, .. }
            | Input::Tick { at } => *at,
        }
    }

    /// The input's name, for errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Input::StartRun(_) => "start_run",
            Input::Open(_) => "open",
            Input::ModelReplied { .. } => "model_replied",
            Input::ModelFailed { .. } => "model_failed",
            Input::ToolFinished { .. } => "tool_finished",
            Input::ToolAsked { .. } => "tool_asked",
            Input::ElicitationAnswered { .. } => "elicitation_answered",
            Input::Sampled { .. } => "sampled",
            Input::ToolReported { .. } => "tool_reported",
            Input::Confirm(_) => "confirm",
            Input::End { .. } => "end",
            Input::CancelRun { .. } => "cancel_run",
            Input::Tick { .. } => "tick",
        }
    }
}

/// Starts a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartRun {
    /// The caller's id for the run; without one the session numbers its runs
    /// `r1`, `r2`... (the id is in the `run_started` event and the output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// The version of the catalog the run plans with, as the engine recorded
    /// it: every input of the run is stepped with that catalog, so a replay
    /// sees the tools the run saw, whatever the servers offer later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_version: Option<String>,
    /// The agent to talk to; `None` continues with the session's current agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentId>,
    /// The new messages (at least one user message).
    pub messages: Vec<Message>,
    /// How the run plans (decided by the engine from the configuration).
    pub planner: PlannerMode,
    /// The effective policy when it differs from the agent's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<RunPolicy>,
    /// Who is asking (a user id from the caller, e.g. from its token). It is
    /// put on the blackboard as `user_id` and shown to the run's tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The tenant the caller acts for: a session's first input decides its
    /// tenant, and a run for another tenant is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// When the person wrote the message, if not when it was accepted (a
    /// message relayed later from another channel, a test with a fixed
    /// clock): what "tomorrow" in it means is counted from this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<Timestamp>,
    /// For a child session's first run: the call of the parent session it
    /// answers (its depth and budget of agent calls come from there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Parent>,
    /// Information to put on the blackboard before planning.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context: BTreeMap<String, Value>,
    /// The caller's turn id, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// The caller's labels (tenant, channel...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The caller's metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
    /// The model the run's model calls name instead of their agents' (a
    /// replay against another model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// For a replay: the tool calls of the run replayed. The run calls no
    /// tool: a call with the same tool and arguments as one of these is
    /// answered with its recorded result, any other is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Vec<crate::fork::DoneCall>>,
    /// The input guardrail that stopped the message, checked by the
    /// runtime before it was journaled (the message is then not part of the
    /// conversation, and the run ends saying why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrail: Option<crate::guardrail::GuardrailTrip>,
    /// When the input was accepted, in milliseconds since the Unix epoch (engines supply it; the core reads no clock).
    pub at: Timestamp,
}

impl StartRun {
    /// A run of one user message.
    pub fn new(text: impl Into<String>, planner: PlannerMode, at: Timestamp) -> Self {
        Self {
            run_id: None,
            catalog_version: None,
            agent: None,
            messages: vec![Message::user(text)],
            planner,
            policy: None,
            user: None,
            tenant: None,
            asked_at: None,
            parent: None,
            context: BTreeMap::new(),
            turn_id: None,
            labels: BTreeMap::new(),
            metadata: BTreeMap::new(),
            model: None,
            replay: None,
            guardrail: None,
            at,
        }
    }

    /// Sets the agent to talk to (instead of the session's current agent).
    pub fn agent(mut self, agent: impl Into<AgentId>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Sets who is asking (see [`StartRun::user`]).
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// Sets the run's id (instead of the session's next `r<n>`).
    pub fn run_id(mut self, run_id: impl Into<RunId>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }
}

/// Opens a session before its first message, so that it exists (and is
/// listed) from now on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenSession {
    /// The agent that takes the first message.
    pub agent: AgentId,
    /// Whether the caller chose the agent: the session is then pinned to it
    /// (no hub routing), as a run that names its agent is.
    #[serde(default)]
    pub named: bool,
    /// The tenant the session belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// For a fork: the conversation it starts from (its messages are added
    /// to the history, its tool calls to the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<Box<crate::fork::Fork>>,
    /// When the session was opened.
    pub at: Timestamp,
}

/// An answer to a parked tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The run parked on the call.
    pub run_id: RunId,
    /// The call being answered.
    pub call_id: CallId,
    /// The fingerprint of the arguments the person saw.
    pub fingerprint: String,
    /// Approve, deny, amend, or reject the arguments as invalid.
    pub decision: Decision,
    /// When the person answered.
    pub at: Timestamp,
}
