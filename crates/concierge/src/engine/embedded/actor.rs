//! One actor task per session this process drives.
//!
//! An actor owns its [`Session`]: it claims the session in the store before
//! it writes (so no other process appends to it meanwhile), applies inputs
//! one at a time, journals each accepted input (durably, for SQLite) and only
//! then publishes the events and performs the effects. Model and tool calls
//! run as tasks that send their result back as an input. An idle actor
//! releases the session and leaves memory; the next command claims it again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use concierge_core::{
    CallId, Catalog, Confirmation, Decision, Effect, Event, EventKind, Input, OpenSession, RunId, RunOutput, Session,
    SessionId, StartRun, Step, StepError, Timestamp,
};
use tokio::sync::{mpsc, oneshot};

use super::Shared;
use super::replay::replay;
use super::store::{Claim, Cursor, Entry, LoadFrom, Release};
use crate::engine::{RunSetup, RunStop, SessionFacts, Started, Unavailable, call_agent, now, refuse_invalid_ask};
use crate::error::{Error, Result};
use crate::model::ModelContext;
use crate::tool::ToolContext;

mod command;
mod end;
mod questions;
mod recovery;

pub(crate) use command::{Command, MAILBOX};
pub(crate) use recovery::Resume;

pub(crate) struct Actor {
    shared: Arc<Shared>,
    id: SessionId,
    tx: mpsc::Sender<Command>,
    /// Whether this process owns the session (claimed in the store).
    owned: bool,
    session: Option<Session>,
    index: u64,
    cursor: Cursor,
    bytes_since_snapshot: u64,
    snapshot_bytes: u64,
    /// Whether snapshots compact the journal (the store archives the events
    /// since the last compaction and deletes the entries before the snapshot).
    compacting: bool,
    /// The events since the last compaction, once the session was compacted
    /// (`None` before, or when they are not known: the next snapshot rebuilds
    /// them from the store, so a session never compacted costs nothing).
    unarchived: Option<Vec<Event>>,
    last_agent: Option<concierge_core::AgentId>,
    /// Whether the next entry is the first since the claim.
    first_since_claim: bool,
    /// Why the run in progress cannot go on in this process, if it cannot.
    stalled: Option<Unavailable>,
    waiters: HashMap<RunId, Vec<oneshot::Sender<RunOutput>>>,
    broken: bool,
    /// The run this process resumed after its owner was gone: an unreachable
    /// model leaves it pending instead of failing it.
    resumed_run: Option<RunId>,
    /// While the effects of a run taken over at start are issued: the
    /// slots its calls wait for (see [`recovery::Resume`]).
    pace: Option<Arc<tokio::sync::Semaphore>>,
    /// Whether the loaded run's effects were issued again since the claim
    /// (once: a call in flight is not issued twice).
    resumed_since_claim: bool,
    /// Per running call: how many questions its live attempt asked so far.
    asks: HashMap<CallId, usize>,
    /// Live requests waiting for the person's answer, by call and question.
    open: HashMap<(CallId, u32), Vec<command::AnswerTx>>,
    /// When the session's last input was accepted.
    changed_at: Timestamp,
    /// What the session list was last told: whether a run is under way,
    /// and when the session last changed.
    shown: Option<(bool, Timestamp)>,
}

fn stop_from(rx: oneshot::Receiver<RunOutput>) -> RunStop {
    RunStop::later(async move { rx.await.map_err(|_| Error::RunInterrupted) })
}

impl Actor {
    pub(crate) fn new(shared: Arc<Shared>, id: SessionId, tx: mpsc::Sender<Command>) -> Self {
        Self {
            shared,
            id,
            tx,
            owned: false,
            session: None,
            index: 0,
            cursor: Cursor::default(),
            bytes_since_snapshot: 0,
            snapshot_bytes: 0,
            compacting: false,
            unarchived: None,
            last_agent: None,
            first_since_claim: false,
            stalled: None,
            waiters: HashMap::new(),
            broken: false,
            resumed_run: None,
            pace: None,
            resumed_since_claim: false,
            asks: HashMap::new(),
            open: HashMap::new(),
            changed_at: Timestamp(0),
            shown: None,
        }
    }

    pub(crate) async fn run(mut self, mut rx: mpsc::Receiver<Command>) {
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
            match command {
                Command::Shutdown { reply } => {
                    let idle = !self.in_flight();
                    if idle {
                        self.release();
                        self.leave();
                    }
                    let _ = reply.send(());
                    if idle {
                        return;
                    }
                    continue;
                }
                Command::Erase { reply } => {
                    let result = Box::pin(self.erase()).await;
                    let erased = result.is_ok();
                    let _ = reply.send(result);
                    if erased {
                        self.leave();
                        return;
                    }
                    continue;
                }
                Command::Release if !self.in_flight() => {
                    if let Some(command) = self.try_retire(&mut rx) {
                        self.handle_boxed(command).await;
                        continue;
                    }
                    return;
                }
                command => self.handle_boxed(command).await,
            }
            self.show_activity();
            if self.broken {
                if self.owned {
                    self.shared.store.disown(&self.id);
                }
                self.leave();
                return;
            }
            if !self.owned {
                // Nothing here to keep in memory.
                match self.try_retire(&mut rx) {
                    Some(command) => self.handle_boxed(command).await,
                    None => return,
                }
            }
        }
    }

    /// [`Actor::handle`], its future on the heap while it runs: inline, the
    /// largest of its states would be reserved for every session in memory,
    /// idle ones included (about 12 KiB each).
    async fn handle_boxed(&mut self, command: Command) {
        Box::pin(self.handle(command)).await;
    }

    /// Whether a run is under way here (not parked, not waiting for another
    /// process): the actor then stays in memory and keeps the session.
    fn in_flight(&self) -> bool {
        self.stalled.is_none()
            && self
                .session
                .as_ref()
                .is_some_and(|s| s.active_run().is_some() && !s.waits_for_person())
    }

    fn catalog(&self) -> Arc<Catalog> {
        let catalogs = &self.shared.parts.catalogs;
        let version = self.session.as_ref().and_then(Session::catalog_version);
        catalogs.get(version).unwrap_or_else(|| catalogs.current().catalog)
    }

    /// Lets the session go: records where it ends, whether it still has a run
    /// for another process to resume, and that this process no longer owns it.
    fn release(&mut self) {
        let unfinished = self
            .session
            .as_ref()
            .is_some_and(|s| s.active_run().is_some() && !s.waits_for_person());
        self.release_as(unfinished);
    }

    /// Lets the session go, saying whether another process should resume it.
    fn release_as(&mut self, unfinished: bool) {
        if !self.owned {
            return;
        }
        self.owned = false;
        self.shared.store.release(Release {
            cursor: self.cursor,
            index: self.index.saturating_sub(1),
            unfinished,
            state: self.session.clone(),
            changed_at: self.changed_at,
        });
    }

    /// Records a claim the store granted.
    fn took(&mut self, session_no: i64) {
        self.owned = true;
        self.first_since_claim = true;
        self.resumed_since_claim = false;
        self.cursor = Cursor { session_no, head: 0 };
    }

    /// Leaves memory if nothing is queued; returns a command that arrived meanwhile.
    fn try_retire(&mut self, rx: &mut mpsc::Receiver<Command>) -> Option<Command> {
        self.release();
        // Holding the map while checking the queue: a sender either got its
        // command in before, or finds this actor gone and spawns another.
        let actors = self.shared.actors();
        match rx.try_recv() {
            Ok(command) => Some(command),
            Err(_) => {
                self.shared.forget_actor(actors, &self.id, &self.tx);
                None
            }
        }
    }

    /// Tells the session list whether a run is under way here and when the
    /// session last changed, when either changed (a run that starts and
    /// stops within one command changes only the time).
    fn show_activity(&mut self) {
        let live = self.in_flight();
        let now = Some((live, self.changed_at));
        let Some(session) = self.session.as_ref().filter(|_| self.owned && self.shown != now) else {
            return;
        };
        let activity = super::activity::Activity {
            live,
            changed_at: self.changed_at,
            tenant: session.tenant().map(str::to_string),
            agent: session.agent().clone(),
        };
        self.shared.activity.set(&self.id, activity);
        self.shown = now;
    }

    fn leave(&mut self) {
        let actors = self.shared.actors();
        self.shared.forget_actor(actors, &self.id, &self.tx);
    }

    async fn handle(&mut self, command: Command) {
        match command {
            Command::Start { start, setup, reply } => {
                let result = self.start(*start, *setup).await;
                let _ = reply.send(result);
            }
            Command::Confirm {
                call_id,
                fingerprint,
                decision,
                reply,
            } => {
                let result = self.confirm(call_id, fingerprint, *decision).await;
                let _ = reply.send(result);
            }
            Command::End {
                reason,
                run_only,
                reply,
            } => {
                let result = self.end(reason, run_only).await;
                let _ = reply.send(result);
            }
            Command::Open { open, reply } => {
                let result = self.open(*open).await;
                let _ = reply.send(result);
            }
            Command::Wait { reply } => {
                let result = self.wait().await;
                let _ = reply.send(result);
            }
            Command::Inspect { reply } => {
                let result = self.inspect().await;
                let _ = reply.send(result);
            }
            Command::Facts { reply } => {
                let result = match self.owned {
                    true => Ok(self.session.as_ref().map(SessionFacts::of)),
                    false => self
                        .shared
                        .read(&self.id)
                        .await
                        .map(|s| s.as_ref().map(SessionFacts::of)),
                };
                let _ = reply.send(result);
            }
            Command::Recover { reply, mut resume } => {
                let (stop, effects) = self.recover().await;
                let _ = reply.send(stop);
                if let Some(effects) = effects {
                    // Closed: the engine is gone, and the run with it.
                    let _ = resume.go.wait_for(|go| *go).await;
                    self.pace = Some(resume.slots);
                    self.perform(effects);
                    self.pace = None;
                }
            }
            Command::Ask {
                run_id,
                call_id,
                question,
                reply,
            } => self.ask(run_id, call_id, *question, reply).await,
            Command::Report {
                run_id,
                call_id,
                report,
                reply,
            } => {
                let done = self.report(run_id, call_id, *report).await;
                let _ = reply.send(done);
            }
            Command::Answer {
                call_id,
                question,
                answer,
                reply,
            } => {
                let result = self.answer(call_id, question, *answer).await;
                let _ = reply.send(result);
            }
            Command::Release | Command::Shutdown { .. } => {}
            Command::Erase { reply } => {
                // The loop handles it (and leaves after); one that comes
                // here (after a retirement) erases all the same.
                let result = self.erase().await;
                let _ = reply.send(result);
            }
            Command::Stall(reason) => {
                tracing::warn!(session = %self.id, %reason, "a resumed run waits for a process that can run it");
                self.stalled = Some(reason);
                self.shared.stall(&self.id);
                self.release();
            }
            Command::Input(input) => {
                if !self.owned {
                    return;
                }
                match self.apply(*input).await {
                    Ok(_) => {}
                    Err(Error::Rejected(StepError::Idle)) => {}
                    Err(Error::Rejected(error)) => {
                        tracing::debug!(session = %self.id, %error, "input dropped");
                    }
                    Err(error) => tracing::error!(session = %self.id, %error, "input failed"),
                }
            }
        }
    }

    /// Claims the session for this process (waiting while another live
    /// process owns it, up to the busy timeout), then loads it as stored.
    async fn own(&mut self, agent: &concierge_core::AgentId) -> Result<()> {
        if self.owned {
            return Ok(());
        }
        if self.shared.settings.read_only {
            return Err(Error::ReadOnly);
        }
        let deadline = Instant::now() + self.shared.settings.busy_timeout;
        let mut delay = Duration::from_millis(10);
        let mut announced = false;
        loop {
            match self.shared.store.claim(&self.id, agent).await? {
                Claim::Owned { session_no } => {
                    self.took(session_no);
                    if let Err(error) = self.load().await {
                        self.release();
                        return Err(error);
                    }
                    return Ok(());
                }
                Claim::Busy(owner) => {
                    if Instant::now() >= deadline {
                        return Err(Error::SessionBusy {
                            session: self.id.clone(),
                            owner,
                        });
                    }
                    if !announced {
                        announced = true;
                        tracing::warn!("session {} is in use by {owner}; waiting for it to be free", self.id);
                    }
                    tokio::time::sleep(delay.min(deadline.saturating_duration_since(Instant::now()))).await;
                    delay = (delay * 2).min(Duration::from_millis(200));
                }
            }
        }
    }

    /// Rebuilds the session from the store (this process owns it).
    async fn load(&mut self) -> Result<()> {
        self.session = None;
        self.index = 0;
        self.stalled = None;
        self.bytes_since_snapshot = 0;
        self.snapshot_bytes = 0;
        let store = &self.shared.store;
        self.compacting = store.compacts() && !self.shared.settings.keep_journal;
        self.unarchived = None;
        let Some(loaded) = store.load(&self.id, LoadFrom::Snapshot).await? else {
            self.last_agent = None;
            return Ok(());
        };
        // A session compacted once stays compacted (its past events are archived).
        self.compacting |= store.compacts() && loaded.archived_seq > 0;
        self.cursor.head = loaded.cursor.head;
        self.snapshot_bytes = loaded.snapshot_bytes;
        let from = loaded.archived_seq + 1;
        // The events since the last compaction come with the replay when the
        // journal holds them all after the snapshot (else the next snapshot rebuilds them).
        let collect = self.compacting
            && loaded.archived_seq > 0
            && loaded.snapshot.as_ref().is_none_or(|(_, s)| s.last_seq() < from);
        let replayed = replay(&self.id, loaded, &self.shared.parts.catalogs, collect.then_some(from))?;
        if collect {
            self.unarchived = Some(replayed.events);
        }
        self.index = replayed.next_index;
        self.session = replayed.session;
        self.last_agent = self.session.as_ref().map(|s| s.agent().clone());
        Ok(())
    }

    pub(super) fn stop_of_active(&mut self) -> Option<RunStop> {
        let session = self.session.as_ref()?;
        let run = session.active_run()?.clone();
        if session.waits_for_person() || session.pending_elicitation().is_some() {
            return session.last_output().cloned().map(RunStop::ready);
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.entry(run).or_default().push(tx);
        Some(stop_from(rx))
    }

    async fn wait(&mut self) -> Result<Option<RunStop>> {
        if !self.owned {
            return Ok(None);
        }
        Ok(self.stop_of_active())
    }

    async fn inspect(&mut self) -> Result<Option<Session>> {
        if self.owned {
            return Ok(self.session.clone());
        }
        self.shared.read(&self.id).await
    }

    async fn start(&mut self, mut start: StartRun, setup: RunSetup) -> Result<Started> {
        let first_agent = start.agent.clone().or_else(|| setup.first_agent_of().cloned());
        let claim_agent = first_agent.clone().unwrap_or_else(|| "unknown".into());
        self.own(&claim_agent).await?;
        self.resume_if_loaded_idle();
        self.check_stalled()?;
        let created = self.session.is_none();
        if created {
            let Some(agent) = first_agent else {
                return Err(Error::SessionNotFound(self.id.clone()));
            };
            // The journal's first input names the agent, so a replay can begin.
            start.agent = Some(agent.clone());
            self.session = Some(Session::new(self.id.clone(), agent));
        }
        let (current, first_seq) = match &self.session {
            Some(s) => (s.agent().clone(), s.last_seq() + 1),
            None => return Err(Error::SessionNotFound(self.id.clone())),
        };
        setup.apply(&mut start, &current);
        if start.catalog_version.is_none() {
            start.catalog_version = self.shared.record_current_catalog();
        }
        let run_agent = start.agent.clone().unwrap_or(current);
        match self.journal(Input::StartRun(start)).await {
            Ok(step) => {
                let Some(run_id) = step.run().cloned() else {
                    return Err(Error::Storage("the run started without an id".into()));
                };
                self.shared
                    .parts
                    .executor
                    .exec_hooks()
                    .run_started(&crate::engine::RunInfo {
                        session: &self.id,
                        run: &run_id,
                        agent: &run_agent,
                    });
                let (tx, rx) = oneshot::channel();
                self.waiters.entry(run_id.clone()).or_default().push(tx);
                self.act(step).await?;
                Ok(Started {
                    run_id,
                    first_seq,
                    stop: stop_from(rx),
                })
            }
            Err(error) => {
                if created && self.index == 0 {
                    self.session = None;
                }
                Err(error)
            }
        }
    }

    async fn open(&mut self, open: OpenSession) -> Result<()> {
        self.own(&open.agent).await?;
        if self.session.is_some() {
            return Err(Error::Rejected(StepError::AlreadyOpen));
        }
        self.session = Some(Session::new(self.id.clone(), open.agent.clone()));
        let result = self.apply(Input::Open(open)).await;
        if result.is_err() && self.index == 0 {
            self.session = None;
        }
        result
    }

    /// After a claim, a run another process left unfinished goes on here.
    fn resume_if_loaded_idle(&mut self) {
        let loaded_run = self.session.as_ref().is_some_and(|s| s.active_run().is_some());
        let nothing_waits = self.waiters.is_empty();
        if loaded_run && nothing_waits && self.first_since_claim && !self.resumed_since_claim {
            self.resume();
        }
    }

    async fn confirm(&mut self, call_id: CallId, fingerprint: String, decision: Decision) -> Result<RunStop> {
        self.own(&"unknown".into()).await?;
        self.resume_if_loaded_idle();
        let Some(session) = &self.session else {
            return Err(Error::SessionNotFound(self.id.clone()));
        };
        let Some(run_id) = session.active_run().cloned() else {
            return Err(Error::Rejected(StepError::NotAwaitingConfirmation));
        };
        let input = Input::Confirm(Confirmation {
            run_id: run_id.clone(),
            call_id,
            fingerprint,
            decision,
            at: now(),
        });
        let step = self.journal(input).await?;
        let (tx, rx) = oneshot::channel();
        self.waiters.entry(run_id).or_default().push(tx);
        self.act(step).await?;
        Ok(stop_from(rx))
    }

    /// Steps the session, journals the input, publishes the events, performs the effects.
    async fn apply(&mut self, input: Input) -> Result<()> {
        let step = self.journal(input).await?;
        self.act(step).await
    }

    /// Steps the session and journals the input (durably) before anything
    /// else happens; on a refused input nothing changes.
    async fn journal(&mut self, input: Input) -> Result<Step> {
        let catalog = match &input {
            Input::StartRun(start) => self
                .shared
                .parts
                .catalogs
                .get(start.catalog_version.as_deref())
                .unwrap_or_else(|| self.shared.parts.catalogs.current().catalog),
            _ => self.catalog(),
        };
        let Some(session) = self.session.as_mut() else {
            return Err(Error::SessionNotFound(self.id.clone()));
        };
        let step = session.step(input.clone(), &catalog)?;
        self.changed_at = now();
        let agent = session.agent().clone();
        let agent_changed = self.last_agent.as_ref() != Some(&agent);
        let tenant = match self.index {
            0 => session.tenant().map(str::to_string),
            _ => None,
        };
        let running = session.active_run().is_some();
        let settings = &self.shared.settings;
        let min = settings
            .snapshot_min_bytes
            .max(self.snapshot_bytes.saturating_mul(settings.snapshot_growth));
        let snapshot = (!running && self.bytes_since_snapshot >= min && self.shared.store.keeps_snapshots())
            .then(|| session.clone());
        let compact = match (&snapshot, self.compacting) {
            (Some(_), true) => self.unarchived().await.map(|mut events| {
                events.extend(step.events.iter().cloned());
                events
            }),
            (None, true) => {
                if let Some(kept) = &mut self.unarchived {
                    kept.extend(step.events.iter().cloned());
                }
                None
            }
            (_, false) => None,
        };
        let entry = Entry {
            session: self.id.clone(),
            index: self.index,
            input,
            agent: agent_changed.then(|| agent.clone()),
            tenant,
            first_since_claim: self.first_since_claim,
            snapshot,
            compact,
        };
        let appended = match self.shared.store.append(entry, self.cursor).await {
            Ok(appended) => appended,
            Err(error) => {
                // The session in memory is ahead of the journal: drop it; it is
                // reloaded from what is durable.
                self.broken = true;
                return Err(error);
            }
        };
        self.cursor = appended.cursor;
        self.first_since_claim = false;
        self.bytes_since_snapshot += appended.input_bytes;
        if appended.snapshot_bytes > 0 {
            self.snapshot_bytes = appended.snapshot_bytes;
            self.bytes_since_snapshot = 0;
        }
        self.index += 1;
        self.last_agent = Some(agent);
        Ok(step)
    }

    /// The events since the journal was last compacted, up to the last input
    /// journaled: the ones kept since, or else (the first compaction, or the
    /// first since a load) rebuilt from the store. `None` when they cannot be: the snapshot is then written
    /// without compacting. Either way, the events kept start again here.
    async fn unarchived(&mut self) -> Option<Vec<Event>> {
        if let Some(kept) = self.unarchived.replace(Vec::new()) {
            return Some(kept);
        }
        let store = &self.shared.store;
        let rebuilt: Result<Option<Vec<Event>>> = async {
            let Some(mut loaded) = store.load(&self.id, LoadFrom::Snapshot).await? else {
                return Ok(Some(Vec::new()));
            };
            let from = loaded.archived_seq + 1;
            // A snapshot written without compacting: read the journal from its start, once.
            if loaded.snapshot.as_ref().is_some_and(|(_, s)| s.last_seq() >= from) {
                match store.load(&self.id, LoadFrom::Start).await? {
                    Some(full) if full.snapshot.is_none() => loaded = full,
                    _ => return Ok(None),
                }
            }
            Ok(Some(
                replay(&self.id, loaded, &self.shared.parts.catalogs, Some(from))?.events,
            ))
        }
        .await;
        match rebuilt {
            Ok(Some(events)) => Some(events),
            Ok(None) => {
                tracing::warn!(session = %self.id, "the journal's archive ends before its snapshot; not compacting it");
                None
            }
            Err(error) => {
                tracing::warn!(session = %self.id, %error, "cannot rebuild the events to archive; not compacting now");
                None
            }
        }
    }

    /// Publishes a journaled step's events, then performs its effects. A call
    /// parked for the person whose arguments would fail validation is not put
    /// to them: it fails at once (journaled as such) and the run goes on.
    async fn act(&mut self, step: Step) -> Result<()> {
        let invalid = refuse_invalid_ask(&step, self.shared.parts.executor.tools(), now());
        if let Some(live) = self.shared.live(&self.id) {
            for event in step.events {
                let asks = matches!(event.kind, EventKind::AwaitingConfirmation { .. });
                if !(asks && invalid.is_some()) {
                    live.publish(event);
                }
            }
        }
        let Some(input) = invalid else {
            self.perform(step.effects);
            return Ok(());
        };
        let effects = step
            .effects
            .into_iter()
            .filter(|e| !matches!(e, Effect::AwaitUser(_)))
            .collect();
        self.perform(effects);
        let next = self.journal(input).await?;
        Box::pin(self.act(next)).await
    }

    fn perform(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::CallModel {
                    run_id,
                    call,
                    request,
                    guardrails,
                } => self.call_model(run_id, call, request, guardrails),
                Effect::CallTool {
                    run_id,
                    call,
                    key,
                    user,
                    blackboard,
                    asked_at,
                    checkpoint,
                    guardrails,
                } => {
                    let executor = self.shared.parts.executor.clone();
                    let tx = self.tx.clone();
                    let channel = self.channel_for(&run_id, &call.id);
                    let cx = ToolContext {
                        asked_at,
                        session_id: self.id.clone(),
                        run_id,
                        call_id: call.id.clone(),
                        agent: self
                            .session
                            .as_ref()
                            .map(|s| s.agent().clone())
                            .unwrap_or_else(|| "unknown".into()),
                        idempotency_key: key,
                        user,
                        tenant: self.session.as_ref().and_then(|s| s.tenant()).map(str::to_owned),
                        blackboard: Arc::new(blackboard),
                        channel: Some(channel),
                        checkpoint,
                    };
                    let pace = self.pace.clone();
                    tokio::spawn(async move {
                        let input = recovery::paced(pace, executor.call_tool(cx, &call, &guardrails)).await;
                        let _ = tx.send(Command::Input(Box::new(input))).await;
                    });
                }
                Effect::CallAgent(call) => {
                    let tx = self.tx.clone();
                    let engine = self.shared.engine.get().and_then(std::sync::Weak::upgrade);
                    let parts = &self.shared.parts;
                    let setup = parts.setup.clone();
                    let call = parts.executor.agent_call(*call);
                    let pace = self.pace.clone();
                    tokio::spawn(async move {
                        // Without the engine the process is closing: the
                        // call is issued again by whoever resumes the run.
                        let Some(engine) = engine else {
                            return;
                        };
                        let input = recovery::paced(pace, call_agent(engine.as_ref(), &setup, &call)).await;
                        drop(engine);
                        let _ = tx.send(Command::Input(Box::new(input))).await;
                    });
                }
                Effect::AnswerElicitation {
                    call_id,
                    question,
                    answer,
                    ..
                } => self.deliver(call_id, question, &answer),
                Effect::AwaitUser(output) | Effect::Finish(output) => {
                    if self.session.as_ref().is_none_or(|s| s.active_run().is_none()) {
                        // The run is over: requests still waiting are told so.
                        self.forget_questions();
                    }
                    self.shared.parts.executor.exec_hooks().run_stopped(&output);
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
                        let _ = tx.send(Command::Input(Box::new(Input::Tick { at: now() }))).await;
                    });
                }
            }
        }
    }

    fn call_model(
        &self,
        run_id: RunId,
        call: u32,
        request: concierge_core::ModelRequest,
        guardrails: Vec<concierge_core::Guardrail>,
    ) {
        let executor = self.shared.parts.executor.clone();
        let tx = self.tx.clone();
        let cx = self.delta_context(&run_id);
        let session = self.id.clone();
        let resumed = self.resumed_run.as_ref() == Some(&run_id);
        let pace = self.pace.clone();
        tokio::spawn(async move {
            let called = executor.call_model(&session, run_id, call, &request, &cx, &guardrails);
            let command = match recovery::paced(pace, called).await {
                (_, Some(error)) if resumed && error.is_unavailable() => Command::Stall(Unavailable::Unreachable {
                    reason: error.to_string(),
                }),
                (input, _) => Command::Input(Box::new(input)),
            };
            let _ = tx.send(command).await;
        });
    }

    /// A context whose deltas go to the session's live subscribers (never to
    /// the journal), numbered after the last durable event.
    fn delta_context(&self, run_id: &RunId) -> ModelContext {
        let Some(live) = self.shared.live(&self.id).filter(|l| l.listeners() > 0) else {
            return ModelContext::default();
        };
        let seq = self.session.as_ref().map_or(0, Session::last_seq);
        ModelContext::publishing_deltas(self.id.clone(), run_id.clone(), seq, move |event| live.publish(event))
    }
}
