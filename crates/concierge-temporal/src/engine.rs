//! [`TemporalEngine`]: the [`Engine`] whose sessions are Temporal workflows.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::str::FromStr;
use std::sync::{Arc, Mutex, Weak};

use concierge::engine::{Engine, EngineOptions, EngineParts, RunSetup, RunStop, SessionSummary, Started};
use concierge::{Error, Result};
use concierge_core::{
    AgentId, CallId, Decision, Event, EventId, ModelRequest, OpenSession, PlannerMode, RunId, RunOutput, Session,
    SessionId, StartRun, Timestamp,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use temporalio_client::errors::{
    ClientError, WorkflowGetResultError, WorkflowQueryError, WorkflowStartError, WorkflowUpdateError,
    WorkflowUpdateWithStartError,
};
use temporalio_client::tonic::{Code, Status};
use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, GrpcCompression, RpcOptions, TlsOptions, Url,
    WorkflowDescribeOptions, WorkflowExecuteUpdateOptions, WorkflowExecutionStatus, WorkflowGetResultOptions,
    WorkflowHandle, WorkflowIdConflictPolicy, WorkflowIdReusePolicy, WorkflowListOptions, WorkflowQueryOptions,
    WorkflowUpdateWithStartOptions,
};
use temporalio_common::HasWorkflowDefinition;
use tokio::sync::broadcast;

use crate::config::TemporalConfig;
use crate::deltas::Deltas;
use crate::options::WorkflowOptions;
use crate::wire::{
    Begin, ConfirmRequest, Current, EndRequest, EventsPage, OpenRequest, Plan, Reply, StartReply, StartRequest, Summary,
};
use crate::worker::WorkerThread;
use crate::workflow::{SessionWorkflow, WORKFLOW_TYPE};
use crate::{payload, reach, visibility};

pub(crate) use concierge::engine::now;

/// Connects to the server `config` names; an unreachable one is an error
/// that names its address.
pub async fn connect(config: &TemporalConfig) -> Result<Client> {
    let unreachable = |why: String| {
        Error::Storage(format!(
            "the Temporal server at {} cannot be reached ({why}); start it or check the address",
            config.address
        ))
    };
    let failed = |error: temporalio_client::errors::ClientConnectError| {
        use temporalio_client::errors::ClientConnectError;
        // (A TLS handshake that fails is no silence: said as it is.)
        let tls = {
            let said = format!("{error:?}").to_ascii_lowercase();
            ["certificate", "tls", "handshake"]
                .iter()
                .any(|word| said.contains(word))
        };
        match error {
            ClientConnectError::TonicTransportError(_) if !tls => {
                tracing::debug!(%error, address = %config.address, "the Temporal server does not answer");
                unavailable(config)
            }
            ClientConnectError::SystemInfoCallError(status) if unanswered(&status) => {
                tracing::debug!(%status, address = %config.address, "the Temporal server does not answer");
                unavailable(config)
            }
            other => unreachable(other.to_string()),
        }
    };
    let url = Url::from_str(&config.url()).map_err(|e| {
        Error::InvalidConfig(format!(
            "the Temporal address {:?} is not a valid address: {e}",
            config.address
        ))
    })?;
    let mut options = ConnectionOptions::new(url)
        .identity(format!("concierge@{}", std::process::id()))
        .connect_timeout(config.connect_timeout)
        .maybe_api_key(config.api_key.clone())
        .grpc_compression(if config.grpc_compression {
            GrpcCompression::Gzip
        } else {
            GrpcCompression::None
        })
        .build();
    if config.tls || config.api_key.is_some() {
        options.tls_options = Some(TlsOptions::default());
    }
    let connection = Connection::connect(options).await.map_err(failed)?;
    Client::new(connection, ClientOptions::new(config.namespace.clone()).build())
        .map_err(|e| unreachable(e.to_string()))
}

/// Sessions as Temporal workflows, reached through a client. Open it with
/// [`Temporal`](crate::Temporal) (as a runtime's engine); the workers that
/// run the workflows and activities run where
/// [`Workers`](crate::Workers) says.
pub struct TemporalEngine {
    client: Client,
    config: Arc<TemporalConfig>,
    parts: EngineParts,
    toolsets: Mutex<BTreeMap<String, String>>,
    pub(crate) workers: Mutex<Option<WorkerThread>>,
    /// Model deltas of calls run in this process, for its subscribers.
    pub(crate) deltas: Deltas,
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

type Handle = WorkflowHandle<Client, SessionWorkflow>;

/// What a new session's workflow starts with, besides its input.
struct Creation<'a> {
    tenant: Option<&'a str>,
    agent: Option<&'a AgentId>,
    labels: &'a BTreeMap<String, String>,
    options: Option<&'a WorkflowOptions>,
}

/// Whether an update failed because the run it reached had just closed: a
/// session workflow that continued as new goes on in a new run, which the
/// update reaches when sent again (its id makes that safe).
fn run_closed(error: &WorkflowUpdateError) -> bool {
    matches!(error, WorkflowUpdateError::Rpc(status) if status.code() == temporalio_client::tonic::Code::FailedPrecondition)
}

/// Sends an update, once more if the run it reached had just closed.
async fn update<U>(
    handle: &Handle,
    update: impl Fn() -> U,
    input: U::Input,
    id: String,
) -> Result<U::Output, WorkflowUpdateError>
where
    U: temporalio_common::UpdateDefinition<Workflow = <SessionWorkflow as HasWorkflowDefinition>::Run>,
    U::Input: Send + Clone,
    U::Output: 'static,
{
    let options = WorkflowExecuteUpdateOptions::builder().update_id(id).build();
    match handle.execute_update(update(), input.clone(), options.clone()).await {
        Err(error) if run_closed(&error) => handle.execute_update(update(), input, options).await,
        other => other,
    }
}

/// A fresh id for an update.
fn update_id(kind: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{kind}:{}:{}:{n}", std::process::id(), now().0)
}

/// An error talking to the server, as a sentence (a server that does not
/// answer is said so).
fn server<E: std::fmt::Display + RpcStatus>(config: &TemporalConfig, what: &str, error: E) -> Error {
    if error.rpc_status().is_some_and(unanswered) {
        tracing::debug!(%error, address = %config.address, "the Temporal server does not answer");
        return unavailable(config);
    }
    Error::Storage(format!("Temporal at {} could not {what}: {error}", config.address))
}

/// The server at `config`'s address does not answer.
pub(crate) fn unavailable(config: &TemporalConfig) -> Error {
    Error::EngineUnavailable {
        server: "Temporal".into(),
        address: config.address.clone(),
    }
}

/// Whether `status` says the server did not answer: it is down, or the
/// network to it is (the client retried for a while before saying so).
pub(crate) fn unanswered(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable => true,
        Code::Unknown => {
            let message = status.message().to_ascii_lowercase();
            message.contains("transport error") || message.contains("connection")
        }
        _ => false,
    }
}

/// A client error that may carry the server's gRPC status.
trait RpcStatus {
    /// The status, when the error is the server's (or the network's) answer.
    fn rpc_status(&self) -> Option<&Status>;
}

impl RpcStatus for WorkflowUpdateError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) | Self::NotFound(status) => Some(status),
            _ => None,
        }
    }
}

impl RpcStatus for WorkflowQueryError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) | Self::NotFound(status) => Some(status),
            _ => None,
        }
    }
}

impl RpcStatus for WorkflowUpdateWithStartError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) | Self::Start(WorkflowStartError::Rpc(status)) => Some(status),
            Self::Start(WorkflowStartError::AlreadyStarted { source, .. }) => Some(source),
            Self::Update(inner) => inner.rpc_status(),
            _ => None,
        }
    }
}

impl RpcStatus for WorkflowGetResultError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) | Self::NotFound(status) => Some(status),
            _ => None,
        }
    }
}

impl RpcStatus for ClientError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) => Some(status),
            _ => None,
        }
    }
}

impl TemporalEngine {
    /// Waits for `delivery` of an input, failing when no worker took it in
    /// time (a new session's workflow runs on `queue`, when it is not the
    /// default one).
    async fn within<T>(
        &self,
        session: &SessionId,
        queue: Option<&str>,
        delivery: impl std::future::Future<Output = T>,
    ) -> Result<T> {
        let Ok(delivered) = tokio::time::timeout(self.config.input_timeout, delivery).await else {
            // (The client retries while the server is away: it may be why.)
            if !reach::answers(&self.client, &self.config).await {
                return Err(unavailable(&self.config));
            }
            return Err(Error::RunStartFailed(format!(
                "no concierge worker took the input for session {session} within {} s: run the session \
                 workers (task queue {} on Temporal at {}) and try again",
                self.config.input_timeout.as_secs(),
                queue.map_or_else(|| self.config.sessions_queue(), str::to_string),
                self.config.address
            )));
        };
        Ok(delivered)
    }

    pub(crate) fn new(client: Client, config: Arc<TemporalConfig>, parts: EngineParts) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            client,
            config,
            parts,
            toolsets: Mutex::new(BTreeMap::new()),
            workers: Mutex::new(None),
            deltas: Deltas::default(),
            me: me.clone(),
        })
    }

    fn handle(&self, session: &SessionId) -> Handle {
        self.client
            .get_workflow_handle::<SessionWorkflow>(self.config.workflow_id(session))
    }

    fn query_options(&self) -> WorkflowQueryOptions {
        WorkflowQueryOptions::builder()
            .rpc_options(RpcOptions::builder().timeout(self.config.query_timeout).build())
            .build()
    }

    /// Per agent of the current catalog, how `setup` has its runs plan
    /// (the runtime's own choice for an agent `setup` does not name: a run
    /// that names its agent carries that agent's entry only, and a handoff or
    /// a child run may go to any other).
    fn plans(&self, setup: &RunSetup) -> BTreeMap<AgentId, Plan> {
        let catalog = self.parts.catalogs.current().catalog;
        catalog
            .agents()
            .map(|resolved| {
                let agent = resolved.spec.id.clone();
                let mut probe = StartRun::new("", PlannerMode::Model, Timestamp(0));
                self.parts.setup.apply(&mut probe, &agent);
                setup.apply(&mut probe, &agent);
                (
                    agent,
                    Plan {
                        planner: probe.planner,
                        policy: probe.policy,
                    },
                )
            })
            .collect()
    }

    /// The agents of this process's catalog (a new session's workflow
    /// checks that its worker has them).
    fn agents(&self) -> Vec<AgentId> {
        self.parts.catalogs.current().catalog.agent_ids()
    }

    /// Where stop number `stop` of the session's run will be.
    fn stop(&self, session: &SessionId, stop: u64) -> RunStop {
        let handle = self.handle(session);
        let config = self.config.clone();
        RunStop::later(async move {
            match update(&handle, || SessionWorkflow::wait_stop, stop, format!("wait:{stop}")).await {
                Ok(Some(output)) => Ok(output),
                Ok(None) => Err(Error::RunInterrupted),
                // The session ended (its workflow closed) before this waiter
                // asked: the workflow's result is the session's last output,
                // what `wait_stop` answers for a stop the end overtook.
                Err(WorkflowUpdateError::NotFound(_)) => {
                    match handle.get_result(WorkflowGetResultOptions::default()).await {
                        Ok(Some(output)) => Ok(output),
                        Ok(None) => Err(Error::RunInterrupted),
                        Err(error) => Err(server(&config, "say where the run stopped", error)),
                    }
                }
                Err(error) => Err(server(&config, "say where the run stopped", error)),
            }
        })
    }

    async fn query_events(&self, session: &SessionId, after: u64) -> Result<Option<EventsPage>> {
        match self
            .handle(session)
            .query(SessionWorkflow::events, after, self.query_options())
            .await
        {
            Ok(page) => Ok(Some(page)),
            Err(WorkflowQueryError::NotFound(_)) => Ok(None),
            Err(error) => Err(self.query_error(error)),
        }
    }

    fn query_error(&self, error: WorkflowQueryError) -> Error {
        match error {
            WorkflowQueryError::Rpc(status) if status.code() == temporalio_client::tonic::Code::DeadlineExceeded => {
                Error::Storage(format!(
                    "no concierge worker answered on task queue {} of Temporal at {}; start one",
                    self.config.sessions_queue(),
                    self.config.address
                ))
            }
            other => server(&self.config, "read the session", other),
        }
    }

    async fn update_error(&self, session: &SessionId, error: WorkflowUpdateError) -> Error {
        match error {
            WorkflowUpdateError::NotFound(_) => Error::SessionNotFound(session.clone()),
            WorkflowUpdateError::Rpc(status) if status.code() == Code::FailedPrecondition => {
                self.not_taken(session, &status).await
            }
            other => server(&self.config, "deliver the input", other),
        }
    }

    async fn start_error(&self, session: &SessionId, error: WorkflowUpdateWithStartError) -> Error {
        match error {
            WorkflowUpdateWithStartError::Start(WorkflowStartError::AlreadyStarted { .. }) => {
                Error::Rejected(concierge_core::StepError::SessionEnded)
            }
            WorkflowUpdateWithStartError::Update(inner) => Box::pin(self.update_error(session, inner)).await,
            other => server(&self.config, "start the run", other),
        }
    }

    /// Why the session's workflow did not take an input (the server said
    /// its state does not allow it, sent again once): it ended, or its
    /// workflow tasks fail, which a worker of another project on the same
    /// queues causes.
    async fn not_taken(&self, session: &SessionId, status: &Status) -> Error {
        let id = self.config.workflow_id(session);
        let described = self
            .client
            .get_workflow_handle::<SessionWorkflow>(id.clone())
            .describe(WorkflowDescribeOptions::default())
            .await;
        match described.map(|d| d.status()) {
            Ok(WorkflowExecutionStatus::Completed) => Error::Rejected(concierge_core::StepError::SessionEnded),
            Err(temporalio_client::errors::WorkflowInteractionError::NotFound(_)) => {
                Error::SessionNotFound(session.clone())
            }
            _ => Error::Storage(format!(
                "the workflow of session {session} ({id}) on Temporal at {} did not take the input ({}). When its \
                 workflow tasks fail (`temporal workflow describe --workflow-id {id}` shows why), a worker of \
                 another project may poll task queue {}: give each project its own `task_queue_prefix` in the \
                 [temporal] section of concierge.toml",
                self.config.address,
                status.message(),
                self.config.sessions_queue()
            )),
        }
    }

    /// How a session's workflow starts (when the input creates it): on the
    /// sessions queue, with its tenant and agent as search attributes and
    /// memo, then the caller's options over them.
    fn with_start_options(&self, session: &SessionId, start: Creation<'_>) -> WorkflowUpdateWithStartOptions {
        let options = start.options;
        let queue = options
            .and_then(|o| o.task_queue.clone())
            .unwrap_or_else(|| self.config.sessions_queue());
        let attributes = visibility::start_attributes(
            &self.config,
            start.tenant,
            start.agent,
            options.map(|o| &o.search_attributes),
        );
        let no_memo = BTreeMap::new();
        let memo = visibility::start_memo(
            start.tenant,
            start.agent,
            start.labels,
            options.map_or(&no_memo, |o| &o.memo),
        );
        WorkflowUpdateWithStartOptions::new(
            queue,
            self.config.workflow_id(session),
            WorkflowIdConflictPolicy::UseExisting,
        )
        // An ended session's id stays taken; one whose workflow failed (a
        // worker of another project refused it) may start again.
        .id_reuse_policy(WorkflowIdReusePolicy::AllowDuplicateFailedOnly)
        .maybe_search_attributes(attributes)
        .memo(memo)
        .build()
    }

    /// The model request session `session`'s workflow keeps for model call
    /// `call` of run `run_id` (`None` once it no longer waits for it).
    pub(crate) async fn model_request(
        &self,
        session: &SessionId,
        run_id: &RunId,
        call: u32,
    ) -> Result<Option<ModelRequest>> {
        self.handle(session)
            .query(
                SessionWorkflow::model_request,
                (run_id.clone(), call),
                self.query_options(),
            )
            .await
            .map_err(|error| self.query_error(error))
    }

    async fn do_start(&self, session: SessionId, start: StartRun, setup: RunSetup) -> Result<Started> {
        let started = self.deliver_start(&session, start, setup, false).await?;
        Ok(Started {
            run_id: started.run_id,
            first_seq: started.first_seq,
            stop: self.stop(&session, started.stop),
        })
    }

    /// A run to its stop, with one update: it answers at the stop.
    async fn do_run(&self, session: SessionId, start: StartRun, setup: RunSetup) -> Result<RunOutput> {
        let started = self.deliver_start(&session, start, setup, true).await?;
        match started.output {
            Some(output) => Ok(*output),
            // The session ended before the stop: where it stopped says why.
            None => self.stop(&session, started.stop).output().await,
        }
    }

    /// Delivers a run's start (creating the session's workflow if new); with
    /// `wait`, the answer comes at the run's stop.
    async fn deliver_start(
        &self,
        session: &SessionId,
        mut start: StartRun,
        setup: RunSetup,
        wait: bool,
    ) -> Result<StartReply> {
        if start.catalog_version.is_none() {
            start.catalog_version = self.parts.catalogs.current().id;
        }
        let options = setup.engine_option::<WorkflowOptions>();
        let first_agent = start.agent.clone().or_else(|| setup.first_agent_of().cloned());
        let start_options = self.with_start_options(
            session,
            Creation {
                tenant: start.tenant.as_deref(),
                agent: first_agent.as_ref(),
                labels: &start.labels,
                options,
            },
        );
        let queue = options.and_then(|o| o.task_queue.clone());
        let request = StartRequest {
            session: session.clone(),
            first_agent,
            plans: self.plans(&setup),
            catalog: start
                .catalog_version
                .as_deref()
                .and_then(|version| self.parts.catalogs.record(version)),
            start,
            wait,
        };
        let bytes = payload::size_of(&request);
        if bytes > self.config.max_payload_bytes {
            return Err(Error::RunStartFailed(format!(
                "{}; send it in smaller parts",
                payload::over("the run's input", "is", bytes, self.config.max_payload_bytes)
            )));
        }
        let begin = Begin {
            session: session.clone(),
            carried: None,
            child: None,
            model_calls: self.config.model_calls,
            agents: self.agents(),
        };
        let reply = if wait {
            // A worker must take the start in time; the run then takes its own.
            let accepted = self.client.start_update_with_start_workflow(
                SessionWorkflow::run,
                begin,
                SessionWorkflow::start_run,
                request,
                start_options,
            );
            let handle = match self.within(session, queue.as_deref(), accepted).await? {
                Ok(handle) => handle,
                Err(error) => return Err(self.start_error(session, error).await),
            };
            match handle.get_result(RpcOptions::default()).await {
                Ok(reply) => reply,
                Err(error) => return Err(self.update_error(session, error).await),
            }
        } else {
            let delivered = self.client.execute_update_with_start_workflow(
                SessionWorkflow::run,
                begin,
                SessionWorkflow::start_run,
                request,
                start_options,
            );
            match self.within(session, queue.as_deref(), delivered).await? {
                Ok(reply) => reply,
                Err(error) => return Err(self.start_error(session, error).await),
            }
        };
        match reply {
            Reply::Done(started) => Ok(started),
            Reply::Refused(refusal) => Err(refusal.into()),
        }
    }

    async fn do_confirm(
        &self,
        session: SessionId,
        call_id: CallId,
        fingerprint: String,
        decision: Decision,
    ) -> Result<RunStop> {
        let request = ConfirmRequest {
            call_id,
            fingerprint,
            decision,
            at: now(),
        };
        let handle = self.handle(&session);
        let delivered = update(&handle, || SessionWorkflow::confirm, request, update_id("confirm"));
        let reply = match self.within(&session, None, delivered).await? {
            Ok(reply) => reply,
            Err(error) => return Err(self.update_error(&session, error).await),
        };
        match reply {
            Reply::Done(stop) => Ok(self.stop(&session, stop)),
            Reply::Refused(refusal) => Err(refusal.into()),
        }
    }

    async fn do_end(&self, session: SessionId, reason: String, run_only: bool) -> Result<Option<RunOutput>> {
        let request = EndRequest {
            reason,
            run_only,
            at: now(),
        };
        let handle = self.handle(&session);
        let delivered = update(&handle, || SessionWorkflow::end, request, update_id("end"));
        let reply = match self.within(&session, None, delivered).await? {
            Ok(reply) => reply,
            Err(error) => return Err(self.update_error(&session, error).await),
        };
        match reply {
            Reply::Done(output) => Ok(output),
            Reply::Refused(refusal) => Err(refusal.into()),
        }
    }

    async fn do_open(&self, session: SessionId, open: OpenSession, options: EngineOptions) -> Result<()> {
        let no_labels = BTreeMap::new();
        let options = options.get::<WorkflowOptions>();
        let start_options = self.with_start_options(
            &session,
            Creation {
                tenant: open.tenant.as_deref(),
                agent: Some(&open.agent),
                labels: &no_labels,
                options,
            },
        );
        let queue = options.and_then(|o| o.task_queue.clone());
        let delivered = self.client.execute_update_with_start_workflow(
            SessionWorkflow::run,
            Begin {
                session: session.clone(),
                carried: None,
                child: None,
                model_calls: self.config.model_calls,
                agents: self.agents(),
            },
            SessionWorkflow::open,
            OpenRequest {
                session: session.clone(),
                open,
            },
            start_options,
        );
        let reply = match self.within(&session, queue.as_deref(), delivered).await? {
            Ok(reply) => reply,
            Err(error) => return Err(self.start_error(&session, error).await),
        };
        match reply {
            Reply::Done(()) => Ok(()),
            Reply::Refused(refusal) => Err(refusal.into()),
        }
    }

    async fn do_wait(&self, session: SessionId) -> Result<Option<RunStop>> {
        let current = match self
            .handle(&session)
            .query(SessionWorkflow::current, (), self.query_options())
            .await
        {
            Ok(current) => current,
            Err(WorkflowQueryError::NotFound(_)) => return Ok(None),
            Err(error) => return Err(self.query_error(error)),
        };
        Ok(match current {
            Current::Idle => None,
            Current::Parked(output) => Some(RunStop::ready(*output)),
            Current::At(stop) => Some(self.stop(&session, stop)),
        })
    }

    async fn do_session(&self, session: SessionId) -> Result<Option<Session>> {
        match self
            .handle(&session)
            .query(SessionWorkflow::snapshot, (), self.query_options())
            .await
        {
            Ok(snapshot) => Ok(snapshot.map(|s| *s)),
            Err(WorkflowQueryError::NotFound(_)) => Ok(None),
            Err(error) => Err(self.query_error(error)),
        }
    }

    async fn do_sessions(&self) -> Result<Vec<SessionSummary>> {
        // Sessions on any queue (a caller may have chosen one), of this
        // deployment (its workflow ids' prefix).
        let query = format!("WorkflowType = '{WORKFLOW_TYPE}'");
        let ours = self.config.workflow_id(&SessionId::new(""));
        let mut listed = self.client.list_workflows(query, WorkflowListOptions::default());
        let mut ids = Vec::new();
        while let Some(execution) = listed.next().await {
            let execution = execution.map_err(|e| server(&self.config, "list the sessions", e))?;
            if execution.id().starts_with(&ours) {
                ids.push(execution.id().to_string());
            }
        }
        let mut summaries = HashMap::new();
        for id in ids {
            let handle = self.client.get_workflow_handle::<SessionWorkflow>(id);
            let summary: Option<Summary> = match handle.query(SessionWorkflow::summary, (), self.query_options()).await
            {
                Ok(summary) => summary,
                Err(WorkflowQueryError::NotFound(_)) => None,
                Err(error) => return Err(self.query_error(error)),
            };
            if let Some(s) = summary {
                summaries.insert(
                    s.id.clone(),
                    SessionSummary {
                        id: s.id,
                        agent: s.agent,
                        live: s.live,
                        updated_at: s.updated_at,
                        tenant: s.tenant,
                    },
                );
            }
        }
        let mut all: Vec<SessionSummary> = summaries.into_values().collect();
        all.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        Ok(all)
    }
}

/// A subscription's state between polls.
struct Follow {
    engine: Arc<TemporalEngine>,
    session: SessionId,
    /// Where the subscriber asked to start (after it).
    from: EventId,
    /// The last durable event given.
    after: u64,
    /// Durable events read, not yet given.
    buffered: VecDeque<Event>,
    /// Model deltas of calls in this process, and those received, not yet
    /// given (each goes right after the durable event it follows).
    deltas: broadcast::Receiver<Event>,
    pending: VecDeque<Event>,
    /// Whether the last query brought nothing new (a delta ahead then
    /// waits for the next poll instead of asking again at once).
    dry: bool,
    /// When to ask the query next if nothing comes first (the first time:
    /// at once).
    next_poll: tokio::time::Instant,
    done: bool,
}

impl Follow {
    /// Takes the deltas received meanwhile.
    fn receive(&mut self) {
        loop {
            match self.deltas.try_recv() {
                Ok(delta) => self.pending.push_back(delta),
                // A slow reader misses some deltas; the reply is whole in
                // the run's events.
                Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                Err(_) => return,
            }
        }
    }

    /// The next event in order, from what is at hand: a delta right after
    /// the durable event it follows (one whose place was passed is
    /// dropped), else the next durable event.
    fn next_at_hand(&mut self) -> Option<Event> {
        while let Some(delta) = self.pending.front() {
            if delta.seq > self.after {
                break;
            }
            let delta = self.pending.pop_front()?;
            // (One the subscriber had before it came back is not given again.)
            if delta.seq == self.after && delta.id() > self.from {
                return Some(delta);
            }
        }
        let event = self.buffered.pop_front()?;
        self.after = event.seq;
        Some(event)
    }
}

/// The session's events after `after`: pages from the `events` query,
/// asked again every [`TemporalConfig::poll_interval`] while none come (a
/// session that does not exist yet is followed from its first event), and
/// the model deltas of calls that run in this process, each given after
/// the durable event it follows (asking the query at once when a delta
/// comes before it). The stream ends after the last event of an ended
/// session.
pub(crate) fn follow(
    engine: Arc<TemporalEngine>,
    session: SessionId,
    after: EventId,
) -> BoxStream<'static, Result<Event>> {
    let state = Follow {
        deltas: engine.deltas.subscribe(&session),
        engine,
        session,
        from: after,
        after: after.seq,
        buffered: VecDeque::new(),
        pending: VecDeque::new(),
        dry: false,
        next_poll: tokio::time::Instant::now(),
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            st.receive();
            if let Some(event) = st.next_at_hand() {
                return Some((Ok(event), st));
            }
            if st.done {
                return None;
            }
            // A delta ahead of the events read: read them now.
            let ahead = !st.dry && st.pending.front().is_some_and(|d| d.seq > st.after);
            if !ahead {
                // (The time of the next poll stays while deltas come.)
                let pause = tokio::time::sleep_until(st.next_poll);
                tokio::select! {
                    () = pause => {}
                    delta = st.deltas.recv() => match delta {
                        Ok(delta) => {
                            st.pending.push_back(delta);
                            continue;
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        // (Not while this stream holds the engine.)
                        Err(broadcast::error::RecvError::Closed) => tokio::time::sleep_until(st.next_poll).await,
                    }
                }
            }
            st.next_poll = tokio::time::Instant::now() + st.engine.config.poll_interval;
            match st.engine.query_events(&st.session, st.after).await {
                Ok(Some(page)) => {
                    st.done = page.ended;
                    st.dry = page.events.is_empty();
                    st.buffered.extend(page.events);
                }
                // Not begun yet: its events come once it does.
                Ok(None) => st.dry = true,
                Err(error) => {
                    st.done = true;
                    return Some((Err(error), st));
                }
            }
        }
    }))
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

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionSummary>>> {
        Box::pin(self.do_sessions())
    }

    fn subscribe(&self, session: SessionId, after: EventId) -> BoxStream<'static, Result<Event>> {
        match self.me.upgrade() {
            Some(engine) => follow(engine, session, after),
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
