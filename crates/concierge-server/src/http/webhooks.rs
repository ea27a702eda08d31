//! The caller's tenant's webhooks: where the server posts, signed, when a
//! run finishes, needs the person or fails, and when a schedule fires.
//!
//! Every route acts on the webhooks of the tenant the request speaks for
//! (its token's tenant; on a server without tokens, the deployment's), so
//! no id of another tenant's webhook is ever found. A webhook's secret is
//! in the answer to the request that adds it, and nowhere else.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use concierge::webhook::{CreatedWebhook, Delivery, DeliveryState, NewWebhook, Webhook, WebhookEvent};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ground::body::JsonBody;
use crate::ground::{ApiError, ApiState, Caller, ErrorBody};

/// What a webhook is told about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum WebhookEventView {
    /// A run finished with an answer (or was cancelled).
    #[serde(rename = "run.finished")]
    RunFinished,
    /// A run waits for the person: a question, a confirmation, a choice.
    #[serde(rename = "run.needs_input")]
    RunNeedsInput,
    /// A run failed.
    #[serde(rename = "run.failed")]
    RunFailed,
    /// A schedule started its run.
    #[serde(rename = "schedule.fired")]
    ScheduleFired,
}

impl From<WebhookEventView> for WebhookEvent {
    fn from(view: WebhookEventView) -> Self {
        match view {
            WebhookEventView::RunFinished => WebhookEvent::RunFinished,
            WebhookEventView::RunNeedsInput => WebhookEvent::RunNeedsInput,
            WebhookEventView::RunFailed => WebhookEvent::RunFailed,
            WebhookEventView::ScheduleFired => WebhookEvent::ScheduleFired,
        }
    }
}

impl From<WebhookEvent> for WebhookEventView {
    fn from(event: WebhookEvent) -> Self {
        match event {
            WebhookEvent::RunFinished => WebhookEventView::RunFinished,
            WebhookEvent::RunNeedsInput => WebhookEventView::RunNeedsInput,
            WebhookEvent::RunFailed => WebhookEventView::RunFailed,
            WebhookEvent::ScheduleFired => WebhookEventView::ScheduleFired,
        }
    }
}

/// One webhook.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookView {
    /// Its id, to pause or delete it by.
    pub id: String,
    /// Where deliveries are posted.
    pub url: String,
    /// What it is told about.
    pub events: Vec<WebhookEventView>,
    /// What it is for, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether deliveries are held (they wait, and go when it is resumed).
    pub paused: bool,
    /// When it was added, in milliseconds since the Unix epoch.
    pub created_at: u64,
}

impl From<Webhook> for WebhookView {
    fn from(webhook: Webhook) -> Self {
        Self {
            id: webhook.id,
            url: webhook.url,
            events: webhook.events.into_iter().map(Into::into).collect(),
            description: webhook.description,
            paused: webhook.paused,
            created_at: webhook.created_at.0,
        }
    }
}

/// A webhook just added, with its signing secret (shown only now).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedWebhookView {
    /// The webhook.
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// The secret deliveries are signed with (`whsec_` and base64): keep it,
    /// it is not shown again. Check each delivery's `webhook-signature` with
    /// it as the Standard Webhooks specification says.
    pub secret: String,
}

impl From<CreatedWebhook> for CreatedWebhookView {
    fn from(created: CreatedWebhook) -> Self {
        Self {
            webhook: created.webhook.into(),
            secret: created.secret,
        }
    }
}

/// The tenant's webhooks, oldest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookList {
    /// The webhooks.
    pub webhooks: Vec<WebhookView>,
}

/// `POST /webhooks`: where to post, and what about.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookRequest {
    /// Where deliveries are posted: an `http` or `https` URL.
    #[schema(
        min_length = 1,
        max_length = 2048,
        pattern = "^https?://([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*\\.?(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?([/?][^\\s#]*)?$|^https?://((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?([/?][^\\s#]*)?$"
    )]
    pub url: String,
    /// What it is told about (at least one).
    #[schema(min_items = 1)]
    pub events: Vec<WebhookEventView>,
    /// What it is for, in words (at most 200 characters).
    #[serde(default)]
    #[schema(max_length = 200)]
    pub description: Option<String>,
}

/// Where one delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStateView {
    /// Not delivered yet: it goes (again) at `next_attempt_at`.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Every attempt failed; no more are made.
    GaveUp,
}

/// One event on its way to the webhook.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryView {
    /// The event's id (its `webhook-id` header; the same on every attempt).
    pub event_id: String,
    /// What happened.
    pub event: WebhookEventView,
    /// Where it stands.
    pub state: DeliveryStateView,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<u64>,
    /// When the receiver took it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<u64>,
    /// Why the last attempt failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the event happened.
    pub created_at: u64,
    /// The body posted.
    #[schema(value_type = Object)]
    pub body: serde_json::Value,
}

impl From<Delivery> for DeliveryView {
    fn from(delivery: Delivery) -> Self {
        Self {
            event_id: delivery.event_id,
            event: delivery.event.into(),
            state: match delivery.state {
                DeliveryState::Pending => DeliveryStateView::Pending,
                DeliveryState::Delivered => DeliveryStateView::Delivered,
                DeliveryState::GaveUp => DeliveryStateView::GaveUp,
            },
            attempts: delivery.attempts,
            next_attempt_at: delivery.next_at.map(|t| t.0),
            delivered_at: delivery.delivered_at.map(|t| t.0),
            last_error: delivery.last_error,
            created_at: delivery.created_at.0,
            body: delivery.body,
        }
    }
}

/// A webhook's latest deliveries, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryList {
    /// The deliveries.
    pub deliveries: Vec<DeliveryView>,
}

/// `?limit=`: how many deliveries.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeliveriesQuery {
    /// How many of the latest deliveries (1 to 500; 50 by default).
    #[serde(default)]
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
}

/// The URLs the API takes for a webhook (the `url` field's pattern in the
/// OpenAPI document): `http` or `https`, a host name (labels of letters,
/// digits and single hyphens, the last starting with a letter) or an IPv4
/// address, a port, a path and query; no fragment. The path names NEL and
/// the byte order mark beside `\s`, which holds the first in Rust's regex
/// dialect and the second in JSON Schema's (ECMA-262): so a client that
/// checks the pattern and the server agree.
const URL_PATTERN: &str = concat!(
    r"^https?://(([A-Za-z0-9]+(-[A-Za-z0-9]+)*\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*\.?",
    r"|((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))",
    r"(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?([/?][^\s\u0085\uFEFF#]*)?$"
);

/// Whether the API takes `url` for a webhook.
fn url_taken(url: &str) -> bool {
    static PATTERN: std::sync::LazyLock<Option<regex::Regex>> =
        std::sync::LazyLock::new(|| regex::Regex::new(URL_PATTERN).ok());
    PATTERN.as_ref().is_some_and(|p| p.is_match(url))
}

fn unknown(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("there is no webhook {id:?}; list the webhooks with GET /api/v1/webhooks"),
    )
}

fn storage(error: concierge::webhook::WebhookError) -> ApiError {
    concierge::Error::from(error).into()
}

/// The caller's tenant's webhooks.
#[utoipa::path(
    get, path = "/api/v1/webhooks", tag = "webhooks",
    responses((status = 200, description = "The tenant's webhooks", body = WebhookList))
)]
pub async fn list(State(state): State<ApiState>, caller: Caller) -> Result<Json<WebhookList>, ApiError> {
    let found = state
        .rt
        .webhooks()
        .list(caller.tenant.as_deref())
        .await
        .map_err(storage)?;
    Ok(Json(WebhookList {
        webhooks: found.into_iter().map(Into::into).collect(),
    }))
}

/// Registers a webhook for the caller's tenant; the answer holds its signing secret.
#[utoipa::path(
    post, path = "/api/v1/webhooks", tag = "webhooks",
    request_body = WebhookRequest,
    responses(
        (status = 201, description = "Registered; keep the secret, it is not shown again", body = CreatedWebhookView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "The URL, the events or the description is wrong (the field is named)", body = ErrorBody),
    )
)]
pub async fn add(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(body): JsonBody<WebhookRequest>,
) -> Result<(StatusCode, Json<CreatedWebhookView>), ApiError> {
    if body.description.as_ref().is_some_and(|d| d.chars().count() > 200) {
        return Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "description",
            "a description holds at most 200 characters",
        ));
    }
    if !url_taken(&body.url) {
        return Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "url",
            "a webhook URL is http:// or https://, then a host name or an IPv4 address, an optional port, \
             and an optional path (no #fragment), e.g. https://hooks.example.com/concierge",
        ));
    }
    let events: Vec<WebhookEvent> = body.events.into_iter().map(Into::into).collect();
    let mut new = NewWebhook::new(caller.tenant.as_deref(), body.url, events).map_err(|e| {
        let field = match e {
            concierge::webhook::WebhookError::NoEvents => "events",
            _ => "url",
        };
        ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, field, e.to_string())
    })?;
    if let Some(description) = body.description.filter(|d| !d.trim().is_empty()) {
        new = new.description(description);
    }
    let created = state.rt.add_webhook(new).await?;
    Ok((StatusCode::CREATED, Json(created.into())))
}

/// One of the tenant's webhooks.
#[utoipa::path(
    get, path = "/api/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id")),
    responses(
        (status = 200, description = "The webhook", body = WebhookView),
        (status = 404, description = "The tenant has no webhook by that id", body = ErrorBody),
    )
)]
pub async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<WebhookView>, ApiError> {
    let found = state
        .rt
        .webhooks()
        .get(caller.tenant.as_deref(), &id)
        .await
        .map_err(storage)?;
    found.map(|w| Json(w.into())).ok_or_else(|| unknown(&id))
}

/// The latest deliveries of one of the tenant's webhooks, newest first.
#[utoipa::path(
    get, path = "/api/v1/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id"), DeliveriesQuery),
    responses(
        (status = 200, description = "Its deliveries", body = DeliveryList),
        (status = 400, description = "The query string does not fit (a parameter given twice, say)", body = ErrorBody),
        (status = 404, description = "The tenant has no webhook by that id", body = ErrorBody),
        (status = 422, description = "The limit is not a whole number from 1 to 500", body = ErrorBody),
    )
)]
pub async fn deliveries(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(query): Query<DeliveriesQuery>,
) -> Result<Json<DeliveryList>, ApiError> {
    let limit = match query.limit.as_deref() {
        None => 50,
        Some(text) => text.trim().parse::<u32>().unwrap_or(0),
    };
    if !(1..=500).contains(&limit) {
        return Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "limit",
            "limit is a whole number from 1 to 500",
        ));
    }
    let found = state
        .rt
        .webhooks()
        .deliveries(caller.tenant.as_deref(), &id, limit as usize)
        .await
        .map_err(storage)?;
    found
        .map(|list| {
            Json(DeliveryList {
                deliveries: list.into_iter().map(Into::into).collect(),
            })
        })
        .ok_or_else(|| unknown(&id))
}

/// Holds one of the tenant's webhooks: its deliveries wait until it is resumed.
#[utoipa::path(
    post, path = "/api/v1/webhooks/{id}/pause", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id")),
    responses(
        (status = 200, description = "Paused", body = WebhookView),
        (status = 404, description = "The tenant has no webhook by that id", body = ErrorBody),
    )
)]
pub async fn pause(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<WebhookView>, ApiError> {
    set_paused(state, caller, id, true).await
}

/// Resumes one of the tenant's webhooks: what waited goes.
#[utoipa::path(
    post, path = "/api/v1/webhooks/{id}/resume", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id")),
    responses(
        (status = 200, description = "Resumed", body = WebhookView),
        (status = 404, description = "The tenant has no webhook by that id", body = ErrorBody),
    )
)]
pub async fn resume(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<WebhookView>, ApiError> {
    set_paused(state, caller, id, false).await
}

async fn set_paused(state: ApiState, caller: Caller, id: String, paused: bool) -> Result<Json<WebhookView>, ApiError> {
    let changed = state
        .rt
        .webhooks()
        .set_paused(caller.tenant.as_deref(), &id, paused)
        .await
        .map_err(storage)?;
    changed.map(|w| Json(w.into())).ok_or_else(|| unknown(&id))
}

/// Deletes one of the tenant's webhooks and what waits to go to it.
#[utoipa::path(
    delete, path = "/api/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "The webhook's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "The tenant has no webhook by that id", body = ErrorBody),
    )
)]
pub async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.rt.delete_webhook(caller.tenant.as_deref(), &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(unknown(&id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_pattern_takes_what_a_webhook_can_post_to_and_nothing_else() {
        for url in [
            "https://hooks.example.com/concierge",
            "http://127.0.0.1:9791/hooks?x=1",
            "http://localhost.",
            "https://a-b.c1/x/y%20z",
            "http://10.0.0.1:65535",
        ] {
            assert!(url_taken(url), "{url}");
            assert!(concierge::webhook::check_url(url).is_ok(), "{url}");
        }
        for url in [
            "ftp://example.com",
            "http://|\u{90}",
            "http://256.1.1.1",
            "http://1.2.3.4.5",
            "http://a:65536",
            "http://xn--a.com",
            "http://a.com/#frag",
            "HTTP://a.com",
            "http://a b.com",
            "http://a.com/x\u{85}y",
            "http://a.com/x\u{feff}y",
        ] {
            assert!(!url_taken(url), "{url}");
        }
    }
}
