//! The SQLite journal: WAL mode, `synchronous=FULL`, one writer thread that
//! commits whatever is queued in one transaction (group commit), so many
//! sessions share one fsync while each input is durable before its effects run.

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use concierge_core::{Event, Input, Session, SessionId, Timestamp};
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::{Entry, Journal, JournalStats, Loaded, SessionSummary, StatsCell};
use crate::error::{Error, Result};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS journal (
    session   TEXT    NOT NULL,
    idx       INTEGER NOT NULL,
    input     TEXT    NOT NULL,
    events    TEXT    NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    PRIMARY KEY (session, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    session TEXT    PRIMARY KEY,
    idx     INTEGER NOT NULL,
    state   TEXT    NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
    session    TEXT    PRIMARY KEY,
    agent      TEXT    NOT NULL,
    active_run TEXT,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Most entries one transaction takes.
const MAX_BATCH: usize = 4096;

struct Row {
    session: String,
    index: i64,
    input: String,
    events: String,
    first_seq: i64,
    last_seq: i64,
    status: Option<(String, Option<String>, i64)>,
    snapshot: Option<String>,
    reply: oneshot::Sender<Result<()>>,
}

/// A journal in a SQLite database.
pub(crate) struct SqliteJournal {
    writer: Mutex<mpsc::Sender<Row>>,
    reader: Arc<Mutex<Connection>>,
    stats: Arc<StatsCell>,
}

fn open(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(|e| Error::Storage(format!("cannot open {}: {e}", path.display())))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

impl SqliteJournal {
    /// Opens (or creates) the database at `path` and starts the writer thread.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Storage(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = open(path)?;
        conn.execute_batch(SCHEMA)?;
        let reader = open(path)?;
        let (tx, rx) = mpsc::channel::<Row>();
        let stats = Arc::new(StatsCell::default());
        let writer_stats = stats.clone();
        thread::Builder::new()
            .name("concierge-journal".into())
            .spawn(move || write_loop(conn, rx, &writer_stats))
            .map_err(|e| Error::Storage(format!("cannot start the journal writer: {e}")))?;
        Ok(Self {
            writer: Mutex::new(tx),
            reader: Arc::new(Mutex::new(reader)),
            stats,
        })
    }

    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T>> {
        let reader = self.reader.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let conn = reader
                    .lock()
                    .map_err(|_| Error::Storage("the journal reader is poisoned".into()))?;
                f(&conn)
            })
            .await
            .map_err(|e| Error::Storage(format!("journal read task failed: {e}")))?
        })
    }
}

fn write_loop(mut conn: Connection, rx: mpsc::Receiver<Row>, stats: &StatsCell) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(row) => batch.push(row),
                Err(_) => break,
            }
        }
        let bytes: usize = batch
            .iter()
            .map(|r| {
                r.input.len()
                    + r.events.len()
                    + r.session.len()
                    + r.snapshot.as_ref().map_or(0, String::len)
                    + r.status
                        .as_ref()
                        .map_or(0, |s| s.0.len() + s.1.as_ref().map_or(0, String::len))
            })
            .sum();
        let snapshots = batch.iter().filter(|r| r.snapshot.is_some()).count();
        let result = write_batch(&mut conn, &batch);
        match &result {
            Ok(()) => stats.record(batch.len() as u64, 1, bytes as u64, snapshots as u64),
            Err(e) => tracing::error!(error = %e, "journal write failed"),
        }
        for row in batch {
            let _ = row.reply.send(match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(Error::Storage(e.to_string())),
            });
        }
    }
}

fn write_batch(conn: &mut Connection, batch: &[Row]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO journal (session, idx, input, events, first_seq, last_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        let mut status = tx.prepare_cached(
            "INSERT INTO sessions (session, agent, active_run, updated_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(session) DO UPDATE SET agent = excluded.agent, active_run = excluded.active_run, updated_at = excluded.updated_at",
        )?;
        let mut snapshot = tx.prepare_cached(
            "INSERT INTO snapshots (session, idx, state) VALUES (?1, ?2, ?3)
             ON CONFLICT(session) DO UPDATE SET idx = excluded.idx, state = excluded.state",
        )?;
        for row in batch {
            insert.execute(params![
                row.session,
                row.index,
                row.input,
                row.events,
                row.first_seq,
                row.last_seq
            ])?;
            if let Some((agent, active, at)) = &row.status {
                status.execute(params![row.session, agent, active, at])?;
            }
            if let Some(state) = &row.snapshot {
                snapshot.execute(params![row.session, row.index, state])?;
            }
        }
    }
    tx.commit()
}

fn storage(e: impl std::fmt::Display) -> Error {
    Error::Storage(e.to_string())
}

impl Journal for SqliteJournal {
    fn append(&self, entry: Entry) -> BoxFuture<'static, Result<()>> {
        let (reply, done) = oneshot::channel();
        let prepared = (|| -> Result<Row> {
            let first_seq = entry.events.first().map_or(0, |e| e.seq) as i64;
            let last_seq = entry.events.last().map_or(0, |e| e.seq) as i64;
            Ok(Row {
                session: entry.session.to_string(),
                index: entry.index as i64,
                input: serde_json::to_string(&entry.input).map_err(storage)?,
                events: serde_json::to_string(&entry.events).map_err(storage)?,
                first_seq,
                last_seq,
                status: entry.status.map(|s| {
                    (
                        s.agent.to_string(),
                        s.active_run.map(|r| r.to_string()),
                        s.updated_at.0 as i64,
                    )
                }),
                snapshot: match entry.snapshot {
                    Some(s) => Some(serde_json::to_string(&s).map_err(storage)?),
                    None => None,
                },
                reply,
            })
        })();
        let sent = prepared.and_then(|row| {
            self.writer
                .lock()
                .map_err(|_| Error::Storage("the journal writer is poisoned".into()))?
                .send(row)
                .map_err(|_| Error::Storage("the journal writer has stopped".into()))
        });
        Box::pin(async move {
            sent?;
            done.await
                .map_err(|_| Error::Storage("the journal writer has stopped".into()))?
        })
    }

    fn load(&self, session: &SessionId) -> BoxFuture<'static, Result<Option<Loaded>>> {
        let id = session.to_string();
        self.read(move |conn| {
            let snapshot: Option<(i64, String)> = conn
                .prepare_cached("SELECT idx, state FROM snapshots WHERE session = ?1")?
                .query_row([&id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let after = snapshot.as_ref().map_or(-1, |s| s.0);
            let mut stmt =
                conn.prepare_cached("SELECT idx, input FROM journal WHERE session = ?1 AND idx > ?2 ORDER BY idx")?;
            let rows = stmt.query_map(params![id, after], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?;
            let mut inputs = Vec::new();
            for row in rows {
                let (idx, text) = row?;
                let input: Input = serde_json::from_str(&text)
                    .map_err(|e| Error::Storage(format!("session {id}, entry {idx}: unreadable input: {e}")))?;
                inputs.push((idx as u64, input));
            }
            let snapshot = match snapshot {
                Some((idx, text)) => {
                    let state: Session = serde_json::from_str(&text)
                        .map_err(|e| Error::Storage(format!("session {id}: unreadable snapshot: {e}")))?;
                    Some((idx as u64, state))
                }
                None => None,
            };
            if snapshot.is_none() && inputs.is_empty() {
                return Ok(None);
            }
            Ok(Some(Loaded { snapshot, inputs }))
        })
    }

    fn events(&self, session: &SessionId, from_seq: u64) -> BoxFuture<'static, Result<Vec<Event>>> {
        let id = session.to_string();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT events FROM journal WHERE session = ?1 AND last_seq >= ?2 AND last_seq > 0 ORDER BY idx",
            )?;
            let rows = stmt.query_map(params![id, from_seq as i64], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for row in rows {
                let batch: Vec<Event> = serde_json::from_str(&row?)
                    .map_err(|e| Error::Storage(format!("session {id}: unreadable events: {e}")))?;
                out.extend(batch.into_iter().filter(|e| e.seq >= from_seq));
            }
            Ok(out)
        })
    }

    fn open_sessions(&self) -> Result<Vec<SessionId>> {
        let conn = self
            .reader
            .lock()
            .map_err(|_| Error::Storage("the journal reader is poisoned".into()))?;
        let mut stmt = conn.prepare("SELECT session FROM sessions WHERE active_run IS NOT NULL ORDER BY session")?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(ids.into_iter().map(SessionId::from).collect())
    }

    fn sessions(&self) -> BoxFuture<'static, Result<Vec<SessionSummary>>> {
        self.read(|conn| {
            let mut stmt =
                conn.prepare("SELECT session, agent, active_run, updated_at FROM sessions ORDER BY session")?;
            let rows = stmt.query_map([], |r| {
                Ok(SessionSummary {
                    id: r.get::<_, String>(0)?.into(),
                    agent: r.get::<_, String>(1)?.into(),
                    active_run: r.get::<_, Option<String>>(2)?.map(Into::into),
                    updated_at: Timestamp(r.get::<_, i64>(3)? as u64),
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn park(&self, _session: Session) {}

    fn stats(&self) -> JournalStats {
        self.stats.get()
    }
}
