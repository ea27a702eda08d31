//! The engine seam: how the runtime drives sessions without knowing where
//! they run.
//!
//! Three layers, and arrows only point down: the runtime resolves agents,
//! planners and policies into data ([`RunSetup`], [`Catalogs`]); an
//! [`Engine`] journals inputs, steps the core and performs effects; the
//! executors ([`Executor`]) call models and tools for any engine. The
//! embedded engine ([`Embedded`]: an actor per session over SQLite or memory)
//! is one implementation; another engine is a crate implementing
//! [`Engine`] and [`OpenEngine`], with no change to the runtime or the core.
//! This module imports nothing from the runtime or the configuration.

mod ask;
mod catalogs;
mod children;
mod embedded;
mod exec;
mod guard;
mod listing;
mod options;
mod schedules;
mod setup;

use std::sync::Arc;

use concierge_core::{CallId, Decision, Event, EventId, OpenSession, RunId, RunOutput, Session, SessionId, StartRun};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::Serialize;

pub use ask::refuse_invalid_ask;
pub use catalogs::{CatalogVersion, Catalogs, VersionError};
pub use children::{call_agent, child_answer};
#[doc(hidden)]
pub use embedded::bench;
pub use embedded::{Embedded, payload_text};
pub(crate) use exec::Whose;
pub use exec::{ExecHooks, Executor, ModelCall, PromptBuilder, RunInfo, ToolCallInfo, TracingHooks, Unavailable};
pub use listing::{SessionFacts, SessionPage, SessionQuery, SessionSummary, TenantScope, newest_first};
pub use options::EngineOptions;
pub use schedules::{FireSchedules, ScheduleFiring};
pub use setup::RunSetup;

use crate::error::{Error, Result};

pub use crate::clock::now;

/// Where a run will stop: resolves with its output once it finishes or
/// parks waiting for the person.
pub struct RunStop(BoxFuture<'static, Result<RunOutput>>);

impl std::fmt::Debug for RunStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunStop")
    }
}

impl RunStop {
    /// A run that has stopped already.
    pub fn ready(output: RunOutput) -> Self {
        Self(Box::pin(async move { Ok(output) }))
    }

    /// A run whose output `future` resolves with.
    pub fn later(future: impl std::future::Future<Output = Result<RunOutput>> + Send + 'static) -> Self {
        Self(Box::pin(future))
    }

    /// Waits until the run finishes or parks, and returns its output.
    pub async fn output(self) -> Result<RunOutput> {
        self.0.await
    }
}

/// A run an engine started.
#[derive(Debug)]
pub struct Started {
    /// The run's id (the session numbers runs `r1`, `r2`... unless the caller named it).
    pub run_id: RunId,
    /// The seq of the run's first event.
    pub first_seq: u64,
    /// Resolves with the run's output once it finishes or parks for a confirmation.
    pub stop: RunStop,
}

/// What an engine's store has written so far (for benchmarks and notes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JournalStats {
    /// Accepted inputs written.
    pub entries: u64,
    /// Transactions committed (each is one fsync of the WAL).
    pub commits: u64,
    /// Payload bytes written (inputs and snapshots).
    pub payload_bytes: u64,
    /// Snapshots written.
    pub snapshots: u64,
}

/// Drives sessions: journals each accepted input, steps the core, performs
/// the effects, resumes unfinished runs. Every method names the session it
/// acts on; an engine decides where the session lives.
pub trait Engine: Send + Sync + 'static {
    /// Starts a run in `session` (created if new; `start.agent` must then name
    /// its agent). `setup` decides the planner and policy for the agent that
    /// takes the run.
    fn start(&self, session: SessionId, start: StartRun, setup: RunSetup) -> BoxFuture<'_, Result<Started>>;

    /// Starts a run as [`Engine::start`] does and waits for its stop (it
    /// finishes or parks for the person). An engine that can do both in one
    /// exchange says so here (the Temporal engine: one update per turn
    /// instead of two).
    fn run(&self, session: SessionId, start: StartRun, setup: RunSetup) -> BoxFuture<'_, Result<RunOutput>> {
        Box::pin(async move { self.start(session, start, setup).await?.stop.output().await })
    }

    /// Answers the call parked in `session`: only a matching call id and
    /// argument fingerprint run it. Resolves once the answer is durable.
    fn confirm(
        &self,
        session: SessionId,
        call_id: CallId,
        fingerprint: String,
        decision: Decision,
    ) -> BoxFuture<'_, Result<RunStop>>;

    /// Answers question `question` that the running call `call_id` of
    /// `session` asks the person (MCP elicitation): the answer is journaled,
    /// then given to the call. Resolves once the answer is durable. An
    /// engine whose calls never ask refuses it.
    fn answer_question(
        &self,
        session: SessionId,
        call_id: CallId,
        question: u32,
        answer: concierge_core::ElicitationAnswer,
    ) -> BoxFuture<'_, Result<RunStop>> {
        let _ = (session, question, answer);
        Box::pin(async move { Err(Error::Rejected(concierge_core::StepError::NoSuchQuestion { call_id })) })
    }

    /// Opens `session` before its first message (it must not exist): it is
    /// stored, listed and followed from now on, with its agent and tenant.
    /// `options` are the caller's options for this engine (as a run's
    /// [`RunSetup`] carries them), applied where the session is created.
    fn open(&self, session: SessionId, open: OpenSession, options: EngineOptions) -> BoxFuture<'_, Result<()>>;

    /// Ends `session` (a run in progress is cancelled; its output is returned).
    fn end(&self, session: SessionId, reason: String) -> BoxFuture<'_, Result<Option<RunOutput>>>;

    /// Cancels `session`'s run in progress, if one is (its output is
    /// returned); the session goes on.
    fn cancel_run(&self, session: SessionId, reason: String) -> BoxFuture<'_, Result<Option<RunOutput>>>;

    /// Where the session's run in progress will stop; `None` if none is.
    fn wait(&self, session: SessionId) -> BoxFuture<'_, Result<Option<RunStop>>>;

    /// The session as it stands, `None` if it never existed.
    fn session(&self, session: SessionId) -> BoxFuture<'_, Result<Option<Session>>>;

    /// What a front door checks of the session, `None` if it never existed.
    /// By default read from [`Engine::session`]; an engine that holds
    /// sessions in memory answers without copying the history.
    fn facts(&self, session: SessionId) -> BoxFuture<'_, Result<Option<SessionFacts>>> {
        Box::pin(async move { Ok(self.session(session).await?.as_ref().map(SessionFacts::of)) })
    }

    /// Erases a session for good: its journal, snapshots and events (a
    /// person's stored text, erased at their request). A run in progress is
    /// ended first. `false` if there is no such session.
    fn erase(&self, session: SessionId) -> BoxFuture<'_, Result<bool>>;

    /// Every session.
    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionSummary>>>;

    /// Every session `query` holds (its cursor and limit aside), the most
    /// recently active first: every session read and filtered, unless the
    /// engine has an index for it.
    fn sessions_of(&self, query: SessionQuery) -> BoxFuture<'_, Result<Vec<SessionSummary>>> {
        Box::pin(async move { Ok(query.list_of(self.sessions().await?)) })
    }

    /// A page of sessions, the most recently active first.
    fn session_page(&self, query: SessionQuery) -> BoxFuture<'_, Result<SessionPage>> {
        Box::pin(async move {
            let listed = self.sessions_of(query.clone()).await?;
            query.page_of(listed)
        })
    }

    /// The session's events after `after` (exclusive; `EventId::default()`
    /// for all), stored ones first, then live ones as they happen.
    fn subscribe(&self, session: SessionId, after: EventId) -> BoxStream<'static, Result<Event>>;

    /// Takes over the sessions whose owner is gone and resumes their runs
    /// (those this process can run; the others wait, untouched, for one
    /// that can), then keeps doing so while the engine lives. Called once,
    /// after the runtime has registered every tool it has.
    fn recover(&self) -> BoxFuture<'_, Result<()>>;

    /// Sessions whose unfinished runs this engine resumed, with where each
    /// will stop (taken: a second call returns only newer ones).
    fn take_resumed(&self) -> Vec<(SessionId, RunStop)>;

    /// Remembers a toolset discovered at run time (JSON) for later processes.
    fn remember_toolset(&self, name: &str, tools: String);

    /// The toolsets remembered by [`Engine::remember_toolset`], as `(name, JSON)`.
    fn remembered_toolsets(&self) -> Result<Vec<(String, String)>>;

    /// Sends a live-only event (a `tools_status`, as model deltas are) to
    /// this process's subscribers of `event.session`: never journaled, so a
    /// replay does not bring it back, and dropped when nobody listens. The
    /// caller numbers it after the session's last durable event. The
    /// default drops it.
    fn announce(&self, event: Event) {
        let _ = event;
    }

    /// Lets idle sessions go and waits until what the engine wrote is durable.
    fn shutdown(&self) -> BoxFuture<'_, ()>;

    /// Resolves, with why ([`Error::EngineHalted`]), if the engine stops
    /// working by itself: the Temporal engine's workers in this process
    /// ended on an error they cannot retry. Never resolves for an engine
    /// that cannot (the default).
    fn halted(&self) -> BoxFuture<'static, Error> {
        Box::pin(std::future::pending())
    }

    /// What the engine's store wrote (zeros for engines that do not count).
    fn stats(&self) -> JournalStats {
        JournalStats::default()
    }

    /// How many sessions the engine holds in this process's memory.
    fn sessions_in_memory(&self) -> usize {
        0
    }

    /// Whether the engine keeps the time of schedules itself (a durable
    /// timer that calls [`EngineParts::schedules`] when one is due): the
    /// runtime then runs no timer of its own, and tells the engine when the
    /// schedules change ([`Engine::schedules_changed`]).
    fn keeps_schedule_time(&self) -> bool {
        false
    }

    /// The schedules changed (one was added, resumed or fired): an engine
    /// that keeps their time looks again at when the next is due, starting
    /// what keeps it if it is not running.
    fn schedules_changed(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async { Ok(()) })
    }
}

/// Everything an engine needs from the runtime: the catalog's versions and
/// the executors, pure data and plain functions; and, for an engine that
/// keeps the time of schedules itself, the one link back to the runtime
/// that fires them.
#[derive(Clone, Debug)]
pub struct EngineParts {
    /// The catalog and its versions.
    pub catalogs: Arc<Catalogs>,
    /// Model and tool calls.
    pub executor: Arc<Executor>,
    /// How the runs the engine starts by itself (agents called as tools)
    /// plan: per agent, as the runtime decides for runs it starts.
    pub setup: RunSetup,
    /// What fires due schedules (see [`Engine::keeps_schedule_time`]).
    pub schedules: ScheduleFiring,
}

/// Opens an engine once the runtime has resolved its parts.
pub trait OpenEngine: Send + 'static {
    /// Opens the engine (for the embedded one: the database). Nothing is
    /// resumed before [`Engine::recover`].
    fn open(self: Box<Self>, parts: EngineParts) -> BoxFuture<'static, Result<Arc<dyn Engine>>>;
}

/// A runtime without an engine: it describes agents and tools but runs nothing.
pub(crate) struct NoEngine;

fn no_engine<T: Send + 'static>() -> BoxFuture<'static, Result<T>> {
    Box::pin(async { Err(Error::EngineNotConfigured) })
}

impl Engine for NoEngine {
    fn start(&self, _: SessionId, _: StartRun, _: RunSetup) -> BoxFuture<'_, Result<Started>> {
        no_engine()
    }

    fn confirm(&self, _: SessionId, _: CallId, _: String, _: Decision) -> BoxFuture<'_, Result<RunStop>> {
        no_engine()
    }

    fn end(&self, _: SessionId, _: String) -> BoxFuture<'_, Result<Option<RunOutput>>> {
        no_engine()
    }

    fn cancel_run(&self, _: SessionId, _: String) -> BoxFuture<'_, Result<Option<RunOutput>>> {
        no_engine()
    }

    fn open(&self, _: SessionId, _: OpenSession, _: EngineOptions) -> BoxFuture<'_, Result<()>> {
        no_engine()
    }

    fn wait(&self, _: SessionId) -> BoxFuture<'_, Result<Option<RunStop>>> {
        no_engine()
    }

    fn erase(&self, _: SessionId) -> BoxFuture<'_, Result<bool>> {
        no_engine()
    }

    fn session(&self, _: SessionId) -> BoxFuture<'_, Result<Option<Session>>> {
        no_engine()
    }

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionSummary>>> {
        no_engine()
    }

    fn subscribe(&self, _: SessionId, _: EventId) -> BoxStream<'static, Result<Event>> {
        Box::pin(futures::stream::once(async { Err(Error::EngineNotConfigured) }))
    }

    fn recover(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn take_resumed(&self) -> Vec<(SessionId, RunStop)> {
        Vec::new()
    }

    fn remember_toolset(&self, _: &str, _: String) {}

    fn remembered_toolsets(&self) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
