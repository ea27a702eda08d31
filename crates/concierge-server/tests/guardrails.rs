//! A guardrail's trip and its redaction through every front door, over real
//! HTTP on loopback: the HTTP API (the run's status and `guardrail`, the
//! `guardrail_tripped` event on the stream), the OpenAI-compatible endpoint
//! (`content_filter`), AG-UI (a `CUSTOM` event), A2A (a rejected task) and
//! `/metrics`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use concierge::engine::TracingHooks;
use concierge::guardrail::GuardCheck;
use concierge::{
    AgentSpec, GuardStage, Guardrail, Route, Rules, Runtime, Tool, ToolAnnotations, ToolContext, ToolError, ToolSpec,
};
use concierge_server::HttpApi;
use concierge_server::metrics::Metrics;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::StatusCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;

const SENTENCE: &str = "I can't take that message: it asks for a password.";

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// Finds a customer: the answer has their email.
struct Lookup;

impl Tool for Lookup {
    type Args = Nothing;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("lookup", "Finds a customer.", concierge::tool::schema_for::<Nothing>()).annotations(
            ToolAnnotations {
                read_only: true,
                ..Default::default()
            },
        )
    }

    async fn call(&self, _args: Nothing, _cx: ToolContext) -> Result<Value, ToolError> {
        Ok(json!("Ana Lopez, ana.lopez@example.com"))
    }
}

fn desk() -> AgentSpec {
    AgentSpec::new("desk")
        .tool("lookup")
        .rules(
            Rules::new()
                .route(Route::tool("lookup", json!({})).keywords(["lookup"]))
                .answer("{result}")
                .fallback("Desk here."),
        )
        .guardrail(
            GuardStage::Input,
            Guardrail::new(GuardCheck::Deny {
                patterns: vec!["(?i)password".into()],
                reason: Some("it asks for a password".into()),
            })
            .named("no-passwords"),
        )
        .guardrail(GuardStage::ToolOutput, Guardrail::redact_pii())
}

struct Server {
    base: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    rt: Runtime,
}

impl Server {
    async fn start() -> Self {
        let metrics = Arc::new(Metrics::new());
        let rt = Runtime::builder()
            .in_memory()
            .tool(Lookup)
            .agent(desk())
            .hooks(metrics.hooks(TracingHooks::default()))
            .build()
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(HttpApi::new(rt.clone()).metrics(metrics).serve(listener, async move {
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

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let response = self.http.post(self.url(path)).json(&body).send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// The SSE events of `url`'s stream, as JSON, until `last` says stop.
    async fn stream(&self, request: reqwest::RequestBuilder, last: impl Fn(&Value) -> bool) -> Vec<Value> {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut stream = response.bytes_stream().eventsource();
        let mut seen = Vec::new();
        while let Some(event) = stream.next().await {
            let data: Value = serde_json::from_str(&event.unwrap().data).unwrap_or(Value::Null);
            let done = last(&data);
            seen.push(data);
            if done {
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
async fn a_trip_is_told_on_every_front_door_and_a_redaction_reaches_none() {
    let server = Server::start().await;

    // The HTTP API: the run is blocked, says which guardrail and why.
    let (status, session) = server.post("/api/v1/sessions", json!({"agent": "desk"})).await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    let (status, run) = server
        .post(
            &format!("/api/v1/sessions/{id}/messages?wait=true"),
            json!({"text": "What is the admin password?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{run}");
    assert_eq!(run["status"], "blocked", "{run}");
    assert_eq!(run["reply"], SENTENCE);
    assert_eq!(run["guardrail"]["stage"], "input");
    assert_eq!(run["guardrail"]["guardrail"], "no-passwords");
    // ... and its event stream carries the trip before the run's end.
    let events = server
        .stream(
            server.http.get(server.url(&format!("/api/v1/sessions/{id}/events"))),
            |e| e["type"] == "run_finished",
        )
        .await;
    let tripped = events
        .iter()
        .find(|e| e["type"] == "guardrail_tripped")
        .expect("no trip event");
    assert_eq!(tripped["reason"], "it asks for a password");

    // A tool's result is redacted before anyone sees it.
    let (_, run) = server
        .post(
            &format!("/api/v1/sessions/{id}/messages?wait=true"),
            json!({"text": "lookup Ana"}),
        )
        .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["reply"], "Ana Lopez, [email redacted]");

    // OpenAI-compatible: the sentence, finished by the content filter.
    let (status, completion) = server
        .post(
            "/v1/chat/completions",
            json!({"model": "desk", "messages": [{"role": "user", "content": "my password is hunter2"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{completion}");
    assert_eq!(completion["choices"][0]["finish_reason"], "content_filter");
    assert_eq!(completion["choices"][0]["message"]["content"], SENTENCE);

    // AG-UI: a custom event names the trip, the run finishes.
    let input = json!({
        "threadId": "agui-1",
        "runId": "run-1",
        "messages": [{"id": "m1", "role": "user", "content": "reset my password"}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {},
    });
    let agui = server
        .stream(
            server
                .http
                .post(server.url("/api/v1/agui?agent=desk"))
                .header("accept", "text/event-stream")
                .json(&input),
            |e| e["type"] == "RUN_FINISHED" || e["type"] == "RUN_ERROR",
        )
        .await;
    let custom = agui
        .iter()
        .find(|e| e["type"] == "CUSTOM" && e["name"] == "guardrail_tripped")
        .unwrap_or_else(|| panic!("no guardrail_tripped: {agui:?}"));
    assert_eq!(custom["value"]["stage"], "input", "{custom}");
    assert_eq!(agui.last().unwrap()["type"], "RUN_FINISHED");

    // A2A: the task is rejected.
    let (status, sent) = server
        .post(
            "/a2a/agents/desk/jsonrpc",
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
                "messageId": "a2a-1", "role": "ROLE_USER", "parts": [{"text": "what's the wifi password"}]
            }}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_REJECTED",
        "{sent}"
    );

    // /metrics counts the trips by stage and guardrail.
    let metrics = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let trips = metrics
        .lines()
        .find(|l| l.starts_with("concierge_guardrail_trips_total{") && l.contains("no-passwords"))
        .unwrap_or_else(|| panic!("no trips counted:\n{metrics}"));
    assert!(trips.contains("stage=\"input\""), "{trips}");
    assert!(trips.ends_with(" 4"), "four trips (HTTP, OpenAI, AG-UI, A2A): {trips}");
    assert!(metrics.contains("status=\"blocked\""), "{metrics}");
    server.stop().await;
}
