//! Building a [`Runtime`]: agents, tools, models, the engine and the hub's
//! switches, then one [`RuntimeBuilder::build`] that resolves the catalog,
//! opens the engine and resumes what a stopped process left.

use super::readiness::Readiness;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use concierge_core::{AgentId, AgentSpec, Catalog, Mode, Planner, ToolId};
use serde_json::Value;

#[cfg(feature = "mcp")]
use super::mcp;
use super::{Inner, Runtime, planner_for};
use crate::engine::{
    Catalogs, Embedded, Engine, EngineParts, ExecHooks, Executor, NoEngine, OpenEngine, PromptBuilder, RunSetup,
    TracingHooks,
};
use crate::error::{Error, Result};
use crate::model::{Model, Models, Price, RetryPolicy};
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
    #[cfg(feature = "a2a")]
    a2a_agents: Vec<(String, crate::a2a::A2aAgentConfig)>,
    background_recovery: bool,
    #[cfg(feature = "sqlite")]
    memory: Option<crate::memory::MemoryStore>,
    #[cfg(feature = "sqlite")]
    schedules: Option<crate::schedule::ScheduleStore>,
    fire_schedules: bool,
    #[cfg(feature = "sqlite")]
    webhooks: Option<crate::webhook::WebhookStore>,
    deliver_webhooks: bool,
    webhooks_to_private: bool,
    guards: crate::guardrail::Guards,
}

/// The largest message a run may start with, by default (its text, in bytes).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// The builder's hub switches: multi or single mode, the single agent,
/// intent detection, the fallback agent (docs/agents.md).
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
            #[cfg(feature = "a2a")]
            a2a_agents: Vec::new(),
            background_recovery: false,
            #[cfg(feature = "sqlite")]
            memory: None,
            #[cfg(feature = "sqlite")]
            schedules: None,
            fire_schedules: true,
            #[cfg(feature = "sqlite")]
            webhooks: None,
            deliver_webhooks: true,
            webhooks_to_private: true,
            guards: crate::guardrail::Guards::default(),
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
    pub fn agent_files(mut self, files: crate::agent_files::AgentFiles) -> Self {
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

    /// Where schedules are kept ([`Runtime::schedules`](crate::Runtime::schedules)).
    /// By default: the embedded engine's SQLite database (or, for an
    /// in-memory runtime, memory).
    #[cfg(feature = "sqlite")]
    pub fn schedule_store(mut self, store: crate::schedule::ScheduleStore) -> Self {
        self.schedules = Some(store);
        self
    }

    /// Whether this runtime fires the schedules that are due (default: yes,
    /// for a runtime that runs; processes on one database take turns). A
    /// one-shot command that only adds or lists schedules turns it off.
    pub fn fire_schedules(mut self, fire: bool) -> Self {
        self.fire_schedules = fire;
        self
    }

    /// Where webhooks and their outbox are kept ([`Runtime::webhooks`](crate::Runtime::webhooks)).
    /// By default: the embedded engine's SQLite database (or, for an
    /// in-memory runtime, memory).
    #[cfg(feature = "sqlite")]
    pub fn webhook_store(mut self, store: crate::webhook::WebhookStore) -> Self {
        self.webhooks = Some(store);
        self
    }

    /// Whether this runtime delivers webhooks (default: yes, for a runtime
    /// that runs; processes on one database take turns). A one-shot
    /// command turns it off.
    pub fn deliver_webhooks(mut self, deliver: bool) -> Self {
        self.deliver_webhooks = deliver;
        self
    }

    /// Whether webhooks may post to loopback, private and link-local
    /// addresses (default: yes). A deployment that serves tenants it does
    /// not trust turns it off, so that a webhook cannot reach inside its
    /// network (a cloud's metadata service, an admin port): URLs naming
    /// such an address are refused, and names are resolved to public
    /// addresses only.
    pub fn webhooks_to_private_addresses(mut self, allow: bool) -> Self {
        self.webhooks_to_private = allow;
        self
    }

    /// Where what is remembered about people is kept (the `memory` toolset,
    /// [`AgentSpec::memory`]). By default: the embedded engine's SQLite
    /// database (or, for an in-memory runtime, memory).
    #[cfg(feature = "sqlite")]
    pub fn memory_store(mut self, store: crate::memory::MemoryStore) -> Self {
        self.memory = Some(store);
        self
    }

    /// Registers a guardrail written in Rust under `name`: agents use it
    /// with `{ kind = "custom", guard = "<name>" }` at any stage.
    pub fn guard(mut self, name: impl Into<String>, guard: impl crate::guardrail::Guard) -> Self {
        self.guards.insert(name, Arc::new(guard));
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

    /// Resumes the unfinished runs the engine finds after
    /// [`build`](Self::build) returns, in the background, instead of
    /// before: a server answers (liveness) at once however many runs a
    /// crash left, and [`Runtime::readiness`] says when they are all under
    /// way again. [`Runtime::recovered`] is complete once
    /// [`Runtime::ready`] returns.
    pub fn recover_in_background(mut self, background: bool) -> Self {
        self.background_recovery = background;
        self
    }

    /// How many calls of the runs taken over at start are under way at once
    /// on the embedded engine (default 128): after a restart with thousands
    /// of runs in flight, they resume in waves instead of all calling the
    /// model at once.
    pub fn resume_concurrency(mut self, calls: usize) -> Self {
        self.embedded = self.embedded.resume_concurrency(calls);
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
    /// snapshotted again (default 16 KiB; never less than the last
    /// snapshot's size times [`Embedded::snapshot_growth`]).
    pub fn snapshot_after_bytes(mut self, bytes: u64) -> Self {
        self.embedded = self.embedded.snapshot_after_bytes(bytes);
        self
    }

    /// How many times its last snapshot's size a session's journal grows
    /// before it is snapshotted again (see [`Embedded::snapshot_growth`]).
    pub fn snapshot_growth(mut self, factor: u64) -> Self {
        self.embedded = self.embedded.snapshot_growth(factor);
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

    /// Adds a remote A2A agent; agents that name `name` in their toolsets
    /// may call it as the tool `name` (see [`crate::a2a`]).
    #[cfg(feature = "a2a")]
    pub fn a2a_agent(mut self, name: impl Into<String>, config: crate::a2a::A2aAgentConfig) -> Self {
        self.a2a_agents.push((name.into(), config));
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
        #[cfg(feature = "sqlite")]
        let memory = self.memory.map_or_else(
            || match self.embedded.path() {
                Some(path) => Ok(crate::memory::MemoryStore::at(path)),
                None => crate::memory::MemoryStore::in_memory(),
            },
            Ok,
        )?;
        #[cfg(feature = "sqlite")]
        let schedules = match self.schedules {
            Some(store) => store,
            None => match self.embedded.path() {
                Some(path) => crate::schedule::ScheduleStore::at(path),
                None => crate::schedule::ScheduleStore::in_memory()?,
            },
        };
        #[cfg(feature = "sqlite")]
        let webhooks = match self.webhooks {
            Some(store) => store,
            None => match self.embedded.path() {
                Some(path) => crate::webhook::WebhookStore::at(path),
                None => crate::webhook::WebhookStore::in_memory()?,
            },
        };
        #[cfg(feature = "sqlite")]
        {
            // A built-in toolset is there when an agent names it, unless a
            // toolset or MCP server of the person's own has the name.
            let builtin = |name: &str, toolsets: &[crate::tool::Toolset]| {
                self.agents.iter().any(|a| a.toolsets.iter().any(|t| t == name))
                    && !toolsets.iter().any(|t| t.name == name)
                    && !self.mcp_servers.iter().any(|(server, _)| server == name)
            };
            if builtin(crate::tool::MEMORY_TOOLSET, &toolsets) {
                toolsets.push(crate::tool::memory_toolset(memory.clone()));
            }
            if builtin(crate::tool::SCHEDULE_TOOLSET, &toolsets) {
                toolsets.push(crate::tool::schedule_toolset(schedules.clone()));
            }
        }
        for set in &toolsets {
            for tool in &set.tools {
                registry.add(&set.name, tool.clone())?;
            }
        }
        #[cfg(feature = "a2a")]
        for (name, config) in self.a2a_agents {
            let agent = crate::a2a::RemoteAgent::new(name.as_str(), config)?;
            registry.add(&name, Arc::new(agent))?;
        }
        #[cfg(feature = "mcp")]
        let mcp = mcp::McpState::prepare(&mut registry, self.mcp_servers)?;
        for agent in &self.agents {
            for text in &agent.resources {
                #[cfg(feature = "mcp")]
                {
                    let reference = crate::mcp::ResourceRef::parse(text)
                        .map_err(|e| Error::InvalidConfig(format!("agent {}: resources: {e}", agent.id)))?;
                    if !mcp.servers().contains(&reference.server) {
                        return Err(Error::InvalidConfig(format!(
                            "agent {}: resources: {text} names the MCP server {}, which is not configured; \
                             declare it under [mcp_servers]",
                            agent.id, reference.server
                        )));
                    }
                }
                #[cfg(not(feature = "mcp"))]
                return Err(Error::InvalidConfig(format!(
                    "agent {}: resources ({text}) need the `mcp` feature",
                    agent.id
                )));
            }
        }
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
            // A runtime that only reads runs no check: it needs no model for one.
            if !self.embedded.is_read_only() {
                check_guardrails(agent, &self.models, &self.guards)?;
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
            .hooks(hooks)
            .guards(self.guards);
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
        let schedule_firing = crate::engine::ScheduleFiring::default();
        let parts = EngineParts {
            catalogs: catalogs.clone(),
            executor: executor.clone(),
            setup,
            schedules: schedule_firing.clone(),
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
                readiness: tokio::sync::watch::channel(Readiness::Recovering).0,
                resumed: std::sync::Mutex::new(HashMap::new()),
                tools_status: tokio::sync::broadcast::channel(64).0,
                #[cfg(feature = "sqlite")]
                memory,
                #[cfg(feature = "sqlite")]
                schedules,
                #[cfg(feature = "sqlite")]
                firing: std::sync::Mutex::new(None),
                #[cfg(feature = "sqlite")]
                firer: std::sync::OnceLock::new(),
                #[cfg(feature = "sqlite")]
                webhooks: super::webhooks::Webhooks::new(webhooks, self.webhooks_to_private),
                #[cfg(feature = "mcp")]
                mcp,
            }),
        };
        #[cfg(feature = "sqlite")]
        if self.fire_schedules && has_engine && !reads_only {
            runtime.start_firing_schedules(&schedule_firing)?;
        }
        #[cfg(feature = "sqlite")]
        if self.deliver_webhooks && has_engine && !reads_only {
            runtime.start_delivering_webhooks()?;
        }
        #[cfg(feature = "mcp")]
        {
            runtime.restore_remembered_tools();
            if has_engine && !reads_only {
                runtime.supervise_mcp();
            }
        }
        if self.background_recovery {
            let recovering = runtime.clone();
            tokio::spawn(async move {
                if let Err(error) = recovering.recover().await {
                    tracing::error!(%error, "the unfinished runs could not be resumed");
                }
            });
        } else {
            runtime.recover().await?;
        }
        Ok(runtime)
    }
}

/// Every custom guardrail `agent` names is registered, and every
/// classifier's model configured.
fn check_guardrails(agent: &AgentSpec, models: &Models, guards: &crate::guardrail::Guards) -> Result<()> {
    use concierge_core::GuardCheck;
    for (_, guardrail) in agent.guardrails.iter() {
        match &guardrail.check {
            GuardCheck::Custom { guard } if !guards.contains(guard) => {
                return Err(Error::InvalidConfig(format!(
                    "agent {} uses the guardrail {guard:?}, which is not registered; register it with RuntimeBuilder::guard",
                    agent.id
                )));
            }
            GuardCheck::Classifier { model, .. } => {
                let known = match model {
                    Some(model) => models.contains(model) || models.has_default(),
                    None => models.has_default(),
                };
                if !known {
                    return Err(Error::InvalidConfig(format!(
                        "agent {}'s classifier guardrail needs a model, and none is configured: configure one (e.g. --model openai:<name> --base-url URL)",
                        agent.id
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
