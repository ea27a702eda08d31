//! What an actor's mailbox holds: the commands the engine and live calls send it.

use concierge_core::ElicitationAnswer;
use concierge_core::{CallId, Decision, Input, OpenSession, RunId, RunOutput, Session, StartRun};
use tokio::sync::oneshot;

use super::recovery::Resume;
use crate::engine::{RunSetup, RunStop, SessionFacts, Started, Unavailable};
use crate::error::Result;
use crate::tool::ChannelError;

/// A live request's wait for the person's answer.
pub(crate) type AnswerTx = oneshot::Sender<std::result::Result<ElicitationAnswer, ChannelError>>;

/// Commands an actor's mailbox holds (bounded: senders wait when it is full).
pub(crate) const MAILBOX: usize = 64;

/// What an actor is asked to do. Large payloads are boxed: a mailbox
/// reserves its slots 32 commands at a time for every session in memory,
/// so a command's size is paid there.
pub(crate) enum Command {
    Start {
        start: Box<StartRun>,
        setup: Box<RunSetup>,
        reply: oneshot::Sender<Result<Started>>,
    },
    Confirm {
        call_id: CallId,
        fingerprint: String,
        decision: Box<Decision>,
        reply: oneshot::Sender<Result<RunStop>>,
    },
    End {
        reason: String,
        /// Only the run in progress ends; the session goes on.
        run_only: bool,
        reply: oneshot::Sender<Result<Option<RunOutput>>>,
    },
    Open {
        open: Box<OpenSession>,
        reply: oneshot::Sender<Result<()>>,
    },
    Wait {
        reply: oneshot::Sender<Result<Option<RunStop>>>,
    },
    Inspect {
        reply: oneshot::Sender<Result<Option<Session>>>,
    },
    /// What a front door checks of the session, without copying it.
    Facts {
        reply: oneshot::Sender<Result<Option<SessionFacts>>>,
    },
    /// Erase the session from the store (ending its run first), then leave.
    Erase {
        reply: oneshot::Sender<Result<()>>,
    },
    /// Take the session over if its owner is gone and load it; say where
    /// its run will stop, then resume it when `resume` lets it.
    Recover {
        reply: oneshot::Sender<Option<RunStop>>,
        resume: Resume,
    },
    /// Another process asked for the session: let it go if idle.
    Release,
    /// Leave memory if idle (a run in flight keeps going).
    Shutdown {
        reply: oneshot::Sender<()>,
    },
    Input(Box<Input>),
    /// A live call asks the person (MCP elicitation).
    Ask {
        run_id: RunId,
        call_id: CallId,
        question: Box<concierge_core::Elicitation>,
        reply: AnswerTx,
    },
    /// A live call reports how it is getting on (answered once journaled).
    Report {
        run_id: RunId,
        call_id: CallId,
        report: Box<concierge_core::CallReport>,
        reply: oneshot::Sender<std::result::Result<(), crate::tool::ChannelError>>,
    },
    /// The person answers a running call's question.
    Answer {
        call_id: CallId,
        question: u32,
        answer: Box<ElicitationAnswer>,
        reply: oneshot::Sender<Result<RunStop>>,
    },
    /// A resumed run's model could not be reached: leave the run for another process.
    Stall(Unavailable),
}
