//! The OpenAPI 3.1 document, derived from the handlers' annotations and the
//! body types (served at `/openapi.json`).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use concierge::Readiness;
use serde_json::{Value, json};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::ground::ApiState;
use crate::http::types::{Health, Ready};
use crate::http::{catalog, events, forks, mcp, memories, schedules, sessions, webhooks};

/// The API's description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "concierge",
        description = "Durable, goal-driven, multi-agent assistants over HTTP: sessions, runs, confirmations, choices and their events as Server-Sent Events."
    ),
    paths(
        health,
        ready,
        sessions::create,
        sessions::list,
        sessions::show,
        sessions::post_message,
        sessions::confirm,
        sessions::choose,
        sessions::answer,
        sessions::end,
        forks::fork,
        forks::replay,
        events::events,
        catalog::agents,
        catalog::goals,
        catalog::tools,
        memories::list,
        memories::remember,
        memories::forget,
        memories::forget_all,
        schedules::list,
        schedules::add,
        schedules::show,
        schedules::pause,
        schedules::resume,
        schedules::delete,
        webhooks::list,
        webhooks::add,
        webhooks::show,
        webhooks::deliveries,
        webhooks::pause,
        webhooks::resume,
        webhooks::delete,
        mcp::servers,
        mcp::resources,
        mcp::resource,
        mcp::prompts,
        mcp::prompt,
        crate::agui::run,
        crate::openai::models::list,
        crate::openai::chat::completions,
    ),
    components(schemas(crate::openai::stream::ChatCompletionChunk)),
    tags(
        (name = "sessions", description = "Conversations and their runs"),
        (name = "catalog", description = "Agents, goals and tools"),
        (name = "memories", description = "What is remembered about the caller across conversations"),
        (name = "schedules", description = "The caller's runs at a time or on a cron expression"),
        (name = "webhooks", description = "Where the server posts, signed, when the tenant's runs finish, need the person or fail, and when its schedules fire"),
        (name = "mcp", description = "The MCP servers' resources and prompts (read-only)"),
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

/// Whether the server has resumed the unfinished runs it found at start:
/// 200 once they are all under way, 503 (with `Retry-After`) until then
/// or when they could not be. `/healthz` answers meanwhile.
#[utoipa::path(
    get, path = "/readyz", tag = "catalog",
    responses(
        (status = 200, description = "Every unfinished run found at start is under way again", body = Ready),
        (status = 503, description = "Still resuming them, or they could not be", body = Ready,
            headers(("Retry-After" = u64, description = "Seconds to wait before asking again"))),
    )
)]
pub async fn ready(State(state): State<ApiState>) -> Response {
    readiness(state.rt.readiness())
}

/// The answer to `/readyz` for `readiness`.
fn readiness(readiness: Readiness) -> Response {
    let (status, error) = match readiness {
        Readiness::Ready => {
            return Json(Ready {
                status: "ready".into(),
                error: None,
            })
            .into_response();
        }
        Readiness::Recovering => ("recovering", None),
        Readiness::Failed { error } => ("failed", Some(error)),
    };
    let body = Json(Ready {
        status: status.into(),
        error,
    });
    (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "1")], body).into_response()
}

/// The OpenAPI document, with what only the running server knows or the
/// Rust types cannot say: the agents a session may name, and that an
/// `amend` decision needs its arguments.
pub async fn document(State(state): State<ApiState>) -> Json<Value> {
    let agents: Vec<String> = state.rt.catalog().agent_ids().iter().map(ToString::to_string).collect();
    let models = state.rt.model_names();
    Json(described(&agents, &models))
}

/// The document for a server with `agents` and `models` (those a replay may name).
fn described(agents: &[String], models: &[String]) -> Value {
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
    if let Some(model) = doc.pointer_mut("/components/schemas/ReplayRequest/properties/model") {
        model["enum"] = models
            .iter()
            .map(|m| Value::from(m.as_str()))
            .chain([Value::Null])
            .collect();
    }
    if let Some(request) = doc.pointer_mut("/components/schemas/ScheduleRequest") {
        describe_schedule_request(request, agents);
    }
    add_door_responses(&mut doc);
    doc
}

/// What a schedule request's types cannot say: the agents it may name, the
/// cron expressions accepted, and that it gives exactly one of `at`,
/// `in_minutes` and `cron`.
fn describe_schedule_request(request: &mut Value, agents: &[String]) {
    request["properties"]["agent"]["enum"] = agents
        .iter()
        .map(|a| Value::from(a.as_str()))
        .chain([Value::Null])
        .collect();
    request["properties"]["cron"]["pattern"] = Value::from(concierge::schedule::CRON_PATTERN);
    let when = [
        ("at", json!({"type": "string", "format": "date-time"})),
        (
            "in_minutes",
            json!({"type": "integer", "minimum": 0, "maximum": 5_256_000}),
        ),
        (
            "cron",
            json!({"type": "string", "pattern": concierge::schedule::CRON_PATTERN}),
        ),
    ];
    let branches: Vec<Value> = when
        .iter()
        .map(|(name, schema)| {
            let mut properties = serde_json::Map::new();
            for (other, _) in &when {
                properties.insert((*other).to_string(), json!({"type": "null"}));
            }
            properties.insert((*name).to_string(), schema.clone());
            json!({"required": [name], "properties": properties})
        })
        .collect();
    request["oneOf"] = Value::Array(branches);
}

/// The doors' refusals ([`super::doors`]) on every operation they guard:
/// 421 for a Host that is not the server's, 403 for a page of another
/// origin (every path but `/healthz`), and 415 for a body not sent as JSON
/// (every operation that takes one). In OpenAI's shape under `/v1/`.
fn add_door_responses(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        if path == "/healthz" || path == "/readyz" {
            continue;
        }
        let schema = if path.starts_with("/v1/") {
            "#/components/schemas/OpenAiErrorBody"
        } else {
            "#/components/schemas/ErrorBody"
        };
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, operation) in item.iter_mut() {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            let takes_body = operation.get("requestBody").is_some();
            let Some(responses) = operation.get_mut("responses").and_then(Value::as_object_mut) else {
                continue;
            };
            let mut refusal = |status: &str, description: &str| {
                responses.entry(status.to_string()).or_insert_with(|| {
                    json!({
                        "description": description,
                        "content": {"application/json": {"schema": {"$ref": schema}}},
                    })
                });
            };
            refusal(
                "403",
                "The request comes from a web page of another origin (its Origin header) that is not among the server's CORS origins",
            );
            refusal(
                "421",
                "The Host header names neither the server's address nor one of its allowed hosts",
            );
            if takes_body {
                refusal(
                    "415",
                    "The body is not sent as JSON: send it with Content-Type: application/json",
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_document_names_the_agents_and_what_amend_needs() {
        let doc = described(&["calculator".to_string(), "hub".to_string()], &[]);
        let agent = &doc["components"]["schemas"]["CreateSession"]["properties"]["agent"];
        assert_eq!(agent["enum"], json!(["calculator", "hub", null]));
        let confirm = &doc["components"]["schemas"]["ConfirmRequest"];
        assert_eq!(confirm["then"]["required"], json!(["arguments"]));
    }

    #[test]
    fn the_document_says_what_the_doors_refuse() {
        let doc = described(&[], &[]);
        let messages = &doc["paths"]["/api/v1/sessions/{id}/messages"]["post"]["responses"];
        for status in ["403", "415", "421"] {
            assert_eq!(
                messages[status]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                "{status}"
            );
        }
        let list = &doc["paths"]["/api/v1/sessions"]["get"]["responses"];
        assert!(list.get("421").is_some() && list.get("415").is_none());
        let chat = &doc["paths"]["/v1/chat/completions"]["post"]["responses"]["415"];
        assert_eq!(
            chat["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/OpenAiErrorBody"
        );
        assert!(doc["paths"]["/healthz"]["get"]["responses"].get("421").is_none());
        assert!(doc["paths"]["/readyz"]["get"]["responses"].get("503").is_some());
    }

    #[tokio::test]
    async fn readiness_is_200_once_ready_and_503_with_retry_after_before_or_after_a_failure() {
        async fn answer(readiness: Readiness) -> (StatusCode, Option<String>, Value) {
            let response = super::readiness(readiness);
            let status = response.status();
            let retry = response
                .headers()
                .get(header::RETRY_AFTER)
                .map(|v| v.to_str().unwrap_or_default().to_string());
            let bytes = axum::body::to_bytes(response.into_body(), 4096)
                .await
                .unwrap_or_default();
            (status, retry, serde_json::from_slice(&bytes).unwrap_or_default())
        }
        assert_eq!(
            answer(Readiness::Ready).await,
            (StatusCode::OK, None, json!({"status": "ready"}))
        );
        assert_eq!(
            answer(Readiness::Recovering).await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Some("1".into()),
                json!({"status": "recovering"})
            )
        );
        let failed = Readiness::Failed {
            error: "storage error: disk I/O error".into(),
        };
        assert_eq!(
            answer(failed).await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Some("1".into()),
                json!({"status": "failed", "error": "storage error: disk I/O error"})
            )
        );
    }
}
