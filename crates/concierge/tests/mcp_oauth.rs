//! A remote MCP server behind OAuth: concierge finds the authorization
//! server from the server's protected-resource metadata, gets a token with
//! the client-credentials grant, sends it on every request, gets a new one
//! when the server refuses it, and a wrong secret is reported naming the
//! server. The authorization server and the MCP server are real HTTP
//! servers on loopback (axum and rmcp), written here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use concierge::mcp::{McpOAuth, McpServerConfig};
use concierge::model::{Model, ModelContext};
use concierge::{AgentSpec, Message, ModelError, ModelReply, ModelRequest, RunOptions, Runtime};
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

const CLIENT: &str = "concierge";
const SECRET: &str = "s3cret";

/// The authorization server's state: tokens issued, and the one the MCP
/// server accepts now.
#[derive(Default)]
struct Issuer {
    base: Mutex<String>,
    issued: AtomicUsize,
    valid: Mutex<Option<String>>,
    /// Grants asked for, with their client id and scopes.
    grants: Mutex<Vec<String>>,
}

/// An MCP server with one tool, `whoami`.
#[derive(Clone)]
struct Crm;

impl ServerHandler for Crm {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("crm", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(json!({"type": "object"}).as_object().cloned().unwrap());
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "whoami",
            "Says who is calling.",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text("an authorized client")]).into())
    }
}

async fn protected_resource(State(issuer): State<Arc<Issuer>>) -> impl IntoResponse {
    let base = issuer.base.lock().unwrap().clone();
    axum::Json(json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}))
}

async fn authorization_server(State(issuer): State<Arc<Issuer>>) -> impl IntoResponse {
    let base = issuer.base.lock().unwrap().clone();
    axum::Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        "grant_types_supported": ["client_credentials"],
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

async fn token(State(issuer): State<Arc<Issuer>>, Form(form): Form<HashMap<String, String>>) -> Response {
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    issuer.grants.lock().unwrap().push(format!(
        "{} {} {}",
        field("grant_type"),
        field("client_id"),
        field("scope")
    ));
    if field("grant_type") != "client_credentials" || field("client_id") != CLIENT || field("client_secret") != SECRET {
        let body = json!({"error": "invalid_client", "error_description": "unknown client or wrong secret"});
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    let n = issuer.issued.fetch_add(1, Ordering::SeqCst) + 1;
    let token = format!("tok-{n}");
    *issuer.valid.lock().unwrap() = Some(token.clone());
    axum::Json(json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600})).into_response()
}

/// The MCP endpoint takes only the token issued last.
async fn bearer_only(State(issuer): State<Arc<Issuer>>, headers: HeaderMap, request: Request, next: Next) -> Response {
    let sent = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let valid = issuer.valid.lock().unwrap().clone();
    if sent.is_some() && sent == valid {
        return next.run(request).await;
    }
    let base = issuer.base.lock().unwrap().clone();
    let challenge = format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#);
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)]).into_response()
}

async fn serve(issuer: Arc<Issuer>) -> SocketAddr {
    let mcp = StreamableHttpService::new(
        || Ok(Crm),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let guarded = axum::Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(issuer.clone(), bearer_only));
    let app = axum::Router::new()
        .route("/.well-known/oauth-protected-resource", get(protected_resource))
        .route("/.well-known/oauth-protected-resource/mcp", get(protected_resource))
        .route("/.well-known/oauth-authorization-server", get(authorization_server))
        .route("/token", post(token))
        .with_state(issuer.clone())
        .merge(guarded);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    *issuer.base.lock().unwrap() = format!("http://{addr}");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// Calls `whoami`, then says what it answered.
struct Caller;

impl Model for Caller {
    fn name(&self) -> String {
        "caller".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let result = request.messages.iter().rev().find_map(|m| match m {
            Message::Tool { .. } => Some(m.text()),
            Message::User { .. } => Some(String::new()),
            _ => None,
        });
        let reply = match result {
            Some(text) if !text.is_empty() => ModelReply::text(format!("the server says: {text}")),
            _ => ModelReply::tool_call("whoami", "{}"),
        };
        Box::pin(async move { Ok(reply) })
    }
}

async fn runtime(addr: SocketAddr, oauth: McpOAuth) -> Runtime {
    Runtime::builder()
        .mcp_server(
            "crm",
            McpServerConfig::http(format!("http://{addr}/mcp"))
                .trusted()
                .oauth(oauth),
        )
        .agent(AgentSpec::new("desk").toolset("crm"))
        .model(Caller)
        .in_memory()
        .build()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_behind_oauth_is_called_with_a_token_and_a_refused_token_is_renewed() {
    let issuer = Arc::new(Issuer::default());
    let addr = serve(issuer.clone()).await;
    let rt = runtime(addr, McpOAuth::with_secret(CLIENT, SECRET).scopes(["crm.read"])).await;
    let desk = rt.client("desk").unwrap();

    let out = desk.run("who am I?", RunOptions::new().session_id("a")).await.unwrap();
    assert_eq!(
        out.reply.as_deref(),
        Some("the server says: an authorized client"),
        "{out:?}"
    );
    assert_eq!(
        issuer.issued.load(Ordering::SeqCst),
        1,
        "one token for the whole connection"
    );
    assert_eq!(
        issuer.grants.lock().unwrap()[0],
        "client_credentials concierge crm.read",
        "the client-credentials grant, with the configured scopes"
    );

    // The server stops accepting the token (revoked): the next request is
    // refused, a new token is got, and the call goes through.
    *issuer.valid.lock().unwrap() = Some("revoked".into());
    let out = desk
        .run("who am I now?", RunOptions::new().session_id("b"))
        .await
        .unwrap();
    assert_eq!(
        out.reply.as_deref(),
        Some("the server says: an authorized client"),
        "{out:?}"
    );
    assert_eq!(issuer.issued.load(Ordering::SeqCst), 2, "renewed once");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_or_a_missing_one_is_reported_naming_the_server() {
    let issuer = Arc::new(Issuer::default());
    let addr = serve(issuer.clone()).await;

    let refused = refusal(runtime(addr, McpOAuth::with_secret(CLIENT, "not-it")).await).await;
    assert!(refused.contains("crm"), "names the server: {refused}");
    assert!(
        refused.contains("could not get an OAuth access token") && refused.contains("invalid_client"),
        "says why: {refused}"
    );
    assert_eq!(issuer.issued.load(Ordering::SeqCst), 0);

    let rt = runtime(
        addr,
        McpOAuth::client_credentials(CLIENT, "CONCIERGE_TEST_NO_SUCH_SECRET_VAR"),
    )
    .await;
    let refused = refusal(rt).await;
    assert!(
        refused.contains("set CONCIERGE_TEST_NO_SUCH_SECRET_VAR to the client secret"),
        "says what to set: {refused}"
    );
}

/// Why `rt`'s run that needs the server fails (`rt` is shut down after).
async fn refusal(rt: Runtime) -> String {
    let refused = rt
        .client("desk")
        .unwrap()
        .run("who am I?", RunOptions::new().session_id("a"))
        .await
        .unwrap_err()
        .to_string();
    rt.shutdown().await;
    refused
}

#[test]
fn oauth_is_read_from_the_configuration_and_checked() {
    let config: McpServerConfig = toml::from_str(
        r#"
url = "https://mcp.example.com/mcp"
oauth = { client_id = "concierge", client_secret_env = "CRM_SECRET", scopes = ["crm.read"] }
"#,
    )
    .unwrap();
    let oauth = config.oauth.clone().unwrap();
    assert_eq!(oauth.client_id, "concierge");
    assert_eq!(oauth.client_secret_env.as_deref(), Some("CRM_SECRET"));
    assert_eq!(oauth.scopes, ["crm.read"]);
    config.check("crm").unwrap();
    assert!(
        !format!("{:?}", McpOAuth::with_secret("c", "hidden")).contains("hidden"),
        "redacted"
    );

    let stdio =
        McpServerConfig::stdio("crm-server", Vec::<String>::new()).oauth(McpOAuth::client_credentials("c", "S"));
    let refused = stdio.check("crm").unwrap_err().to_string();
    assert!(refused.contains("oauth is for a server reached by url"), "{refused}");
    let no_secret = McpServerConfig::http("https://mcp.example.com/mcp").oauth(McpOAuth {
        client_id: "c".into(),
        ..McpOAuth::default()
    });
    let refused = no_secret.check("crm").unwrap_err().to_string();
    assert!(refused.contains("client_secret_env"), "{refused}");
    let unknown = toml::from_str::<McpServerConfig>(
        r#"
url = "https://mcp.example.com/mcp"
oauth = { client_id = "c", client_secret = "in-a-file" }
"#,
    );
    assert!(unknown.is_err(), "a secret is never read from a file");
}
