//! The task manager's data: a SQLite file of tasks, created and seeded with
//! fictional tasks on first use, and a table of the idempotency keys of the
//! changes already applied (so a retried call changes nothing twice).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use chrono::{Days, Local, NaiveDate, NaiveDateTime, NaiveTime};
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The environment variable naming the task database.
pub const DB_ENV: &str = "CONCIERGE_TASKS_DB";
/// The task database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "tasks.db";

const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Status {
    Todo,
    InProgress,
    Done,
}

/// How much a task matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Priority {
    Low,
    Medium,
    High,
}

impl Status {
    /// The name stored and shown (`todo`, `in_progress`, `done`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Todo => "todo",
            Status::InProgress => "in_progress",
            Status::Done => "done",
        }
    }
}

impl Priority {
    /// The name stored and shown (`low`, `medium`, `high`).
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Medium => "medium",
            Priority::High => "high",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Todo => "to do",
            Status::InProgress => "in progress",
            Status::Done => "done",
        })
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "todo" => Ok(Status::Todo),
            "in_progress" => Ok(Status::InProgress),
            "done" => Ok(Status::Done),
            other => Err(format!("unknown status {other:?}")),
        }
    }
}

impl FromStr for Priority {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "low" => Ok(Priority::Low),
            "medium" => Ok(Priority::Medium),
            "high" => Ok(Priority::High),
            other => Err(format!("unknown priority {other:?}")),
        }
    }
}

/// One task, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Task {
    /// Its number (`#3`).
    pub id: i64,
    /// What it is called.
    pub title: String,
    /// More detail (may be empty).
    pub description: String,
    /// Where it stands.
    pub status: Status,
    /// How much it matters.
    pub priority: Priority,
    /// When it is due, if ever.
    pub due: Option<NaiveDate>,
    /// Who does it, if anyone in particular.
    pub assignee: Option<String>,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// When it last changed.
    pub updated_at: NaiveDateTime,
}

impl Task {
    /// Whether it is due before `today` and not done.
    pub fn is_overdue(&self, today: NaiveDate) -> bool {
        self.status != Status::Done && self.due.is_some_and(|d| d < today)
    }

    /// One line for people: `#1 Fix login bug (high priority, due 2025-03-04, overdue, to do, Priya)`.
    pub fn line(&self, today: NaiveDate) -> String {
        let mut parts = vec![format!("{} priority", self.priority)];
        if let Some(due) = self.due {
            parts.push(format!("due {due}"));
            if self.is_overdue(today) {
                parts.push("overdue".into());
            }
        }
        parts.push(self.status.to_string());
        if let Some(who) = &self.assignee {
            parts.push(who.clone());
        }
        format!("#{} {} ({})", self.id, self.title, parts.join(", "))
    }
}

/// Why the task database could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error(
        "The task database at {path} could not be used: {message}. Check that the file is writable, or set {DB_ENV} to another path."
    )]
    Database {
        /// The path of the task database.
        path: String,
        /// What SQLite said.
        message: String,
    },
    /// A row held something this version does not know.
    #[error("The task database at {path} holds a task this version cannot read ({message}).")]
    Corrupt {
        /// The path of the task database.
        path: String,
        /// What was wrong.
        message: String,
    },
}

/// What a change came to: applied (recorded under its idempotency key) or
/// refused without changing anything (not recorded, so a retry looks again).
#[derive(Clone, Debug, PartialEq)]
pub enum Applied {
    /// The change was made; this is its result.
    Changed(Value),
    /// Nothing was changed; this is why (a choice to make, a task not found).
    Unchanged(Value),
}

/// The task database: a file path and the clock that dates changes.
#[derive(Clone, Debug)]
pub struct TaskStore {
    path: PathBuf,
    now: Option<NaiveDateTime>,
}

impl TaskStore {
    /// The database at `path` (created and seeded on first use), dated by the local clock.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            now: None,
        }
    }

    /// The database named by `CONCIERGE_TASKS_DB`, else `tasks.db` in the working directory.
    pub fn from_env() -> Self {
        let path = std::env::var_os(DB_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
        Self::open(path)
    }

    /// Dates everything at `now` instead of the local clock (tests, demos).
    pub fn at(mut self, now: NaiveDateTime) -> Self {
        self.now = Some(now);
        self
    }

    /// The path of the database this store uses.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The time changes are dated with.
    pub fn now(&self) -> NaiveDateTime {
        self.now.unwrap_or_else(|| Local::now().naive_local())
    }

    /// The day relative dates are resolved against.
    pub fn today(&self) -> NaiveDate {
        self.now().date()
    }

    fn db_error(&self, e: impl fmt::Display) -> StoreError {
        StoreError::Database {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    /// Opens the file, creating the tables and seeding the tasks on first use.
    fn connect(&self) -> Result<Connection, StoreError> {
        let mut conn = Connection::open(&self.path).map_err(|e| self.db_error(e))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| self.db_error(e))?;
        conn.execute_batch(SCHEMA).map_err(|e| self.db_error(e))?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_error(e))?;
        let seeded: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'seeded_on'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.db_error(e))?;
        if seeded.is_none() {
            seed(&tx, self.now()).map_err(|e| self.db_error(e))?;
        }
        tx.commit().map_err(|e| self.db_error(e))?;
        Ok(conn)
    }

    /// Every task, by number.
    pub fn tasks(&self) -> Result<Vec<Task>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare(&format!("SELECT {COLUMNS} FROM tasks ORDER BY id"))
            .map_err(|e| self.db_error(e))?;
        let rows = stmt.query_map([], read_row).map_err(|e| self.db_error(e))?;
        let mut tasks = Vec::new();
        for row in rows {
            let row = row.map_err(|e| self.db_error(e))?;
            tasks.push(row.into_task().map_err(|message| StoreError::Corrupt {
                path: self.path.display().to_string(),
                message,
            })?);
        }
        Ok(tasks)
    }

    /// One task by number.
    pub fn task(&self, id: i64) -> Result<Option<Task>, StoreError> {
        Ok(self.tasks()?.into_iter().find(|t| t.id == id))
    }

    /// Runs `change` in one transaction with the tasks as they stand, unless
    /// a change with `key` was applied already: then its recorded result is
    /// returned and nothing changes. A [`Applied::Changed`] result is recorded
    /// under `key` in the same transaction.
    pub fn apply<F>(&self, key: &str, tool: &str, change: F) -> Result<Applied, StoreError>
    where
        F: FnOnce(&Transaction<'_>, NaiveDateTime) -> Result<Applied, StoreError>,
    {
        let mut conn = self.connect()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_error(e))?;
        let earlier: Option<String> = tx
            .query_row("SELECT result FROM applied_calls WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.db_error(e))?;
        if let Some(result) = earlier {
            let value = serde_json::from_str(&result).map_err(|e| self.db_error(e))?;
            return Ok(Applied::Changed(value));
        }
        let now = self.now();
        let applied = change(&tx, now)?;
        if let Applied::Changed(result) = &applied {
            tx.execute(
                "INSERT INTO applied_calls (key, tool, result, applied_at) VALUES (?1, ?2, ?3, ?4)",
                params![key, tool, result.to_string(), now.format(TIME_FORMAT).to_string()],
            )
            .map_err(|e| self.db_error(e))?;
        }
        tx.commit().map_err(|e| self.db_error(e))?;
        Ok(applied)
    }

    /// How many changes have been applied (rows in the idempotency table).
    pub fn applied_count(&self) -> Result<i64, StoreError> {
        let conn = self.connect()?;
        conn.query_row("SELECT COUNT(*) FROM applied_calls", [], |r| r.get(0))
            .map_err(|e| self.db_error(e))
    }

    /// A [`StoreError`] for a failure inside [`apply`](Self::apply)'s closure.
    pub fn error(&self, e: impl fmt::Display) -> StoreError {
        self.db_error(e)
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('todo', 'in_progress', 'done')),
    priority TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high')),
    due TEXT,
    assignee TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS applied_calls (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    result TEXT NOT NULL,
    applied_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

const COLUMNS: &str = "id, title, description, status, priority, due, assignee, created_at, updated_at";

struct RawRow {
    id: i64,
    title: String,
    description: String,
    status: String,
    priority: String,
    due: Option<String>,
    assignee: Option<String>,
    created_at: String,
    updated_at: String,
}

fn read_row(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: row.get(0)?,
        title: row.get(1)?,
        description: row.get(2)?,
        status: row.get(3)?,
        priority: row.get(4)?,
        due: row.get(5)?,
        assignee: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    })
}

impl RawRow {
    fn into_task(self) -> Result<Task, String> {
        let time = |s: &str| NaiveDateTime::parse_from_str(s, TIME_FORMAT).map_err(|e| format!("time {s:?}: {e}"));
        Ok(Task {
            id: self.id,
            title: self.title,
            description: self.description,
            status: self.status.parse()?,
            priority: self.priority.parse()?,
            due: self
                .due
                .map(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").map_err(|e| format!("due date {d:?}: {e}")))
                .transpose()?,
            assignee: self.assignee,
            created_at: time(&self.created_at)?,
            updated_at: time(&self.updated_at)?,
        })
    }
}

/// Formats a time as stored.
pub fn stored_time(t: NaiveDateTime) -> String {
    t.format(TIME_FORMAT).to_string()
}

/// A seed task: title, description, status, priority, due (days from the
/// seeding day), assignee, created and updated (days before it).
type SeedTask = (
    &'static str,
    &'static str,
    Status,
    Priority,
    Option<i64>,
    Option<&'static str>,
    u64,
    u64,
);

/// The fictional tasks a new database starts with, dated relative to the day it is created.
const SEED: &[SeedTask] = &[
    (
        "Fix login bug",
        "Safari users are logged out right after a password reset.",
        Status::Todo,
        Priority::High,
        Some(-1),
        Some("Priya"),
        10,
        9,
    ),
    (
        "Review cloud code for Yury",
        "Yury's pull request moves the upload workers to the cloud functions.",
        Status::InProgress,
        Priority::Medium,
        Some(2),
        Some("Sam"),
        14,
        8,
    ),
    (
        "Write release notes for 2.4",
        "Summarise the new sharing options and the fixed sync issues.",
        Status::Todo,
        Priority::Medium,
        Some(5),
        None,
        3,
        3,
    ),
    (
        "Update the onboarding guide",
        "The screenshots still show the old navigation bar.",
        Status::Todo,
        Priority::Low,
        None,
        None,
        30,
        21,
    ),
    (
        "Fix logout button alignment",
        "The logout button overlaps the avatar on narrow screens.",
        Status::Todo,
        Priority::Low,
        Some(7),
        Some("Priya"),
        2,
        2,
    ),
    (
        "Plan the team offsite",
        "Venue booked; agenda shared with the team.",
        Status::Done,
        Priority::Medium,
        Some(-5),
        Some("Alex"),
        20,
        6,
    ),
    (
        "Renew the TLS certificate",
        "The certificate for api.example.invalid expires at the end of the week.",
        Status::Todo,
        Priority::High,
        Some(1),
        Some("Sam"),
        4,
        1,
    ),
    (
        "Book flights for the conference",
        "Two seats to Lisbon, arriving the day before the talks.",
        Status::Todo,
        Priority::Medium,
        Some(10),
        None,
        15,
        12,
    ),
];

fn seed(tx: &Transaction<'_>, now: NaiveDateTime) -> rusqlite::Result<()> {
    let today = now.date();
    let at = |days_ago: u64, hour: u32| {
        let day = today.checked_sub_days(Days::new(days_ago)).unwrap_or(today);
        stored_time(day.and_time(NaiveTime::from_hms_opt(hour, 0, 0).unwrap_or_default()))
    };
    let due = |offset: i64| {
        let date = if offset < 0 {
            today.checked_sub_days(Days::new(offset.unsigned_abs()))
        } else {
            today.checked_add_days(Days::new(offset.unsigned_abs()))
        };
        date.unwrap_or(today).format("%Y-%m-%d").to_string()
    };
    for (title, description, status, priority, due_in, assignee, created, updated) in SEED {
        tx.execute(
            &format!("INSERT INTO tasks ({COLUMNS}) VALUES (NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
            params![
                title,
                description,
                status.as_str(),
                priority.as_str(),
                due_in.map(due),
                assignee,
                at(*created, 9),
                at(*updated, 16),
            ],
        )?;
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('seeded_on', ?1)",
        [today.format("%Y-%m-%d").to_string()],
    )?;
    Ok(())
}
