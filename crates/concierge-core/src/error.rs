//! Why the core refused an input.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::id::{AgentId, CallId, RunId};
use crate::phase::{InvalidTransition, Phase};

/// An input the session could not accept. The session is left exactly as it
/// was, so the engine must not journal the input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "refused", rename_all = "snake_case")]
pub enum StepError {
    /// The session was ended; start a new session.
    SessionEnded,
    /// A run is in progress; wait for it, answer its confirmation, or end the session.
    RunInProgress {
        /// The run in progress.
        run_id: RunId,
        /// The phase that run is in.
        phase: Phase,
    },
    /// The input names a run that is not in progress (it may have finished).
    NoSuchRun {
        /// The run id the input named.
        run_id: RunId,
    },
    /// The input does not fit what the run is waiting for (a late or duplicate
    /// result, for instance); it can be dropped.
    Unexpected {
        /// The input's name, as [`Input::name`](crate::Input::name) gives it.
        input: String,
        /// What the run waits for.
        expected: String,
    },
    /// The named agent is not in the catalog.
    UnknownAgent {
        /// The agent named.
        agent: AgentId,
        /// The agents that exist.
        known: Vec<AgentId>,
    },
    /// A run needs at least one user message.
    NoUserMessage,
    /// The run cannot plan: rules were asked for but the agent has none.
    NoPlanner {
        /// The agent that has no rules.
        agent: AgentId,
    },
    /// The run is not waiting for a confirmation.
    NotAwaitingConfirmation,
    /// A confirmation named another call, or quoted the wrong fingerprint.
    ConfirmationMismatch {
        /// The call that is parked.
        expected_call: CallId,
        /// What did not match.
        reason: String,
    },
    /// Changed arguments for a parked call do not fit its tool's schema.
    AmendmentRefused {
        /// What is wrong with them, in words.
        problem: String,
    },
    /// A transition outside the table was attempted (a bug in a planner or in the core).
    InvalidTransition(InvalidTransition),
    /// Nothing to do for this input (a tick before any deadline).
    Idle,
    /// The session belongs to another tenant (callers show it as a session
    /// that does not exist).
    OtherTenant,
    /// The session was opened or has run already: it cannot be opened again.
    AlreadyOpen,
    /// A run of the session had this id already: a run's id names one run.
    RunIdTaken {
        /// The id asked for.
        run_id: RunId,
    },
    /// No running call waits for an answer to that question (it was
    /// answered already, or the call finished).
    NoSuchQuestion {
        /// The call the answer named.
        call_id: CallId,
    },
    /// An answer to a call's question does not fit what was asked.
    AnswerRefused {
        /// What is wrong with it, naming the field.
        problem: String,
    },
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepError::SessionEnded => write!(f, "the session has ended; start a new session"),
            StepError::OtherTenant => write!(f, "the session belongs to another tenant; use another session id"),
            StepError::AlreadyOpen => write!(f, "the session exists already; choose another session id"),
            StepError::RunIdTaken { run_id } => write!(
                f,
                "the session had a run {run_id} already; give the new run another id, or leave it out"
            ),
            StepError::RunInProgress { run_id, phase } => write!(
                f,
                "run {run_id} is in progress ({phase}); wait for it, answer its confirmation, or end the session"
            ),
            StepError::NoSuchRun { run_id } => write!(f, "run {run_id} is not in progress in this session"),
            StepError::Unexpected { input, expected } => {
                write!(f, "unexpected {input}: the run is waiting for {expected}")
            }
            StepError::UnknownAgent { agent, known } => {
                write!(f, "unknown agent \"{agent}\"; known agents: ")?;
                write_list(f, known)
            }
            StepError::NoUserMessage => write!(f, "a run needs at least one user message"),
            StepError::NoPlanner { agent } => write!(
                f,
                "agent {agent} has no rules and no model is configured; configure a model (e.g. --model openai:<name>)"
            ),
            StepError::NotAwaitingConfirmation => write!(f, "the run is not waiting for a confirmation"),
            StepError::ConfirmationMismatch { expected_call, reason } => {
                write!(
                    f,
                    "confirmation rejected: {reason} (the parked call is {expected_call})"
                )
            }
            StepError::AmendmentRefused { problem } => write!(
                f,
                "the changed arguments were not accepted: {problem}; send arguments that fit the tool"
            ),
            StepError::InvalidTransition(t) => t.fmt(f),
            StepError::Idle => write!(f, "nothing to do"),
            StepError::NoSuchQuestion { call_id } => write!(
                f,
                "no question of call {call_id} is waiting for an answer (it was answered already, or the call \
                 finished); read the session's state for the open question"
            ),
            StepError::AnswerRefused { problem } => {
                write!(
                    f,
                    "the answer was not accepted: {problem}; answer again with a value that fits"
                )
            }
        }
    }
}

impl std::error::Error for StepError {}

impl From<InvalidTransition> for StepError {
    fn from(value: InvalidTransition) -> Self {
        StepError::InvalidTransition(value)
    }
}

pub(crate) fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    if items.is_empty() {
        return f.write_str("(none)");
    }
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}
