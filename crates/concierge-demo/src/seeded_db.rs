//! What the finance, HR and food domains share about their data: a SQLite
//! file named by an environment variable (else a default file in the working
//! directory), created and seeded with fictional data on first open, a fixed
//! clock for tests and demos, and a table of the idempotency keys of the
//! changes already applied, so a call retried after a crash changes nothing
//! twice.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Local, NaiveDateTime};
use concierge::ToolContext;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::Value;

const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// Formats a time as the domains store it (`2025-03-05 10:00:00`).
pub fn stored_time(t: NaiveDateTime) -> String {
    t.format(TIME_FORMAT).to_string()
}

/// Why a domain's database could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error(
        "The {what} database at {path} could not be used: {message}. Check that the file is writable, or set {env} to another path."
    )]
    Database {
        /// Which domain's database ("finance").
        what: &'static str,
        /// The path of the database.
        path: String,
        /// The variable that names another path.
        env: &'static str,
        /// What SQLite said.
        message: String,
    },
}

/// What a change came to: applied (recorded under its idempotency key) or
/// refused without changing anything (not recorded, so a retry looks again).
#[derive(Clone, Debug, PartialEq)]
pub enum Applied {
    /// The change was made; this is its result.
    Changed(Value),
    /// Nothing was changed; this sentence says why (an overdraft, an empty cart).
    Refused(String),
}

/// Fills a new database with its fictional rows, dated from the time given.
pub type Seed = fn(&Transaction<'_>, NaiveDateTime) -> rusqlite::Result<()>;

/// One domain's SQLite file: where it is, how it is made, and its clock.
#[derive(Clone, Debug)]
pub struct SeededDb {
    what: &'static str,
    env: &'static str,
    schema: &'static str,
    seed: Seed,
    path: PathBuf,
    now: Option<NaiveDateTime>,
}

const BOOKKEEPING: &str = "
CREATE TABLE IF NOT EXISTS applied_calls (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    result TEXT NOT NULL,
    applied_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

impl SeededDb {
    /// The database `what` ("finance") at `path`, made by `schema` and
    /// filled by `seed` on first use; `env` is the variable naming its path.
    pub fn new(what: &'static str, env: &'static str, schema: &'static str, seed: Seed, path: PathBuf) -> Self {
        Self {
            what,
            env,
            schema,
            seed,
            path,
            now: None,
        }
    }

    /// The path `env` names, else `default` in the working directory.
    pub fn path_from_env(env: &str, default: &str) -> PathBuf {
        std::env::var_os(env)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(default))
    }

    /// Dates everything at `now` instead of the clock (tests, demos).
    pub fn at(mut self, now: NaiveDateTime) -> Self {
        self.now = Some(now);
        self
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
            what: self.what,
            path: self.path.display().to_string(),
            env: self.env,
            message: e.to_string(),
        }
    }

    /// Opens the file, creating the tables and seeding them on first use.
    pub fn connect(&self) -> Result<Connection, StoreError> {
        let mut conn = Connection::open(&self.path).map_err(|e| self.error(e))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| self.error(e))?;
        conn.execute_batch(BOOKKEEPING).map_err(|e| self.error(e))?;
        conn.execute_batch(self.schema).map_err(|e| self.error(e))?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let seeded: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'seeded_at'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.error(e))?;
        if seeded.is_none() {
            let now = self.now();
            (self.seed)(&tx, now).map_err(|e| self.error(e))?;
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('seeded_at', ?1)",
                [stored_time(now)],
            )
            .map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))?;
        Ok(conn)
    }

    /// Runs `change` in one transaction, unless a change with `key` was
    /// applied already: then its recorded result is returned and nothing
    /// changes. An [`Applied::Changed`] result is recorded under `key` in the
    /// same transaction, so the change and its record commit together.
    pub fn apply<F>(&self, key: &str, tool: &str, change: F) -> Result<Applied, StoreError>
    where
        F: FnOnce(&Transaction<'_>, NaiveDateTime) -> Result<Applied, StoreError>,
    {
        let mut conn = self.connect()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let earlier: Option<String> = tx
            .query_row("SELECT result FROM applied_calls WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.error(e))?;
        if let Some(result) = earlier {
            let value = serde_json::from_str(&result).map_err(|e| self.error(e))?;
            return Ok(Applied::Changed(value));
        }
        let now = self.now();
        let applied = change(&tx, now)?;
        if let Applied::Changed(result) = &applied {
            tx.execute(
                "INSERT INTO applied_calls (key, tool, result, applied_at) VALUES (?1, ?2, ?3, ?4)",
                params![key, tool, result.to_string(), stored_time(now)],
            )
            .map_err(|e| self.error(e))?;
            tx.commit().map_err(|e| self.error(e))?;
        }
        Ok(applied)
    }

    /// How many changes have been applied (rows in the idempotency table).
    pub fn applied_count(&self) -> Result<i64, StoreError> {
        let conn = self.connect()?;
        conn.query_row("SELECT COUNT(*) FROM applied_calls", [], |r| r.get(0))
            .map_err(|e| self.error(e))
    }
}

/// Dollars as people write them: `$1,250.50` (from cents).
pub fn dollars(cents: i64) -> String {
    let whole = (cents.unsigned_abs() / 100).to_string();
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}${grouped}.{:02}", cents.unsigned_abs() % 100)
}

/// An amount of dollars as whole cents, if it is positive, finite and has
/// at most two decimals' worth of precision that matters.
pub fn cents(amount: f64) -> Option<i64> {
    if !amount.is_finite() || amount <= 0.0 || amount >= 1e13 {
        return None;
    }
    let cents = (amount * 100.0).round();
    ((amount * 100.0 - cents).abs() < 1e-6 && cents >= 1.0).then_some(cents as i64)
}

/// Declares a tool struct holding its domain's store, its spec (the doc
/// comment is the description, with the category, annotations and the
/// confirmation question given) and its call (the body runs on a blocking
/// thread with the store, the arguments and the context).
macro_rules! db_tool {
    (
        $(#[doc = $doc:literal])*
        $ty:ident, $name:literal, $store_ty:ty, $category:literal, $args:ty, $annotations:expr, $confirm:expr,
        |$store:ident, $a:ident, $cx:ident| $body:block
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug)]
        pub struct $ty {
            store: std::sync::Arc<$store_ty>,
        }

        impl $ty {
            /// The tool's name, as planners and models call it.
            pub const NAME: &'static str = $name;

            /// The tool over `store`.
            pub fn new(store: std::sync::Arc<$store_ty>) -> Self {
                Self { store }
            }

            /// The call's work, on a blocking thread.
            #[allow(unused_variables)]
            fn run($store: &$store_ty, $a: $args, $cx: concierge::ToolContext) -> Result<serde_json::Value, concierge::ToolError> $body
        }

        impl concierge::Tool for $ty {
            type Args = $args;

            fn spec(&self) -> concierge::ToolSpec {
                let spec = concierge::ToolSpec::new(
                    $name,
                    crate::toolkit::description(&[$($doc),*]),
                    concierge::tool::schema_for::<$args>(),
                )
                .category($category)
                .annotations($annotations);
                let confirm: Option<&str> = $confirm;
                match confirm {
                    Some(template) => spec.confirm(template),
                    None => spec,
                }
            }

            fn call(
                &self,
                args: Self::Args,
                cx: concierge::ToolContext,
            ) -> impl std::future::Future<Output = Result<serde_json::Value, concierge::ToolError>> + Send {
                let store = std::sync::Arc::clone(&self.store);
                async move { crate::toolkit::blocking(concat!("the ", $category, " database"), move || Self::run(&store, args, cx)).await }
            }
        }
    };
}
pub(crate) use db_tool;

/// Annotations of a tool that writes, deduplicated on its idempotency key;
/// `confirm` when the person approves each call first.
pub fn writes(confirm: bool) -> concierge::ToolAnnotations {
    concierge::ToolAnnotations {
        idempotent: true,
        requires_confirmation: confirm,
        ..concierge::ToolAnnotations::default()
    }
}

/// The answer of a change: its result, or the refusal as a failed call
/// whose message is the sentence (a retry looks again).
pub fn answer(applied: Result<Applied, StoreError>) -> Result<Value, concierge::ToolError> {
    match applied {
        Ok(Applied::Changed(value)) => Ok(value),
        Ok(Applied::Refused(why)) => Err(concierge::ToolError::failed(why)),
        Err(e) => Err(concierge::ToolError::failed(e.to_string())),
    }
}

/// A database failure as a failed call.
pub fn failed(e: StoreError) -> concierge::ToolError {
    concierge::ToolError::failed(e.to_string())
}

/// Whether the run's `user` ("jordan", "jordan.avery@example.com",
/// "C-1001", "Jordan Avery") names the person with this id, name and email.
pub fn names_person(user: &str, id: &str, name: &str, email: &str) -> bool {
    let user = user.trim().to_lowercase();
    let first = name.split_whitespace().next().unwrap_or(name).to_lowercase();
    let local = email.split('@').next().unwrap_or(email).to_lowercase();
    !user.is_empty()
        && (user == id.to_lowercase()
            || user == email.to_lowercase()
            || user == name.to_lowercase()
            || user == first
            || user == local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_and_cents() {
        assert_eq!(dollars(50_000), "$500.00");
        assert_eq!(dollars(125_050), "$1,250.50");
        assert_eq!(dollars(-2_005), "-$20.05");
        assert_eq!(dollars(7), "$0.07");
        assert_eq!(cents(500.0), Some(50_000));
        assert_eq!(cents(0.1 + 0.2), Some(30));
        assert_eq!(cents(1.005_5), None, "a fraction of a cent");
        assert_eq!(cents(0.0), None);
        assert_eq!(cents(-3.0), None);
        assert_eq!(cents(f64::NAN), None);
    }
}
