//! The providers on the wire: wiremock replays responses shaped like the real
//! APIs' (streamed and not), and injects faults.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use concierge::model::{
    Anthropic, Model, ModelContext, ModelError, ModelErrorKind, OpenAiCompatible, RetryPolicy, complete_with_retry,
};
use concierge::{Message, ModelReply, ModelRequest};
use concierge_core::{ToolChoice, ToolDef, Usage};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn request() -> ModelRequest {
    ModelRequest {
        agent: "calc".into(),
        model: None,
        system: "You calculate.".into(),
        messages: vec![Message::user("what is 2 + 3 and 4 * 5?")],
        tools: Arc::from(vec![
            ToolDef {
                name: "add".into(),
                description: "Adds.".into(),
                parameters: json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
            },
            ToolDef {
                name: "mul".into(),
                description: "Multiplies.".into(),
                parameters: json!({"type": "object"}),
            },
        ]),
        tool_choice: ToolChoice::Auto,
        temperature: Some(0.0),
        max_tokens: None,
    }
}

fn fast() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(50),
    }
}

/// A context that records every delta.
fn recording() -> (ModelContext, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let cx = ModelContext {
        on_delta: Some(Arc::new(move |text: &str| sink.lock().unwrap().push(text.to_string()))),
    };
    (cx, seen)
}

fn sse(events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        body.push_str(&format!("data: {event}\n\n"));
    }
    body
}

fn sse_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

fn openai(server: &MockServer) -> OpenAiCompatible {
    OpenAiCompatible::new("gpt-test")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(Some("sk-test".into()))
        .header("X-Team", "concierge")
        .timeout(Duration::from_millis(500))
}

fn anthropic(server: &MockServer) -> Anthropic {
    Anthropic::new("claude-test")
        .base_url(server.uri())
        .api_key(Some("ak-test".into()))
        .max_tokens(300)
        .timeout(Duration::from_millis(500))
}

/// Every POST is answered with `response`.
async fn answer(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST")).respond_with(response).mount(server).await;
}

/// The first POST is answered with `response` (before any other answer).
async fn answer_once(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .respond_with(response)
        .up_to_n_times(1)
        .with_priority(1)
        .mount(server)
        .await;
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap()
}

fn body(request: &Request) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

// ----- OpenAI-compatible -----

#[tokio::test]
async fn openai_parallel_tool_calls_and_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .and(header("x-team", "concierge"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}},
                {"id": "call_b", "type": "function", "function": {"name": "mul", "arguments": "{\"a\":4,\"b\":5}"}}
            ]}}],
            "usage": {"prompt_tokens": 57, "completion_tokens": 31, "total_tokens": 88}
        })))
        .mount(&server)
        .await;
    let reply = openai(&server)
        .complete(&request(), &ModelContext::default())
        .await
        .unwrap();
    assert_eq!(reply.tool_calls.len(), 2);
    assert_eq!(reply.tool_calls[1].name, "mul");
    assert_eq!(reply.usage, Some(Usage::tokens(57, 31)));
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    let sent = body(&requests(&server).await[0]);
    assert_eq!(sent["model"], "gpt-test");
    assert_eq!(sent["tool_choice"], "auto");
    assert_eq!(sent["tools"][1]["function"]["name"], "mul");
    assert!(sent.get("stream").is_none(), "no deltas wanted: not streamed");
}

#[tokio::test]
async fn openai_streams_text_deltas_with_usage_in_the_last_chunk() {
    let server = MockServer::start().await;
    let chunk =
        |content: &str| json!({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]});
    let events = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}),
        chunk("2 + 3"),
        chunk(" = "),
        chunk("5."),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 6}}),
    ];
    let mut stream = sse(&events);
    stream.push_str("data: [DONE]\n\n");
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(
            json!({"stream": true, "stream_options": {"include_usage": true}}),
        ))
        .respond_with(sse_response(stream))
        .mount(&server)
        .await;
    let (cx, seen) = recording();
    let reply = openai(&server).complete(&request(), &cx).await.unwrap();
    assert_eq!(reply.text, "2 + 3 = 5.");
    assert_eq!(*seen.lock().unwrap(), ["2 + 3", " = ", "5."]);
    assert_eq!(reply.usage, Some(Usage::tokens(40, 6)));
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn openai_tool_call_deltas_split_across_chunks_are_assembled() {
    let server = MockServer::start().await;
    let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        let mut c = json!({"index": index, "function": function});
        if let Some(id) = id {
            c["id"] = json!(id);
            c["type"] = json!("function");
        }
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [c]}, "finish_reason": null}]})
    };
    let events = [
        call(0, Some("call_a"), Some("add"), ""),
        call(0, None, None, "{\"a\""),
        call(1, Some("call_b"), Some("mul"), "{\"a\":4,"),
        call(0, None, None, ":2,\"b\":"),
        call(1, None, None, "\"b\":5}"),
        call(0, None, None, "3}"),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 9, "completion_tokens": 7}}),
    ];
    let mut stream = sse(&events);
    stream.push_str("data: [DONE]\n\n");
    answer(&server, sse_response(stream)).await;
    let (cx, seen) = recording();
    let reply = openai(&server).complete(&request(), &cx).await.unwrap();
    assert!(seen.lock().unwrap().is_empty(), "no text, no deltas");
    let calls: Vec<(String, Value)> = reply
        .tool_calls
        .iter()
        .map(|c| (c.name.clone(), serde_json::from_str(&c.arguments).unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("add".to_string(), json!({"a": 2, "b": 3})),
            ("mul".to_string(), json!({"a": 4, "b": 5}))
        ]
    );
    assert_eq!(reply.usage, Some(Usage::tokens(9, 7)));
}

#[tokio::test]
async fn openai_429_with_retry_after_is_retried() {
    let server = MockServer::start().await;
    answer_once(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "0.02")
            .set_body_json(json!({"error": {"message": "Rate limit reached", "type": "requests"}})),
    )
    .await;
    answer(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(json!({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})),
    )
    .await;
    let model = openai(&server);
    let first = model.complete(&request(), &ModelContext::default()).await.unwrap_err();
    assert_eq!(
        first.kind,
        ModelErrorKind::RateLimited {
            retry_after: Some(Duration::from_millis(20))
        }
    );
    assert_eq!(
        fast().delay(1, &first),
        Duration::from_millis(20),
        "Retry-After is honoured"
    );
    let reply = complete_with_retry(&model, &request(), &ModelContext::default(), &fast())
        .await
        .unwrap();
    assert_eq!(reply.text, "ok");
}

#[tokio::test]
async fn openai_500_then_success() {
    let server = MockServer::start().await;
    answer_once(&server, ResponseTemplate::new(500).set_body_string("upstream exploded")).await;
    answer(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(json!({"choices": [{"message": {"content": "recovered"}, "finish_reason": "stop"}]})),
    )
    .await;
    let reply = complete_with_retry(&openai(&server), &request(), &ModelContext::default(), &fast())
        .await
        .unwrap();
    assert_eq!(reply.text, "recovered");
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn openai_timeout_then_success() {
    let server = MockServer::start().await;
    answer_once(
        &server,
        ResponseTemplate::new(200)
            .set_delay(Duration::from_secs(5))
            .set_body_json(json!({"choices": [{"message": {"content": "too late"}}]})),
    )
    .await;
    answer(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(json!({"choices": [{"message": {"content": "in time"}, "finish_reason": "stop"}]})),
    )
    .await;
    let model = openai(&server).timeout(Duration::from_millis(200));
    let reply = complete_with_retry(&model, &request(), &ModelContext::default(), &fast())
        .await
        .unwrap();
    assert_eq!(reply.text, "in time");
}

#[tokio::test]
async fn openai_401_is_not_retried_and_says_why() {
    let server = MockServer::start().await;
    answer(
        &server,
        ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "Incorrect API key provided"}})),
    )
    .await;
    let error = complete_with_retry(&openai(&server), &request(), &ModelContext::default(), &fast())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Auth { status: 401 });
    assert!(error.message.contains("check the API key") && error.message.contains("Incorrect API key"));
    assert!(error.message.contains("HTTP 401"), "{error}");
    assert_eq!(requests(&server).await.len(), 1, "a 401 is not retried");
    let server = MockServer::start().await;
    answer(&server, ResponseTemplate::new(400).set_body_string("bad tools")).await;
    let error = complete_with_retry(&openai(&server), &request(), &ModelContext::default(), &fast())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::BadRequest { status: 400 });
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn openai_truncated_stream_is_an_interruption_and_is_retried() {
    let server = MockServer::start().await;
    let cut = sse(&[json!({"choices": [{"index": 0, "delta": {"content": "The ans"}, "finish_reason": null}]})]);
    answer_once(&server, sse_response(cut)).await;
    let whole =
        sse(&[json!({"choices": [{"index": 0, "delta": {"content": "The answer is 5."}, "finish_reason": "stop"}]})])
            + "data: [DONE]\n\n";
    answer(&server, sse_response(whole)).await;
    let (cx, _) = recording();
    let model = openai(&server);
    let error: ModelError = model.complete(&request(), &cx).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Interrupted);
    assert!(error.is_retryable());
    let reply = complete_with_retry(&model, &request(), &cx, &fast()).await.unwrap();
    assert_eq!(reply.text, "The answer is 5.");
}

#[tokio::test]
async fn openai_empty_streamed_answer_falls_back_to_a_whole_one() {
    // llama.cpp answers 200 with an empty body when it picks a tool while
    // streaming with tool_choice auto.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(ResponseTemplate::new(200).insert_header("content-type", "text/event-stream"))
        .mount(&server)
        .await;
    answer(&server, ResponseTemplate::new(200).set_body_json(json!({"choices": [{"finish_reason": "tool_calls", "message": {
            "content": "", "tool_calls": [{"id": "x", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":1}"}}]}}]}))).await;
    let (cx, _) = recording();
    let reply = openai(&server).complete(&request(), &cx).await.unwrap();
    assert_eq!(reply.tool_calls[0].name, "add");
    let sent = requests(&server).await;
    assert_eq!(sent.len(), 2);
    assert!(body(&sent[1]).get("stream").is_none());
}

// ----- Anthropic -----

#[tokio::test]
async fn anthropic_tool_use_blocks_and_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "ak-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [
                {"type": "text", "text": "I'll compute both."},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
                {"type": "tool_use", "id": "toolu_2", "name": "mul", "input": {"a": 4, "b": 5}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 120, "output_tokens": 40}
        })))
        .mount(&server)
        .await;
    let reply = anthropic(&server)
        .complete(&request(), &ModelContext::default())
        .await
        .unwrap();
    assert_eq!(reply.text, "I'll compute both.");
    assert_eq!(reply.tool_calls.len(), 2);
    assert_eq!(
        serde_json::from_str::<Value>(&reply.tool_calls[1].arguments).unwrap(),
        json!({"a": 4, "b": 5})
    );
    assert_eq!(reply.usage, Some(Usage::tokens(120, 40)));
    let sent = body(&requests(&server).await[0]);
    assert_eq!(sent["system"], "You calculate.");
    assert_eq!(sent["max_tokens"], 300);
    assert_eq!(sent["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(sent["messages"][0]["content"][0]["text"], "what is 2 + 3 and 4 * 5?");
}

fn anthropic_event(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

#[tokio::test]
async fn anthropic_streams_text_and_tool_use_with_usage() {
    let server = MockServer::start().await;
    let mut stream = String::new();
    stream += &anthropic_event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 88, "output_tokens": 1}}}),
    );
    stream += &anthropic_event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    stream += &anthropic_event("ping", json!({"type": "ping"}));
    for piece in ["Adding", " now."] {
        stream += &anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        );
    }
    stream += &anthropic_event("content_block_stop", json!({"type": "content_block_stop", "index": 0}));
    stream += &anthropic_event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}}),
    );
    for piece in ["{\"a\": 2", ", \"b\"", ": 3}"] {
        stream += &anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    stream += &anthropic_event("content_block_stop", json!({"type": "content_block_stop", "index": 1}));
    stream += &anthropic_event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 27}}),
    );
    stream += &anthropic_event("message_stop", json!({"type": "message_stop"}));
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(sse_response(stream))
        .mount(&server)
        .await;
    let (cx, seen) = recording();
    let reply = anthropic(&server).complete(&request(), &cx).await.unwrap();
    assert_eq!(reply.text, "Adding now.");
    assert_eq!(*seen.lock().unwrap(), ["Adding", " now."]);
    assert_eq!(reply.tool_calls[0].name, "add");
    assert_eq!(
        serde_json::from_str::<Value>(&reply.tool_calls[0].arguments).unwrap(),
        json!({"a": 2, "b": 3})
    );
    assert_eq!(reply.usage, Some(Usage::tokens(88, 27)));
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_use"));
}

#[tokio::test]
async fn anthropic_faults_retry_or_not() {
    let server = MockServer::start().await;
    answer_once(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "0")
            .set_body_json(json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})),
    )
    .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529).set_body_json(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
        )
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}})))
        .with_priority(3)
        .mount(&server)
        .await;
    let reply = complete_with_retry(&anthropic(&server), &request(), &ModelContext::default(), &fast())
        .await
        .unwrap();
    assert_eq!(reply.text, "fine");
    assert_eq!(requests(&server).await.len(), 3, "429, then 529, then success");

    let server = MockServer::start().await;
    answer(
        &server,
        ResponseTemplate::new(401).set_body_json(
            json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        ),
    )
    .await;
    let error = complete_with_retry(&anthropic(&server), &request(), &ModelContext::default(), &fast())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Auth { status: 401 });
    assert!(error.message.contains("invalid x-api-key"));
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn anthropic_truncated_stream_is_an_interruption() {
    let server = MockServer::start().await;
    let mut stream = anthropic_event(
        "message_start",
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}),
    );
    stream += &anthropic_event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half"}}),
    );
    answer(&server, sse_response(stream)).await;
    let (cx, _) = recording();
    let error = anthropic(&server).complete(&request(), &cx).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Interrupted);
}

#[tokio::test]
async fn anthropic_mid_stream_error_event() {
    let server = MockServer::start().await;
    let stream = anthropic_event(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    answer(&server, sse_response(stream)).await;
    let (cx, _) = recording();
    let error = anthropic(&server).complete(&request(), &cx).await.unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert!(error.message.contains("Overloaded"));
}

#[test]
fn unknown_replies_have_no_cost_until_priced() {
    let reply = ModelReply::text("x").with_usage(1, 2);
    assert_eq!(reply.usage.unwrap().cost_usd, None);
}

#[tokio::test]
async fn openai_bare_done_without_a_finish_is_an_interruption() {
    let server = MockServer::start().await;
    let body = sse(&[json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null}}]})])
        + "data: [DONE]\n\n";
    answer(&server, sse_response(body)).await;
    let (cx, _) = recording();
    let error = openai(&server).complete(&request(), &cx).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Interrupted);
}

// ----- Time limits, named causes, empty answers, request size -----

/// A server that accepts connections and never answers; counts them.
async fn silent_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(socket);
        }
    });
    (format!("http://{address}/v1"), accepted)
}

/// The error's text names the model once and never says reqwest's words.
fn said_once(error: &ModelError) -> String {
    let text = error.to_string();
    assert_eq!(text.matches(&error.model).count(), 1, "{text}");
    assert!(!text.contains("error sending request"), "{text}");
    assert!(!text.contains("os error"), "{text}");
    text
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_says_so() {
    let (base, accepted) = silent_server().await;
    let model = OpenAiCompatible::new("gpt-test")
        .base_url(&base)
        .timeout(Duration::from_millis(150))
        .total_timeout(Duration::from_secs(30));
    let error = complete_with_retry(&model, &request(), &ModelContext::default(), &fast())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Timeout);
    assert!(error.is_timeout());
    let text = said_once(&error);
    assert!(text.contains("did not answer within 150 ms (3 attempts over"), "{text}");
    assert_eq!(text.matches("did not answer").count(), 1, "{text}");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_total_budget_bounds_the_whole_call() {
    // Each attempt may take 60 s, but the call only 300 ms: the budget wins.
    let (base, accepted) = silent_server().await;
    let model = Anthropic::new("claude-test")
        .base_url(&base)
        .timeout(Duration::from_secs(60))
        .total_timeout(Duration::from_millis(300));
    assert_eq!(model.call_budget(), Some(Duration::from_millis(300)));
    let error = complete_with_retry(&model, &request(), &ModelContext::default(), &RetryPolicy::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Timeout);
    let text = said_once(&error);
    assert!(
        text.contains("did not answer within 300 ms, the budget for the whole call (1 attempt)"),
        "{text}"
    );
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_closed_port_is_a_refused_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let base = format!("http://{address}/v1");
    let model = OpenAiCompatible::new("gpt-test").base_url(&base);
    let error = complete_with_retry(&model, &request(), &ModelContext::default(), &fast())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::ConnectionRefused);
    assert!(error.is_retryable(), "a local server may be starting");
    let text = said_once(&error);
    assert!(
        text.starts_with(&format!(
            "model openai:gpt-test: cannot connect to {base}: connection refused"
        )),
        "{text}"
    );
    assert!(text.contains("(3 attempts over"), "{text}");
}

#[tokio::test]
async fn an_unknown_host_is_named_and_not_retried() {
    // `.invalid` never resolves (RFC 6761). Without a reachable resolver the
    // lookup fails at once too; a resolver that hangs is cut by the connect
    // timeout.
    let model = OpenAiCompatible::new("gpt-test")
        .base_url("http://nowhere.invalid/v1")
        .connect_timeout(Duration::from_secs(5));
    let error = complete_with_retry(&model, &request(), &ModelContext::default(), &fast())
        .await
        .unwrap_err();
    let text = said_once(&error);
    match error.kind {
        ModelErrorKind::Dns => {
            assert!(!error.is_retryable());
            assert!(
                text.starts_with("model openai:gpt-test: cannot resolve host nowhere.invalid"),
                "{text}"
            );
            assert!(!text.contains("attempts"), "not retried: {text}");
        }
        ModelErrorKind::ConnectTimeout => assert!(text.contains("no connection within 5 s"), "{text}"),
        other => panic!("unexpected kind {other:?}: {text}"),
    }
}

#[tokio::test]
async fn tls_to_a_plain_http_server_is_a_tls_failure() {
    let server = MockServer::start().await;
    let base = server.uri().replace("http://", "https://");
    let model = OpenAiCompatible::new("gpt-test").base_url(&base);
    let error = complete_with_retry(&model, &request(), &ModelContext::default(), &fast())
        .await
        .unwrap_err();
    let text = said_once(&error);
    assert_eq!(error.kind, ModelErrorKind::Tls, "{text}");
    assert!(!error.is_retryable());
    assert!(text.contains(&format!("TLS with {base} failed")), "{text}");
}

#[tokio::test]
async fn a_500_says_the_status_and_the_server_s_message() {
    let server = MockServer::start().await;
    answer(
        &server,
        ResponseTemplate::new(500)
            .set_body_json(json!({"error": {"message": "upstream\n  exploded", "type": "server_error"}})),
    )
    .await;
    let error = complete_with_retry(
        &openai(&server),
        &request(),
        &ModelContext::default(),
        &RetryPolicy::none(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Server { status: 500 });
    assert_eq!(
        error.to_string(),
        "model openai:gpt-test: the server answered HTTP 500 Internal Server Error: upstream exploded"
    );
    assert_eq!(requests(&server).await.len(), 1, "RetryPolicy::none() tries once");
    // The runtime's error shows the model error as it is: no second prefix.
    let outer = concierge::Error::from(error.clone()).to_string();
    assert_eq!(outer, error.to_string());
}

#[tokio::test]
async fn an_empty_answer_is_retried_then_reported() {
    let server = MockServer::start().await;
    answer(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(json!({"choices": [{"message": {"content": "  "}, "finish_reason": "stop"}]})),
    )
    .await;
    let error = complete_with_retry(&openai(&server), &request(), &ModelContext::default(), &fast())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::EmptyReply);
    let text = said_once(&error);
    assert!(
        text.contains("answered with neither text nor a tool call (finish reason: stop) (3 attempts over"),
        "{text}"
    );
    assert_eq!(requests(&server).await.len(), 3);

    // Empty once, then an answer: the retry recovers.
    let server = MockServer::start().await;
    answer_once(
        &server,
        ResponseTemplate::new(200).set_body_json(json!({"content": [], "stop_reason": "end_turn"})),
    )
    .await;
    answer(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(json!({"content": [{"type": "text", "text": "5"}], "stop_reason": "end_turn"})),
    )
    .await;
    let reply = complete_with_retry(&anthropic(&server), &request(), &ModelContext::default(), &fast())
        .await
        .unwrap();
    assert_eq!(reply.text, "5");
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn an_empty_stream_is_an_empty_answer() {
    let server = MockServer::start().await;
    let body = sse(&[json!({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}]})])
        + "data: [DONE]\n\n";
    answer(&server, sse_response(body)).await;
    let (cx, _) = recording();
    let error = openai(&server).complete(&request(), &cx).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::EmptyReply);
    assert!(error.is_retryable());
}

#[tokio::test]
async fn an_oversized_request_fails_before_sending() {
    let server = MockServer::start().await;
    answer(
        &server,
        ResponseTemplate::new(200).set_body_json(json!({"choices": [{"message": {"content": "ok"}}]})),
    )
    .await;
    let mut big = request();
    big.messages.push(Message::user("x".repeat(4096)));
    let (cx, _) = recording();
    for model in [
        Box::new(openai(&server).max_request_bytes(2048)) as Box<dyn Model>,
        Box::new(anthropic(&server).max_request_bytes(2048)),
    ] {
        for cx in [ModelContext::default(), cx.clone()] {
            let error = complete_with_retry(model.as_ref(), &big, &cx, &fast())
                .await
                .unwrap_err();
            assert!(matches!(error.kind, ModelErrorKind::RequestTooLarge { limit: 2048, bytes } if bytes > 4096));
            assert!(!error.is_retryable());
            let text = said_once(&error);
            assert!(text.contains(&model.name()), "{text}");
            assert!(text.contains("over the 2 KiB limit, so it was not sent"), "{text}");
            assert!(!text.contains("attempts"), "not retried: {text}");
        }
    }
    assert!(requests(&server).await.is_empty(), "nothing reached the server");
    // Under the limit, the same request goes through.
    let reply = openai(&server)
        .max_request_bytes(1 << 20)
        .complete(&big, &ModelContext::default())
        .await
        .unwrap();
    assert_eq!(reply.text, "ok");
}

#[test]
fn retry_policy_none_is_one_attempt() {
    assert_eq!(RetryPolicy::none().max_attempts, 1);
}
