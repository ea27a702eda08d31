//! The MCP resources an agent is given as context (`resources` in its
//! file): read when a run starts and put on the blackboard under
//! `resource:<server>:<uri>`, so the model sees them among the known
//! information. They travel in the run's start input, which the engine
//! journals, so a replay sees the text that was read, not today's.

use std::collections::BTreeMap;

use concierge_core::{AgentId, SessionId};
use serde_json::Value;

use super::Runtime;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::mcp::ResourceRef;

/// The blackboard key of a resource given as context.
pub fn resource_key(reference: &ResourceRef) -> String {
    format!("resource:{reference}")
}

impl Runtime {
    /// Adds the text of the resources the run's agent is given to `context`.
    /// A resource that cannot be read refuses the run, naming it.
    pub(crate) async fn resource_context(
        &self,
        engine: &dyn Engine,
        session: &SessionId,
        named: Option<&AgentId>,
        mut context: BTreeMap<String, Value>,
    ) -> Result<BTreeMap<String, Value>> {
        let catalog = self.catalog();
        if catalog.agents().all(|a| a.spec.resources.is_empty()) {
            return Ok(context);
        }
        let Some(agent) = self.run_agent(engine, session, named).await else {
            return Ok(context);
        };
        let Some(resolved) = catalog.agent(&agent) else {
            return Ok(context);
        };
        for text in &resolved.spec.resources {
            let unavailable = |reason: String| Error::ResourceUnavailable {
                agent: agent.to_string(),
                resource: text.clone(),
                reason,
            };
            let reference = ResourceRef::parse(text).map_err(unavailable)?;
            let client = self
                .mcp_client(&reference.server)
                .ok_or_else(|| unavailable(format!("there is no MCP server {}", reference.server)))?;
            let read = client
                .read_resource(&reference.uri)
                .await
                .map_err(|e| unavailable(e.message))?;
            context.insert(resource_key(&reference), Value::String(read.text));
        }
        Ok(context)
    }
}
