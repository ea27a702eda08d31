//! The SQLite journal.
//!
//! WAL mode with `synchronous=FULL`: a commit is on disk when it returns. One
//! writer thread commits whatever is queued in one transaction (group
//! commit), so concurrent sessions share an fsync while each input is durable
//! before its effects run.
//!
//! The layout keeps the pages a commit touches few, whatever the number of
//! sessions: inputs go to an append-only `log` (rowid order, so a batch fills
//! the same tail pages), compressed, each entry pointing to its session's
//! previous one. A session's `heads` row says where its chain ends; it is
//! written when the session is first written after a load (marking it live)
//! and when it leaves memory, not on every entry. After a crash, one pass over
//! the log tail finds the true heads of the sessions that were live. Events
//! are not stored: they are a deterministic function of the inputs and are
//! rebuilt by replay when a subscriber asks for past ones. Pages are 1 KiB.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use concierge_core::{Catalog, Event, Input, Session, SessionId, Timestamp};
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::codec::{decode, encode};
use super::{Appended, Cursor, Entry, Journal, JournalStats, Loaded, SessionSummary, StatsCell, replay_events};
use crate::error::{Error, Result};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    no    INTEGER PRIMARY KEY,
    id    TEXT    NOT NULL UNIQUE,
    agent TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS heads (
    no   INTEGER PRIMARY KEY,
    head INTEGER NOT NULL,
    idx  INTEGER NOT NULL,
    live INTEGER NOT NULL,
    at   INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS log (
    no    INTEGER NOT NULL,
    idx   INTEGER NOT NULL,
    prev  INTEGER NOT NULL,
    input BLOB    NOT NULL
);
CREATE TABLE IF NOT EXISTS toolsets (
    name  TEXT PRIMARY KEY,
    tools TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    no    INTEGER PRIMARY KEY,
    idx   INTEGER NOT NULL,
    pos   INTEGER NOT NULL,
    state BLOB    NOT NULL
);
";

/// Most entries one transaction takes.
const MAX_BATCH: usize = 4096;

/// How long the writer waits for more entries before a commit, by default,
/// when the previous commit had company (a lone writer never waits).
pub const DEFAULT_COMMIT_WINDOW: std::time::Duration = std::time::Duration::from_millis(1);

struct Row {
    session: String,
    cursor: Cursor,
    index: i64,
    input: Vec<u8>,
    agent: Option<String>,
    locate: bool,
    at: i64,
    snapshot: Option<Vec<u8>>,
    reply: oneshot::Sender<Result<Appended>>,
}

/// What the writer thread is asked to do.
enum Op {
    /// Append an entry (durably; the caller waits).
    Append(Row),
    /// Record where an idle session's chain ends and mark it not live.
    Park { no: i64, head: i64, index: i64, at: i64 },
    /// Answer once everything before it is committed.
    Flush(oneshot::Sender<()>),
    /// Remember a discovered toolset.
    Toolset { name: String, tools: String },
}

/// A journal in a SQLite database.
pub struct SqliteJournal {
    writer: Mutex<mpsc::Sender<Op>>,
    reader: Arc<Mutex<Connection>>,
    stats: Arc<StatsCell>,
    /// True heads of the sessions found live at recovery, by number.
    recovered: Arc<Mutex<HashMap<i64, i64>>>,
}

fn open(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(|e| Error::Storage(format!("cannot open {}: {e}", path.display())))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // Only takes effect on a new database (before its first table).
    conn.pragma_update(None, "page_size", 1024)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

impl SqliteJournal {
    /// Opens (or creates) the database at `path` and starts the writer
    /// thread, which gathers entries for `window` under load (group commit).
    pub fn open(path: &Path, window: std::time::Duration) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Storage(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = open(path)?;
        conn.execute_batch(SCHEMA)?;
        let reader = open(path)?;
        let (tx, rx) = mpsc::channel::<Op>();
        let stats = Arc::new(StatsCell::default());
        let writer_stats = stats.clone();
        thread::Builder::new()
            .name("concierge-journal".into())
            .spawn(move || write_loop(conn, rx, &writer_stats, window))
            .map_err(|e| Error::Storage(format!("cannot start the journal writer: {e}")))?;
        Ok(Self {
            writer: Mutex::new(tx),
            reader: Arc::new(Mutex::new(reader)),
            stats,
            recovered: Arc::default(),
        })
    }

    fn send(&self, op: Op) -> Result<()> {
        self.writer
            .lock()
            .map_err(|_| Error::Storage("the journal writer is poisoned".into()))?
            .send(op)
            .map_err(|_| Error::Storage("the journal writer has stopped".into()))
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

fn write_loop(mut conn: Connection, rx: mpsc::Receiver<Op>, stats: &StatsCell, window: std::time::Duration) {
    let mut previous = 1;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(row) => batch.push(row),
                Err(_) => break,
            }
        }
        // Under load (the last commit had company), gather entries for a
        // short window: fewer, larger commits write fewer pages and fsyncs.
        // A lone writer never waits.
        if previous > 1 && !window.is_zero() {
            let deadline = std::time::Instant::now() + window;
            while batch.len() < MAX_BATCH {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                match rx.recv_timeout(left) {
                    Ok(row) => batch.push(row),
                    Err(_) => break,
                }
            }
        }
        previous = batch.len();
        let result = write_batch(&mut conn, &batch);
        let mut flushes = Vec::new();
        let rows: Vec<Row> = batch
            .into_iter()
            .filter_map(|op| match op {
                Op::Append(row) => Some(row),
                Op::Park { .. } | Op::Toolset { .. } => None,
                Op::Flush(reply) => {
                    flushes.push(reply);
                    None
                }
            })
            .collect();
        match result {
            Ok(written) => {
                let bytes: u64 = written.iter().map(|a| a.input_bytes + a.snapshot_bytes).sum();
                let snapshots = written.iter().filter(|a| a.snapshot_bytes > 0).count() as u64;
                stats.record(written.len() as u64, 1, bytes, snapshots);
                for (row, appended) in rows.into_iter().zip(written) {
                    let _ = row.reply.send(Ok(appended));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "journal write failed");
                for row in rows {
                    let _ = row.reply.send(Err(Error::Storage(e.to_string())));
                }
            }
        }
        for reply in flushes {
            let _ = reply.send(());
        }
    }
}

fn write_batch(conn: &mut Connection, batch: &[Op]) -> rusqlite::Result<Vec<Appended>> {
    let tx = conn.transaction()?;
    let mut written = Vec::with_capacity(batch.len());
    {
        let mut new_session = tx.prepare_cached("INSERT INTO sessions (id, agent) VALUES (?1, ?2)")?;
        let mut agent = tx.prepare_cached("UPDATE sessions SET agent = ?2 WHERE no = ?1")?;
        let mut log = tx.prepare_cached("INSERT INTO log (no, idx, prev, input) VALUES (?1, ?2, ?3, ?4)")?;
        let mut head = tx.prepare_cached(
            "INSERT INTO heads (no, head, idx, live, at) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(no) DO UPDATE SET head = excluded.head, idx = excluded.idx,
                                           live = excluded.live, at = excluded.at",
        )?;
        let mut snapshot = tx.prepare_cached(
            "INSERT INTO snapshots (no, idx, pos, state) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(no) DO UPDATE SET idx = excluded.idx, pos = excluded.pos, state = excluded.state",
        )?;
        for op in batch {
            let row = match op {
                Op::Append(row) => row,
                Op::Park {
                    no,
                    head: pos,
                    index,
                    at,
                } => {
                    head.execute(params![no, pos, index, false, at])?;
                    continue;
                }
                Op::Flush(_) => continue,
                Op::Toolset { name, tools } => {
                    tx.execute(
                        "INSERT INTO toolsets (name, tools) VALUES (?1, ?2)
                         ON CONFLICT(name) DO UPDATE SET tools = excluded.tools",
                        params![name, tools],
                    )?;
                    continue;
                }
            };
            let mut no = row.cursor.session_no;
            let new = no == 0;
            if new {
                new_session.execute(params![row.session, row.agent.as_deref().unwrap_or("")])?;
                no = tx.last_insert_rowid();
            } else if let Some(name) = &row.agent {
                agent.execute(params![no, name])?;
            }
            log.execute(params![no, row.index, row.cursor.head, row.input])?;
            let pos = tx.last_insert_rowid();
            if row.locate || new {
                head.execute(params![no, pos, row.index, true, row.at])?;
            }
            if let Some(state) = &row.snapshot {
                snapshot.execute(params![no, row.index, pos, state])?;
            }
            written.push(Appended {
                cursor: Cursor {
                    session_no: no,
                    head: pos,
                },
                input_bytes: row.input.len() as u64,
                snapshot_bytes: row.snapshot.as_ref().map_or(0, |s| s.len() as u64),
            });
        }
    }
    tx.commit()?;
    Ok(written)
}

/// Reads a session's chain back, newest first, until `stop` (exclusive).
fn read_chain(conn: &Connection, id: &str, head: i64, stop: i64) -> Result<Vec<(u64, Input)>> {
    let mut stmt = conn.prepare_cached("SELECT prev, idx, input FROM log WHERE rowid = ?1")?;
    let mut inputs = Vec::new();
    let mut pos = head;
    while pos != 0 && pos != stop {
        let (prev, idx, bytes): (i64, i64, Vec<u8>) = stmt
            .query_row([pos], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| Error::Storage(format!("session {id}: journal entry {pos} unreadable: {e}")))?;
        let input: Input =
            decode(&bytes).map_err(|e| Error::Storage(format!("session {id}, entry {idx}: unreadable input: {e}")))?;
        inputs.push((idx as u64, input));
        pos = prev;
    }
    inputs.reverse();
    Ok(inputs)
}

/// Moves each live session's recorded head (`heads`: session number → log
/// position) to its true one: entries written after a head was recorded
/// point back to it, so one pass over the log tail (a rowid range scan)
/// follows every chain forward.
fn follow(conn: &Connection, heads: &mut HashMap<i64, i64>) -> Result<()> {
    let Some(oldest) = heads.values().min().copied() else {
        return Ok(());
    };
    let mut tail = conn.prepare_cached("SELECT rowid, no, prev FROM log WHERE rowid > ?1 ORDER BY rowid")?;
    let rows = tail.query_map([oldest], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    })?;
    for row in rows {
        let (pos, no, prev) = row?;
        if let Some(head) = heads.get_mut(&no) {
            if *head == prev {
                *head = pos;
            }
        }
    }
    Ok(())
}

fn lock_reader(reader: &Mutex<Connection>) -> Result<std::sync::MutexGuard<'_, Connection>> {
    reader
        .lock()
        .map_err(|_| Error::Storage("the journal reader is poisoned".into()))
}

fn load(conn: &Connection, id: &str, full: bool, recovered: &Mutex<HashMap<i64, i64>>) -> Result<Option<Loaded>> {
    let found: Option<(i64, i64, bool)> = conn
        .prepare_cached("SELECT s.no, h.head, h.live FROM sessions s JOIN heads h ON h.no = s.no WHERE s.id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let Some((no, located, live)) = found else {
        return Ok(None);
    };
    let known = recovered.lock().ok().and_then(|r| r.get(&no).copied());
    let head = match (live, known) {
        (false, _) => located,
        (true, Some(head)) => head,
        (true, None) => {
            let mut heads = HashMap::from([(no, located)]);
            follow(conn, &mut heads)?;
            heads.get(&no).copied().unwrap_or(located)
        }
    };
    let snapshot: Option<(i64, i64, Vec<u8>)> = if full {
        None
    } else {
        conn.prepare_cached("SELECT idx, pos, state FROM snapshots WHERE no = ?1")?
            .query_row([no], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?
    };
    let stop = snapshot.as_ref().map_or(0, |s| s.1);
    let inputs = read_chain(conn, id, head, stop)?;
    let snapshot_bytes = snapshot.as_ref().map_or(0, |s| s.2.len() as u64);
    let snapshot = match snapshot {
        Some((idx, _, bytes)) => {
            let state: Session =
                decode(&bytes).map_err(|e| Error::Storage(format!("session {id}: unreadable snapshot: {e}")))?;
            Some((idx as u64, state))
        }
        None => None,
    };
    Ok(Some(Loaded {
        snapshot,
        inputs,
        cursor: Cursor { session_no: no, head },
        snapshot_bytes,
    }))
}

impl Journal for SqliteJournal {
    fn append(&self, entry: Entry, cursor: Cursor) -> BoxFuture<'static, Result<Appended>> {
        let (reply, done) = oneshot::channel();
        let prepared = (|| -> Result<Row> {
            Ok(Row {
                session: entry.session.to_string(),
                cursor,
                index: entry.index as i64,
                at: entry.input.at().0 as i64,
                input: encode(&entry.input)?,
                agent: entry.agent.map(|a| a.to_string()),
                locate: entry.locate,
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

    fn load(&self, session: &SessionId, full: bool) -> BoxFuture<'static, Result<Option<Loaded>>> {
        let id = session.to_string();
        let recovered = self.recovered.clone();
        self.read(move |conn| load(conn, &id, full, &recovered))
    }

    fn events(
        &self,
        session: &SessionId,
        from_seq: u64,
        catalog: Arc<Catalog>,
    ) -> BoxFuture<'static, Result<Vec<Event>>> {
        let id = session.clone();
        let recovered = self.recovered.clone();
        self.read(move |conn| {
            let Some(loaded) = load(conn, id.as_str(), false, &recovered)? else {
                return Ok(Vec::new());
            };
            // Replay from the snapshot when it is older than what is asked,
            // else from the first input.
            let (start, inputs) = match loaded.snapshot {
                Some((_, state)) if state.last_seq() < from_seq => (Some(state), loaded.inputs),
                Some(_) => (None, read_chain(conn, id.as_str(), loaded.cursor.head, 0)?),
                None => (None, loaded.inputs),
            };
            Ok(replay_events(&id, start, inputs, from_seq, &catalog))
        })
    }

    fn open_sessions(&self) -> Result<Vec<SessionId>> {
        let conn = lock_reader(&self.reader)?;
        let mut stmt =
            conn.prepare("SELECT h.no, h.head, s.id FROM heads h JOIN sessions s ON s.no = h.no WHERE h.live = 1")?;
        let live = stmt
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut heads: HashMap<i64, i64> = live.iter().map(|(no, head, _)| (*no, *head)).collect();
        follow(&conn, &mut heads)?;
        if let Ok(mut recovered) = self.recovered.lock() {
            recovered.extend(heads);
        }
        let mut ids: Vec<SessionId> = live.into_iter().map(|(_, _, id)| SessionId::from(id)).collect();
        ids.sort();
        Ok(ids)
    }

    fn sessions(&self) -> BoxFuture<'static, Result<Vec<SessionSummary>>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(
                "SELECT s.id, s.agent, h.live, h.at FROM sessions s JOIN heads h ON h.no = s.no ORDER BY s.id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(SessionSummary {
                    id: r.get::<_, String>(0)?.into(),
                    agent: r.get::<_, String>(1)?.into(),
                    live: r.get::<_, bool>(2)?,
                    updated_at: Timestamp(r.get::<_, i64>(3)? as u64),
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn park(&self, _session: Session, cursor: Cursor, index: u64) {
        if cursor.session_no == 0 {
            return;
        }
        let op = Op::Park {
            no: cursor.session_no,
            head: cursor.head,
            index: index as i64,
            at: crate::engine::now().0 as i64,
        };
        if let Err(error) = self.send(op) {
            tracing::warn!(%error, "could not record an idle session's head; it is found again at recovery");
        }
    }

    fn stats(&self) -> JournalStats {
        self.stats.get()
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

    fn flush(&self) -> BoxFuture<'static, ()> {
        let (reply, done) = oneshot::channel();
        let sent = self.send(Op::Flush(reply)).is_ok();
        Box::pin(async move {
            if sent {
                let _ = done.await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn entry(session: &str, index: u64, locate: bool) -> Entry {
        Entry {
            session: session.into(),
            index,
            input: Input::Tick {
                at: Timestamp(index + 1),
            },
            agent: (index == 0).then(|| "a".into()),
            locate,
            snapshot: None,
        }
    }

    /// Heads are recorded only when a session is located; loading (live, or
    /// after a crash) follows each chain forward over the log tail, past
    /// other sessions' entries.
    #[tokio::test]
    async fn chains_are_followed_past_the_recorded_head() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.db");
        {
            let journal = SqliteJournal::open(&path, std::time::Duration::ZERO).unwrap();
            let mut cursors = HashMap::from([("s", Cursor::default()), ("t", Cursor::default())]);
            for index in 0..3 {
                for session in ["s", "t"] {
                    let cursor = cursors[session];
                    let appended = journal.append(entry(session, index, index == 0), cursor).await.unwrap();
                    cursors.insert(session, appended.cursor);
                }
            }
            // Live in this process: the recorded head is the first entry.
            let loaded = journal.load(&"s".into(), false).await.unwrap().unwrap();
            let indexes: Vec<u64> = loaded.inputs.iter().map(|(i, _)| *i).collect();
            assert_eq!(indexes, [0, 1, 2]);
            assert_eq!(loaded.cursor, cursors["s"]);
            journal.flush().await;
        }
        // As after a crash: both are live, and one pass finds both heads.
        let journal = SqliteJournal::open(&path, std::time::Duration::ZERO).unwrap();
        let live = journal.open_sessions().unwrap();
        assert_eq!(live, [SessionId::from("s"), SessionId::from("t")]);
        for session in ["s", "t"] {
            let loaded = journal.load(&session.into(), false).await.unwrap().unwrap();
            assert_eq!(loaded.inputs.len(), 3, "{session}");
        }
    }
}
