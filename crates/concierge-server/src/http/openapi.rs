//! The OpenAPI 3.1 document, derived from the handlers' annotations and the
//! body types (served at `/openapi.json`).

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::ApiState;
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

/// The OpenAPI document, with what only the running server knows or the
/// Rust types cannot say: the agents a session may name, and that an
/// `amend` decision needs its arguments.
pub async fn document(State(state): State<ApiState>) -> Json<Value> {
    let agents: Vec<String> = state.rt.agents().iter().map(|a| a.id.to_string()).collect();
    Json(described(&agents))
}

/// The document for a server with `agents`.
fn described(agents: &[String]) -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or(Value::Null);
    if let Some(agent) = doc.pointer_mut("/components/schemas/CreateSession/properties/agent") {
        agent["enum"] = agents
            .iter()
            .map(|a| Value::from(a.as_str()))
            .chain([Value::Null])
            .collect();
    }
    if let Some(confirm) = doc.pointer_mut("/components/schemas/ConfirmRequest") {
        confirm["if"] = json!({"properties": {"decision": {"const": "amend"}}, "required": ["decision"]});
        confirm["then"] = json!({"required": ["arguments"], "properties": {"arguments": {"type": "object"}}});
    }
    doc
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_document_names_the_agents_and_what_amend_needs() {
        let doc = described(&["calculator".to_string(), "hub".to_string()]);
        let agent = &doc["components"]["schemas"]["CreateSession"]["properties"]["agent"];
        assert_eq!(agent["enum"], json!(["calculator", "hub", null]));
        let confirm = &doc["components"]["schemas"]["ConfirmRequest"];
        assert_eq!(confirm["then"]["required"], json!(["arguments"]));
    }
}
