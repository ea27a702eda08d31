//! Where the embedded engine keeps sessions: the [`Store`] both backends
//! (SQLite, memory) implement. Internal to the engine.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use concierge_core::{AgentId, Event, Input, Session, SessionId, Timestamp};
use futures::future::BoxFuture;

use super::activity::Activities;
use crate::engine::{JournalStats, SessionPage, SessionQuery, SessionSummary};
use crate::error::Result;

/// Where a session's entries end in a store; the engine keeps it and hands
/// it back with the next append (a store needs no per-session lookups).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The session's number in the store.
    pub session_no: i64,
    /// The position of its latest entry (0: none).
    pub head: i64,
}

/// One accepted input, as the engine journals it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The session the input belongs to.
    pub session: SessionId,
    /// The input's position in the session (from 0).
    pub index: u64,
    /// The accepted input itself.
    pub input: Input,
    /// The session's agent, when it changed (or the session is new).
    pub agent: Option<AgentId>,
    /// The session's tenant, on its first entry.
    pub tenant: Option<String>,
    /// The first entry since the session was claimed: the store records where
    /// the chain ends and that the session has work under way.
    pub first_since_claim: bool,
    /// A snapshot of the session after this input.
    pub snapshot: Option<Session>,
    /// With a snapshot: compact the journal. These are the events not yet
    /// archived, up to the snapshot's; the store archives them and deletes
    /// the session's entries before the snapshot, in the same transaction.
    pub compact: Option<Vec<Event>>,
}

#[cfg(test)]
impl Entry {
    /// A tick at `index` (time `index + 1`), for the stores' tests.
    pub(crate) fn tick(session: &str, index: u64, first_since_claim: bool) -> Self {
        Self {
            session: session.into(),
            index,
            input: Input::Tick {
                at: concierge_core::Timestamp(index + 1),
            },
            agent: None,
            tenant: None,
            first_since_claim,
            snapshot: None,
            compact: None,
        }
    }
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
#[derive(Debug, Default)]
pub struct Loaded {
    /// The snapshot and the index of the last input it includes.
    pub snapshot: Option<(u64, Session)>,
    /// The inputs after the snapshot, with their indexes.
    pub inputs: Vec<(u64, Input)>,
    /// Where the session's entries end.
    pub cursor: Cursor,
    /// The size of the snapshot, for the snapshot policy.
    pub snapshot_bytes: u64,
    /// The recorded catalog versions the inputs and snapshot refer to.
    pub catalogs: HashMap<String, String>,
    /// The seq of the last event archived when the journal was compacted (0: never compacted).
    pub archived_seq: u64,
    /// The archived events, in order (read for [`LoadFrom::Start`] only):
    /// once compacted, the events before the snapshot come from here.
    pub archived: Vec<Event>,
}

/// How much of a session to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadFrom {
    /// From the latest snapshot (enough to rebuild the state).
    Snapshot,
    /// From the first input (to rebuild every event); for a compacted
    /// session, from the snapshot, with the archived events.
    Start,
}

/// Who drives a session now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// This process: the session's number in the store.
    Owned {
        /// The session's number.
        session_no: i64,
    },
    /// Another live process, described for people ("process 1234 (concierge serve)").
    Busy(String),
}

/// A session leaving this process.
#[derive(Clone, Debug)]
pub struct Release {
    /// The position after the session's last journal entry.
    pub cursor: Cursor,
    /// The index of its last input.
    pub index: u64,
    /// Whether it has a run in flight that another process should resume.
    pub unfinished: bool,
    /// The state, for stores that keep it (memory).
    pub state: Option<Session>,
    /// When the session last changed (its last input was accepted): what
    /// the session list shows, not when it left memory.
    pub changed_at: Timestamp,
}

/// A store of sessions for the embedded engine.
pub trait Store: Send + Sync + 'static {
    /// Makes this process the session's owner (creating the session if it is
    /// new); `Busy` while another live process owns it (which is then asked
    /// to let it go once idle).
    fn claim(&self, session: &SessionId, agent: &AgentId) -> BoxFuture<'static, Result<Claim>>;
    /// Writes an entry after `cursor`; resolves once it is durable. Fails if
    /// this process no longer owns the session.
    fn append(&self, entry: Entry, cursor: Cursor) -> BoxFuture<'static, Result<Appended>>;
    /// Reads a session back, `None` if it never existed.
    fn load(&self, session: &SessionId, from: LoadFrom) -> BoxFuture<'static, Result<Option<Loaded>>>;
    /// Lets a session go (it is no longer owned by this process).
    fn release(&self, release: Release);
    /// Gives up a session this process owns without touching where its chain
    /// ends (for a session whose state this process lost: the next owner
    /// follows the chain from what is recorded).
    fn disown(&self, session: &SessionId);
    /// Deletes a session and everything stored of it (inputs, snapshots,
    /// archived events, its head), for good.
    fn erase(&self, session: &SessionId) -> BoxFuture<'static, Result<()>>;
    /// Sessions with a run under way whose owner is gone (or that no process
    /// could run yet): the ones this process may take over.
    fn orphans(&self) -> BoxFuture<'static, Result<Vec<SessionId>>>;
    /// Sessions this process owns that another process asked for.
    fn wanted(&self) -> BoxFuture<'static, Result<Vec<SessionId>>>;
    /// Renews this process's lease.
    fn heartbeat(&self) -> BoxFuture<'static, Result<()>>;
    /// Sessions written to after log position `after`, and the newest
    /// position (so subscribers see what other processes write).
    fn changes(&self, after: i64) -> BoxFuture<'static, Result<(i64, Vec<SessionId>)>>;
    /// Every session.
    fn sessions(&self) -> BoxFuture<'static, Result<Vec<SessionSummary>>>;
    /// Every session `query` holds, its cursor and limit aside (every one
    /// read and filtered, unless the store has an index for it).
    fn sessions_for(&self, query: SessionQuery) -> BoxFuture<'static, Result<Vec<SessionSummary>>> {
        let all = self.sessions();
        Box::pin(async move {
            let mut all = all.await?;
            all.retain(|s| query.holds(s));
            Ok(all)
        })
    }
    /// A page of `query`'s sessions read through an index in the list's
    /// order, with the sessions this process holds (`held`) in their place;
    /// `None` if the store has no such index for `query` (the engine then
    /// lists every one).
    fn session_page(
        &self,
        _query: SessionQuery,
        _held: Arc<Activities>,
    ) -> Option<BoxFuture<'static, Result<SessionPage>>> {
        None
    }
    /// Records a catalog version (JSON of its discovered toolsets).
    fn save_catalog(&self, version: &str, recorded: String);
    /// Remembers a toolset discovered at run time (JSON).
    fn save_toolset(&self, name: &str, tools: String);
    /// The toolsets saved by [`Store::save_toolset`], as `(name, JSON)`.
    fn toolsets(&self) -> Result<Vec<(String, String)>>;
    /// Counters.
    fn stats(&self) -> JournalStats;
    /// Whether the store keeps snapshots ([`Entry::snapshot`]): the memory
    /// store does not, so the engine does not copy a session for it (a copy
    /// of a long conversation costs more than a turn).
    fn keeps_snapshots(&self) -> bool {
        true
    }
    /// Whether the store compacts journals ([`Entry::compact`]); the memory
    /// store keeps every input (nothing outlives the process anyway).
    fn compacts(&self) -> bool {
        false
    }
    /// Resolves once everything sent before it is written.
    fn flush(&self) -> BoxFuture<'static, ()>;
    /// This process stops writing: its registration goes (sessions still
    /// owned are taken over by the next process that looks).
    fn close(&self) -> BoxFuture<'static, ()>;
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
