//! Runs at a time or on a cron expression: "remind me next Tuesday", "every
//! weekday at 9, summarise my inbox".
//!
//! A [`Schedule`] runs an agent with a message in a session, for one person
//! of one tenant (the same [`MemoryOwner`] as memories): once at a time
//! ([`When::At`]) or on a cron expression ([`When::Cron`], five fields,
//! in UTC). Schedules are durable: they live in the runtime's database
//! ([`ScheduleStore`]), and a runtime fires those that are due
//! ([`RuntimeBuilder::fire_schedules`](crate::RuntimeBuilder::fire_schedules)).
//! Several processes on one database take turns: one holds a lease and
//! fires; if it dies, another takes over within the lease.
//!
//! Each firing starts a run whose id is made from the schedule and the time
//! it was due, so a firing repeated after a crash finds its run already
//! there and starts nothing: a schedule never fires twice for one time.
//! After downtime, a schedule that missed its time runs once
//! ([`CatchUp::Once`], the default) or waits for its next time
//! ([`CatchUp::Skip`]).
//!
//! ```
//! use concierge::memory::MemoryOwner;
//! use concierge::schedule::{NewSchedule, ScheduleStore, When};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), concierge::schedule::ScheduleError> {
//! let store = ScheduleStore::in_memory()?;
//! let ana = MemoryOwner::new("acme", "ana");
//! let daily = NewSchedule::new(ana.clone(), "Summarise my inbox", When::cron("0 9 * * 1-5")?);
//! let schedule = store.add(daily).await?;
//! assert!(schedule.next_at.is_some());
//! assert_eq!(store.list(&ana).await?.len(), 1);
//! # Ok(()) }
//! ```

mod store;
mod when;

use concierge_core::Timestamp;
use serde::{Deserialize, Serialize};

use crate::memory::MemoryOwner;

pub use store::ScheduleStore;
pub(crate) use store::{Fired, SCHEDULE_TABLES};
pub use when::{CRON_PATTERN, When, rfc3339, show_time};

/// The longest message a schedule sends, in characters.
pub const MAX_SCHEDULE_MESSAGE_CHARS: usize = 4_000;

/// After downtime, what a schedule that missed its time does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Run once now for every time missed, then keep to the schedule.
    #[default]
    Once,
    /// Run nothing for the times missed (more than a minute late); wait for the next.
    Skip,
}

/// A schedule to add.
#[derive(Clone, Debug, PartialEq)]
pub struct NewSchedule {
    /// Who it acts for: its runs carry this tenant and user.
    pub owner: MemoryOwner,
    /// The session its runs go to; `None`: a new session of its own.
    pub session: Option<String>,
    /// The agent that takes each run; `None`: the session's current agent
    /// (the default agent for a new session).
    pub agent: Option<String>,
    /// The message each run starts with.
    pub message: String,
    /// When it runs.
    pub when: When,
    /// What it does after downtime.
    pub catch_up: CatchUp,
    /// A key that makes adding idempotent: adding again with the same key
    /// (a retried tool call) returns the first schedule.
    pub key: Option<String>,
}

impl NewSchedule {
    /// A schedule that sends `message` for `owner` `when`, in a new session.
    pub fn new(owner: MemoryOwner, message: impl Into<String>, when: When) -> Self {
        Self {
            owner,
            session: None,
            agent: None,
            message: message.into(),
            when,
            catch_up: CatchUp::default(),
            key: None,
        }
    }

    /// Its runs go to `session`.
    pub fn session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Its runs go to `agent`.
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// What it does after downtime.
    pub fn catch_up(mut self, catch_up: CatchUp) -> Self {
        self.catch_up = catch_up;
        self
    }

    /// Adding again with `key` returns the first schedule.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

/// A durable schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Its id (random), to pause or delete it by.
    pub id: String,
    /// The tenant it acts for (`None`: a runtime without tenants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The person it acts for (empty: the deployment's one person).
    pub user: String,
    /// The session its runs go to.
    pub session: String,
    /// The agent that takes each run (`None`: the session's current agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The message each run starts with.
    pub message: String,
    /// When it runs.
    pub when: When,
    /// What it does after downtime.
    pub catch_up: CatchUp,
    /// Whether it is paused (it fires nothing until resumed).
    pub paused: bool,
    /// When it runs next, in milliseconds since the Unix epoch; `None`:
    /// never again (a one-time schedule that ran).
    pub next_at: Option<Timestamp>,
    /// When it last ran (the time it was due).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<Timestamp>,
    /// How many runs it started.
    pub runs: u64,
    /// Why its last attempt did not start a run, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When it was added.
    pub created_at: Timestamp,
    /// How many attempts in a row failed to start its run (5 pause it).
    #[serde(default)]
    pub failures: u32,
}

impl Schedule {
    /// The person it acts for.
    pub fn owner(&self) -> MemoryOwner {
        MemoryOwner::of(self.tenant.as_deref(), self.user.clone())
    }
}

/// What went wrong with a schedule.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// No message to send.
    #[error("a schedule needs a message to send: the message is empty")]
    EmptyMessage,
    /// The message is longer than [`MAX_SCHEDULE_MESSAGE_CHARS`].
    #[error("a scheduled message holds at most {limit} characters; this one has {chars}")]
    MessageTooLong {
        /// Its length in characters.
        chars: usize,
        /// The limit.
        limit: usize,
    },
    /// The cron expression does not parse.
    #[error(
        "'{expression}' is not a cron expression ({problem}): use five fields, minute hour day-of-month month \
         day-of-week, e.g. '0 9 * * 1-5' for 9:00 UTC on weekdays"
    )]
    BadCron {
        /// The expression.
        expression: String,
        /// What is wrong, in the parser's words.
        problem: String,
    },
    /// A cron expression that never matches.
    #[error("'{0}' never comes round: no time matches it")]
    NeverDue(String),
    /// A time that does not parse.
    #[error("'{0}' is not a time: give it as RFC 3339, e.g. 2026-12-01T09:00:00Z or 2026-12-01T09:00:00+01:00")]
    BadTime(String),
    /// The store failed.
    #[error("the schedule store failed: {0}")]
    Storage(String),
}

impl From<rusqlite::Error> for ScheduleError {
    fn from(error: rusqlite::Error) -> Self {
        ScheduleError::Storage(error.to_string())
    }
}
