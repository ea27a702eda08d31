//! The database's shape: its tables, how a connection is opened and tuned,
//! the check that a file is a concierge database, and its migrations.

use std::path::Path;

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::memory::MEMORY_TABLES;
use crate::schedule::SCHEDULE_TABLES;
use crate::webhook::WEBHOOK_TABLES;

/// The page size of a new database: journal rows are small, and smaller
/// pages write fewer bytes per turn.
pub(super) const PAGE_SIZE: i64 = 1024;

/// Marks a concierge database (`PRAGMA application_id`): "Conc".
pub(super) const APPLICATION_ID: i64 = 0x436f_6e63;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    no    INTEGER PRIMARY KEY,
    id    TEXT    NOT NULL UNIQUE,
    agent TEXT    NOT NULL,
    tenant TEXT,
    at    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS heads (
    no    INTEGER PRIMARY KEY,
    head  INTEGER NOT NULL,
    idx   INTEGER NOT NULL,
    live  INTEGER NOT NULL,
    at    INTEGER NOT NULL, -- when the head was made (a list reads sessions.at)
    owner INTEGER,
    want  INTEGER NOT NULL DEFAULT 0
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
CREATE TABLE IF NOT EXISTS owners (
    owner   INTEGER PRIMARY KEY,
    pid     INTEGER NOT NULL,
    space   TEXT    NOT NULL,
    started INTEGER NOT NULL,
    label   TEXT    NOT NULL,
    beat    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS catalogs (
    version  TEXT PRIMARY KEY,
    toolsets TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS archive (
    no     INTEGER NOT NULL,
    last   INTEGER NOT NULL,
    events BLOB    NOT NULL,
    PRIMARY KEY (no, last)
) WITHOUT ROWID;
";

/// The tables a concierge database may hold (with the memory store's,
/// [`MEMORY_TABLES`]).
const TABLES: [&str; 8] = [
    "archive",
    "sessions",
    "heads",
    "log",
    "toolsets",
    "snapshots",
    "owners",
    "catalogs",
];

pub(super) fn connect(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(|e| Error::Storage(format!("cannot open {}: {e}", path.display())))?;
    conn.busy_timeout(crate::side_db::BUSY_TIMEOUT)?;
    Ok(conn)
}

pub(super) fn tune(conn: &Connection) -> Result<()> {
    // Only takes effect on a new database (before its first write).
    conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    crate::side_db::use_wal(conn)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(())
}

/// Refuses a file that is not a concierge database before anything is
/// written to it; marks a new (or older concierge) database as ours.
pub(super) fn check_ours(conn: &Connection, path: &Path) -> Result<()> {
    let foreign = |found: String| Error::ForeignDatabase {
        path: path.display().to_string(),
        found,
    };
    // The mark and the tables from one snapshot: another process creating
    // the same new database marks it before it adds tables, so tables
    // without the mark are never a concierge database half made.
    let snapshot = conn.unchecked_transaction()?;
    let id: i64 = snapshot
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(|e| foreign(format!("SQLite cannot read it: {e}")))?;
    if id == APPLICATION_ID {
        return Ok(());
    }
    let tables: Vec<String> = snapshot
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    drop(snapshot);
    if id != 0 {
        return Err(foreign(format!(
            "another program marked it as its own (application id {id})"
        )));
    }
    let memory = |t: &String| {
        MEMORY_TABLES.contains(&t.as_str())
            || SCHEDULE_TABLES.contains(&t.as_str())
            || WEBHOOK_TABLES.contains(&t.as_str())
    };
    let ours = tables.iter().all(|t| TABLES.contains(&t.as_str()) || memory(t));
    let concierge = tables.iter().any(|t| t == "log") && tables.iter().any(|t| t == "heads");
    // Memories, schedules and webhooks alone (kept there by a runtime on another engine) are ours too.
    let empty = tables.iter().all(memory);
    if !(empty || ours && concierge) {
        return Err(foreign(format!("it holds other tables: {}", tables.join(", "))));
    }
    if empty {
        // The first write fixes the page size: set it before the mark.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    }
    conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    Ok(())
}

/// The names of `table`'s columns.
fn columns_of(conn: &Connection, table: &str) -> Result<Vec<String>> {
    Ok(conn
        .prepare(&format!("PRAGMA table_info({table})"))?
        .query_map([], |r| r.get(1))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Adds what older concierge databases lack.
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    if !columns_of(conn, "heads")?.iter().any(|c| c == "owner") {
        conn.execute_batch(
            "ALTER TABLE heads ADD COLUMN owner INTEGER;
             ALTER TABLE heads ADD COLUMN want INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    if !columns_of(conn, "sessions")?.iter().any(|c| c == "tenant") {
        conn.execute_batch("ALTER TABLE sessions ADD COLUMN tenant TEXT;")?;
    }
    if !columns_of(conn, "sessions")?.iter().any(|c| c == "at") {
        // When each session last changed moved from its head to its row, for
        // the index a list reads (`heads.at` is no longer kept up to date).
        // Under the write lock, so two processes opening the same older
        // database add it once.
        let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
        if !columns_of(&tx, "sessions")?.iter().any(|c| c == "at") {
            tx.execute_batch(
                "ALTER TABLE sessions ADD COLUMN at INTEGER NOT NULL DEFAULT 0;
                 UPDATE sessions SET at = COALESCE((SELECT h.at FROM heads h WHERE h.no = sessions.no), 0);",
            )?;
        }
        tx.commit()?;
    }
    // A tenant's sessions are read from its rows only, and a page of its
    // conversations along them in the list's order (the most recently
    // changed first: each session is in the index from its first input
    // on); looking for unfinished runs reads the live sessions' heads only,
    // and what a process owns (the sessions others want of it, whether a
    // process that is gone still owns any) the owned ones only, however
    // many idle sessions there are. The index by tenant alone, of earlier
    // versions, is dropped: this one serves what it did.
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS sessions_by_tenant_at ON sessions (tenant, at DESC, id) WHERE at > 0;
         DROP INDEX IF EXISTS sessions_by_tenant;
         DROP INDEX IF EXISTS sessions_by_activity;
         CREATE INDEX IF NOT EXISTS live_heads ON heads (no) WHERE live = 1;
         CREATE INDEX IF NOT EXISTS owned_heads ON heads (owner) WHERE owner IS NOT NULL;",
    )?;
    Ok(())
}
