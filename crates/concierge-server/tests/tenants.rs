//! Tenants, API tokens and users through real HTTP: two tenants that cannot
//! see each other's sessions over any endpoint or stream, the token's user
//! as the run's user, the cap on runs in progress per tenant, and sessions
//! created before their first message surviving a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use concierge::config::TokenConfig;
use concierge::{AgentSpec, Route, Rules, Runtime, Tool, ToolContext, ToolError, ToolSpec};
use concierge_server::{HttpApi, Tokens};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::StatusCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// Says whom the run is for.
struct WhoAmI;

impl Tool for WhoAmI {
    type Args = Nothing;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("whoami", "Says who is asking.", concierge::tool::schema_for::<Nothing>())
            .annotations(concierge::ToolAnnotations {
                read_only: true,
                ..Default::default()
            })
    }

    async fn call(&self, _args: Nothing, cx: ToolContext) -> Result<Value, ToolError> {
        Ok(json!(format!("You are {}.", cx.user.as_deref().unwrap_or("nobody"))))
    }
}

/// Waits until the test lets it finish (a run that stays in progress).
struct Hold(Arc<Semaphore>);

impl Tool for Hold {
    type Args = Nothing;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("hold", "Waits.", concierge::tool::schema_for::<Nothing>()).annotations(
            concierge::ToolAnnotations {
                read_only: true,
                ..Default::default()
            },
        )
    }

    async fn call(&self, _args: Nothing, _cx: ToolContext) -> Result<Value, ToolError> {
        let permit = self.0.acquire().await.map_err(|_| ToolError::failed("closed"))?;
        permit.forget();
        Ok(json!("held"))
    }
}

fn desk() -> AgentSpec {
    AgentSpec::new("desk").tool("whoami").tool("hold").rules(
        Rules::new()
            .route(Route::tool("whoami", json!({})).keywords(["who"]))
            .route(Route::tool("hold", json!({})).keywords(["hold"]))
            .answer("{result}")
            .fallback("Desk here."),
    )
}

const ACME: &str = "acme-token-1";
const GLOBEX: &str = "globex-token-2";

fn token(token: &str, tenant: &str, user: &str) -> TokenConfig {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(token.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    TokenConfig {
        hash: format!("sha256:{hex}"),
        tenant: tenant.into(),
        user: user.into(),
    }
}

struct Server {
    base: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<std::io::Result<()>>>,
    rt: Runtime,
}

impl Server {
    async fn start(db: &Path, hold: Arc<Semaphore>, max_runs: usize) -> Self {
        let rt = Runtime::builder()
            .sqlite(db)
            .tool(WhoAmI)
            .tool(Hold(hold))
            .agent(desk())
            .build()
            .await
            .unwrap();
        let tokens = Tokens::from_config(&[token(ACME, "acme", "jordan"), token(GLOBEX, "globex", "sam")]).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let api = HttpApi::new(rt.clone()).tokens(tokens).max_runs_per_tenant(max_runs);
        let served = tokio::spawn(api.serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            base,
            http: reqwest::Client::new(),
            stop: Some(stop),
            served: Some(served),
            rt,
        }
    }

    async fn call(&self, token: Option<&str>, method: reqwest::Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn get(&self, token: &str, path: &str) -> (StatusCode, Value) {
        self.call(Some(token), reqwest::Method::GET, path, None).await
    }

    async fn post(&self, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Some(token), reqwest::Method::POST, path, Some(body)).await
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            served.await.unwrap().unwrap();
        }
        self.rt.shutdown().await;
    }
}

#[tokio::test]
async fn a_request_without_a_valid_token_is_refused_with_401() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    for token in [None, Some("not-a-token")] {
        let (status, body) = server.call(token, reqwest::Method::GET, "/api/v1/sessions", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert_eq!(body["field"], "Authorization");
        assert!(body["error"].as_str().unwrap().contains("token"), "{body}");
    }
    // Health and the API's description need no token.
    let (status, _) = server.call(None, reqwest::Method::GET, "/healthz", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = server.call(None, reqwest::Method::GET, "/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn two_tenants_cannot_see_each_others_sessions_over_any_endpoint_or_stream() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    let (status, created) = server.post(ACME, "/api/v1/sessions", json!({"id": "a1", "agent": "desk"})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, out) = server.post(ACME, "/api/v1/sessions/a1/messages?wait=true", json!({"text": "who am I?"})).await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["reply"], "You are jordan.", "the token's user is the run's user");
    let (status, shown) = server.get(ACME, "/api/v1/sessions/a1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["blackboard"]["user_id"], "jordan");

    // Globex sees none of it.
    let (_, listed) = server.get(GLOBEX, "/api/v1/sessions").await;
    assert_eq!(listed["sessions"], json!([]), "{listed}");
    let not_found = [
        server.get(GLOBEX, "/api/v1/sessions/a1").await,
        server.get(GLOBEX, "/api/v1/sessions/a1/events").await,
        server.post(GLOBEX, "/api/v1/sessions/a1/messages", json!({"text": "who am I?"})).await,
        server
            .post(
                GLOBEX,
                "/api/v1/sessions/a1/confirm",
                json!({"call_id": "call_1", "fingerprint": "x", "decision": "approve"}),
            )
            .await,
        server.post(GLOBEX, "/api/v1/sessions/a1/choose", json!({"option": 1})).await,
        server.post(GLOBEX, "/api/v1/sessions/a1/end", json!({})).await,
        server
            .post(
                GLOBEX,
                "/api/v1/agui",
                json!({"threadId": "a1", "runId": "g-run", "messages": [{"id": "m1", "role": "user", "content": "who am I?"}],
                       "tools": [], "context": [], "state": {}, "forwardedProps": {}}),
            )
            .await,
    ];
    for (status, body) in not_found {
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert!(body["error"].as_str().unwrap().contains("no session \"a1\""), "{body}");
    }
    // Not even by claiming its id.
    let (status, body) = server.post(GLOBEX, "/api/v1/sessions", json!({"id": "a1"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    // Its own session, with its own user; acme's list holds only acme's.
    let (_, created) = server.post(GLOBEX, "/api/v1/sessions", json!({"agent": "desk"})).await;
    let g1 = created["id"].as_str().unwrap().to_string();
    let (_, out) = server
        .post(GLOBEX, &format!("/api/v1/sessions/{g1}/messages?wait=true"), json!({"text": "who am I?"}))
        .await;
    assert_eq!(out["reply"], "You are sam.");
    let (_, listed) = server.get(ACME, "/api/v1/sessions").await;
    let ids: Vec<&str> = listed["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a1"]);

    // A browser's EventSource sends its token in the query.
    let response = server
        .http
        .get(format!("{}/api/v1/sessions/a1/events?access_token={ACME}", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let first = response.bytes_stream().eventsource().next().await.unwrap().unwrap();
    assert_eq!(first.event, "session_opened");
    server.stop().await;
}

#[tokio::test]
async fn a_tenant_past_its_cap_of_runs_in_progress_gets_429_and_others_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let hold = Arc::new(Semaphore::new(0));
    let server = Server::start(&dir.path().join("c.db"), hold.clone(), 1).await;
    for id in ["a1", "a2"] {
        let (status, _) = server.post(ACME, "/api/v1/sessions", json!({"id": id, "agent": "desk"})).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (status, accepted) = server.post(ACME, "/api/v1/sessions/a1/messages", json!({"text": "hold on"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");

    let response = server
        .http
        .post(format!("{}/api/v1/sessions/a2/messages", server.base))
        .bearer_auth(ACME)
        .json(&json!({"text": "who am I?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: Value = response.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("tenant \"acme\" has 1 runs in progress"), "{body}");
    let (_, shown) = server.get(ACME, "/api/v1/sessions/a2").await;
    assert_eq!(shown["history"], json!([]), "the refused message ran nothing");

    // Another tenant is not held back.
    let (_, created) = server.post(GLOBEX, "/api/v1/sessions", json!({"agent": "desk"})).await;
    let g1 = created["id"].as_str().unwrap().to_string();
    let (status, _) = server
        .post(GLOBEX, &format!("/api/v1/sessions/{g1}/messages?wait=true"), json!({"text": "who am I?"}))
        .await;
    assert_eq!(status, StatusCode::OK);

    // Once acme's run finishes, its place is free again.
    let events = server
        .http
        .get(format!("{}/api/v1/sessions/a1/events", server.base))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    hold.add_permits(1);
    let mut stream = events.bytes_stream().eventsource();
    while let Some(event) = stream.next().await {
        if event.unwrap().event == "run_finished" {
            break;
        }
    }
    // The place is freed when the run's stop is seen by the server: retry
    // until then (a 429 names the cap; anything else is an error).
    loop {
        let (status, body) = server
            .post(ACME, "/api/v1/sessions/a2/messages?wait=true", json!({"text": "who am I?"}))
            .await;
        match status {
            StatusCode::OK => {
                assert_eq!(body["reply"], "You are jordan.");
                break;
            }
            StatusCode::TOO_MANY_REQUESTS => tokio::task::yield_now().await,
            other => panic!("{other}: {body}"),
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn a_created_session_survives_a_restart_and_its_first_message_goes_to_its_agent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let server = Server::start(&db, Arc::new(Semaphore::new(0)), 4).await;
    let (status, created) = server.post(ACME, "/api/v1/sessions", json!({"id": "early", "agent": "desk"})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["last_event_id"], "1");
    server.stop().await;

    let server = Server::start(&db, Arc::new(Semaphore::new(0)), 4).await;
    let (_, listed) = server.get(ACME, "/api/v1/sessions").await;
    assert_eq!(listed["sessions"][0]["id"], "early", "{listed}");
    assert_eq!(listed["sessions"][0]["agent"], "desk");
    let (status, out) = server
        .post(ACME, "/api/v1/sessions/early/messages?wait=true", json!({"text": "who am I?"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["agent"], "desk");
    assert_eq!(out["reply"], "You are jordan.");
    server.stop().await;
}
