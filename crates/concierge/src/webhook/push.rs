//! A2A push notification configs: where a task's updates are posted. They
//! share the webhooks' outbox and sender; the A2A endpoint renders what is
//! posted (the runtime's [`PushRenderer`](crate::runtime::PushRenderer)).

use concierge_core::Timestamp;
use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::store::{arm_in, millis, stamp, tenant_key};
use super::{WebhookError, WebhookEvent, WebhookStore};
use crate::side_db::random_id;

/// How an A2A push notification authenticates to its receiver: the
/// `Authorization` header's scheme and credentials.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushAuth {
    /// The scheme (`Bearer`, `Basic`).
    pub scheme: String,
    /// The credentials for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// An A2A push notification config to set: where to post a task's updates.
#[derive(Clone, Debug, PartialEq)]
pub struct NewPushConfig {
    /// The tenant the task belongs to.
    pub tenant: Option<String>,
    /// The task, as its client names it.
    pub task: String,
    /// The task's session (its context), as the engine keeps it.
    pub session: String,
    /// The config's id (the client's, or one chosen for it).
    pub id: Option<String>,
    /// Where updates are posted.
    pub url: String,
    /// A token the receiver checks (`X-A2A-Notification-Token`).
    pub token: Option<String>,
    /// How the post authenticates (`Authorization`).
    pub authentication: Option<PushAuth>,
    /// Stops up to this event of the session are history: only later ones are pushed.
    pub after_seq: u64,
}

/// A task's A2A push notification config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PushConfig {
    /// Its row in the store (deliveries name it).
    #[serde(skip)]
    pub(crate) row: i64,
    /// Its id.
    pub id: String,
    /// The tenant the task belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task, as its client names it.
    pub task: String,
    /// The task's session.
    pub session: String,
    /// Where updates are posted.
    pub url: String,
    /// The token sent with each post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How each post authenticates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushAuth>,
    /// Stops after this event of the session are pushed.
    pub after_seq: u64,
    /// When it was set.
    pub created_at: Timestamp,
}

const PUSH: &str = "SELECT id, config_id, tenant, task, session, url, token, auth_scheme, auth_credentials, \
                    after_seq, created_at FROM push_configs";

fn row_to_push(row: &Row<'_>) -> rusqlite::Result<PushConfig> {
    let tenant: String = row.get(2)?;
    let scheme: Option<String> = row.get(7)?;
    let credentials: Option<String> = row.get(8)?;
    Ok(PushConfig {
        row: row.get(0)?,
        id: row.get(1)?,
        tenant: (!tenant.is_empty()).then_some(tenant),
        task: row.get(3)?,
        session: row.get(4)?,
        url: row.get(5)?,
        token: row.get(6)?,
        authentication: scheme.map(|scheme| PushAuth { scheme, credentials }),
        after_seq: u64::try_from(row.get::<_, i64>(9)?).unwrap_or_default(),
        created_at: stamp(row.get(10)?),
    })
}

impl WebhookStore {
    /// Sets an A2A push notification config (a config of the same task and
    /// id is replaced) and follows its session.
    pub async fn set_push(&self, new: NewPushConfig) -> Result<PushConfig, WebhookError> {
        super::check_url(&new.url)?;
        let id = match &new.id {
            Some(id) if !id.trim().is_empty() => id.clone(),
            _ => random_id("pc_").map_err(WebhookError::Storage)?,
        };
        let now = millis(crate::clock::now());
        let tenant = new.tenant.clone();
        let task = new.task.clone();
        let config_id = id.clone();
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let key = tenant_key(new.tenant.as_deref());
            tx.execute(
                "INSERT INTO push_configs (config_id, tenant, task, session, url, token, auth_scheme, auth_credentials,
                                           after_seq, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT (tenant, task, config_id) DO UPDATE SET url = excluded.url, token = excluded.token,
                     auth_scheme = excluded.auth_scheme, auth_credentials = excluded.auth_credentials",
                params![
                    config_id,
                    key,
                    new.task,
                    new.session,
                    new.url,
                    new.token,
                    new.authentication.as_ref().map(|a| a.scheme.clone()),
                    new.authentication.as_ref().and_then(|a| a.credentials.clone()),
                    i64::try_from(new.after_seq).unwrap_or(i64::MAX),
                    now
                ],
            )?;
            arm_in(&tx, &new.session, key, now)?;
            tx.commit()?;
            Ok(())
        })
        .await?;
        self.push(tenant.as_deref(), &task, &id)
            .await?
            .ok_or_else(|| WebhookError::Storage("the push config just set is not there".into()))
    }

    /// The push config `id` of `tenant`'s task `task`.
    pub async fn push(&self, tenant: Option<&str>, task: &str, id: &str) -> Result<Option<PushConfig>, WebhookError> {
        let (tenant, task, id) = (tenant_key(tenant).to_owned(), task.to_owned(), id.to_owned());
        self.with_conn(move |conn| {
            Ok(conn
                .query_row(
                    &format!("{PUSH} WHERE tenant = ?1 AND task = ?2 AND config_id = ?3"),
                    params![tenant, task, id],
                    row_to_push,
                )
                .optional()?)
        })
        .await
    }

    /// The push configs of `tenant`'s task `task`, oldest first.
    pub async fn pushes(&self, tenant: Option<&str>, task: &str) -> Result<Vec<PushConfig>, WebhookError> {
        let (tenant, task) = (tenant_key(tenant).to_owned(), task.to_owned());
        self.with_conn(move |conn| {
            let mut statement = conn.prepare_cached(&format!("{PUSH} WHERE tenant = ?1 AND task = ?2 ORDER BY id"))?;
            let rows = statement.query_map(params![tenant, task], row_to_push)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// Deletes a push config and what waits to go to it; false if there is none.
    pub async fn delete_push(&self, tenant: Option<&str>, task: &str, id: &str) -> Result<bool, WebhookError> {
        let (tenant, task, id) = (tenant_key(tenant).to_owned(), task.to_owned(), id.to_owned());
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let row: Option<i64> = tx
                .query_row(
                    "SELECT id FROM push_configs WHERE tenant = ?1 AND task = ?2 AND config_id = ?3",
                    params![tenant, task, id],
                    |row| row.get(0),
                )
                .optional()?;
            if let Some(row) = row {
                tx.execute("DELETE FROM push_configs WHERE id = ?1", params![row])?;
                tx.execute("DELETE FROM webhook_deliveries WHERE push_id = ?1", params![row])?;
            }
            tx.commit()?;
            Ok(row.is_some())
        })
        .await
    }

    /// The push configs of the tasks of `session`.
    pub(crate) async fn pushes_of_session(&self, session: &str) -> Result<Vec<PushConfig>, WebhookError> {
        let session = session.to_owned();
        self.with_conn(move |conn| {
            let mut statement = conn.prepare_cached(&format!("{PUSH} WHERE session = ?1 ORDER BY id"))?;
            let rows = statement.query_map(params![session], row_to_push)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// Puts a push for `config` in the outbox (once per event id); whether it was added.
    pub(crate) async fn enqueue_push(
        &self,
        config: &PushConfig,
        event: WebhookEvent,
        event_id: String,
        body: String,
    ) -> Result<bool, WebhookError> {
        let (row, session) = (config.row, config.session.clone());
        self.with_conn(move |conn| {
            let now = millis(crate::clock::now());
            let n = conn.execute(
                "INSERT OR IGNORE INTO webhook_deliveries (webhook_id, push_id, event_id, event, session, body, next_at,
                                                           created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
                params![format!("push:{row}"), row, event_id, event.as_str(), session, body, now],
            )?;
            Ok(n > 0)
        })
        .await
    }
}
