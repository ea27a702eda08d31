//! AG-UI's `RunAgentInput`: what a client posts to start or resume a run.
//!
//! Only `threadId`, `runId` and `messages` are required (as AG-UI 1.0
//! says); fields this server has no use for are accepted and ignored, and
//! unknown fields are allowed (the protocol grows).

use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::ground::ApiError;
use crate::ground::ids::{ID_RULE, MAX_ID_LEN, valid_id};

/// A request to run the agent of a thread (AG-UI's `RunAgentInput`).
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation: the concierge session's id. A new id starts a new session.
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,128}$")]
    pub thread_id: String,
    /// The run's id, chosen by the client; the events name it.
    #[schema(min_length = 1, max_length = 128, pattern = "[^\\s\\u0085\\u001c-\\u001f\\ufeff]")]
    pub run_id: String,
    /// The conversation so far; the last `user` message is the new one.
    pub messages: Vec<InputMessage>,
    /// The client's own tools (concierge runs only its own tools, so these are ignored).
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// The client's state (the session's blackboard is the state; this is ignored).
    #[serde(default)]
    pub state: Option<Value>,
    /// Ambient context entries (ignored).
    #[serde(default)]
    pub context: Option<Vec<Value>>,
    /// Passed through: `agent` names the agent that takes a new thread.
    #[serde(default)]
    pub forwarded_props: Option<Value>,
    /// The answers to the interrupts the thread's last run finished with.
    #[serde(default)]
    pub resume: Option<Vec<ResumeEntry>>,
    /// The protocol version the client speaks.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// The run that spawned this one (ignored).
    #[serde(default)]
    pub parent_run_id: Option<String>,
}

/// One message of `RunAgentInput.messages`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputMessage {
    /// The message's id.
    #[serde(default)]
    pub id: Option<String>,
    /// `user`, `assistant`, `system`, `developer`, `tool`, `activity` or `reasoning`.
    pub role: String,
    /// The text, or (a user message) a list of parts of which the `text` ones are read.
    #[serde(default)]
    pub content: Option<Value>,
}

/// An answer to one interrupt (`RunAgentInput.resume[]`).
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt answered.
    pub interrupt_id: String,
    /// Answered, or abandoned (which declines a confirmation).
    pub status: ResumeStatus,
    /// The answer: `{"approved": bool, "editedArgs"?: {...}}` for a
    /// confirmation, `{"option": n}` or `{"optionId": id}` for a choice.
    #[serde(default)]
    pub payload: Option<Value>,
    /// Envelope data; `fingerprint`, when present, must be the parked call's.
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// Whether an interrupt was answered or abandoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResumeStatus {
    /// The person answered.
    Resolved,
    /// The person gave no answer.
    Cancelled,
}

impl ResumeEntry {
    /// The arguments' fingerprint the client quoted, if it quoted one.
    pub fn fingerprint(&self) -> Option<String> {
        self.metadata
            .as_ref()
            .and_then(|m| m.get("fingerprint"))
            .and_then(Value::as_str)
            .map(str::to_string)
    }
}

impl RunAgentInput {
    /// Checks the ids (a 422 naming the field when one is not usable).
    pub fn check(&self) -> Result<(), ApiError> {
        check_id("threadId", &self.thread_id)?;
        if concierge::trim_blank(&self.run_id).is_empty() || self.run_id.chars().count() > MAX_ID_LEN {
            return Err(ApiError::field(
                StatusCode::UNPROCESSABLE_ENTITY,
                "runId",
                format!("runId is 1 to {MAX_ID_LEN} characters"),
            ));
        }
        Ok(())
    }

    /// The agent `forwardedProps.agent` names, if it names one.
    pub fn forwarded_agent(&self) -> Result<Option<String>, ApiError> {
        match self.forwarded_props.as_ref().and_then(|p| p.get("agent")) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(agent)) if !agent.trim().is_empty() => Ok(Some(agent.trim().to_string())),
            Some(_) => Err(ApiError::field(
                StatusCode::UNPROCESSABLE_ENTITY,
                "forwardedProps.agent",
                "forwardedProps.agent names an agent: a non-empty string",
            )),
        }
    }

    /// What the message does if the thread's run is still working
    /// (`forwardedProps.multitask`: `reject`, `enqueue` or `interrupt`).
    pub fn forwarded_multitask(&self) -> Result<Option<concierge::Multitask>, ApiError> {
        match self.forwarded_props.as_ref().and_then(|p| p.get("multitask")) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => text.parse().map(Some).map_err(|why: String| {
                ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, "forwardedProps.multitask", why)
            }),
            Some(_) => Err(ApiError::field(
                StatusCode::UNPROCESSABLE_ENTITY,
                "forwardedProps.multitask",
                "forwardedProps.multitask is one of reject, enqueue or interrupt",
            )),
        }
    }

    /// The client's user messages with an id, as (id, text), in order.
    pub fn user_messages(&self) -> Vec<(String, String)> {
        self.messages
            .iter()
            .filter(|m| m.role == "user")
            .filter_map(|m| Some((m.id.clone()?, text_of(m.content.as_ref()?)?)))
            .collect()
    }

    /// The new message: the text of the last `user` message.
    pub fn new_message(&self) -> Result<String, ApiError> {
        let Some((index, message)) = self.messages.iter().enumerate().rev().find(|(_, m)| m.role == "user") else {
            return Err(ApiError::field(
                StatusCode::UNPROCESSABLE_ENTITY,
                "messages",
                "messages has no user message; the last user message is what the agent is asked",
            ));
        };
        let field = format!("messages[{index}].content");
        let text = match &message.content {
            Some(content @ (Value::String(_) | Value::Array(_))) => text_of(content).unwrap_or_default(),
            Some(_) => {
                return Err(ApiError::field(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    field.clone(),
                    format!("{field} is a string or a list of parts"),
                ));
            }
            None => String::new(),
        };
        if concierge::trim_blank(&text).is_empty() {
            return Err(ApiError::field(
                StatusCode::UNPROCESSABLE_ENTITY,
                field.clone(),
                format!("{field} has no text; say something"),
            ));
        }
        Ok(text)
    }
}

/// A user message's text: the string, or its `text` parts joined by newlines.
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

fn check_id(field: &str, id: &str) -> Result<(), ApiError> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            field,
            format!("{field} is {ID_RULE}"),
        ))
    }
}
