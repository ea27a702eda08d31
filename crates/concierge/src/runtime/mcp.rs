//! The runtime's MCP servers: discovery into the registry and the catalog.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use concierge_core::AgentId;

use super::Runtime;
use crate::error::{Error, Result};
use crate::mcp::{McpClient, McpServerConfig, McpTool, RemoteTool, remote_tools};
use crate::tool::{DynTool, ToolRegistry};

/// The configured servers and which were listed in this process.
pub(crate) struct McpState {
    clients: BTreeMap<String, Arc<McpClient>>,
    listed: std::sync::Mutex<HashSet<String>>,
    /// One discovery at a time (a catalog swap is read-modify-write).
    discovering: tokio::sync::Mutex<()>,
}

fn handlers(client: &Arc<McpClient>, tools: &[RemoteTool]) -> Vec<Arc<dyn DynTool>> {
    tools
        .iter()
        .map(|tool| Arc::new(McpTool::new(client.clone(), tool.clone())) as Arc<dyn DynTool>)
        .collect()
}

impl McpState {
    /// Declares each server's toolset (filled at discovery, or from what a
    /// previous process remembered).
    pub(crate) fn prepare(registry: &mut ToolRegistry, servers: Vec<(String, McpServerConfig)>) -> Result<Self> {
        let existing: BTreeSet<String> = registry.toolsets().into_iter().map(|(name, _)| name).collect();
        let mut clients = BTreeMap::new();
        for (name, config) in servers {
            config.check(&name)?;
            if existing.contains(&name) || clients.contains_key(&name) {
                return Err(Error::InvalidConfig(format!(
                    "MCP server {name}: a toolset of that name exists already; rename one"
                )));
            }
            registry.declare(&name);
            let client = Arc::new(McpClient::new(name.clone(), config));
            clients.insert(name, client);
        }
        Ok(Self {
            clients,
            listed: Default::default(),
            discovering: Default::default(),
        })
    }

    /// The servers' names (their toolsets are filled at run time).
    pub(crate) fn servers(&self) -> Vec<String> {
        self.clients.keys().cloned().collect()
    }

    pub(crate) async fn shutdown(&self) {
        for client in self.clients.values() {
            client.shutdown().await;
        }
    }
}

impl Runtime {
    /// Fills each server's toolset with the tools it had the last time a
    /// process listed it, so that runs left unfinished can go on before the
    /// server is listed again.
    pub(crate) fn restore_remembered_tools(&self) {
        let remembered = match self.inner.engine.remembered_toolsets() {
            Ok(remembered) => remembered,
            Err(error) => {
                tracing::warn!(%error, "cannot read the remembered MCP tools");
                return;
            }
        };
        for (name, json) in remembered {
            let Some(client) = self.inner.mcp.clients.get(&name) else {
                continue;
            };
            let tools = match serde_json::from_str::<Vec<RemoteTool>>(&json) {
                Ok(tools) => tools,
                Err(error) => {
                    tracing::warn!(server = %name, %error, "unreadable remembered MCP tools");
                    continue;
                }
            };
            let installed = self
                .inner
                .executor
                .tools()
                .set_toolset(&name, handlers(client, &tools))
                .map_err(|e| e.to_string())
                .and_then(|specs| self.inner.catalogs.set_toolset(&name, specs).map_err(|e| e.to_string()));
            if let Err(error) = installed {
                tracing::warn!(server = %name, %error, "remembered MCP tools do not fit; waiting for discovery");
            }
        }
    }

    /// The configured MCP servers, by name.
    pub fn mcp_servers(&self) -> Vec<String> {
        self.inner.mcp.clients.keys().cloned().collect()
    }

    /// The client of an MCP server.
    pub fn mcp_client(&self, server: &str) -> Option<Arc<McpClient>> {
        self.inner.mcp.clients.get(server).cloned()
    }

    /// Lists an MCP server's tools (starting it if needed) and puts them in
    /// the catalog as its toolset. Returns them.
    pub async fn discover(&self, server: &str) -> Result<Vec<RemoteTool>> {
        let client = self.mcp_client(server).ok_or_else(|| {
            Error::InvalidConfig(format!(
                "no MCP server named {server:?}; servers: {}",
                self.mcp_servers().join(", ")
            ))
        })?;
        let _one_at_a_time = self.inner.mcp.discovering.lock().await;
        let listed = client.tools().await?;
        let tools = remote_tools(server, client.config(), &listed)?;
        let specs = self
            .inner
            .executor
            .tools()
            .set_toolset(server, handlers(&client, &tools))?;
        let count = specs.len();
        if self.inner.catalogs.set_toolset(server, specs)? {
            match serde_json::to_string(&tools) {
                Ok(json) => self.inner.engine.remember_toolset(server, json),
                Err(error) => tracing::warn!(%error, "cannot remember MCP tools"),
            }
        }
        if let Ok(mut listed) = self.inner.mcp.listed.lock() {
            listed.insert(server.to_string());
        }
        tracing::info!(server, tools = count, "MCP tools discovered");
        Ok(tools)
    }

    /// The MCP servers a run may need: those of `agent` and of every agent it
    /// can hand off to (all agents' when the session's agent is not named).
    fn servers_used(&self, agent: Option<&AgentId>) -> BTreeSet<String> {
        let catalog = self.catalog();
        let mut agents: Vec<AgentId> = match agent {
            Some(agent) => vec![agent.clone()],
            None => catalog.agent_ids(),
        };
        let mut seen: HashSet<AgentId> = HashSet::new();
        let mut servers = BTreeSet::new();
        while let Some(id) = agents.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let Some(resolved) = catalog.agent(&id) else {
                continue;
            };
            for set in &resolved.spec.toolsets {
                if self.inner.mcp.clients.contains_key(set) {
                    servers.insert(set.clone());
                }
            }
            agents.extend(resolved.spec.handoffs.iter().cloned());
        }
        servers
    }

    /// Lists the servers a run needs that were not listed yet in this process
    /// or whose tools changed; a server that will not start is an error
    /// (quoting its stderr).
    pub(crate) async fn ensure_mcp(&self, agent: Option<&AgentId>) -> Result<()> {
        for server in self.servers_used(agent) {
            let listed = self
                .inner
                .mcp
                .listed
                .lock()
                .map(|l| l.contains(&server))
                .unwrap_or(false);
            let stale = match self.mcp_client(&server) {
                Some(client) => client.is_stale().await,
                None => false,
            };
            if !listed || stale {
                match self.discover(&server).await {
                    Ok(_) => {}
                    // The run names its agent: its server must be there.
                    Err(error) if agent.is_some() => return Err(error),
                    // The session's agent is not known here (the hub may route
                    // anywhere): a server that cannot start only takes its own
                    // goal's tools away, not everyone's run.
                    Err(error) => {
                        tracing::warn!(%server, %error, "an MCP server could not be listed; its tools are unavailable")
                    }
                }
            }
        }
        Ok(())
    }
}
