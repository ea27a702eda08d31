//! Listing sessions: every one, a page of one tenant's, or every page of it.

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

    /// Every session `query` holds (its `limit` is the size of the pages
    /// read), the most recently active first.
    pub async fn every_session(&self, mut query: SessionQuery) -> Result<Vec<SessionSummary>> {
        let engine = self.engine_or_err()?;
        let mut all = Vec::new();
        loop {
            let page = engine.session_page(query.clone()).await?;
            let next = page.sessions.last().map(|s| s.id.clone());
            all.extend(page.sessions);
            match next {
                Some(last) if page.more => query.after = Some(last),
                _ => return Ok(all),
            }
        }
    }
}
