//! The conversation behind a request: the concierge session named by the
//! `X-Concierge-Session` header, or a new one. Every handler that touches a
//! session goes through [`resolve`].

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use concierge::core::Message;
use concierge::{AgentId, RunHandle, RunOutput, SessionId};

use super::error::OpenAiError;
use super::models::Target;
use super::request::{Role, Turn};
use crate::ground::ids::{ID_RULE, valid_id};
use crate::ground::{ApiState, Caller};

/// The header that names the session, in requests and in responses.
pub const SESSION_HEADER: &str = "x-concierge-session";

/// The header that says what a message does if the session's run is still
/// working: `reject`, `enqueue` (the default: the client waits for the
/// answer) or `interrupt`.
pub const MULTITASK_HEADER: &str = "x-concierge-multitask";

/// A request's session, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversation {
    /// The session's id (in the caller's tenant's id space).
    pub id: SessionId,
    /// What the client calls the session (the `X-Concierge-Session` it sent or gets back).
    pub local: String,
    /// Whether the session has no history yet (the request's earlier
    /// messages become its history).
    pub new: bool,
    /// What the message does if the session's run is still working.
    pub multitask: Option<concierge::Multitask>,
    /// The agent that takes the message: the model's; `None` continues
    /// with the session's current agent (for a session created through the
    /// HTTP API, the one it was opened with; for a new one the default).
    pub agent: Option<AgentId>,
}

/// The session `headers` name (created if it does not exist, with that id),
/// or a new one when they name none; the agent for `target`. Another
/// tenant's session is a 404, as one that does not exist would be to it.
pub async fn resolve(
    state: &ApiState,
    caller: &Caller,
    headers: &HeaderMap,
    target: &Target,
) -> Result<Conversation, OpenAiError> {
    let named = match headers.get(SESSION_HEADER) {
        None => None,
        Some(value) => Some(check_id(value)?),
    };
    let multitask = match headers.get(MULTITASK_HEADER) {
        None => None,
        Some(value) => Some(value.to_str().unwrap_or_default().parse().map_err(|why: String| {
            OpenAiError::invalid("X-Concierge-Multitask", format!("X-Concierge-Multitask: {why}"))
        })?),
    };
    let Some(id) = named else {
        let local = state.new_session_id()?;
        return Ok(Conversation {
            id: caller.session_id(&local),
            local,
            multitask,
            new: true,
            agent: agent_for(target, None),
        });
    };
    let new = match state.maybe_facts_of(caller, &id).await {
        Ok(Some(facts)) => facts.messages == 0,
        Ok(None) => true,
        Err(error) if error.status == StatusCode::NOT_FOUND => {
            return Err(OpenAiError::from(error)
                .param("X-Concierge-Session")
                .code("session_not_found"));
        }
        Err(error) => return Err(error.into()),
    };
    Ok(Conversation {
        id: caller.session_id(&id),
        local: id,
        multitask,
        new,
        agent: agent_for(target, None),
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
    if valid_id(id) {
        Ok(id.to_string())
    } else {
        Err(OpenAiError::invalid(
            "X-Concierge-Session",
            format!("X-Concierge-Session names a session by {ID_RULE}; leave it out to start a new session"),
        ))
    }
}

/// Starts the turn's run in the conversation's session. A new session gets
/// the client's earlier messages as its history, before the new one. The
/// run holds a place under the tenant's cap until it stops.
pub async fn start(
    state: &ApiState,
    caller: &Caller,
    conversation: &Conversation,
    turn: &Turn,
) -> Result<RunHandle, OpenAiError> {
    let permit = state
        .run_permit(caller)
        .map_err(|e| OpenAiError::from(e).code("rate_limit_exceeded"))?;
    let messages = messages(state, conversation, turn);
    let options = with_multitask(
        caller
            .options_for(conversation.id.clone())
            .run_id(state.new_run_id()?)
            .caller_waits(),
        conversation,
    );
    let handle = match &conversation.agent {
        Some(agent) => state.rt.client(agent.clone())?.start(messages, options).await,
        None => state.rt.start(messages, options).await,
    }
    .map_err(start_error)?;
    let rt = state.rt.clone();
    let session = conversation.id.clone();
    tokio::spawn(async move {
        let _ = rt.wait(session).await;
        drop(permit);
    });
    Ok(handle)
}

/// Runs the turn as [`start`] starts it and waits for its stop, in one
/// exchange with the engine (the answer of a completion that does not
/// stream).
pub async fn run(
    state: &ApiState,
    caller: &Caller,
    conversation: &Conversation,
    turn: &Turn,
) -> Result<RunOutput, OpenAiError> {
    let permit = state
        .run_permit(caller)
        .map_err(|e| OpenAiError::from(e).code("rate_limit_exceeded"))?;
    let messages = messages(state, conversation, turn);
    let options = with_multitask(
        caller.options_for(conversation.id.clone()).run_id(state.new_run_id()?),
        conversation,
    );
    let output = match &conversation.agent {
        Some(agent) => state.rt.client(agent.clone())?.run(messages, options).await,
        None => state.rt.send(messages, options).await,
    }
    .map_err(start_error);
    drop(permit);
    output
}

/// `options` with the policy the request asked for, if it asked for one.
fn with_multitask(options: concierge::RunOptions, conversation: &Conversation) -> concierge::RunOptions {
    match conversation.multitask {
        Some(policy) => options.multitask(policy),
        None => options,
    }
}

/// A start's error, naming `messages` where the message was refused.
fn start_error(error: concierge::Error) -> OpenAiError {
    match error {
        concierge::Error::RunStartFailed(_) | concierge::Error::MessageTooLarge { .. } => {
            OpenAiError::from(error).param("messages")
        }
        other => other.into(),
    }
}

/// The turn's messages: a new session gets the client's earlier messages as
/// its history, before the new one.
fn messages(state: &ApiState, conversation: &Conversation, turn: &Turn) -> Vec<Message> {
    let mut messages = Vec::new();
    if conversation.new {
        let speaker = conversation
            .agent
            .clone()
            .or_else(|| state.rt.catalog().default_agent())
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
    messages
}
