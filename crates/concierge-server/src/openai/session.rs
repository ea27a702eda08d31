//! The conversation behind a request: the concierge session named by the
//! `X-Concierge-Session` header, or a new one. Every handler that touches a
//! session goes through [`resolve`].

use axum::http::{HeaderMap, HeaderValue};
use concierge::core::Message;
use concierge::{AgentId, RunHandle, RunOptions, SessionId};

use super::error::OpenAiError;
use super::models::Target;
use super::request::{Role, Turn};
use crate::http::ApiState;

/// The header that names the session, in requests and in responses.
pub const SESSION_HEADER: &str = "x-concierge-session";

/// The longest session id a client may choose.
const MAX_ID_LEN: usize = 128;

/// A request's session, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversation {
    /// The session's id.
    pub id: SessionId,
    /// Whether the session has no history yet (the request's earlier
    /// messages become its history).
    pub new: bool,
    /// The agent that takes the message: the model's, or for `concierge`
    /// the one a session created through the HTTP API was opened with;
    /// `None` continues with the session's current agent (the default one
    /// for a new session).
    pub agent: Option<AgentId>,
    /// Whether the session was created through the HTTP API with no message yet.
    opened: bool,
}

/// The session `headers` name (created if it does not exist, with that id),
/// or a new one when they name none; the agent for `target`.
pub async fn resolve(state: &ApiState, headers: &HeaderMap, target: &Target) -> Result<Conversation, OpenAiError> {
    let named = match headers.get(SESSION_HEADER) {
        None => None,
        Some(value) => Some(check_id(value)?),
    };
    let Some(id) = named else {
        return Ok(Conversation {
            id: SessionId::new(state.new_session_id()),
            new: true,
            agent: agent_for(target, None),
            opened: false,
        });
    };
    let stored = match state.rt.session(id.as_str()).await {
        Ok(_) => true,
        Err(concierge::Error::SessionNotFound(_)) => false,
        Err(error) => return Err(error.into()),
    };
    let opened = if stored { None } else { state.opened_agent(&id) };
    Ok(Conversation {
        id: SessionId::new(id),
        new: !stored,
        agent: agent_for(target, opened.clone().flatten()),
        opened: opened.is_some(),
    })
}

fn agent_for(target: &Target, opened_with: Option<AgentId>) -> Option<AgentId> {
    match target {
        Target::Agent(agent) => Some(agent.clone()),
        Target::Default => opened_with,
    }
}

fn check_id(value: &HeaderValue) -> Result<String, OpenAiError> {
    let id = value.to_str().unwrap_or_default().trim();
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(id.to_string())
    } else {
        Err(OpenAiError::invalid(
            "X-Concierge-Session",
            format!(
                "X-Concierge-Session names a session by 1 to {MAX_ID_LEN} letters, digits, '-', '_' or '.'; leave it out to start a new session"
            ),
        ))
    }
}

/// Starts the turn's run in the conversation's session. A new session gets
/// the client's earlier messages as its history, before the new one.
pub async fn start(state: &ApiState, conversation: &Conversation, turn: &Turn) -> Result<RunHandle, OpenAiError> {
    let mut messages = Vec::new();
    if conversation.new {
        let speaker = conversation
            .agent
            .clone()
            .or_else(|| state.rt.default_agent())
            .unwrap_or_else(|| AgentId::new(super::models::DEFAULT_MODEL));
        for (role, content) in &turn.earlier {
            messages.push(match role {
                Role::Assistant => Message::Assistant {
                    agent: speaker.clone(),
                    content: content.clone(),
                    tool_calls: Vec::new(),
                },
                _ => Message::user(content.clone()),
            });
        }
    }
    messages.push(Message::user(turn.text.clone()));
    let options = RunOptions::new().session_id(conversation.id.clone());
    let handle = match &conversation.agent {
        Some(agent) => state.rt.client(agent.clone())?.start(messages, options).await,
        None => state.rt.start(messages, options).await,
    }
    .map_err(|error| match error {
        concierge::Error::RunStartFailed(_) => OpenAiError::from(error).param("messages"),
        other => other.into(),
    })?;
    if conversation.opened {
        state.forget_opened(conversation.id.as_str());
    }
    Ok(handle)
}
