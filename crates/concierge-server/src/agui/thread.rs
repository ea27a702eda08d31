//! An AG-UI thread is a concierge session. This is the one place the
//! endpoint resolves a thread id to its session (and where a caller's right
//! to the session is to be checked).

use axum::http::StatusCode;
use concierge::{AgentId, Session, SessionId};

use crate::ground::{ApiError, ApiState, Caller};

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
    /// A session the engine has.
    Existing(Box<Session>),
}

impl Thread {
    /// The session's id.
    pub fn id(&self) -> &SessionId {
        match self {
            Thread::New { id, .. } => id,
            Thread::Existing(session) => session.id(),
        }
    }
}

/// The session of thread `thread_id`. `agent` (from `forwardedProps.agent`
/// or the `agent` query parameter; `field` names where it came from) picks
/// the agent of a new thread; an existing session keeps its own.
pub async fn resolve(
    state: &ApiState,
    caller: &Caller,
    thread_id: &str,
    agent: Option<(String, &'static str)>,
) -> Result<Thread, ApiError> {
    let id = caller.session_id(thread_id);
    let named = match agent {
        Some((agent, field)) => Some(known_agent(state, &agent, field)?),
        None => None,
    };
    // Another tenant's thread is, to this caller, no thread at all (a 404).
    Ok(match state.maybe_session_of(caller, thread_id).await? {
        Some(session) => Thread::Existing(Box::new(session)),
        None => Thread::New { id, agent: named },
    })
}

fn known_agent(state: &ApiState, agent: &str, field: &'static str) -> Result<AgentId, ApiError> {
    let id = AgentId::new(agent);
    let catalog = state.runtime().catalog();
    if catalog.agent(&id).is_some() {
        return Ok(id);
    }
    let known: Vec<String> = catalog.agent_ids().iter().map(ToString::to_string).collect();
    Err(ApiError::field(
        StatusCode::UNPROCESSABLE_ENTITY,
        field,
        format!("there is no agent {agent:?}; agents: {}", known.join(", ")),
    ))
}
