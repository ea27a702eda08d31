//! What the engine and the session workflow send each other (JSON payloads).

use std::collections::BTreeMap;

use concierge_core::{
    AgentId, CallId, Decision, ElicitationAnswer, Event, Forward, OpenSession, PlannerMode, RunId, RunOutput,
    RunPolicy, Session, SessionId, StartRun, StepError, Timestamp,
};
use serde::{Deserialize, Serialize};

use crate::config::ModelCalls;

/// The session workflow's input: which session it holds, and what an
/// earlier run of the workflow carried over when it continued as new.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Begin {
    /// The session.
    pub session: SessionId,
    /// The state carried over (`None` for a new session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<Box<Carried>>,
    /// For a child session started by a parent's agent call (a child
    /// workflow): its first run, and where it reports the run's stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<Box<ChildStart>>,
    /// How the session calls its model (chosen by the client that started
    /// it; a child and a continued run keep it).
    #[serde(default, skip_serializing_if = "is_activity")]
    pub model_calls: ModelCalls,
    /// The agents of the client that created the session (empty for a
    /// child or a continued run, which a worker starts): a worker whose
    /// catalog lacks one of them serves another project, and refuses the
    /// session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentId>,
}

fn is_activity(how: &ModelCalls) -> bool {
    *how == ModelCalls::Activity
}

/// How a parent session's workflow starts a child's: the run, and the
/// parent to report its stop to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChildStart {
    /// The child's first run.
    pub request: StartRequest,
    /// Where its stop is reported.
    pub report_to: ReportTo,
}

/// The parent workflow a child reports its next stop to, and the agent call
/// the report answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportTo {
    /// The parent session's workflow.
    pub workflow_id: String,
    /// The parent's agent call (its idempotency key).
    pub key: String,
}

/// The `forward` signal: the person's answer to a question a child asked,
/// passed on by the parent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ForwardRequest {
    /// Where the child reports the stop the answer leads to.
    pub report_to: ReportTo,
    /// The answer, and the child's call it is about.
    pub forward: Forward,
    /// Who answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The parent session's tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// The `child_stopped` signal: a child's run stopped (or could not start).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChildReport {
    /// The parent's agent call it answers (its idempotency key).
    pub key: String,
    /// How the child's run stopped.
    pub outcome: ChildOutcome,
}

/// How a child's run stopped.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildOutcome {
    /// It stopped: finished, or parked for the person.
    Stopped(Box<RunOutput>),
    /// It could not run, and why.
    Failed(String),
}

/// What a session workflow carries into its next run when it continues as
/// new (at an idle point: no effect in flight, no run under way).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Carried {
    /// The session.
    pub session: Option<Session>,
    /// Its latest events (a bounded tail).
    pub events: Vec<Event>,
    /// How many times a run stopped so far.
    pub stops: u64,
    /// The last stops' outputs, by number.
    pub outputs: Vec<(u64, RunOutput)>,
    /// When its last input was accepted.
    pub updated_at: Timestamp,
    /// How many times the workflow continued as new before.
    pub continued: u32,
    /// The session's catalog version and what rebuilds it (`Catalogs::record`),
    /// for its parked run in a worker that has not seen that version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<(String, String)>,
    /// Per agent, how its runs plan (a child's later runs, started by a
    /// forwarded answer, plan as its first did).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plans: BTreeMap<AgentId, Plan>,
}

/// How a run of an agent plans, as the runtime decided for each agent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// The planner.
    pub planner: PlannerMode,
    /// The policy, when it is not the agent's own.
    pub policy: Option<RunPolicy>,
}

/// The `start_run` update.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StartRequest {
    /// The session (an update may arrive before the workflow's body begins).
    pub session: SessionId,
    /// The run's first input.
    pub start: StartRun,
    /// The agent a new session starts with.
    pub first_agent: Option<AgentId>,
    /// Per agent, how its runs plan (applied for the agent that takes the run).
    pub plans: BTreeMap<AgentId, Plan>,
    /// What rebuilds the run's catalog version (`Catalogs::record`) in a
    /// worker that has not seen it: one whose MCP servers now offer other
    /// tools would otherwise replay the run with its own and diverge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    /// Whether the update answers at the run's stop, with its output (one
    /// update per turn), rather than once the run has started.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait: bool,
}

/// What `start_run` answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StartReply {
    /// The run's id.
    pub run_id: RunId,
    /// The seq of its first event.
    pub first_seq: u64,
    /// The number of the stop the caller waits for.
    pub stop: u64,
    /// The run's output at that stop, when the start asked to wait for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Box<RunOutput>>,
}

/// The `confirm` update.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConfirmRequest {
    /// The parked call.
    pub call_id: CallId,
    /// Its arguments' fingerprint.
    pub fingerprint: String,
    /// The person's answer.
    pub decision: Decision,
    /// When it was given.
    pub at: Timestamp,
}

/// The `answer` update: the person's answer to a question a running call
/// asked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnswerRequest {
    /// The call that asked.
    pub call_id: CallId,
    /// Which of its questions (from 0).
    pub question: u32,
    /// The answer.
    pub answer: ElicitationAnswer,
    /// When it was given.
    pub at: Timestamp,
}

/// The `end` update.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EndRequest {
    /// Why.
    pub reason: String,
    /// Only the run in progress ends; the session goes on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_only: bool,
    /// When.
    pub at: Timestamp,
}

/// The `open` update.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpenRequest {
    /// The session.
    pub session: SessionId,
    /// The session's agent and tenant.
    pub open: OpenSession,
}

/// Where the session's run in progress will stop (the `current` query).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Current {
    /// No run is in progress.
    Idle,
    /// The run waits for the person: this is its output.
    Parked(Box<RunOutput>),
    /// The run is under way; it stops at this stop number.
    At(u64),
}

/// The `events` query's answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventsPage {
    /// Events after the one asked for, oldest first.
    pub events: Vec<Event>,
    /// Whether the session has ended (no event follows the last one).
    pub ended: bool,
}

/// A session as the `summary` query describes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// The session's id.
    pub id: SessionId,
    /// Its agent now.
    pub agent: AgentId,
    /// Whether a run is under way.
    pub live: bool,
    /// When its last input was accepted.
    pub updated_at: Timestamp,
    /// Its tenant.
    pub tenant: Option<String>,
}

/// An update's answer: done, or refused (the session unchanged).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Reply<T> {
    /// Accepted.
    Done(T),
    /// Refused.
    Refused(Refusal),
}

/// Why the session workflow refused an input (the session unchanged).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Refusal {
    /// The core refused it.
    Step(StepError),
    /// The worker that took the session serves another catalog (another
    /// project's, on the same task queues): the session was not started.
    WorkerCatalogMismatch {
        /// The task queue the worker polls.
        queue: String,
        /// The client's agents the worker does not have.
        missing: Vec<AgentId>,
        /// The worker's agents.
        theirs: Vec<AgentId>,
    },
    /// The session does not exist.
    NoSession {
        /// The session.
        session: SessionId,
    },
    /// Another refusal, as its sentence.
    Other {
        /// What the workflow said.
        message: String,
    },
}

impl From<StepError> for Refusal {
    fn from(error: StepError) -> Self {
        Self::Step(error)
    }
}

impl From<Refusal> for concierge::Error {
    fn from(refusal: Refusal) -> Self {
        use concierge::Error;
        match refusal {
            // A refusal that is no caller's mistake (a bug in a planner or in
            // the core) says the run could not start.
            Refusal::Step(step @ (StepError::Unexpected { .. } | StepError::InvalidTransition(_))) => {
                Error::RunStartFailed(step.to_string())
            }
            Refusal::Step(step) => Error::Rejected(step),
            Refusal::WorkerCatalogMismatch { queue, missing, theirs } => {
                let list = |agents: Vec<AgentId>| agents.iter().map(AgentId::as_str).collect::<Vec<_>>().join(", ");
                Error::WorkerCatalogMismatch {
                    queue,
                    missing: list(missing),
                    theirs: list(theirs),
                }
            }
            Refusal::NoSession { session } => Error::SessionNotFound(session),
            Refusal::Other { message } => Error::RunStartFailed(message),
        }
    }
}

/// The session snapshot query's answer (boxed: a session is large).
pub type Snapshot = Option<Box<Session>>;
