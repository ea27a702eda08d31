//! The runtime's MCP servers: started in the background, watched and
//! restarted with backoff, their tools listed into the registry and the
//! catalog; a run waits only for the servers its agents need whose tools are
//! not known yet, and tells its session while it does (`tools_status`).
//!
//! A server whose tools an earlier process remembered is not started when
//! the runtime opens: runs use the remembered tools, and the server starts
//! when a run calls one of them (its list is then read again). A server with
//! no remembered tools starts when the runtime opens.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use concierge_core::{AgentId, Event, EventId, EventKind, Session, SessionId, ToolsState};
use tokio::sync::watch;

use super::{Inner, Runtime};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::mcp::{
    McpClient, McpServerConfig, McpTool, Probe, RESOURCE_TOOLSET, RemoteTool, remote_tools, resource_tools,
};
use crate::tool::{DynTool, ToolRegistry};

/// How often a supervisor looks at its server when nothing is under way.
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// Sessions whose last status number is kept (numbers of older ones are forgotten).
const ANNOUNCED_SESSIONS: usize = 10_000;

/// Where a server stands, as runs that wait for it see it.
#[derive(Clone, Debug, PartialEq)]
enum Status {
    /// Not started by anyone yet.
    Idle,
    /// Starting (or being listed).
    Starting,
    /// Listed: its tools are in the catalog.
    Ready,
    /// The last attempt failed, for this reason.
    Failed(String),
}

/// One server's state in this runtime.
struct Server {
    status: watch::Sender<Status>,
    /// Whether the catalog holds its tools (listed in this process, or
    /// remembered from an earlier one).
    known: AtomicBool,
}

impl Server {
    fn new() -> Self {
        Self {
            status: watch::channel(Status::Idle).0,
            known: AtomicBool::new(false),
        }
    }

    fn set(&self, status: Status) {
        self.status.send_if_modified(|now| {
            let changed = *now != status;
            *now = status;
            changed
        });
    }

    fn known(&self) -> bool {
        self.known.load(Ordering::Relaxed)
    }
}

/// The configured servers and their state.
pub(crate) struct McpState {
    clients: BTreeMap<String, Arc<McpClient>>,
    servers: BTreeMap<String, Arc<Server>>,
    /// One catalog swap at a time (it is read-modify-write); listing a
    /// server happens outside it, so a slow server holds up nobody else.
    swapping: tokio::sync::Mutex<()>,
    /// The background tasks that start and watch the servers.
    supervisors: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Whether the supervisors run (not in a runtime that only reads).
    supervised: AtomicBool,
    /// The id of the last status event given per session.
    announced: Mutex<HashMap<SessionId, EventId>>,
}

fn handlers(client: &Arc<McpClient>, tools: &[RemoteTool]) -> Vec<Arc<dyn DynTool>> {
    tools
        .iter()
        .map(|tool| Arc::new(McpTool::new(client.clone(), tool.clone())) as Arc<dyn DynTool>)
        .collect()
}

/// Why a server's tools could not be had, in words (without the "MCP server
/// X:" that the caller's sentence says already).
fn reason(error: &Error) -> String {
    match error {
        Error::Mcp(error) => error.message.clone(),
        other => other.to_string(),
    }
}

impl McpState {
    /// Declares each server's toolset (filled at discovery, or from what a
    /// previous process remembered).
    pub(crate) fn prepare(registry: &mut ToolRegistry, servers: Vec<(String, McpServerConfig)>) -> Result<Self> {
        let existing: BTreeSet<String> = registry.toolsets().into_iter().map(|(name, _)| name).collect();
        let mut clients = BTreeMap::new();
        let mut states = BTreeMap::new();
        for (name, config) in servers {
            config.check(&name)?;
            if existing.contains(&name) || clients.contains_key(&name) {
                return Err(Error::InvalidConfig(format!(
                    "MCP server {name}: a toolset of that name exists already; rename one"
                )));
            }
            registry.declare(&name);
            let client = Arc::new(McpClient::new(name.clone(), config));
            states.insert(name.clone(), Arc::new(Server::new()));
            clients.insert(name, client);
        }
        // The built-in resource tools read through the servers' clients.
        if !clients.is_empty() && !existing.contains(RESOURCE_TOOLSET) && !clients.contains_key(RESOURCE_TOOLSET) {
            for tool in resource_tools(&Arc::new(clients.clone())) {
                registry.add(RESOURCE_TOOLSET, tool)?;
            }
        }
        Ok(Self {
            clients,
            servers: states,
            swapping: Default::default(),
            supervisors: Mutex::default(),
            supervised: AtomicBool::new(false),
            announced: Mutex::default(),
        })
    }

    /// The servers' names (their toolsets are filled at run time).
    pub(crate) fn servers(&self) -> Vec<String> {
        self.clients.keys().cloned().collect()
    }

    /// Stops the supervisors, then each server (a stdio server is asked to
    /// exit, then killed; one still starting is killed).
    pub(crate) async fn shutdown(&self) {
        self.supervised.store(false, Ordering::Relaxed);
        let supervisors = std::mem::take(&mut *self.supervisors.lock().unwrap_or_else(PoisonError::into_inner));
        for supervisor in &supervisors {
            supervisor.abort();
        }
        for supervisor in supervisors {
            let _ = supervisor.await;
        }
        // Runs still waiting for a server are told it will not come.
        for server in self.servers.values().filter(|s| !s.known()) {
            server.set(Status::Failed("the runtime is shutting down".into()));
        }
        for client in self.clients.values() {
            client.shutdown().await;
        }
    }

    /// The next id of a status event in `session`, whose last durable event is `seq`.
    fn next_id(&self, session: &SessionId, seq: u64) -> EventId {
        let mut announced = self.announced.lock().unwrap_or_else(PoisonError::into_inner);
        if announced.len() >= ANNOUNCED_SESSIONS && !announced.contains_key(session) {
            announced.clear();
        }
        let id = match announced.get(session) {
            Some(last) if last.seq == seq => EventId {
                seq,
                delta: last.delta.saturating_add(1),
            },
            _ => EventId { seq, delta: 1 },
        };
        announced.insert(session.clone(), id);
        id
    }
}

/// Watches one server for as long as the runtime lives: starts it when its
/// tools are not known, lists it again when it says they changed (or after
/// a run started it), and restarts it after a failure or a crash, backing off.
async fn supervise(inner: Weak<Inner>, name: String) {
    let mut pause = Duration::ZERO;
    loop {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        pause = WATCH_EVERY;
        let Some(inner) = inner.upgrade() else { return };
        let rt = Runtime { inner };
        if !rt.inner.mcp.supervised.load(Ordering::Relaxed) {
            return;
        }
        let (Some(client), Some(server)) = (rt.mcp_client(&name), rt.inner.mcp.servers.get(&name).cloned()) else {
            return;
        };
        let act = match client.probe() {
            Probe::Busy => false,
            Probe::Up { closed: false } => client.list_changed(),
            // It crashed or exited: start it again.
            Probe::Up { closed: true } => true,
            // Never started: only when its tools are not known (remembered
            // tools wait for a run to call them).
            Probe::Down { started } => started || !server.known(),
        };
        if !act {
            continue;
        }
        if !server.known() {
            server.set(Status::Starting);
        }
        let listed = match client.connect().await {
            Ok(()) => rt.discover(&name).await.map(|_| ()),
            Err(error) => Err(Error::Mcp(error)),
        };
        if let Err(error) = listed {
            let why = reason(&error);
            tracing::warn!(server = %name, error = %why, "an MCP server could not start; retrying with backoff");
            server.set(Status::Failed(why));
            if let Some(wait) = client.retry_in() {
                pause = wait.max(WATCH_EVERY);
            }
        }
    }
}

impl Runtime {
    /// Fills each server's toolset with the tools it had the last time a
    /// process listed it, so that runs go on (and runs left unfinished
    /// replay) before the server is listed again.
    pub(crate) fn restore_remembered_tools(&self) {
        let remembered = match self.inner.engine.remembered_toolsets() {
            Ok(remembered) => remembered,
            Err(error) => {
                tracing::warn!(%error, "cannot read the remembered MCP tools");
                return;
            }
        };
        for (name, json) in remembered {
            let (Some(client), Some(server)) = (self.inner.mcp.clients.get(&name), self.inner.mcp.servers.get(&name))
            else {
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
            match installed {
                Ok(_) => server.known.store(true, Ordering::Relaxed),
                Err(error) => {
                    tracing::warn!(server = %name, %error, "remembered MCP tools do not fit; waiting for discovery")
                }
            }
        }
    }

    /// Starts a supervisor per server (a runtime that runs sessions does;
    /// one that only reads does not).
    pub(crate) fn supervise_mcp(&self) {
        let mcp = &self.inner.mcp;
        if mcp.clients.is_empty() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        mcp.supervised.store(true, Ordering::Relaxed);
        let mut supervisors = mcp.supervisors.lock().unwrap_or_else(PoisonError::into_inner);
        for name in mcp.clients.keys() {
            supervisors.push(tokio::spawn(supervise(Arc::downgrade(&self.inner), name.clone())));
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
        let state = self.inner.mcp.servers.get(server).cloned();
        let discovered = self.list_into_catalog(server, &client).await;
        if let Some(state) = state {
            match &discovered {
                Ok(_) => {
                    state.known.store(true, Ordering::Relaxed);
                    state.set(Status::Ready);
                }
                Err(error) => state.set(Status::Failed(reason(error))),
            }
        }
        discovered
    }

    async fn list_into_catalog(&self, server: &str, client: &Arc<McpClient>) -> Result<Vec<RemoteTool>> {
        let listed = client.tools().await?;
        let tools = remote_tools(server, client.config(), &listed)?;
        let _one_at_a_time = self.inner.mcp.swapping.lock().await;
        let specs = self
            .inner
            .executor
            .tools()
            .set_toolset(server, handlers(client, &tools))?;
        let count = specs.len();
        if self.inner.catalogs.set_toolset(server, specs)? {
            match serde_json::to_string(&tools) {
                Ok(json) => self.inner.engine.remember_toolset(server, json),
                Err(error) => tracing::warn!(%error, "cannot remember MCP tools"),
            }
        }
        tracing::info!(server, tools = count, "MCP tools discovered");
        Ok(tools)
    }

    /// The MCP servers runs of `agents` may need: theirs, and those of every
    /// agent they can hand off to or call as a tool.
    fn servers_used(&self, agents: Vec<AgentId>) -> BTreeSet<String> {
        let catalog = self.catalog();
        let mut agents = agents;
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
            agents.extend(resolved.spec.agent_tools.iter().map(|t| t.agent.clone()));
        }
        servers
    }

    /// Before a run of `text` in `session` starts: waits for the servers its
    /// agents need whose tools are not known yet (`agent`, or the agents the
    /// session's agent and the hub's rules point to), telling the session
    /// (`tools_status` events) while it waits. Servers no agent of the run
    /// needs are not waited for; a server that could not start fails the run
    /// with an error naming it and why.
    pub(crate) async fn ensure_mcp(
        &self,
        engine: &Arc<dyn Engine>,
        session: &SessionId,
        agent: Option<&AgentId>,
        text: &str,
    ) -> Result<()> {
        let mcp = &self.inner.mcp;
        // A running server that said its tools changed is listed again first.
        let changed = |server: &str| {
            self.mcp_client(server)
                .is_some_and(|c| c.list_changed() && c.probe() == Probe::Up { closed: false })
        };
        // The usual case: every server's tools are known and current; nothing to wait for.
        if mcp.servers.iter().all(|(name, s)| s.known() && !changed(name)) {
            return Ok(());
        }
        let state: Option<Session> = engine.session(session.clone()).await.ok().flatten();
        let catalog = self.catalog();
        let agents = match agent {
            Some(agent) => vec![agent.clone()],
            None => catalog.likely_agents(state.as_ref(), text),
        };
        // When the hub's model picks the agent, any agent it offers may take
        // the run (whose tools are fixed when it starts): servers still
        // starting are waited for too, but one that fails holds nothing up.
        let models = self.inner.executor.models();
        let hub_plans_with_model = catalog
            .hub()
            .and_then(|hub| catalog.agent(hub))
            .is_some_and(|hub| models.available_for(&hub.spec));
        let maybe = match agent {
            None if hub_plans_with_model && catalog.hub_model_decides(state.as_ref(), text) => {
                self.servers_used(catalog.agent_ids())
            }
            _ => BTreeSet::new(),
        };
        let needed = self.servers_used(agents);
        let seq = state.as_ref().map_or(0, Session::last_seq);
        if mcp.supervised.load(Ordering::Relaxed) {
            for server in maybe.difference(&needed) {
                let Some(status) = mcp.servers.get(server).cloned() else {
                    continue;
                };
                let starting = matches!(*status.status.borrow(), Status::Idle | Status::Starting);
                if status.known() || !starting {
                    continue;
                }
                if let Err(error) = self.wait_for(engine.as_ref(), session, seq, server, &status).await {
                    tracing::info!(%server, %error, "an MCP server the hub's model might need did not start; the run goes on without it");
                }
            }
        }
        for server in needed {
            let Some(status) = mcp.servers.get(&server).cloned() else {
                continue;
            };
            if status.known() {
                if changed(&server) {
                    if let Err(error) = self.discover(&server).await {
                        tracing::warn!(%server, %error, "an MCP server's changed tools could not be listed; the run uses the ones known");
                    }
                }
                continue;
            }
            if !mcp.supervised.load(Ordering::Relaxed) {
                // Nobody starts it in the background: list it here.
                self.discover(&server).await.map_err(|error| Error::ToolsUnavailable {
                    server: server.clone(),
                    reason: reason(&error),
                })?;
                continue;
            }
            self.wait_for(engine.as_ref(), session, seq, &server, &status).await?;
        }
        Ok(())
    }

    /// Waits until `server` is listed or fails, telling the session.
    async fn wait_for(
        &self,
        engine: &dyn Engine,
        session: &SessionId,
        seq: u64,
        server: &str,
        status: &Server,
    ) -> Result<()> {
        let mut changes = status.status.subscribe();
        let mut told = false;
        loop {
            let now = changes.borrow_and_update().clone();
            match now {
                Status::Ready => {
                    if told {
                        let message = format!("the {server} tools are ready");
                        self.announce(engine, session, seq, server, ToolsState::Ready, message);
                    }
                    return Ok(());
                }
                Status::Failed(why) => {
                    let mut reason = why;
                    if let Some(wait) = self.mcp_client(server).and_then(|c| c.retry_in()) {
                        reason.push_str(&format!(
                            "; it is restarting (next attempt in {:.1} s)",
                            wait.as_secs_f32()
                        ));
                    }
                    let error = Error::ToolsUnavailable {
                        server: server.to_string(),
                        reason,
                    };
                    self.announce(engine, session, seq, server, ToolsState::Failed, error.to_string());
                    return Err(error);
                }
                Status::Idle | Status::Starting => {
                    if !told {
                        told = true;
                        let message = format!("starting the {server} tools…");
                        self.announce(engine, session, seq, server, ToolsState::Starting, message);
                    }
                }
            }
            if changes.changed().await.is_err() {
                return Err(Error::ToolsUnavailable {
                    server: server.to_string(),
                    reason: "the runtime is shutting down".into(),
                });
            }
        }
    }

    /// A `tools_status` event for the session's subscribers in this process
    /// (live only, numbered after its last durable event).
    fn announce(
        &self,
        engine: &dyn Engine,
        session: &SessionId,
        seq: u64,
        server: &str,
        state: ToolsState,
        message: String,
    ) {
        let id = self.inner.mcp.next_id(session, seq);
        let event = Event {
            seq: id.seq,
            delta: id.delta,
            at: crate::engine::now(),
            session: session.clone(),
            run: None,
            kind: EventKind::ToolsStatus {
                server: server.to_string(),
                state,
                message,
            },
        };
        let _ = self.inner.tools_status.send(event.clone());
        engine.announce(event);
    }
}
