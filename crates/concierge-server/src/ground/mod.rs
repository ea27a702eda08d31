//! What every front door stands on (the HTTP API, AG-UI, the
//! OpenAI-compatible endpoint): the state their handlers share, the API's
//! error, who is calling ([`Caller`]) and in which tenant's id space, the
//! cap on runs in progress, request bodies read with the field at fault,
//! ids, and the connections the server holds. It imports nothing of the
//! front doors: they import it, and never each other.

pub mod auth;
pub mod body;
pub mod connections;
pub mod error;
pub mod ids;
pub mod limit;
pub mod scope;
pub mod sse;

use concierge::{Runtime, Session, SessionFacts};
use tokio::sync::watch;

pub use auth::{Caller, TokenError, Tokens};
pub use body::DEFAULT_BODY_LIMIT;
pub use connections::{DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, Limits};
pub use error::{ApiError, ErrorBody};
pub use ids::random_id;
pub use limit::{DEFAULT_MAX_RUNS_PER_TENANT, RunLimiter, RunPermit};

/// What the handlers of every front door share.
#[derive(Clone)]
pub struct ApiState {
    pub(crate) rt: Runtime,
    stopping: watch::Receiver<bool>,
    limiter: RunLimiter,
}

impl ApiState {
    /// The state over `rt`, whose event streams end when `stopping` turns
    /// true; runs are held to the default cap per tenant.
    pub fn new(rt: Runtime, stopping: watch::Receiver<bool>) -> Self {
        Self {
            rt,
            stopping,
            limiter: RunLimiter::default(),
        }
    }

    /// The same state, its runs held to `limiter`.
    pub fn limited(self, limiter: RunLimiter) -> Self {
        Self { limiter, ..self }
    }

    /// The runtime the API serves.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// A fresh session id: `s-` and 128 random bits, so that nobody can
    /// guess the next one.
    pub fn new_session_id(&self) -> Result<String, ApiError> {
        random_id("s")
    }

    /// A fresh run id: `run-` and 128 random bits.
    pub fn new_run_id(&self) -> Result<String, ApiError> {
        random_id("run")
    }

    /// The session `caller` names `id` (in the caller's tenant's id space),
    /// or a 404.
    pub async fn session_of(&self, caller: &Caller, id: &str) -> Result<Session, ApiError> {
        self.maybe_session_of(caller, id)
            .await?
            .ok_or_else(|| ApiError::unknown_session(id))
    }

    /// The session `caller` names `id`, `None` if it has none by this id
    /// (another tenant's session of the same name is not its, and not seen).
    pub async fn maybe_session_of(&self, caller: &Caller, id: &str) -> Result<Option<Session>, ApiError> {
        let found = self.rt.session(caller.session_id(id)).await;
        seen(caller, id, found, |s| (s.tenant(), s.parent().is_some()))
    }

    /// What a front door checks of the session `caller` names `id` (404 if
    /// it has none by this id), read without copying the session.
    pub async fn facts_of(&self, caller: &Caller, id: &str) -> Result<SessionFacts, ApiError> {
        self.maybe_facts_of(caller, id)
            .await?
            .ok_or_else(|| ApiError::unknown_session(id))
    }

    /// [`ApiState::facts_of`], `None` if the caller has no session by this id.
    pub async fn maybe_facts_of(&self, caller: &Caller, id: &str) -> Result<Option<SessionFacts>, ApiError> {
        let found = self.rt.facts(caller.session_id(id)).await;
        seen(caller, id, found, |f| (f.tenant.as_deref(), f.child))
    }

    /// A place for one more run of the caller's tenant (429 past the cap);
    /// hold it until the run stops.
    pub fn run_permit(&self, caller: &Caller) -> Result<RunPermit, ApiError> {
        self.limiter.permit(caller)
    }

    /// Turns true when the server begins to shut down (event streams end then).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.clone()
    }
}

/// What `caller` may see of a session read as `found` under its id `id`:
/// its own (by `tenant` and not a child run's, from `facts`), or nothing.
/// The id space is the tenant's; the check holds sessions made before it
/// was (and any made by other means) to the rule too.
fn seen<T>(
    caller: &Caller,
    id: &str,
    found: concierge::Result<T>,
    facts: impl Fn(&T) -> (Option<&str>, bool),
) -> Result<Option<T>, ApiError> {
    match found {
        Ok(session) => match facts(&session) {
            (tenant, false) if caller.owns(tenant) => Ok(Some(session)),
            _ => Err(ApiError::unknown_session(id)),
        },
        Err(concierge::Error::SessionNotFound(_)) => Ok(None),
        Err(error) => Err(error.into()),
    }
}
