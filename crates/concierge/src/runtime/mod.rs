//! The runtime: agents, tools, models and an engine, behind one handle.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use concierge_core::{
    AgentId, CallId, Catalog, Decision, Event, EventId, EventKind, Message, Multitask, OpenSession,
    PendingConfirmation, PlannerMode, PolicyDelta, RunId, RunOutput, Session, SessionId, StartRun, StepError,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

mod builder;
mod children;
mod client;
mod complete;
mod cursor;
#[cfg(feature = "sqlite")]
mod erase;
mod fork;
mod guard;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "sqlite")]
mod memory;
mod questions;
mod readiness;
#[cfg(feature = "mcp")]
mod resources;
#[cfg(feature = "sqlite")]
mod schedules;
mod sessions;
#[cfg(feature = "sqlite")]
mod webhooks;

pub use builder::{DEFAULT_MAX_MESSAGE_BYTES, RuntimeBuilder};
pub use client::{AgentClient, IntoMessages, RunHandle};
pub use cursor::{InvalidCursor, StreamCursor};
#[cfg(feature = "sqlite")]
pub use erase::Erased;
pub use fork::{Forked, Replay, ReplayOptions};
#[cfg(feature = "sqlite")]
pub use memory::MEMORY_KEY;
pub use questions::check_answer;
pub use readiness::Readiness;
#[cfg(feature = "sqlite")]
pub use webhooks::PushRenderer;

use crate::engine::{Catalogs, Engine, Executor, JournalStats, RunSetup, RunStop, SessionFacts, SessionQuery};
use crate::error::{Error, Result};
use crate::options::RunOptions;

struct Inner {
    engine: Arc<dyn Engine>,
    has_engine: bool,
    description: String,
    catalogs: Arc<Catalogs>,
    executor: Arc<Executor>,
    overrides: RwLock<HashMap<AgentId, PolicyDelta>>,
    max_message_bytes: usize,
    recovered: std::sync::Mutex<Vec<SessionId>>,
    /// How far resuming the unfinished runs found at open is.
    readiness: tokio::sync::watch::Sender<Readiness>,
    /// Where the runs resumed at open will stop, until someone waits for them.
    resumed: std::sync::Mutex<HashMap<SessionId, RunStop>>,
    /// The `tools_status` events this runtime gives, every session's.
    tools_status: tokio::sync::broadcast::Sender<Event>,
    /// What is remembered about people.
    #[cfg(feature = "sqlite")]
    memory: crate::memory::MemoryStore,
    /// Runs at a time or on a cron expression.
    #[cfg(feature = "sqlite")]
    schedules: crate::schedule::ScheduleStore,
    /// The task that fires due schedules, and the name it holds their lease by.
    #[cfg(feature = "sqlite")]
    firing: std::sync::Mutex<Option<(tokio::task::AbortHandle, String)>>,
    /// What an engine that keeps the time of schedules calls to fire them
    /// (held here; the engine holds it weakly).
    #[cfg(feature = "sqlite")]
    firer: std::sync::OnceLock<Arc<dyn crate::engine::FireSchedules>>,
    /// Webhooks, their outbox and the task that delivers it.
    #[cfg(feature = "sqlite")]
    webhooks: webhooks::Webhooks,
    #[cfg(feature = "mcp")]
    mcp: mcp::McpState,
}

/// A running concierge: start runs, answer confirmations, watch events,
/// look at agents and tools (in its [`catalog`](Runtime::catalog)). Cheap
/// to clone.
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

    /// The catalog runs start with now: the agents, tools and toolsets, and
    /// the hub's settings (its mode, intent detection, fallback). A snapshot:
    /// when an MCP server's tool list changes, the runtime starts using a new
    /// catalog and this one stays as it was, so ask again for the current one.
    pub fn catalog(&self) -> Arc<Catalog> {
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
        let run = self.prepare_run(agent, messages, options).await?;
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
        let run = self.prepare_run(agent, messages, options).await?;
        turns
            .attempt(self, &run, || {
                run.engine
                    .run(run.session.clone(), run.start.clone(), run.setup.clone())
            })
            .await
    }

    /// The agent a run of `session` goes to: the one it names, else the
    /// session's current agent, else the default one.
    pub(crate) async fn run_agent(
        &self,
        engine: &dyn Engine,
        session: &SessionId,
        named: Option<&AgentId>,
    ) -> Option<AgentId> {
        if let Some(agent) = named {
            return Some(agent.clone());
        }
        match engine.session(session.clone()).await {
            Ok(Some(state)) => Some(state.agent().clone()),
            _ => self.catalog().default_agent(),
        }
    }

    /// What a run's start comes to: the checks, then the engine's start with its setup.
    async fn prepare_run(
        &self,
        agent: Option<AgentId>,
        messages: Vec<Message>,
        options: RunOptions,
    ) -> Result<PreparedRun> {
        let session = options.session_id.ok_or(Error::MissingSessionId)?;
        self.check_message_size(messages.iter().map(|m| m.text().len()).sum())?;
        let engine = self.engine_or_err()?.clone();
        sessions::check_session_id(engine.as_ref(), &session).await?;
        let mut messages = messages;
        let guardrail = self
            .check_input(
                engine.as_ref(),
                &session,
                agent.as_ref(),
                options.run_id.as_ref(),
                &mut messages,
            )
            .await;
        #[cfg(feature = "mcp")]
        {
            let text = messages.last().map(Message::text).unwrap_or_default();
            self.ensure_mcp(&engine, &session, agent.as_ref(), &text).await?;
        }
        #[cfg(feature = "mcp")]
        let context = self
            .resource_context(engine.as_ref(), &session, agent.as_ref(), options.context)
            .await?;
        #[cfg(not(feature = "mcp"))]
        let context = options.context;
        #[cfg(feature = "sqlite")]
        let context = {
            let user = options.user.as_deref().unwrap_or_default();
            let owner = crate::memory::MemoryOwner::of(options.tenant.as_deref(), user);
            let text = messages.last().map(Message::text).unwrap_or_default();
            self.memory_context(engine.as_ref(), &session, agent.as_ref(), owner, &text, context)
                .await?
        };
        // Just before the run's first input: its events come after this.
        #[cfg(feature = "sqlite")]
        self.arm_webhooks(&session, options.tenant.as_deref()).await;
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
            context,
            turn_id: options.turn_id,
            labels: options.labels,
            metadata: options.metadata,
            model: None,
            replay: None,
            guardrail,
            at: crate::engine::now(),
        };
        let catalog = self.catalog();
        // A new session that names no agent starts with the default one (the hub in multi mode).
        let setup = self
            .setup(&catalog, options.policy.as_ref(), start.agent.as_ref())
            .first_agent(catalog.default_agent())
            .engine_options(options.engine);
        Ok(PreparedRun {
            engine,
            session,
            start,
            setup,
        })
    }

    /// Opens a session before its first message: it exists, is listed and
    /// can be followed from now on. `agent` takes its first message (and the
    /// session is pinned to it); `None` is the default agent (the hub in
    /// multi mode). `options` gives the session id (required) and tenant.
    pub async fn open(&self, agent: Option<AgentId>, options: RunOptions) -> Result<()> {
        let session = options.session_id.ok_or(Error::MissingSessionId)?;
        let engine = self.engine_or_err()?.clone();
        sessions::check_session_id(engine.as_ref(), &session).await?;
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
            fork: None,
            at: crate::engine::now(),
        };
        engine.open(session, open, options.engine).await
    }

    /// Starts a turn in a session with its current agent; a new session
    /// starts with the default agent (the hub in multi mode, see
    /// [`Catalog::default_agent`] of [`Runtime::catalog`]).
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
        let session = session.into();
        #[cfg(feature = "sqlite")]
        self.rearm_webhooks(&session).await;
        let stop = self
            .engine_or_err()?
            .confirm(session, call_id.into(), fingerprint.into(), decision)
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

    /// What a front door checks of the session (its agent, tenant, whether
    /// it is a child run's, how long its history is), without copying it.
    pub async fn facts(&self, session: impl Into<SessionId>) -> Result<SessionFacts> {
        let id = session.into();
        self.engine_or_err()?
            .facts(id.clone())
            .await?
            .ok_or(Error::SessionNotFound(id))
    }

    /// The session's messages.
    pub async fn history(&self, session: impl Into<SessionId>) -> Result<Vec<Message>> {
        Ok(self.session(session).await?.history().to_vec())
    }

    /// Lets idle sessions go (recording where they end) and waits for the
    /// engine to write it down. Runs still in flight keep going (and are
    /// taken over by the next process if this one ends first). Call it before
    /// exiting a process.
    pub async fn shutdown(&self) {
        #[cfg(feature = "sqlite")]
        self.stop_firing_schedules().await;
        #[cfg(feature = "sqlite")]
        self.stop_delivering_webhooks().await;
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

    /// The models a run may name (a replay's), besides the agents' own choice.
    pub fn model_names(&self) -> Vec<String> {
        self.inner.executor.models().names()
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

    /// Sessions whose unfinished runs were resumed when the engine opened
    /// (complete once [`Runtime::ready`] returns).
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
            tenant: None,
            blackboard: Default::default(),
            asked_at: crate::engine::now(),
            channel: None,
            checkpoint: None,
        };
        self.inner.executor.tools().execute(&call, cx).await.0
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

/// How `resolved` plans here: its own planner, the model, or its rules.
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

/// Whether `child` is the session of a child run below `root` (an agent
/// `root` called as a tool, or one that agent called): as the session says
/// of its parent, not as its id looks, since a caller may name a
/// conversation with the separator in it.
pub(crate) fn is_below(child: &Session, root: &SessionId) -> bool {
    child
        .parent()
        .is_some_and(|parent| parent.session == *root || parent.session.reads_below(root))
}

/// Ends the child runs still under way below `session` (agents it called
/// as tools, and theirs): nothing is left waiting for a person who has
/// left. A child that cannot be ended now is left to its own course.
async fn end_children(engine: &dyn Engine, session: &SessionId) {
    let Ok(below) = engine.sessions_of(SessionQuery::new().below(session.clone())).await else {
        return;
    };
    for summary in below {
        let Ok(Some(child)) = engine.session(summary.id.clone()).await else {
            continue;
        };
        if is_below(&child, session) && !child.is_ended() && child.active_run().is_some() {
            let reason = "the conversation that asked it was ended".to_string();
            if let Err(error) = engine.end(summary.id.clone(), reason).await {
                tracing::warn!(child = %summary.id, %error, "a child run could not be ended with its parent");
            }
        }
    }
}
