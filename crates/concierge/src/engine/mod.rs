//! Engines drive sessions: they journal inputs, perform effects and resume
//! unfinished runs. The embedded engine runs in this process over a journal:
//! SQLite (durable, the default) or memory (for tests and benchmarks).

mod codec;
mod driver;
mod memory;
mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use concierge_core::{AgentId, Catalog, Event, Input, Session, SessionId, Timestamp};
use futures::future::BoxFuture;
use serde::Serialize;

use crate::error::Result;

pub(crate) use driver::{Driver, Settings, Stop, now};
pub use memory::MemoryJournal;
pub use sqlite::SqliteJournal;

/// Which engine a runtime uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The embedded engine on a SQLite database (WAL mode, one fsync per group commit).
    Sqlite(PathBuf),
    /// The embedded engine in memory: nothing survives the process.
    Memory,
    /// No engine: the runtime describes agents and tools (introspection)
    /// but cannot run them; running returns [`Error::EngineNotConfigured`](crate::Error::EngineNotConfigured).
    None,
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
    /// Whether an engine has it in memory (or had, when it stopped).
    pub live: bool,
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
    /// Payload bytes written (inputs and snapshots).
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

/// Where a session's entries end in a journal; the engine keeps it and hands
/// it back with the next append (a journal needs no per-session lookups).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The session's number in the journal (0: not stored yet).
    pub session_no: i64,
    /// The position of its latest entry (0: none).
    pub head: i64,
}

/// One accepted input, as an engine journals it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The session.
    pub session: SessionId,
    /// The input's position in the session (from 0).
    pub index: u64,
    /// The input.
    pub input: Input,
    /// The session's agent, when it changed (or the session is new).
    pub agent: Option<AgentId>,
    /// Whether to record this entry as the session's head and mark the
    /// session live: done for the first entry after a load. The head is
    /// written again when the session leaves memory ([`Journal::park`]); in
    /// between, the chain is followed forward from the last recorded head.
    pub locate: bool,
    /// A snapshot of the session after this input.
    pub snapshot: Option<Session>,
}

/// What an append wrote.
#[derive(Clone, Copy, Debug)]
pub struct Appended {
    /// Where the session's entries end now.
    pub cursor: Cursor,
    /// Bytes of the stored input.
    pub input_bytes: u64,
    /// Bytes of the stored snapshot (0 if none was written).
    pub snapshot_bytes: u64,
}

/// A session as stored: the latest snapshot and the inputs after it.
#[derive(Debug)]
pub struct Loaded {
    /// The snapshot and the index of the last input it includes.
    pub snapshot: Option<(u64, Session)>,
    /// The inputs after the snapshot, with their indexes.
    pub inputs: Vec<(u64, Input)>,
    /// Where the session's entries end.
    pub cursor: Cursor,
    /// The size of the snapshot, for the snapshot policy.
    pub snapshot_bytes: u64,
}

/// Where the embedded engine keeps sessions: [`SqliteJournal`] or
/// [`MemoryJournal`]. Public as the engine's building blocks (benchmarks,
/// tools); an engine appends one session's entries one at a time.
pub trait Journal: Send + Sync + 'static {
    /// Writes an entry after `cursor`; resolves once it is durable.
    fn append(&self, entry: Entry, cursor: Cursor) -> BoxFuture<'static, Result<Appended>>;
    /// Reads a session back (from its snapshot, or from its first input when
    /// `full`), `None` if it never existed.
    fn load(&self, session: &SessionId, full: bool) -> BoxFuture<'static, Result<Option<Loaded>>>;
    /// Durable events of a session with `seq >= from_seq`, in order.
    fn events(
        &self,
        session: &SessionId,
        from_seq: u64,
        catalog: Arc<Catalog>,
    ) -> BoxFuture<'static, Result<Vec<Event>>>;
    /// Sessions that were in memory when the engine stopped (they may have
    /// runs to resume).
    fn open_sessions(&self) -> Result<Vec<SessionId>>;
    /// Every session.
    fn sessions(&self) -> BoxFuture<'static, Result<Vec<SessionSummary>>>;
    /// An idle session leaves memory: the memory journal keeps it; a durable
    /// journal records where its chain ends.
    fn park(&self, session: Session, cursor: Cursor, index: u64);
    /// Counters.
    fn stats(&self) -> JournalStats;
    /// Resolves once everything sent before it is written.
    fn flush(&self) -> BoxFuture<'static, ()>;
    /// Remembers a toolset discovered at run time (JSON), so that after a
    /// restart sessions replay against the same tools before it is listed again.
    fn save_toolset(&self, name: &str, tools: String);
    /// The remembered toolsets.
    fn toolsets(&self) -> Result<Vec<(String, String)>>;
}

/// Rebuilds events by replaying inputs from `start` (a snapshot or nothing).
pub(crate) fn replay_events(
    session: &SessionId,
    start: Option<Session>,
    inputs: Vec<(u64, Input)>,
    from_seq: u64,
    catalog: &Catalog,
) -> Vec<Event> {
    let mut state = start;
    let mut events = Vec::new();
    for (_, input) in inputs {
        let current = match state.as_mut() {
            Some(s) => s,
            None => {
                let agent = match &input {
                    Input::StartRun(start) => start.agent.clone().unwrap_or_else(|| AgentId::new("unknown")),
                    _ => AgentId::new("unknown"),
                };
                state.insert(Session::new(session.clone(), agent))
            }
        };
        if let Ok(step) = current.step(input, catalog) {
            events.extend(step.events.into_iter().filter(|event| event.seq >= from_seq));
        }
    }
    events
}

pub(crate) type SharedJournal = Arc<dyn Journal>;
