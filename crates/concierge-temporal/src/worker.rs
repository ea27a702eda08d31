//! The workers a program runs: the session workflows, the model calls, and
//! each agent's tool calls, on their own thread.
//!
//! Temporal's `Worker::run` cannot move between threads (workflows run on a
//! local task set), so the workers run on a dedicated OS thread with its own
//! single-threaded tokio runtime and their own connection; activities (the
//! model and tool calls) run as tasks of that runtime.

use std::sync::{Arc, Weak};
use std::time::Duration;

use concierge::engine::EngineParts;
use concierge::{Error, Result};
use concierge_core::AgentId;
use temporalio_sdk::runtime::RuntimeOptions;
use temporalio_sdk::{Worker, WorkerOptions};
use tokio::sync::oneshot;

use crate::activities::{ModelActivities, ToolActivities};
use crate::config::TemporalConfig;
use crate::engine::{TemporalEngine, connect};
use crate::workflow::SessionWorkflow;

/// Whose tool calls a process runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum ToolAgents {
    /// None.
    #[default]
    None,
    /// Every agent's in the catalog.
    All,
    /// These agents'.
    Only(Vec<AgentId>),
}

/// Which workers a program runs alongside its engine client: the session
/// workflows (`<prefix>-sessions`), the model calls (`<prefix>-models`), and agents' tool calls (`<prefix>-tools-<agent>`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workers {
    sessions: bool,
    /// Other queues whose session workflows this program runs (those of
    /// sessions started with [`WorkflowOptions::task_queue`](crate::WorkflowOptions::task_queue)).
    session_queues: Vec<String>,
    models: bool,
    tools: ToolAgents,
}

impl Workers {
    /// No workers: the program is a client only.
    pub fn none() -> Self {
        Self::default()
    }

    /// Every worker: sessions, models, and every agent's tools.
    pub fn all() -> Self {
        Self {
            sessions: true,
            session_queues: Vec::new(),
            models: true,
            tools: ToolAgents::All,
        }
    }

    /// Runs the session workflows, or not.
    pub fn sessions(mut self, on: bool) -> Self {
        self.sessions = on;
        self
    }

    /// Also runs the session workflows of task queue `queue` (sessions
    /// whose first run chose it with
    /// [`WorkflowOptions::task_queue`](crate::WorkflowOptions::task_queue)).
    pub fn sessions_on(mut self, queue: impl Into<String>) -> Self {
        self.session_queues.push(queue.into());
        self
    }

    /// Runs the model calls, or not.
    pub fn models(mut self, on: bool) -> Self {
        self.models = on;
        self
    }

    /// Runs the tool calls of these agents only.
    pub fn tools_of(mut self, agents: impl IntoIterator<Item = impl Into<AgentId>>) -> Self {
        self.tools = ToolAgents::Only(agents.into_iter().map(Into::into).collect());
        self
    }

    /// Runs no tool calls.
    pub fn no_tools(mut self) -> Self {
        self.tools = ToolAgents::None;
        self
    }

    /// Whether there is any worker to run.
    pub fn any(&self) -> bool {
        self.sessions || !self.session_queues.is_empty() || self.models || self.tools != ToolAgents::None
    }

    fn tool_agents(&self, parts: &EngineParts) -> Vec<AgentId> {
        match &self.tools {
            ToolAgents::None => Vec::new(),
            ToolAgents::All => parts
                .catalogs
                .current()
                .catalog
                .agents()
                .map(|a| a.spec.id.clone())
                .collect(),
            ToolAgents::Only(agents) => agents.clone(),
        }
    }
}

/// The thread the workers run on.
pub(crate) struct WorkerThread {
    stop: oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

fn worker_error(config: &TemporalConfig, error: impl std::fmt::Display) -> Error {
    Error::Storage(format!(
        "the concierge workers for Temporal at {} could not start: {error}",
        config.address
    ))
}

/// Builds the workers `which` names.
fn build(
    runtime: &temporalio_sdk::Runtime,
    client: &temporalio_client::Client,
    config: &Arc<TemporalConfig>,
    parts: &EngineParts,
    engine: &Weak<TemporalEngine>,
    which: &Workers,
) -> Result<Vec<Worker>> {
    let mut workers = Vec::new();
    let default_queue = which.sessions.then(|| config.sessions_queue());
    let model_activities = || ModelActivities {
        executor: parts.executor.clone(),
        engine: engine.clone(),
        max_payload_bytes: config.max_payload_bytes,
    };
    for queue in default_queue.into_iter().chain(which.session_queues.iter().cloned()) {
        let catalogs = parts.catalogs.clone();
        let executor = parts.executor.clone();
        let shared = config.clone();
        let options = WorkerOptions::new(queue)
            .register_workflow_with_factory::<SessionWorkflow, _>(move || {
                SessionWorkflow::new(catalogs.clone(), executor.clone(), shared.clone())
            })
            .map_err(|e| worker_error(config, e))?
            // A session that calls its model locally does it here.
            .register_activities(model_activities())
            .sticky_queue_schedule_to_start_timeout(Duration::from_secs(3))
            .graceful_shutdown_period(Duration::from_secs(5))
            .build();
        workers.push(Worker::new(runtime, client.clone(), options).map_err(|e| worker_error(config, e))?);
    }
    if which.models {
        let options = WorkerOptions::new(config.models_queue())
            .register_activities(model_activities())
            .graceful_shutdown_period(Duration::from_secs(5))
            .build();
        workers.push(Worker::new(runtime, client.clone(), options).map_err(|e| worker_error(config, e))?);
    }
    for agent in which.tool_agents(parts) {
        let queue = config.tools_queue(&agent);
        let activities = ToolActivities {
            executor: parts.executor.clone(),
            agent,
            max_payload_bytes: config.max_payload_bytes,
        };
        let options = WorkerOptions::new(queue)
            .register_activities(activities)
            .graceful_shutdown_period(Duration::from_secs(5))
            .build();
        workers.push(Worker::new(runtime, client.clone(), options).map_err(|e| worker_error(config, e))?);
    }
    Ok(workers)
}

impl WorkerThread {
    /// Starts the workers `which` names on their own thread; resolves once
    /// they are built (connected, registered), or with why they cannot be.
    pub(crate) async fn spawn(
        config: Arc<TemporalConfig>,
        parts: EngineParts,
        engine: Weak<TemporalEngine>,
        which: Workers,
    ) -> Result<Self> {
        let (ready_tx, ready_rx) = oneshot::channel::<Result<()>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread_config = config.clone();
        let thread = std::thread::Builder::new()
            .name("concierge-temporal-workers".into())
            .spawn(move || {
                let config = thread_config;
                let tokio = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(tokio) => tokio,
                    Err(error) => {
                        let _ = ready_tx.send(Err(worker_error(&config, error)));
                        return;
                    }
                };
                tokio.block_on(async move {
                    let started = async {
                        let client = connect(&config).await?;
                        let runtime = temporalio_sdk::Runtime::from_current_tokio(RuntimeOptions::default())
                            .map_err(|e| worker_error(&config, e))?;
                        let workers = build(&runtime, &client, &config, &parts, &engine, &which)?;
                        Ok::<_, Error>((runtime, workers))
                    }
                    .await;
                    let (_runtime, mut workers) = match started {
                        Ok(built) => built,
                        Err(error) => {
                            let _ = ready_tx.send(Err(error));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    let stops: Vec<_> = workers.iter().map(Worker::shutdown_handle).collect();
                    let runs = futures::future::join_all(workers.iter_mut().map(Worker::run));
                    tokio::pin!(runs);
                    let results = tokio::select! {
                        results = &mut runs => results,
                        _ = stop_rx => {
                            for stop in &stops {
                                stop();
                            }
                            runs.await
                        }
                    };
                    for result in results {
                        if let Err(error) = result {
                            tracing::error!(address = %config.address, %error, "a concierge worker stopped");
                        }
                    }
                });
            })
            .map_err(|e| worker_error(&config, e))?;
        match ready_rx.await {
            Ok(Ok(())) => Ok(Self { stop: stop_tx, thread }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(worker_error(&config, "the worker thread ended before it started")),
        }
    }

    /// Stops the workers (activities under way get their grace period) and
    /// waits for the thread.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}
