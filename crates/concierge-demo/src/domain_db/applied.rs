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
