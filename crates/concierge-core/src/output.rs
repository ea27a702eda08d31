//! What a run comes to.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::blackboard::ToolExecution;
use crate::id::{AgentId, CallId, RunId, SessionId, ToolId};
use crate::model::Usage;
use crate::policy::Cap;

/// The result of a run (seed 001's example output, and more).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutput {
    /// The session.
    pub session_id: SessionId,
    /// The run.
    pub run_id: RunId,
    /// The agent that answered (after any handoff).
    pub agent: AgentId,
    /// How the run ended.
    pub status: RunStatus,
    /// The answer, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// How many times the planner was consulted.
    pub iterations: u32,
    /// The tool executions of this run.
    pub tool_executions: Vec<ToolExecution>,
    /// Confidence in the answer, from 0 to 1.
    pub confidence: f32,
    /// Tokens used by this run.
    pub usage: Usage,
    /// The limit that cut the run short, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<Cap>,
    /// What failed, when the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The call waiting for approval, when the run is parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_confirmation: Option<PendingConfirmation>,
}

impl RunOutput {
    /// Whether the run answered (seed 001's `success`).
    pub fn success(&self) -> bool {
        self.status == RunStatus::Completed
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The agent answered.
    Completed,
    /// The agent asked the person a question.
    NeedsInput,
    /// The run is parked until the person approves or declines a call.
    AwaitingConfirmation,
    /// The run failed (the model could not be reached, say).
    Failed,
    /// The session was ended during the run.
    Cancelled,
}

/// A tool call parked for the person's approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingConfirmation {
    /// The run.
    pub run_id: RunId,
    /// The call.
    pub call_id: CallId,
    /// The tool.
    pub tool: ToolId,
    /// The exact arguments.
    pub arguments: Value,
    /// Their fingerprint; an approval must quote it.
    pub fingerprint: String,
}
