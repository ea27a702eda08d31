//! concierge's HTTP API: sessions and their runs under `/api/v1`, each
//! session's events as resumable Server-Sent Events, and the catalogue. The
//! server that mounts it (with `/healthz` and the OpenAPI document at
//! `/openapi.json`) is [`crate::app`].

pub mod catalog;
pub mod events;
pub mod forks;
pub mod mcp;
pub mod memories;
pub mod schedules;
pub mod sessions;
pub mod types;
pub mod webhooks;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{delete, get, post};

use crate::ground::ApiState;
// The server's limits, under the names `concierge serve` has always used
// for its flags' defaults.
pub use crate::ground::{
    DEFAULT_BODY_LIMIT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_RUNS_PER_TENANT,
};

/// The HTTP API's routes, relative to `/api/v1`: sessions, their events and
/// the catalogue.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    ApiState: FromRef<S>,
{
    Router::new()
        .route("/sessions", post(sessions::create).get(sessions::list))
        .route("/sessions/{id}", get(sessions::show))
        .route("/sessions/{id}/messages", post(sessions::post_message))
        .route("/sessions/{id}/confirm", post(sessions::confirm))
        .route("/sessions/{id}/choose", post(sessions::choose))
        .route("/sessions/{id}/answer", post(sessions::answer))
        .route("/sessions/{id}/end", post(sessions::end))
        .route("/sessions/{id}/events", get(events::events))
        .route("/sessions/{id}/fork", post(forks::fork))
        .route("/sessions/{id}/runs/{run}/replay", post(forks::replay))
        .route("/agents", get(catalog::agents))
        .route("/goals", get(catalog::goals))
        .route("/tools", get(catalog::tools))
        .route(
            "/memories",
            get(memories::list)
                .post(memories::remember)
                .delete(memories::forget_all),
        )
        .route("/memories/{id}", delete(memories::forget))
        .route("/schedules", get(schedules::list).post(schedules::add))
        .route("/schedules/{id}", get(schedules::show).delete(schedules::delete))
        .route("/schedules/{id}/pause", post(schedules::pause))
        .route("/schedules/{id}/resume", post(schedules::resume))
        .route("/webhooks", get(webhooks::list).post(webhooks::add))
        .route("/webhooks/{id}", get(webhooks::show).delete(webhooks::delete))
        .route("/webhooks/{id}/deliveries", get(webhooks::deliveries))
        .route("/webhooks/{id}/pause", post(webhooks::pause))
        .route("/webhooks/{id}/resume", post(webhooks::resume))
        .route("/mcp/servers", get(mcp::servers))
        .route("/mcp/servers/{server}/resources", get(mcp::resources))
        .route("/mcp/servers/{server}/resource", get(mcp::resource))
        .route("/mcp/servers/{server}/prompts", get(mcp::prompts))
        .route("/mcp/servers/{server}/prompts/{name}", post(mcp::prompt))
}
