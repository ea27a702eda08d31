//! An AG-UI thread is a concierge session. This is the one place the
//! endpoint resolves a thread id to its session (and where a caller's right
//! to the session is to be checked).

use axum::http::StatusCode;
use concierge::{AgentId, Session, SessionId};

use crate::http::{ApiError, ApiState};

/// The session behind a thread.
#[derive(Debug)]
pub enum Thread {
    /// No session has this id yet: the run starts one, with `agent` (the
    /// default agent, the hub in multi mode, when none is named).
    New {
        /// The session id to create.
        id: SessionId,
        /// The agent that takes the first message.
        agent: Option<AgentId>,
    },
    /// A session created through the HTTP API that has had no message yet.
    Opened {
        /// The session's id.
        id: SessionId,
        /// The agent it was created with (or the named one, if it had none).
        agent: Option<AgentId>,
    },
    /// A session the engine has.
    Existing(Box<Session>),
}

impl Thread {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        match self {
            Thread::New { id, .. } | Thread::Opened { id, .. } => id,
            Thread::Existing(session) => session.id(),
        }
    }
}

/// The session of thread `thread_id`. `agent` (from `forwardedProps.agent`
/// or the `agent` query parameter; `field` names where it came from) picks
/// the agent of a new thread; an existing session keeps its own.
pub async fn resolve(
    state: &ApiState,
    thread_id: &str,
    agent: Option<(String, &'static str)>,
) -> Result<Thread, ApiError> {
    let id = SessionId::new(thread_id);
    let named = match agent {
        Some((agent, field)) => Some(known_agent(state, &agent, field)?),
        None => None,
    };
    match state.runtime().session(id.clone()).await {
        Ok(session) => Ok(Thread::Existing(Box::new(session))),
        Err(concierge::Error::SessionNotFound(_)) => match state.opened_agent(thread_id) {
            Some(opened) => Ok(Thread::Opened {
                id,
                agent: opened.or(named),
            }),
            None => Ok(Thread::New { id, agent: named }),
        },
        Err(error) => Err(error.into()),
    }
}

fn known_agent(state: &ApiState, agent: &str, field: &'static str) -> Result<AgentId, ApiError> {
    let id = AgentId::new(agent);
    if state.runtime().agent(id.clone()).is_some() {
        return Ok(id);
    }
    let known: Vec<String> = state.runtime().agents().iter().map(|a| a.id.to_string()).collect();
    Err(ApiError::field(
        StatusCode::UNPROCESSABLE_ENTITY,
        field,
        format!("there is no agent {agent:?}; agents: {}", known.join(", ")),
    ))
}
