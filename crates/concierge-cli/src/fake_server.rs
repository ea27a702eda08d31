//! A benchmark fixture: an OpenAI-compatible server that answers at once and
//! deterministically, so anyone can reproduce the benchmark without a model.
//! It is not a model: a user message gets a `calculator` tool call built
//! from the numbers and the operation word in it; a tool result gets a final
//! answer quoting it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

/// The fixture's state: what it was asked, and whether it answers yet.
pub struct Fixture {
    calls: AtomicU64,
    /// Requests waiting for the gate to open.
    held: AtomicU64,
    /// Final answers (replies to a tool result) given.
    answers: AtomicU64,
    gate: tokio::sync::watch::Sender<bool>,
}

impl Fixture {
    /// A fixture that answers at once (`open`) or holds every request until
    /// [`Fixture::open`].
    pub fn new(open: bool) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            calls: AtomicU64::new(0),
            held: AtomicU64::new(0),
            answers: AtomicU64::new(0),
            gate: tokio::sync::watch::Sender::new(open),
        })
    }

    /// Holds every request from now on, until [`Fixture::open`].
    pub fn close(&self) {
        self.gate.send_replace(false);
    }

    /// Answers every request from now on, the held ones too.
    pub fn open(&self) {
        self.gate.send_replace(true);
    }

    /// Requests waiting for the gate.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// Final answers given so far (one per finished calculator turn).
    pub fn answers(&self) -> u64 {
        self.answers.load(Ordering::Relaxed)
    }

    /// Serves the fixture on `listener` until the process ends.
    pub async fn serve(self: std::sync::Arc<Self>, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .with_state(self);
        axum::serve(listener, app).await
    }
}

/// The reply the fixture gives to a chat request body.
pub fn answer(body: &Value, call_no: u64) -> Result<Value, String> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("the request has no messages array")?;
    let last = messages.last().ok_or("the request has no messages")?;
    let role = last.get("role").and_then(Value::as_str).unwrap_or_default();
    let content = last.get("content").and_then(Value::as_str).unwrap_or_default();
    let prompt_chars: usize = messages
        .iter()
        .map(|m| m.get("content").and_then(Value::as_str).map_or(0, str::len))
        .sum();
    let usage = json!({"prompt_tokens": prompt_chars / 4 + 1, "completion_tokens": 12});
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
        && body.get("tool_choice").and_then(Value::as_str) != Some("none");
    let message = if role == "user" && has_tools {
        let (operation, a, b) = parse_question(content);
        json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": format!("call_{call_no}"),
                "type": "function",
                "function": {"name": "calculator", "arguments": json!({"operation": operation, "a": a, "b": b}).to_string()}
            }]
        })
    } else if role == "tool" {
        let result: Value = serde_json::from_str(content).unwrap_or(Value::String(content.to_string()));
        let text = result
            .get("formula")
            .and_then(Value::as_str)
            .map(|f| format!("The answer: {f}."))
            .unwrap_or_else(|| format!("The tool said: {content}"));
        json!({"role": "assistant", "content": text})
    } else {
        json!({"role": "assistant", "content": "Ask me to calculate something."})
    };
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    Ok(json!({
        "id": format!("fake-{call_no}"),
        "object": "chat.completion",
        "model": body.get("model").cloned().unwrap_or(Value::Null),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }))
}

fn parse_question(text: &str) -> (&'static str, f64, f64) {
    let numbers: Vec<f64> = text
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .filter_map(|t| t.parse::<f64>().ok())
        .collect();
    let lower = text.to_lowercase();
    let operation = if lower.contains("minus") {
        "subtract"
    } else if lower.contains("times") {
        "multiply"
    } else if lower.contains("divided") {
        "divide"
    } else {
        "add"
    };
    (
        operation,
        numbers.first().copied().unwrap_or(0.0),
        numbers.get(1).copied().unwrap_or(0.0),
    )
}

/// The largest char boundary of `text` at or before `at`.
fn char_floor(text: &str, at: usize) -> usize {
    let mut i = at.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The same answer as a stream of chunks (text in three pieces, tool-call
/// arguments in two), usage last, then `[DONE]`.
pub fn stream(reply: &Value) -> String {
    let message = &reply["choices"][0]["message"];
    let finish = &reply["choices"][0]["finish_reason"];
    let chunk =
        |delta: Value, finish: &Value| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut chunks = vec![chunk(json!({"role": "assistant"}), &Value::Null)];
    if let Some(text) = message["content"].as_str() {
        let third = text.len() / 3;
        let cuts = [0, char_floor(text, third), char_floor(text, 2 * third), text.len()];
        for pair in cuts.windows(2) {
            chunks.push(chunk(json!({"content": &text[pair[0]..pair[1]]}), &Value::Null));
        }
    }
    for (index, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
        let half = char_floor(arguments, arguments.len() / 2);
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": &arguments[..half]}}]}),
            &Value::Null,
        ));
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": &arguments[half..]}}]}),
            &Value::Null,
        ));
    }
    chunks.push(chunk(json!({}), finish));
    chunks.push(json!({"choices": [], "usage": reply["usage"]}));
    let mut body = String::new();
    for c in chunks {
        body.push_str("data: ");
        body.push_str(&c.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// Counts a request as held while it lives (its connection may close first).
struct Held<'a>(&'a AtomicU64);

impl<'a> Held<'a> {
    fn new(count: &'a AtomicU64) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn chat(State(fixture): State<std::sync::Arc<Fixture>>, Json(body): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let n = fixture.calls.fetch_add(1, Ordering::Relaxed) + 1;
    let mut gate = fixture.gate.subscribe();
    if !*gate.borrow_and_update() {
        let _held = Held::new(&fixture.held);
        let _ = gate.wait_for(|open| *open).await;
    }
    let reply = answer(&body, n);
    if reply
        .as_ref()
        .is_ok_and(|r| r["choices"][0]["message"]["tool_calls"].is_null())
    {
        fixture.answers.fetch_add(1, Ordering::Relaxed);
    }
    match reply {
        Ok(reply) if body.get("stream").and_then(Value::as_bool) == Some(true) => (
            StatusCode::OK,
            [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
            stream(&reply),
        )
            .into_response(),
        Ok(reply) => (StatusCode::OK, Json(reply)).into_response(),
        Err(message) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"message": message, "type": "invalid_request_error"}})),
        )
            .into_response(),
    }
}

/// Serves the fixture on `addr` until the process is stopped. Prints the base URL.
pub async fn serve(addr: SocketAddr) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("http://{}/v1", listener.local_addr()?);
    Fixture::new(true).serve(listener).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_gets_a_tool_call_and_a_result_gets_an_answer() {
        let body = json!({"tools": [{}], "messages": [{"role": "user", "content": "what is 17 plus 25?"}]});
        let reply = answer(&body, 1).unwrap();
        let call = &reply["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "calculator");
        let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"operation": "add", "a": 17.0, "b": 25.0}));
        let body = json!({"messages": [{"role": "tool", "content": "{\"formula\":\"17 + 25 = 42\"}"}]});
        let reply = answer(&body, 2).unwrap();
        assert_eq!(reply["choices"][0]["message"]["content"], "The answer: 17 + 25 = 42.");
        assert!(answer(&json!({}), 3).is_err());
        let streamed = stream(&reply);
        assert!(streamed.ends_with("data: [DONE]\n\n"));
        assert!(
            streamed.contains("The ans") && streamed.contains("\"usage\""),
            "{streamed}"
        );
    }
}
