//! The A2A endpoint (Agent2Agent protocol 1.0): other agents talk to
//! concierge's agents as A2A peers (docs/a2a.md).
//!
//! - Agent cards: the assistant's at `/.well-known/agent-card.json` (the
//!   default agent, every goal a skill) and one per agent at
//!   `/a2a/agents/{agent}/.well-known/agent-card.json` ([`card`]).
//! - Both bindings for each: JSON-RPC 2.0 at `.../jsonrpc` ([`jsonrpc`])
//!   and HTTP+JSON/REST under `.../rest` ([`rest`]), streaming over SSE.
//! - A task is a run, a context a session ([`ops`]): a message without
//!   `contextId` starts a session; a run parked on a confirmation or a
//!   choice is `input-required`, answered by a message on the same task
//!   ([`answer`]). Tasks are read from the session's event log ([`record`],
//!   [`task`]), and followed live on its event stream ([`stream`]).
//! - Callers are the API's bearer tokens: a tenant sees only its own tasks
//!   and contexts; another's is "task not found".

pub mod answer;
pub mod card;
pub mod error;
pub mod ids;
pub mod jsonrpc;
pub mod ops;
pub mod params;
pub mod push;
pub mod record;
pub mod rest;
pub mod service;
pub mod sse;
pub mod stream;
pub mod task;

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use concierge::StreamCursor;

use crate::ground::{ApiError, ApiState, Caller};
use card::Door;
pub use error::A2aError;
use ops::Ctx;

/// What the A2A endpoint is told by the server: where it is reached, and
/// whether callers need a token.
#[derive(Clone, Debug, Default)]
pub struct A2aSettings {
    /// The server's public URL (`https://agents.example.com`); the
    /// request's `Host` otherwise.
    pub public_url: Option<String>,
    /// Whether the server asks for bearer tokens (the cards say so).
    pub secured: bool,
}

/// The agent cards, served without a token (they are how a peer finds out
/// what to call, and how to authenticate).
pub fn cards<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    ApiState: FromRef<S>,
{
    Router::new()
        .route("/.well-known/agent-card.json", get(assistant_card))
        .route("/a2a/.well-known/agent-card.json", get(assistant_card))
        .route("/a2a/agents/{agent}/.well-known/agent-card.json", get(agent_card))
}

/// The endpoints of both bindings, for the assistant (`/a2a/...`) and each
/// agent (`/a2a/agents/{agent}/...`).
pub fn endpoints<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    ApiState: FromRef<S>,
{
    let mut router = Router::new();
    for base in ["/a2a", "/a2a/agents/{agent}"] {
        router = router
            .route(&format!("{base}/jsonrpc"), post(rpc))
            .route(&format!("{base}/rest/message:send"), post(rest_send))
            .route(&format!("{base}/rest/message:stream"), post(rest_stream))
            .route(&format!("{base}/rest/tasks"), get(rest_list))
            .route(&format!("{base}/rest/tasks/{{task}}"), get(rest_task).post(rest_task))
            .route(
                &format!("{base}/rest/tasks/{{task}}/pushNotificationConfigs"),
                get(rest_push).post(rest_push),
            )
            .route(
                &format!("{base}/rest/tasks/{{task}}/pushNotificationConfigs/{{config}}"),
                get(rest_push).delete(rest_push),
            )
            .route(&format!("{base}/rest/extendedAgentCard"), get(rest::extended_card));
    }
    router
}

/// The door a request's path names: an agent of the catalogue, or the assistant.
fn door(state: &ApiState, params: &HashMap<String, String>) -> Result<Door, A2aError> {
    match params.get("agent") {
        None => Ok(Door::Assistant),
        Some(agent) => {
            let catalog = state.runtime().catalog();
            if catalog.agent(&agent.as_str().into()).is_none() {
                let known: Vec<String> = catalog.agent_ids().iter().map(ToString::to_string).collect();
                return Err(A2aError::Server(ApiError::field(
                    StatusCode::NOT_FOUND,
                    "agent",
                    format!("there is no agent {agent:?}; agents: {}", known.join(", ")),
                )));
            }
            Ok(Door::Agent(agent.clone()))
        }
    }
}

/// Refuses an `A2A-Version` this server does not speak (1.x is taken; no
/// header is taken as this version too).
pub fn check_version(headers: &HeaderMap) -> Result<(), A2aError> {
    let Some(value) = headers.get("a2a-version") else {
        return Ok(());
    };
    let text = value.to_str().unwrap_or("\u{fffd}").trim();
    if text.is_empty() || text.split('.').next() == Some("1") {
        Ok(())
    } else {
        Err(A2aError::VersionNotSupported(text.to_string()))
    }
}

/// The place a re-attaching client sends (`Last-Event-ID`), if it sends one.
pub fn last_event_id(headers: &HeaderMap) -> Result<Option<StreamCursor>, A2aError> {
    match headers.get("last-event-id") {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .unwrap_or("\u{fffd}")
            .parse::<StreamCursor>()
            .map(Some)
            .map_err(|error| A2aError::field("Last-Event-ID", format!("{error}"))),
    }
}

/// Where the server is reached: the configured public URL, else the request's `Host`.
fn base_url(settings: &A2aSettings, headers: &HeaderMap) -> String {
    if let Some(url) = &settings.public_url {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}")
}

async fn assistant_card(
    State(state): State<ApiState>,
    Extension(settings): Extension<A2aSettings>,
    headers: HeaderMap,
) -> Response {
    serve_card(&state, &settings, &headers, &Door::Assistant)
}

async fn agent_card(
    State(state): State<ApiState>,
    Extension(settings): Extension<A2aSettings>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    serve_card(&state, &settings, &headers, &Door::Agent(agent))
}

fn serve_card(state: &ApiState, settings: &A2aSettings, headers: &HeaderMap, door: &Door) -> Response {
    let catalog = state.runtime().catalog();
    match card::card(&catalog, door, &base_url(settings, headers), settings.secured) {
        Some(card) => Json(card).into_response(),
        None => {
            let known: Vec<String> = catalog.agent_ids().iter().map(ToString::to_string).collect();
            ApiError::field(
                StatusCode::NOT_FOUND,
                "agent",
                format!("there is no agent with a card here; agents: {}", known.join(", ")),
            )
            .into_response()
        }
    }
}

/// What every A2A request starts from: the server's state, the caller, and
/// the door its path names (with the path's other parameters).
struct Entry {
    state: ApiState,
    caller: Caller,
    door: Door,
    params: HashMap<String, String>,
}

impl Entry {
    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            state: &self.state,
            caller: &self.caller,
            door: &self.door,
        }
    }
}

impl<S> FromRequestParts<S> for Entry
where
    S: Send + Sync,
    ApiState: FromRef<S>,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let caller = Caller::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let params = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map(|Path(p)| p)
            .unwrap_or_default();
        let state = ApiState::from_ref(state);
        let door = door(&state, &params).map_err(IntoResponse::into_response)?;
        Ok(Self {
            state,
            caller,
            door,
            params,
        })
    }
}

async fn rpc(entry: Entry, headers: HeaderMap, body: Bytes) -> Response {
    jsonrpc::handle(entry.ctx(), &headers, body).await
}

async fn rest_send(entry: Entry, headers: HeaderMap, body: Bytes) -> Response {
    rest::send(entry.ctx(), &headers, body).await
}

async fn rest_stream(entry: Entry, headers: HeaderMap, body: Bytes) -> Response {
    rest::stream(entry.ctx(), &headers, body).await
}

async fn rest_list(entry: Entry, Query(query): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    rest::list(entry.ctx(), &headers, &query).await
}

async fn rest_push(entry: Entry, method: Method, headers: HeaderMap, body: Bytes) -> Response {
    let task = entry.params.get("task").cloned().unwrap_or_default();
    let config = entry.params.get("config").cloned();
    rest::push_configs(entry.ctx(), &method, &headers, &task, config.as_deref(), body).await
}

async fn rest_task(
    entry: Entry,
    method: Method,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let task = entry.params.get("task").cloned().unwrap_or_default();
    rest::task(entry.ctx(), &method, &headers, &task, &query).await
}
