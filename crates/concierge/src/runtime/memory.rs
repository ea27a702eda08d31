//! What a run's agent is shown of what is remembered about the person
//! (`[memory] recall = N` in its file): recalled when the run starts and put
//! on the blackboard under [`MEMORY_KEY`], so the model sees it among the
//! known information. Like the resources given as context, it travels in
//! the run's start input, which the engine journals: a replay sees what was
//! recalled then, not what is remembered today.

use std::collections::BTreeMap;

use concierge_core::{AgentId, SessionId};
use serde_json::Value;

use super::Runtime;
use crate::engine::Engine;
use crate::error::Result;
use crate::memory::{MemoryOwner, MemoryStore};

/// The blackboard key of the memories recalled for a run.
pub const MEMORY_KEY: &str = "remembered about the person";

impl Runtime {
    /// What is remembered about people: list, add, recall and forget a
    /// person's memories (the same store the `memory` toolset uses).
    pub fn memories(&self) -> &MemoryStore {
        &self.inner.memory
    }

    /// Adds to `context` the memories of `owner` most relevant to `text`,
    /// when the run's agent is shown memories. A store that fails does not
    /// refuse the run: the agent plans without them and the failure is logged.
    pub(crate) async fn memory_context(
        &self,
        engine: &dyn Engine,
        session: &SessionId,
        named: Option<&AgentId>,
        owner: MemoryOwner,
        text: &str,
        mut context: BTreeMap<String, Value>,
    ) -> Result<BTreeMap<String, Value>> {
        let catalog = self.catalog();
        if catalog.agents().all(|a| a.spec.memory.is_off()) {
            return Ok(context);
        }
        let Some(agent) = self.run_agent(engine, session, named).await else {
            return Ok(context);
        };
        let recall = catalog.agent(&agent).map_or(0, |a| a.spec.memory.recall);
        if recall == 0 {
            return Ok(context);
        }
        let limit = usize::try_from(recall).unwrap_or(usize::MAX);
        match self.inner.memory.recall(&owner, text, limit).await {
            Ok(found) if !found.is_empty() => {
                let texts = found.into_iter().map(|m| Value::String(m.text)).collect();
                context.insert(MEMORY_KEY.to_owned(), Value::Array(texts));
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, %session, "the person's memories could not be recalled"),
        }
        Ok(context)
    }
}
