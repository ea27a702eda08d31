//! The OpenAPI 3.1 document, derived from the handlers' annotations and the
//! body types (served at `/openapi.json`).

use axum::Json;
use utoipa::OpenApi;

use super::types::Health;
use super::{catalog, events, sessions};

/// The API's description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "concierge",
        description = "Durable, goal-driven, multi-agent assistants over HTTP: sessions, runs, confirmations, choices and their events as Server-Sent Events."
    ),
    paths(
        health,
        sessions::create,
        sessions::list,
        sessions::show,
        sessions::post_message,
        sessions::confirm,
        sessions::choose,
        sessions::end,
        events::events,
        catalog::agents,
        catalog::goals,
        catalog::tools,
        crate::openai::models::list,
        crate::openai::chat::completions,
    ),
    components(schemas(crate::openai::stream::ChatCompletionChunk)),
    tags(
        (name = "sessions", description = "Conversations and their runs"),
        (name = "catalog", description = "Agents, goals and tools"),
        (name = "openai", description = "The OpenAI-compatible chat endpoint: agents as models, the conversation a session named by the X-Concierge-Session header"),
    )
)]
pub struct ApiDoc;

/// Whether the server answers.
#[utoipa::path(
    get, path = "/healthz", tag = "catalog",
    responses((status = 200, description = "The server is up", body = Health))
)]
pub async fn health() -> Json<Health> {
    Json(Health { status: "ok".into() })
}

/// The OpenAPI document.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
