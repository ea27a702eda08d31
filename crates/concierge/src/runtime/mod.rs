//! The runtime: agents, tools, models and an engine, behind one handle.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use concierge_core::{
    AgentId, AgentSpec, CallId, Catalog, Decision, Event, EventId, EventKind, Message, Mode, Multitask, OpenSession,
    PendingConfirmation, Planner, PlannerMode, PolicyDelta, RunId, RunOutput, Session, SessionId, StartRun, StepError,
    ToolId, ToolSpec,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

mod answer;
mod children;
mod client;
mod cursor;
#[cfg(feature = "mcp")]
mod mcp;

pub use client::{AgentClient, IntoMessages, RunHandle};
pub use cursor::{InvalidCursor, StreamCursor};

use crate::engine::{
    Catalogs, Embedded, Engine, EngineParts, ExecHooks, Executor, JournalStats, NoEngine, OpenEngine, PromptBuilder,
    RunSetup, RunStop, SessionSummary, TracingHooks,
};
use crate::error::{Error, Result};
use crate::model::{Model, Models, Price, RetryPolicy};
use crate::options::RunOptions;
use crate::tool::{DynTool, ToolRegistry, Toolset};

/// Which engine a runtime opens.
enum EngineChoice {
    /// The embedded engine, as configured by the builder.
    Embedded,
    /// Another engine.
    Custom(Box<dyn OpenEngine>),
    /// None: the runtime describes agents and tools but runs nothing.
    None,
}

/// Builds a [`Runtime`].
pub struct RuntimeBuilder {
    agents: Vec<AgentSpec>,
    toolsets: Vec<Toolset>,
    loose_tools: Toolset,
    models: Models,
    engine: EngineChoice,
    embedded: Embedded,
    retry: RetryPolicy,
    hooks: Option<Arc<dyn ExecHooks>>,
    prompts: Vec<(concierge_core::ToolId, PromptBuilder)>,
    log_prompts: bool,
    tool_timeout: Duration,
    max_tool_result_bytes: usize,
    max_message_bytes: usize,
    planners: Vec<(AgentId, Arc<dyn Planner + Send + Sync>)>,
    confirmations: Vec<(ToolId, String)>,
    writes: Vec<(ToolId, String)>,
    hub: HubChoice,
    #[cfg(feature = "mcp")]
    mcp_servers: Vec<(String, crate::mcp::McpServerConfig)>,
}

/// The largest message a run may start with, by default (its text, in bytes).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// The builder's hub switches (seed 000's mode, agent, intent detection, fallback).
#[derive(Clone, Debug, Default)]
struct HubChoice {
    mode: Option<Mode>,
    single_agent: Option<AgentId>,
    intent_detection: Option<bool>,
    fallback: Option<AgentId>,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        Self {
            agents: Vec::new(),
            toolsets: Vec::new(),
            loose_tools: Toolset::new("tools"),
            models: Models::default(),
            engine: EngineChoice::Embedded,
            embedded: Embedded::default(),
            retry: RetryPolicy::default(),
            hooks: None,
            prompts: Vec::new(),
            log_prompts: false,
            tool_timeout: Duration::from_secs(60),
            max_tool_result_bytes: crate::tool::DEFAULT_MAX_RESULT_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            planners: Vec::new(),
            confirmations: Vec::new(),
            writes: Vec::new(),
            hub: HubChoice::default(),
            #[cfg(feature = "mcp")]
            mcp_servers: Vec::new(),
        }
    }
}

impl RuntimeBuilder {
    /// Multi mode (the default: with two or more agents a new session starts
    /// at the built-in hub, which finds the agent for each message) or single
    /// mode (one agent; no hub, `list_agents` or `change_goal`).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.hub.mode = Some(mode);
        self
    }

    /// The agent single mode uses and new sessions start with.
    pub fn single_agent(mut self, agent: impl Into<AgentId>) -> Self {
        self.hub.single_agent = Some(agent.into());
        self
    }

    /// Turns the hub's intent detection on (the default) or off (the hub
    /// then always shows the catalogue of agents).
    pub fn intent_detection(mut self, on: bool) -> Self {
        self.hub.intent_detection = Some(on);
        self
    }

    /// The agent that takes greetings and small talk instead of the catalogue.
    pub fn fallback(mut self, agent: impl Into<AgentId>) -> Self {
        self.hub.fallback = Some(agent.into());
        self
    }

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

    /// Adds the agents of agent files (see [`load_agents`](crate::config::load_agents))
    /// and the MCP servers they declare.
    pub fn agent_files(mut self, files: crate::config::AgentFiles) -> Self {
        self.agents.extend(files.agents);
        #[cfg(feature = "mcp")]
        for (name, server) in files.mcp_servers {
            self.mcp_servers.push((name, server));
        }
        self
    }

    /// Makes every call of `tool` ask the person first, with `question` (a
    /// confirmation template with `{argument}` placeholders, e.g. "Delete
    /// the file {path}?"); works for MCP tools too (by their name here).
    pub fn confirm_tool(mut self, tool: impl Into<ToolId>, question: impl Into<String>) -> Self {
        self.confirmations.push((tool.into(), question.into()));
        self
    }

    /// Declares that calls of `tool` write `resource` (a table, say): calls
    /// of one batch that write the same thing run one after another, in
    /// call order; works for MCP tools too (by their name here).
    pub fn tool_writes(mut self, tool: impl Into<ToolId>, resource: impl Into<String>) -> Self {
        self.writes.push((tool.into(), resource.into()));
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
        self.models.set_default(Arc::new(model));
        self
    }

    /// Sets the default model (shared).
    pub fn model_arc(mut self, model: Arc<dyn Model>) -> Self {
        self.models.set_default(model);
        self
    }

    /// Adds a model agents can name (`AgentSpec::model`).
    pub fn named_model(mut self, name: impl Into<String>, model: Arc<dyn Model>) -> Self {
        self.models.insert(name, model);
        self
    }

    /// Uses another engine (one implementing [`OpenEngine`], e.g. a
    /// distributed one) instead of the embedded one.
    pub fn engine(mut self, engine: impl OpenEngine) -> Self {
        self.engine = EngineChoice::Custom(Box::new(engine));
        self
    }

    /// Uses the embedded engine as configured in `embedded`.
    pub fn embedded(mut self, embedded: Embedded) -> Self {
        self.embedded = embedded;
        self.engine = EngineChoice::Embedded;
        self
    }

    /// No engine: the runtime describes agents and tools but cannot run
    /// them (running returns [`Error::EngineNotConfigured`]).
    pub fn without_engine(mut self) -> Self {
        self.engine = EngineChoice::None;
        self
    }

    /// The embedded engine on the SQLite database at `path` (the default is `./concierge.db`).
    #[cfg(feature = "sqlite")]
    pub fn sqlite(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        let settings = self.embedded.clone();
        self.embedded = Embedded::sqlite(path);
        self.embedded.copy_settings(&settings);
        self.engine = EngineChoice::Embedded;
        self
    }

    /// The embedded engine in memory (nothing is durable).
    pub fn in_memory(mut self) -> Self {
        let settings = self.embedded.clone();
        self.embedded = Embedded::memory();
        self.embedded.copy_settings(&settings);
        self.engine = EngineChoice::Embedded;
        self
    }

    /// Opens the embedded engine's database only to read: sessions, history
    /// and events can be seen; nothing is resumed, taken over or run. For
    /// commands that only look (another process may be driving the sessions).
    pub fn read_only(mut self) -> Self {
        self.embedded = self.embedded.read_only(true);
        self
    }

    /// How long a command waits for a session that another live process
    /// drives before failing with [`Error::SessionBusy`] (default 30 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.embedded = self.embedded.busy_timeout(timeout);
        self
    }

    /// How long this process's heartbeat vouches for it to processes that
    /// cannot check it directly (default 10 s).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.embedded = self.embedded.lease(lease);
        self
    }

    /// What this process is, as other processes name it when it holds a
    /// session they want (e.g. "concierge serve").
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.embedded = self.embedded.label(label);
        self
    }

    /// Per-call tool timeout (default 60 s).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }

    /// The largest result a tool may return, as JSON (default 1 MiB); a
    /// larger one is an error for the model naming the tool and the limit.
    pub fn max_tool_result_bytes(mut self, bytes: usize) -> Self {
        self.max_tool_result_bytes = bytes;
        self
    }

    /// The largest text a run may start with (default 256 KiB); a larger
    /// message is refused before anything is journaled.
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Sets how failed model calls are retried.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// How long an idle session stays in memory (default 30 s).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.embedded = self.embedded.idle_timeout(idle);
        self
    }

    /// Input bytes journaled since the last snapshot before a session is
    /// snapshotted again (default 16 KiB; never less than the last snapshot's size).
    pub fn snapshot_after_bytes(mut self, bytes: u64) -> Self {
        self.embedded = self.embedded.snapshot_after_bytes(bytes);
        self
    }

    /// Keeps every journal entry instead of compacting a session's entries
    /// before its latest snapshot (see [`Embedded::keep_journal`]).
    pub fn keep_journal(mut self, keep: bool) -> Self {
        self.embedded = self.embedded.keep_journal(keep);
        self
    }

    /// How long the SQLite journal gathers entries before a commit when it
    /// is under load (default 1 ms; zero commits at once). Longer windows
    /// mean fewer fsyncs and bytes per turn and a little more latency per input.
    pub fn commit_window(mut self, window: Duration) -> Self {
        self.embedded = self.embedded.commit_window(window);
        self
    }

    /// Sets a model's price (USD per million tokens) so runs report their cost.
    pub fn price(mut self, model: impl Into<String>, price: Price) -> Self {
        self.models.set_price(model, price);
        self
    }

    /// Whether model-call traces carry the prompt (off by default).
    pub fn log_prompts(mut self, on: bool) -> Self {
        self.log_prompts = on;
        self
    }

    /// Observes model and tool calls (spans, metrics) instead of the default
    /// tracing hooks.
    pub fn hooks(mut self, hooks: Arc<dyn ExecHooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Builds the child's message of an agent tool (see [`AgentTool`](concierge_core::AgentTool))
    /// with a closure over the call's arguments, instead of the tool's
    /// `prompt` template: for messages a template cannot write. Keep it a
    /// function of the arguments alone: the Temporal engine calls it in the
    /// session's workflow, which replays it.
    ///
    /// ```
    /// # use concierge::{AgentSpec, AgentTool, Runtime};
    /// let builder = Runtime::builder()
    ///     .agent(AgentSpec::new("notes").description("Keeps notes."))
    ///     .agent(AgentSpec::new("router").agent_tool(AgentTool::new("notes")))
    ///     .agent_prompt("notes", |args: &serde_json::Value| {
    ///         format!("Note this down: {}", args["request"].as_str().unwrap_or_default())
    ///     });
    /// ```
    pub fn agent_prompt(
        mut self,
        tool: impl Into<concierge_core::ToolId>,
        builder: impl Fn(&Value) -> String + Send + Sync + 'static,
    ) -> Self {
        self.prompts.push((tool.into(), Arc::new(builder)));
        self
    }

    /// Adds an MCP server; agents use its tools as the toolset `name`. It
    /// starts in the background when the runtime opens (or, when an earlier
    /// process remembered its tools, when a run first calls one); a run of
    /// an agent that uses it waits for its tools only if they are not known yet.
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

    /// Resolves the catalog, opens the engine and resumes the unfinished runs
    /// it can (those whose owner process is gone).
    pub async fn build(self) -> Result<Runtime> {
        let mut registry = ToolRegistry::new();
        registry.set_timeout(self.tool_timeout);
        registry.set_max_result_bytes(self.max_tool_result_bytes);
        for (tool, resource) in self.writes {
            registry.set_writes(tool, resource);
        }
        for (tool, question) in self.confirmations {
            registry.set_confirmation(tool, question);
        }
        let mut toolsets = self.toolsets;
        if !self.loose_tools.tools.is_empty() {
            toolsets.push(self.loose_tools);
        }
        for set in &toolsets {
            for tool in &set.tools {
                registry.add(&set.name, tool.clone())?;
            }
        }
        #[cfg(feature = "mcp")]
        let mcp = mcp::McpState::prepare(&mut registry, self.mcp_servers)?;
        let mut catalog = Catalog::builder();
        if let Some(mode) = self.hub.mode {
            catalog = catalog.mode(mode);
        }
        if let Some(agent) = self.hub.single_agent {
            catalog = catalog.single_agent(agent);
        }
        if let Some(on) = self.hub.intent_detection {
            catalog = catalog.intent_detection(on);
        }
        if let Some(agent) = self.hub.fallback {
            catalog = catalog.fallback(agent);
        }
        for (name, specs) in registry.toolsets() {
            catalog = catalog.toolset(name, specs);
        }
        for agent in &self.agents {
            if let Some(model) = &agent.model {
                if !self.models.contains(model) && !self.models.has_default() {
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
        #[cfg(feature = "mcp")]
        let dynamic = mcp.servers();
        #[cfg(not(feature = "mcp"))]
        let dynamic: Vec<String> = Vec::new();
        let catalogs = Arc::new(Catalogs::new(catalog.build()?, dynamic));
        let hooks = self.hooks.unwrap_or_else(|| {
            Arc::new(TracingHooks {
                log_prompts: self.log_prompts,
            })
        });
        let mut executor = Executor::new(self.models, Arc::new(registry))
            .retry(self.retry)
            .hooks(hooks);
        for (tool, builder) in self.prompts {
            executor = executor.prompt_builder(tool, builder);
        }
        let executor = Arc::new(executor);
        let current = catalogs.current().catalog;
        let mut setup = RunSetup::new();
        for resolved in current.agents() {
            setup = setup.planner(
                resolved.spec.id.clone(),
                planner_for(&current, executor.models(), resolved),
            );
        }
        let parts = EngineParts {
            catalogs: catalogs.clone(),
            executor: executor.clone(),
            setup,
        };
        // A runtime that only reads starts no MCP server in the background.
        #[cfg(feature = "mcp")]
        let reads_only = matches!(self.engine, EngineChoice::Embedded) && self.embedded.is_read_only();
        let (engine, has_engine, description): (Arc<dyn Engine>, bool, String) = match self.engine {
            EngineChoice::Embedded => {
                let description = match self.embedded.path() {
                    Some(path) => format!("embedded (SQLite at {})", path.display()),
                    None => "embedded (memory)".to_string(),
                };
                (Box::new(self.embedded).open(parts).await?, true, description)
            }
            EngineChoice::Custom(open) => (open.open(parts).await?, true, "custom".to_string()),
            EngineChoice::None => (Arc::new(NoEngine), false, "none".to_string()),
        };
        let runtime = Runtime {
            inner: Arc::new(Inner {
                engine,
                has_engine,
                description,
                catalogs,
                executor,
                overrides: RwLock::new(HashMap::new()),
                max_message_bytes: self.max_message_bytes,
                recovered: std::sync::Mutex::new(Vec::new()),
                resumed: std::sync::Mutex::new(HashMap::new()),
                tools_status: tokio::sync::broadcast::channel(64).0,
                #[cfg(feature = "mcp")]
                mcp,
            }),
        };
        #[cfg(feature = "mcp")]
        {
            runtime.restore_remembered_tools();
            if has_engine && !reads_only {
                runtime.supervise_mcp();
            }
        }
        runtime.inner.engine.recover().await?;
        let resumed = runtime.inner.engine.take_resumed();
        if let Ok(mut recovered) = runtime.inner.recovered.lock() {
            *recovered = resumed.iter().map(|(id, _)| id.clone()).collect();
        }
        if let Ok(mut stops) = runtime.inner.resumed.lock() {
            stops.extend(resumed);
        }
        Ok(runtime)
    }
}

struct Inner {
    engine: Arc<dyn Engine>,
    has_engine: bool,
    description: String,
    catalogs: Arc<Catalogs>,
    executor: Arc<Executor>,
    overrides: RwLock<HashMap<AgentId, PolicyDelta>>,
    max_message_bytes: usize,
    recovered: std::sync::Mutex<Vec<SessionId>>,
    /// Where the runs resumed at open will stop, until someone waits for them.
    resumed: std::sync::Mutex<HashMap<SessionId, RunStop>>,
    /// The `tools_status` events this runtime gives, every session's.
    tools_status: tokio::sync::broadcast::Sender<Event>,
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
        f.debug_struct("Runtime")
            .field("engine", &self.inner.description)
            .finish()
    }
}

impl Runtime {
    /// Starts building a runtime.
    pub fn builder() -> RuntimeBuilder {
        // Any HTTP client built in this process (a test's, rmcp's) then has TLS.
        crate::tls::install_crypto_provider();
        RuntimeBuilder::default()
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalogs.current().catalog
    }

    /// The engine, unless the runtime was built without one.
    fn engine_or_err(&self) -> Result<&Arc<dyn Engine>> {
        if self.inner.has_engine {
            Ok(&self.inner.engine)
        } else {
            Err(Error::EngineNotConfigured)
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

    /// How runs start now, per agent: a custom planner wins; then a model if
    /// one is configured for the agent; else the agent's rules (the core
    /// refuses the run if it has none, saying that a model must be
    /// configured). Policies: the agent's, with this process's overrides and
    /// the run's own delta.
    fn setup(&self, catalog: &Catalog, delta: Option<&PolicyDelta>, named: Option<&AgentId>) -> RunSetup {
        let overrides = self
            .inner
            .overrides
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let models = self.inner.executor.models();
        let mut setup = RunSetup::new();
        // A run that names its agent needs only that agent's entry; otherwise
        // the session's current agent decides, which only the engine knows.
        let agents: Vec<&concierge_core::ResolvedAgent> = match named.and_then(|a| catalog.agent(a)) {
            Some(resolved) => vec![resolved],
            None => catalog.agents().collect(),
        };
        for resolved in agents {
            let agent = &resolved.spec.id;
            setup = setup.planner(agent.clone(), planner_for(catalog, models, resolved));
            let own = overrides.get(agent);
            if own.is_some() || delta.is_some() {
                let mut policy = resolved.spec.policy.clone();
                if let Some(d) = own {
                    policy = policy.with(d);
                }
                if let Some(d) = delta {
                    policy = policy.with(d);
                }
                setup = setup.policy(agent.clone(), policy);
            }
        }
        setup
    }

    /// Starts a run in `options`' session. `agent` names who takes it; `None`
    /// continues with the session's current agent.
    pub(crate) async fn start_run(
        &self,
        agent: Option<AgentId>,
        messages: Vec<Message>,
        options: RunOptions,
    ) -> Result<RunHandle> {
        // A caller that waits for the answer is queued by default.
        let default = if options.waits {
            Multitask::Enqueue
        } else {
            Multitask::Reject
        };
        let mut turns = MultitaskTurns::new(options.multitask, default);
        match self.prepare_run(agent, messages, options).await? {
            Prepared::Answered(handle) => Ok(handle),
            Prepared::Run(run) => {
                let started = turns
                    .attempt(self, &run, || {
                        run.engine
                            .start(run.session.clone(), run.start.clone(), run.setup.clone())
                    })
                    .await?;
                Ok(RunHandle::new(
                    self.clone(),
                    run.session,
                    started.run_id,
                    started.stop,
                    started.first_seq,
                ))
            }
        }
    }

    /// Runs a turn as [`Runtime::start_run`] starts it and waits for its stop
    /// (in one exchange with the engine where it can).
    pub(crate) async fn run_to_stop(
        &self,
        agent: Option<AgentId>,
        messages: Vec<Message>,
        options: RunOptions,
    ) -> Result<RunOutput> {
        // A caller that waits for the answer is queued by default.
        let mut turns = MultitaskTurns::new(options.multitask, Multitask::Enqueue);
        match self.prepare_run(agent, messages, options).await? {
            Prepared::Answered(handle) => handle.wait().await,
            Prepared::Run(run) => {
                turns
                    .attempt(self, &run, || {
                        run.engine
                            .run(run.session.clone(), run.start.clone(), run.setup.clone())
                    })
                    .await
            }
        }
    }

    /// What a run's start comes to: the checks, the answer to a parked call
    /// read by the model, or the engine's start with its setup.
    async fn prepare_run(
        &self,
        agent: Option<AgentId>,
        messages: Vec<Message>,
        options: RunOptions,
    ) -> Result<Prepared> {
        let session = options.session_id.ok_or(Error::MissingSessionId)?;
        if session.as_str().trim().is_empty() {
            return Err(Error::MissingSessionId);
        }
        self.check_message_size(messages.iter().map(|m| m.text().len()).sum())?;
        let engine = self.engine_or_err()?.clone();
        #[cfg(feature = "mcp")]
        {
            let text = messages.last().map(Message::text).unwrap_or_default();
            self.ensure_mcp(&engine, &session, agent.as_ref(), &text).await?;
        }
        let start = StartRun {
            run_id: options.run_id,
            catalog_version: None,
            agent,
            messages,
            planner: PlannerMode::Model,
            policy: None,
            user: options.user,
            tenant: options.tenant.clone(),
            asked_at: options.asked_at,
            parent: None,
            context: options.context,
            turn_id: options.turn_id,
            labels: options.labels,
            metadata: options.metadata,
            at: crate::engine::now(),
        };
        let catalog = self.catalog();
        // An answer to a parked call that the rules cannot read goes to the model first.
        if let Some(handle) = self.answer_with_model(&engine, &session, &start, &catalog).await {
            return Ok(Prepared::Answered(handle));
        }
        // A new session that names no agent starts with the default one (the hub in multi mode).
        let setup = self
            .setup(&catalog, options.policy.as_ref(), start.agent.as_ref())
            .first_agent(catalog.default_agent())
            .engine_options(options.engine);
        Ok(Prepared::Run(Box::new(PreparedRun {
            engine,
            session,
            start,
            setup,
        })))
    }

    /// Opens a session before its first message: it exists, is listed and
    /// can be followed from now on. `agent` takes its first message (and the
    /// session is pinned to it); `None` is the default agent (the hub in
    /// multi mode). `options` gives the session id (required) and tenant.
    pub async fn open(&self, agent: Option<AgentId>, options: RunOptions) -> Result<()> {
        let session = options.session_id.ok_or(Error::MissingSessionId)?;
        if session.as_str().trim().is_empty() {
            return Err(Error::MissingSessionId);
        }
        let engine = self.engine_or_err()?.clone();
        let catalog = self.catalog();
        let named = agent.is_some();
        let agent = match agent.or_else(|| catalog.default_agent()) {
            Some(agent) => agent,
            None => {
                let known: Vec<String> = catalog.agent_ids().iter().map(ToString::to_string).collect();
                return Err(Error::RunStartFailed(format!(
                    "there is no default agent (several agents and no hub): name the session's agent, one of {}",
                    known.join(", ")
                )));
            }
        };
        let open = OpenSession {
            agent,
            named,
            tenant: options.tenant,
            at: crate::engine::now(),
        };
        engine.open(session, open, options.engine).await
    }

    /// Starts a turn in a session with its current agent; a new session
    /// starts with the default agent (the hub in multi mode, see
    /// [`Runtime::default_agent`]).
    pub async fn start(&self, messages: impl IntoMessages, options: RunOptions) -> Result<RunHandle> {
        self.start_run(None, messages.into_messages(), options).await
    }

    /// Runs a turn in a session with its current agent (a new one starts
    /// with the default agent), and waits for it.
    pub async fn send(&self, messages: impl IntoMessages, options: RunOptions) -> Result<RunOutput> {
        self.run_to_stop(None, messages.into_messages(), options).await
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
        let stop = self
            .engine_or_err()?
            .confirm(session.into(), call_id.into(), fingerprint.into(), decision)
            .await?;
        stop.output().await
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

    /// Cancels the session's run in progress, if one is (its output is
    /// returned); the session goes on, and its next message starts a new run.
    pub async fn cancel_run(
        &self,
        session: impl Into<SessionId>,
        reason: impl Into<String>,
    ) -> Result<Option<RunOutput>> {
        let session = session.into();
        let engine = self.engine_or_err()?.clone();
        let output = engine.cancel_run(session.clone(), reason.into()).await?;
        end_children(engine.as_ref(), &session).await;
        Ok(output)
    }

    /// Ends a session: a run in progress is cancelled (its output is
    /// returned), and the session takes no more input.
    pub async fn end(&self, session: impl Into<SessionId>, reason: impl Into<String>) -> Result<Option<RunOutput>> {
        let session = session.into();
        let engine = self.engine_or_err()?.clone();
        let output = engine.end(session.clone(), reason.into()).await?;
        end_children(engine.as_ref(), &session).await;
        Ok(output)
    }

    /// Waits for the session's run in progress to stop (finish or park) and
    /// returns its output; `None` if no run is in progress. For a session
    /// whose run was resumed when the engine opened, the first call returns
    /// that run's output even if it has finished already.
    pub async fn wait(&self, session: impl Into<SessionId>) -> Result<Option<RunOutput>> {
        let session = session.into();
        let resumed = self.inner.resumed.lock().ok().and_then(|mut r| r.remove(&session));
        if let Some(stop) = resumed {
            return Ok(Some(stop.output().await?));
        }
        match self.engine_or_err()?.wait(session).await? {
            Some(stop) => Ok(Some(stop.output().await?)),
            None => Ok(None),
        }
    }

    /// The session as it stands (history, current agent, blackboard, usage, last output).
    pub async fn session(&self, session: impl Into<SessionId>) -> Result<Session> {
        let id = session.into();
        self.engine_or_err()?
            .session(id.clone())
            .await?
            .ok_or(Error::SessionNotFound(id))
    }

    /// The session's messages.
    pub async fn history(&self, session: impl Into<SessionId>) -> Result<Vec<Message>> {
        Ok(self.session(session).await?.history().to_vec())
    }

    /// Every session the engine knows.
    pub async fn sessions(&self) -> Result<Vec<SessionSummary>> {
        self.engine_or_err()?.sessions().await
    }

    /// Lets idle sessions go (recording where they end) and waits for the
    /// engine to write it down. Runs still in flight keep going (and are
    /// taken over by the next process if this one ends first). Call it before
    /// exiting a process.
    pub async fn shutdown(&self) {
        self.inner.engine.shutdown().await;
        #[cfg(feature = "mcp")]
        self.inner.mcp.shutdown().await;
    }

    /// Resolves, with why, if the engine stops working by itself (on
    /// Temporal: this process's workers ended on an error they cannot
    /// retry). A long-running program (`concierge worker`, `concierge
    /// serve`) ends on it, so that its supervisor can restart it.
    pub async fn halted(&self) -> Error {
        self.inner.engine.halted().await
    }

    /// The largest message a run accepts, in bytes (see
    /// [`RuntimeBuilder::max_message_bytes`]); front doors check it before
    /// starting a run so they can name the field that is too long.
    pub fn max_message_bytes(&self) -> usize {
        self.inner.max_message_bytes
    }

    /// [`Error::MessageTooLarge`] if a message of `size` bytes is over
    /// [`max_message_bytes`](Self::max_message_bytes). Runs check it; front
    /// doors check it first to name the request's field.
    pub fn check_message_size(&self, size: usize) -> Result<()> {
        let limit = self.inner.max_message_bytes;
        if size > limit {
            return Err(Error::MessageTooLarge { size, limit });
        }
        Ok(())
    }

    /// How many sessions are in memory now (idle ones leave after the idle timeout).
    pub fn sessions_in_memory(&self) -> usize {
        self.inner.engine.sessions_in_memory()
    }

    /// The `tools_status` events this runtime gives from now on, every
    /// session's (each is also in its session's stream, live only): for a
    /// front door that prints them without following the session, as
    /// `concierge run` does.
    pub fn tools_status(&self) -> tokio::sync::broadcast::Receiver<Event> {
        self.inner.tools_status.subscribe()
    }

    /// Sessions whose unfinished runs were resumed when the engine opened.
    pub fn recovered(&self) -> Vec<SessionId> {
        self.inner.recovered.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// What the engine's store has written.
    pub fn journal_stats(&self) -> JournalStats {
        self.inner.engine.stats()
    }

    /// The engine (to call it directly, e.g. from another front door).
    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.inner.engine
    }

    /// The agent a new session that names none starts with: the built-in
    /// hub in multi mode (two or more agents), else the single-mode agent or
    /// the only one.
    pub fn default_agent(&self) -> Option<AgentId> {
        self.catalog().default_agent()
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

    /// The tools of a category (seed 000's `get_tools_by_category`),
    /// matched case-insensitively, sorted by name.
    pub fn tools_by_category(&self, category: &str) -> Vec<ToolSpec> {
        let wanted = category.trim();
        self.catalog()
            .tools()
            .filter(|t| t.category.as_deref().is_some_and(|c| c.eq_ignore_ascii_case(wanted)))
            .cloned()
            .collect()
    }

    /// Every tool category, with how many tools each has.
    pub fn tool_categories(&self) -> std::collections::BTreeMap<String, usize> {
        let mut categories = std::collections::BTreeMap::new();
        for tool in self.catalog().tools() {
            if let Some(category) = &tool.category {
                *categories.entry(category.to_lowercase()).or_insert(0) += 1;
            }
        }
        categories
    }

    /// The goals a person can choose from, as the hub offers them (agents
    /// called only as tools of another are reached through it, and are not
    /// goals of their own), in declaration order.
    pub fn goals(&self) -> Vec<AgentSpec> {
        let catalog = self.catalog();
        let offered = catalog.offered_agents();
        if offered.is_empty() {
            return catalog.agents().map(|a| a.spec.clone()).collect();
        }
        offered.into_iter().cloned().collect()
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
            user: None,
            blackboard: Default::default(),
            asked_at: crate::engine::now(),
        };
        self.inner.executor.tools().execute(&call, cx).await.0
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
        self.subscribe_after(session, EventId::durable(from_seq.saturating_sub(1)))
    }

    /// The session's events after `after` (an event id as the stream gave
    /// it, model deltas included: `12.3` resumes after the third delta that
    /// followed event 12).
    ///
    /// The events of child runs (agents called as tools) are in the stream
    /// too, from the `child_started` event on, each marked with its child
    /// session: a UI nests them under the call.
    pub fn subscribe_after(&self, session: impl Into<SessionId>, after: EventId) -> BoxStream<'static, Result<Event>> {
        match self.engine_or_err() {
            Ok(engine) => children::with_children(engine.clone(), session.into(), after),
            Err(error) => futures::stream::once(async move { Err(error) }).boxed(),
        }
    }

    /// The place at the end of the session's stream now, for [`Runtime::follow`]:
    /// its last event and, while it waits on a question a child run asked
    /// (an agent called as a tool), the last events of that child and of
    /// the children between. A subscriber that starts here sees what
    /// happens next, in the children too.
    pub async fn place(&self, session: impl Into<SessionId>) -> Result<StreamCursor> {
        let root = session.into();
        let state = self.session(root.clone()).await?;
        let mut cursor = StreamCursor::from(EventId::durable(state.last_seq()));
        let asking = state
            .pending_confirmation()
            .and_then(|p| p.session)
            .or_else(|| state.pending_choice().and_then(|p| p.session));
        let Some(asking) = asking else {
            return Ok(cursor);
        };
        let Some(relative) = cursor::relative_to(&root, &asking) else {
            return Ok(cursor);
        };
        // Each session from the root's child down to the one asking is open,
        // its question (a stop) shown and not yet answered.
        let mut path = String::new();
        for part in relative.split('.') {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(part);
            let child = self.session(cursor::child_of(&root, &path)).await?;
            cursor.open_child(path.clone(), EventId::durable(child.last_seq()), 1);
        }
        Ok(cursor)
    }

    /// Checks that the child runs `cursor` names are `root`'s own (the
    /// session as the caller just read it):
    /// sessions that its calls started (and theirs), of its tenant. A front
    /// door checks a cursor a client sent before following it.
    pub async fn check_cursor(&self, root: &Session, cursor: &StreamCursor) -> Result<()> {
        let session = root.id();
        for (child, _) in cursor.child_sessions(session) {
            let state = match self.engine_or_err()?.session(child.clone()).await? {
                Some(state) => state,
                None => return Err(Error::NoSuchChildRun(child_name(session, &child))),
            };
            let parent = child.parent_and_call().map(|(parent, _)| parent);
            let linked = state
                .parent()
                .is_some_and(|p| Some(&p.session) == parent.as_ref() && state.tenant() == root.tenant());
            if !linked {
                return Err(Error::NoSuchChildRun(child_name(session, &child)));
            }
        }
        Ok(())
    }

    /// The session's events after `cursor` with its child runs' merged in,
    /// each with the cursor to resume after it: a subscriber that stops
    /// anywhere (in a child's events too) and comes back with the last
    /// cursor it saw gets every later event, the children's included,
    /// exactly once. `StreamCursor::from(EventId::default())` is the start.
    pub fn follow(
        &self,
        session: impl Into<SessionId>,
        cursor: StreamCursor,
    ) -> BoxStream<'static, Result<(Event, StreamCursor)>> {
        match self.engine_or_err() {
            Ok(engine) => children::follow(engine.clone(), session.into(), cursor),
            Err(error) => futures::stream::once(async move { Err(error) }).boxed(),
        }
    }

    /// The events of one run, ending with its `run_finished` event.
    pub fn subscribe_run(
        &self,
        session: impl Into<SessionId>,
        run: RunId,
        from_seq: u64,
    ) -> BoxStream<'static, Result<Event>> {
        let root = session.into();
        let events = self.subscribe(root.clone(), from_seq);
        futures::stream::unfold((events, run, root, false), |(mut events, run, root, done)| async move {
            if done {
                return None;
            }
            loop {
                match events.next().await? {
                    // A child's events belong to the call that started it.
                    Ok(event) if event.session != root => return Some((Ok(event), (events, run, root, false))),
                    Ok(event) if event.run.as_ref() != Some(&run) => continue,
                    Ok(event) => {
                        let last = matches!(event.kind, EventKind::RunFinished { .. });
                        return Some((Ok(event), (events, run, root, last)));
                    }
                    Err(error) => return Some((Err(error), (events, run, root, false))),
                }
            }
        })
        .boxed()
    }
}

/// How a run of `resolved` plans: a custom planner wins; then a model if one
/// is configured for the agent; else the agent's rules.
/// A run's start, ready for the engine (or already answered).
enum Prepared {
    /// An answer to a parked call, read by the model, already under way.
    Answered(RunHandle),
    /// The engine's start.
    Run(Box<PreparedRun>),
}

/// What the engine's start is given.
struct PreparedRun {
    engine: Arc<dyn Engine>,
    session: SessionId,
    start: StartRun,
    setup: RunSetup,
}

/// How a message that found its session's run in progress makes way for
/// itself, by its [`Multitask`] policy.
struct MultitaskTurns {
    /// The request's policy (`None`: the agent's, else `default`).
    asked: Option<Multitask>,
    default: Multitask,
    /// How many times the message found a run in progress.
    tries: u32,
}

impl MultitaskTurns {
    /// How many runs a queued message waits behind before it gives up (each
    /// wait is for a run to stop: other queued messages that went first).
    const MAX_TRIES: u32 = 64;

    fn new(asked: Option<Multitask>, default: Multitask) -> Self {
        Self {
            asked,
            default,
            tries: 0,
        }
    }

    /// The policy: the request's, else the session's agent's, else the default.
    async fn policy(&self, rt: &Runtime, session: &SessionId) -> Multitask {
        if let Some(asked) = self.asked {
            return asked;
        }
        let agent = match rt.inner.engine.session(session.clone()).await {
            Ok(Some(state)) => Some(state.agent().clone()),
            _ => None,
        };
        agent
            .and_then(|agent| rt.catalog().agent(&agent).and_then(|a| a.spec.multitask))
            .unwrap_or(self.default)
    }

    /// Makes `attempt` (the engine's start of `run`) until it is not refused
    /// for a run in progress, making way for it by the policy in between.
    async fn attempt<T, F>(&mut self, rt: &Runtime, run: &PreparedRun, attempt: impl Fn() -> F) -> Result<T>
    where
        F: std::future::Future<Output = Result<T>>,
    {
        loop {
            match attempt().await {
                Err(Error::Rejected(busy @ StepError::RunInProgress { .. })) => self.make_way(rt, run, busy).await?,
                other => return other.map_err(|error| not_found_for_others(error, &run.session)),
            }
        }
    }

    /// Refuses with `busy` (reject), or waits for the run in progress to
    /// stop (enqueue), or cancels it (interrupt); then the caller tries again.
    async fn make_way(&mut self, rt: &Runtime, run: &PreparedRun, busy: StepError) -> Result<()> {
        self.tries += 1;
        let policy = self.policy(rt, &run.session).await;
        if policy == Multitask::Reject || self.tries > Self::MAX_TRIES {
            return Err(Error::Rejected(busy));
        }
        if policy == Multitask::Interrupt {
            let reason = "a new message interrupted it".to_string();
            match run.engine.cancel_run(run.session.clone(), reason).await {
                Ok(_) | Err(Error::Rejected(StepError::Idle)) => {}
                Err(error) => return Err(error),
            }
            end_children(run.engine.as_ref(), &run.session).await;
            return Ok(());
        }
        // Queued: behind the run in progress (in this process, or one a
        // process that died left and the engine took over).
        match run.engine.wait(run.session.clone()).await? {
            Some(stop) => {
                // However it stopped (finished, failed, or waits for the
                // person), the message goes next.
                let _ = stop.output().await;
            }
            // It stopped in between (or another process drives it): a moment, then again.
            None => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
        Ok(())
    }
}

/// Another tenant's session is, to this caller, no session at all.
fn not_found_for_others(error: Error, session: &SessionId) -> Error {
    match error {
        Error::Rejected(StepError::OtherTenant) => Error::SessionNotFound(session.clone()),
        error => error,
    }
}

fn planner_for(
    catalog: &Catalog,
    models: &crate::model::Models,
    resolved: &concierge_core::ResolvedAgent,
) -> PlannerMode {
    if catalog.custom_planner(&resolved.spec.id).is_some() {
        PlannerMode::Custom
    } else if models.available_for(&resolved.spec) {
        PlannerMode::Model
    } else {
        PlannerMode::Rules
    }
}

fn join<T: std::fmt::Display>(items: Vec<T>) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// How a cursor names `root`'s descendant `child` (for an error message).
fn child_name(root: &SessionId, child: &SessionId) -> String {
    cursor::relative_to(root, child).unwrap_or_else(|| child.to_string())
}

/// Ends the child runs still under way below `session` (agents it called
/// as tools, and theirs): nothing is left waiting for a person who has
/// left. A child that cannot be ended now is left to its own course.
async fn end_children(engine: &dyn Engine, session: &SessionId) {
    let prefix = format!("{session}{}", SessionId::CHILD_SEPARATOR);
    let Ok(all) = engine.sessions().await else {
        return;
    };
    for summary in all.into_iter().filter(|s| s.id.as_str().starts_with(&prefix)) {
        let Ok(Some(child)) = engine.session(summary.id.clone()).await else {
            continue;
        };
        let below = child
            .parent()
            .is_some_and(|p| p.session == *session || p.session.as_str().starts_with(&prefix));
        if below && !child.is_ended() && child.active_run().is_some() {
            let reason = "the conversation that asked it was ended".to_string();
            if let Err(error) = engine.end(summary.id.clone(), reason).await {
                tracing::warn!(child = %summary.id, %error, "a child run could not be ended with its parent");
            }
        }
    }
}
