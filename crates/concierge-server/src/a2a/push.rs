//! Push notifications: a client gives a URL for a task, and each time one
//! of the task's runs stops (it needs the person, it completed, it failed)
//! the task is posted there as a `StreamResponse` (`{"task": …}`), from the
//! same durable outbox as webhooks (retried with backoff, at least once).
//! The config's token goes in `X-A2A-Notification-Token` (and
//! `A2A-Notification-Token`, which other SDKs read), its authentication
//! in `Authorization`. A config set on a task sees the task's stops from
//! then on; one set on a finished task sees nothing.

use a2a::{AuthenticationInfo, ListTaskPushNotificationConfigsResponse, StreamResponse, TaskPushNotificationConfig};
use concierge::Runtime;
use concierge::core::Event;
use concierge::runtime::PushRenderer;
use concierge::webhook::{NewPushConfig, PushAuth, PushConfig, WebhookError};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::card::Door;
use super::error::A2aError;
use super::ops::{self, Ctx};
use super::params::read;
use crate::ground::{ApiError, ApiState, Caller};

/// The longest config id, token or credentials a client may set, in bytes.
const MAX_FIELD_BYTES: usize = 1_024;

/// A2A 0.3's shape of a config to set: the config inside the task's.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Nested {
    task_id: String,
    push_notification_config: NestedConfig,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NestedConfig {
    #[serde(default)]
    id: Option<String>,
    url: String,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    authentication: Option<NestedAuth>,
}

#[derive(Deserialize)]
struct NestedAuth {
    #[serde(default)]
    schemes: Vec<String>,
    #[serde(default)]
    credentials: Option<String>,
}

/// Reads a config to set, in 1.0's shape or 0.3's.
fn config_of(params: Value) -> Result<TaskPushNotificationConfig, A2aError> {
    if params.get("pushNotificationConfig").is_none() {
        return read(params, "");
    }
    let nested: Nested = read(params, "")?;
    let config = nested.push_notification_config;
    Ok(TaskPushNotificationConfig {
        url: config.url,
        id: config.id,
        task_id: nested.task_id,
        token: config.token,
        authentication: config.authentication.and_then(|auth| {
            auth.schemes.into_iter().next().map(|scheme| AuthenticationInfo {
                scheme,
                credentials: auth.credentials,
            })
        }),
        tenant: None,
    })
}

fn too_long(field: &str, value: Option<&str>) -> Result<(), A2aError> {
    match value {
        Some(text) if text.len() > MAX_FIELD_BYTES => Err(A2aError::field(
            field,
            format!("it holds at most {MAX_FIELD_BYTES} bytes"),
        )),
        _ => Ok(()),
    }
}

fn view(config: PushConfig) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        url: config.url,
        id: Some(config.id),
        task_id: config.task,
        token: config.token,
        authentication: config.authentication.map(|auth| AuthenticationInfo {
            scheme: auth.scheme,
            credentials: auth.credentials,
        }),
        tenant: None,
    }
}

fn failed(error: concierge::Error) -> A2aError {
    match error {
        concierge::Error::Webhook(WebhookError::BadUrl { .. } | WebhookError::NotPublic(_)) => {
            A2aError::field("url", error.to_string())
        }
        other => A2aError::Server(ApiError::from(other)),
    }
}

/// CreateTaskPushNotificationConfig (`tasks/pushNotificationConfig/set`).
pub async fn create(ctx: Ctx<'_>, params: Value) -> Result<TaskPushNotificationConfig, A2aError> {
    set(ctx, config_of(params)?).await
}

/// Sets `config` on the caller's task it names: the task's stops from now
/// on are pushed.
pub async fn set(ctx: Ctx<'_>, config: TaskPushNotificationConfig) -> Result<TaskPushNotificationConfig, A2aError> {
    set_after(ctx, config, None).await
}

/// Sets the config a message came with (`configuration.taskPushNotificationConfig`)
/// on the task it began: the stops after `begun`'s place are pushed, so
/// that a run that stopped before this is set is pushed too.
pub async fn set_on_begun(
    ctx: Ctx<'_>,
    mut config: TaskPushNotificationConfig,
    begun: &ops::Begun,
) -> Result<TaskPushNotificationConfig, A2aError> {
    config.task_id = begun.task.id();
    set_after(ctx, config, Some(begun.place.root.seq)).await
}

/// Checks what can be checked of a config before its task is known.
pub fn check(config: &TaskPushNotificationConfig) -> Result<(), A2aError> {
    concierge::webhook::check_url(&config.url).map_err(|e| A2aError::field("url", e.to_string()))?;
    too_long("id", config.id.as_deref())?;
    too_long("token", config.token.as_deref())?;
    too_long(
        "authentication.credentials",
        config.authentication.as_ref().and_then(|a| a.credentials.as_deref()),
    )?;
    if config.authentication.as_ref().is_some_and(|a| {
        !a.scheme.is_empty()
            && (a.scheme.len() > 64 || !a.scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    }) {
        return Err(A2aError::field(
            "authentication.scheme",
            "a scheme is a word such as Bearer or Basic",
        ));
    }
    Ok(())
}

async fn set_after(
    ctx: Ctx<'_>,
    config: TaskPushNotificationConfig,
    after: Option<u64>,
) -> Result<TaskPushNotificationConfig, A2aError> {
    if config.task_id.trim().is_empty() {
        return Err(A2aError::field("taskId", "this field is required"));
    }
    check(&config)?;
    let found = ops::find(ctx, &config.task_id).await?;
    let new = NewPushConfig {
        tenant: ctx.caller.tenant.clone(),
        task: config.task_id.clone(),
        session: found.session.id().to_string(),
        id: config.id.clone(),
        url: config.url.clone(),
        // Clients that write every field send "" for none.
        token: config.token.clone().filter(|t| !t.is_empty()),
        authentication: config
            .authentication
            .filter(|a| !a.scheme.is_empty())
            .map(|auth| PushAuth {
                scheme: auth.scheme,
                credentials: auth.credentials,
            }),
        // The task's stops so far are not news.
        after_seq: after.unwrap_or_else(|| found.session.last_seq()),
    };
    Ok(view(ctx.state.runtime().set_push(new).await.map_err(failed)?))
}

/// Which task and config a get or delete names: 1.0's `{taskId, id}`, or
/// 0.3's `{id, pushNotificationConfigId}`.
fn named(params: &Value) -> Result<(String, Option<String>), A2aError> {
    let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_string);
    match text("taskId") {
        Some(task) => Ok((task, text("id"))),
        None => match text("id") {
            Some(task) => Ok((task, text("pushNotificationConfigId"))),
            None => Err(A2aError::field("taskId", "this field is required")),
        },
    }
}

fn no_config(task: &str, id: &str) -> A2aError {
    A2aError::field(
        "id",
        format!("task {task} has no push notification config {id:?}; list them with ListTaskPushNotificationConfigs"),
    )
}

/// GetTaskPushNotificationConfig (`tasks/pushNotificationConfig/get`).
pub async fn get(ctx: Ctx<'_>, params: Value) -> Result<TaskPushNotificationConfig, A2aError> {
    let (task, id) = named(&params)?;
    ops::find(ctx, &task).await?;
    let store = ctx.state.runtime().webhooks();
    let tenant = ctx.caller.tenant.as_deref();
    let config = match id {
        Some(id) => store
            .push(tenant, &task, &id)
            .await
            .map_err(|e| failed(e.into()))?
            .ok_or_else(|| no_config(&task, &id))?,
        // 0.3 allows naming only the task: its first config.
        None => store
            .pushes(tenant, &task)
            .await
            .map_err(|e| failed(e.into()))?
            .into_iter()
            .next()
            .ok_or_else(|| no_config(&task, ""))?,
    };
    Ok(view(config))
}

/// ListTaskPushNotificationConfigs (`tasks/pushNotificationConfig/list`).
pub async fn list(ctx: Ctx<'_>, params: Value) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
    let (task, _) = named(&params)?;
    ops::find(ctx, &task).await?;
    let configs = ctx
        .state
        .runtime()
        .webhooks()
        .pushes(ctx.caller.tenant.as_deref(), &task)
        .await
        .map_err(|e| failed(e.into()))?;
    Ok(ListTaskPushNotificationConfigsResponse {
        configs: configs.into_iter().map(view).collect(),
        next_page_token: None,
    })
}

/// DeleteTaskPushNotificationConfig (`tasks/pushNotificationConfig/delete`).
pub async fn delete(ctx: Ctx<'_>, params: Value) -> Result<(), A2aError> {
    let (task, id) = named(&params)?;
    let id = id.ok_or_else(|| A2aError::field("id", "this field is required"))?;
    ops::find(ctx, &task).await?;
    let deleted = ctx
        .state
        .runtime()
        .webhooks()
        .delete_push(ctx.caller.tenant.as_deref(), &task, &id)
        .await
        .map_err(|e| failed(e.into()))?;
    if deleted { Ok(()) } else { Err(no_config(&task, &id)) }
}

/// Renders a push as the task it is about, now.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskPusher;

impl PushRenderer for TaskPusher {
    fn render<'a>(
        &'a self,
        runtime: &'a Runtime,
        config: &'a PushConfig,
        stopped: &'a Event,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let state = ApiState::new(runtime.clone(), tokio::sync::watch::channel(false).1);
            let caller = Caller {
                tenant: config.tenant.clone(),
                user: None,
            };
            let ctx = Ctx {
                state: &state,
                caller: &caller,
                door: &Door::Assistant,
            };
            let found = ops::find(ctx, &config.task).await.ok()?;
            let view = found.view().ok()?;
            let run = stopped.run.as_ref()?;
            if !view.runs.iter().any(|r| r.run == run.as_str()) {
                return None;
            }
            serde_json::to_string(&StreamResponse::Task(view.to_task(None, true))).ok()
        })
    }
}
