//! What every domain's data shares (the demo's tasks, CRM, travel, hint
//! game, finance, HR and food, and the orders server's): a SQLite file named
//! by an environment variable (else a default file in the working
//! directory), its tables created and seeded with fictional rows on first
//! open, a clock that tests and demos may fix, and the table of the
//! idempotency keys of the changes already applied, so a call retried after
//! a crash changes nothing twice ([`DomainDb::apply`]).
//!
//! A domain describes its file once ([`DbSpec`]); its store is a
//! [`Store`] of that domain, which adds the domain's own reads and changes.

mod applied;
mod store;
mod stored;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Local, NaiveDate, NaiveDateTime, NaiveTime};
use concierge::ToolContext;
use rusqlite::{Connection, OptionalExtension, Params, Row, Transaction, TransactionBehavior};

pub use applied::{Applied, Outcome};
pub use store::{Domain, Store};
pub use stored::{add_days, read_day, read_time, stored_day, stored_time};

/// Fills a new database with its fictional rows, dated from the time given.
pub type Seed = fn(&Transaction<'_>, NaiveDateTime) -> rusqlite::Result<()>;

/// What a domain's database is: how messages name it, where its file is,
/// its tables and how a new file is filled.
#[derive(Clone, Copy, Debug)]
pub struct DbSpec {
    /// The database as messages name it ("finance", "CRM", "task").
    what: &'static str,
    /// The environment variable naming the file (`CONCIERGE_FINANCE_DB`).
    env: &'static str,
    /// The file when `env` is not set, in the working directory (`finance.db`).
    default_file: &'static str,
    /// The domain's own tables (`CREATE TABLE IF NOT EXISTS ...`); the
    /// `applied_calls` table (and `meta`, for a seeded one) come with every file.
    schema: &'static str,
    /// How a new file is filled; `None` for a domain that starts empty.
    seeding: Option<Seeding>,
    /// The environment variable that pins "today" (`YYYY-MM-DD`, noon), if
    /// the domain reads one (the orders server's demos and tests).
    today_env: Option<&'static str>,
}

impl DbSpec {
    /// The database `what` with the tables `schema`, its file named by the
    /// variable `env`, else `default_file`; it starts empty, on the local clock.
    pub const fn new(what: &'static str, env: &'static str, default_file: &'static str, schema: &'static str) -> Self {
        Self {
            what,
            env,
            default_file,
            schema,
            seeding: None,
            today_env: None,
        }
    }

    /// The same, filled by `rows` on first open and marked by `mark`.
    pub const fn seeded(self, rows: Seed, mark: SeedMark) -> Self {
        Self {
            seeding: Some(Seeding { rows, mark }),
            ..self
        }
    }

    /// The same, with "today" pinned by the environment variable `env` when it is set.
    pub const fn today_from(self, env: &'static str) -> Self {
        Self {
            today_env: Some(env),
            ..self
        }
    }
}

/// How a new file is filled, and how it remembers it was (a row of `meta`,
/// so the rows are seeded once).
#[derive(Clone, Copy, Debug)]
struct Seeding {
    /// Inserts the fictional rows.
    rows: Seed,
    /// The row of `meta` that says the file was seeded.
    mark: SeedMark,
}

/// The row of `meta` that says a file was seeded. Each domain keeps the one
/// its files already have, so an existing file is not seeded again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedMark {
    /// `seeded_on`: the day (tasks, CRM, travel, orders).
    Day,
    /// `seeded_at`: the time (finance, HR, food).
    Time,
}

impl SeedMark {
    fn key(self) -> &'static str {
        match self {
            SeedMark::Day => "seeded_on",
            SeedMark::Time => "seeded_at",
        }
    }

    fn value(self, now: NaiveDateTime) -> String {
        match self {
            SeedMark::Day => stored_day(now.date()),
            SeedMark::Time => stored_time(now),
        }
    }
}

/// Why a domain's database could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error(
        "The {what} database at {path} could not be used: {message}. Check that the file is writable, or set {env} to another path."
    )]
    Database {
        /// Which database ("finance").
        what: &'static str,
        /// The path of the file.
        path: String,
        /// The variable that names another path.
        env: &'static str,
        /// What SQLite said.
        message: String,
    },
    /// A row held something this version cannot read.
    #[error(
        "The {what} database at {path} holds a row this version cannot read ({message}). Delete the file to start over with the demo data."
    )]
    Corrupt {
        /// Which database ("finance").
        what: &'static str,
        /// The path of the file.
        path: String,
        /// What was wrong.
        message: String,
    },
}

/// The path the environment variable `env` names (when set and not empty),
/// else `default` in the working directory.
pub fn path_from_env(env: &str, default: &str) -> PathBuf {
    std::env::var_os(env)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

/// Every row `sql` selects with `params`, each made by `row`.
pub fn rows<T, P: Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    row: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map(params, row)?;
    rows.collect()
}

/// The tables every file has: the changes applied (by idempotency key).
const APPLIED_CALLS: &str = "
CREATE TABLE IF NOT EXISTS applied_calls (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    result TEXT NOT NULL,
    applied_at TEXT NOT NULL
);
";

/// The table a seeded file remembers it was seeded in.
const META: &str = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

/// The environment variable that pins "today" (`YYYY-MM-DD`, noon) for
/// every domain: demos and evals that must read the same whatever the day.
pub const TODAY_ENV: &str = "CONCIERGE_TODAY";

/// Noon of `day`: the time a pinned day stands for.
pub fn noon(day: NaiveDate) -> NaiveDateTime {
    day.and_time(NaiveTime::from_hms_opt(12, 0, 0).unwrap_or(NaiveTime::MIN))
}

/// One domain's SQLite file: where it is, how it is made, and its clock.
#[derive(Clone, Debug)]
pub struct DomainDb {
    spec: DbSpec,
    path: PathBuf,
    now: Option<NaiveDateTime>,
}

impl DomainDb {
    /// The database `spec` describes, at `path` (created and seeded on first
    /// use), dated by the local clock, or by the day `spec.today_env` (else
    /// [`TODAY_ENV`]) pins.
    pub fn open(spec: DbSpec, path: impl Into<PathBuf>) -> Self {
        let pinned = spec
            .today_env
            .into_iter()
            .chain([TODAY_ENV])
            .find_map(|env| std::env::var(env).ok())
            .and_then(|day| NaiveDate::parse_from_str(day.trim(), "%Y-%m-%d").ok())
            .map(noon);
        Self {
            spec,
            path: path.into(),
            now: pinned,
        }
    }

    /// The database at the path `spec.env` names, else at `spec.default_file`
    /// in the working directory.
    pub fn from_env(spec: DbSpec) -> Self {
        Self::open(spec, path_from_env(spec.env, spec.default_file))
    }

    /// Fixes the clock at `now` (tests, demos): it dates the seed rows and
    /// the changes, and stands for the time the person asked.
    pub fn at(mut self, now: NaiveDateTime) -> Self {
        self.now = Some(now);
        self
    }

    /// The database as messages name it ("finance", "CRM").
    pub fn what(&self) -> &'static str {
        self.spec.what
    }

    /// The path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The time changes are dated with: the fixed clock, else the local one.
    pub fn now(&self) -> NaiveDateTime {
        self.now.unwrap_or_else(|| Local::now().naive_local())
    }

    /// The time the person asked, which relative dates ("next Friday")
    /// count from: the fixed clock when there is one, else when the run's
    /// message was accepted, in local time.
    pub fn asked_at(&self, cx: &ToolContext) -> NaiveDateTime {
        if let Some(fixed) = self.now {
            return fixed;
        }
        i64::try_from(cx.asked_at.0)
            .ok()
            .filter(|ms| *ms > 0)
            .and_then(DateTime::from_timestamp_millis)
            .map(|t| t.with_timezone(&Local).naive_local())
            .unwrap_or_else(|| self.now())
    }

    /// A [`StoreError`] for a failure of SQLite.
    pub fn error(&self, e: impl fmt::Display) -> StoreError {
        StoreError::Database {
            what: self.spec.what,
            path: self.path.display().to_string(),
            env: self.spec.env,
            message: e.to_string(),
        }
    }

    /// A [`StoreError`] for a row this version cannot read.
    pub fn corrupt(&self, message: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            what: self.spec.what,
            path: self.path.display().to_string(),
            message: message.into(),
        }
    }

    /// Runs `read` on the file, its SQLite failures as [`StoreError`]s.
    pub fn read<T>(&self, read: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let conn = self.connect()?;
        read(&conn).map_err(|e| self.error(e))
    }

    /// Every row `sql` selects with `params`, each read by `row` as SQLite
    /// gives it and made by `make`; a row `make` cannot read (it says why)
    /// is a [`StoreError::Corrupt`].
    pub fn select<R, T, P: Params>(
        &self,
        sql: &str,
        params: P,
        row: impl FnMut(&Row<'_>) -> rusqlite::Result<R>,
        make: impl FnMut(R) -> Result<T, String>,
    ) -> Result<Vec<T>, StoreError> {
        let read = self.read(|conn| rows(conn, sql, params, row))?;
        read.into_iter()
            .map(make)
            .collect::<Result<_, _>>()
            .map_err(|m| self.corrupt(m))
    }

    /// Opens the file, creating the tables and seeding them on first use.
    pub fn connect(&self) -> Result<Connection, StoreError> {
        let mut conn = Connection::open(&self.path).map_err(|e| self.error(e))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| self.error(e))?;
        conn.execute_batch(APPLIED_CALLS).map_err(|e| self.error(e))?;
        conn.execute_batch(self.spec.schema).map_err(|e| self.error(e))?;
        if let Some(seeding) = self.spec.seeding {
            conn.execute_batch(META).map_err(|e| self.error(e))?;
            self.seed_once(&mut conn, seeding)?;
        }
        Ok(conn)
    }

    /// Fills a new file, in one transaction with the row saying it was.
    fn seed_once(&self, conn: &mut Connection, seeding: Seeding) -> Result<(), StoreError> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let mark = seeding.mark.key();
        let seeded: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = ?1", [mark], |r| r.get(0))
            .optional()
            .map_err(|e| self.error(e))?;
        if seeded.is_none() {
            let now = self.now();
            (seeding.rows)(&tx, now).map_err(|e| self.error(e))?;
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                [mark.to_string(), seeding.mark.value(now)],
            )
            .map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(tx: &Transaction<'_>, now: NaiveDateTime) -> rusqlite::Result<()> {
        tx.execute("INSERT INTO cities (name) VALUES (?1)", [stored_day(now.date())])?;
        Ok(())
    }

    const CITIES: DbSpec = DbSpec::new(
        "city",
        "CONCIERGE_TEST_CITIES_DB",
        "cities.db",
        "CREATE TABLE IF NOT EXISTS cities (name TEXT NOT NULL);",
    )
    .seeded(seed, SeedMark::Day);

    fn tables(db: &DomainDb) -> Vec<String> {
        db.read(|conn| {
            rows(
                conn,
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
                [],
                |r| r.get(0),
            )
        })
        .unwrap()
    }

    #[test]
    fn a_file_is_seeded_once_and_says_so_in_meta() {
        let dir = tempfile::tempdir().unwrap();
        let now = NaiveDate::from_ymd_opt(2025, 3, 5)
            .unwrap()
            .and_hms_opt(10, 0, 0)
            .unwrap();
        let db = DomainDb::open(CITIES, dir.path().join("cities.db")).at(now);
        let cities =
            |db: &DomainDb| db.read(|conn| rows(conn, "SELECT name FROM cities", [], |r| r.get::<_, String>(0)));
        assert_eq!(cities(&db).unwrap(), ["2025-03-05"]);
        let later = DomainDb::open(CITIES, db.path()).at(now + chrono::Duration::days(1));
        assert_eq!(cities(&later).unwrap(), ["2025-03-05"], "seeded once");
        let mark =
            db.read(|conn| conn.query_row("SELECT key || '=' || value FROM meta", [], |r| r.get::<_, String>(0)));
        assert_eq!(mark.unwrap(), "seeded_on=2025-03-05");
        assert_eq!(tables(&db), ["applied_calls", "cities", "meta"]);
    }

    #[test]
    fn a_file_that_starts_empty_has_no_meta() {
        let dir = tempfile::tempdir().unwrap();
        let spec = DbSpec {
            seeding: None,
            ..CITIES
        };
        assert_eq!(
            tables(&DomainDb::open(spec, dir.path().join("c.db"))),
            ["applied_calls", "cities"]
        );
    }

    #[test]
    fn failures_name_the_database_its_path_and_its_variable() {
        let dir = tempfile::tempdir().unwrap();
        let db = DomainDb::open(CITIES, dir.path().join("missing").join("cities.db"));
        let error = db.connect().unwrap_err().to_string();
        assert!(
            error.starts_with("The city database at ") && error.contains("CONCIERGE_TEST_CITIES_DB"),
            "{error}"
        );
    }
}
