//! Listing sessions: every one, a page of one tenant's, or all of one tenant's.

use super::Runtime;
use crate::engine::{SessionPage, SessionQuery, SessionSummary};
use crate::error::Result;

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
