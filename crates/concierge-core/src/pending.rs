//! What a parked run waits on from the person: a call to approve
//! ([`PendingConfirmation`]) and their [`Decision`] on it, or a choice to
//! make ([`PendingChoice`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::choice::Choice;
use crate::id::{CallId, RunId, SessionId, ToolId};
use crate::tool::ToolError;

/// A tool call parked for the person's approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingConfirmation {
    /// The parked run.
    pub run_id: RunId,
    /// The parked call; a confirmation must name it.
    pub call_id: CallId,
    /// The tool the call would run.
    pub tool: ToolId,
    /// The exact arguments the tool runs with if approved.
    pub arguments: Value,
    /// Their fingerprint; an approval must quote it.
    pub fingerprint: String,
    /// The question for the person, in words: the tool's confirmation
    /// template filled in, or the arguments listed by their titles.
    #[serde(default)]
    pub message: String,
    /// The child session the call is parked in, when a child run (an agent
    /// called as a tool) asks through this session; a confirmation sent to
    /// this session with the call id and fingerprint is passed on there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
}

/// The decision on a parked call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Do not run it; the model is told it was declined.
    Deny {
        /// Why, if the person said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Not put to the person: the engine found the arguments invalid before
    /// asking, so the call fails with this error (the model sees it and may
    /// correct the call) and nobody approves a call that cannot run.
    Invalid {
        /// What is wrong with the arguments.
        error: ToolError,
    },
    /// Change the call's arguments to these. Arguments that differ from the
    /// parked ones are checked against the tool's schema and shown back to
    /// the person for a final yes (with a new fingerprint); the same
    /// arguments run the call as [`Decision::Approve`] does.
    Amend {
        /// The complete new arguments.
        arguments: Value,
    },
}

/// A choice the run waits on: what the person is asked, and where.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingChoice {
    /// The parked run.
    pub run_id: RunId,
    /// The call that asked (it runs again with the chosen id).
    pub call_id: CallId,
    /// The question and its options.
    pub choice: Choice,
    /// The child session the choice was asked in, when a child run asked it
    /// (the answer is passed on there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
}
