//! A tool call's change applied once per idempotency key: the change and
//! the record of its result commit together, and a repeated call (a retry
//! after a crash, a replay) gets the recorded result back and changes
//! nothing.

use chrono::NaiveDateTime;
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::Value;

use super::{DomainDb, StoreError, stored_time};

/// What a change came to: made (its result recorded under the call's key)
/// or not made (not recorded, so a retry looks again). `R` says why nothing
/// changed: a sentence (an overdraft, an empty cart, an order that cannot
/// move) or an answer (a choice to make, a task not found).
#[derive(Clone, Debug, PartialEq)]
pub enum Applied<R = String> {
    /// The change was made (now or by an earlier call with the same key);
    /// this is its result.
    Changed(Value),
    /// Nothing was changed; this is why.
    Unchanged(R),
}

/// What [`DomainDb::apply`] records of a change, and gives back to a
/// repeated call.
pub trait Outcome: Sized {
    /// The result to record under the call's key, when the change was made;
    /// `None` leaves the database as it was.
    fn recorded(&self) -> Option<&Value>;

    /// The outcome of a repeated call: the result recorded by the first.
    fn replayed(result: Value) -> Self;
}

/// A change that always applies: its result.
impl Outcome for Value {
    fn recorded(&self) -> Option<&Value> {
        Some(self)
    }

    fn replayed(result: Value) -> Self {
        result
    }
}

impl<R> Outcome for Applied<R> {
    fn recorded(&self) -> Option<&Value> {
        match self {
            Applied::Changed(result) => Some(result),
            Applied::Unchanged(_) => None,
        }
    }

    fn replayed(result: Value) -> Self {
        Applied::Changed(result)
    }
}

impl DomainDb {
    /// Runs `change` in one transaction, dated now, unless a call with `key`
    /// was applied already: then its recorded result comes back and nothing
    /// changes. A result to record ([`Outcome::recorded`]) is recorded under
    /// `key` and `tool` in the same transaction, so the change and its record
    /// commit together; otherwise the transaction is dropped. Without a key
    /// (a caller that sent none) the change runs and nothing is recorded.
    pub fn apply<'k, T, F>(&self, key: impl Into<Option<&'k str>>, tool: &str, change: F) -> Result<T, StoreError>
    where
        T: Outcome,
        F: FnOnce(&Transaction<'_>, NaiveDateTime) -> Result<T, StoreError>,
    {
        let key = key.into();
        let mut conn = self.connect()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        if let Some(key) = key {
            let earlier: Option<String> = tx
                .query_row("SELECT result FROM applied_calls WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .map_err(|e| self.error(e))?;
            if let Some(result) = earlier {
                let value = serde_json::from_str(&result).map_err(|e| self.corrupt(e.to_string()))?;
                return Ok(T::replayed(value));
            }
        }
        let now = self.now();
        let outcome = change(&tx, now)?;
        let Some(result) = outcome.recorded() else {
            return Ok(outcome);
        };
        if let Some(key) = key {
            tx.execute(
                "INSERT INTO applied_calls (key, tool, result, applied_at) VALUES (?1, ?2, ?3, ?4)",
                params![key, tool, result.to_string(), stored_time(now)],
            )
            .map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))?;
        Ok(outcome)
    }

    /// How many changes have been applied (rows in the idempotency table).
    pub fn applied_count(&self) -> Result<i64, StoreError> {
        let conn = self.connect()?;
        conn.query_row("SELECT COUNT(*) FROM applied_calls", [], |r| r.get(0))
            .map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;
    use serde_json::json;

    use super::*;
    use crate::domain_db::DbSpec;

    const NOTES: DbSpec = DbSpec::new(
        "notes",
        "CONCIERGE_TEST_NOTES_DB",
        "notes.db",
        "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);",
    );

    fn db(dir: &tempfile::TempDir) -> DomainDb {
        let now = NaiveDate::from_ymd_opt(2025, 3, 5)
            .unwrap()
            .and_hms_opt(10, 0, 0)
            .unwrap();
        DomainDb::open(NOTES, dir.path().join("notes.db")).at(now)
    }

    fn notes(db: &DomainDb) -> i64 {
        db.read(|conn| conn.query_row("SELECT COUNT(*) FROM notes", [], |r| r.get(0)))
            .unwrap()
    }

    /// Adds a note, or refuses an empty one.
    fn add<'k>(db: &DomainDb, key: impl Into<Option<&'k str>>, text: &str) -> Applied {
        db.apply(key, "add_note", |tx, now| {
            tx.execute("INSERT INTO notes (text) VALUES (?1)", [text])
                .map_err(|e| db.error(e))?;
            if text.is_empty() {
                return Ok(Applied::Unchanged("A note needs words.".to_string()));
            }
            Ok(Applied::Changed(
                json!({"id": tx.last_insert_rowid(), "at": stored_time(now)}),
            ))
        })
        .unwrap()
    }

    #[test]
    fn a_change_is_applied_once_per_key_and_a_repeat_gets_its_result() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir);
        let first = add(&db, "k1", "Likes golf");
        assert_eq!(first, Applied::Changed(json!({"id": 1, "at": "2025-03-05 10:00:00"})));
        assert_eq!(
            add(&db, "k1", "Likes tennis"),
            first,
            "the recorded result, nothing changed"
        );
        assert_eq!(notes(&db), 1);
        add(&db, "k2", "Likes tennis");
        assert_eq!((notes(&db), db.applied_count().unwrap()), (2, 2));
    }

    #[test]
    fn nothing_changed_is_not_recorded_and_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir);
        assert_eq!(add(&db, "k1", ""), Applied::Unchanged("A note needs words.".into()));
        assert_eq!(
            (notes(&db), db.applied_count().unwrap()),
            (0, 0),
            "its insert rolled back"
        );
        assert!(
            matches!(add(&db, "k1", "Likes golf"), Applied::Changed(_)),
            "a retry looks again"
        );
    }

    #[test]
    fn without_a_key_a_change_runs_every_time_and_is_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir);
        add(&db, None, "Likes golf");
        add(&db, None, "Likes golf");
        assert_eq!((notes(&db), db.applied_count().unwrap()), (2, 0));
    }

    #[test]
    fn a_change_that_always_applies_is_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(&dir);
        let hint = |n: i64| db.apply("k1", "give_hint", |_, _| Ok(json!({"hint": n}))).unwrap();
        assert_eq!(hint(1), json!({"hint": 1}));
        assert_eq!(hint(2), json!({"hint": 1}));
    }
}
