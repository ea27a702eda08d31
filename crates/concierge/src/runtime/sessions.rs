//! Listing sessions: every one, a page of one tenant's, or all of one
//! tenant's; and which ids a new session may have.

use concierge_core::SessionId;

use super::Runtime;
use crate::engine::{Engine, SessionPage, SessionQuery, SessionSummary};
use crate::error::{Error, Result};

impl Runtime {
    /// Every session the engine knows.
    pub async fn sessions(&self) -> Result<Vec<SessionSummary>> {
        self.engine_or_err()?.sessions().await
    }

    /// A page of sessions, the most recently active first: one tenant's
    /// (read through its index on the embedded engine), after the last one
    /// of the previous page. An `after` that names no session in scope is
    /// [`Error::SessionNotFound`].
    pub async fn session_page(&self, query: SessionQuery) -> Result<SessionPage> {
        self.engine_or_err()?.session_page(query).await
    }

    /// Every session `query` holds, the most recently active first (its
    /// cursor and limit aside).
    pub async fn every_session(&self, query: SessionQuery) -> Result<Vec<SessionSummary>> {
        self.engine_or_err()?.sessions_of(query).await
    }
}

/// Refuses a session id a run or an open may not give: empty, or, for a
/// session that does not exist yet, one that reads as a child run's.
pub(super) async fn check_session_id(engine: &dyn Engine, session: &SessionId) -> Result<()> {
    if session.as_str().trim().is_empty() {
        return Err(Error::MissingSessionId);
    }
    match SessionId::check_new(session.as_str()) {
        // One made before ids were checked, or a child run's own, goes on.
        Err(reason) if engine.session(session.clone()).await?.is_none() => Err(Error::InvalidSessionId(reason)),
        _ => Ok(()),
    }
}
