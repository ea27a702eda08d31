//! Forks: what a new session starts from when it is forked from another at
//! one of its events — the conversation up to there, the agent that had
//! it, and the tool calls that were done (so that the fork answers the same
//! side effect from the original instead of doing it again). They are read
//! from the original's events (`record`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::{AgentId, CallId, RunId, SessionId, ToolId};
use crate::message::Message;
use crate::tool::ToolOutcome;

/// How a replay's refusal of a call the original run did not make begins.
pub const REPLAY_REFUSAL: &str = "not run: this is a replay";

/// A tool call that finished in another session (or run), and what it returned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoneCall {
    /// The run that made the call.
    pub run_id: RunId,
    /// The call's id there.
    pub call_id: CallId,
    /// The tool that ran.
    pub tool: ToolId,
    /// The arguments it ran with.
    pub arguments: Value,
    /// The fingerprint of those arguments (a call with the same tool and
    /// fingerprint is the same call).
    pub fingerprint: String,
    /// What it returned, or the error it failed with.
    pub outcome: ToolOutcome,
    /// Whether it changed something (a `data_changed` event followed it).
    #[serde(default)]
    pub changed: bool,
}

/// Where a forked session came from, as its `session_opened` event says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The session it was forked from.
    pub session: SessionId,
    /// The last event of that session it carries.
    pub seq: u64,
    /// What the fork means for the person, in words: which actions were done
    /// before the fork point and are not done again, and which the original
    /// did after it and still stand.
    pub note: String,
}

/// What a forked session starts from (the [`OpenSession::fork`](crate::OpenSession::fork)
/// of its first input), built by [`Fork::from_events`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fork {
    /// Where it comes from.
    pub origin: ForkOrigin,
    /// The agent that had the conversation at the fork point.
    pub agent: AgentId,
    /// The conversation up to the fork point (a batch of tool calls not all
    /// answered by then is left out, with its answers).
    pub messages: Vec<Message>,
    /// The tool calls that finished up to the fork point, successful or not.
    pub done: Vec<DoneCall>,
}

/// Why a session cannot be forked or replayed where asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForkError {
    /// The session has no such event.
    #[error("the conversation has no event {at}: its events go from 1 to {last}")]
    NoSuchEvent {
        /// The event asked for.
        at: u64,
        /// The session's last durable event.
        last: u64,
    },
    /// The session has no such run.
    #[error("the conversation has no run {0}; its runs are listed in its events (run_started)")]
    NoSuchRun(RunId),
    /// The run has not finished: there is nothing to compare a replay with.
    #[error("run {0} has not finished yet; replay it once it has")]
    RunUnfinished(RunId),
    /// The person wrote fewer messages than the one named.
    #[error(
        "the conversation has {} from the person, so there is no message {n} to fork before",
        if *count == 1 { "1 message".to_string() } else { format!("{count} messages") }
    )]
    NoSuchMessage {
        /// The message asked for (from 1).
        n: usize,
        /// How many the person wrote.
        count: usize,
    },
    /// No agent had the conversation by the fork point.
    #[error("nothing happened in the conversation by event {0}; fork at a later event")]
    Empty(u64),
}
