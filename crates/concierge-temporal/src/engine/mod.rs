//! [`TemporalEngine`]: the [`Engine`] whose sessions are Temporal workflows.
//!
//! Its inputs reach a session's workflow as updates ([`inputs`]), its reads
//! as queries ([`reads`]); a subscriber polls the events query
//! ([`follow`]); [`failures`] says why an input or a read did not get
//! through.

mod failures;
mod follow;
mod inputs;
mod reads;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use concierge::engine::{Engine, EngineOptions, EngineParts, RunSetup, RunStop, SessionQuery, SessionSummary, Started};
use concierge::{Error, Result};
use concierge_core::{CallId, Decision, Event, EventId, OpenSession, RunOutput, Session, SessionId, StartRun};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use temporalio_client::{Client, RpcOptions, WorkflowHandle, WorkflowQueryOptions};

use crate::activities::EngineLink;
use crate::config::TemporalConfig;
use crate::deltas::Deltas;
use crate::worker::WorkerThread;
use crate::workflow::SessionWorkflow;

/// Sessions as Temporal workflows, reached through a client. Open it with
/// [`Temporal`](crate::Temporal) (as a runtime's engine); the workers that
/// run the workflows and activities run where
/// [`Workers`](crate::Workers) says.
pub struct TemporalEngine {
    client: Client,
    config: Arc<TemporalConfig>,
    parts: EngineParts,
    /// The toolsets remembered in this process (`remember_toolset`).
    toolsets: Mutex<BTreeMap<String, String>>,
    /// The workers this program runs, when it runs any.
    workers: Mutex<Option<WorkerThread>>,
    /// Model deltas of calls run in this process, for its subscribers.
    deltas: Arc<Deltas>,
    me: Weak<TemporalEngine>,
}

impl std::fmt::Debug for TemporalEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalEngine")
            .field("address", &self.config.address)
            .field("namespace", &self.config.namespace)
            .finish()
    }
}

/// A session's workflow, as the client reaches it.
type Handle = WorkflowHandle<Client, SessionWorkflow>;

impl TemporalEngine {
    /// An engine on `client`; it runs no workers until given some
    /// ([`TemporalEngine::keep_workers`]).
    pub(crate) fn new(client: Client, config: Arc<TemporalConfig>, parts: EngineParts) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            client,
            config,
            parts,
            toolsets: Mutex::new(BTreeMap::new()),
            workers: Mutex::new(None),
            deltas: Arc::default(),
            me: me.clone(),
        })
    }

    /// The workers this program runs: stopped with the engine, and its
    /// halt when they stop by themselves.
    pub(crate) fn keep_workers(&self, thread: WorkerThread) {
        if let Ok(mut slot) = self.workers.lock() {
            *slot = Some(thread);
        }
    }

    /// The workflow of `session`.
    fn handle(&self, session: &SessionId) -> Handle {
        self.client
            .get_workflow_handle::<SessionWorkflow>(self.config.workflow_id(session))
    }

    /// A query waits this long for a worker to answer.
    fn query_options(&self) -> WorkflowQueryOptions {
        WorkflowQueryOptions::builder()
            .rpc_options(RpcOptions::builder().timeout(self.config.query_timeout).build())
            .build()
    }

    /// What the model calls' activities run in this process reach this
    /// engine by: its subscribers' deltas, and the requests its sessions'
    /// workflows keep.
    pub(crate) fn link(self: &Arc<Self>) -> EngineLink {
        EngineLink {
            deltas: self.deltas.clone(),
            requests: Arc::<Self>::downgrade(self),
        }
    }
}

impl Engine for TemporalEngine {
    fn start(&self, session: SessionId, start: StartRun, setup: RunSetup) -> BoxFuture<'_, Result<Started>> {
        Box::pin(self.do_start(session, start, setup))
    }

    fn run(&self, session: SessionId, start: StartRun, setup: RunSetup) -> BoxFuture<'_, Result<RunOutput>> {
        Box::pin(self.do_run(session, start, setup))
    }

    fn confirm(
        &self,
        session: SessionId,
        call_id: CallId,
        fingerprint: String,
        decision: Decision,
    ) -> BoxFuture<'_, Result<RunStop>> {
        Box::pin(self.do_confirm(session, call_id, fingerprint, decision))
    }

    fn answer_question(
        &self,
        session: SessionId,
        call_id: CallId,
        question: u32,
        answer: concierge_core::ElicitationAnswer,
    ) -> BoxFuture<'_, Result<RunStop>> {
        Box::pin(self.do_answer(session, call_id, question, answer))
    }

    fn open(&self, session: SessionId, open: OpenSession, options: EngineOptions) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.do_open(session, open, options))
    }

    fn end(&self, session: SessionId, reason: String) -> BoxFuture<'_, Result<Option<RunOutput>>> {
        Box::pin(self.do_end(session, reason, false))
    }

    fn cancel_run(&self, session: SessionId, reason: String) -> BoxFuture<'_, Result<Option<RunOutput>>> {
        Box::pin(self.do_end(session, reason, true))
    }

    fn wait(&self, session: SessionId) -> BoxFuture<'_, Result<Option<RunStop>>> {
        Box::pin(self.do_wait(session))
    }

    fn session(&self, session: SessionId) -> BoxFuture<'_, Result<Option<Session>>> {
        Box::pin(self.do_session(session))
    }

    fn erase(&self, session: SessionId) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.do_erase(session))
    }

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionSummary>>> {
        Box::pin(self.do_sessions())
    }

    fn sessions_of(&self, query: SessionQuery) -> BoxFuture<'_, Result<Vec<SessionSummary>>> {
        Box::pin(self.do_sessions_of(query))
    }

    fn subscribe(&self, session: SessionId, after: EventId) -> BoxStream<'static, Result<Event>> {
        match self.me.upgrade() {
            Some(engine) => follow::follow(engine, session, after),
            None => Box::pin(futures::stream::once(async { Err(Error::RunInterrupted) })),
        }
    }

    /// Nothing to do: Temporal resumes every session's workflow by itself
    /// on whichever worker polls its queue.
    fn recover(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn take_resumed(&self) -> Vec<(SessionId, RunStop)> {
        Vec::new()
    }

    fn remember_toolset(&self, name: &str, tools: String) {
        if let Ok(mut toolsets) = self.toolsets.lock() {
            toolsets.insert(name.to_string(), tools);
        }
    }

    fn remembered_toolsets(&self) -> Result<Vec<(String, String)>> {
        Ok(self
            .toolsets
            .lock()
            .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default())
    }

    /// To this process's followers of the session, like model deltas (a
    /// follower in another process sees the run's durable events only).
    fn announce(&self, event: Event) {
        if let Some(live) = self.deltas.sender(&event.session) {
            let _ = live.send(event);
        }
    }

    fn halted(&self) -> BoxFuture<'static, Error> {
        let halted = self
            .workers
            .lock()
            .ok()
            .and_then(|workers| workers.as_ref().map(WorkerThread::halted));
        Box::pin(async move {
            match halted {
                Some(halted) => Error::EngineHalted(halted.await),
                None => std::future::pending().await,
            }
        })
    }

    /// Schedules keep their time in the scheduler workflow's durable timer.
    fn keeps_schedule_time(&self) -> bool {
        true
    }

    fn schedules_changed(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.wake_scheduler())
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let workers = self.workers.lock().ok().and_then(|mut w| w.take());
            if let Some(workers) = workers {
                workers.stop().await;
            }
        })
    }
}

impl TemporalEngine {
    /// The configuration it was opened with.
    pub fn config(&self) -> &TemporalConfig {
        &self.config
    }

    /// Its client (cheap to clone).
    pub fn client(&self) -> &Client {
        &self.client
    }
}

impl TemporalEngine {
    /// Tells the scheduler workflow that the schedules changed, starting it
    /// if it is not running (one per task-queue prefix).
    pub(crate) async fn wake_scheduler(&self) -> concierge::Result<()> {
        let config = self.config();
        let options =
            temporalio_client::WorkflowStartOptions::new(config.sessions_queue(), config.scheduler_workflow_id())
                .id_reuse_policy(temporalio_client::WorkflowIdReusePolicy::AllowDuplicate)
                .build();
        self.client()
            .signal_with_start_workflow(
                crate::scheduler::SchedulerWorkflow::run,
                crate::scheduler::SchedulerBegin::default(),
                crate::scheduler::SchedulerWorkflow::changed,
                (),
                options,
            )
            .await
            .map(|_| ())
            .map_err(|e| {
                concierge::Error::Storage(format!(
                    "the schedules' timer on Temporal at {} could not be told of a change: {e}",
                    config.address
                ))
            })
    }
}
