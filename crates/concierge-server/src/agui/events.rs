//! AG-UI's events as they go on the wire: one JSON object per event, its
//! `type` in SCREAMING_SNAKE_CASE and its fields in camelCase, each sent as
//! one Server-Sent Event `data:` line (AG-UI 1.0, `@ag-ui/core` 1.0.0).
//!
//! This module is the encoder: nothing else in concierge writes AG-UI JSON.

use serde::Serialize;
use serde_json::Value;

/// The AG-UI protocol version this server speaks (`RUN_STARTED.protocolVersion`).
pub const PROTOCOL_VERSION: &str = "1.0";

/// One AG-UI event.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE", rename_all_fields = "camelCase")]
pub enum AguiEvent {
    /// Opens the run.
    RunStarted {
        /// The thread (the concierge session).
        thread_id: String,
        /// The run, as the client named it.
        run_id: String,
        /// The protocol version the server speaks.
        protocol_version: &'static str,
    },
    /// Closes a run that did not fail: completed, or paused on interrupts.
    RunFinished {
        /// The thread.
        thread_id: String,
        /// The run.
        run_id: String,
        /// The run's answer, when it completed with one.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// Why the run ended.
        outcome: RunOutcome,
        /// Tokens the run's model calls used, one entry (concierge sums them).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        usage: Vec<TokenUsage>,
    },
    /// Ends a run that failed, or refuses one that could not start.
    RunError {
        /// What went wrong, in a sentence.
        message: String,
        /// A machine-readable code (concierge's: see [`ErrorCode`]).
        code: ErrorCode,
        /// Extra information: the open interrupts when a thread waits for an answer.
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    /// A named step opens (concierge's run phases).
    StepStarted {
        /// The step's name.
        step_name: String,
        /// The subagent run the step belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// A named step closes.
    StepFinished {
        /// The step's name.
        step_name: String,
        /// The subagent run the step belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// A text message opens.
    TextMessageStart {
        /// The message's id.
        message_id: String,
        /// Always `assistant` here.
        role: &'static str,
        /// The agent that speaks.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The subagent run the message belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// Text of an open message.
    TextMessageContent {
        /// The message's id.
        message_id: String,
        /// The text since the previous content event.
        delta: String,
        /// The subagent run the message belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// A text message closes.
    TextMessageEnd {
        /// The message's id.
        message_id: String,
        /// The subagent run the message belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// A tool call opens.
    ToolCallStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_call_name: String,
        /// The assistant message that made the call, when one did.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<String>,
        /// The subagent run the call belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// The call's arguments (JSON text).
    ToolCallArgs {
        /// The call's id.
        tool_call_id: String,
        /// The arguments as JSON text (all of them: concierge has them whole).
        delta: String,
        /// The subagent run the call belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// A tool call's request is complete.
    ToolCallEnd {
        /// The call's id.
        tool_call_id: String,
        /// The subagent run the call belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// A tool call's result.
    ToolCallResult {
        /// The id of the tool message the result becomes.
        message_id: String,
        /// The call's id.
        tool_call_id: String,
        /// The result as text (an error as `{"error": ...}`).
        content: String,
        /// Always `tool`.
        role: &'static str,
        /// The subagent run the call belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
    /// The whole state: the session's blackboard.
    StateSnapshot {
        /// The blackboard as JSON.
        snapshot: Value,
    },
    /// The state's changes as a JSON Patch (RFC 6902).
    StateDelta {
        /// The patch's operations.
        delta: json_patch::Patch,
    },
    /// The whole conversation.
    MessagesSnapshot {
        /// The session's messages in AG-UI's form.
        messages: Vec<Value>,
    },
    /// An agent called as a tool starts its run inside this one.
    SubagentStarted {
        /// This invocation's id (the child session's id).
        subagent_run_id: String,
        /// The agent.
        name: String,
        /// The tool call that started it.
        parent_tool_call_id: String,
        /// The subagent whose call started it, when a subagent called it.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_subagent_run_id: Option<String>,
    },
    /// A subagent finished, or stopped to wait for the person.
    SubagentFinished {
        /// The invocation.
        subagent_run_id: String,
        /// Its answer, when it has one.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// Success, or suspended on interrupts.
        outcome: SubagentOutcome,
    },
    /// A subagent failed without ending the run.
    SubagentError {
        /// The invocation.
        subagent_run_id: String,
        /// What went wrong.
        message: String,
    },
    /// A concierge event with no AG-UI equivalent, named by its kind.
    Custom {
        /// The concierge event kind (`usage`, `agent_changed`, `data_changed`...).
        name: String,
        /// The concierge event as JSON.
        value: Value,
        /// The subagent run the event belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_run_id: Option<String>,
    },
}

/// How a run ended (`RUN_FINISHED.outcome`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunOutcome {
    /// The run completed.
    Success,
    /// The run waits for the answers to these interrupts.
    Interrupt {
        /// What the run waits for (at least one).
        interrupts: Vec<Interrupt>,
    },
    /// The session was ended during the run.
    Cancelled,
}

/// One interrupt as it goes on the wire (`RUN_FINISHED.outcome.interrupts[]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// The id a resume answers.
    pub id: String,
    /// `tool_call` for a confirmation (it is bound to the parked call),
    /// `input_required` for a choice; `metadata.kind` says which in
    /// concierge's words (`confirmation` or `choice`).
    pub reason: &'static str,
    /// The sentence the run says: the confirmation question or the choice's question.
    pub message: String,
    /// The AG-UI id of the parked tool call.
    pub tool_call_id: String,
    /// The answer expected, as a JSON Schema.
    pub response_schema: Value,
    /// When the interrupt can no longer be answered (ISO 8601, UTC).
    pub expires_at: String,
    /// concierge's details: `kind`, the call's id and fingerprint, the tool and
    /// arguments of a confirmation, the numbered options of a choice.
    pub metadata: Value,
    /// The subagent run that raised it, when an agent called as a tool did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_run_id: Option<String>,
}

/// How a subagent ended (`SUBAGENT_FINISHED.outcome`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum SubagentOutcome {
    /// It answered.
    Success,
    /// It waits for the person: these interrupts are its own.
    Suspended {
        /// The ids of the interrupts it raised.
        interrupt_ids: Vec<String>,
    },
}

/// Token counts of a run (`RUN_FINISHED.usage[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Reply tokens.
    pub output_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

/// Why concierge refused or ended a run with `RUN_ERROR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The run failed.
    RunFailed,
    /// The thread waits for answers to interrupts and the input has no resume.
    InterruptPending,
    /// A resume names an interrupt this server did not raise, or one of another thread.
    UnknownInterrupt,
    /// A resume answers an interrupt that was answered already.
    InterruptAnswered,
    /// A resume came after the interrupt's expiry.
    InterruptExpired,
    /// A resume does not match the parked call (its id or its arguments' fingerprint).
    InterruptMismatch,
    /// A resume leaves an open interrupt unanswered, or its answer names no option.
    ResumeIncomplete,
    /// A resume on a thread that waits for nothing.
    NothingToResume,
    /// The runtime refused the answer (edited arguments that do not fit the
    /// tool, say); the call still waits, under a new interrupt.
    AnswerRefused,
    /// The event stream broke.
    StreamFailed,
    /// The input is well formed but gives nothing to run: no user message,
    /// a message with no text, an agent that does not exist (`metadata.field`
    /// names the field).
    InvalidInput,
}

impl AguiEvent {
    /// The event as one line of JSON (the `data:` of its Server-Sent Event).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|error| {
            serde_json::json!({
                "type": "RUN_ERROR",
                "message": format!("an event could not be written: {error}"),
                "code": ErrorCode::StreamFailed,
            })
            .to_string()
        })
    }

    /// A `RUN_ERROR` with this code and sentence.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        AguiEvent::RunError {
            message: message.into(),
            code,
            metadata: None,
        }
    }

    /// Whether the event ends the run (`RUN_FINISHED` or `RUN_ERROR`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, AguiEvent::RunFinished { .. } | AguiEvent::RunError { .. })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_are_written_as_ag_ui_spells_them() {
        let start = AguiEvent::ToolCallStart {
            tool_call_id: "call_1".into(),
            tool_call_name: "add".into(),
            parent_message_id: None,
            subagent_run_id: Some("s:call_0".into()),
        };
        assert_eq!(
            serde_json::to_value(&start).unwrap_or_default(),
            json!({"type": "TOOL_CALL_START", "toolCallId": "call_1", "toolCallName": "add", "subagentRunId": "s:call_0"})
        );
        let finished = AguiEvent::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: RunOutcome::Success,
            usage: Vec::new(),
        };
        assert_eq!(
            serde_json::to_value(&finished).unwrap_or_default(),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}})
        );
        let suspended = SubagentOutcome::Suspended {
            interrupt_ids: vec!["i".into()],
        };
        assert_eq!(
            serde_json::to_value(&suspended).unwrap_or_default(),
            json!({"type": "suspended", "interruptIds": ["i"]})
        );
        let error = AguiEvent::error(ErrorCode::InterruptExpired, "too late");
        assert_eq!(
            serde_json::to_value(&error).unwrap_or_default(),
            json!({"type": "RUN_ERROR", "message": "too late", "code": "INTERRUPT_EXPIRED"})
        );
    }
}
