//! The webhook store: the webhooks, the sessions whose runs are followed
//! for them, and the outbox of deliveries, in SQLite.

use std::path::Path;

use concierge_core::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::sign::new_secret;
use super::{CreatedWebhook, Delivery, DeliveryState, NewWebhook, Webhook, WebhookError, WebhookEvent};
use crate::side_db::{SideDb, random_id};

/// The tables the store adds to a database.
pub(crate) const WEBHOOK_TABLES: &[&str] = &[
    "webhooks",
    "webhook_watches",
    "webhook_deliveries",
    "push_configs",
    "leases",
];

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS webhooks (
    id INTEGER PRIMARY KEY,
    webhook_id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT,
    secret TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS webhooks_by_tenant ON webhooks (tenant, id);
CREATE TABLE IF NOT EXISTS webhook_watches (
    session TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    after INTEGER NOT NULL DEFAULT 0,
    since INTEGER NOT NULL,
    armed_at INTEGER NOT NULL,
    gen INTEGER NOT NULL DEFAULT 1,
    active INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS webhook_watches_active ON webhook_watches (session) WHERE active = 1;
CREATE TABLE IF NOT EXISTS push_configs (
    id INTEGER PRIMARY KEY,
    config_id TEXT NOT NULL,
    tenant TEXT NOT NULL,
    task TEXT NOT NULL,
    session TEXT NOT NULL,
    url TEXT NOT NULL,
    token TEXT,
    auth_scheme TEXT,
    auth_credentials TEXT,
    after_seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (tenant, task, config_id)
);
CREATE INDEX IF NOT EXISTS push_configs_by_session ON push_configs (session);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id INTEGER PRIMARY KEY,
    webhook_id TEXT NOT NULL,
    push_id INTEGER,
    event_id TEXT NOT NULL,
    event TEXT NOT NULL,
    session TEXT,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER,
    delivered_at INTEGER,
    last_error TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_at) WHERE next_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_session ON webhook_deliveries (session);
CREATE TABLE IF NOT EXISTS leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until INTEGER NOT NULL
);
";

const SELECT: &str = "SELECT webhook_id, tenant, url, events, description, paused, created_at FROM webhooks";

/// A session whose runs are followed for webhooks, from event `after` on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Watch {
    pub session: String,
    pub tenant: Option<String>,
    /// The last event looked at.
    pub after: u64,
    /// Events before this time (of a run before the watch began) are not news.
    pub since: Timestamp,
    /// When a run was last started or resumed in it.
    pub armed_at: Timestamp,
    /// Bumped each time a run is started or resumed, so that a follower that
    /// saw the last run stop does not stop following a newer one.
    pub generation: i64,
}

const WATCH: &str = "SELECT session, tenant, after, since, armed_at, gen FROM webhook_watches";

fn row_to_watch(row: &Row<'_>) -> rusqlite::Result<Watch> {
    let tenant: String = row.get(1)?;
    Ok(Watch {
        session: row.get(0)?,
        tenant: (!tenant.is_empty()).then_some(tenant),
        after: u64::try_from(row.get::<_, i64>(2)?).unwrap_or_default(),
        since: stamp(row.get(3)?),
        armed_at: stamp(row.get(4)?),
        generation: row.get(5)?,
    })
}

/// A delivery due: what to post, where, signed with what.
#[derive(Clone, Debug)]
pub(crate) struct Due {
    pub row: i64,
    pub event: String,
    pub url: String,
    /// A webhook's signing secret (an A2A push has none).
    pub secret: Option<String>,
    /// An A2A push's token (`X-A2A-Notification-Token`).
    pub token: Option<String>,
    /// An A2A push's `Authorization` header.
    pub authorization: Option<String>,
    pub event_id: String,
    pub body: String,
    pub attempts: u32,
}

/// What became of one attempt to deliver.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Attempt {
    /// The receiver took it (2xx) at this time.
    Delivered(Timestamp),
    /// It failed: why, and when to try again (`None`: given up).
    Failed { error: String, retry_at: Option<Timestamp> },
}

/// One event for the outbox: who it is for, and what is posted.
#[derive(Clone, Debug)]
pub(crate) struct Outgoing {
    pub event: WebhookEvent,
    pub event_id: String,
    pub session: Option<String>,
    pub body: String,
}

/// The webhooks of a runtime and their outbox, in SQLite.
///
/// Cheap to clone (one shared connection); every call runs on tokio's
/// blocking pool.
#[derive(Clone)]
pub struct WebhookStore {
    db: SideDb,
}

impl std::fmt::Debug for WebhookStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookStore").field("path", &self.db.path()).finish()
    }
}

pub(super) fn millis(at: Timestamp) -> i64 {
    i64::try_from(at.0).unwrap_or(i64::MAX)
}

pub(super) fn stamp(ms: i64) -> Timestamp {
    Timestamp(u64::try_from(ms).unwrap_or_default())
}

pub(super) fn tenant_key(tenant: Option<&str>) -> &str {
    tenant.unwrap_or("")
}

fn events_text(events: &[WebhookEvent]) -> String {
    let mut names: Vec<&str> = events.iter().map(|e| e.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.join(",")
}

/// Events without repeats, in the order they are documented.
fn in_order(mut events: Vec<WebhookEvent>) -> Vec<WebhookEvent> {
    events.sort_by_key(|e| WebhookEvent::ALL.iter().position(|a| a == e));
    events.dedup();
    events
}

fn row_to_webhook(row: &Row<'_>) -> rusqlite::Result<Webhook> {
    let tenant: String = row.get(1)?;
    let events: String = row.get(3)?;
    Ok(Webhook {
        id: row.get(0)?,
        tenant: (!tenant.is_empty()).then_some(tenant),
        url: row.get(2)?,
        events: in_order(events.split(',').filter_map(|e| WebhookEvent::parse(e).ok()).collect()),
        description: row.get(4)?,
        paused: row.get(5)?,
        created_at: stamp(row.get(6)?),
    })
}

impl WebhookStore {
    /// The store in the SQLite database at `path` (created if missing; the
    /// runtime's own database file when the embedded engine runs on SQLite).
    pub fn open(path: &Path) -> Result<Self, WebhookError> {
        Ok(Self {
            db: SideDb::open(path, SCHEMA)?,
        })
    }

    /// The store at `path`, opened when first used.
    pub(crate) fn at(path: &Path) -> Self {
        Self {
            db: SideDb::at(path, SCHEMA),
        }
    }

    /// A store that lives as long as the process (for in-memory runtimes and tests).
    pub fn in_memory() -> Result<Self, WebhookError> {
        Ok(Self {
            db: SideDb::in_memory(SCHEMA)?,
        })
    }

    pub(super) async fn with_conn<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, WebhookError> + Send + 'static,
    ) -> Result<T, WebhookError> {
        self.db.run(WebhookError::Storage, work).await
    }

    /// Registers a webhook; its secret is in what is returned, and only there.
    pub async fn add(&self, new: NewWebhook) -> Result<CreatedWebhook, WebhookError> {
        super::check_url(&new.url)?;
        if new.events.is_empty() {
            return Err(WebhookError::NoEvents);
        }
        let id = random_id("wh_").map_err(WebhookError::Storage)?;
        let secret = new_secret()?;
        let now = crate::clock::now();
        let webhook = Webhook {
            id: id.clone(),
            tenant: new.tenant.clone(),
            url: new.url.clone(),
            events: in_order(new.events.clone()),
            description: new.description.clone(),
            paused: false,
            created_at: now,
        };
        let stored_secret = secret.clone();
        self.with_conn(move |conn| {
            conn.execute(
                "INSERT INTO webhooks (webhook_id, tenant, url, events, description, secret, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    id,
                    tenant_key(new.tenant.as_deref()),
                    new.url,
                    events_text(&new.events),
                    new.description,
                    stored_secret,
                    millis(now)
                ],
            )?;
            Ok(())
        })
        .await?;
        Ok(CreatedWebhook { webhook, secret })
    }

    /// The webhooks of `tenant`, oldest first.
    pub async fn list(&self, tenant: Option<&str>) -> Result<Vec<Webhook>, WebhookError> {
        let tenant = tenant_key(tenant).to_owned();
        self.with_conn(move |conn| {
            let mut statement = conn.prepare_cached(&format!("{SELECT} WHERE tenant = ?1 ORDER BY id"))?;
            let rows = statement.query_map(params![tenant], row_to_webhook)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// The webhook `id` of `tenant`, if there is one.
    pub async fn get(&self, tenant: Option<&str>, id: &str) -> Result<Option<Webhook>, WebhookError> {
        let (tenant, id) = (tenant_key(tenant).to_owned(), id.to_owned());
        self.with_conn(move |conn| {
            Ok(conn
                .query_row(
                    &format!("{SELECT} WHERE webhook_id = ?1 AND tenant = ?2"),
                    params![id, tenant],
                    row_to_webhook,
                )
                .optional()?)
        })
        .await
    }

    /// Holds (`paused`) or releases a webhook's deliveries; `None` if `tenant` has no webhook `id`.
    pub async fn set_paused(
        &self,
        tenant: Option<&str>,
        id: &str,
        paused: bool,
    ) -> Result<Option<Webhook>, WebhookError> {
        let (key, owned) = (tenant_key(tenant).to_owned(), id.to_owned());
        let changed = self
            .with_conn(move |conn| {
                Ok(conn.execute(
                    "UPDATE webhooks SET paused = ?1 WHERE webhook_id = ?2 AND tenant = ?3",
                    params![paused, owned, key],
                )?)
            })
            .await?;
        if changed == 0 {
            return Ok(None);
        }
        self.get(tenant, id).await
    }

    /// Deletes a webhook and its deliveries; false if `tenant` has no webhook `id`.
    pub async fn delete(&self, tenant: Option<&str>, id: &str) -> Result<bool, WebhookError> {
        let (tenant, id) = (tenant_key(tenant).to_owned(), id.to_owned());
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let n = tx.execute(
                "DELETE FROM webhooks WHERE webhook_id = ?1 AND tenant = ?2",
                params![id, tenant],
            )?;
            if n > 0 {
                tx.execute("DELETE FROM webhook_deliveries WHERE webhook_id = ?1", params![id])?;
            }
            tx.commit()?;
            Ok(n > 0)
        })
        .await
    }

    /// The latest `limit` deliveries of the webhook `id` of `tenant`, newest
    /// first; `None` if `tenant` has no such webhook.
    pub async fn deliveries(
        &self,
        tenant: Option<&str>,
        id: &str,
        limit: usize,
    ) -> Result<Option<Vec<Delivery>>, WebhookError> {
        if self.get(tenant, id).await?.is_none() {
            return Ok(None);
        }
        let id = id.to_owned();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(move |conn| {
            let mut statement = conn.prepare_cached(
                "SELECT event_id, event, attempts, next_at, delivered_at, last_error, created_at, body
                 FROM webhook_deliveries WHERE webhook_id = ?1 ORDER BY id DESC LIMIT ?2",
            )?;
            let rows = statement.query_map(params![id, limit], |row| {
                let event: String = row.get(1)?;
                let next_at: Option<i64> = row.get(3)?;
                let delivered_at: Option<i64> = row.get(4)?;
                let body: String = row.get(7)?;
                let state = match (next_at, delivered_at) {
                    (_, Some(_)) => DeliveryState::Delivered,
                    (Some(_), None) => DeliveryState::Pending,
                    (None, None) => DeliveryState::GaveUp,
                };
                Ok(WebhookEvent::parse(&event).ok().map(|event| Delivery {
                    event_id: row.get(0).unwrap_or_default(),
                    event,
                    state,
                    attempts: row.get(2).unwrap_or_default(),
                    next_at: next_at.map(stamp),
                    delivered_at: delivered_at.map(stamp),
                    last_error: row.get(5).unwrap_or_default(),
                    created_at: stamp(row.get(6).unwrap_or_default()),
                    body: serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body)),
                }))
            })?;
            Ok(rows
                .filter_map(|r| r.transpose())
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
        .map(Some)
    }

    /// How many deliveries wait to go (for `/metrics`).
    pub async fn pending(&self) -> Result<u64, WebhookError> {
        self.with_conn(|conn| {
            let n: i64 = conn.query_row(
                "SELECT COUNT(*) FROM webhook_deliveries WHERE next_at IS NOT NULL",
                [],
                |row| row.get(0),
            )?;
            Ok(u64::try_from(n).unwrap_or_default())
        })
        .await
    }

    /// The tenants that have a webhook for run events (`""`: no tenant).
    pub(crate) async fn tenants_following_runs(&self) -> Result<Vec<String>, WebhookError> {
        self.with_conn(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT DISTINCT tenant FROM webhooks WHERE events LIKE '%run.%'
                 UNION SELECT DISTINCT tenant FROM push_configs",
            )?;
            let rows = statement.query_map([], |row| row.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
        })
        .await
    }

    /// Follows `session`'s runs from now (a run starts or resumes in it).
    pub(crate) async fn arm(&self, session: &str, tenant: Option<&str>, since: Timestamp) -> Result<(), WebhookError> {
        let (session, tenant) = (session.to_owned(), tenant_key(tenant).to_owned());
        self.with_conn(move |conn| {
            arm_in(conn, &session, &tenant, millis(since))?;
            Ok(())
        })
        .await
    }

    /// Follows `session`'s runs again if they were followed before (a parked run resumes).
    pub(crate) async fn rearm(&self, session: &str, at: Timestamp) -> Result<(), WebhookError> {
        let session = session.to_owned();
        self.with_conn(move |conn| {
            conn.execute(
                "UPDATE webhook_watches SET active = 1, gen = gen + 1, armed_at = ?2 WHERE session = ?1",
                params![session, millis(at)],
            )?;
            Ok(())
        })
        .await
    }

    /// Whether there is anything to do: a session to follow or a delivery waiting.
    pub(crate) async fn has_work(&self) -> Result<bool, WebhookError> {
        self.with_conn(|conn| {
            Ok(conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM webhook_watches WHERE active = 1)
                     OR EXISTS (SELECT 1 FROM webhook_deliveries WHERE next_at IS NOT NULL)",
                [],
                |row| row.get(0),
            )?)
        })
        .await
    }

    /// The sessions whose runs are followed.
    pub(crate) async fn watches(&self) -> Result<Vec<Watch>, WebhookError> {
        self.with_conn(|conn| {
            let mut statement = conn.prepare_cached(&format!("{WATCH} WHERE active = 1"))?;
            let rows = statement.query_map([], row_to_watch)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// A followed session's run stopped at event `seq`: puts `outgoing` in
    /// the outbox of every webhook of the watch's tenant that wants it and
    /// moves the watch past `seq`, in one transaction; how many deliveries
    /// were added.
    pub(crate) async fn record_stop(
        &self,
        watch: &Watch,
        seq: u64,
        outgoing: Option<Outgoing>,
    ) -> Result<u64, WebhookError> {
        let watch = watch.clone();
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut added = 0;
            if let Some(out) = &outgoing {
                added = insert_outgoing(&tx, watch.tenant.as_deref(), out)?;
            }
            let seq = i64::try_from(seq).unwrap_or(i64::MAX);
            tx.execute(
                "UPDATE webhook_watches SET after = MAX(after, ?1) WHERE session = ?2",
                params![seq, watch.session],
            )?;
            tx.commit()?;
            Ok(added)
        })
        .await
    }

    /// Stops following `session`, unless a run was started or resumed in it
    /// since `generation` was read; true if it stopped.
    pub(crate) async fn settle(&self, session: &str, generation: i64) -> Result<bool, WebhookError> {
        let session = session.to_owned();
        self.with_conn(move |conn| {
            let n = conn.execute(
                "UPDATE webhook_watches SET active = 0 WHERE session = ?1 AND gen = ?2",
                params![session, generation],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// The watch of `session`, if it is followed.
    pub(crate) async fn watch(&self, session: &str) -> Result<Option<Watch>, WebhookError> {
        let session = session.to_owned();
        self.with_conn(move |conn| {
            Ok(conn
                .query_row(
                    &format!("{WATCH} WHERE session = ?1 AND active = 1"),
                    params![session],
                    row_to_watch,
                )
                .optional()?)
        })
        .await
    }

    /// Puts an event that no run stop carries (a schedule fired) in the
    /// outbox of `tenant`'s webhooks that want it; how many were added.
    pub(crate) async fn enqueue(&self, tenant: Option<&str>, outgoing: Outgoing) -> Result<u64, WebhookError> {
        let tenant = tenant.map(str::to_owned);
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let added = insert_outgoing(&tx, tenant.as_deref(), &outgoing)?;
            tx.commit()?;
            Ok(added)
        })
        .await
    }

    /// Up to `limit` deliveries due at `now`, of webhooks not paused.
    pub(crate) async fn due(&self, now: Timestamp, limit: usize) -> Result<Vec<Due>, WebhookError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(move |conn| {
            let mut statement = conn.prepare_cached(
                "SELECT d.id, COALESCE(w.url, p.url), w.secret, d.event_id, d.body, d.attempts, d.event,
                        p.token, p.auth_scheme, p.auth_credentials
                 FROM webhook_deliveries d
                 LEFT JOIN webhooks w ON w.webhook_id = d.webhook_id
                 LEFT JOIN push_configs p ON p.id = d.push_id
                 WHERE d.next_at IS NOT NULL AND d.next_at <= ?1
                   AND (w.paused = 0 OR (w.webhook_id IS NULL AND p.id IS NOT NULL))
                 ORDER BY d.next_at LIMIT ?2",
            )?;
            let rows = statement.query_map(params![millis(now), limit], |row| {
                Ok(Due {
                    row: row.get(0)?,
                    url: row.get(1)?,
                    secret: row.get(2)?,
                    event_id: row.get(3)?,
                    body: row.get(4)?,
                    attempts: row.get(5)?,
                    event: row.get(6)?,
                    token: row.get(7)?,
                    authorization: {
                        let scheme: Option<String> = row.get(8)?;
                        let credentials: Option<String> = row.get(9)?;
                        scheme.map(|s| match credentials {
                            Some(c) => format!("{s} {c}"),
                            None => s,
                        })
                    },
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// Records one attempt: delivered at `delivered`, or failed with `error`
    /// and tried again at `retry_at` (`None`: given up).
    pub(crate) async fn record_attempt(&self, row: i64, result: Attempt) -> Result<(), WebhookError> {
        self.with_conn(move |conn| {
            match result {
                Attempt::Delivered(at) => conn.execute(
                    "UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = NULL, delivered_at = ?1,
                     last_error = NULL WHERE id = ?2",
                    params![millis(at), row],
                )?,
                Attempt::Failed { error, retry_at } => conn.execute(
                    "UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = ?1, last_error = ?2
                     WHERE id = ?3",
                    params![retry_at.map(millis), error, row],
                )?,
            };
            Ok(())
        })
        .await
    }

    /// Forgets what concerns `session` (it was erased): its watch and its deliveries.
    pub(crate) async fn forget_session(&self, session: &str) -> Result<(), WebhookError> {
        let session = session.to_owned();
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM webhook_watches WHERE session = ?1", params![session])?;
            tx.execute("DELETE FROM webhook_deliveries WHERE session = ?1", params![session])?;
            tx.execute("DELETE FROM push_configs WHERE session = ?1", params![session])?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Takes or renews the lease `name` for `holder` until `until`; `false`
    /// while another holder's lease runs.
    pub(crate) async fn lease(
        &self,
        name: &'static str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool, WebhookError> {
        let holder = holder.to_owned();
        self.with_conn(move |conn| {
            let n = conn.execute(
                "INSERT INTO leases (name, holder, until) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
                 WHERE leases.holder = excluded.holder OR leases.until < ?4",
                params![name, holder, millis(until), millis(now)],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// Gives the lease `name` up, so another process takes it at once.
    pub(crate) async fn release(&self, name: &'static str, holder: &str) -> Result<(), WebhookError> {
        let holder = holder.to_owned();
        self.with_conn(move |conn| {
            conn.execute(
                "DELETE FROM leases WHERE name = ?1 AND holder = ?2",
                params![name, holder],
            )?;
            Ok(())
        })
        .await
    }
}

/// Follows `session` (of tenant key `tenant`) from `at` on: a new watch
/// starts there; one that exists is active again, with a new generation.
pub(super) fn arm_in(conn: &Connection, session: &str, tenant: &str, at: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "INSERT INTO webhook_watches (session, tenant, since, armed_at) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (session) DO UPDATE SET active = 1, gen = gen + 1, armed_at = excluded.armed_at",
        params![session, tenant, at],
    )
}

/// Inserts `out` for each webhook of `tenant` that wants its event; a
/// delivery already there (the same event found again) is kept as it is.
fn insert_outgoing(tx: &rusqlite::Transaction<'_>, tenant: Option<&str>, out: &Outgoing) -> rusqlite::Result<u64> {
    let now = millis(crate::clock::now());
    let mut hooks = tx.prepare_cached("SELECT webhook_id, events FROM webhooks WHERE tenant = ?1")?;
    let targets: Vec<String> = hooks
        .query_map(params![tenant_key(tenant)], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?
        .filter_map(Result::ok)
        .filter(|(_, events)| events.split(',').any(|e| e == out.event.as_str()))
        .map(|(id, _)| id)
        .collect();
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO webhook_deliveries (webhook_id, event_id, event, session, body, next_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?;
    let mut added = 0;
    for webhook in targets {
        added += insert.execute(params![
            webhook,
            out.event_id,
            out.event.as_str(),
            out.session,
            out.body,
            now
        ])? as u64;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn outgoing(event: WebhookEvent, id: &str) -> Outgoing {
        Outgoing {
            event,
            event_id: id.into(),
            session: Some("acme/s1".into()),
            body: "{}".into(),
        }
    }

    #[tokio::test]
    async fn a_webhook_is_seen_only_by_its_tenant() {
        let store = WebhookStore::in_memory().unwrap();
        let new = NewWebhook::new(Some("acme"), "https://example.com/h", vec![WebhookEvent::RunFinished]).unwrap();
        let created = store.add(new).await.unwrap();
        assert_eq!(store.list(Some("acme")).await.unwrap().len(), 1);
        assert!(store.list(Some("evil")).await.unwrap().is_empty());
        assert!(store.get(Some("evil"), &created.webhook.id).await.unwrap().is_none());
        assert!(!store.delete(Some("evil"), &created.webhook.id).await.unwrap());
        assert!(
            store
                .set_paused(Some("evil"), &created.webhook.id, true)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .deliveries(Some("evil"), &created.webhook.id, 10)
                .await
                .unwrap()
                .is_none()
        );
        assert!(store.delete(Some("acme"), &created.webhook.id).await.unwrap());
    }

    #[tokio::test]
    async fn an_event_found_twice_is_delivered_once_and_only_where_wanted() {
        let store = WebhookStore::in_memory().unwrap();
        let finished = NewWebhook::new(Some("acme"), "https://example.com/a", vec![WebhookEvent::RunFinished]).unwrap();
        let failed = NewWebhook::new(Some("acme"), "https://example.com/b", vec![WebhookEvent::RunFailed]).unwrap();
        let other = NewWebhook::new(Some("other"), "https://example.com/c", WebhookEvent::ALL.to_vec()).unwrap();
        let a = store.add(finished).await.unwrap();
        store.add(failed).await.unwrap();
        store.add(other).await.unwrap();
        assert_eq!(
            store
                .enqueue(Some("acme"), outgoing(WebhookEvent::RunFinished, "evt_1"))
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            store
                .enqueue(Some("acme"), outgoing(WebhookEvent::RunFinished, "evt_1"))
                .await
                .unwrap(),
            0
        );
        let due = store.due(Timestamp(u64::MAX / 2), 10).await.unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].url, "https://example.com/a");
        store
            .record_attempt(
                due[0].row,
                Attempt::Failed {
                    error: "refused".into(),
                    retry_at: Some(Timestamp(5)),
                },
            )
            .await
            .unwrap();
        store
            .record_attempt(due[0].row, Attempt::Delivered(Timestamp(6)))
            .await
            .unwrap();
        let seen = store
            .deliveries(Some("acme"), &a.webhook.id, 10)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((seen[0].state, seen[0].attempts), (DeliveryState::Delivered, 2));
        assert!(store.due(Timestamp(u64::MAX / 2), 10).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_watch_rearmed_while_a_run_stopped_keeps_following() {
        let store = WebhookStore::in_memory().unwrap();
        store.arm("acme/s1", Some("acme"), Timestamp(1)).await.unwrap();
        let watch = store.watches().await.unwrap().remove(0);
        store.rearm("acme/s1", Timestamp(2)).await.unwrap();
        store.record_stop(&watch, 7, None).await.unwrap();
        assert!(
            !store.settle("acme/s1", watch.generation).await.unwrap(),
            "a run started after the watch was read"
        );
        let watch = store.watch("acme/s1").await.unwrap().unwrap();
        assert_eq!((watch.after, watch.armed_at), (7, Timestamp(2)));
        assert!(store.settle("acme/s1", watch.generation).await.unwrap());
        assert!(store.watches().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn one_holder_has_a_lease_until_it_runs_out() {
        let store = WebhookStore::in_memory().unwrap();
        assert!(
            store
                .lease("webhooks", "a", Timestamp(1_000), Timestamp(11_000))
                .await
                .unwrap()
        );
        assert!(
            !store
                .lease("webhooks", "b", Timestamp(2_000), Timestamp(12_000))
                .await
                .unwrap()
        );
        assert!(
            store
                .lease("other", "b", Timestamp(2_000), Timestamp(12_000))
                .await
                .unwrap()
        );
        assert!(
            store
                .lease("webhooks", "b", Timestamp(11_001), Timestamp(21_000))
                .await
                .unwrap()
        );
        store.release("webhooks", "b").await.unwrap();
        assert!(
            store
                .lease("webhooks", "a", Timestamp(11_002), Timestamp(21_000))
                .await
                .unwrap()
        );
    }
}
