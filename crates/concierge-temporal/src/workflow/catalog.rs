//! Which catalog a session's runs use (one this worker has not seen is
//! rebuilt from its recording), and the refusal of a worker that serves
//! another catalog than the client that created the session.

use std::sync::Arc;

use concierge_core::{AgentId, Catalog};

use super::SessionWorkflow;
use crate::wire::Refusal;

impl SessionWorkflow {
    /// Rebuilds catalog `version` from its recording when this worker has
    /// not seen it (its runtime's MCP servers may offer other tools now):
    /// the run replays and goes on with the tools it saw.
    pub(super) fn know_catalog(&self, version: &str, recorded: &str) {
        if self.catalogs.get(Some(version)).is_none()
            && let Err(error) = self.catalogs.restore(version, recorded)
        {
            tracing::warn!(%error, "a run's catalog version cannot be rebuilt; it goes on with the current one");
        }
    }

    /// The agents of `client` (a client's catalog) this worker's catalog
    /// does not have.
    pub(super) fn missing_agents(&self, client: &[AgentId]) -> Vec<AgentId> {
        let ours = self.catalogs.current().catalog;
        client
            .iter()
            .filter(|agent| ours.agent(agent).is_none())
            .cloned()
            .collect()
    }

    /// Why this worker (on task queue `queue`) refuses a session a client
    /// of another catalog created (`missing`: the client's agents it does
    /// not have).
    pub(super) fn foreign_refusal(&self, queue: String, missing: Vec<AgentId>) -> Refusal {
        Refusal::WorkerCatalogMismatch {
            queue,
            missing,
            theirs: self.catalogs.current().catalog.agent_ids(),
        }
    }

    /// The catalog version the session's run plans with.
    pub(super) fn catalog(&self, version: Option<&str>) -> Arc<Catalog> {
        self.catalogs
            .get(version)
            .unwrap_or_else(|| self.catalogs.current().catalog)
    }
}
