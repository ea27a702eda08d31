//! Tenants, API tokens and users through real HTTP: two tenants that cannot
//! see each other's sessions over any endpoint or stream, the token's user
//! as the run's user, the cap on runs in progress per tenant, and sessions
//! created before their first message surviving a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use concierge::{AgentSpec, Route, Rules, Runtime, Tool, ToolContext, ToolError, ToolSpec};
use concierge_server::TokenConfig;
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
        ToolSpec::new(
            "whoami",
            "Says who is asking.",
            concierge::tool::schema_for::<Nothing>(),
        )
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

/// Asks the desk as a tool: its answer comes from a child run.
fn router() -> AgentSpec {
    AgentSpec::new("router")
        .agent_tool(concierge::AgentTool::new("desk"))
        .rules(
            Rules::new()
                .route(Route::tool("desk", json!({"request": "{part}"})).pattern(r"(?i)ask the desk (?P<part>.+)"))
                .answer("{result}")
                .fallback("Router here."),
        )
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
            .agent(router())
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

    async fn call(
        &self,
        token: Option<&str>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
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
    let (status, created) = server
        .post(ACME, "/api/v1/sessions", json!({"id": "a1", "agent": "desk"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, out) = server
        .post(
            ACME,
            "/api/v1/sessions/a1/messages?wait=true",
            json!({"text": "who am I?"}),
        )
        .await;
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
        server
            .post(GLOBEX, "/api/v1/sessions/a1/messages", json!({"text": "who am I?"}))
            .await,
        server
            .post(
                GLOBEX,
                "/api/v1/sessions/a1/confirm",
                json!({"call_id": "call_1", "fingerprint": "x", "decision": "approve"}),
            )
            .await,
        server
            .post(GLOBEX, "/api/v1/sessions/a1/choose", json!({"option": 1}))
            .await,
        server.post(GLOBEX, "/api/v1/sessions/a1/end", json!({})).await,
    ];
    for (status, body) in not_found {
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert!(body["error"].as_str().unwrap().contains("no session \"a1\""), "{body}");
    }
    // Through AG-UI and the OpenAI-compatible endpoint, globex's thread
    // `a1` is its own (a new session), never acme's.
    let (status, body) = server
        .post(
            GLOBEX,
            "/api/v1/agui?agent=desk",
            json!({"threadId": "a1", "runId": "g-run", "messages": [{"id": "m1", "role": "user", "content": "who am I?"}],
                   "tools": [], "context": [], "state": {}, "forwardedProps": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let text = body.as_str().unwrap();
    assert!(text.contains("You are sam.") && !text.contains("jordan"), "{text}");
    assert!(!text.contains("globex/"), "ids are named the client's way: {text}");
    let response = server
        .http
        .post(format!("{}/v1/chat/completions", server.base))
        .bearer_auth(GLOBEX)
        .header("X-Concierge-Session", "a1")
        .json(&json!({"model": "desk", "messages": [{"role": "user", "content": "who am I?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-concierge-session"], "a1");
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "You are sam.");
    // The completion's id names the session the client's way and a run id
    // the server drew at random (not the engine's `globex/a1` nor `r1`).
    let id = answer["id"].as_str().unwrap();
    let run = id.strip_prefix("chatcmpl-a1.run-").unwrap_or_else(|| panic!("{id}"));
    assert!(run.len() >= 32 && run.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    let (_, shown) = server.get(ACME, "/api/v1/sessions/a1").await;
    assert_eq!(
        shown["history"].as_array().unwrap().len(),
        4,
        "acme's a1 has its one turn: {shown}"
    );
    let (status, _) = server.call(None, reqwest::Method::GET, "/v1/models", None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "the OpenAI-compatible endpoint needs a token too"
    );
    let response = server
        .http
        .post(format!("{}/v1/chat/completions", server.base))
        .bearer_auth(ACME)
        .header("X-Concierge-Session", "a1")
        .json(&json!({"model": "desk", "messages": [{"role": "user", "content": "who am I?"}]}))
        .send()
        .await
        .unwrap();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "You are jordan.");

    // Its id is free in globex's own id space: no answer tells that acme has one.
    let (status, body) = server.post(GLOBEX, "/api/v1/sessions", json!({"id": "fresh"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = server.post(ACME, "/api/v1/sessions", json!({"id": "fresh"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["id"], "fresh");
    assert_eq!(body["history"], json!([]), "acme's is its own, empty");

    // Its own session, with its own user; acme's list holds only acme's.
    let (_, created) = server.post(GLOBEX, "/api/v1/sessions", json!({"agent": "desk"})).await;
    let g1 = created["id"].as_str().unwrap().to_string();
    let (_, out) = server
        .post(
            GLOBEX,
            &format!("/api/v1/sessions/{g1}/messages?wait=true"),
            json!({"text": "who am I?"}),
        )
        .await;
    assert_eq!(out["reply"], "You are sam.");
    let (_, listed) = server.get(ACME, "/api/v1/sessions").await;
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{listed}");
    assert!(ids.contains(&"a1") && ids.contains(&"fresh"), "{listed}");

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
        let (status, _) = server
            .post(ACME, "/api/v1/sessions", json!({"id": id, "agent": "desk"}))
            .await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (status, accepted) = server
        .post(ACME, "/api/v1/sessions/a1/messages", json!({"text": "hold on"}))
        .await;
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
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("tenant \"acme\" has 1 runs in progress"),
        "{body}"
    );
    let (_, shown) = server.get(ACME, "/api/v1/sessions/a2").await;
    assert_eq!(shown["history"], json!([]), "the refused message ran nothing");

    // Another tenant is not held back.
    let (_, created) = server.post(GLOBEX, "/api/v1/sessions", json!({"agent": "desk"})).await;
    let g1 = created["id"].as_str().unwrap().to_string();
    let (status, _) = server
        .post(
            GLOBEX,
            &format!("/api/v1/sessions/{g1}/messages?wait=true"),
            json!({"text": "who am I?"}),
        )
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
            .post(
                ACME,
                "/api/v1/sessions/a2/messages?wait=true",
                json!({"text": "who am I?"}),
            )
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
    let (status, created) = server
        .post(ACME, "/api/v1/sessions", json!({"id": "early", "agent": "desk"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["last_event_id"], "1");
    server.stop().await;

    let server = Server::start(&db, Arc::new(Semaphore::new(0)), 4).await;
    let (_, listed) = server.get(ACME, "/api/v1/sessions").await;
    assert_eq!(listed["sessions"][0]["id"], "early", "{listed}");
    assert_eq!(listed["sessions"][0]["agent"], "desk");
    let (status, out) = server
        .post(
            ACME,
            "/api/v1/sessions/early/messages?wait=true",
            json!({"text": "who am I?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["agent"], "desk");
    assert_eq!(out["reply"], "You are jordan.");
    server.stop().await;
}

/// Reads an event stream until `done` says so (or it ends), returning the events' data.
async fn read_stream(response: reqwest::Response, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut events = Vec::new();
    let mut stream = response.bytes_stream().eventsource();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::String(event.data));
        let stop = done(&data);
        events.push(data);
        if stop {
            break;
        }
    }
    events
}

#[tokio::test]
async fn a_stream_cursor_cannot_name_another_tenants_session_as_a_child_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    let (status, _) = server
        .post(
            ACME,
            "/api/v1/sessions",
            json!({"id": "crm.customer.42", "agent": "desk"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, out) = server
        .post(
            ACME,
            "/api/v1/sessions/crm.customer.42/messages?wait=true",
            json!({"text": "who am I? my secret is 1234"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    let (status, _) = server
        .post(GLOBEX, "/api/v1/sessions", json!({"id": "crm", "agent": "desk"}))
        .await;
    assert_eq!(status, StatusCode::CREATED);

    // The cursor's child part names acme's session below globex's `crm`:
    // not found, in the query, in the header, with the token in the query.
    let attempts = [
        (
            server
                .http
                .get(format!(
                    "{}/api/v1/sessions/crm/events?after=0;customer.42=0/0",
                    server.base
                ))
                .bearer_auth(GLOBEX),
            "after",
        ),
        (
            server
                .http
                .get(format!("{}/api/v1/sessions/crm/events", server.base))
                .bearer_auth(GLOBEX)
                .header("Last-Event-ID", "0;customer.42=0/0"),
            "Last-Event-ID",
        ),
        (
            server.http.get(format!(
                "{}/api/v1/sessions/crm/events?after=0;customer.42=0/0&access_token={GLOBEX}",
                server.base
            )),
            "after",
        ),
    ];
    for (request, field) in attempts {
        let response = request.send().await.unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert!(!body.contains("1234"), "acme's text leaked: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["field"], field, "{body}");
    }
    // globex's own stream holds only its own session's events.
    let response = server
        .http
        .get(format!("{}/api/v1/sessions/crm/events", server.base))
        .bearer_auth(GLOBEX)
        .send()
        .await
        .unwrap();
    let events = read_stream(response, |e| e["type"] == "session_opened").await;
    assert!(events.iter().all(|e| e["session"] == "crm"), "{events:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_child_run_cannot_be_squatted_by_another_tenant_or_named_by_a_client() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    // A child run's session is `<parent>:<call>`: no client may create or name one.
    for id in ["r1:call_1", "r1/call_1", "acme/r1"] {
        let (status, body) = server.post(GLOBEX, "/api/v1/sessions", json!({"id": id})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{id}: {body}");
        assert_eq!(body["field"], "id");
    }
    // What the child's id was before (`<parent>.<call>`) is only an ordinary
    // session of globex's now, whatever globex plants in it.
    for id in ["r1.call_1", "r1"] {
        let (status, body) = server
            .post(GLOBEX, "/api/v1/sessions", json!({"id": id, "agent": "desk"}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, _) = server
            .post(
                GLOBEX,
                &format!("/api/v1/sessions/{id}/messages?wait=true"),
                json!({"text": "who am I? planted"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }

    let (status, body) = server
        .post(ACME, "/api/v1/sessions", json!({"id": "r1", "agent": "router"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, out) = server
        .post(
            ACME,
            "/api/v1/sessions/r1/messages?wait=true",
            json!({"text": "ask the desk who am I"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["reply"], "You are jordan.", "acme's own specialist answers: {out}");

    // acme's stream names its child run its way, and holds no globex event.
    let response = server
        .http
        .get(format!("{}/api/v1/sessions/r1/events", server.base))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    let events = read_stream(response, |e| e["type"] == "run_finished" && e["session"] == "r1").await;
    let sessions: std::collections::BTreeSet<&str> = events.iter().filter_map(|e| e["session"].as_str()).collect();
    assert_eq!(sessions, ["r1", "r1:call_1"].into_iter().collect(), "{events:?}");
    assert!(!format!("{events:?}").contains("sam"), "{events:?}");
    // And globex's sessions are untouched by acme's run.
    let (_, shown) = server.get(GLOBEX, "/api/v1/sessions/r1.call_1").await;
    assert_eq!(shown["history"].as_array().unwrap().len(), 4, "its one turn: {shown}");
    let (_, listed) = server.get(ACME, "/api/v1/sessions").await;
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1"], "a child run is reached through its parent, not listed");
    server.stop().await;
}

#[tokio::test]
async fn ids_the_server_chooses_are_random_and_a_run_id_names_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    let random = |id: &str, prefix: &str| {
        let hex = id
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{id} has no prefix {prefix}"));
        hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit())
    };
    let mut seen = std::collections::BTreeSet::new();
    for token in [ACME, GLOBEX, ACME] {
        let (status, created) = server.post(token, "/api/v1/sessions", json!({"agent": "desk"})).await;
        assert_eq!(status, StatusCode::CREATED);
        let id = created["id"].as_str().unwrap().to_string();
        assert!(random(&id, "s-"), "{id}");
        assert!(seen.insert(id.clone()));
        let (status, accepted) = server
            .post(
                token,
                &format!("/api/v1/sessions/{id}/messages"),
                json!({"text": "who am I?"}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
        assert!(random(accepted["run_id"].as_str().unwrap(), "run-"), "{accepted}");
    }

    // A run id the client chooses names one run: a second run by it is refused.
    let (_, created) = server.post(ACME, "/api/v1/sessions", json!({"agent": "desk"})).await;
    let id = created["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/sessions/{id}/messages?wait=true");
    let (status, out) = server
        .post(ACME, &path, json!({"text": "who am I?", "run_id": "mine-1"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["run_id"], "mine-1");
    let (status, body) = server
        .post(ACME, &path, json!({"text": "who am I?", "run_id": "mine-1"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["field"], "run_id", "{body}");
    let (_, shown) = server.get(ACME, &format!("/api/v1/sessions/{id}")).await;
    assert_eq!(
        shown["history"].as_array().unwrap().len(),
        4,
        "the refused run ran nothing: {shown}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_event_cursor_past_what_a_store_holds_is_a_400_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    let (status, _) = server
        .post(ACME, "/api/v1/sessions", json!({"id": "a1", "agent": "desk"}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let events = format!("{}/api/v1/sessions/a1/events", server.base);
    let max = "18446744073709551615";
    let attempts = [
        (server.http.get(format!("{events}?after={max}")), "after"),
        (server.http.get(format!("{events}?after=1;call_1={max}/0")), "after"),
        (server.http.get(format!("{events}?after=1.4294967295")), "after"),
        (server.http.get(&events).header("Last-Event-ID", max), "Last-Event-ID"),
        (
            server.http.get(&events).header("Last-Event-ID", "9223372036854775808"),
            "Last-Event-ID",
        ),
    ];
    for (request, field) in attempts {
        let response = request.bearer_auth(ACME).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["field"], field, "{body}");
    }
    // The server still answers.
    let (status, _) = server.get(ACME, "/api/v1/sessions/a1").await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn a_message_for_a_busy_session_is_refused_queued_or_interrupts_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let hold = Arc::new(Semaphore::new(0));
    let server = Arc::new(Server::start(&dir.path().join("c.db"), hold.clone(), 8).await);
    let (status, _) = server
        .post(ACME, "/api/v1/sessions", json!({"id": "busy", "agent": "desk"}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let path = "/api/v1/sessions/busy/messages";
    let (status, first) = server.post(ACME, path, json!({"text": "hold on"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");

    // Refused when asked so (and by default for a caller that does not wait).
    for body in [
        json!({"text": "who am I?", "multitask": "reject"}),
        json!({"text": "who am I?"}),
    ] {
        let (status, refused) = server.post(ACME, path, body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{refused}");
        assert!(refused["error"].as_str().unwrap().contains("in progress"), "{refused}");
    }
    let (status, bad) = server
        .post(ACME, path, json!({"text": "who am I?", "multitask": "sometimes"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");

    // Queued by default for a caller that waits: it runs once the held run stops.
    let queued = {
        let server = server.clone();
        tokio::spawn(async move {
            server
                .post(ACME, &format!("{path}?wait=true"), json!({"text": "who am I?"}))
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!queued.is_finished(), "it waits behind the run in progress");
    hold.add_permits(1);
    let (status, out) = queued.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["reply"], "You are jordan.");

    // Interrupting: the run in progress is cancelled, then the message runs.
    let (status, second) = server.post(ACME, path, json!({"text": "hold on"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{second}");
    let (status, out) = server
        .post(
            ACME,
            &format!("{path}?wait=true"),
            json!({"text": "who am I?", "multitask": "interrupt"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["reply"], "You are jordan.");
    let response = server
        .http
        .get(format!("{}/api/v1/sessions/busy/events", server.base))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    let last = out["run_id"].as_str().unwrap().to_string();
    let events = read_stream(response, |e| e["type"] == "run_finished" && e["run"] == last.as_str()).await;
    let finished: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "run_finished")
        .map(|e| (e["run"].as_str().unwrap_or(""), e["status"].as_str().unwrap_or("")))
        .collect();
    let second_run = second["run_id"].as_str().unwrap();
    assert!(finished.contains(&(second_run, "cancelled")), "{finished:?}");
    assert_eq!(finished.len(), 4, "{finished:?}");
    hold.add_permits(4);
    match Arc::try_unwrap(server) {
        Ok(server) => server.stop().await,
        Err(_) => panic!("the server is still shared"),
    }
}

#[tokio::test]
async fn a_persons_memories_are_theirs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    let (status, kept) = server
        .post(ACME, "/api/v1/memories", json!({"text": "Prefers aisle seats"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{kept}");
    let id = kept["id"].as_str().unwrap().to_string();
    let (status, body) = server.get(ACME, "/api/v1/memories").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["memories"][0]["text"], "Prefers aisle seats");

    // The other tenant sees none of it and cannot erase it by its id.
    let (_, body) = server.get(GLOBEX, "/api/v1/memories").await;
    assert_eq!(body["memories"], json!([]));
    let path = format!("/api/v1/memories/{id}");
    let (status, body) = server.call(Some(GLOBEX), reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(!body["error"].as_str().unwrap().contains("acme"), "{body}");
    let (status, body) = server
        .call(Some(GLOBEX), reqwest::Method::DELETE, "/api/v1/memories", None)
        .await;
    assert_eq!((status, body["forgotten"].as_u64()), (StatusCode::OK, Some(0)));
    let (_, body) = server.get(ACME, "/api/v1/memories").await;
    assert_eq!(body["memories"].as_array().unwrap().len(), 1);

    // Bad input says which field.
    let (status, body) = server.post(ACME, "/api/v1/memories", json!({"text": "  "})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["field"], "text");

    let (status, _) = server.call(Some(ACME), reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, body) = server.get(ACME, "/api/v1/memories").await;
    assert_eq!(body["memories"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn a_persons_schedules_are_theirs_alone_and_run_in_their_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    let (status, added) = server
        .post(
            ACME,
            "/api/v1/schedules",
            json!({"message": "Summarise my inbox", "in_minutes": 0, "session": "reminders"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert_eq!(added["session"], "reminders", "the caller's own name for the session");
    let id = added["id"].as_str().unwrap().to_string();

    // It fires: the run is in the caller's session (its model waits, so it stays in progress).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, body) = server.get(ACME, "/api/v1/sessions/reminders").await;
        if status == StatusCode::OK && body["history"].to_string().contains("Summarise my inbox") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the schedule did not run: {status} {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (status, _) = server.get(GLOBEX, "/api/v1/sessions/reminders").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another tenant's session of that name is not theirs"
    );

    // The other tenant sees none of it and can neither pause nor delete it by its id.
    let (_, body) = server.get(GLOBEX, "/api/v1/schedules").await;
    assert_eq!(body["schedules"], json!([]));
    let path = format!("/api/v1/schedules/{id}");
    for (method, path) in [
        (reqwest::Method::GET, path.clone()),
        (reqwest::Method::DELETE, path.clone()),
        (reqwest::Method::POST, format!("{path}/pause")),
    ] {
        let (status, body) = server.call(Some(GLOBEX), method, &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }
    let (status, body) = server.get(ACME, &path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["runs"], 1, "{body}");

    // Bad input says which field.
    for (request, field) in [
        (json!({"message": "x", "cron": "every day"}), "cron"),
        (json!({"message": "x"}), "at"),
        (json!({"message": "x", "at": "next tuesday"}), "at"),
        (json!({"message": "x", "cron": "0 0 31 2 *"}), "cron"),
        (json!({"message": "x", "cron": "0 9 * * MON"}), "cron"),
        (json!({"message": "x", "in_minutes": 1, "session": "a/b"}), "session"),
        (json!({"message": " ", "cron": "0 9 * * *"}), "message"),
        (json!({"message": "x", "cron": "0 9 * * *", "agent": "nobody"}), "agent"),
    ] {
        let (status, body) = server.post(ACME, "/api/v1/schedules", request.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{request}: {body}");
        assert_eq!(body["field"], field, "{request}: {body}");
    }

    let (status, body) = server
        .call(Some(ACME), reqwest::Method::POST, &format!("{path}/pause"), None)
        .await;
    assert_eq!(
        (status, body["paused"].as_bool()),
        (StatusCode::OK, Some(true)),
        "{body}"
    );
    let (status, _) = server.call(Some(ACME), reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, body) = server.get(ACME, "/api/v1/schedules").await;
    assert_eq!(body["schedules"], json!([]));
    server.stop().await;
}

/// A receiver that keeps the bodies posted to it.
async fn receiver() -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |body: axum::Json<Value>| {
            let keep = keep.clone();
            async move {
                keep.lock().unwrap().push(body.0);
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_webhooks_are_its_own_and_hear_only_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    let (url, got) = receiver().await;
    let (status, added) = server
        .post(
            ACME,
            "/api/v1/webhooks",
            json!({"url": url, "events": ["run.finished"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert!(added["secret"].as_str().unwrap().starts_with("whsec_"), "{added}");
    let id = added["id"].as_str().unwrap().to_string();
    let (_, listed) = server.get(ACME, "/api/v1/webhooks").await;
    assert!(
        listed["webhooks"][0].get("secret").is_none(),
        "the secret is shown once: {listed}"
    );

    // Globex sees none of it and can neither read, pause nor delete it by its id.
    let (_, body) = server.get(GLOBEX, "/api/v1/webhooks").await;
    assert_eq!(body["webhooks"], json!([]));
    let path = format!("/api/v1/webhooks/{id}");
    for (method, path) in [
        (reqwest::Method::GET, path.clone()),
        (reqwest::Method::GET, format!("{path}/deliveries")),
        (reqwest::Method::DELETE, path.clone()),
        (reqwest::Method::POST, format!("{path}/pause")),
    ] {
        let (status, body) = server.call(Some(GLOBEX), method, &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }

    // Acme's run is posted; Globex's is not.
    for token in [ACME, GLOBEX] {
        let (status, created) = server
            .post(token, "/api/v1/sessions", json!({"id": "s1", "agent": "desk"}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
    }
    let (status, body) = server
        .post(
            GLOBEX,
            "/api/v1/sessions/s1/messages?wait=true",
            json!({"text": "globex secret plans"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = server
        .post(
            ACME,
            "/api/v1/sessions/s1/messages?wait=true",
            json!({"text": "who am I?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while got.lock().unwrap().is_empty() {
        if std::time::Instant::now() > deadline {
            let (_, body) = server.get(ACME, &format!("{path}/deliveries")).await;
            let watches = server.rt.webhooks().list(Some("acme")).await.unwrap();
            panic!("no delivery came: {body} {watches:?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let bodies = got.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(bodies[0]["type"], "run.finished");
    assert_eq!(bodies[0]["data"]["session"], "s1", "the tenant's own name for it");
    assert_eq!(bodies[0]["data"]["reply"], "You are jordan.");
    assert!(!serde_json::to_string(&bodies).unwrap().contains("globex"));
    let (status, body) = server.get(ACME, &format!("{path}/deliveries")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["deliveries"][0]["state"], "delivered", "{body}");

    // Bad input says which field.
    for (request, field) in [
        (json!({"url": "ftp://example.com/x", "events": ["run.finished"]}), "url"),
        (json!({"url": "not a url", "events": ["run.finished"]}), "url"),
        (json!({"url": "https://example.com/x", "events": []}), "events"),
    ] {
        let (status, body) = server.post(ACME, "/api/v1/webhooks", request.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{request}: {body}");
        assert_eq!(body["field"], field, "{request}: {body}");
    }
    let (status, body) = server
        .post(
            ACME,
            "/api/v1/webhooks",
            json!({"url": "https://example.com/x", "events": ["run.done"]}),
        )
        .await;
    assert!(status.is_client_error(), "{body}");
    assert!(body.to_string().contains("events"), "{body}");

    let (status, _) = server.call(Some(ACME), reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, body) = server.get(ACME, "/api/v1/webhooks").await;
    assert_eq!(body["webhooks"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn a_tenant_forks_and_replays_its_own_sessions_and_not_anothers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("c.db"), Arc::new(Semaphore::new(0)), 4).await;
    let (status, body) = server
        .post(ACME, "/api/v1/sessions", json!({"id": "talk", "agent": "desk"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, first) = server
        .post(
            ACME,
            "/api/v1/sessions/talk/messages?wait=true",
            json!({"text": "who am I?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["reply"], "You are jordan.");
    let (_, view) = server.get(ACME, "/api/v1/sessions/talk").await;
    let after_first: u64 = view["last_event_id"].as_str().unwrap().parse().unwrap();
    let (status, _) = server
        .post(
            ACME,
            "/api/v1/sessions/talk/messages?wait=true",
            json!({"text": "desk?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // Another tenant cannot fork or replay it, nor tell that it exists.
    let (status, body) = server.post(GLOBEX, "/api/v1/sessions/talk/fork", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let run = first["run_id"].as_str().unwrap();
    let (status, body) = server
        .post(GLOBEX, &format!("/api/v1/sessions/talk/runs/{run}/replay"), json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    let (status, fork) = server
        .post(ACME, "/api/v1/sessions/talk/fork", json!({"at": after_first}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{fork}");
    let fork_id = fork["id"].as_str().unwrap();
    assert_ne!(fork_id, "talk");
    assert_eq!(
        fork["forked_from"]["session_id"], "talk",
        "named as the tenant names it: {fork}"
    );
    assert_eq!(fork["forked_from"]["event"], after_first);
    assert!(
        fork["forked_from"]["note"]
            .as_str()
            .unwrap()
            .starts_with("This conversation was forked")
    );
    assert_eq!(
        fork["history"], view["history"],
        "the conversation up to the fork point"
    );
    let (_, listed) = server.get(ACME, "/api/v1/sessions").await;
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == fork_id)
    );
    let (status, _) = server.get(GLOBEX, &format!("/api/v1/sessions/{fork_id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The original is untouched.
    let (_, original) = server.get(ACME, "/api/v1/sessions/talk").await;
    assert_eq!(original["history"].as_array().unwrap().len(), 6);

    let (status, body) = server
        .post(ACME, "/api/v1/sessions/talk/fork", json!({"at": 999}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["field"], "at");

    // A replay by the agent's rules answers the same, from the recorded call.
    let (status, replay) = server
        .post(
            ACME,
            &format!("/api/v1/sessions/talk/runs/{run}/replay"),
            json!({"planner": "rules"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(replay["original"]["reply"], "You are jordan.");
    assert_eq!(replay["original"]["tool_calls"][0]["tool"], "whoami");
    assert_eq!(replay["replayed"]["reply"], "You are jordan.");
    assert_eq!(replay["same_reply"], true);
    assert_eq!(replay["answered_from_original"], 1);
    assert!(
        replay["replayed"]["run_id"].as_str().unwrap().starts_with("run-"),
        "{replay}"
    );
    let (status, body) = server
        .post(ACME, "/api/v1/sessions/talk/runs/no-such-run/replay", json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["field"], "run");
    let (status, body) = server
        .post(
            ACME,
            &format!("/api/v1/sessions/talk/runs/{run}/replay"),
            json!({"model": "nope:x"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["field"], "model");
    server.stop().await;
}

#[tokio::test]
async fn a_tenants_list_of_sessions_comes_in_pages_and_another_tenants_id_is_no_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("pages.db"), Arc::new(Semaphore::new(0)), 4).await;
    for n in 0..5 {
        let (status, body) = server
            .post(
                ACME,
                "/api/v1/sessions",
                json!({"id": format!("a{n}"), "agent": "desk"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = server
        .post(GLOBEX, "/api/v1/sessions", json!({"id": "g0", "agent": "desk"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let mut seen = Vec::new();
    let mut path = "/api/v1/sessions?limit=2".to_string();
    loop {
        let (status, page) = server.get(ACME, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let ids: Vec<String> = page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect();
        assert!(ids.len() <= 2, "{page}");
        seen.extend(ids);
        match page["next"].as_str() {
            Some(next) => path = format!("/api/v1/sessions?limit=2&after={next}"),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, ["a0", "a1", "a2", "a3", "a4"], "each of acme's once: {seen:?}");

    // The other tenant's session cannot be named as a place in this list, nor can junk.
    for (query, field, refused) in [
        ("after=g0", "after", StatusCode::NOT_FOUND),
        ("after=nope", "after", StatusCode::NOT_FOUND),
        ("after=a%2Fb", "after", StatusCode::BAD_REQUEST),
        ("limit=0", "limit", StatusCode::BAD_REQUEST),
        ("limit=1001", "limit", StatusCode::BAD_REQUEST),
    ] {
        let (status, body) = server.get(ACME, &format!("/api/v1/sessions?{query}")).await;
        assert_eq!(status, refused, "{query}: {body}");
        assert_eq!(body["field"], field, "{query}: {body}");
    }
    let (_, theirs) = server.get(GLOBEX, "/api/v1/sessions").await;
    assert_eq!(theirs["sessions"].as_array().unwrap().len(), 1, "{theirs}");
    assert!(theirs.get("next").is_none(), "{theirs}");
    server.stop().await;
}
