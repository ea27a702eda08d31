//! The schedule store: a SQLite table of schedules and a lease that says
//! which process fires them.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use concierge_core::Timestamp;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::{CatchUp, MAX_SCHEDULE_MESSAGE_CHARS, NewSchedule, Schedule, ScheduleError, When};
use crate::memory::MemoryOwner;
use crate::side_db::{SideDb, random_id};

/// The tables the store adds to a database.
pub(crate) const SCHEDULE_TABLES: &[&str] = &["schedules", "schedule_lease"];

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS schedules (
    id INTEGER PRIMARY KEY,
    schedule_id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    user TEXT NOT NULL,
    session TEXT NOT NULL,
    agent TEXT,
    message TEXT NOT NULL,
    at INTEGER,
    cron TEXT,
    catch_up TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER,
    retry_at INTEGER,
    failures INTEGER NOT NULL DEFAULT 0,
    last_run_at INTEGER,
    runs INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at INTEGER NOT NULL,
    key TEXT
);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_at) WHERE paused = 0 AND next_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS schedules_next ON schedules (MAX(next_at, COALESCE(retry_at, 0)))
    WHERE paused = 0 AND next_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS schedules_by_owner ON schedules (tenant, user, id);
CREATE UNIQUE INDEX IF NOT EXISTS schedules_by_key ON schedules (tenant, user, key) WHERE key IS NOT NULL;
CREATE TABLE IF NOT EXISTS schedule_lease (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT NOT NULL,
    until INTEGER NOT NULL
);
";

/// When the next schedule is due (a retry's time if later): read from the
/// `schedules_next` index, which holds that very expression, so the poll
/// every second reads one entry however many schedules there are.
const NEXT_DUE: &str = "SELECT MIN(MAX(next_at, COALESCE(retry_at, 0))) FROM schedules
                        WHERE paused = 0 AND next_at IS NOT NULL";

const SELECT: &str = "SELECT schedule_id, tenant, user, session, agent, message, at, cron, catch_up, paused, \
                      next_at, last_run_at, runs, last_error, created_at, failures FROM schedules";

/// What became of one due schedule, recorded with the others of its batch.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fired {
    /// Its run for `slot` started (or had started before): it moves on to `next`.
    Ran {
        id: String,
        slot: Timestamp,
        next: Option<Timestamp>,
    },
    /// It missed `slot` by more than its catch-up allows: it moves on to `next`.
    Skipped {
        id: String,
        slot: Timestamp,
        next: Option<Timestamp>,
    },
    /// Its session had a run in progress: it tries again at `retry_at`.
    Busy { id: String, retry_at: Timestamp },
    /// Its run could not start: it tries again at `retry_at`, or is paused
    /// after too many failures.
    Failed {
        id: String,
        error: String,
        retry_at: Timestamp,
        pause: bool,
    },
}

/// The schedules of a runtime, in SQLite.
///
/// Cheap to clone (one shared connection); every call runs on tokio's
/// blocking pool.
#[derive(Clone)]
pub struct ScheduleStore {
    db: SideDb,
    /// Told when a schedule is added or resumed (see [`ScheduleStore::on_change`]).
    changed: Arc<OnceLock<Arc<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for ScheduleStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleStore").field("path", &self.db.path()).finish()
    }
}

impl ScheduleStore {
    /// The store in the SQLite database at `path` (created if missing; the
    /// runtime's own database file when the embedded engine runs on SQLite).
    pub fn open(path: &Path) -> Result<Self, ScheduleError> {
        Ok(Self {
            db: SideDb::open(path, SCHEMA)?,
            changed: Arc::default(),
        })
    }

    /// The store at `path`, opened when first used.
    pub(crate) fn at(path: &Path) -> Self {
        Self {
            db: SideDb::at(path, SCHEMA),
            changed: Arc::default(),
        }
    }

    /// A store that lives as long as the process (for in-memory runtimes and tests).
    pub fn in_memory() -> Result<Self, ScheduleError> {
        Ok(Self {
            db: SideDb::in_memory(SCHEMA)?,
            changed: Arc::default(),
        })
    }

    /// Calls `hook` after a schedule is added or resumed, through this store
    /// or any clone of it (once set, for good): an engine that keeps the
    /// time of schedules looks again at when the next one is due.
    pub fn on_change(&self, hook: impl Fn() + Send + Sync + 'static) {
        let _ = self.changed.set(Arc::new(hook));
    }

    fn tell_changed(&self) {
        if let Some(hook) = self.changed.get() {
            hook();
        }
    }

    async fn with_conn<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, ScheduleError> + Send + 'static,
    ) -> Result<T, ScheduleError> {
        self.db.run(ScheduleError::Storage, work).await
    }

    /// Adds a schedule (checked: a message, a time to come, a cron
    /// expression that parses). With [`NewSchedule::key`] set, the schedule
    /// already added under that key is returned instead.
    pub async fn add(&self, new: NewSchedule) -> Result<Schedule, ScheduleError> {
        let message = concierge_core::trim_blank(&new.message).to_owned();
        if message.is_empty() {
            return Err(ScheduleError::EmptyMessage);
        }
        let chars = message.chars().count();
        if chars > MAX_SCHEDULE_MESSAGE_CHARS {
            return Err(ScheduleError::MessageTooLong {
                chars,
                limit: MAX_SCHEDULE_MESSAGE_CHARS,
            });
        }
        let now = crate::clock::now();
        let next_at = new.when.first(now)?;
        let id = random_id("sch_").map_err(ScheduleError::Storage)?;
        let session = match new.session {
            Some(session) => session,
            // In the tenant's id space, as the server names its sessions.
            None => {
                let local = random_id("s-").map_err(ScheduleError::Storage)?;
                concierge_core::SessionId::in_tenant(new.owner.tenant.as_deref(), &local).to_string()
            }
        };
        let owner = new.owner;
        let (at, cron) = match &new.when {
            When::At(at) => (Some(millis(*at)), None),
            When::Cron(expression) => (None, Some(expression.clone())),
        };
        let added = self
            .with_conn(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                if let Some(key) = &new.key {
                    let found = tx
                        .query_row(
                            &format!("{SELECT} WHERE tenant = ?1 AND user = ?2 AND key = ?3"),
                            params![owner.tenant_key(), owner.user, key],
                            row_to_schedule,
                        )
                        .optional()?;
                    if let Some(found) = found {
                        return Ok(found);
                    }
                }
                tx.execute(
                    "INSERT INTO schedules (schedule_id, tenant, user, session, agent, message, at, cron, catch_up,
                                        next_at, created_at, key)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                    params![
                        id,
                        owner.tenant_key(),
                        owner.user,
                        session,
                        new.agent,
                        message,
                        at,
                        cron,
                        catch_up_name(new.catch_up),
                        millis(next_at),
                        millis(now),
                        new.key
                    ],
                )?;
                let added = tx.query_row(
                    &format!("{SELECT} WHERE schedule_id = ?1"),
                    params![id],
                    row_to_schedule,
                )?;
                tx.commit()?;
                Ok(added)
            })
            .await;
        if added.is_ok() {
            self.tell_changed();
        }
        added
    }

    /// The schedules of `owner`, oldest first.
    pub async fn list(&self, owner: &MemoryOwner) -> Result<Vec<Schedule>, ScheduleError> {
        let owner = owner.clone();
        self.with_conn(move |conn| {
            let mut statement =
                conn.prepare_cached(&format!("{SELECT} WHERE tenant = ?1 AND user = ?2 ORDER BY id"))?;
            let rows = statement.query_map(params![owner.tenant_key(), owner.user], row_to_schedule)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// One schedule of `owner`; `None` if `owner` has none by that id.
    pub async fn get(&self, owner: &MemoryOwner, id: &str) -> Result<Option<Schedule>, ScheduleError> {
        let owner = owner.clone();
        let id = id.to_owned();
        self.with_conn(move |conn| Ok(find(conn, &owner, &id)?)).await
    }

    /// Pauses (`true`) or resumes (`false`) a schedule of `owner`; `None`
    /// if `owner` has none by that id. A resumed cron schedule runs next at
    /// its next time from now (the times it was paused through are not made up).
    pub async fn set_paused(
        &self,
        owner: &MemoryOwner,
        id: &str,
        paused: bool,
    ) -> Result<Option<Schedule>, ScheduleError> {
        let owner = owner.clone();
        let id = id.to_owned();
        let now = crate::clock::now();
        let changed = self
            .with_conn(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let Some(found) = find(&tx, &owner, &id)? else {
                    return Ok(None);
                };
                let next_at = match (&found.when, paused) {
                    (When::Cron(_), false) => found.when.next_after(now).or(found.next_at),
                    _ => found.next_at,
                };
                tx.execute(
                    "UPDATE schedules SET paused = ?2, next_at = ?3, retry_at = NULL, failures = 0
                 WHERE schedule_id = ?1",
                    params![id, paused, next_at.map(millis)],
                )?;
                let changed = find(&tx, &owner, &id)?;
                tx.commit()?;
                Ok(changed)
            })
            .await;
        if !paused && matches!(changed, Ok(Some(_))) {
            self.tell_changed();
        }
        changed
    }

    /// Deletes a schedule of `owner`; `false` if `owner` has none by that id.
    pub async fn delete(&self, owner: &MemoryOwner, id: &str) -> Result<bool, ScheduleError> {
        let owner = owner.clone();
        let id = id.to_owned();
        self.with_conn(move |conn| {
            let n = conn.execute(
                "DELETE FROM schedules WHERE schedule_id = ?1 AND tenant = ?2 AND user = ?3",
                params![id, owner.tenant_key(), owner.user],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// Deletes every schedule of `owner`; returns how many went.
    pub async fn delete_all(&self, owner: &MemoryOwner) -> Result<usize, ScheduleError> {
        let owner = owner.clone();
        self.with_conn(move |conn| {
            Ok(conn.execute(
                "DELETE FROM schedules WHERE tenant = ?1 AND user = ?2",
                params![owner.tenant_key(), owner.user],
            )?)
        })
        .await
    }

    /// When the next schedule is due (paused ones aside), if any.
    pub(crate) async fn next_due(&self) -> Result<Option<Timestamp>, ScheduleError> {
        self.with_conn(|conn| {
            let next: Option<i64> = conn.query_row(NEXT_DUE, [], |row| row.get(0))?;
            Ok(next.map(stamp))
        })
        .await
    }

    /// Up to `limit` schedules due at `now`, the longest due first.
    pub(crate) async fn due(&self, now: Timestamp, limit: usize) -> Result<Vec<Schedule>, ScheduleError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(move |conn| {
            let mut statement = conn.prepare_cached(&format!(
                "{SELECT} WHERE paused = 0 AND next_at IS NOT NULL AND next_at <= ?1
                 AND (retry_at IS NULL OR retry_at <= ?1) ORDER BY next_at LIMIT ?2"
            ))?;
            let rows = statement.query_map(params![millis(now), limit], row_to_schedule)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// Records what became of a batch of due schedules, in one transaction.
    /// A schedule moves on from a slot only if it still waits for that slot,
    /// so two processes recording the same firing count it once.
    pub(crate) async fn record(&self, fired: Vec<Fired>) -> Result<(), ScheduleError> {
        if fired.is_empty() {
            return Ok(());
        }
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            for outcome in &fired {
                record_one(&tx, outcome)?;
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Takes or renews the lease to fire schedules for `holder` until
    /// `until`; `false` while another holder's lease runs.
    pub(crate) async fn lease(&self, holder: &str, now: Timestamp, until: Timestamp) -> Result<bool, ScheduleError> {
        let holder = holder.to_owned();
        self.with_conn(move |conn| {
            let n = conn.execute(
                "INSERT INTO schedule_lease (id, holder, until) VALUES (1, ?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, until = excluded.until
                 WHERE schedule_lease.holder = excluded.holder OR schedule_lease.until < ?3",
                params![holder, millis(until), millis(now)],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// Gives the lease up (a process that stops), so another takes it at once.
    pub(crate) async fn release(&self, holder: &str) -> Result<(), ScheduleError> {
        let holder = holder.to_owned();
        self.with_conn(move |conn| {
            conn.execute("DELETE FROM schedule_lease WHERE holder = ?1", params![holder])?;
            Ok(())
        })
        .await
    }
}

fn record_one(tx: &Transaction<'_>, outcome: &Fired) -> rusqlite::Result<usize> {
    match outcome {
        Fired::Ran { id, slot, next } => tx.execute(
            "UPDATE schedules SET next_at = ?3, last_run_at = ?2, runs = runs + 1, retry_at = NULL,
                                  failures = 0, last_error = NULL
             WHERE schedule_id = ?1 AND next_at = ?2",
            params![id, millis(*slot), next.map(millis)],
        ),
        Fired::Skipped { id, slot, next } => tx.execute(
            "UPDATE schedules SET next_at = ?3, retry_at = NULL, failures = 0, last_error = ?4
             WHERE schedule_id = ?1 AND next_at = ?2",
            params![
                id,
                millis(*slot),
                next.map(millis),
                format!(
                    "missed its time ({}) while no process was running; catch_up = \"skip\"",
                    super::when::show_time(*slot)
                )
            ],
        ),
        Fired::Busy { id, retry_at } => tx.execute(
            "UPDATE schedules SET retry_at = ?2 WHERE schedule_id = ?1",
            params![id, millis(*retry_at)],
        ),
        Fired::Failed {
            id,
            error,
            retry_at,
            pause,
        } => {
            let error = if *pause {
                format!("paused after failing again and again; the last time: {error}")
            } else {
                error.clone()
            };
            tx.execute(
                "UPDATE schedules SET retry_at = ?2, failures = failures + 1, last_error = ?3, paused = ?4
                 WHERE schedule_id = ?1",
                params![id, millis(*retry_at), error, pause],
            )
        }
    }
}

fn find(conn: &Connection, owner: &MemoryOwner, id: &str) -> rusqlite::Result<Option<Schedule>> {
    conn.query_row(
        &format!("{SELECT} WHERE schedule_id = ?1 AND tenant = ?2 AND user = ?3"),
        params![id, owner.tenant_key(), owner.user],
        row_to_schedule,
    )
    .optional()
}

fn row_to_schedule(row: &rusqlite::Row<'_>) -> rusqlite::Result<Schedule> {
    let tenant: String = row.get(1)?;
    let at: Option<i64> = row.get(6)?;
    let cron: Option<String> = row.get(7)?;
    let when = match (at, cron) {
        (_, Some(expression)) => When::Cron(expression),
        (at, None) => When::At(stamp(at.unwrap_or(0))),
    };
    let catch_up: String = row.get(8)?;
    Ok(Schedule {
        id: row.get(0)?,
        tenant: (!tenant.is_empty()).then_some(tenant),
        user: row.get(2)?,
        session: row.get(3)?,
        agent: row.get(4)?,
        message: row.get(5)?,
        when,
        catch_up: if catch_up == "skip" {
            CatchUp::Skip
        } else {
            CatchUp::Once
        },
        paused: row.get(9)?,
        next_at: row.get::<_, Option<i64>>(10)?.map(stamp),
        last_run_at: row.get::<_, Option<i64>>(11)?.map(stamp),
        runs: u64::try_from(row.get::<_, i64>(12)?).unwrap_or(0),
        last_error: row.get(13)?,
        created_at: stamp(row.get(14)?),
        failures: u32::try_from(row.get::<_, i64>(15)?).unwrap_or(u32::MAX),
    })
}

fn catch_up_name(catch_up: CatchUp) -> &'static str {
    match catch_up {
        CatchUp::Once => "once",
        CatchUp::Skip => "skip",
    }
}

fn millis(at: Timestamp) -> i64 {
    i64::try_from(at.0).unwrap_or(i64::MAX)
}

fn stamp(millis: i64) -> Timestamp {
    Timestamp(u64::try_from(millis).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ana() -> MemoryOwner {
        MemoryOwner::new("acme", "ana")
    }

    #[tokio::test]
    async fn schedules_are_their_owners_and_keys_make_adding_idempotent() {
        let store = ScheduleStore::in_memory().unwrap();
        let daily = NewSchedule::new(ana(), "Summarise my inbox", When::cron("0 9 * * *").unwrap()).key("call-1");
        let first = store.add(daily.clone()).await.unwrap();
        assert_eq!(store.add(daily).await.unwrap(), first, "the same key adds nothing");
        assert!(first.id.starts_with("sch_"));
        assert!(
            first.session.starts_with("acme"),
            "a new session is in the tenant's id space: {}",
            first.session
        );
        let other = MemoryOwner::new("globex", "ana");
        assert!(store.list(&other).await.unwrap().is_empty());
        assert!(store.get(&other, &first.id).await.unwrap().is_none());
        assert!(!store.delete(&other, &first.id).await.unwrap());
        assert!(store.set_paused(&other, &first.id, true).await.unwrap().is_none());
        let paused = store.set_paused(&ana(), &first.id, true).await.unwrap().unwrap();
        assert!(paused.paused);
        assert!(
            store.due(Timestamp(u64::MAX / 2), 10).await.unwrap().is_empty(),
            "paused is never due"
        );
        assert!(store.delete(&ana(), &first.id).await.unwrap());
        assert!(store.list(&ana()).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn when_the_next_is_due_is_read_from_its_index() {
        let store = ScheduleStore::in_memory().unwrap();
        let plan: Vec<String> = store
            .with_conn(|conn| {
                let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {NEXT_DUE}"))?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(3))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .await
            .unwrap();
        // Without it, every active schedule is read at each poll.
        assert!(plan.iter().any(|step| step.contains("schedules_next")), "{plan:?}");
        let soon = store
            .add(NewSchedule::new(ana(), "soon", When::at(Timestamp(4_000_000_000_000))))
            .await
            .unwrap();
        store
            .add(NewSchedule::new(ana(), "later", When::at(Timestamp(5_000_000_000_000))))
            .await
            .unwrap();
        assert_eq!(store.next_due().await.unwrap(), Some(Timestamp(4_000_000_000_000)));
        // A retry later than its time moves it.
        store
            .record(vec![Fired::Busy {
                id: soon.id.clone(),
                retry_at: Timestamp(6_000_000_000_000),
            }])
            .await
            .unwrap();
        assert_eq!(store.next_due().await.unwrap(), Some(Timestamp(5_000_000_000_000)));
    }

    #[tokio::test]
    async fn empty_or_long_messages_are_refused() {
        let store = ScheduleStore::in_memory().unwrap();
        let when = When::cron("* * * * *").unwrap();
        assert!(matches!(
            store.add(NewSchedule::new(ana(), "  ", when.clone())).await,
            Err(ScheduleError::EmptyMessage)
        ));
        let long = "x".repeat(MAX_SCHEDULE_MESSAGE_CHARS + 1);
        assert!(matches!(
            store.add(NewSchedule::new(ana(), long, when)).await,
            Err(ScheduleError::MessageTooLong { .. })
        ));
    }

    #[tokio::test]
    async fn a_slot_is_recorded_once_whoever_records_it() {
        let store = ScheduleStore::in_memory().unwrap();
        let added = store
            .add(NewSchedule::new(ana(), "ping", When::cron("* * * * *").unwrap()))
            .await
            .unwrap();
        let slot = added.next_at.unwrap();
        let due = store.due(slot, 10).await.unwrap();
        assert_eq!(due.len(), 1);
        let next = added.when.next_after(slot);
        let ran = Fired::Ran {
            id: added.id.clone(),
            slot,
            next,
        };
        store.record(vec![ran.clone(), ran]).await.unwrap();
        let after = store.get(&ana(), &added.id).await.unwrap().unwrap();
        assert_eq!(after.runs, 1, "a second record of the same slot counts nothing");
        assert_eq!(after.next_at, next);
        assert_eq!(after.last_run_at, Some(slot));
    }

    #[tokio::test]
    async fn one_holder_has_the_lease_until_it_runs_out() {
        let store = ScheduleStore::in_memory().unwrap();
        assert!(store.lease("a", Timestamp(1_000), Timestamp(11_000)).await.unwrap());
        assert!(!store.lease("b", Timestamp(2_000), Timestamp(12_000)).await.unwrap());
        assert!(
            store.lease("a", Timestamp(3_000), Timestamp(13_000)).await.unwrap(),
            "renewed"
        );
        assert!(
            store.lease("b", Timestamp(13_001), Timestamp(23_001)).await.unwrap(),
            "taken over"
        );
        store.release("b").await.unwrap();
        assert!(
            store.lease("a", Timestamp(14_000), Timestamp(24_000)).await.unwrap(),
            "given up"
        );
    }
}
