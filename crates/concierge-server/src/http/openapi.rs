//! The OpenAPI 3.1 document, derived from the handlers' annotations and the
//! body types (served at `/openapi.json`).

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

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
        crate::agui::run,
        crate::openai::models::list,
        crate::openai::chat::completions,
    ),
    components(schemas(crate::openai::stream::ChatCompletionChunk)),
    tags(
        (name = "sessions", description = "Conversations and their runs"),
        (name = "catalog", description = "Agents, goals and tools"),
        (name = "agui", description = "The AG-UI protocol: run an agent, stream its events, answer its interrupts"),
        (name = "openai", description = "The OpenAI-compatible chat endpoint: agents as models, the conversation a session named by the X-Concierge-Session header"),
    ),
    modifiers(&BearerTokens),
    // A server configured with API tokens requires one (a 401 otherwise);
    // one without tokens serves loopback only and needs none.
    security(("bearer" = []), ())
)]
pub struct ApiDoc;

/// The API tokens' scheme: `Authorization: Bearer <token>`.
struct BearerTokens;

impl Modify for BearerTokens {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

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
