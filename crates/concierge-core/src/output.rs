//! What a run comes to: the [`RunOutput`] an engine hands back, its
//! [`RunStatus`], and the confidence it reports. The run builds it from its
//! facts as it ends or parks (`RunOutput::build`, in `run`).

use serde::{Deserialize, Serialize};

use crate::blackboard::ToolExecution;
use crate::id::{AgentId, RunId, SessionId};
use crate::model::Usage;
use crate::pending::{PendingChoice, PendingConfirmation};
use crate::policy::Cap;

/// The result of a run: its answer, how it ended, its tool executions,
/// confidence and usage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutput {
    /// The session the run belongs to.
    pub session_id: SessionId,
    /// The run's id (the caller's, or the session's `r<n>`).
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
    /// The choice the person is asked to make, when the run waits for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_choice: Option<PendingChoice>,
    /// The question a running call asks the person, when the run waits for
    /// an answer (MCP elicitation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_elicitation: Option<crate::elicitation::PendingElicitation>,
    /// The guardrail that stopped the run, when its status is `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrail: Option<crate::guardrail::GuardrailTrip>,
}

impl RunOutput {
    /// Whether the run answered (its status is `completed`).
    pub fn success(&self) -> bool {
        self.status == RunStatus::Completed
    }
}

/// The confidence a run reports (`docs/architecture.md`, "Confidence"): 0.9
/// for an answer with every tool call successful, 0.5 for a question or a
/// park, 0 for a failure; lower as calls fail (times `0.5 + 0.5 × successes
/// / calls`), lower again (times 0.6) when a cap cut the run short. Rounded
/// to two decimals.
pub(crate) fn confidence(status: RunStatus, executions: &[ToolExecution], cap: Option<Cap>) -> f32 {
    let base: f32 = match status {
        RunStatus::Completed => 0.9,
        RunStatus::NeedsInput
        | RunStatus::AwaitingConfirmation
        | RunStatus::AwaitingChoice
        | RunStatus::AwaitingInput => 0.5,
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Blocked => return 0.0,
    };
    let ratio = if executions.is_empty() {
        1.0
    } else {
        executions.iter().filter(|e| e.success()).count() as f32 / executions.len() as f32
    };
    let mut value = base * (0.5 + 0.5 * ratio);
    if cap.is_some() {
        value *= 0.6;
    }
    (value * 100.0).round() / 100.0
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
    /// The run is parked until the person picks one of a choice's options.
    AwaitingChoice,
    /// A running call asks the person a question (MCP elicitation); the
    /// run goes on when they answer.
    AwaitingInput,
    /// The run failed (the model could not be reached, say).
    Failed,
    /// A guardrail stopped the run; the reply says why (see
    /// [`RunOutput::guardrail`]).
    Blocked,
    /// The session was ended during the run.
    Cancelled,
}

impl RunStatus {
    /// The snake_case name (as events, the API and metrics say it).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::NeedsInput => "needs_input",
            RunStatus::AwaitingConfirmation => "awaiting_confirmation",
            RunStatus::AwaitingChoice => "awaiting_choice",
            RunStatus::AwaitingInput => "awaiting_input",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Blocked => "blocked",
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::planner_mode::PlannerMode;
    use crate::policy::RunPolicy;
    use crate::run::{NewRun, Outcome, Run};
    use crate::time::Timestamp;
    use crate::tool::{ToolError, ToolOutcome};

    fn execution(run: &str, ok: bool) -> ToolExecution {
        ToolExecution {
            run_id: run.into(),
            call_id: "call_1".into(),
            tool: "t".into(),
            arguments: json!({}),
            fingerprint: "fp".into(),
            duration_ms: 1,
            outcome: if ok {
                ToolOutcome::Ok(json!(1))
            } else {
                ToolOutcome::Error(ToolError::failed("no"))
            },
            reused_from: None,
            forked: false,
        }
    }

    #[test]
    fn confidence_follows_status_successes_and_caps() {
        let good = execution("r", true);
        let bad = execution("r", false);
        assert_eq!(confidence(RunStatus::Completed, &[], None), 0.9);
        assert_eq!(confidence(RunStatus::Completed, std::slice::from_ref(&good), None), 0.9);
        assert_eq!(
            confidence(RunStatus::Completed, &[good.clone(), bad.clone()], None),
            0.67
        );
        assert_eq!(confidence(RunStatus::Completed, std::slice::from_ref(&bad), None), 0.45);
        assert_eq!(
            confidence(RunStatus::Completed, std::slice::from_ref(&good), Some(Cap::Iterations)),
            0.54
        );
        assert_eq!(confidence(RunStatus::NeedsInput, &[], None), 0.5);
        assert_eq!(confidence(RunStatus::AwaitingConfirmation, &[], None), 0.5);
        assert_eq!(confidence(RunStatus::Failed, std::slice::from_ref(&good), None), 0.0);
        assert_eq!(confidence(RunStatus::Cancelled, &[good], None), 0.0);
    }

    #[test]
    fn an_output_holds_only_its_runs_executions() {
        let mut run = Run::new(NewRun {
            id: "r2".into(),
            catalog_version: None,
            planner: PlannerMode::Rules,
            policy: RunPolicy::default(),
            at: Timestamp(0),
            log_start: 1,
            model: None,
            replay: None,
        });
        run.set_error("it broke".into());
        let log = [execution("r1", true), execution("r2", false)];
        let output = RunOutput::build(
            Outcome {
                session_id: "s".into(),
                agent: "a".into(),
                status: RunStatus::Completed,
                reply: Some("done".into()),
                pending_confirmation: None,
                pending_choice: None,
            },
            &run,
            &log,
        );
        assert_eq!(output.run_id, "r2");
        assert_eq!(output.tool_executions, [log[1].clone()]);
        assert_eq!(output.confidence, 0.45);
        assert_eq!(output.error.as_deref(), Some("it broke"));
        assert!(output.success());
    }
}
