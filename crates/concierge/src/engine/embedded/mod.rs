//! The embedded engine: an actor per session in this process, over a
//! SQLite database (durable, shared safely by any number of processes) or
//! memory (for tests and benchmarks).

mod activity;
mod actor;
mod codec;
mod live;
mod memory;
#[cfg(feature = "sqlite")]
mod owner;
mod replay;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod subscription;

use std::collections::{HashMap, HashSet};
use std::path::Path;
#[cfg(feature = "sqlite")]
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use concierge_core::{CallId, Decision, Event, EventId, OpenSession, RunOutput, Session, SessionId, StartRun};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use tokio::sync::{Semaphore, mpsc, oneshot, watch};

pub use self::codec::payload_text;

use self::activity::Activities;
use self::actor::{Actor, Command, MAILBOX, Resume};
use self::live::Live;
use self::memory::MemoryStore;
use self::replay::replay;
#[cfg(feature = "sqlite")]
use self::sqlite::SqliteStore;
use self::store::{LoadFrom, Store};
use self::subscription::Subscription;
use crate::engine::{
    Engine, EngineOptions, EngineParts, JournalStats, OpenEngine, RunSetup, RunStop, SessionFacts, SessionPage,
    SessionQuery, SessionSummary, Started, newest_first,
};
use crate::error::{Error, Result};

/// How long the SQLite store gathers entries before a commit under load, by default.
pub const DEFAULT_COMMIT_WINDOW: Duration = Duration::from_millis(1);

#[derive(Clone, Debug)]
enum Kind {
    #[cfg(feature = "sqlite")]
    Sqlite(PathBuf),
    Memory,
}

/// How many calls of the runs taken over at start are under way at once,
/// unless [`Embedded::resume_concurrency`] says otherwise.
pub(crate) const DEFAULT_RESUME_CONCURRENCY: usize = 128;

/// How many times its last snapshot's size a session's journal grows before
/// the session is snapshotted again, unless [`Embedded::snapshot_growth`]
/// says otherwise.
pub(crate) const DEFAULT_SNAPSHOT_GROWTH: u64 = 4;

/// Settings of the embedded engine.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    idle: Duration,
    snapshot_min_bytes: u64,
    snapshot_growth: u64,
    keep_journal: bool,
    commit_window: Duration,
    lease: Duration,
    busy_timeout: Duration,
    read_only: bool,
    resume_concurrency: usize,
    label: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(30),
            snapshot_min_bytes: 16 * 1024,
            snapshot_growth: DEFAULT_SNAPSHOT_GROWTH,
            keep_journal: false,
            commit_window: DEFAULT_COMMIT_WINDOW,
            lease: Duration::from_secs(10),
            busy_timeout: Duration::from_secs(30),
            read_only: false,
            resume_concurrency: DEFAULT_RESUME_CONCURRENCY,
            label: String::new(),
        }
    }
}

/// The embedded engine, to open: on a SQLite database (the default, at
/// `./concierge.db`) or in memory.
///
/// Any number of processes may open one database. A session is driven by one
/// process at a time, its owner: a process claims a session before it writes
/// to it, renews a lease while it lives, and lets the session go when it is
/// idle or when another process asks for it. A process that dies leaves its
/// sessions to the next process that looks: on the same machine at once,
/// elsewhere when the lease runs out.
#[derive(Clone, Debug)]
pub struct Embedded {
    kind: Kind,
    settings: Settings,
}

impl Default for Embedded {
    /// `./concierge.db`, the same default as the CLI (memory without the `sqlite` feature).
    fn default() -> Self {
        #[cfg(feature = "sqlite")]
        return Self::sqlite("concierge.db");
        #[cfg(not(feature = "sqlite"))]
        return Self::memory();
    }
}

impl Embedded {
    /// The engine on the SQLite database at `path` (created if missing).
    #[cfg(feature = "sqlite")]
    pub fn sqlite(path: impl Into<PathBuf>) -> Self {
        Self {
            kind: Kind::Sqlite(path.into()),
            settings: Settings::default(),
        }
    }

    /// The engine in memory: nothing survives the process.
    pub fn memory() -> Self {
        Self {
            kind: Kind::Memory,
            settings: Settings::default(),
        }
    }

    /// Takes `other`'s settings (not its store).
    pub(crate) fn copy_settings(&mut self, other: &Embedded) {
        self.settings = other.settings.clone();
    }

    /// The database file, for the SQLite engine.
    pub fn path(&self) -> Option<&Path> {
        match &self.kind {
            #[cfg(feature = "sqlite")]
            Kind::Sqlite(path) => Some(path),
            Kind::Memory => None,
        }
    }

    /// How long an idle session stays in memory (and owned) (default 30 s).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.settings.idle = idle;
        self
    }

    /// Input bytes journaled since the last snapshot before a session is
    /// snapshotted again (default 16 KiB; never less than the last
    /// snapshot's size times [`Embedded::snapshot_growth`]).
    pub fn snapshot_after_bytes(mut self, bytes: u64) -> Self {
        self.settings.snapshot_min_bytes = bytes;
        self
    }

    /// How many times its last snapshot's size the input journaled since
    /// must reach before a session is snapshotted again (default 4; 0 is
    /// taken as 1). Higher writes fewer snapshots of long conversations, each
    /// a copy of the whole session; loading one then replays more of its
    /// journal (at most this many times the snapshot's size).
    pub fn snapshot_growth(mut self, factor: u64) -> Self {
        self.settings.snapshot_growth = factor.max(1);
        self
    }

    /// Whether the SQLite journal keeps every entry (default `false`: a
    /// session's entries before its latest snapshot are deleted when the
    /// snapshot is written, in the same transaction, and the events they
    /// produced are archived with it, so `history`, `session` and event
    /// subscriptions from any point show the same as before). A session
    /// compacted once stays compacted; the memory engine keeps every input.
    pub fn keep_journal(mut self, keep: bool) -> Self {
        self.settings.keep_journal = keep;
        self
    }

    /// How long the SQLite store gathers entries before a commit when it is
    /// under load (default 1 ms; zero commits at once).
    pub fn commit_window(mut self, window: Duration) -> Self {
        self.settings.commit_window = window;
        self
    }

    /// How long a process's heartbeat vouches for it to processes that cannot
    /// check it directly (another machine or pid namespace); default 10 s. It
    /// beats three times per lease.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.settings.lease = lease.max(Duration::from_millis(300));
        self
    }

    /// How long a command waits for a session another live process drives
    /// before it fails with [`Error::SessionBusy`] (default 30 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.settings.busy_timeout = timeout;
        self
    }

    /// Opens the database only to read: sessions, history and events can be
    /// seen; nothing is resumed, taken over or run.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.settings.read_only = read_only;
        self
    }

    /// How many calls of the runs taken over at start are under way at once
    /// (default 128; at least 1): after a restart with thousands of runs in
    /// flight, they resume in waves instead of all calling the model at
    /// once. A call holds its place for at most two seconds.
    pub fn resume_concurrency(mut self, calls: usize) -> Self {
        self.settings.resume_concurrency = calls.max(1);
        self
    }

    /// Whether the database is opened only to read.
    pub(crate) fn is_read_only(&self) -> bool {
        self.settings.read_only
    }

    /// What this process is, as other processes name it when it holds a
    /// session they want ("concierge serve").
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.settings.label = label.into();
        self
    }

    async fn open_engine(self, parts: EngineParts) -> Result<Arc<dyn Engine>> {
        let store: Arc<dyn Store> = match &self.kind {
            Kind::Memory => Arc::new(MemoryStore::new()),
            #[cfg(feature = "sqlite")]
            Kind::Sqlite(path) => {
                let options = sqlite::Options {
                    window: self.settings.commit_window,
                    lease: self.settings.lease,
                    label: self.settings.label.clone(),
                    read_only: self.settings.read_only,
                };
                let path = path.clone();
                Arc::new(
                    tokio::task::spawn_blocking(move || SqliteStore::open(&path, options))
                        .await
                        .map_err(|e| Error::Storage(format!("cannot open the database: {e}")))??,
                )
            }
        };
        let shared = Arc::new(Shared {
            parts,
            store,
            settings: self.settings,
            actors: Mutex::default(),
            lives: Mutex::default(),
            stalled: Mutex::default(),
            recorded: Mutex::default(),
            activity: Arc::default(),
            recovering: std::sync::atomic::AtomicBool::new(false),
            engine: std::sync::OnceLock::new(),
        });
        let (newest, _) = shared.store.changes(i64::MAX).await?;
        tokio::spawn(background(Arc::downgrade(&shared), newest));
        let engine: Arc<dyn Engine> = Arc::new(EmbeddedEngine {
            shared: shared.clone(),
            resumed: Mutex::new(Vec::new()),
        });
        let _ = shared.engine.set(Arc::downgrade(&engine));
        Ok(engine)
    }
}

impl OpenEngine for Embedded {
    fn open(self: Box<Self>, parts: EngineParts) -> BoxFuture<'static, Result<Arc<dyn Engine>>> {
        Box::pin(self.open_engine(parts))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

type Actors = HashMap<SessionId, mpsc::Sender<Command>>;

/// What the engine's actors share.
pub(crate) struct Shared {
    parts: EngineParts,
    store: Arc<dyn Store>,
    settings: Settings,
    actors: Mutex<Actors>,
    lives: Mutex<HashMap<SessionId, Arc<Live>>>,
    /// Sessions with a run this process cannot perform (left for another).
    stalled: Mutex<HashSet<SessionId>>,
    /// Catalog versions recorded in the store by this process.
    recorded: Mutex<HashSet<String>>,
    /// The sessions this process holds: whether a run is under way and
    /// when each last changed (the store learns it when they leave memory).
    activity: Arc<Activities>,
    /// Whether this process takes over what dead processes left.
    recovering: std::sync::atomic::AtomicBool,
    /// The engine itself, for the child runs its actors start.
    engine: std::sync::OnceLock<Weak<dyn Engine>>,
}

impl Shared {
    fn actors(&self) -> MutexGuard<'_, Actors> {
        lock(&self.actors)
    }

    /// Takes an actor out of the map (unless another replaced it) and
    /// forgets the session's live channel if nobody listens.
    fn forget_actor(&self, mut actors: MutexGuard<'_, Actors>, id: &SessionId, tx: &mpsc::Sender<Command>) {
        if actors.get(id).is_some_and(|t| t.same_channel(tx)) {
            actors.remove(id);
            self.activity.remove(id);
        }
        drop(actors);
        let mut lives = lock(&self.lives);
        if lives.get(id).is_some_and(|l| l.listeners() == 0) {
            lives.remove(id);
        }
    }

    fn live(&self, id: &SessionId) -> Option<Arc<Live>> {
        lock(&self.lives).get(id).cloned()
    }

    fn stall(&self, id: &SessionId) {
        lock(&self.stalled).insert(id.clone());
    }

    /// The current catalog version, recorded in the store the first time a
    /// run uses it (before the run's first input, in the same writer queue).
    fn record_current_catalog(&self) -> Option<String> {
        let catalogs = &self.parts.catalogs;
        let version = catalogs.current().id?;
        if lock(&self.recorded).insert(version.clone()) {
            match catalogs.record(&version) {
                Some(recorded) => self.store.save_catalog(&version, recorded),
                None => tracing::warn!(%version, "a catalog version has nothing to record"),
            }
        }
        Some(version)
    }

    /// The session's actor, spawned if needed.
    fn actor(self: &Arc<Self>, id: &SessionId) -> mpsc::Sender<Command> {
        let mut actors = self.actors();
        if let Some(tx) = actors.get(id).filter(|tx| !tx.is_closed()) {
            return tx.clone();
        }
        let (tx, rx) = mpsc::channel(MAILBOX);
        actors.insert(id.clone(), tx.clone());
        tokio::spawn(Actor::new(self.clone(), id.clone(), tx.clone()).run(rx));
        tx
    }

    fn has_actor(&self, id: &SessionId) -> bool {
        self.actors().get(id).is_some_and(|tx| !tx.is_closed())
    }

    async fn send<T>(self: &Arc<Self>, id: &SessionId, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T> {
        let (reply, rx) = oneshot::channel();
        let mut command = make(reply);
        for _ in 0..4 {
            let tx = self.actor(id);
            match tx.send(command).await {
                Ok(()) => return rx.await.map_err(|_| Error::RunInterrupted),
                Err(mpsc::error::SendError(back)) => command = back,
            }
        }
        Err(Error::Storage(format!("session {id} could not be loaded")))
    }

    /// The session as stored (for sessions this process does not drive).
    async fn read(&self, id: &SessionId) -> Result<Option<Session>> {
        let Some(loaded) = self.store.load(id, LoadFrom::Snapshot).await? else {
            return Ok(None);
        };
        Ok(replay(id, loaded, &self.parts.catalogs, None)?.session)
    }
}

/// Takes over the sessions whose owner is gone and resumes their runs.
async fn recover(shared: &Arc<Shared>) -> Result<Vec<(SessionId, RunStop)>> {
    let orphans = shared.store.orphans().await?;
    let skip: HashSet<SessionId> = lock(&shared.stalled).clone();
    let mut probes = Vec::with_capacity(orphans.len());
    // Every run found is taken over and loaded first, then all go on: the
    // first ones' model and tool calls do not slow the loading of the rest.
    let (go, ready) = watch::channel(false);
    let resume = Resume {
        go: ready,
        slots: Arc::new(Semaphore::new(shared.settings.resume_concurrency.max(1))),
    };
    for id in orphans {
        if skip.contains(&id) || shared.has_actor(&id) {
            continue;
        }
        let (reply, rx) = oneshot::channel();
        let recover = Command::Recover {
            reply,
            resume: resume.clone(),
        };
        if shared.actor(&id).send(recover).await.is_ok() {
            probes.push((id, rx));
        }
    }
    let mut resumed = Vec::new();
    for (id, rx) in probes {
        if let Ok(Some(stop)) = rx.await {
            resumed.push((id, stop));
        }
    }
    go.send_replace(true);
    Ok(resumed)
}

/// Renews the lease, lets go of sessions other processes ask for, takes over
/// what dead processes left, and tells subscribers what other processes wrote.
async fn background(shared: Weak<Shared>, mut newest: i64) {
    let tick = Duration::from_millis(250);
    let mut since_beat = Duration::MAX;
    loop {
        tokio::time::sleep(tick).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        // Channels nobody listens to, of sessions no actor holds, go (what
        // is read is those channels, not every session in memory).
        let unheard: Vec<SessionId> = lock(&shared.lives)
            .iter()
            .filter(|(_, live)| live.listeners() == 0)
            .map(|(id, _)| id.clone())
            .collect();
        if !unheard.is_empty() {
            let gone: HashSet<SessionId> = {
                let actors = shared.actors();
                unheard.into_iter().filter(|id| !actors.contains_key(id)).collect()
            };
            if !gone.is_empty() {
                lock(&shared.lives).retain(|id, live| live.listeners() > 0 || !gone.contains(id));
            }
        }
        let watched: Vec<(SessionId, Arc<Live>)> = lock(&shared.lives)
            .iter()
            .map(|(id, live)| (id.clone(), live.clone()))
            .collect();
        if !watched.is_empty() {
            match shared.store.changes(newest).await {
                Ok((now, changed)) => {
                    newest = now;
                    for id in changed {
                        if let Some((_, live)) = watched.iter().find(|(w, _)| *w == id) {
                            if !shared.has_actor(&id) {
                                live.poke();
                            }
                        }
                    }
                }
                Err(error) => tracing::warn!(%error, "cannot read what other processes wrote"),
            }
        }
        if shared.settings.read_only {
            continue;
        }
        since_beat = since_beat.saturating_add(tick);
        if since_beat < shared.settings.lease / 3 {
            continue;
        }
        since_beat = Duration::ZERO;
        if let Err(error) = shared.store.heartbeat().await {
            tracing::warn!(%error, "cannot renew this process's lease");
            continue;
        }
        match shared.store.wanted().await {
            Ok(wanted) => {
                for id in wanted {
                    match shared.actors().get(&id).cloned() {
                        Some(tx) => {
                            let _ = tx.try_send(Command::Release);
                        }
                        // Owned, but nobody here holds it any more (its actor lost its state).
                        None => shared.store.disown(&id),
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "cannot read which sessions other processes want"),
        }
        if !shared.recovering.load(std::sync::atomic::Ordering::Relaxed) {
            continue;
        }
        match recover(&shared).await {
            Ok(resumed) if !resumed.is_empty() => {
                tracing::info!(
                    sessions = resumed.len(),
                    "took over unfinished runs of a process that is gone"
                );
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "cannot look for unfinished runs"),
        }
    }
}

/// The embedded engine, opened.
pub(crate) struct EmbeddedEngine {
    shared: Arc<Shared>,
    resumed: Mutex<Vec<(SessionId, RunStop)>>,
}

impl Drop for EmbeddedEngine {
    /// Idle sessions are let go at once (another runtime may want them); runs
    /// in flight go on, and the maintenance task ends with the last of them.
    fn drop(&mut self) {
        for tx in self.shared.actors().values() {
            let (reply, _) = oneshot::channel();
            let _ = tx.try_send(Command::Shutdown { reply });
        }
    }
}

/// Where a run another process drives will stop, watched through the store.
async fn remote_stop(shared: &Arc<Shared>, id: &SessionId) -> Result<Option<RunStop>> {
    let Some(session) = shared.read(id).await? else {
        return Ok(None);
    };
    let Some(run) = session.active_run().cloned() else {
        return Ok(None);
    };
    if session.waits_for_person() {
        return Ok(session.last_output().cloned().map(RunStop::ready));
    }
    let shared = shared.clone();
    let id = id.clone();
    Ok(Some(RunStop::later(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let Some(session) = shared.read(&id).await? else {
                return Err(Error::SessionNotFound(id));
            };
            let parked = session.waits_for_person();
            if session.active_run() != Some(&run) || parked {
                return session
                    .last_output()
                    .filter(|o| o.run_id == run)
                    .cloned()
                    .ok_or(Error::RunInterrupted);
            }
        }
    })))
}

impl Engine for EmbeddedEngine {
    fn start(&self, session: SessionId, start: StartRun, setup: RunSetup) -> BoxFuture<'_, Result<Started>> {
        Box::pin(async move {
            self.shared
                .send(&session, |reply| Command::Start {
                    start: Box::new(start),
                    setup: Box::new(setup),
                    reply,
                })
                .await?
        })
    }

    fn confirm(
        &self,
        session: SessionId,
        call_id: CallId,
        fingerprint: String,
        decision: Decision,
    ) -> BoxFuture<'_, Result<RunStop>> {
        Box::pin(async move {
            self.shared
                .send(&session, |reply| Command::Confirm {
                    call_id,
                    fingerprint,
                    decision: Box::new(decision),
                    reply,
                })
                .await?
        })
    }

    fn answer_question(
        &self,
        session: SessionId,
        call_id: CallId,
        question: u32,
        answer: concierge_core::ElicitationAnswer,
    ) -> BoxFuture<'_, Result<RunStop>> {
        Box::pin(async move {
            self.shared
                .send(&session, |reply| Command::Answer {
                    call_id,
                    question,
                    answer: Box::new(answer),
                    reply,
                })
                .await?
        })
    }

    fn end(&self, session: SessionId, reason: String) -> BoxFuture<'_, Result<Option<RunOutput>>> {
        Box::pin(async move {
            self.shared
                .send(&session, |reply| Command::End {
                    reason,
                    run_only: false,
                    reply,
                })
                .await?
        })
    }

    fn cancel_run(&self, session: SessionId, reason: String) -> BoxFuture<'_, Result<Option<RunOutput>>> {
        Box::pin(async move {
            self.shared
                .send(&session, |reply| Command::End {
                    reason,
                    run_only: true,
                    reply,
                })
                .await?
        })
    }

    /// The embedded engine takes no per-session options.
    fn open(&self, session: SessionId, open: OpenSession, _: EngineOptions) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            self.shared
                .send(&session, |reply| Command::Open {
                    open: Box::new(open),
                    reply,
                })
                .await?
        })
    }

    fn wait(&self, session: SessionId) -> BoxFuture<'_, Result<Option<RunStop>>> {
        Box::pin(async move {
            if self.shared.has_actor(&session) {
                if let Some(stop) = self.shared.send(&session, |reply| Command::Wait { reply }).await?? {
                    return Ok(Some(stop));
                }
            }
            remote_stop(&self.shared, &session).await
        })
    }

    fn session(&self, session: SessionId) -> BoxFuture<'_, Result<Option<Session>>> {
        Box::pin(async move {
            if self.shared.has_actor(&session) {
                return self.shared.send(&session, |reply| Command::Inspect { reply }).await?;
            }
            self.shared.read(&session).await
        })
    }

    fn facts(&self, session: SessionId) -> BoxFuture<'_, Result<Option<SessionFacts>>> {
        Box::pin(async move {
            if self.shared.has_actor(&session) {
                return self.shared.send(&session, |reply| Command::Facts { reply }).await?;
            }
            Ok(self.shared.read(&session).await?.as_ref().map(SessionFacts::of))
        })
    }

    fn erase(&self, session: SessionId) -> BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            if self.session(session.clone()).await?.is_none() {
                return Ok(false);
            }
            self.shared.send(&session, |reply| Command::Erase { reply }).await??;
            Ok(true)
        })
    }

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionSummary>>> {
        Box::pin(async move {
            let mut listed = self.shared.store.sessions().await?;
            self.shared.activity.overlay(&mut listed);
            Ok(listed)
        })
    }

    fn sessions_of(&self, query: SessionQuery) -> BoxFuture<'_, Result<Vec<SessionSummary>>> {
        Box::pin(async move {
            let mut listed = self.shared.store.sessions_for(query).await?;
            self.shared.activity.overlay(&mut listed);
            listed.sort_by(newest_first);
            Ok(listed)
        })
    }

    fn session_page(&self, query: SessionQuery) -> BoxFuture<'_, Result<SessionPage>> {
        Box::pin(async move {
            match self
                .shared
                .store
                .session_page(query.clone(), self.shared.activity.clone())
            {
                Some(page) => page.await,
                None => query.page_of(self.sessions_of(query.clone()).await?),
            }
        })
    }

    fn subscribe(&self, session: SessionId, after: EventId) -> BoxStream<'static, Result<Event>> {
        // Subscribed under the map's lock, so the channel cannot be dropped as unheard in between.
        let (live, kept, rx) = {
            let mut lives = lock(&self.shared.lives);
            let live = lives.entry(session.clone()).or_default().clone();
            let (kept, rx) = live.subscribe(after);
            (live, kept, rx)
        };
        let state = Subscription::new(self.shared.clone(), session, live, after, kept, rx);
        futures::stream::unfold(state, Subscription::next).boxed()
    }

    fn recover(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            if self.shared.settings.read_only {
                return Ok(());
            }
            let resumed = recover(&self.shared).await?;
            if !resumed.is_empty() {
                tracing::info!(sessions = resumed.len(), "resuming unfinished runs");
            }
            lock(&self.resumed).extend(resumed);
            self.shared.recovering.store(true, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        })
    }

    fn take_resumed(&self) -> Vec<(SessionId, RunStop)> {
        std::mem::take(&mut *lock(&self.resumed))
    }

    fn remember_toolset(&self, name: &str, tools: String) {
        self.shared.store.save_toolset(name, tools);
    }

    fn remembered_toolsets(&self) -> Result<Vec<(String, String)>> {
        self.shared.store.toolsets()
    }

    fn announce(&self, event: Event) {
        if let Some(live) = self.shared.live(&event.session) {
            live.publish(event);
        }
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let senders: Vec<mpsc::Sender<Command>> = self.shared.actors().values().cloned().collect();
            let mut replies = Vec::new();
            for tx in senders {
                let (reply, rx) = oneshot::channel();
                if tx.send(Command::Shutdown { reply }).await.is_ok() {
                    replies.push(rx);
                }
            }
            for rx in replies {
                let _ = rx.await;
            }
            self.shared.store.flush().await;
            // Runs still in flight keep this process registered: if it exits
            // now, the next process sees it gone and takes them over.
            if self.shared.actors().is_empty() {
                self.shared.store.close().await;
            }
        })
    }

    fn stats(&self) -> JournalStats {
        self.shared.store.stats()
    }

    fn sessions_in_memory(&self) -> usize {
        self.shared.actors().len()
    }
}

/// The stores as building blocks, for the engine's benchmarks only.
#[doc(hidden)]
pub mod bench {
    pub use super::memory::MemoryStore;
    pub use super::store::{Appended, Claim, Cursor, Entry, LoadFrom, Loaded, Release, Store};

    /// A SQLite store for a benchmark (a writer, with `window` group commit).
    #[cfg(feature = "sqlite")]
    pub fn sqlite(path: &std::path::Path, window: std::time::Duration) -> crate::error::Result<super::SqliteStore> {
        super::SqliteStore::open(
            path,
            super::sqlite::Options {
                window,
                lease: std::time::Duration::from_secs(10),
                label: "bench".into(),
                read_only: false,
            },
        )
    }
}
