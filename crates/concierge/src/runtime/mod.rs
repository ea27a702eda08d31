//! The runtime: agents, tools, models and an engine, behind one handle.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use concierge_core::{
    AgentId, AgentSpec, CallId, Catalog, Decision, Event, EventKind, Message, ModelRequest, PendingConfirmation,
    Planner, PlannerMode, PolicyDelta, RunId, RunOutput, Session, SessionId, StartRun, ToolId, ToolSpec,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

#[cfg(feature = "mcp")]
mod mcp;
mod subscription;

use subscription::Subscription;

use crate::client::{AgentClient, RunHandle};
use crate::engine::{
    Driver, Engine, JournalStats, MemoryJournal, SessionSummary, Settings, SharedJournal, SqliteJournal,
};
use crate::error::{Error, Result};
use crate::model::{Model, RetryPolicy};
use crate::options::RunOptions;
use crate::tool::{DynTool, ToolRegistry, Toolset};

/// Models by name, and the default.
#[derive(Clone, Default)]
pub(crate) struct Models {
    default: Option<Arc<dyn Model>>,
    named: HashMap<String, Arc<dyn Model>>,
}

impl Models {
    /// The model for a request: the agent's named model, else the default.
    pub(crate) fn for_request(&self, request: &ModelRequest) -> Option<Arc<dyn Model>> {
        request
            .model
            .as_ref()
            .and_then(|name| self.named.get(name).cloned())
            .or_else(|| self.default.clone())
    }

    fn available_for(&self, agent: &AgentSpec) -> bool {
        self.default.is_some() || agent.model.as_ref().is_some_and(|m| self.named.contains_key(m))
    }
}

/// Builds a [`Runtime`].
pub struct RuntimeBuilder {
    agents: Vec<AgentSpec>,
    toolsets: Vec<Toolset>,
    loose_tools: Toolset,
    models: Models,
    engine: Engine,
    settings: Settings,
    tool_timeout: Duration,
    planners: Vec<(AgentId, Arc<dyn Planner + Send + Sync>)>,
    #[cfg(feature = "mcp")]
    mcp_servers: Vec<(String, crate::mcp::McpServerConfig)>,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        Self {
            agents: Vec::new(),
            toolsets: Vec::new(),
            loose_tools: Toolset::new("tools"),
            models: Models::default(),
            engine: Engine::default(),
            settings: Settings::default(),
            tool_timeout: Duration::from_secs(60),
            planners: Vec::new(),
            #[cfg(feature = "mcp")]
            mcp_servers: Vec::new(),
        }
    }
}

impl RuntimeBuilder {
    /// Adds an agent.
    pub fn agent(mut self, spec: AgentSpec) -> Self {
        self.agents.push(spec);
        self
    }

    /// Adds agents.
    pub fn agents(mut self, specs: impl IntoIterator<Item = AgentSpec>) -> Self {
        self.agents.extend(specs);
        self
    }

    /// Adds a toolset.
    pub fn toolset(mut self, toolset: Toolset) -> Self {
        self.toolsets.push(toolset);
        self
    }

    /// Adds a tool to the `tools` toolset.
    pub fn tool(mut self, tool: impl DynTool) -> Self {
        self.loose_tools = self.loose_tools.tool(tool);
        self
    }

    /// Sets the default model.
    pub fn model(mut self, model: impl Model) -> Self {
        self.models.default = Some(Arc::new(model));
        self
    }

    /// Sets the default model (shared).
    pub fn model_arc(mut self, model: Arc<dyn Model>) -> Self {
        self.models.default = Some(model);
        self
    }

    /// Adds a model agents can name (`AgentSpec::model`).
    pub fn named_model(mut self, name: impl Into<String>, model: Arc<dyn Model>) -> Self {
        self.models.named.insert(name.into(), model);
        self
    }

    /// Chooses the engine (default: the embedded SQLite engine on `./concierge.db`).
    pub fn engine(mut self, engine: Engine) -> Self {
        self.engine = engine;
        self
    }

    /// The embedded engine on the SQLite database at `path`.
    pub fn sqlite(self, path: impl Into<std::path::PathBuf>) -> Self {
        self.engine(Engine::Sqlite(path.into()))
    }

    /// The embedded engine in memory (nothing is durable).
    pub fn in_memory(self) -> Self {
        self.engine(Engine::Memory)
    }

    /// Per-call tool timeout (default 60 s).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }

    /// Model retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.settings.retry = policy;
        self
    }

    /// How long an idle session stays in memory (default 30 s).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.settings.idle = idle;
        self
    }

    /// Input bytes journaled since the last snapshot before a session is
    /// snapshotted again (default 16 KiB; never less than the last snapshot's size).
    pub fn snapshot_after_bytes(mut self, bytes: u64) -> Self {
        self.settings.snapshot_min_bytes = bytes;
        self
    }

    /// How long the SQLite journal gathers entries before a commit when it
    /// is under load (default 1 ms; zero commits at once). Longer windows
    /// mean fewer fsyncs and bytes per turn and a little more latency per input.
    pub fn commit_window(mut self, window: Duration) -> Self {
        self.settings.commit_window = window;
        self
    }

    /// Sets a model's price (USD per million tokens) so runs report their cost.
    pub fn price(mut self, model: impl Into<String>, price: crate::config::Price) -> Self {
        Arc::make_mut(&mut self.settings.prices).insert(model.into(), price);
        self
    }

    /// Whether model-call traces carry the prompt (off by default).
    pub fn log_prompts(mut self, on: bool) -> Self {
        self.settings.log_prompts = on;
        self
    }

    /// Adds an MCP server; agents use its tools as the toolset `name`. It
    /// starts when a run of such an agent starts; its tools are listed then.
    #[cfg(feature = "mcp")]
    pub fn mcp_server(mut self, name: impl Into<String>, config: crate::mcp::McpServerConfig) -> Self {
        self.mcp_servers.push((name.into(), config));
        self
    }

    /// Registers a custom planner for an agent.
    pub fn planner(mut self, agent: impl Into<AgentId>, planner: Arc<dyn Planner + Send + Sync>) -> Self {
        self.planners.push((agent.into(), planner));
        self
    }

    /// Resolves the catalog, opens the engine and resumes every unfinished run in it.
    pub async fn build(self) -> Result<Runtime> {
        let mut registry = ToolRegistry::new();
        registry.set_timeout(self.tool_timeout);
        let mut toolsets = self.toolsets;
        if !self.loose_tools.tools.is_empty() {
            toolsets.push(self.loose_tools);
        }
        for set in &toolsets {
            for tool in &set.tools {
                registry.add(&set.name, tool.clone())?;
            }
        }
        let journal: SharedJournal = match &self.engine {
            Engine::Memory | Engine::None => Arc::new(MemoryJournal::new()),
            Engine::Sqlite(path) => Arc::new(SqliteJournal::open(path, self.settings.commit_window)?),
        };
        #[cfg(feature = "mcp")]
        let mcp = mcp::McpState::prepare(&mut registry, self.mcp_servers, journal.as_ref())?;
        let mut catalog = Catalog::builder();
        for (name, specs) in registry.toolsets() {
            catalog = catalog.toolset(name, specs);
        }
        for agent in &self.agents {
            if let Some(model) = &agent.model {
                if !self.models.named.contains_key(model) && self.models.default.is_none() {
                    return Err(Error::InvalidConfig(format!(
                        "agent {} uses model {model:?}, which is not configured",
                        agent.id
                    )));
                }
            }
            catalog = catalog.agent(agent.clone());
        }
        for (agent, planner) in self.planners {
            catalog = catalog.planner(agent, planner);
        }
        let catalog = Arc::new(catalog.build()?);
        let driver = Driver::new(catalog, Arc::new(registry), self.models, journal, self.settings);
        let resumed = driver.recover().await?;
        if !resumed.is_empty() {
            tracing::info!(sessions = resumed.len(), "resuming unfinished runs");
        }
        let recovered = resumed.iter().map(|(id, _)| id.clone()).collect();
        Ok(Runtime {
            inner: Arc::new(Inner {
                driver,
                overrides: RwLock::new(HashMap::new()),
                engine: self.engine,
                recovered,
                resumed: std::sync::Mutex::new(resumed.into_iter().collect()),
                #[cfg(feature = "mcp")]
                mcp,
            }),
        })
    }
}

struct Inner {
    driver: Driver,
    overrides: RwLock<HashMap<AgentId, PolicyDelta>>,
    engine: Engine,
    recovered: Vec<SessionId>,
    /// Where the runs resumed at open will stop, until someone waits for them.
    resumed: std::sync::Mutex<HashMap<SessionId, crate::engine::Stop>>,
    #[cfg(feature = "mcp")]
    mcp: mcp::McpState,
}

/// A running concierge: start runs, answer confirmations, watch events,
/// look at agents and tools. Cheap to clone.
///
/// ```no_run
/// # async fn demo() -> concierge::Result<()> {
/// use concierge::{AgentSpec, RunOptions, Runtime};
///
/// let rt = Runtime::builder()
///     .agent(AgentSpec::new("assistant").instructions("Be brief."))
///     .model(concierge::model::OpenAiCompatible::new("gpt-4o-mini"))
///     .build()
///     .await?;
/// let out = rt.client("assistant")?.run("hello", RunOptions::new().session_id("s1")).await?;
/// println!("{}", out.reply.unwrap_or_default());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("engine", &self.inner.engine).finish()
    }
}

impl Runtime {
    /// Starts building a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.inner.driver.shared().catalog()
    }

    /// The engine's driver, unless the runtime was built without one.
    fn driver(&self) -> Result<&Driver> {
        match self.inner.engine {
            Engine::None => Err(Error::EngineNotConfigured),
            _ => Ok(&self.inner.driver),
        }
    }

    /// `agent` if the catalog has it (with the catalog), else an error listing those it has.
    fn known_agent(&self, agent: AgentId) -> Result<(AgentId, Arc<Catalog>)> {
        let catalog = self.catalog();
        if catalog.agent(&agent).is_none() {
            return Err(Error::AgentNotFound {
                agent,
                known: join(catalog.agent_ids()),
            });
        }
        Ok((agent, catalog))
    }

    /// A client for one agent.
    pub fn client(&self, agent: impl Into<AgentId>) -> Result<AgentClient> {
        let (agent, _) = self.known_agent(agent.into())?;
        Ok(AgentClient::new(self.clone(), agent))
    }

    /// Starts a run in `options`' session. `agent` names who takes it; `None`
    /// continues with the session's current agent.
    pub(crate) async fn start_run(
        &self,
        agent: Option<AgentId>,
        messages: Vec<Message>,
        options: RunOptions,
    ) -> Result<RunHandle> {
        let session = options.session_id.ok_or(Error::MissingSessionId)?;
        if session.as_str().trim().is_empty() {
            return Err(Error::MissingSessionId);
        }
        let driver = self.driver()?;
        #[cfg(feature = "mcp")]
        self.ensure_mcp(agent.as_ref()).await?;
        let start = StartRun {
            run_id: options.run_id,
            catalog_version: None,
            agent,
            messages,
            planner: PlannerMode::Model,
            policy: None,
            context: options.context,
            turn_id: options.turn_id,
            labels: options.labels,
            metadata: options.metadata,
            at: crate::engine::now(),
        };
        let shared = driver.shared().clone();
        let overrides = self.inner.overrides.read().map(|o| o.clone()).unwrap_or_default();
        let delta = options.policy;
        let prepare = move |start: &mut StartRun, current: &AgentId, catalog: &Catalog| {
            let agent = start.agent.clone().unwrap_or_else(|| current.clone());
            let Some(resolved) = catalog.agent(&agent) else {
                return;
            };
            // A custom planner wins; then a model if one is configured; else the
            // agent's rules (the core refuses the run if it has none, saying
            // that a model must be configured).
            start.planner = if catalog.custom_planner(&agent).is_some() {
                PlannerMode::Custom
            } else if shared.models.available_for(&resolved.spec) {
                PlannerMode::Model
            } else {
                PlannerMode::Rules
            };
            let own = overrides.get(&agent);
            if own.is_some() || delta.is_some() {
                let mut policy = resolved.spec.policy.clone();
                if let Some(d) = own {
                    policy = policy.with(d);
                }
                if let Some(d) = &delta {
                    policy = policy.with(d);
                }
                start.policy = Some(policy);
            }
        };
        let started = driver.start(start, &session, Box::new(prepare)).await?;
        Ok(RunHandle::new(
            self.clone(),
            session,
            started.run_id,
            started.stop,
            started.first_seq,
        ))
    }

    /// Starts a turn in an existing session, with its current agent.
    pub async fn start(&self, messages: impl crate::client::IntoMessages, options: RunOptions) -> Result<RunHandle> {
        self.start_run(None, messages.into_messages(), options).await
    }

    /// Runs a turn in an existing session with its current agent, and waits for it.
    pub async fn send(&self, messages: impl crate::client::IntoMessages, options: RunOptions) -> Result<RunOutput> {
        self.start_run(None, messages.into_messages(), options)
            .await?
            .wait()
            .await
    }

    /// Answers the call parked in `session`: runs it if approved (only if
    /// `call_id` and `fingerprint` match), tells the model it was declined
    /// otherwise. Waits for the run's next stop.
    pub async fn confirm(
        &self,
        session: impl Into<SessionId>,
        call_id: impl Into<CallId>,
        fingerprint: impl Into<String>,
        decision: Decision,
    ) -> Result<RunOutput> {
        let session = session.into();
        let stop = self
            .driver()?
            .confirm(&session, call_id.into(), fingerprint.into(), decision)
            .await?;
        stop.wait().await
    }

    /// Approves or declines a pending confirmation as returned in a [`RunOutput`].
    pub async fn answer(
        &self,
        pending: &PendingConfirmation,
        session: impl Into<SessionId>,
        approve: bool,
    ) -> Result<RunOutput> {
        let decision = if approve {
            Decision::Approve
        } else {
            Decision::Deny { reason: None }
        };
        self.confirm(session, pending.call_id.clone(), pending.fingerprint.clone(), decision)
            .await
    }

    /// Ends a session: a run in progress is cancelled (its output is
    /// returned), and the session takes no more input.
    pub async fn end(&self, session: impl Into<SessionId>, reason: impl Into<String>) -> Result<Option<RunOutput>> {
        self.driver()?.end(&session.into(), reason.into()).await
    }

    /// Waits for the session's run in progress to stop (finish or park) and
    /// returns its output; `None` if no run is in progress. For a session
    /// whose run was resumed when the engine opened, the first call returns
    /// that run's output even if it has finished already.
    pub async fn wait(&self, session: impl Into<SessionId>) -> Result<Option<RunOutput>> {
        let session = session.into();
        let resumed = self.inner.resumed.lock().ok().and_then(|mut r| r.remove(&session));
        if let Some(stop) = resumed {
            return Ok(Some(stop.wait().await?));
        }
        match self.driver()?.wait(&session).await? {
            Some(stop) => Ok(Some(stop.wait().await?)),
            None => Ok(None),
        }
    }

    /// The session as it stands (history, current agent, blackboard, usage, last output).
    pub async fn session(&self, session: impl Into<SessionId>) -> Result<Session> {
        let id = session.into();
        self.driver()?.inspect(&id).await?.ok_or(Error::SessionNotFound(id))
    }

    /// The session's messages.
    pub async fn history(&self, session: impl Into<SessionId>) -> Result<Vec<Message>> {
        Ok(self.session(session).await?.history().to_vec())
    }

    /// Every session the engine knows.
    pub async fn sessions(&self) -> Result<Vec<SessionSummary>> {
        self.driver()?.shared().journal.sessions().await
    }

    /// Lets idle sessions leave memory, recording where they end, and waits
    /// for the journal to write it down. Runs still in flight keep going (and
    /// resume at the next open if the process ends first). Call it before
    /// exiting a process.
    pub async fn shutdown(&self) {
        self.inner.driver.shutdown().await;
        #[cfg(feature = "mcp")]
        self.inner.mcp.shutdown().await;
    }

    /// How many sessions are in memory now (idle ones leave after the idle timeout).
    pub fn sessions_in_memory(&self) -> usize {
        self.inner.driver.in_memory()
    }

    /// Sessions whose unfinished runs were resumed when the engine opened.
    pub fn recovered(&self) -> &[SessionId] {
        &self.inner.recovered
    }

    /// What the journal has written.
    pub fn journal_stats(&self) -> JournalStats {
        self.inner.driver.shared().journal.stats()
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// Every agent.
    pub fn agents(&self) -> Vec<AgentSpec> {
        self.catalog().agents().map(|a| a.spec.clone()).collect()
    }

    /// One agent.
    pub fn agent(&self, id: impl Into<AgentId>) -> Option<AgentSpec> {
        self.catalog().agent(&id.into()).map(|a| a.spec.clone())
    }

    /// Toolset names.
    pub fn toolsets(&self) -> Vec<String> {
        self.catalog().toolsets().keys().cloned().collect()
    }

    /// The tools of a toolset.
    pub fn toolset_tools(&self, name: &str) -> Vec<ToolId> {
        self.catalog().toolsets().get(name).cloned().unwrap_or_default()
    }

    /// Every tool.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.catalog().tools().cloned().collect()
    }

    /// One tool's spec.
    pub fn tool_spec(&self, id: impl Into<ToolId>) -> Option<ToolSpec> {
        self.catalog().tool(&id.into()).cloned()
    }

    /// One tool's input schema.
    pub fn tool_schema(&self, id: impl Into<ToolId>) -> Option<Value> {
        self.tool_spec(id).map(|s| s.input_schema)
    }

    /// Calls a tool directly, outside any run (arguments are validated and
    /// coerced as in a run). `n` numbers the call; `key` is its idempotency
    /// key (one is derived from `n` otherwise).
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        key: Option<String>,
        n: u64,
    ) -> concierge_core::ToolOutcome {
        let call = concierge_core::ToolCall {
            id: format!("direct_{n}").into(),
            name: tool.into(),
            arguments,
        };
        let session = SessionId::new("direct");
        let run = RunId::new("direct");
        let idempotency_key = match key {
            Some(key) => concierge_core::IdempotencyKey::given(key),
            None => concierge_core::IdempotencyKey::derive(&session, &run, &call.id),
        };
        let cx = crate::tool::ToolContext {
            session_id: session,
            run_id: run,
            call_id: call.id.clone(),
            agent: AgentId::new("direct"),
            idempotency_key,
        };
        self.inner.driver.shared().tools.execute(&call, cx).await.0
    }

    /// The tools an agent may call.
    pub fn tools_for(&self, agent: impl Into<AgentId>) -> Result<Vec<ToolSpec>> {
        let (agent, catalog) = self.known_agent(agent.into())?;
        Ok(catalog.tools_for(&agent).into_iter().cloned().collect())
    }

    /// Overrides an agent's policy for runs started from now on (in this process).
    pub fn override_policy(&self, agent: impl Into<AgentId>, delta: PolicyDelta) -> Result<()> {
        let (agent, _) = self.known_agent(agent.into())?;
        let mut overrides = self
            .inner
            .overrides
            .write()
            .map_err(|_| Error::InvalidConfig("the policy overrides are poisoned".into()))?;
        let merged = match overrides.remove(&agent) {
            Some(existing) => existing.merge(&delta),
            None => delta,
        };
        overrides.insert(agent, merged);
        Ok(())
    }

    /// The session's events from `from_seq` on: stored ones first, then live
    /// ones as they happen (model deltas included, live only). Resumable: pass
    /// the last seq you saw plus one.
    pub fn subscribe(&self, session: impl Into<SessionId>, from_seq: u64) -> BoxStream<'static, Result<Event>> {
        if let Err(error) = self.driver() {
            return futures::stream::once(async move { Err(error) }).boxed();
        }
        let session = session.into();
        let state = Subscription {
            rx: self.inner.driver.live(&session),
            journal: self.inner.driver.shared().journal.clone(),
            catalog: self.catalog(),
            session,
            backlog: VecDeque::new(),
            live: VecDeque::new(),
            last: from_seq.saturating_sub(1),
            started: false,
        };
        futures::stream::unfold(state, Subscription::next).boxed()
    }

    /// The events of one run, ending with its `run_finished` event.
    pub fn subscribe_run(
        &self,
        session: impl Into<SessionId>,
        run: RunId,
        from_seq: u64,
    ) -> BoxStream<'static, Result<Event>> {
        let events = self.subscribe(session, from_seq);
        futures::stream::unfold((events, run, false), |(mut events, run, done)| async move {
            if done {
                return None;
            }
            loop {
                match events.next().await? {
                    Ok(event) if event.run.as_ref() != Some(&run) => continue,
                    Ok(event) => {
                        let last = matches!(event.kind, EventKind::RunFinished { .. });
                        return Some((Ok(event), (events, run, last)));
                    }
                    Err(error) => return Some((Err(error), (events, run, false))),
                }
            }
        })
        .boxed()
    }
}

fn join<T: std::fmt::Display>(items: Vec<T>) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// How a run's start is completed inside its session (planner mode and policy
/// depend on the agent that takes it, which only the session knows).
pub(crate) type Prepare = Box<dyn FnOnce(&mut StartRun, &AgentId, &Catalog) + Send>;
