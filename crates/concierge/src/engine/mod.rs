//! Engines drive sessions: they journal inputs, perform effects and resume
//! unfinished runs. The embedded engine runs in this process over a journal:
//! SQLite (durable, the default) or memory (for tests and benchmarks).

mod driver;
mod memory;
mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use concierge_core::{AgentId, Event, Input, RunId, Session, SessionId, Timestamp};
use futures::future::BoxFuture;
use serde::Serialize;

use crate::error::Result;

pub(crate) use driver::{Driver, Settings, Shared, Stop, now};
pub(crate) use memory::MemoryJournal;
pub(crate) use sqlite::SqliteJournal;

/// Which engine a runtime uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The embedded engine on a SQLite database (WAL mode, one fsync per group commit).
    Sqlite(PathBuf),
    /// The embedded engine in memory: nothing survives the process.
    Memory,
}

impl Engine {
    /// The embedded engine on the SQLite database at `path` (created if missing).
    pub fn sqlite(path: impl Into<PathBuf>) -> Self {
        Engine::Sqlite(path.into())
    }
}

impl Default for Engine {
    /// `./concierge.db`, the same default as the CLI.
    fn default() -> Self {
        Engine::Sqlite(PathBuf::from("concierge.db"))
    }
}

/// A session as listed by [`Runtime::sessions`](crate::Runtime::sessions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// The session.
    pub id: SessionId,
    /// Its current agent.
    pub agent: AgentId,
    /// The run in progress, if any.
    pub active_run: Option<RunId>,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// What a journal has written so far (for benchmarks and notes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JournalStats {
    /// Accepted inputs written.
    pub entries: u64,
    /// Transactions committed (each is one fsync of the WAL).
    pub commits: u64,
    /// Payload bytes written (inputs, events, snapshots, session rows).
    pub payload_bytes: u64,
    /// Snapshots written.
    pub snapshots: u64,
}

#[derive(Default)]
pub(crate) struct StatsCell {
    entries: AtomicU64,
    commits: AtomicU64,
    payload_bytes: AtomicU64,
    snapshots: AtomicU64,
}

impl StatsCell {
    pub(crate) fn record(&self, entries: u64, commits: u64, bytes: u64, snapshots: u64) {
        self.entries.fetch_add(entries, Ordering::Relaxed);
        self.commits.fetch_add(commits, Ordering::Relaxed);
        self.payload_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.snapshots.fetch_add(snapshots, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> JournalStats {
        JournalStats {
            entries: self.entries.load(Ordering::Relaxed),
            commits: self.commits.load(Ordering::Relaxed),
            payload_bytes: self.payload_bytes.load(Ordering::Relaxed),
            snapshots: self.snapshots.load(Ordering::Relaxed),
        }
    }
}

/// One accepted input and what it produced.
pub(crate) struct Entry {
    pub session: SessionId,
    pub index: u64,
    pub input: Input,
    pub events: Vec<Event>,
    /// The session row, when the agent or the active run changed.
    pub status: Option<SessionSummary>,
    /// A snapshot of the session after this input.
    pub snapshot: Option<Session>,
}

/// A session as stored: the latest snapshot and the inputs after it.
pub(crate) struct Loaded {
    pub snapshot: Option<(u64, Session)>,
    pub inputs: Vec<(u64, Input)>,
}

/// Where an embedded engine keeps sessions.
pub(crate) trait Journal: Send + Sync + 'static {
    /// Writes an entry; resolves once it is durable.
    fn append(&self, entry: Entry) -> BoxFuture<'static, Result<()>>;
    /// Reads a session back, `None` if it never existed.
    fn load(&self, session: &SessionId) -> BoxFuture<'static, Result<Option<Loaded>>>;
    /// Durable events of a session with `seq >= from_seq`, in order.
    fn events(&self, session: &SessionId, from_seq: u64) -> BoxFuture<'static, Result<Vec<Event>>>;
    /// Sessions with a run in progress.
    fn open_sessions(&self) -> Result<Vec<SessionId>>;
    /// Every session.
    fn sessions(&self) -> BoxFuture<'static, Result<Vec<SessionSummary>>>;
    /// Keeps an idle session that leaves memory (the memory journal holds it; a
    /// durable journal has it already).
    fn park(&self, session: Session);
    /// Counters.
    fn stats(&self) -> JournalStats;
}

pub(crate) type SharedJournal = Arc<dyn Journal>;
