//! A store of the runtime's own beside the engine's journal (memories,
//! schedules): its tables in the runtime's database file, on a connection
//! of its own opened when first used (after the engine made the file its
//! own), or in memory; every call runs on tokio's blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};

/// One lazily opened connection and the schema it creates.
#[derive(Clone)]
pub(crate) struct SideDb {
    shared: Arc<Shared>,
}

struct Shared {
    /// The database file; `None`: a database in memory.
    path: Option<PathBuf>,
    /// The tables, created when the connection opens.
    schema: &'static str,
    conn: Mutex<Option<Connection>>,
}

impl SideDb {
    /// The tables in the database at `path`, opened when first used.
    pub(crate) fn at(path: &Path, schema: &'static str) -> Self {
        Self::with(Some(path.to_path_buf()), schema, None)
    }

    /// The tables in the database at `path`, opened now.
    pub(crate) fn open(path: &Path, schema: &'static str) -> rusqlite::Result<Self> {
        let conn = connect(Some(path), schema)?;
        Ok(Self::with(Some(path.to_path_buf()), schema, Some(conn)))
    }

    /// The tables in a database in memory (as long as the process lives).
    pub(crate) fn in_memory(schema: &'static str) -> rusqlite::Result<Self> {
        let conn = connect(None, schema)?;
        Ok(Self::with(None, schema, Some(conn)))
    }

    fn with(path: Option<PathBuf>, schema: &'static str, conn: Option<Connection>) -> Self {
        Self {
            shared: Arc::new(Shared {
                path,
                schema,
                conn: Mutex::new(conn),
            }),
        }
    }

    /// The database file, if not in memory.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.shared.path.as_deref()
    }

    /// Runs `work` on the connection (opening it first if need be) on the
    /// blocking pool; `failed` words a failure of the pool itself.
    pub(crate) async fn run<T, E>(
        &self,
        failed: fn(String) -> E,
        work: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<rusqlite::Error> + Send + 'static,
    {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = shared.conn.lock().unwrap_or_else(PoisonError::into_inner);
            if conn.is_none() {
                *conn = Some(connect(shared.path.as_deref(), shared.schema)?);
            }
            match conn.as_mut() {
                Some(conn) => work(conn),
                None => Err(failed("the store is not open".into())),
            }
        })
        .await
        .map_err(|e| failed(format!("the store's task stopped: {e}")))?
    }
}

/// How long a connection (the engine's and the side stores') waits for another's lock.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Puts the database in WAL mode. SQLite converts a database to WAL under an
/// exclusive lock, and on some paths does not wait for it (the busy timeout
/// does not apply): the conversion then fails as locked, or is refused and
/// answers the old mode. So when processes open a new database at once,
/// one of them could fail; each tries again until the file is in WAL mode,
/// for as long as the busy timeout. A database already in WAL mode takes no
/// lock at all.
pub(crate) fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        let converted = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0));
        match converted {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(_) => {}
            Err(error) if error.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {}
            Err(error) => return Err(error),
        }
        if Instant::now() >= deadline {
            tracing::warn!(%mode, "the database could not be put in WAL mode; it stays in its mode");
            return Ok(());
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Opens the database (in memory without a path) and creates the tables.
fn connect(path: Option<&Path>, schema: &str) -> rusqlite::Result<Connection> {
    let conn = match path {
        Some(path) => {
            let conn = Connection::open(path)?;
            conn.busy_timeout(BUSY_TIMEOUT)?;
            use_wal(&conn)?;
            conn
        }
        None => Connection::open_in_memory()?,
    };
    // One transaction: other connections see one change of the schema,
    // not one per table (each change makes them prepare again).
    conn.execute_batch(&format!("BEGIN IMMEDIATE; {schema} COMMIT;"))?;
    Ok(conn)
}

/// How many times [`again_if_schema_changed`] tries.
const SCHEMA_TRIES: usize = 50;

/// Runs `work` again while another connection's change of the schema makes
/// it fail. SQLite prepares a statement again by itself, but not one that
/// connects a virtual table (an FTS5 index, or a trigger that writes to one):
/// that fails with "vtable constructor failed" when the schema changes while
/// it is prepared, as when another store creates its tables. `work` must
/// leave nothing half done when it fails (one transaction).
pub(crate) fn again_if_schema_changed<T>(mut work: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let mut tries = 1;
    loop {
        match work() {
            Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::SchemaChanged && tries < SCHEMA_TRIES => {
                // Changes come in bursts (a store's tables): let one pass.
                std::thread::sleep(Duration::from_millis(tries as u64));
                tries += 1;
            }
            done => return done,
        }
    }
}

/// A random id: `prefix` and 24 hex digits.
pub(crate) fn random_id(prefix: &str) -> Result<String, String> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for an id: {e}"))?;
    Ok(format!(
        "{prefix}{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A connection reading a new database keeps it from being converted
    /// to WAL: the conversion waits for the read to end, then converts it.
    #[test]
    fn converting_to_wal_waits_for_a_reader_of_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let reader = Connection::open(&path).unwrap();
        reader
            .execute_batch("CREATE TABLE t (x); BEGIN; SELECT count(*) FROM t;")
            .unwrap();
        let converter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let conn = Connection::open(&path)?;
                conn.busy_timeout(BUSY_TIMEOUT)?;
                use_wal(&conn)
            })
        };
        std::thread::sleep(Duration::from_millis(300));
        assert!(!converter.is_finished(), "it waits while the reader reads");
        reader.execute_batch("COMMIT").unwrap();
        let converted = converter.join().unwrap();
        assert!(converted.is_ok(), "{converted:?}");
        let mode: String = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }
}
