//! The task manager's data: a SQLite file of tasks, created and seeded with
//! fictional tasks on first use (see [`crate::domain_db`] for what every
//! domain's file shares).

use std::fmt;
use std::str::FromStr;

use chrono::{Days, NaiveDate, NaiveDateTime, NaiveTime};
use rusqlite::{Row, Transaction, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain_db::{
    DbSpec, Domain, SeedMark, Store, StoreError, add_days, read_day, read_time, rows, stored_day, stored_time,
};

/// The environment variable naming the task database.
pub const DB_ENV: &str = "CONCIERGE_TASKS_DB";
/// The task database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "tasks.db";

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

/// The task manager, as a [`Store`] knows it: its database.
#[derive(Clone, Copy, Debug)]
pub enum Tasks {}

impl Domain for Tasks {
    const DB: DbSpec = DbSpec::new("task", DB_ENV, DEFAULT_DB, SCHEMA).seeded(seed, SeedMark::Day);
}

/// The task database.
pub type TaskStore = Store<Tasks>;

impl TaskStore {
    /// The day relative dates are resolved against.
    pub fn today(&self) -> NaiveDate {
        self.db().now().date()
    }

    /// Every task, by number.
    pub fn tasks(&self) -> Result<Vec<Task>, StoreError> {
        let rows = self
            .db()
            .read(|conn| rows(conn, &format!("SELECT {COLUMNS} FROM tasks ORDER BY id"), [], read_row))?;
        rows.into_iter()
            .map(|row| row.into_task().map_err(|message| self.db().corrupt(message)))
            .collect()
    }

    /// One task by number.
    pub fn task(&self, id: i64) -> Result<Option<Task>, StoreError> {
        Ok(self.tasks()?.into_iter().find(|t| t.id == id))
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
        Ok(Task {
            id: self.id,
            title: self.title,
            description: self.description,
            status: self.status.parse()?,
            priority: self.priority.parse()?,
            due: self.due.as_deref().map(read_day).transpose()?,
            assignee: self.assignee,
            created_at: read_time(&self.created_at)?,
            updated_at: read_time(&self.updated_at)?,
        })
    }
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
    let due = |offset: i64| stored_day(add_days(today, offset));
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
    Ok(())
}
