//! An MCP server behind OAuth, for tests: an authorization server (the
//! client-credentials grant for `CLIENT`/`SECRET`; the authorization-code
//! grant with PKCE, dynamic registration and rotating refresh tokens, its
//! person consenting at once or refusing with `deny`) and a protected rmcp
//! server whose one tool `whoami` answers only the token issued last; both
//! real HTTP on loopback. Included by `mcp_oauth.rs` and the CLI's tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;
use sha2::{Digest, Sha256};

pub const CLIENT: &str = "concierge";
pub const SECRET: &str = "s3cret";

/// The authorization server's state: tokens issued, and the one the MCP
/// server accepts now.
#[derive(Default)]
pub struct Issuer {
    base: Mutex<String>,
    pub issued: AtomicUsize,
    pub valid: Mutex<Option<String>>,
    /// Grants asked for, with their client id and scopes.
    pub grants: Mutex<Vec<String>>,
    /// Authorization codes given out: code → (PKCE challenge, client id, redirect URI).
    codes: Mutex<HashMap<String, (String, String, String)>>,
    /// The refresh token that works now (rotated at each refresh).
    pub refresh: Mutex<Option<String>>,
    /// Clients registered dynamically.
    pub registered: AtomicUsize,
    /// The person refuses the sign-in.
    pub deny: AtomicBool,
}

impl Issuer {
    /// A new access token (and, for a person's sign-in, a new refresh token).
    fn issue(&self, refreshable: bool) -> Response {
        let n = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        let token = format!("tok-{n}");
        *self.valid.lock().unwrap() = Some(token.clone());
        let mut body = json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600});
        if refreshable {
            let refresh = format!("ref-{n}");
            *self.refresh.lock().unwrap() = Some(refresh.clone());
            body["refresh_token"] = json!(refresh);
        }
        axum::Json(body).into_response()
    }
}

/// The person at the authorization server: signs in and consents at once
/// (or refuses, with `deny`), and is sent back with a code.
async fn authorize(State(issuer): State<Arc<Issuer>>, Query(query): Query<HashMap<String, String>>) -> Response {
    let field = |name: &str| query.get(name).cloned().unwrap_or_default();
    let (redirect, state) = (field("redirect_uri"), field("state"));
    if issuer.deny.load(Ordering::SeqCst) {
        let to = format!("{redirect}?error=access_denied&error_description=the+person+said+no&state={state}");
        return Redirect::to(&to).into_response();
    }
    if field("code_challenge_method") != "S256" || field("response_type") != "code" {
        return (StatusCode::BAD_REQUEST, "PKCE with S256 and response_type=code only").into_response();
    }
    let code = format!("code-{}", issuer.codes.lock().unwrap().len() + 1);
    issuer.codes.lock().unwrap().insert(
        code.clone(),
        (field("code_challenge"), field("client_id"), redirect.clone()),
    );
    Redirect::to(&format!("{redirect}?code={code}&state={state}")).into_response()
}

/// Dynamic client registration (RFC 7591): a public client.
async fn register(State(issuer): State<Arc<Issuer>>, axum::Json(body): axum::Json<serde_json::Value>) -> Response {
    let n = issuer.registered.fetch_add(1, Ordering::SeqCst) + 1;
    let answer = json!({
        "client_id": format!("dyn-{n}"),
        "client_name": body["client_name"],
        "redirect_uris": body["redirect_uris"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    });
    (StatusCode::CREATED, axum::Json(answer)).into_response()
}

fn invalid_grant(why: &str) -> Response {
    let body = json!({"error": "invalid_grant", "error_description": why});
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
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
        "registration_endpoint": format!("{base}/register"),
        "grant_types_supported": ["client_credentials", "authorization_code", "refresh_token"],
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
    match field("grant_type").as_str() {
        "authorization_code" => {
            let Some((challenge, client, redirect)) = issuer.codes.lock().unwrap().remove(&field("code")) else {
                return invalid_grant("unknown or used code");
            };
            let verified = URL_SAFE_NO_PAD.encode(Sha256::digest(field("code_verifier").as_bytes()));
            if verified != challenge || client != field("client_id") || redirect != field("redirect_uri") {
                return invalid_grant("the code verifier, client or redirect does not match");
            }
            return issuer.issue(true);
        }
        "refresh_token" => {
            let current = issuer.refresh.lock().unwrap().clone();
            if current.is_none() || current != Some(field("refresh_token")) {
                return invalid_grant("unknown refresh token");
            }
            return issuer.issue(true);
        }
        _ => {}
    }
    if field("grant_type") != "client_credentials" || field("client_id") != CLIENT || field("client_secret") != SECRET {
        let body = json!({"error": "invalid_client", "error_description": "unknown client or wrong secret"});
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    issuer.issue(false)
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

pub async fn serve(issuer: Arc<Issuer>) -> SocketAddr {
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
        .route("/authorize", get(authorize))
        .route("/register", post(register))
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
