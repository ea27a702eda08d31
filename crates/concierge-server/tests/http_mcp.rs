//! The MCP servers' resources and prompts over the HTTP API, through real
//! HTTP with API tokens: listed and read for any tenant's token, refused
//! without one, with errors that name the field (an unknown server, a
//! missing `uri`, a missing or unknown prompt argument). The MCP server is
//! an rmcp server written here, over streamable HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use concierge::Runtime;
use concierge::mcp::McpServerConfig;
use concierge_server::{HttpApi, TokenConfig, Tokens};
use reqwest::StatusCode;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// One resource, one template, one prompt with a required argument.
#[derive(Clone)]
struct Docs;

impl ServerHandler for Docs {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("docs://handbook", "handbook").with_title("The handbook"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("docs://pages/{n}", "page"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "docs://handbook" {
            return Err(ErrorData::resource_not_found(
                format!("no document {}", request.uri),
                None,
            ));
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::text("Refunds take five days.", request.uri)]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "summarize",
            Some("Summarize a topic"),
            Some(vec![PromptArgument::new("topic").with_required(true)]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let topic = request
            .arguments
            .and_then(|a| a.get("topic").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default();
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, format!("Summarize {topic}."))]).into())
    }
}

fn token(token: &str, tenant: &str) -> TokenConfig {
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    TokenConfig {
        hash: format!("sha256:{hex}"),
        tenant: tenant.into(),
        user: "someone".into(),
    }
}

/// concierge serving the API with two tenants' tokens, over a runtime whose MCP server `docs` is [`Docs`].
async fn start() -> String {
    let service = StreamableHttpService::new(
        || Ok(Docs),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mcp = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await;
    });
    let rt = Runtime::builder()
        .in_memory()
        .mcp_server("docs", McpServerConfig::http(mcp))
        .build()
        .await
        .unwrap();
    let tokens = Tokens::from_config(&[token("acme-token", "acme"), token("globex-token", "globex")]).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(HttpApi::new(rt).tokens(tokens).serve(listener, std::future::pending()));
    base
}

async fn call(
    base: &str,
    token: Option<&str>,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new().request(method, format!("{base}/api/v1{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

async fn get(base: &str, path: &str) -> (StatusCode, Value) {
    call(base, Some("acme-token"), reqwest::Method::GET, path, None).await
}

#[tokio::test]
async fn resources_are_listed_and_read_for_a_caller_with_a_token() {
    let base = start().await;
    let (status, body) = call(&base, None, reqwest::Method::GET, "/mcp/servers/docs/resources", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    let (status, body) = get(&base, "/mcp/servers").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"servers": [{"name": "docs"}]}));

    for token in ["acme-token", "globex-token"] {
        let (status, body) = call(
            &base,
            Some(token),
            reqwest::Method::GET,
            "/mcp/servers/docs/resources",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["resources"][0]["uri"], "docs://handbook");
        assert_eq!(body["resources"][0]["title"], "The handbook");
        assert_eq!(body["templates"][0]["uri_template"], "docs://pages/{n}");
    }

    let (status, body) = get(&base, "/mcp/servers/docs/resource?uri=docs%3A%2F%2Fhandbook").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], "Refunds take five days.");
    assert_eq!(body["uri"], "docs://handbook");

    let (status, body) = get(&base, "/mcp/servers/docs/resource").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["field"], "uri");

    let (status, body) = get(&base, "/mcp/servers/elsewhere/resources").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["field"], "server");
    assert!(
        body["error"].as_str().unwrap().contains("the servers are docs"),
        "{body}"
    );

    let (status, body) = get(&base, "/mcp/servers/docs/resource?uri=docs%3A%2F%2Fnothing").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("no document docs://nothing"),
        "{body}"
    );
}

#[tokio::test]
async fn prompts_are_listed_and_filled_in_and_bad_arguments_are_named() {
    let base = start().await;
    let (status, body) = get(&base, "/mcp/servers/docs/prompts").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["prompts"][0]["name"], "summarize");
    assert_eq!(
        body["prompts"][0]["arguments"][0],
        json!({"name": "topic", "required": true})
    );

    let post = |path: &'static str, body: Value| {
        let base = base.clone();
        async move { call(&base, Some("globex-token"), reqwest::Method::POST, path, Some(body)).await }
    };
    let (status, body) = post(
        "/mcp/servers/docs/prompts/summarize",
        json!({"arguments": {"topic": "refunds"}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], "Summarize refunds.");
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "text": "Summarize refunds."})
    );

    let (status, body) = post("/mcp/servers/docs/prompts/summarize", json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["field"], "arguments");
    assert!(body["error"].as_str().unwrap().contains("give topic"), "{body}");

    let (status, body) = post(
        "/mcp/servers/docs/prompts/summarize",
        json!({"arguments": {"topic": "x", "tone": "dry"}}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["error"].as_str().unwrap().contains("no argument tone"), "{body}");

    let (status, body) = post("/mcp/servers/docs/prompts/dance", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["field"], "name");
}
