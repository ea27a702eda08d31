//! The OpenAI-compatible endpoint through real HTTP on loopback: the
//! calculator and the task manager's agents on their rules (and one agent
//! on a streaming test model), driven with reqwest as an OpenAI client would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use concierge::config::load_agents;
use concierge::model::{Model, ModelContext, ModelError};
use concierge::{AgentSpec, ModelReply, ModelRequest, Runtime, RuntimeBuilder};
use concierge_demo::tasks::{Knowledge, TaskStore, toolset_with};
use concierge_server::HttpApi;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const SESSION: &str = "x-concierge-session";

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

/// The calculator and the task manager's agents, on their rules.
fn demo(dir: &Path) -> RuntimeBuilder {
    let store = TaskStore::open(dir.join("tasks.db"));
    let knowledge = Knowledge::open(tasks_example().join("knowledge.md"));
    let mut agents = concierge_demo::agents();
    agents.extend(load_agents(&tasks_example().join("agents")).unwrap().agents);
    Runtime::builder()
        .toolset(concierge_demo::calculator::toolset())
        .toolset(toolset_with(store, knowledge))
        .agents(agents)
}

/// A test model that streams its answer in three deltas.
struct Streaming;

impl Model for Streaming {
    fn name(&self) -> String {
        "scripted:streaming".into()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        if let Some(sink) = &cx.on_delta {
            for piece in ["Hel", "lo ", "there"] {
                sink(piece);
            }
        }
        Box::pin(async { Ok(ModelReply::text("Hello there").with_usage(7, 3)) })
    }
}

impl Server {
    async fn start() -> Self {
        Self::with(demo).await
    }

    async fn with(builder: impl FnOnce(&Path) -> RuntimeBuilder) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let rt = builder(dir.path())
            .sqlite(dir.path().join("concierge.db"))
            .build()
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(HttpApi::new(rt.clone()).serve(listener, async move {
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

    /// A chat completion request; the session header when given. Returns
    /// the status, the session header of the answer and its JSON body.
    async fn chat(&self, session: Option<&str>, body: Value) -> (StatusCode, Option<String>, Value) {
        let mut request = self.http.post(self.url("/v1/chat/completions")).json(&body);
        if let Some(session) = session {
            request = request.header(SESSION, session);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let header = response.headers().get(SESSION).map(|v| v.to_str().unwrap().to_string());
        let text = response.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"));
        (status, header, value)
    }

    /// Says `text` to `model` in `session`; the answer's content (200 expected).
    async fn say(&self, session: &str, model: &str, text: &str) -> String {
        let (status, header, body) = self
            .chat(
                Some(session),
                json!({"model": model, "messages": [{"role": "user", "content": text}]}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(header.as_deref(), Some(session));
        body["choices"][0]["message"]["content"].as_str().unwrap().to_string()
    }

    /// A streamed chat completion: the session header and every `data` of the stream.
    async fn stream(&self, session: Option<&str>, body: Value) -> (Option<String>, Vec<String>) {
        let mut request = self.http.post(self.url("/v1/chat/completions")).json(&body);
        if let Some(session) = session {
            request = request.header(SESSION, session);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let header = response.headers().get(SESSION).map(|v| v.to_str().unwrap().to_string());
        let mut events = response.bytes_stream().eventsource();
        let mut data = Vec::new();
        while let Some(event) = events.next().await {
            data.push(event.unwrap().data);
        }
        (header, data)
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

/// The chunks of a stream (all but `[DONE]`, which must be last) and their content joined.
fn read_chunks(data: &[String]) -> (Vec<Value>, String) {
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let text = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    (chunks, text)
}

#[tokio::test]
async fn the_models_are_the_agents_and_concierge() {
    let server = Server::start().await;
    let (status, list) = server.get("/v1/models").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["object"], "list");
    let data = list["data"].as_array().unwrap();
    let ids: Vec<&str> = data.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids.first(), Some(&"concierge"), "{ids:?}");
    assert!(ids.contains(&"calculator") && ids.contains(&"task"), "{ids:?}");
    for model in data {
        assert_eq!(model["object"], "model");
        assert_eq!(model["owned_by"], "concierge");
        assert!(model["created"].as_u64().unwrap() > 1_600_000_000, "{model}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_completion_answers_whole_and_names_its_new_session() {
    let server = Server::start().await;
    let (status, session, body) = server
        .chat(
            None,
            json!({
                "model": "calculator",
                "messages": [{"role": "user", "content": "calculate 5 + 3"}],
                "temperature": 0.7, "top_p": 0.9, "max_tokens": 50, "seed": 1, "stop": ["\n"],
                "user": "someone", "stream": false
            }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let session = session.expect("the answer names its session");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "calculator");
    let id = body["id"].as_str().unwrap();
    assert!(id.starts_with(&format!("chatcmpl-{session}.")), "{id}");
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(choice["message"]["role"], "assistant");
    assert!(choice["message"]["content"].as_str().unwrap().contains('8'), "{body}");
    assert_eq!(body["usage"]["total_tokens"], 0, "rules use no tokens: {body}");

    // The session is the HTTP API's: the run, its tool call, its history.
    let (status, shown) = server.get(&format!("/api/v1/sessions/{session}")).await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["agent"], "calculator");
    assert_eq!(shown["history"][0]["text"], "calculate 5 + 3");

    // A request without the header starts another session.
    let (_, other, _) = server
        .chat(
            None,
            json!({"model": "calculator", "messages": [{"role": "user", "content": "calculate 1 + 1"}]}),
        )
        .await;
    assert_ne!(other.unwrap(), session);
    server.stop().await;
}

#[tokio::test]
async fn a_streamed_completion_sends_chunks_the_stop_the_usage_and_done() {
    let server = Server::start().await;
    let (session, data) = server
        .stream(
            Some("streamed-1"),
            json!({
                "model": "calculator", "stream": true, "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "calculate 6 * 7"}]
            }),
        )
        .await;
    assert_eq!(session.as_deref(), Some("streamed-1"));
    let (chunks, text) = read_chunks(&data);
    assert!(text.contains("42"), "{text:?}");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let ids: Vec<&str> = chunks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert!(
        ids.iter()
            .all(|id| *id == ids[0] && id.starts_with("chatcmpl-streamed-1.")),
        "{ids:?}"
    );
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "calculator");
        assert!(chunk.get("tool_calls").is_none() && chunk["choices"][0]["delta"].get("tool_calls").is_none());
    }
    let finishes: Vec<&Value> = chunks
        .iter()
        .filter(|c| !c["choices"][0]["finish_reason"].is_null())
        .collect();
    assert_eq!(finishes.len(), 1, "{chunks:?}");
    assert_eq!(finishes[0]["choices"][0]["finish_reason"], "stop");
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]), "{usage}");
    assert_eq!(usage["usage"]["total_tokens"], 0);

    // Without include_usage: no usage chunk, the stop chunk is last.
    let (_, data) = server
        .stream(
            Some("streamed-1"),
            json!({"model": "calculator", "stream": true, "messages": [{"role": "user", "content": "calculate 2 + 2"}]}),
        )
        .await;
    let (chunks, text) = read_chunks(&data);
    assert!(text.contains('4'), "{text:?}");
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "stop");
    assert!(chunks.iter().all(|c| c.get("usage").is_none()), "{chunks:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_model_that_streams_is_streamed_delta_by_delta() {
    let server = Server::with(|_| {
        Runtime::builder()
            .agent(AgentSpec::new("greeter").instructions("Greet."))
            .model(Streaming)
    })
    .await;
    let (_, data) = server
        .stream(
            None,
            json!({
                "model": "greeter", "stream": true, "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "hi"}]
            }),
        )
        .await;
    let (chunks, text) = read_chunks(&data);
    assert_eq!(text, "Hello there", "the text is sent once: {chunks:?}");
    let pieces: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(pieces, ["Hel", "lo ", "there"]);
    assert_eq!(chunks.last().unwrap()["usage"]["prompt_tokens"], 7);
    assert_eq!(chunks.last().unwrap()["usage"]["completion_tokens"], 3);

    // Not streamed, the same answer, with its usage.
    let (status, _, body) = server
        .chat(
            None,
            json!({"model": "greeter", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Hello there");
    assert_eq!(body["usage"]["total_tokens"], 10);
    server.stop().await;
}

#[tokio::test]
async fn the_session_header_carries_the_conversation() {
    let server = Server::start().await;
    let first = server.say("my-chat_1.a", "calculator", "calculate 5 + 3").await;
    assert!(first.contains('8'), "{first}");
    // The client resends the whole conversation, as OpenAI clients do; only the last message is new.
    let (status, session, body) = server
        .chat(
            Some("my-chat_1.a"),
            json!({"model": "calculator", "messages": [
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "calculate 5 + 3"},
                {"role": "assistant", "content": first},
                {"role": "user", "content": "what is the square root of 16"}
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(session.as_deref(), Some("my-chat_1.a"));
    assert!(
        body["choices"][0]["message"]["content"].as_str().unwrap().contains('4'),
        "{body}"
    );
    let (_, shown) = server.get("/api/v1/sessions/my-chat_1.a").await;
    let users: Vec<&str> = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["calculate 5 + 3", "what is the square root of 16"]);

    // A new session named by the header takes the client's earlier turns as its history.
    let (status, _, body) = server
        .chat(
            Some("brought-along"),
            json!({"model": "calculator", "messages": [
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": [{"type": "text", "text": "Hi! What shall I calculate?"}]},
                {"role": "user", "content": "calculate 2 + 3"}
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, shown) = server.get("/api/v1/sessions/brought-along").await;
    let history: Vec<(&str, &str)> = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|m| (m["role"].as_str().unwrap(), m["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        history,
        [
            ("user", "hello"),
            ("assistant", "Hi! What shall I calculate?"),
            ("user", "calculate 2 + 3")
        ]
    );

    // A session created through the HTTP API with an agent takes `concierge` messages with that agent.
    let (status, created) = {
        let response = server
            .http
            .post(server.url("/api/v1/sessions"))
            .json(&json!({"id": "opened", "agent": "calculator"}))
            .send()
            .await
            .unwrap();
        (response.status(), response.json::<Value>().await.unwrap())
    };
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let answer = server.say("opened", "concierge", "calculate 9 - 4").await;
    assert!(answer.contains('5'), "{answer}");
    let (_, shown) = server.get("/api/v1/sessions/opened").await;
    assert_eq!(shown["agent"], "calculator");
    server.stop().await;
}

/// What the session's `create_task` calls returned (from its history).
fn create_task_results(session: &Value) -> Vec<String> {
    session["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool" && m["tool"] == "create_task")
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_confirmation_is_asked_in_words_and_answered_by_yes() {
    let server = Server::start().await;
    let asked = server
        .say(
            "confirm-1",
            "task",
            "create a task to review the budget due Friday with high priority",
        )
        .await;
    assert!(asked.starts_with("I'll "), "{asked}");
    assert!(asked.contains("review the budget"), "{asked}");
    let (_, shown) = server.get("/api/v1/sessions/confirm-1").await;
    assert_eq!(shown["pending_confirmation"]["tool"], "create_task", "{shown}");

    let done = server.say("confirm-1", "task", "yes").await;
    assert!(!done.starts_with("I'll "), "{done}");
    assert!(
        done.contains("Created task") && done.contains("Review the budget"),
        "{done}"
    );
    let (_, shown) = server.get("/api/v1/sessions/confirm-1").await;
    assert!(shown["pending_confirmation"].is_null(), "{shown}");
    let results = create_task_results(&shown);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains("Review the budget"), "{results:?}");

    // Streamed, through `concierge` (the session's current agent): asked, then declined.
    let (_, data) = server
        .stream(
            Some("confirm-1"),
            json!({"model": "concierge", "stream": true, "messages": [{"role": "user", "content": "create a task to water the plants"}]}),
        )
        .await;
    let (chunks, asked) = read_chunks(&data);
    assert!(asked.starts_with("I'll "), "{asked}");
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "stop");
    let (_, data) = server
        .stream(
            Some("confirm-1"),
            json!({"model": "concierge", "stream": true, "messages": [{"role": "user", "content": "no"}]}),
        )
        .await;
    let (_, answer) = read_chunks(&data);
    assert!(!answer.starts_with("I'll "), "{answer}");
    let (_, shown) = server.get("/api/v1/sessions/confirm-1").await;
    assert!(shown["pending_confirmation"].is_null(), "{shown}");
    let results = create_task_results(&shown);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        !results[1].contains("water the plants") || results[1].contains("declined"),
        "{results:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_numbered_choice_is_offered_as_text_and_answered_by_2() {
    let server = Server::start().await;
    let (_, data) = server
        .stream(
            Some("choice-1"),
            json!({"model": "task", "stream": true, "messages": [{"role": "user", "content": "complete the fix"}]}),
        )
        .await;
    let (_, offered) = read_chunks(&data);
    assert!(
        offered.contains("Several tasks could match. Which one do you mean?"),
        "{offered}"
    );
    assert!(offered.contains("2. #5 "), "{offered}");
    let (_, shown) = server.get("/api/v1/sessions/choice-1").await;
    assert!(!shown["pending_choice"].is_null(), "{shown}");

    let asked = server.say("choice-1", "task", "2").await;
    assert!(
        asked.starts_with("I'll mark #5, 'Fix logout button alignment'"),
        "{asked}"
    );
    let done = server.say("choice-1", "task", "yes").await;
    assert!(!done.starts_with("I'll "), "{done}");
    let (_, shown) = server.get("/api/v1/sessions/choice-1").await;
    assert!(
        shown["pending_choice"].is_null() && shown["pending_confirmation"].is_null(),
        "{shown}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_unknown_model_is_a_404_naming_the_models() {
    let server = Server::start().await;
    let (status, session, body) = server
        .chat(
            None,
            json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(session.is_none(), "no session was started");
    let error = &body["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["param"], "model");
    assert_eq!(error["code"], "model_not_found");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("\"gpt-4o\"") && message.contains("concierge, ") && message.contains("calculator"),
        "{message}"
    );
    server.stop().await;
}

#[tokio::test]
async fn each_malformed_request_is_a_400_naming_its_param() {
    let server = Server::start().await;
    let user = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (json!({"model": "calculator"}), "messages"),
        (json!({"messages": user}), "model"),
        (json!({"model": 5, "messages": user}), "model"),
        (json!({"model": "calculator", "messages": []}), "messages"),
        (json!({"model": "calculator", "messages": "hi"}), "messages"),
        (json!({"model": "calculator", "messages": ["hi"]}), "messages[0]"),
        (
            json!({"model": "calculator", "messages": user, "stream_options": true}),
            "stream_options",
        ),
        (
            json!({"model": "calculator", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}),
            "messages",
        ),
        (
            json!({"model": "calculator", "messages": [{"role": "wizard", "content": "hi"}]}),
            "messages[0].role",
        ),
        (
            json!({"model": "calculator", "messages": [{"content": "hi"}]}),
            "messages[0].role",
        ),
        (
            json!({"model": "calculator", "messages": [{"role": "user", "content": 5}]}),
            "messages[0].content",
        ),
        (
            json!({"model": "calculator", "messages": [{"role": "user"}]}),
            "messages[0].content",
        ),
        (
            json!({"model": "calculator", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}),
            "messages[0].content[0].type",
        ),
        (json!({"model": "calculator", "messages": user, "n": 2}), "n"),
        (
            json!({"model": "calculator", "messages": user, "stream": "yes"}),
            "stream",
        ),
        (
            json!({"model": "calculator", "messages": user, "temperature": "hot"}),
            "temperature",
        ),
        (
            json!({"model": "calculator", "messages": user, "tools": [{"type": "function", "function": {"name": "f"}}]}),
            "tools",
        ),
        (
            json!({"model": "calculator", "messages": user, "stream_options": {"include_usage": 1}}),
            "stream_options.include_usage",
        ),
    ];
    for (body, param) in cases {
        let (status, session, answer) = server.chat(None, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} → {answer}");
        assert_eq!(answer["error"]["param"], param, "{body} → {answer}");
        assert_eq!(answer["error"]["type"], "invalid_request_error");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty());
        for rust in ["f64", "u64", "u32", "i64", "Vec<", "Option<", "struct", "ChatMessage"] {
            assert!(!message.contains(rust), "said in words: {message}");
        }
        assert!(session.is_none());
    }
    let (status, _, answer) = server
        .chat(
            Some("not a valid id!"),
            json!({"model": "calculator", "messages": user}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["param"], "X-Concierge-Session");
    let response = server
        .http
        .post(server.url("/v1/chat/completions"))
        .header("content-type", "application/json")
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = response.json().await.unwrap();
    assert!(
        answer["error"]["message"].as_str().unwrap().contains("not valid JSON"),
        "{answer}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_ended_session_refuses_in_openais_shape() {
    let server = Server::start().await;
    server.say("ends", "calculator", "calculate 1 + 1").await;
    let response = server
        .http
        .post(server.url("/api/v1/sessions/ends/end"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let (status, _, body) = server
        .chat(
            Some("ends"),
            json!({"model": "calculator", "messages": [{"role": "user", "content": "calculate 2 + 2"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "session_ended");
    assert!(body["error"]["message"].as_str().unwrap().contains("ended"), "{body}");
    server.stop().await;
}

#[tokio::test]
async fn the_openapi_document_describes_the_openai_endpoints() {
    let server = Server::start().await;
    let (_, doc) = server.get("/openapi.json").await;
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.contains_key("/v1/models"));
    let post = &doc["paths"]["/v1/chat/completions"]["post"];
    let ok = &post["responses"]["200"];
    assert!(ok["content"]["application/json"].is_object(), "{ok}");
    assert!(ok["content"]["text/event-stream"].is_object(), "{ok}");
    assert!(ok["headers"]["X-Concierge-Session"].is_object(), "{ok}");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for schema in [
        "ChatCompletionRequest",
        "ChatCompletion",
        "ChatCompletionChunk",
        "ModelList",
        "OpenAiErrorBody",
    ] {
        assert!(schemas.contains_key(schema), "{schema} is missing");
    }
    assert_eq!(
        schemas["ChatCompletionRequest"]["required"],
        json!(["model", "messages"])
    );
    server.stop().await;
}

#[tokio::test]
async fn an_oversized_body_or_message_is_a_413_in_openais_shape() {
    let server = Server::with(|dir| demo(dir).max_message_bytes(1000)).await;
    let long = "x".repeat(300 * 1024);
    let (status, _, body) = server
        .chat(
            None,
            json!({"model": "calculator", "messages": [{"role": "user", "content": long}]}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("over the limit"),
        "{body}"
    );
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let (status, _, body) = server
        .chat(
            None,
            json!({"model": "calculator", "messages": [{"role": "user", "content": "y".repeat(1001)}]}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["param"], "messages", "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("1001 bytes"),
        "{body}"
    );
    server.stop().await;
}

/// Checks `instance` against the schema the OpenAPI document declares for
/// `path`'s `status` answer in `content_type` (or a component by name).
fn check_against(doc: &Value, schema: Value, instance: &Value) {
    let root = json!({"allOf": [schema], "components": doc["components"]});
    let validator = jsonschema::validator_for(&root).unwrap();
    let errors: Vec<String> = validator.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{instance} does not fit {root}: {errors:?}");
}

fn declared(doc: &Value, method: &str, path: &str, status: &str) -> Value {
    let schema = doc["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"].clone();
    assert!(schema.is_object(), "{method} {path} declares no JSON body for {status}");
    schema
}

#[tokio::test]
async fn every_answer_fits_the_schema_the_document_declares() {
    let server = Server::start().await;
    let (_, doc) = server.get("/openapi.json").await;
    let completions = "/v1/chat/completions";

    let (_, models) = server.get("/v1/models").await;
    check_against(&doc, declared(&doc, "get", "/v1/models", "200"), &models);

    let (status, _, answer) = server
        .chat(
            Some("fits"),
            json!({"model": "task", "messages": [{"role": "user", "content": "create a task to fix the printer"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    check_against(&doc, declared(&doc, "post", completions, "200"), &answer);

    let (_, data) = server
        .stream(
            Some("fits"),
            json!({"model": "task", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "yes"}]}),
        )
        .await;
    let (chunks, _) = read_chunks(&data);
    let chunk = json!({"$ref": "#/components/schemas/ChatCompletionChunk"});
    for c in &chunks {
        check_against(&doc, chunk.clone(), c);
    }

    let user = json!([{"role": "user", "content": "hi"}]);
    for (status, body, header) in [
        ("404", json!({"model": "nobody", "messages": user}), None),
        ("400", json!({"model": "calculator", "messages": []}), None),
        ("400", json!({"model": "calculator", "messages": user}), Some("bad id!")),
    ] {
        let (got, _, error) = server.chat(header, body).await;
        assert_eq!(got.as_str(), status, "{error}");
        check_against(&doc, declared(&doc, "post", completions, status), &error);
    }
    server.rt.end("fits", "done").await.unwrap();
    let (got, _, error) = server
        .chat(Some("fits"), json!({"model": "task", "messages": user}))
        .await;
    assert_eq!(got, StatusCode::CONFLICT, "{error}");
    check_against(&doc, declared(&doc, "post", completions, "409"), &error);
    server.stop().await;
}

/// A test model that answers only when the test lets it, and says when it is asked.
struct Gated {
    asked: tokio::sync::mpsc::UnboundedSender<()>,
    open: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Model for Gated {
    fn name(&self) -> String {
        "scripted:gated".into()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a ModelRequest,
        _cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let _ = self.asked.send(());
        Box::pin(async move {
            let _permit = self.open.acquire().await;
            Ok(ModelReply::text("Done at last."))
        })
    }
}

#[tokio::test]
async fn a_session_busy_with_a_run_is_a_409_in_openais_shape() {
    let (asked, mut was_asked) = tokio::sync::mpsc::unbounded_channel();
    let open = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let gate = open.clone();
    let server = Server::with(move |_| {
        Runtime::builder()
            .agent(AgentSpec::new("slow").instructions("Take your time."))
            .model(Gated { asked, open: gate })
    })
    .await;
    let body = json!({"model": "slow", "messages": [{"role": "user", "content": "hi"}]});
    let first = {
        let (http, url, body) = (server.http.clone(), server.url("/v1/chat/completions"), body.clone());
        tokio::spawn(async move {
            let response = http.post(url).header(SESSION, "busy").json(&body).send().await.unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        })
    };
    was_asked.recv().await.unwrap();
    // Asked to be refused rather than queued.
    let response = server
        .http
        .post(server.url("/v1/chat/completions"))
        .header(SESSION, "busy")
        .header("X-Concierge-Multitask", "reject")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let refused: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "session_busy", "{refused}");
    assert_eq!(refused["error"]["type"], "invalid_request_error");
    // By default a message for a busy session waits for its run, then runs.
    let queued = {
        let (http, url, body) = (server.http.clone(), server.url("/v1/chat/completions"), body.clone());
        tokio::spawn(async move {
            let response = http.post(url).header(SESSION, "busy").json(&body).send().await.unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        })
    };
    open.add_permits(1);
    let (status, answer) = first.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], "Done at last.");
    was_asked.recv().await.unwrap();
    open.add_permits(1);
    let (status, answer) = queued.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], "Done at last.");
    server.stop().await;
}
