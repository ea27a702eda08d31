//! The MCP servers' resources and prompts, read-only: what the web chat
//! offers to attach to a message and as conversation starters. Every route
//! needs the caller's token like the rest of the API; the servers are the
//! runtime's own (configured in `concierge.toml`), shared by every tenant,
//! and these routes only list and read.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use concierge::mcp::{FilledPrompt, McpClient, McpError, McpPrompt, McpResource, McpResourceTemplate, ResourceText};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ground::body::{JsonBody, QueryParams};
use crate::ground::{ApiError, ApiState, Caller, ErrorBody};

/// `GET /api/v1/mcp/servers`.
#[derive(Debug, Serialize, ToSchema)]
pub struct McpServerList {
    /// The configured MCP servers, by name.
    pub servers: Vec<McpServerView>,
}

/// An MCP server.
#[derive(Debug, Serialize, ToSchema)]
pub struct McpServerView {
    /// Its name (as in `[mcp_servers.NAME]`).
    pub name: String,
}

/// `GET /api/v1/mcp/servers/{server}/resources`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResourceList {
    /// The server.
    pub server: String,
    /// Its resources.
    #[schema(value_type = Vec<Object>)]
    pub resources: Vec<McpResource>,
    /// Its resource templates (URIs with `{placeholders}`).
    #[schema(value_type = Vec<Object>)]
    pub templates: Vec<McpResourceTemplate>,
}

/// `GET /api/v1/mcp/servers/{server}/resource?uri=…`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ResourceQuery {
    /// The resource's URI (listed, or made from a template).
    #[param(required = true, min_length = 1, pattern = r"\S")]
    pub uri: Option<String>,
}

/// A resource's text.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResourceView {
    /// The server.
    pub server: String,
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// Its text (binary parts described; a long text is cut, with a note).
    pub text: String,
}

impl From<ResourceText> for ResourceView {
    fn from(read: ResourceText) -> Self {
        Self {
            server: read.server,
            uri: read.uri,
            mime_type: read.mime_type,
            text: read.text,
        }
    }
}

/// `GET /api/v1/mcp/servers/{server}/prompts`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PromptList {
    /// The server.
    pub server: String,
    /// Its prompts, each with its arguments.
    #[schema(value_type = Vec<Object>)]
    pub prompts: Vec<McpPrompt>,
}

/// `POST /api/v1/mcp/servers/{server}/prompts/{name}`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GetPrompt {
    /// The prompt's arguments, by name (strings).
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// A prompt filled in.
#[derive(Debug, Serialize, ToSchema)]
pub struct PromptView {
    /// The server.
    pub server: String,
    /// The prompt's name.
    pub name: String,
    /// What the server says about it.
    pub description: Option<String>,
    /// Its messages (`role` is `user` or `assistant`, `text` what is said).
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<concierge::mcp::PromptMessage>,
    /// The text to send as the first message: its user messages.
    pub text: String,
}

impl From<FilledPrompt> for PromptView {
    fn from(filled: FilledPrompt) -> Self {
        Self {
            text: filled.user_text(),
            server: filled.server,
            name: filled.name,
            description: filled.description,
            messages: filled.messages,
        }
    }
}

/// The client of `server`, or a 404 naming the field.
fn client(state: &ApiState, server: &str) -> Result<Arc<McpClient>, ApiError> {
    state.rt.mcp_client(server).ok_or_else(|| {
        let known = state.rt.mcp_servers();
        let hint = if known.is_empty() {
            "no MCP server is configured".to_string()
        } else {
            format!("the servers are {}", known.join(", "))
        };
        ApiError::field(
            StatusCode::NOT_FOUND,
            "server",
            format!("there is no MCP server {server:?}; {hint}"),
        )
    })
}

/// A server that failed or refused: 502, in its words.
fn bad_gateway(error: McpError) -> ApiError {
    ApiError::new(StatusCode::BAD_GATEWAY, error.to_string())
}

/// The configured MCP servers.
#[utoipa::path(
    get, path = "/api/v1/mcp/servers", tag = "mcp",
    responses((status = 200, description = "The MCP servers", body = McpServerList))
)]
pub async fn servers(State(state): State<ApiState>, _caller: Caller) -> Json<McpServerList> {
    let servers = state
        .rt
        .mcp_servers()
        .into_iter()
        .map(|name| McpServerView { name })
        .collect();
    Json(McpServerList { servers })
}

/// A server's resources and resource templates.
#[utoipa::path(
    get, path = "/api/v1/mcp/servers/{server}/resources", tag = "mcp",
    params(("server" = String, Path, description = "The MCP server's name")),
    responses(
        (status = 200, description = "Its resources", body = ResourceList),
        (status = 404, description = "No such MCP server", body = ErrorBody),
        (status = 502, description = "The server failed or refused", body = ErrorBody),
    )
)]
pub async fn resources(
    State(state): State<ApiState>,
    _caller: Caller,
    Path(server): Path<String>,
) -> Result<Json<ResourceList>, ApiError> {
    let client = client(&state, &server)?;
    let resources = client.resources().await.map_err(bad_gateway)?;
    let templates = client.resource_templates().await.map_err(bad_gateway)?;
    Ok(Json(ResourceList {
        server,
        resources,
        templates,
    }))
}

/// One resource's text.
#[utoipa::path(
    get, path = "/api/v1/mcp/servers/{server}/resource", tag = "mcp",
    params(("server" = String, Path, description = "The MCP server's name"), ResourceQuery),
    responses(
        (status = 200, description = "The resource's text", body = ResourceView),
        (status = 400, description = "The uri parameter is missing or blank", body = ErrorBody),
        (status = 404, description = "No such MCP server, or the server could not read that resource", body = ErrorBody),
    )
)]
pub async fn resource(
    State(state): State<ApiState>,
    _caller: Caller,
    Path(server): Path<String>,
    QueryParams(query): QueryParams<ResourceQuery>,
) -> Result<Json<ResourceView>, ApiError> {
    let uri = query.uri.filter(|u| !u.trim().is_empty()).ok_or_else(|| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            "uri",
            "give the resource's URI as the uri query parameter (see GET .../resources)",
        )
    })?;
    let client = client(&state, &server)?;
    // The server answered that it cannot read it (no such resource, or none
    // at all), or could not answer: either way, nothing to show at this URI.
    let read = client
        .read_resource(&uri)
        .await
        .map_err(|error| ApiError::new(StatusCode::NOT_FOUND, error.to_string()))?;
    Ok(Json(read.into()))
}

/// A server's prompts.
#[utoipa::path(
    get, path = "/api/v1/mcp/servers/{server}/prompts", tag = "mcp",
    params(("server" = String, Path, description = "The MCP server's name")),
    responses(
        (status = 200, description = "Its prompts", body = PromptList),
        (status = 404, description = "No such MCP server", body = ErrorBody),
        (status = 502, description = "The server failed or refused", body = ErrorBody),
    )
)]
pub async fn prompts(
    State(state): State<ApiState>,
    _caller: Caller,
    Path(server): Path<String>,
) -> Result<Json<PromptList>, ApiError> {
    let client = client(&state, &server)?;
    let prompts = client.prompts().await.map_err(bad_gateway)?;
    Ok(Json(PromptList { server, prompts }))
}

/// A prompt filled in with its arguments (`prompts/get`).
#[utoipa::path(
    post, path = "/api/v1/mcp/servers/{server}/prompts/{name}", tag = "mcp",
    params(
        ("server" = String, Path, description = "The MCP server's name"),
        ("name" = String, Path, description = "The prompt's name"),
    ),
    request_body = GetPrompt,
    responses(
        (status = 200, description = "The prompt's messages", body = PromptView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 404, description = "No such MCP server or prompt", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "An argument is missing or not the prompt's, or a field is malformed", body = ErrorBody),
        (status = 502, description = "The server failed or refused", body = ErrorBody),
    )
)]
pub async fn prompt(
    State(state): State<ApiState>,
    _caller: Caller,
    Path((server, name)): Path<(String, String)>,
    JsonBody(body): JsonBody<GetPrompt>,
) -> Result<Json<PromptView>, ApiError> {
    let client = client(&state, &server)?;
    let prompts = client.prompts().await.map_err(bad_gateway)?;
    let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
        return Err(ApiError::field(
            StatusCode::NOT_FOUND,
            "name",
            format!("the MCP server {server} has no prompt {name:?}; see GET .../prompts"),
        ));
    };
    prompt
        .check_arguments(&body.arguments)
        .map_err(|e| ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, "arguments", e))?;
    let filled = client.prompt(&name, body.arguments).await.map_err(bad_gateway)?;
    Ok(Json(filled.into()))
}
