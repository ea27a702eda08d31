//! The HTTP API through real HTTP on loopback: a server bound to
//! 127.0.0.1:0 over a runtime with the calculator and the task manager's
//! agents (on rules: no model), driven with reqwest.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use concierge::Runtime;
use concierge::config::load_agents;
use concierge_demo::tasks::{Knowledge, TaskStore, toolset_with};
use concierge_server::HttpApi;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

fn tasks_example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks")
}

struct Server {
    base: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<std::io::Result<()>>>,
    rt: Runtime,
    _dir: TempDir,
}

impl Server {
    async fn start() -> Self {
        Self::with(|rt| rt, |api| api).await
    }

    async fn with(
        runtime: impl FnOnce(concierge::RuntimeBuilder) -> concierge::RuntimeBuilder,
        api: impl FnOnce(HttpApi) -> HttpApi,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::open(dir.path().join("tasks.db"));
        let knowledge = Knowledge::open(tasks_example().join("knowledge.md"));
        let mut agents = concierge_demo::agents();
        agents.extend(load_agents(&tasks_example().join("agents")).unwrap().agents);
        let builder = Runtime::builder()
            .sqlite(dir.path().join("concierge.db"))
            .toolset(concierge_demo::calculator::toolset())
            .toolset(toolset_with(store, knowledge))
            .agents(agents);
        let rt = runtime(builder).build().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = api(HttpApi::new(rt.clone()));
        let served = tokio::spawn(server.serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            base,
            http: reqwest::Client::new(),
            stop: Some(stop),
            served: Some(served),
            rt,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self.http.get(self.url(path)).send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let response = self.http.post(self.url(path)).json(&body).send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> (StatusCode, Value) {
        let response = self
            .http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"));
        (status, value)
    }

    /// Creates a session with `agent`; returns its id.
    async fn session(&self, agent: &str) -> String {
        let (status, body) = self.post("/api/v1/sessions", json!({"agent": agent})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_string()
    }

    async fn say(&self, session: &str, text: &str) -> Value {
        let (status, body) = self
            .post(
                &format!("/api/v1/sessions/{session}/messages?wait=true"),
                json!({ "text": text }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// The session's SSE events after `after` until (and with) the one whose id is `until`.
    async fn events(&self, session: &str, after: Option<&str>, until: &str) -> Vec<(String, String, String)> {
        self.events_while(session, after, |id, _| id != until).await
    }

    /// The session's SSE events after `after`, until `more` says stop (the last one included).
    async fn events_while(
        &self,
        session: &str,
        after: Option<&str>,
        mut more: impl FnMut(&str, &str) -> bool,
    ) -> Vec<(String, String, String)> {
        let mut request = self.http.get(self.url(&format!("/api/v1/sessions/{session}/events")));
        if let Some(after) = after {
            request = request.header("Last-Event-ID", after);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut stream = response.bytes_stream().eventsource();
        let mut seen = Vec::new();
        while let Some(event) = stream.next().await {
            let event = event.unwrap();
            let go_on = more(&event.id, &event.event);
            seen.push((event.id, event.event, event.data));
            if !go_on {
                break;
            }
        }
        seen
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
async fn a_session_lives_through_create_message_show_list_and_end() {
    let server = Server::start().await;
    let (status, health) = server.get("/healthz").await;
    assert_eq!((status, health), (StatusCode::OK, json!({"status": "ok"})));

    let (status, created) = server
        .post("/api/v1/sessions", json!({"id": "calc-1", "agent": "calculator"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["id"], "calc-1");
    assert_eq!(created["agent"], "calculator");
    assert_eq!(created["history"], json!([]));
    let (status, again) = server.post("/api/v1/sessions", json!({"id": "calc-1"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(again["field"], "id");

    let out = server.say("calc-1", "calculate 5 + 3").await;
    assert_eq!(out["status"], "completed", "{out}");
    assert_eq!(out["agent"], "calculator");
    assert!(out["reply"].as_str().unwrap().contains('8'), "{out}");
    assert_eq!(out["tool_calls"][0]["tool"], "calculator");
    assert_eq!(out["tool_calls"][0]["ok"], true);

    let (status, shown) = server.get("/api/v1/sessions/calc-1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["agent"], "calculator");
    assert!(shown["phase"].is_null(), "no run is under way: {shown}");
    assert_eq!(shown["blackboard"]["last_calculation_result"]["result"], 8.0, "{shown}");
    let roles: Vec<&str> = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.first(), Some(&"user"));
    assert_eq!(roles.last(), Some(&"assistant"));
    assert_eq!(shown["history"][0]["text"], "calculate 5 + 3");
    assert!(shown["pending_confirmation"].is_null() && shown["pending_choice"].is_null());
    assert!(shown["last_event_id"].as_str().unwrap().parse::<u64>().unwrap() > 1);

    // A session created with no id gets one, and is listed before its first message.
    let fresh = server.session("calculator").await;
    let (_, list) = server.get("/api/v1/sessions").await;
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"calc-1") && ids.contains(&fresh.as_str()), "{list}");

    let (status, ended) = server
        .post("/api/v1/sessions/calc-1/end", json!({"reason": "done"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{ended}");
    assert!(ended.is_null(), "no run was in progress: {ended}");
    let (status, refused) = server
        .post(
            "/api/v1/sessions/calc-1/messages?wait=true",
            json!({"text": "calculate 1 + 1"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("ended"), "{refused}");
    let (_, shown) = server.get("/api/v1/sessions/calc-1").await;
    assert_eq!(shown["ended"], true);

    let (status, missing) = server.get("/api/v1/sessions/nobody").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        missing["error"].as_str().unwrap().contains("no session \"nobody\""),
        "{missing}"
    );
    let (status, _) = server
        .post("/api/v1/sessions/nobody/messages", json!({"text": "hi"}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test]
async fn a_message_without_wait_is_accepted_and_its_run_streams_to_the_end() {
    let server = Server::start().await;
    let session = server.session("calculator").await;
    let (status, accepted) = server
        .post(
            &format!("/api/v1/sessions/{session}/messages"),
            json!({"text": "calculate 6 * 7", "run_id": "first"}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    assert_eq!(accepted["run_id"], "first");
    let after = accepted["after_event_id"].as_str().unwrap().to_string();
    let events = server
        .events_while(&session, Some(&after), |_, kind| kind != "run_finished")
        .await;
    let kinds: Vec<&str> = events.iter().map(|(_, kind, _)| kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"), "{kinds:?}");
    assert!(
        kinds.contains(&"tool_requested") && kinds.contains(&"tool_finished"),
        "{kinds:?}"
    );
    let finished: Value = serde_json::from_str(&events.last().unwrap().2).unwrap();
    assert_eq!(finished["status"], "completed");
    assert!(finished["reply"].as_str().unwrap().contains("42"), "{finished}");
    server.stop().await;
}

#[tokio::test]
async fn a_side_effect_waits_for_approval_by_call_id_and_fingerprint() {
    let server = Server::start().await;
    let session = server.session("task").await;
    let out = server
        .say(
            &session,
            "create a task to review the budget due Friday with high priority",
        )
        .await;
    assert_eq!(out["status"], "awaiting_confirmation", "{out}");
    let pending = out["pending_confirmation"].clone();
    assert_eq!(pending["tool"], "create_task");
    let (_, shown) = server.get(&format!("/api/v1/sessions/{session}")).await;
    assert_eq!(shown["pending_confirmation"]["call_id"], pending["call_id"]);
    assert_eq!(shown["phase"], "clarifying", "{shown}");

    let confirm = format!("/api/v1/sessions/{session}/confirm");
    let (status, wrong) = server
        .post(
            &confirm,
            json!({"call_id": pending["call_id"], "fingerprint": "not-it", "decision": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{wrong}");
    assert_eq!(wrong["field"], "fingerprint");
    let (status, other) = server
        .post(
            &confirm,
            json!({"call_id": "call_999", "fingerprint": pending["fingerprint"], "decision": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{other}");
    assert_eq!(other["field"], "call_id");
    let (status, amend) = server
        .post(
            &confirm,
            json!({"call_id": pending["call_id"], "fingerprint": pending["fingerprint"], "decision": "amend"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{amend}");
    assert_eq!(amend["field"], "arguments");

    let (status, done) = server
        .post(
            &confirm,
            json!({"call_id": pending["call_id"], "fingerprint": pending["fingerprint"], "decision": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        done["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["tool"] == "create_task" && c["ok"] == true),
        "{done}"
    );
    let (status, late) = server
        .post(
            &confirm,
            json!({"call_id": pending["call_id"], "fingerprint": pending["fingerprint"], "decision": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "a replayed approval is refused: {late}");

    // A denial: nothing is created, the run goes on without it.
    let out = server.say(&session, "create a task to water the plants").await;
    let pending = out["pending_confirmation"].clone();
    let (status, denied) = server
        .post(
            &confirm,
            json!({"call_id": pending["call_id"], "fingerprint": pending["fingerprint"], "decision": "deny", "reason": "not now"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{denied}");
    assert_ne!(denied["status"], "awaiting_confirmation", "{denied}");
    assert!(
        !denied["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["tool"] == "create_task" && c["ok"] == true),
        "{denied}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_numbered_choice_is_answered_by_its_number() {
    let server = Server::start().await;
    let session = server.session("task").await;
    let out = server.say(&session, "complete the fix").await;
    assert_eq!(out["status"], "awaiting_choice", "{out}");
    let choice = &out["pending_choice"];
    assert_eq!(choice["question"], "Several tasks could match. Which one do you mean?");
    assert_eq!(choice["options"][1]["number"], 2);
    assert!(
        choice["options"][1]["label"].as_str().unwrap().starts_with("#5 "),
        "{choice}"
    );
    let (_, shown) = server.get(&format!("/api/v1/sessions/{session}")).await;
    assert_eq!(shown["pending_choice"]["call_id"], choice["call_id"]);

    let choose = format!("/api/v1/sessions/{session}/choose?wait=true");
    let n = choice["options"].as_array().unwrap().len();
    for bad in [0, n + 1] {
        let (status, refused) = server.post(&choose, json!({"option": bad})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
        assert_eq!(refused["field"], "option");
    }
    let (status, out) = server.post(&choose, json!({"option": 2})).await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["status"], "awaiting_confirmation", "{out}");
    assert!(
        out["pending_confirmation"]["message"]
            .as_str()
            .unwrap()
            .starts_with("I'll mark #5, 'Fix logout button alignment'"),
        "{out}"
    );
    let (status, none) = server.post(&choose, json!({"option": 1})).await;
    assert_eq!(status, StatusCode::CONFLICT, "no choice is pending now: {none}");
    server.stop().await;
}

#[tokio::test]
async fn a_dropped_event_stream_resumes_with_every_event_exactly_once() {
    let server = Server::start().await;
    let session = server.session("calculator").await;
    server.say(&session, "calculate 5 + 3").await;
    server.say(&session, "what is the square root of 16").await;
    let (_, shown) = server.get(&format!("/api/v1/sessions/{session}")).await;
    let last = shown["last_event_id"].as_str().unwrap().to_string();

    let full = server.events(&session, None, &last).await;
    assert_eq!(full.first().unwrap().0, "1");
    assert_eq!(full.last().unwrap().0, last);
    assert!(full.len() > 6, "{full:?}");
    let ids: Vec<&str> = full.iter().map(|(id, _, _)| id.as_str()).collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "no id twice");

    for cut in [1, 3, full.len() - 1] {
        let mut first = server.events_while(&session, None, |_, _| false).await;
        while first.len() < cut {
            let after = first.last().unwrap().0.clone();
            let more = server.events_while(&session, Some(&after), |_, _| false).await;
            first.extend(more);
        }
        // The connection is dropped here; a new one resumes after the last id seen.
        let after = first.last().unwrap().0.clone();
        let rest = server.events(&session, Some(&after), &last).await;
        first.extend(rest);
        assert_eq!(first, full, "cut after {cut} events");
    }

    let response = server
        .http
        .get(server.url(&format!("/api/v1/sessions/{session}/events")))
        .header("Last-Event-ID", "twelve")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["field"], "Last-Event-ID");
    server.stop().await;
}

#[tokio::test]
async fn a_live_stream_sees_a_run_started_after_it_connected() {
    let server = Server::start().await;
    let session = server.session("calculator").await;
    server.say(&session, "calculate 2 + 2").await;
    let (_, shown) = server.get(&format!("/api/v1/sessions/{session}")).await;
    let last = shown["last_event_id"].as_str().unwrap().to_string();
    let response = server
        .http
        .get(server.url(&format!("/api/v1/sessions/{session}/events")))
        .header("Last-Event-ID", last.as_str())
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream().eventsource();
    let (status, _) = server
        .post(
            &format!("/api/v1/sessions/{session}/messages"),
            json!({"text": "calculate 3 + 4"}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let mut kinds = Vec::new();
    let mut previous: Option<concierge::EventId> = None;
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        let id: concierge::EventId = event.id.parse().unwrap();
        assert!(previous.is_none_or(|p| p < id), "ids increase");
        assert!(id > last.parse().unwrap());
        previous = Some(id);
        kinds.push(event.event.clone());
        if event.event == "run_finished" {
            assert!(event.data.contains("3 + 4 = 7"), "{}", event.data);
            break;
        }
    }
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"), "{kinds:?}");
    server.stop().await;
}

#[tokio::test]
async fn malformed_requests_get_a_4xx_naming_the_field() {
    let server = Server::with(|rt| rt.max_message_bytes(200), |api| api.body_limit(1024)).await;
    let session = server.session("calculator").await;
    let messages = format!("/api/v1/sessions/{session}/messages");

    let (status, body) = server.post(&messages, json!({})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("text")),
        "{body}"
    );
    assert!(body["error"].as_str().unwrap().contains("missing field"), "{body}");
    let (status, body) = server.post(&messages, json!({"text": 5})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("text")),
        "{body}"
    );
    assert!(body["error"].as_str().unwrap().contains("expected a string"), "{body}");
    let (status, body) = server.post(&messages, json!({"text": "hi", "txet": "hi"})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("txet")),
        "{body}"
    );
    let (status, body) = server.post(&messages, json!({"text": "   "})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("text")),
        "{body}"
    );
    let (status, body) = server.post_raw(&messages, "calculate 5 + 3").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().contains("not valid JSON"), "{body}");
    let (status, body) = server.post_raw(&messages, "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // A message over the runtime's limit, in a body under the server's.
    let (status, body) = server.post(&messages, json!({"text": "1 + 1 ".repeat(50)})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("text")),
        "{body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("over the limit of 200 bytes"),
        "{body}"
    );
    // A body over the server's limit.
    let (status, body) = server.post(&messages, json!({"text": "x".repeat(4096)})).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(body["error"].as_str().unwrap().contains("1024 bytes"), "{body}");

    let (status, body) = server.post("/api/v1/sessions", json!({"agent": "astrologer"})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("agent")),
        "{body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("calculator"),
        "lists the agents: {body}"
    );
    let (status, body) = server.post("/api/v1/sessions", json!({"id": "no spaces please"})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("id")),
        "{body}"
    );
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session}/confirm"),
            json!({"call_id": "c", "fingerprint": "f", "decision": "maybe"}),
        )
        .await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("decision")),
        "{body}"
    );
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{session}/choose"), json!({"option": "two"}))
        .await;
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("option")),
        "{body}"
    );
    let (status, body) = server.get("/api/v1/nowhere").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].as_str().unwrap().contains("/openapi.json"), "{body}");
    server.stop().await;
}

#[tokio::test]
async fn the_catalogue_lists_agents_goals_and_tools_with_schemas() {
    let server = Server::start().await;
    let (status, agents) = server.get("/api/v1/agents").await;
    assert_eq!(status, StatusCode::OK);
    let calculator = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "calculator")
        .unwrap();
    assert_eq!(calculator["tools"], json!(["calculator"]));
    let (_, goals) = server.get("/api/v1/goals").await;
    let starters: Vec<&str> = goals["goals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["starter_prompt"].as_str())
        .collect();
    assert!(starters.iter().any(|s| s.contains("calculate 5 + 3")), "{goals}");
    let (_, tools) = server.get("/api/v1/tools").await;
    let calculator = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "calculator")
        .unwrap();
    assert_eq!(calculator["input_schema"]["type"], "object", "{calculator}");
    let (_, computation) = server.get("/api/v1/tools?category=Computation").await;
    let names: Vec<&str> = computation["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"calculator") && !names.contains(&"create_task"),
        "{names:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn the_openapi_document_describes_every_path() {
    let server = Server::start().await;
    let (status, doc) = server.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/healthz",
        "/api/v1/sessions",
        "/api/v1/sessions/{id}",
        "/api/v1/sessions/{id}/messages",
        "/api/v1/sessions/{id}/confirm",
        "/api/v1/sessions/{id}/choose",
        "/api/v1/sessions/{id}/end",
        "/api/v1/sessions/{id}/events",
        "/api/v1/agents",
        "/api/v1/goals",
        "/api/v1/tools",
    ] {
        assert!(paths.contains_key(path), "{path} is missing");
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for schema in [
        "PostMessage",
        "ConfirmRequest",
        "RunOutputView",
        "SessionView",
        "ErrorBody",
    ] {
        assert!(schemas.contains_key(schema), "{schema} is missing");
    }
    assert_eq!(
        schemas["PostMessage"]["required"],
        json!(["text"]),
        "{}",
        schemas["PostMessage"]
    );
    server.stop().await;
}

#[tokio::test]
async fn shutting_down_ends_open_event_streams() {
    let server = Server::start().await;
    let session = server.session("calculator").await;
    server.say(&session, "calculate 1 + 2").await;
    let response = server
        .http
        .get(server.url(&format!("/api/v1/sessions/{session}/events")))
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream().eventsource();
    assert_eq!(stream.next().await.unwrap().unwrap().event, "session_opened");
    assert_eq!(stream.next().await.unwrap().unwrap().event, "run_started");
    // The server stops while the stream is open; serve() returns, and the stream ends.
    server.stop().await;
    while let Some(event) = stream.next().await {
        if event.is_err() {
            break;
        }
    }
}

#[test]
fn without_tokens_only_loopback_is_served() {
    assert!(concierge_server::check_unauthenticated_addr("127.0.0.1:8080".parse().unwrap()).is_ok());
    assert!(concierge_server::check_unauthenticated_addr("[::1]:8080".parse().unwrap()).is_ok());
    let refused = concierge_server::check_unauthenticated_addr("0.0.0.0:8080".parse().unwrap()).unwrap_err();
    assert!(refused.to_string().contains("not a loopback address"), "{refused}");
}
