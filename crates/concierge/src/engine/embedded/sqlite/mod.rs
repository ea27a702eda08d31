//! The SQLite store.
//!
//! WAL mode with `synchronous=FULL`: a commit is on disk when it returns. One
//! writer thread commits whatever is queued in one transaction (group
//! commit), so concurrent sessions share an fsync while each input is durable
//! before its effects run.
//!
//! The layout keeps the pages a commit touches few, whatever the number of
//! sessions: inputs go to an append-only `log` (rowid order, so a batch fills
//! the same tail pages), compressed, each entry pointing to its session's
//! previous one. A session's `heads` row says where its chain ends, whether
//! it has work under way (`live`), and which process owns it; the head is
//! written when the session is first written after a claim and when it is
//! released, not on every entry. Loading a live session follows its chain
//! forward over the log tail. Events are not stored: they are a deterministic
//! function of the inputs and are rebuilt by replay. Pages are 1 KiB.
//!
//! Compaction: when an entry carries a snapshot and events to archive
//! ([`Entry::compact`]), the same transaction stores those events in
//! `archive` (one compressed row per compaction), deletes the session's
//! entries before the snapshot's (walking its chain back, so the work is
//! the entries since the last compaction) and moves its recorded head up to
//! the snapshot. The session's state comes from the snapshot as before; its
//! past events come from the archive, then from replaying the entries left.
//!
//! Several processes may open one database. Each writer registers in
//! `owners` and renews a heartbeat; a session is appended to only by its
//! owner (checked in the write transaction, so a log never forks), taken over
//! only when its owner is gone, and released when idle.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use concierge_core::{AgentId, Event, Input, Session, SessionId, Timestamp};
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

mod listing;
mod read;
mod schema;

use super::activity::Activities;
use super::codec::{decode, encode};
use super::owner::Process;
use super::store::{Appended, Claim, Cursor, Entry, LoadFrom, Loaded, Release, StatsCell, Store};
use crate::engine::{JournalStats, SessionPage, SessionQuery, SessionSummary, now};
use crate::error::{Error, Result};
use read::{follow, load, lock_reader};
use schema::{SCHEMA, check_ours, connect, migrate, tune};

/// Most entries one transaction takes.
const MAX_BATCH: usize = 4096;
/// How many times the writer looks for entries during a group-commit window.
const WINDOW_STEPS: u32 = 4;

struct Row {
    cursor: Cursor,
    index: i64,
    input: Vec<u8>,
    agent: Option<String>,
    tenant: Option<String>,
    first: bool,
    at: i64,
    snapshot: Option<Vec<u8>>,
    /// Events to archive with the snapshot, and the seq of the snapshot's last event.
    compact: Option<(Vec<u8>, i64)>,
    reply: oneshot::Sender<Result<Appended>>,
}

/// What the writer thread is asked to do.
enum Op {
    /// Append an entry (durably; the caller waits).
    Append(Row),
    /// Take a session for this process.
    Claim {
        session: String,
        agent: String,
        reply: oneshot::Sender<Result<Claim>>,
    },
    /// Let a session go.
    Release {
        no: i64,
        head: i64,
        index: i64,
        live: bool,
        at: i64,
    },
    /// Give a session up, leaving its chain as recorded.
    Disown { session: String },
    /// Delete a session and everything stored of it.
    Erase {
        session: String,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Renew this process's lease.
    Beat(oneshot::Sender<Result<()>>),
    /// Answer once everything before it is committed.
    Flush(oneshot::Sender<()>),
    /// Remember a discovered toolset.
    Toolset { name: String, tools: String },
    /// Record a catalog version.
    Catalog { version: String, toolsets: String },
    /// Unregister this process.
    Close(oneshot::Sender<()>),
}

/// Settings of a SQLite store.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// The group-commit window.
    pub window: Duration,
    /// How long a heartbeat keeps a process alive for processes that cannot
    /// see it through `/proc`.
    pub lease: Duration,
    /// What this process is, for people.
    pub label: String,
    /// Whether this process only reads (it registers nothing and owns nothing).
    pub read_only: bool,
}

/// A store in a SQLite database.
pub struct SqliteStore {
    writer: Mutex<mpsc::Sender<Op>>,
    reader: Arc<Mutex<Connection>>,
    stats: Arc<StatsCell>,
    /// True heads found by the last orphan scan: session number → (recorded head then, true head).
    recovered: Arc<Mutex<HashMap<i64, (i64, i64)>>>,
    /// This process's number in `owners` (0 when read-only).
    me: i64,
    here: Arc<Process>,
    lease: Duration,
}

fn millis() -> i64 {
    i64::try_from(now().0).unwrap_or(i64::MAX)
}

impl SqliteStore {
    /// Opens (or creates) the database at `path`; a writer registers this
    /// process and starts the writer thread (group commit over `window`).
    pub(crate) fn open(path: &Path, options: Options) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Storage(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = connect(path)?;
        check_ours(&conn, path)?;
        tune(&conn)?;
        conn.execute_batch(SCHEMA)?;
        migrate(&conn)?;
        let here = Arc::new(Process::current(&options.label));
        let me = if options.read_only {
            0
        } else {
            conn.execute(
                "INSERT INTO owners (pid, space, started, label, beat) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![here.pid, here.space, here.started as i64, here.label, millis()],
            )?;
            conn.last_insert_rowid()
        };
        let reader = connect(path)?;
        let (tx, rx) = mpsc::channel::<Op>();
        let stats = Arc::new(StatsCell::default());
        let writer = Writer {
            conn,
            stats: stats.clone(),
            window: options.window,
            me,
            here: here.clone(),
            lease: options.lease,
        };
        thread::Builder::new()
            .name("concierge-journal".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| Error::Storage(format!("cannot start the journal writer: {e}")))?;
        Ok(Self {
            writer: Mutex::new(tx),
            reader: Arc::new(Mutex::new(reader)),
            stats,
            recovered: Arc::default(),
            me,
            here,
            lease: options.lease,
        })
    }

    fn send(&self, op: Op) -> Result<()> {
        self.writer
            .lock()
            .map_err(|_| Error::Storage("the journal writer is poisoned".into()))?
            .send(op)
            .map_err(|_| Error::Storage("the journal writer has stopped".into()))
    }

    fn ask<T: Send + 'static>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T>>) -> Op,
    ) -> BoxFuture<'static, Result<T>> {
        let (reply, done) = oneshot::channel();
        let sent = self.send(make(reply));
        Box::pin(async move {
            sent?;
            done.await
                .map_err(|_| Error::Storage("the journal writer has stopped".into()))?
        })
    }

    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T>> {
        let reader = self.reader.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || f(&*lock_reader(&reader)?))
                .await
                .map_err(|e| Error::Storage(format!("journal read task failed: {e}")))?
        })
    }
}

/// The sessions with a run in progress that another owner (or none) holds:
/// read through the `live_heads` index, so idle sessions are never read.
const UNFINISHED: &str = "SELECT h.no, h.head, h.owner, s.id FROM heads h JOIN sessions s ON s.no = h.no
     WHERE h.live = 1 AND (h.owner IS NULL OR h.owner != ?1)";

/// The sessions this process owns that another asks for: read through the
/// `owned_heads` index, as [`FORGET_OWNER`] is.
const WANTED: &str = "SELECT s.id FROM heads h JOIN sessions s ON s.no = h.no WHERE h.owner = ?1 AND h.want = 1";

/// Forgets a process that is gone if it owns no session any more.
const FORGET_OWNER: &str = "DELETE FROM owners WHERE owner = ?1 AND NOT EXISTS (SELECT 1 FROM heads WHERE owner = ?1)";

/// Which recorded processes are alive, by owner number.
fn living(conn: &Connection, here: &Process, lease: Duration) -> rusqlite::Result<HashMap<i64, (bool, String)>> {
    let now = millis();
    let mut stmt = conn.prepare_cached("SELECT owner, pid, space, started, label, beat FROM owners")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            Process {
                pid: r.get::<_, u32>(1)?,
                space: r.get(2)?,
                started: r.get::<_, i64>(3)? as u64,
                label: r.get(4)?,
            },
            r.get::<_, i64>(5)?,
        ))
    })?;
    let mut out = HashMap::new();
    for row in rows {
        let (owner, process, beat) = row?;
        let age = Duration::from_millis(u64::try_from(now - beat).unwrap_or(0));
        out.insert(owner, (process.is_alive(here, age, lease), process.describe()));
    }
    Ok(out)
}

struct Writer {
    conn: Connection,
    stats: Arc<StatsCell>,
    window: Duration,
    me: i64,
    here: Arc<Process>,
    lease: Duration,
}

impl Writer {
    fn run(mut self, rx: mpsc::Receiver<Op>) {
        let mut previous = 1;
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(_) => break,
                }
            }
            // Under load (the last commit had company), gather entries for a
            // short window: fewer, larger commits write fewer pages and fsyncs.
            // A lone writer never waits. The writer sleeps through the window
            // in a few steps rather than waiting on the channel, where every
            // entry sent would wake it (a system call for the sender and a
            // thread switch for each).
            if previous > 1 && !self.window.is_zero() {
                let deadline = std::time::Instant::now() + self.window;
                loop {
                    while batch.len() < MAX_BATCH {
                        match rx.try_recv() {
                            Ok(op) => batch.push(op),
                            Err(_) => break,
                        }
                    }
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    // As many as the last commit carried have come (at most
                    // MAX_BATCH, so a full batch stops too): the writers it
                    // answered are back, so waiting longer only delays them.
                    if batch.len() >= previous || left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(self.window / WINDOW_STEPS));
                }
            }
            previous = batch.len();
            let closing = batch.iter().any(|op| matches!(op, Op::Close(_)));
            self.commit(batch);
            if closing {
                return;
            }
        }
    }

    /// Writes a batch in one transaction and answers each op.
    fn commit(&mut self, batch: Vec<Op>) {
        let result = self.write(&batch);
        let (answers, appended) = match result {
            Ok(answers) => {
                let (mut count, mut bytes, mut snapshots) = (0, 0, 0);
                for appended in answers.iter().filter_map(Answer::appended) {
                    count += 1;
                    bytes += appended.input_bytes + appended.snapshot_bytes;
                    snapshots += u64::from(appended.snapshot_bytes > 0);
                }
                (Some(answers), (count, bytes, snapshots))
            }
            Err(error) => {
                tracing::error!(%error, "journal write failed");
                (None, (0, 0, 0))
            }
        };
        self.stats.record(appended.0, 1, appended.1, appended.2);
        let mut answers = answers.map(Vec::into_iter);
        for op in batch {
            let answer = answers.as_mut().and_then(Iterator::next);
            match (op, answer) {
                (Op::Append(row), Some(Answer::Appended(result))) => {
                    let _ = row.reply.send(result);
                }
                (Op::Claim { reply, .. }, Some(Answer::Claimed(result))) => {
                    let _ = reply.send(result);
                }
                (Op::Beat(reply), _) => {
                    let _ = reply.send(Ok(()));
                }
                (Op::Flush(reply) | Op::Close(reply), _) => {
                    let _ = reply.send(());
                }
                (Op::Append(row), _) => {
                    let _ = row
                        .reply
                        .send(Err(Error::Storage("the journal write failed; see the log".into())));
                }
                (Op::Claim { reply, .. }, _) => {
                    let _ = reply.send(Err(Error::Storage("the journal write failed; see the log".into())));
                }
                (Op::Erase { reply, .. }, Some(_)) => {
                    let _ = reply.send(Ok(()));
                }
                (Op::Erase { reply, .. }, None) => {
                    let _ = reply.send(Err(Error::Storage("the journal write failed; see the log".into())));
                }
                (Op::Release { .. } | Op::Disown { .. } | Op::Toolset { .. } | Op::Catalog { .. }, _) => {}
            }
        }
    }

    fn write(&mut self, batch: &[Op]) -> rusqlite::Result<Vec<Answer>> {
        let me = self.me;
        // IMMEDIATE: take the write lock first (waiting on another process's
        // commit), so reads in the transaction never go stale.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // Who is alive matters only to claims and to the heartbeat's
        // cleanup; read under the write lock, so no process registers and
        // claims in between.
        let needs_owners = batch.iter().any(|op| matches!(op, Op::Claim { .. } | Op::Beat(_)));
        let living = if needs_owners {
            living(&tx, &self.here, self.lease)?
        } else {
            HashMap::new()
        };
        let living = &living;
        let mut answers = Vec::with_capacity(batch.len());
        {
            let mut owner_of = tx.prepare_cached("SELECT owner FROM heads WHERE no = ?1")?;
            let mut agent = tx.prepare_cached("UPDATE sessions SET agent = ?2 WHERE no = ?1")?;
            let mut tenant = tx.prepare_cached("UPDATE sessions SET tenant = ?2 WHERE no = ?1")?;
            let mut log = tx.prepare_cached("INSERT INTO log (no, idx, prev, input) VALUES (?1, ?2, ?3, ?4)")?;
            let mut locate = tx.prepare_cached("UPDATE heads SET head = ?2, idx = ?3, live = 1 WHERE no = ?1")?;
            // When it changed, and its tenant and agent if this input names
            // them, in one move of its entry in the list's index.
            let mut changed = tx.prepare_cached(
                "UPDATE sessions SET at = ?2, tenant = coalesce(?3, tenant), agent = coalesce(?4, agent) WHERE no = ?1",
            )?;
            let mut snapshot = tx.prepare_cached(
                "INSERT INTO snapshots (no, idx, pos, state) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(no) DO UPDATE SET idx = excluded.idx, pos = excluded.pos, state = excluded.state",
            )?;
            for op in batch {
                match op {
                    Op::Append(row) => {
                        let no = row.cursor.session_no;
                        let owner: Option<Option<i64>> = owner_of.query_row([no], |r| r.get(0)).optional()?;
                        if owner != Some(Some(me)) {
                            answers.push(Answer::Appended(Err(Error::Storage(
                                "this process no longer owns the session (another took it over); it is reloaded".into(),
                            ))));
                            continue;
                        }
                        if !row.first {
                            if let Some(name) = &row.agent {
                                agent.execute(params![no, name])?;
                            }
                            if let Some(name) = &row.tenant {
                                tenant.execute(params![no, name])?;
                            }
                        }
                        log.execute(params![no, row.index, row.cursor.head, row.input])?;
                        let pos = tx.last_insert_rowid();
                        if row.first {
                            locate.execute(params![no, pos, row.index])?;
                            changed.execute(params![no, row.at, row.tenant, row.agent])?;
                        }
                        if let Some(state) = &row.snapshot {
                            snapshot.execute(params![no, row.index, pos, state])?;
                            if let Some((events, last)) = &row.compact {
                                compact(&tx, no, row.cursor.head, pos, row.index, events, *last)?;
                            }
                        }
                        answers.push(Answer::Appended(Ok(Appended {
                            cursor: Cursor {
                                session_no: no,
                                head: pos,
                            },
                            input_bytes: row.input.len() as u64,
                            snapshot_bytes: row.snapshot.as_ref().map_or(0, |s| s.len() as u64),
                        })));
                    }
                    Op::Claim { session, agent, .. } => {
                        answers.push(Answer::Claimed(Ok(claim(&tx, me, session, agent, living)?)));
                    }
                    Op::Release {
                        no,
                        head,
                        index,
                        live,
                        at,
                    } => {
                        let released = tx
                            .prepare_cached(
                                "UPDATE heads SET head = ?2, idx = ?3, live = ?4, owner = NULL, want = 0
                                 WHERE no = ?1 AND owner = ?5",
                            )?
                            .execute(params![no, head, index, live, me])?;
                        if released > 0 {
                            tx.prepare_cached("UPDATE sessions SET at = max(at, ?2) WHERE no = ?1")?
                                .execute(params![no, at])?;
                        }
                        answers.push(Answer::Done);
                    }
                    Op::Disown { session } => {
                        tx.prepare_cached(
                            "UPDATE heads SET owner = NULL, want = 0, live = 1
                             WHERE no = (SELECT no FROM sessions WHERE id = ?1) AND owner = ?2",
                        )?
                        .execute(params![session, me])?;
                        answers.push(Answer::Done);
                    }
                    Op::Erase { session, .. } => {
                        let no: Option<i64> = tx
                            .prepare_cached("SELECT no FROM sessions WHERE id = ?1")?
                            .query_row([session], |row| row.get(0))
                            .optional()?;
                        if let Some(no) = no {
                            // The log has no index by session: one pass over it,
                            // which an erase (rare, asked for by a person) can afford.
                            for table in ["log", "snapshots", "archive", "heads", "sessions"] {
                                tx.execute(&format!("DELETE FROM {table} WHERE no = ?1"), [no])?;
                            }
                        }
                        answers.push(Answer::Done);
                    }
                    Op::Beat(_) => {
                        tx.prepare_cached("UPDATE owners SET beat = ?2 WHERE owner = ?1")?
                            .execute(params![me, millis()])?;
                        // Owners that are gone and own nothing are forgotten.
                        for (owner, (alive, _)) in living {
                            if !alive {
                                tx.prepare_cached(FORGET_OWNER)?.execute([owner])?;
                            }
                        }
                        answers.push(Answer::Done);
                    }
                    Op::Toolset { name, tools } => {
                        tx.execute(
                            "INSERT INTO toolsets (name, tools) VALUES (?1, ?2)
                             ON CONFLICT(name) DO UPDATE SET tools = excluded.tools",
                            params![name, tools],
                        )?;
                        answers.push(Answer::Done);
                    }
                    Op::Catalog { version, toolsets } => {
                        tx.execute(
                            "INSERT INTO catalogs (version, toolsets) VALUES (?1, ?2) ON CONFLICT(version) DO NOTHING",
                            params![version, toolsets],
                        )?;
                        answers.push(Answer::Done);
                    }
                    Op::Close(_) => {
                        tx.execute("DELETE FROM owners WHERE owner = ?1", [me])?;
                        answers.push(Answer::Done);
                    }
                    Op::Flush(_) => answers.push(Answer::Done),
                }
            }
        }
        tx.commit()?;
        Ok(answers)
    }
}

/// Archives a session's events up to its new snapshot (at `pos`, input
/// `index`) and deletes its entries before the snapshot: the chain back from
/// `prev` until an entry already gone (the previous compaction) or the first.
fn compact(
    tx: &rusqlite::Transaction<'_>,
    no: i64,
    prev: i64,
    pos: i64,
    index: i64,
    events: &[u8],
    last: i64,
) -> rusqlite::Result<()> {
    tx.prepare_cached("INSERT INTO archive (no, last, events) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING")?
        .execute(params![no, last, events])?;
    let mut before = tx.prepare_cached("SELECT prev FROM log WHERE rowid = ?1 AND no = ?2")?;
    let mut delete = tx.prepare_cached("DELETE FROM log WHERE rowid = ?1")?;
    let mut at = prev;
    while at != 0 {
        let Some(next) = before.query_row(params![at, no], |r| r.get::<_, i64>(0)).optional()? else {
            break;
        };
        delete.execute([at])?;
        at = next;
    }
    // The recorded head may name an entry just deleted: the snapshot's
    // entry is in the chain, and followed forward from there.
    tx.prepare_cached("UPDATE heads SET head = ?2, idx = ?3 WHERE no = ?1 AND head < ?2")?
        .execute(params![no, pos, index])?;
    Ok(())
}

enum Answer {
    Appended(Result<Appended>),
    Claimed(Result<Claim>),
    Done,
}

impl Answer {
    fn appended(&self) -> Option<&Appended> {
        match self {
            Answer::Appended(Ok(appended)) => Some(appended),
            _ => None,
        }
    }
}

/// Takes a session for `me`, creating it if new, inside the write transaction.
fn claim(
    tx: &rusqlite::Transaction<'_>,
    me: i64,
    session: &str,
    agent: &str,
    living: &HashMap<i64, (bool, String)>,
) -> rusqlite::Result<Claim> {
    tx.prepare_cached("INSERT INTO sessions (id, agent) VALUES (?1, ?2) ON CONFLICT(id) DO NOTHING")?
        .execute(params![session, agent])?;
    let no: i64 = tx
        .prepare_cached("SELECT no FROM sessions WHERE id = ?1")?
        .query_row([session], |r| r.get(0))?;
    let owner: Option<Option<i64>> = tx
        .prepare_cached("SELECT owner FROM heads WHERE no = ?1")?
        .query_row([no], |r| r.get(0))
        .optional()?;
    match owner {
        None => {
            tx.prepare_cached(
                "INSERT INTO heads (no, head, idx, live, at, owner, want) VALUES (?1, 0, 0, 0, ?2, ?3, 0)",
            )?
            .execute(params![no, millis(), me])?;
        }
        Some(Some(owner)) if owner == me => {}
        Some(Some(owner)) => match living.get(&owner) {
            Some((true, who)) => {
                tx.prepare_cached("UPDATE heads SET want = 1 WHERE no = ?1")?
                    .execute([no])?;
                return Ok(Claim::Busy(who.clone()));
            }
            _ => {
                tx.prepare_cached("UPDATE heads SET owner = ?2, want = 0 WHERE no = ?1")?
                    .execute(params![no, me])?;
            }
        },
        Some(None) => {
            tx.prepare_cached("UPDATE heads SET owner = ?2, want = 0 WHERE no = ?1")?
                .execute(params![no, me])?;
        }
    }
    Ok(Claim::Owned { session_no: no })
}

impl Store for SqliteStore {
    fn claim(&self, session: &SessionId, agent: &AgentId) -> BoxFuture<'static, Result<Claim>> {
        if self.me == 0 {
            return Box::pin(async { Err(Error::ReadOnly) });
        }
        let session = session.to_string();
        let agent = agent.to_string();
        self.ask(move |reply| Op::Claim { session, agent, reply })
    }

    fn append(&self, entry: Entry, cursor: Cursor) -> BoxFuture<'static, Result<Appended>> {
        let (reply, done) = oneshot::channel();
        let prepared = (|| -> Result<Row> {
            Ok(Row {
                cursor,
                index: entry.index as i64,
                at: entry.input.at().0 as i64,
                input: encode(&entry.input)?,
                agent: entry.agent.map(|a| a.to_string()),
                tenant: entry.tenant,
                first: entry.first_since_claim,
                compact: match (&entry.snapshot, &entry.compact) {
                    (Some(s), Some(events)) => Some((encode(events)?, s.last_seq() as i64)),
                    _ => None,
                },
                snapshot: match entry.snapshot {
                    Some(s) => Some(encode(&s)?),
                    None => None,
                },
                reply,
            })
        })();
        let sent = prepared.and_then(|row| self.send(Op::Append(row)));
        Box::pin(async move {
            sent?;
            done.await
                .map_err(|_| Error::Storage("the journal writer has stopped".into()))?
        })
    }

    fn load(&self, session: &SessionId, from: LoadFrom) -> BoxFuture<'static, Result<Option<Loaded>>> {
        let id = session.to_string();
        let recovered = self.recovered.clone();
        self.read(move |conn| load(conn, &id, from, &recovered))
    }

    fn release(&self, release: Release) {
        if release.cursor.session_no == 0 || self.me == 0 {
            return;
        }
        let op = Op::Release {
            no: release.cursor.session_no,
            head: release.cursor.head,
            index: release.index as i64,
            live: release.unfinished,
            at: i64::try_from(release.changed_at.0).unwrap_or(i64::MAX),
        };
        if let Err(error) = self.send(op) {
            tracing::warn!(%error, "could not release a session; the next process takes it over");
        }
    }

    fn erase(&self, session: &SessionId) -> BoxFuture<'static, Result<()>> {
        let (reply, rx) = oneshot::channel();
        let sent = self.send(Op::Erase {
            session: session.to_string(),
            reply,
        });
        Box::pin(async move {
            sent?;
            rx.await
                .map_err(|_| Error::Storage("the journal writer stopped".into()))?
        })
    }

    fn disown(&self, session: &SessionId) {
        if self.me == 0 {
            return;
        }
        if let Err(error) = self.send(Op::Disown {
            session: session.to_string(),
        }) {
            tracing::warn!(%error, "could not give a session up; it is taken over when this process ends");
        }
    }

    fn orphans(&self) -> BoxFuture<'static, Result<Vec<SessionId>>> {
        let me = self.me;
        let here = self.here.clone();
        let lease = self.lease;
        let recovered = self.recovered.clone();
        self.read(move |conn| {
            let living = living(conn, &here, lease)?;
            let mut stmt = conn.prepare_cached(UNFINISHED)?;
            let rows = stmt
                .query_map([me], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let orphans: Vec<(i64, i64, String)> = rows
                .into_iter()
                .filter(|(_, _, owner, _)| owner.is_none_or(|o| !living.get(&o).is_some_and(|(alive, _)| *alive)))
                .map(|(no, head, _, id)| (no, head, id))
                .collect();
            let mut heads: HashMap<i64, i64> = orphans.iter().map(|(no, head, _)| (*no, *head)).collect();
            follow(conn, &mut heads)?;
            if let Ok(mut cache) = recovered.lock() {
                for (no, recorded, _) in &orphans {
                    if let Some(head) = heads.get(no) {
                        cache.insert(*no, (*recorded, *head));
                    }
                }
            }
            let mut ids: Vec<SessionId> = orphans.into_iter().map(|(_, _, id)| SessionId::from(id)).collect();
            ids.sort();
            Ok(ids)
        })
    }

    fn wanted(&self) -> BoxFuture<'static, Result<Vec<SessionId>>> {
        let me = self.me;
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(WANTED)?;
            let ids = stmt
                .query_map([me], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(ids.into_iter().map(SessionId::from).collect())
        })
    }

    fn heartbeat(&self) -> BoxFuture<'static, Result<()>> {
        if self.me == 0 {
            return Box::pin(async { Ok(()) });
        }
        self.ask(Op::Beat)
    }

    fn changes(&self, after: i64) -> BoxFuture<'static, Result<(i64, Vec<SessionId>)>> {
        self.read(move |conn| {
            let newest: i64 = conn
                .prepare_cached("SELECT COALESCE(MAX(rowid), 0) FROM log")?
                .query_row([], |r| r.get(0))?;
            if newest <= after {
                return Ok((newest, Vec::new()));
            }
            let mut stmt = conn
                .prepare_cached("SELECT DISTINCT s.id FROM log l JOIN sessions s ON s.no = l.no WHERE l.rowid > ?1")?;
            let ids = stmt
                .query_map([after], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((newest, ids.into_iter().map(SessionId::from).collect()))
        })
    }

    fn sessions(&self) -> BoxFuture<'static, Result<Vec<SessionSummary>>> {
        self.read(listing::sessions)
    }

    fn sessions_for(&self, query: SessionQuery) -> BoxFuture<'static, Result<Vec<SessionSummary>>> {
        self.read(move |conn| listing::sessions_for(conn, &query))
    }

    fn session_page(
        &self,
        query: SessionQuery,
        held: Arc<Activities>,
    ) -> Option<BoxFuture<'static, Result<SessionPage>>> {
        listing::pages(&query).then(|| self.read(move |conn| listing::page(conn, &query, &held)))
    }

    fn save_catalog(&self, version: &str, recorded: String) {
        if let Err(error) = self.send(Op::Catalog {
            version: version.to_string(),
            toolsets: recorded,
        }) {
            tracing::warn!(%error, "could not record a catalog version");
        }
    }

    fn save_toolset(&self, name: &str, tools: String) {
        if let Err(error) = self.send(Op::Toolset {
            name: name.to_string(),
            tools,
        }) {
            tracing::warn!(%error, "could not remember a discovered toolset");
        }
    }

    fn toolsets(&self) -> Result<Vec<(String, String)>> {
        let conn = lock_reader(&self.reader)?;
        let mut stmt = conn.prepare("SELECT name, tools FROM toolsets ORDER BY name")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    fn stats(&self) -> JournalStats {
        self.stats.get()
    }

    fn compacts(&self) -> bool {
        true
    }

    fn flush(&self) -> BoxFuture<'static, ()> {
        let (reply, done) = oneshot::channel();
        let sent = self.send(Op::Flush(reply)).is_ok();
        Box::pin(async move {
            if sent {
                let _ = done.await;
            }
        })
    }

    fn close(&self) -> BoxFuture<'static, ()> {
        let (reply, done) = oneshot::channel();
        let sent = self.me != 0 && self.send(Op::Close(reply)).is_ok();
        Box::pin(async move {
            if sent {
                let _ = done.await;
            }
        })
    }
}

#[cfg(test)]
mod tests;
