//! The embedded engine's driver: one actor task per live session.
//!
//! An actor owns its [`Session`], applies inputs one at a time, journals each
//! accepted input (durably, for SQLite) and only then performs the effects.
//! Model and tool calls run as tasks that send their result back as an input.
//! An idle actor leaves memory; the next command loads it again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use concierge_core::{
    Catalog, Confirmation, Decision, Effect, Event, EventKind, Input, RunId, RunOutput, Session, SessionId, StartRun,
    StepError, Timestamp,
};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::{Cursor, Entry, SharedJournal};
use crate::error::{Error, Result};
use crate::model::{ModelContext, ModelError, ModelErrorKind, RetryPolicy, complete_with_retry};
use crate::runtime::{Models, Prepare};
use crate::tool::{ToolContext, ToolRegistry};

/// Live events buffered per subscribed session; a subscriber that falls
/// further behind reads the gap back from the journal.
const LIVE_BUFFER: usize = 256;

/// Engine settings.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// How long an idle session stays in memory.
    pub idle: Duration,
    /// Input bytes since the last snapshot that call for a new one (at
    /// least; a snapshot is also not written before as many input bytes as
    /// the previous snapshot had, so snapshots never cost more than the inputs).
    pub snapshot_min_bytes: u64,
    /// Model retries.
    pub retry: RetryPolicy,
    /// The SQLite journal's group-commit window.
    pub commit_window: Duration,
    /// Prices by model reference, for the cost of each call.
    pub prices: Arc<HashMap<String, crate::config::Price>>,
    /// Whether model-call traces carry the prompt.
    pub log_prompts: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(30),
            snapshot_min_bytes: 16 * 1024,
            retry: RetryPolicy::default(),
            commit_window: super::sqlite::DEFAULT_COMMIT_WINDOW,
            prices: Arc::default(),
            log_prompts: false,
        }
    }
}

/// A run that started: where it will stop, its id, and the seq of its first event.
pub(crate) struct Started {
    pub stop: Stop,
    pub run_id: RunId,
    pub first_seq: u64,
}

/// Where a run stands when a caller asks: stopped already, or a receiver for its next stop.
pub(crate) enum Stop {
    /// The run has stopped (finished or parked) with this output.
    Now(Box<RunOutput>),
    /// The run will stop; the output arrives here.
    Later(oneshot::Receiver<RunOutput>),
}

impl Stop {
    pub(crate) async fn wait(self) -> Result<RunOutput> {
        match self {
            Stop::Now(output) => Ok(*output),
            Stop::Later(rx) => rx.await.map_err(|_| Error::RunInterrupted),
        }
    }
}

enum Command {
    Start {
        start: Box<StartRun>,
        prepare: Prepare,
        reply: oneshot::Sender<Result<Started>>,
    },
    Confirm {
        call_id: concierge_core::CallId,
        fingerprint: String,
        decision: Decision,
        reply: oneshot::Sender<Result<Stop>>,
    },
    End {
        reason: String,
        reply: oneshot::Sender<Result<Option<RunOutput>>>,
    },
    Wait {
        reply: oneshot::Sender<Option<Stop>>,
    },
    Inspect {
        reply: oneshot::Sender<Option<Session>>,
    },
    /// Where the run in progress will stop, if there is one (after loading,
    /// which resumes it).
    Probe {
        reply: oneshot::Sender<Option<Stop>>,
    },
    /// Leave memory if idle (a run in flight keeps going, and stays live for recovery).
    Shutdown {
        reply: oneshot::Sender<()>,
    },
    Input(Box<Input>),
}

pub(crate) struct Shared {
    pub catalog: RwLock<Arc<Catalog>>,
    pub tools: Arc<ToolRegistry>,
    pub models: Models,
    pub journal: SharedJournal,
    pub settings: Settings,
    actors: Mutex<HashMap<SessionId, mpsc::UnboundedSender<Command>>>,
    channels: Mutex<HashMap<SessionId, broadcast::Sender<Event>>>,
}

impl Shared {
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().map(|c| c.clone()).unwrap_or_default()
    }
}

/// Locks `mutex`, carrying on after a panic elsewhere poisoned it (the maps
/// it guards stay consistent: every update is a single insert or remove).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The driver: a handle on the shared state.
#[derive(Clone)]
pub(crate) struct Driver {
    shared: Arc<Shared>,
}

/// The time now, as the core sees it.
pub(crate) fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    Timestamp(u64::try_from(millis).unwrap_or(u64::MAX))
}

impl Driver {
    pub(crate) fn new(
        catalog: Arc<Catalog>,
        tools: Arc<ToolRegistry>,
        models: Models,
        journal: SharedJournal,
        settings: Settings,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                catalog: RwLock::new(catalog),
                tools,
                models,
                journal,
                settings,
                actors: Mutex::new(HashMap::new()),
                channels: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Loads every session that was live when the engine last stopped; those
    /// with a run in progress resume its outstanding effects. Returns them,
    /// with where each resumed run will stop.
    pub(crate) async fn recover(&self) -> Result<Vec<(SessionId, Stop)>> {
        let live = self.shared.journal.open_sessions()?;
        let mut probes = Vec::with_capacity(live.len());
        for id in live {
            // The actor answers after loading and before resuming, so a run
            // that finishes at once is still seen as resumed.
            let (reply, rx) = oneshot::channel();
            self.spawn(&id, Some(reply));
            probes.push((id, rx));
        }
        let mut running = Vec::new();
        for (id, rx) in probes {
            if let Ok(Some(stop)) = rx.await {
                running.push((id, stop));
            }
        }
        Ok(running)
    }

    fn actor(&self, id: &SessionId) -> mpsc::UnboundedSender<Command> {
        self.spawn(id, None)
    }

    /// The session's actor, spawned if needed (with a probe to answer after loading).
    fn spawn(&self, id: &SessionId, probe: Option<oneshot::Sender<Option<Stop>>>) -> mpsc::UnboundedSender<Command> {
        let mut actors = lock(&self.shared.actors);
        if let Some(tx) = actors.get(id).filter(|tx| !tx.is_closed()) {
            if let Some(probe) = probe {
                let _ = tx.send(Command::Probe { reply: probe });
            }
            return tx.clone();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        actors.insert(id.clone(), tx.clone());
        let actor = Actor {
            shared: self.shared.clone(),
            id: id.clone(),
            tx: tx.clone(),
            session: None,
            index: 0,
            cursor: Cursor::default(),
            bytes_since_snapshot: 0,
            snapshot_bytes: 0,
            last_agent: None,
            located: false,
            waiters: HashMap::new(),
            broken: false,
        };
        tokio::spawn(actor.run(rx, probe));
        tx
    }

    async fn send<T>(&self, id: &SessionId, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T> {
        let (reply, rx) = oneshot::channel();
        let mut command = make(reply);
        for _ in 0..4 {
            let tx = self.actor(id);
            match tx.send(command) {
                Ok(()) => return rx.await.map_err(|_| Error::RunInterrupted),
                Err(mpsc::error::SendError(back)) => command = back,
            }
        }
        Err(Error::Storage(format!("session {id} could not be loaded")))
    }

    /// Starts a run (an empty run id gets the session's next, `r<n>`).
    pub(crate) async fn start(&self, start: StartRun, session: &SessionId, prepare: Prepare) -> Result<Started> {
        self.send(session, |reply| Command::Start {
            start: Box::new(start),
            prepare,
            reply,
        })
        .await?
    }

    pub(crate) async fn confirm(
        &self,
        session: &SessionId,
        call_id: concierge_core::CallId,
        fingerprint: String,
        decision: Decision,
    ) -> Result<Stop> {
        self.send(session, |reply| Command::Confirm {
            call_id,
            fingerprint,
            decision,
            reply,
        })
        .await?
    }

    pub(crate) async fn end(&self, session: &SessionId, reason: String) -> Result<Option<RunOutput>> {
        self.send(session, |reply| Command::End { reason, reply }).await?
    }

    pub(crate) async fn wait(&self, session: &SessionId) -> Result<Option<Stop>> {
        self.send(session, |reply| Command::Wait { reply }).await
    }

    pub(crate) async fn inspect(&self, session: &SessionId) -> Result<Option<Session>> {
        self.send(session, |reply| Command::Inspect { reply }).await
    }

    /// Asks every idle session to leave memory (recording where it ends), then
    /// waits for the journal to write that down.
    pub(crate) async fn shutdown(&self) {
        let senders: Vec<mpsc::UnboundedSender<Command>> = lock(&self.shared.actors).values().cloned().collect();
        let mut replies = Vec::new();
        for tx in senders {
            let (reply, rx) = oneshot::channel();
            if tx.send(Command::Shutdown { reply }).is_ok() {
                replies.push(rx);
            }
        }
        for rx in replies {
            let _ = rx.await;
        }
        self.shared.journal.flush().await;
    }

    /// How many sessions are in memory (their actors are alive).
    pub(crate) fn in_memory(&self) -> usize {
        lock(&self.shared.actors).len()
    }

    /// A receiver of the session's live events (created before reading history,
    /// so nothing is missed in between).
    pub(crate) fn live(&self, session: &SessionId) -> broadcast::Receiver<Event> {
        let mut channels = lock(&self.shared.channels);
        channels
            .entry(session.clone())
            .or_insert_with(|| broadcast::channel(LIVE_BUFFER).0)
            .subscribe()
    }
}

struct Actor {
    shared: Arc<Shared>,
    id: SessionId,
    tx: mpsc::UnboundedSender<Command>,
    session: Option<Session>,
    index: u64,
    cursor: Cursor,
    bytes_since_snapshot: u64,
    snapshot_bytes: u64,
    last_agent: Option<concierge_core::AgentId>,
    /// Whether this actor has recorded the session's head (and marked it live).
    located: bool,
    waiters: HashMap<RunId, Vec<oneshot::Sender<RunOutput>>>,
    broken: bool,
}

impl Actor {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Command>, probe: Option<oneshot::Sender<Option<Stop>>>) {
        if let Err(error) = self.load().await {
            tracing::error!(session = %self.id, %error, "cannot load the session");
            self.retire_now();
            return;
        }
        if let Some(probe) = probe {
            let _ = probe.send(self.stop_of_active());
        }
        self.resume();
        loop {
            let command = if self.in_flight() {
                rx.recv().await
            } else {
                match tokio::time::timeout(self.shared.settings.idle, rx.recv()).await {
                    Ok(command) => command,
                    Err(_) => match self.try_retire(&mut rx) {
                        Some(command) => Some(command),
                        None => return,
                    },
                }
            };
            let Some(command) = command else {
                return;
            };
            if let Command::Shutdown { reply } = command {
                if !self.in_flight() {
                    self.park();
                    self.retire_now();
                    let _ = reply.send(());
                    return;
                }
                let _ = reply.send(());
                continue;
            }
            self.handle(command).await;
            if self.broken {
                self.retire_now();
                return;
            }
            if self.session.is_none() {
                // Nothing exists for this id: do not linger.
                if let Some(command) = self.try_retire(&mut rx) {
                    self.handle(command).await;
                    continue;
                }
                return;
            }
        }
    }

    async fn load(&mut self) -> Result<()> {
        let Some(loaded) = self.shared.journal.load(&self.id, false).await? else {
            return Ok(());
        };
        let catalog = self.shared.catalog();
        self.cursor = loaded.cursor;
        self.snapshot_bytes = loaded.snapshot_bytes;
        let (mut session, mut next) = match loaded.snapshot {
            Some((index, session)) => (Some(session), index + 1),
            None => (None, 0),
        };
        for (index, input) in loaded.inputs {
            let state = match session.as_mut() {
                Some(s) => s,
                None => {
                    let Input::StartRun(start) = &input else {
                        return Err(Error::Storage(format!(
                            "session {}: the journal does not begin with a run",
                            self.id
                        )));
                    };
                    let agent = start.agent.clone().unwrap_or_else(|| "unknown".into());
                    session.insert(Session::new(self.id.clone(), agent))
                }
            };
            if let Err(error) = state.step(input, &catalog) {
                tracing::warn!(session = %self.id, index, %error, "a journaled input no longer applies");
            }
            next = index + 1;
        }
        self.index = next;
        self.last_agent = session.as_ref().map(|s| s.agent().clone());
        self.session = session;
        Ok(())
    }

    fn resume(&mut self) {
        let catalog = self.shared.catalog();
        let effects = match &self.session {
            Some(session) => session.pending_effects(&catalog),
            None => return,
        };
        if !effects.is_empty() {
            tracing::info!(session = %self.id, effects = effects.len(), "resuming an unfinished run");
        }
        self.perform(effects);
    }

    /// Whether a run is under way (not parked on a confirmation): the
    /// actor then stays in memory.
    fn in_flight(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| s.active_run().is_some() && s.pending_confirmation().is_none())
    }

    /// Records where the session ends, marking it idle in the journal.
    fn park(&self) {
        if let Some(session) = &self.session {
            self.shared
                .journal
                .park(session.clone(), self.cursor, self.index.saturating_sub(1));
        }
    }

    /// Leaves memory if nothing is queued; returns a command that arrived meanwhile.
    fn try_retire(&mut self, rx: &mut mpsc::UnboundedReceiver<Command>) -> Option<Command> {
        self.park();
        // Holding the map while checking the queue: a sender either got its
        // command in before, or finds this actor gone and spawns another.
        let actors = lock(&self.shared.actors);
        match rx.try_recv() {
            Ok(command) => {
                // Staying after all: the head just recorded marks the session
                // idle, so the next entry must mark it live again.
                self.located = false;
                Some(command)
            }
            Err(_) => {
                self.leave(actors);
                None
            }
        }
    }

    /// Forgets the session's live channel if nobody listens any more.
    fn drop_unheard_channel(&self) {
        if let Ok(mut channels) = self.shared.channels.lock() {
            if channels.get(&self.id).is_some_and(|c| c.receiver_count() == 0) {
                channels.remove(&self.id);
            }
        }
    }

    fn retire_now(&mut self) {
        self.leave(lock(&self.shared.actors));
    }

    /// Takes this actor out of the map (unless another replaced it) and
    /// forgets an unheard live channel.
    fn leave(&self, mut actors: MutexGuard<'_, HashMap<SessionId, mpsc::UnboundedSender<Command>>>) {
        if actors.get(&self.id).is_some_and(|tx| tx.same_channel(&self.tx)) {
            actors.remove(&self.id);
        }
        drop(actors);
        self.drop_unheard_channel();
    }

    async fn handle(&mut self, command: Command) {
        match command {
            Command::Start { start, prepare, reply } => {
                let result = self.start(*start, prepare).await;
                let _ = reply.send(result);
            }
            Command::Confirm {
                call_id,
                fingerprint,
                decision,
                reply,
            } => {
                let result = self.confirm(call_id, fingerprint, decision).await;
                let _ = reply.send(result);
            }
            Command::End { reason, reply } => {
                let result = self.end(reason).await;
                let _ = reply.send(result);
            }
            Command::Wait { reply } => {
                let stop = self.stop_of_active();
                let _ = reply.send(stop);
            }
            Command::Inspect { reply } => {
                let _ = reply.send(self.session.clone());
            }
            Command::Shutdown { reply } => {
                let _ = reply.send(());
            }
            Command::Probe { reply } => {
                let stop = self.stop_of_active();
                let _ = reply.send(stop);
            }
            Command::Input(input) => match self.apply(*input).await {
                Ok(()) => {}
                Err(Error::Rejected(StepError::Idle)) => {}
                Err(Error::Rejected(error)) => {
                    tracing::debug!(session = %self.id, %error, "input dropped");
                }
                Err(error) => tracing::error!(session = %self.id, %error, "input failed"),
            },
        }
    }

    fn stop_of_active(&mut self) -> Option<Stop> {
        let session = self.session.as_ref()?;
        let run = session.active_run()?.clone();
        if session.pending_confirmation().is_some() {
            return session.last_output().cloned().map(|o| Stop::Now(Box::new(o)));
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.entry(run).or_default().push(tx);
        Some(Stop::Later(rx))
    }

    async fn start(&mut self, mut start: StartRun, prepare: Prepare) -> Result<Started> {
        let created = self.session.is_none();
        if created {
            let Some(agent) = start.agent.clone() else {
                return Err(Error::SessionNotFound(self.id.clone()));
            };
            self.session = Some(Session::new(self.id.clone(), agent));
        }
        let (current, first_seq) = match &self.session {
            Some(s) => {
                if start.run_id.is_none() {
                    start.run_id = Some(RunId::new(format!("r{}", s.runs_started() + 1)));
                }
                (s.agent().clone(), s.last_seq() + 1)
            }
            None => return Err(Error::SessionNotFound(self.id.clone())),
        };
        prepare(&mut start, &current, &self.shared.catalog());
        let run = start.run_id.clone().unwrap_or_else(|| RunId::new(""));
        let (tx, rx) = oneshot::channel();
        self.waiters.entry(run.clone()).or_default().push(tx);
        match self.apply(Input::StartRun(start)).await {
            Ok(()) => Ok(Started {
                stop: Stop::Later(rx),
                run_id: run,
                first_seq,
            }),
            Err(error) => {
                self.waiters.remove(&run);
                if created && self.index == 0 {
                    self.session = None;
                }
                Err(error)
            }
        }
    }

    async fn confirm(
        &mut self,
        call_id: concierge_core::CallId,
        fingerprint: String,
        decision: Decision,
    ) -> Result<Stop> {
        let Some(session) = &self.session else {
            return Err(Error::SessionNotFound(self.id.clone()));
        };
        let Some(run_id) = session.active_run().cloned() else {
            return Err(Error::Rejected(StepError::NotAwaitingConfirmation));
        };
        let (tx, rx) = oneshot::channel();
        self.waiters.entry(run_id.clone()).or_default().push(tx);
        let input = Input::Confirm(Confirmation {
            run_id: run_id.clone(),
            call_id,
            fingerprint,
            decision,
            at: now(),
        });
        match self.apply(input).await {
            Ok(()) => Ok(Stop::Later(rx)),
            Err(error) => {
                if let Some(list) = self.waiters.get_mut(&run_id) {
                    list.pop();
                }
                Err(error)
            }
        }
    }

    async fn end(&mut self, reason: String) -> Result<Option<RunOutput>> {
        let Some(session) = &self.session else {
            return Err(Error::SessionNotFound(self.id.clone()));
        };
        let active = session.active_run().cloned();
        self.apply(Input::End { reason, at: now() }).await?;
        Ok(match (active, self.session.as_ref().and_then(Session::last_output)) {
            (Some(run), Some(output)) if output.run_id == run => Some(output.clone()),
            _ => None,
        })
    }

    /// Steps the session, journals the input, publishes the events, performs the effects.
    async fn apply(&mut self, input: Input) -> Result<()> {
        let catalog = self.shared.catalog();
        let Some(session) = self.session.as_mut() else {
            return Err(Error::SessionNotFound(self.id.clone()));
        };
        let step = session.step(input.clone(), &catalog)?;
        let agent_changed = self.last_agent.as_ref() != Some(session.agent());
        let running = session.active_run().is_some();
        let locate = !self.located;
        let min = self.shared.settings.snapshot_min_bytes.max(self.snapshot_bytes);
        let snapshot = (!running && self.bytes_since_snapshot >= min).then(|| session.clone());
        let entry = Entry {
            session: self.id.clone(),
            index: self.index,
            input,
            agent: agent_changed.then(|| session.agent().clone()),
            locate,
            snapshot,
        };
        let agent = session.agent().clone();
        let appended = match self.shared.journal.append(entry, self.cursor).await {
            Ok(appended) => appended,
            Err(error) => {
                // The session in memory is ahead of the journal: drop it; it is
                // reloaded from what is durable.
                self.broken = true;
                return Err(error);
            }
        };
        self.cursor = appended.cursor;
        self.located = true;
        self.bytes_since_snapshot += appended.input_bytes;
        if appended.snapshot_bytes > 0 {
            self.snapshot_bytes = appended.snapshot_bytes;
            self.bytes_since_snapshot = 0;
        }
        self.index += 1;
        self.last_agent = Some(agent);
        self.publish(&step.events);
        self.perform(step.effects);
        Ok(())
    }

    /// Sends the step's events to the session's live subscribers, if any.
    fn publish(&self, events: &[Event]) {
        let mut channels = lock(&self.shared.channels);
        if let Some(channel) = channels.get(&self.id) {
            if channel.receiver_count() == 0 {
                channels.remove(&self.id);
                return;
            }
            for event in events {
                let _ = channel.send(event.clone());
            }
        }
    }

    fn perform(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::CallModel { run_id, call, request } => self.call_model(run_id, call, request),
                Effect::CallTool { run_id, call, key } => {
                    let tools = self.shared.tools.clone();
                    let tx = self.tx.clone();
                    let cx = ToolContext {
                        session_id: self.id.clone(),
                        run_id: run_id.clone(),
                        call_id: call.id.clone(),
                        agent: self
                            .session
                            .as_ref()
                            .map(|s| s.agent().clone())
                            .unwrap_or_else(|| "unknown".into()),
                        idempotency_key: key,
                    };
                    tokio::spawn(async move {
                        let (outcome, duration_ms) = tools.execute(&call, cx).await;
                        let _ = tx.send(Command::Input(Box::new(Input::ToolFinished {
                            run_id,
                            call_id: call.id,
                            outcome,
                            duration_ms,
                            at: now(),
                        })));
                    });
                }
                Effect::AwaitUser(output) | Effect::Finish(output) => {
                    if let Some(waiters) = self.waiters.remove(&output.run_id) {
                        for waiter in waiters {
                            let _ = waiter.send(output.clone());
                        }
                    }
                }
                Effect::WakeAt { at, .. } => {
                    let tx = self.tx.clone();
                    let delay = Duration::from_millis(at.0.saturating_sub(now().0));
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        let _ = tx.send(Command::Input(Box::new(Input::Tick { at: now() })));
                    });
                }
            }
        }
    }

    fn call_model(&self, run_id: RunId, call: u32, request: concierge_core::ModelRequest) {
        let model = self.shared.models.for_request(&request);
        let settings = self.shared.settings.clone();
        let tx = self.tx.clone();
        let cx = self.delta_context(&run_id);
        let session = self.id.clone();
        tokio::spawn(async move {
            let name = model.as_ref().map_or_else(|| "none:none".to_string(), |m| m.name());
            let (system, model_name) = name.split_once(':').unwrap_or(("unknown", name.as_str()));
            // OpenTelemetry GenAI semantic conventions.
            let span = tracing::info_span!(
                "chat",
                "gen_ai.operation.name" = "chat",
                "gen_ai.system" = system,
                "gen_ai.request.model" = model_name,
                "gen_ai.request.temperature" = request.temperature.map(f64::from),
                "gen_ai.usage.input_tokens" = tracing::field::Empty,
                "gen_ai.usage.output_tokens" = tracing::field::Empty,
                "gen_ai.response.finish_reasons" = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                "concierge.session" = %session,
                "concierge.run" = %run_id,
                "concierge.agent" = %request.agent,
            );
            if settings.log_prompts {
                let prompt = serde_json::json!({"system": request.system, "messages": request.messages});
                tracing::info!(parent: &span, gen_ai.prompt = %prompt, "model prompt");
            }
            let result = match &model {
                Some(model) => {
                    use tracing::Instrument;
                    complete_with_retry(model.as_ref(), &request, &cx, &settings.retry)
                        .instrument(span.clone())
                        .await
                }
                None => Err(ModelError::new(
                    ModelErrorKind::NotConfigured,
                    request.model.clone().unwrap_or_else(|| "default".into()),
                    format!(
                        "no model is configured for agent {}; configure one (e.g. --model openai:<name> --base-url URL)",
                        request.agent
                    ),
                )),
            };
            let input = match result {
                Ok(mut reply) => {
                    let usage = reply.usage.get_or_insert(concierge_core::Usage::tokens(0, 0));
                    usage.cost_usd = settings
                        .prices
                        .get(&name)
                        .map(|price| price.cost(usage.input_tokens, usage.output_tokens));
                    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
                    if let Some(reason) = &reply.finish_reason {
                        span.record("gen_ai.response.finish_reasons", reason.as_str());
                    }
                    Input::ModelReplied {
                        run_id,
                        call,
                        reply,
                        at: now(),
                    }
                }
                Err(error) => {
                    span.record("error.type", format!("{:?}", error.kind).as_str());
                    tracing::warn!(parent: &span, %error, "model call failed");
                    Input::ModelFailed {
                        run_id,
                        call,
                        error: error.to_string(),
                        at: now(),
                    }
                }
            };
            let _ = tx.send(Command::Input(Box::new(input)));
        });
    }

    /// A context whose deltas go to the session's live subscribers (never to the journal).
    fn delta_context(&self, run_id: &RunId) -> ModelContext {
        let has_subscribers = self
            .shared
            .channels
            .lock()
            .map(|c| c.get(&self.id).is_some_and(|ch| ch.receiver_count() > 0))
            .unwrap_or(false);
        if !has_subscribers {
            return ModelContext::default();
        }
        let shared = self.shared.clone();
        let session = self.id.clone();
        let run = run_id.clone();
        let seq = self.session.as_ref().map_or(0, Session::last_seq);
        ModelContext {
            on_delta: Some(Arc::new(move |text: &str| {
                if let Ok(channels) = shared.channels.lock() {
                    if let Some(channel) = channels.get(&session) {
                        let _ = channel.send(Event {
                            seq,
                            delta: 0,
                            at: now(),
                            session: session.clone(),
                            run: Some(run.clone()),
                            kind: EventKind::ModelDelta { text: text.to_string() },
                        });
                    }
                }
            })),
        }
    }
}
