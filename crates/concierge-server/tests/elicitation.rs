//! A running call's question to the person (elicitation) through the front
//! doors, over real HTTP: the session state shows it with its schema;
//! `POST /sessions/{id}/answer` answers it (content that does not fit is a
//! 422 naming the field; another tenant finds no such session); the OpenAI
//! endpoint shows it as text and takes the next user message as the answer.
//! The tool asks through its call's channel, as an MCP server's request
//! does (crates/concierge/tests/mcp_elicitation.rs covers MCP itself).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::{
    AgentSpec, Elicitation, ElicitationAction, ElicitationMode, Route, Rules, Runtime, Tool, ToolContext, ToolError,
    ToolSpec,
};
use concierge_server::{HttpApi, TokenConfig, Tokens};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const ACME: &str = "acme-token";
const GLOBEX: &str = "globex-token";

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// Ships after asking where to, through the call's channel.
struct Ship;

impl Tool for Ship {
    type Args = Nothing;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("ship", "Ships the lamp.", concierge::tool::schema_for::<Nothing>())
    }

    async fn call(&self, _args: Nothing, cx: ToolContext) -> Result<Value, ToolError> {
        let channel = cx.channel.ok_or_else(|| ToolError::failed("no channel"))?;
        let question = Elicitation {
            server: "shipping".into(),
            message: "Where should the lamp go?".into(),
            mode: ElicitationMode::Form {
                schema: json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "floor": {"type": "integer", "minimum": 0}},
                    "required": ["city"]
                }),
            },
        };
        let answer = channel
            .0
            .ask(question)
            .await
            .map_err(|e| ToolError::failed(e.to_string()))?;
        Ok(match answer.action {
            ElicitationAction::Accept => {
                json!(format!(
                    "Shipped to {}.",
                    answer.content.unwrap_or_default()["city"].as_str().unwrap_or("?")
                ))
            }
            other => json!(format!("Not shipped ({}).", other.as_str())),
        })
    }
}

fn token(token: &str, tenant: &str) -> TokenConfig {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(token.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    TokenConfig {
        hash: format!("sha256:{hex}"),
        tenant: tenant.into(),
        user: "someone".into(),
    }
}

/// A runtime whose `desk` ships after asking where to, and whose `front`
/// calls `desk` as a tool, served over HTTP to the tenants acme and globex.
struct Api {
    rt: Runtime,
    http: reqwest::Client,
    base: String,
    _dir: tempfile::TempDir,
}

impl Api {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::builder()
            .sqlite(dir.path().join("db"))
            .tool(Ship)
            .agent(
                AgentSpec::new("desk").description("Ships things.").tool("ship").rules(
                    Rules::new()
                        .route(Route::tool("ship", json!({})).keywords(["ship"]))
                        .answer("{result}"),
                ),
            )
            .agent(
                AgentSpec::new("front")
                    .agent_tool(concierge::AgentTool::new("desk"))
                    .rules(
                        Rules::new()
                            .route(Route::tool("desk", json!({"request": "{message}"})).keywords(["ship"]))
                            .answer("{result}"),
                    ),
            )
            .build()
            .await
            .unwrap();
        let tokens = Tokens::from_config(&[token(ACME, "acme"), token(GLOBEX, "globex")]).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(
            HttpApi::new(rt.clone())
                .tokens(tokens)
                .serve(listener, std::future::pending()),
        );
        Self {
            rt,
            http: reqwest::Client::new(),
            base,
            _dir: dir,
        }
    }

    /// POSTs `body` to `path` as `token`'s holder: the status and the JSON answer.
    fn post(&self, token: &str, path: &str, body: Value) -> impl std::future::Future<Output = (u16, Value)> + use<> {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(&body);
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    }
}

/// A question of a child run (the `front` agent calls `desk` as a tool) is
/// the parent session's question over HTTP: shown in its state, answered
/// at its `/answer`, and the parent finishes with the child's reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_question_is_shown_and_answered_in_the_parent_session() {
    let api = Api::start().await;
    let post = |token: &'static str, path: &str, body: Value| api.post(token, path, body);
    let (status, body) = post(ACME, "/api/v1/sessions", json!({"id": "p1", "agent": "front"})).await;
    assert_eq!(status, 201, "{body}");
    let (status, out) = post(
        ACME,
        "/api/v1/sessions/p1/messages?wait=true",
        json!({"text": "ship it"}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["status"], "awaiting_input", "{out}");
    let pending = out["pending_elicitation"].clone();
    assert!(
        pending["text"].as_str().unwrap().contains("Where should the lamp go?"),
        "{pending}"
    );
    assert!(pending["session"].is_string(), "names the child session: {pending}");

    let answer = json!({"call_id": pending["call_id"], "question": 0, "action": "accept", "content": {"city": "Oslo"}});
    let (status, body) = post(GLOBEX, "/api/v1/sessions/p1/answer", answer.clone()).await;
    assert_eq!(status, 404, "another tenant finds no such session: {body}");
    let child = pending["session"].as_str().unwrap();
    let (status, body) = post(GLOBEX, &format!("/api/v1/sessions/{child}/answer"), answer.clone()).await;
    assert_eq!(status, 404, "nor the child session, named outright: {body}");
    let (status, done) = post(ACME, "/api/v1/sessions/p1/answer", answer.clone()).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["reply"], "Shipped to Oslo.");
    let (status, _) = post(ACME, "/api/v1/sessions/p1/answer", answer).await;
    assert_eq!(status, 409, "nothing waits any more");
    api.rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_question_is_shown_and_answered_over_http_and_in_words() {
    let api = Api::start().await;
    let (http, base) = (&api.http, &api.base);
    let post = |token: &'static str, path: &str, body: Value| api.post(token, path, body);
    let (status, body) = post(ACME, "/api/v1/sessions", json!({"id": "s1", "agent": "desk"})).await;
    assert_eq!(status, 201, "{body}");
    let (status, out) = post(
        ACME,
        "/api/v1/sessions/s1/messages?wait=true",
        json!({"text": "ship it"}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["status"], "awaiting_input", "{out}");
    let pending = &out["pending_elicitation"];
    assert_eq!(pending["elicitation"]["schema"]["required"], json!(["city"]));
    assert!(pending["text"].as_str().unwrap().contains("Where should the lamp go?"));

    let state = http
        .get(format!("{base}/api/v1/sessions/s1"))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(state["pending_elicitation"]["call_id"], pending["call_id"]);

    let answer = |action: &str, content: Value| json!({"call_id": pending["call_id"], "question": 0, "action": action, "content": content});
    let (status, body) = post(
        GLOBEX,
        "/api/v1/sessions/s1/answer",
        answer("accept", json!({"city": "Oslo"})),
    )
    .await;
    assert_eq!(status, 404, "another tenant finds no such session: {body}");
    let (status, body) = post(
        ACME,
        "/api/v1/sessions/s1/answer",
        answer("accept", json!({"city": "Oslo", "floor": -1})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["field"], "content");
    assert!(body["error"].as_str().unwrap().contains("Floor"), "{body}");
    let (status, done) = post(
        ACME,
        "/api/v1/sessions/s1/answer",
        answer("accept", json!({"city": "Oslo"})),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["reply"], "Shipped to Oslo.");
    let (status, _) = post(ACME, "/api/v1/sessions/s1/answer", answer("decline", Value::Null)).await;
    assert_eq!(status, 409, "nothing waits any more");

    // The OpenAI endpoint: the question as text, the next message answers it.
    let chat = |text: &str| {
        let request = http
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth(ACME)
            .header("X-Concierge-Session", "o1")
            .json(&json!({"model": "desk", "messages": [{"role": "user", "content": text}]}));
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let asked = chat("ship it").await;
    let text = asked["choices"][0]["message"]["content"].as_str().unwrap().to_string();
    assert!(
        text.contains("Where should the lamp go?") && text.contains("decline"),
        "{text}"
    );
    let declined = chat("decline").await;
    assert_eq!(declined["choices"][0]["message"]["content"], "Not shipped (decline).");

    // AG-UI: the question is an interrupt whose response schema is the form;
    // a resume with the form's values answers it.
    let agui = |input: Value| {
        let request = http
            .post(format!("{base}/api/v1/agui"))
            .bearer_auth(ACME)
            .header("accept", "text/event-stream")
            .json(&input);
        async move {
            use eventsource_stream::Eventsource;
            use futures::StreamExt;
            let response = request.send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200);
            let mut stream = response.bytes_stream().eventsource();
            let mut events = Vec::new();
            while let Some(event) = stream.next().await {
                events.push(serde_json::from_str::<Value>(&event.unwrap().data).unwrap());
            }
            events
        }
    };
    let events = agui(json!({
        "threadId": "g1", "runId": "run-1",
        "messages": [{"id": "m1", "role": "user", "content": "ship it"}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {"agent": "desk"},
    }))
    .await;
    let finished = events.last().unwrap().clone();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{events:#?}");
    let interrupt = finished["outcome"]["interrupts"][0].clone();
    assert_eq!(interrupt["metadata"]["kind"], "elicitation");
    assert_eq!(interrupt["responseSchema"]["anyOf"][0]["required"], json!(["city"]));
    let events = agui(json!({
        "threadId": "g1", "runId": "run-2", "messages": [],
        "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"city": "Bergen"}}],
    }))
    .await;
    let finished = events.last().unwrap().clone();
    assert_eq!(finished["type"], "RUN_FINISHED", "{events:#?}");
    assert_eq!(finished["result"], "Shipped to Bergen.", "{finished}");
}
