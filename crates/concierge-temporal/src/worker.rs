//! The workers a program runs: the session workflows, the model calls, and
//! each agent's tool calls, on their own thread.
//!
//! Temporal's `Worker::run` cannot move between threads (workflows run on a
//! local task set), so the workers run on a dedicated OS thread with its own
//! single-threaded tokio runtime and their own connection; activities (the
//! model and tool calls) run as tasks of that runtime.

use std::sync::Arc;
use std::time::Duration;

use concierge::engine::EngineParts;
use concierge::{Error, Result};
use concierge_core::AgentId;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use temporalio_sdk::runtime::RuntimeOptions;
use temporalio_sdk::{Worker, WorkerOptions};
use tokio::sync::{oneshot, watch};

use crate::activities::{EngineLink, ModelActivities, ToolActivities};
use crate::config::TemporalConfig;
use crate::connection::connect;
use crate::reach;
use crate::scheduler::{SchedulerActivities, SchedulerWorkflow};
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
    /// Why the workers stopped by themselves, once they have.
    halted: watch::Receiver<Option<String>>,
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
    link: &EngineLink,
    which: &Workers,
) -> Result<Vec<Worker>> {
    let mut workers = Vec::new();
    let default_queue = which.sessions.then(|| config.sessions_queue());
    let model_activities = || ModelActivities {
        executor: parts.executor.clone(),
        engine: link.clone(),
        max_payload_bytes: config.max_payload_bytes,
    };
    for queue in default_queue
        .clone()
        .into_iter()
        .chain(which.session_queues.iter().cloned())
    {
        let catalogs = parts.catalogs.clone();
        let executor = parts.executor.clone();
        let shared = config.clone();
        let scheduler = default_queue.as_ref() == Some(&queue);
        let mut options = WorkerOptions::new(queue)
            .register_workflow_with_factory::<SessionWorkflow, _>(move || {
                SessionWorkflow::new(catalogs.clone(), executor.clone(), shared.clone())
            })
            .map_err(|e| worker_error(config, e))?
            // A session that calls its model locally does it here.
            .register_activities(model_activities());
        if scheduler {
            // The schedules' timer lives on the default sessions queue.
            options = options
                .register_workflow::<SchedulerWorkflow>()
                .map_err(|e| worker_error(config, e))?
                .register_activities(SchedulerActivities {
                    firing: parts.schedules.clone(),
                });
        }
        let options = options
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

/// Runs the workers until `stop` (then lets them finish) or until one
/// ends by itself: then it stops the others too, since the process can no
/// longer do its part, and returns why. Errors while stopping are logged.
async fn supervise<R, E>(runs: Vec<R>, stops: Vec<impl Fn()>, stop: impl Future) -> Option<String>
where
    R: Future<Output = std::result::Result<(), E>>,
    E: std::fmt::Display,
{
    let mut runs: FuturesUnordered<R> = runs.into_iter().collect();
    let first = tokio::select! {
        Some(result) = runs.next() => Some(result),
        _ = stop => None,
    };
    for stop in &stops {
        stop();
    }
    let by_itself = first.is_some();
    let mut failures: Vec<String> = Vec::new();
    for result in first.into_iter().chain(runs.collect::<Vec<_>>().await) {
        if let Err(error) = result {
            let error = error.to_string();
            if !failures.contains(&error) {
                failures.push(error);
            }
        }
    }
    if by_itself {
        return Some(if failures.is_empty() {
            "they ended without an error".to_string()
        } else {
            failures.join("; ")
        });
    }
    for error in failures {
        tracing::error!(%error, "a concierge worker stopped with an error");
    }
    None
}

impl WorkerThread {
    /// Starts the workers `which` names on their own thread; resolves once
    /// they are built (connected, registered), or with why they cannot be.
    pub(crate) async fn spawn(
        config: Arc<TemporalConfig>,
        parts: EngineParts,
        link: EngineLink,
        which: Workers,
    ) -> Result<Self> {
        let (ready_tx, ready_rx) = oneshot::channel::<Result<()>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (halted_tx, halted) = watch::channel(None);
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
                        let workers = build(&runtime, &client, &config, &parts, &link, &which)?;
                        Ok::<_, Error>((runtime, client, workers))
                    }
                    .await;
                    let (_runtime, client, mut workers) = match started {
                        Ok(built) => built,
                        Err(error) => {
                            let _ = ready_tx.send(Err(error));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    let stops: Vec<_> = workers.iter().map(Worker::shutdown_handle).collect();
                    let runs = workers.iter_mut().map(Worker::run).collect();
                    let supervised = supervise(runs, stops, stop_rx);
                    let halt = tokio::select! {
                        halt = supervised => halt,
                        never = reach::watch(&client, &config) => match never {},
                    };
                    if let Some(why) = halt {
                        let why = format!(
                            "the concierge workers for Temporal at {} stopped: {why}",
                            config.address
                        );
                        // Whoever waits on `halted` says it; else it is logged
                        // (the thread's handle holds one receiver).
                        if halted_tx.receiver_count() < 2 {
                            tracing::error!("{why}");
                        }
                        let _ = halted_tx.send(Some(why));
                    }
                });
            })
            .map_err(|e| worker_error(&config, e))?;
        match ready_rx.await {
            Ok(Ok(())) => Ok(Self {
                stop: stop_tx,
                thread,
                halted,
            }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(worker_error(&config, "the worker thread ended before it started")),
        }
    }

    /// Resolves with why, once the workers have stopped by themselves.
    pub(crate) fn halted(&self) -> impl std::future::Future<Output = String> + Send + use<> {
        let mut halted = self.halted.clone();
        async move {
            let why = halted.wait_for(Option::is_some).await.ok().and_then(|why| why.clone());
            match why {
                Some(why) => why,
                // The thread ended without a word: only a stop does that.
                None => std::future::pending().await,
            }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::pin::Pin;
    use std::time::Duration;

    use tokio::sync::{oneshot, watch};

    use super::supervise;

    type Run = Pin<Box<dyn Future<Output = Result<(), String>>>>;

    /// A worker's run that ends once its stop is called, as the SDK's do.
    fn worker(stopped: &watch::Sender<bool>) -> Run {
        let mut stopped = stopped.subscribe();
        Box::pin(async move {
            let _ = stopped.wait_for(|stopped| *stopped).await;
            Ok(())
        })
    }

    #[tokio::test]
    async fn a_worker_that_fails_stops_the_others_and_says_why() {
        let (stopped, _) = watch::channel(false);
        let failing: Run = Box::pin(async { Err("namespace nope is not found".to_string()) });
        let runs = vec![worker(&stopped), failing, worker(&stopped)];
        let (_keep, never) = oneshot::channel::<()>();
        let stop_all = move || {
            stopped.send_replace(true);
        };
        // The others end only if their stop is called.
        let why = tokio::time::timeout(Duration::from_secs(10), supervise(runs, vec![stop_all], never))
            .await
            .unwrap();
        assert_eq!(why.as_deref(), Some("namespace nope is not found"));
    }

    #[tokio::test]
    async fn workers_asked_to_stop_have_nothing_to_say() {
        let (stopped, _) = watch::channel(false);
        let runs = vec![worker(&stopped), worker(&stopped)];
        let (stop, asked) = oneshot::channel::<()>();
        stop.send(()).unwrap();
        let stop_all = move || {
            stopped.send_replace(true);
        };
        assert_eq!(supervise(runs, vec![stop_all], asked).await, None);
    }
}
