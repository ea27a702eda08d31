//! OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, llama.cpp, LM
//! Studio, OpenRouter, Groq, Together...).

use std::time::Duration;

use concierge_core::{ModelReply, ModelRequest, ModelToolCall, ToolChoice, Usage};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::http::{Connection, ToolCalls, connection_setters, non_empty, snippet};
use super::{Model, ModelContext, ModelError, ModelErrorKind};

/// A Chat Completions client for any OpenAI-compatible server.
///
/// Streams (SSE, with `stream_options.include_usage`) when the caller wants
/// deltas, and answers in one piece otherwise. Tool calls, parallel tool
/// calls and their streamed argument fragments are assembled into whole calls.
#[derive(Clone, Debug)]
pub struct OpenAiCompatible {
    model: String,
    connection: Connection,
    /// Set once the server failed a streamed request with automatic tool
    /// choice before answering (llama.cpp cannot stream those): such requests
    /// are then sent whole.
    auto_tools_unstreamable: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl OpenAiCompatible {
    /// OpenAI's own endpoint.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A client for `model` at OpenAI's endpoint, with no key yet.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            connection: Connection::new(Self::DEFAULT_BASE_URL),
            auto_tools_unstreamable: Default::default(),
        }
    }

    connection_setters!(
        base_url: "Sets the base URL (requests go to `{base}/chat/completions`).",
        api_key: "Sets the API key, sent as a bearer token (optional for local servers)."
    );

    /// The model name sent to the server.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.connection.base_url)
    }

    /// The JSON body for `request`.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        serde_json::to_value(self.wire_body(request, false)).unwrap_or(Value::Null)
    }

    /// The body, borrowing from the request (nothing is cloned).
    fn wire_body<'a>(&'a self, request: &'a ModelRequest, stream: bool) -> wire::Body<'a> {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(wire::Message::System {
                content: &request.system,
            });
        }
        messages.extend(request.messages.iter().map(wire::Message::from_message));
        let tools = (!request.tools.is_empty()).then(|| {
            request
                .tools
                .iter()
                .map(|t| wire::Tool {
                    kind: "function",
                    function: wire::Function {
                        name: t.name.as_str(),
                        description: &t.description,
                        parameters: &t.parameters,
                    },
                })
                .collect()
        });
        let tool_choice = tools.as_ref().map(|_| match &request.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        });
        wire::Body {
            model: &self.model,
            messages,
            tools,
            tool_choice,
            temperature: request.temperature,
            max_tokens: request.max_tokens,
            stream: stream.then_some(true),
            stream_options: stream.then_some(wire::StreamOptions { include_usage: true }),
        }
    }

    /// Reads a (non-streamed) response body.
    pub fn parse_response(&self, body: &Value) -> Result<ModelReply, ModelError> {
        let choice = body.get("choices").and_then(|c| c.get(0)).ok_or_else(|| {
            self.error(
                ModelErrorKind::Protocol,
                format!("the response has no choices: {}", snippet(&body.to_string())),
            )
        })?;
        let message = &choice["message"];
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut tool_calls = Vec::new();
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                let function = &call["function"];
                tool_calls.push(ModelToolCall {
                    name: function
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    arguments: arguments_text(function.get("arguments")),
                });
            }
        }
        Ok(ModelReply {
            text,
            tool_calls,
            usage: body.get("usage").and_then(parse_usage),
            finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_string),
            guardrail: None,
        })
    }

    fn error(&self, kind: ModelErrorKind, message: impl Into<String>) -> ModelError {
        ModelError::new(kind, self.name(), message)
    }

    /// A POST of `body` (refused before sending when over the size limit).
    fn post_with(
        &self,
        client: &reqwest::Client,
        body: &impl serde::Serialize,
    ) -> Result<reqwest::RequestBuilder, ModelError> {
        let bytes = self.connection.encode(&self.name(), body)?;
        let mut request = self.connection.post(client, &self.endpoint(), bytes);
        if let Some(key) = &self.connection.api_key {
            request = request.bearer_auth(key);
        }
        Ok(request)
    }

    async fn complete_whole_with(
        &self,
        request: &ModelRequest,
        client: &reqwest::Client,
    ) -> Result<ModelReply, ModelError> {
        let name = self.name();
        let post = self.post_with(client, &self.wire_body(request, false))?;
        let response = self.connection.send(&name, &self.endpoint(), post).await?;
        let body = self.connection.read_bytes(&name, response).await?;
        // The usual answer read straight into its fields; anything else
        // (another shape, an error) read as JSON and explained.
        if let Some(reply) = serde_json::from_slice::<wire::Response>(&body)
            .ok()
            .and_then(wire::Response::into_reply)
        {
            return Ok(reply);
        }
        self.parse_response(&super::http::json_of(&name, &body)?)
    }

    /// Streams a completion; `Ok(None)` when the server answered 200 with an
    /// empty body (llama.cpp does, when it picks a tool while streaming with
    /// `tool_choice: auto`).
    async fn complete_streamed(
        &self,
        request: &ModelRequest,
        cx: &ModelContext,
    ) -> Result<Option<ModelReply>, ModelError> {
        let name = self.name();
        let post = self.post_with(self.connection.client(), &self.wire_body(request, true))?;
        let response = self.connection.send(&name, &self.endpoint(), post).await?;
        let mut events = response.bytes_stream().eventsource();
        let mut text = String::new();
        let mut calls = ToolCalls::default();
        let mut usage = None;
        let mut finish_reason = None;
        let mut received = false;
        let mut done = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| self.connection.stream_error(&name, &e))?;
            received = true;
            if event.data.trim() == "[DONE]" {
                done = true;
                break;
            }
            let chunk: Value = serde_json::from_str(&event.data).map_err(|e| {
                self.error(
                    ModelErrorKind::Protocol,
                    format!("sent a stream chunk that is not JSON ({e}): {}", snippet(&event.data)),
                )
            })?;
            if let Some(error) = chunk.get("error") {
                return Err(self.error(
                    ModelErrorKind::Server { status: 500 },
                    format!(
                        "the server reported an error mid-answer: {}",
                        super::http::server_message(&json!({ "error": error }).to_string())
                    ),
                ));
            }
            if let Some(u) = chunk.get("usage").and_then(parse_usage) {
                usage = Some(u);
            }
            for choice in chunk.get("choices").and_then(Value::as_array).into_iter().flatten() {
                let delta = &choice["delta"];
                if let Some(content) = delta.get("content").and_then(Value::as_str) {
                    if !content.is_empty() {
                        text.push_str(content);
                        if let Some(sink) = &cx.on_delta {
                            sink(content);
                        }
                    }
                }
                for (position, call) in delta
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let index = call
                        .get("index")
                        .and_then(Value::as_u64)
                        .map_or(position, |i| i as usize);
                    let function = &call["function"];
                    let name = function.get("name").and_then(Value::as_str);
                    let arguments = arguments_text(function.get("arguments"));
                    calls.push(index, name, &arguments);
                }
                if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                    finish_reason = Some(reason.to_string());
                }
            }
        }
        if !received {
            return Ok(None);
        }
        // Finished means a finish reason, or `[DONE]` after something was
        // said; a bare `[DONE]` is a stream that was cut (llama.cpp's server
        // interrupts a stream when another request arrives).
        let said_something = !text.is_empty() || !calls.is_empty();
        if finish_reason.is_none() && !(done && said_something) {
            return Err(self.error(
                ModelErrorKind::Interrupted,
                format!(
                    "the answer stream from {} ended before the model finished",
                    self.connection.base_url
                ),
            ));
        }
        Ok(Some(ModelReply {
            text,
            tool_calls: calls.finish(),
            usage,
            finish_reason,
            guardrail: None,
        }))
    }

    async fn complete_inner(&self, request: &ModelRequest, cx: &ModelContext) -> Result<ModelReply, ModelError> {
        use std::sync::atomic::Ordering;
        let auto_tools = !request.tools.is_empty() && request.tool_choice == ToolChoice::Auto;
        if cx.on_delta.is_none()
            || !self.connection.stream
            || (auto_tools && self.auto_tools_unstreamable.load(Ordering::Relaxed))
        {
            return self.complete_whole_with(request, self.connection.client()).await;
        }
        // A server that cannot stream this request answers 200 with nothing
        // and closes the connection (llama.cpp, for automatic tool choice):
        // remember it, and ask again whole on a fresh connection (the pooled
        // one is dead).
        match self.complete_streamed(request, cx).await {
            Ok(Some(reply)) => return Ok(reply),
            Ok(None) => {}
            Err(error) if error.kind == ModelErrorKind::Connect => {}
            Err(error) => return Err(error),
        }
        if auto_tools {
            tracing::info!(model = %self.name(), "the server cannot stream automatic tool choice; sending such requests whole");
            self.auto_tools_unstreamable.store(true, Ordering::Relaxed);
        }
        self.complete_whole_with(request, &self.connection.fresh_client()).await
    }
}

fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The request's wire shapes, borrowing from the request.
mod wire {
    use std::borrow::Cow;

    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    #[derive(Serialize)]
    pub struct Body<'a> {
        pub model: &'a str,
        pub messages: Vec<Message<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub tools: Option<Vec<Tool<'a>>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub tool_choice: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub temperature: Option<f32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub max_tokens: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub stream: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub stream_options: Option<StreamOptions>,
    }

    #[derive(Serialize)]
    pub struct StreamOptions {
        pub include_usage: bool,
    }

    #[derive(Serialize)]
    pub struct Tool<'a> {
        #[serde(rename = "type")]
        pub kind: &'static str,
        pub function: Function<'a>,
    }

    #[derive(Serialize)]
    pub struct Function<'a> {
        pub name: &'a str,
        pub description: &'a str,
        pub parameters: &'a Value,
    }

    #[derive(Serialize)]
    #[serde(tag = "role", rename_all = "lowercase")]
    pub enum Message<'a> {
        System {
            content: &'a str,
        },
        User {
            content: &'a str,
        },
        /// `content` is never null: some servers reject it.
        Assistant {
            content: &'a str,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            tool_calls: Vec<Call<'a>>,
        },
        Tool {
            tool_call_id: &'a str,
            content: String,
        },
    }

    #[derive(Serialize)]
    pub struct Call<'a> {
        pub id: &'a str,
        #[serde(rename = "type")]
        pub kind: &'static str,
        pub function: CallFunction<'a>,
    }

    #[derive(Serialize)]
    pub struct CallFunction<'a> {
        pub name: &'a str,
        pub arguments: Cow<'a, str>,
    }

    /// A whole (not streamed) answer, as OpenAI-compatible servers give it.
    /// Fields it lacks are `None`; fields it has in another shape fail the
    /// read, and the answer is then read as a JSON value.
    #[derive(Deserialize)]
    pub struct Response {
        #[serde(default)]
        choices: Vec<Choice>,
        usage: Option<ResponseUsage>,
    }

    #[derive(Deserialize)]
    struct Choice {
        message: Option<ResponseMessage>,
        finish_reason: Option<String>,
    }

    #[derive(Default, Deserialize)]
    struct ResponseMessage {
        content: Option<String>,
        tool_calls: Option<Vec<ResponseCall>>,
    }

    #[derive(Deserialize)]
    struct ResponseCall {
        function: Option<ResponseFunction>,
    }

    #[derive(Default, Deserialize)]
    struct ResponseFunction {
        name: Option<String>,
        arguments: Option<Value>,
    }

    #[derive(Deserialize)]
    struct ResponseUsage {
        prompt_tokens: Option<u64>,
        completion_tokens: Option<u64>,
    }

    impl Response {
        /// The reply, read as [`super::OpenAiCompatible::parse_response`]
        /// reads it; `None` when there is no choice (that error is said there).
        pub fn into_reply(self) -> Option<concierge_core::ModelReply> {
            let choice = self.choices.into_iter().next()?;
            let message = choice.message.unwrap_or_default();
            let tool_calls = message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|call| {
                    let function = call.function.unwrap_or_default();
                    concierge_core::ModelToolCall {
                        name: function.name.unwrap_or_default(),
                        arguments: super::arguments_text(function.arguments.as_ref()),
                    }
                })
                .collect();
            let usage = self.usage.and_then(|u| {
                Some(concierge_core::Usage::tokens(
                    u.prompt_tokens?,
                    u.completion_tokens.unwrap_or(0),
                ))
            });
            Some(concierge_core::ModelReply {
                text: message.content.unwrap_or_default(),
                tool_calls,
                usage,
                finish_reason: choice.finish_reason,
                guardrail: None,
            })
        }
    }

    impl<'a> Message<'a> {
        pub fn from_message(message: &'a concierge_core::Message) -> Self {
            use concierge_core::Message as M;
            match message {
                M::System { content } => Message::System { content },
                M::User { content } => Message::User { content },
                M::Assistant {
                    content, tool_calls, ..
                } => Message::Assistant {
                    content,
                    tool_calls: tool_calls
                        .iter()
                        .map(|c| Call {
                            id: c.id.as_str(),
                            kind: "function",
                            function: CallFunction {
                                name: c.name.as_str(),
                                arguments: match &c.arguments {
                                    Value::String(raw) => Cow::Borrowed(raw.as_str()),
                                    other => Cow::Owned(other.to_string()),
                                },
                            },
                        })
                        .collect(),
                },
                M::Tool { call_id, outcome, .. } => Message::Tool {
                    tool_call_id: call_id.as_str(),
                    content: outcome.to_model_text(),
                },
            }
        }
    }
}

fn parse_usage(usage: &Value) -> Option<Usage> {
    let input = usage.get("prompt_tokens").and_then(Value::as_u64)?;
    let output = usage.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0);
    Some(Usage::tokens(input, output))
}

impl Model for OpenAiCompatible {
    fn name(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move { non_empty(&self.name(), self.complete_inner(request, cx).await?) })
    }

    fn call_budget(&self) -> Option<Duration> {
        Some(self.connection.total_timeout)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use concierge_core::{Message, ToolCall, ToolDef, ToolOutcome};

    use super::*;

    pub(crate) fn request() -> ModelRequest {
        ModelRequest {
            agent: "calc".into(),
            model: None,
            system: "You add.".into(),
            messages: vec![
                Message::user("2+3"),
                Message::Assistant {
                    agent: "calc".into(),
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "add".into(),
                        arguments: json!({"a": 2}),
                    }],
                },
                Message::Tool {
                    agent: "calc".into(),
                    call_id: "call_1".into(),
                    tool: "add".into(),
                    outcome: ToolOutcome::Ok(json!(5)),
                },
            ],
            tools: Arc::from(vec![ToolDef {
                name: "add".into(),
                description: "Adds.".into(),
                parameters: json!({"type": "object"}),
            }]),
            tool_choice: ToolChoice::Auto,
            temperature: Some(0.0),
            max_tokens: None,
        }
    }

    #[test]
    fn body_follows_the_chat_completions_shape() {
        let body = OpenAiCompatible::new("m").request_body(&request());
        assert_eq!(body["model"], "m");
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "You add."}));
        let assistant = &body["messages"][2];
        assert_eq!(assistant["content"], "", "never null: some servers reject it");
        assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], r#"{"a":2}"#);
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "5"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], "add");
        assert_eq!(body["tool_choice"], "auto");
        let mut forced = request();
        forced.tool_choice = ToolChoice::Tool("add".into());
        let body = OpenAiCompatible::new("m").request_body(&forced);
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "function": {"name": "add"}})
        );
    }

    #[test]
    fn response_with_tool_calls_and_usage_is_read() {
        let model = OpenAiCompatible::new("m");
        let reply = model
            .parse_response(&json!({
                "choices": [{"message": {"content": null, "tool_calls": [
                    {"id": "x", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}},
                    {"id": "y", "type": "function", "function": {"name": "add", "arguments": {"a": 2}}}
                ]}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 3}
            }))
            .unwrap();
        assert_eq!(reply.text, "");
        assert_eq!(reply.tool_calls.len(), 2);
        assert_eq!(reply.tool_calls[1].arguments, r#"{"a":2}"#);
        assert_eq!(reply.usage, Some(Usage::tokens(12, 3)));
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert!(model.parse_response(&json!({"error": "x"})).is_err());
    }

    #[test]
    fn an_answer_read_into_its_fields_is_the_answer_read_as_json() {
        let model = OpenAiCompatible::new("m");
        let bodies = [
            json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}},
                {"id": "c2", "type": "function", "function": {"name": "add", "arguments": {"a": 2}}},
                {"id": "c3", "type": "function", "function": {"name": "add"}},
                {"id": "c4", "type": "function"}
            ]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}),
            json!({"choices": [{"message": {"content": null}, "finish_reason": null}], "usage": {"prompt_tokens": 7}}),
            json!({"choices": [{"finish_reason": "stop"}], "usage": {"completion_tokens": 7}}),
            json!({"choices": [{"message": {"content": "a"}}, {"message": {"content": "b"}}], "usage": null}),
            json!({"choices": [{"message": {"content": "ok", "tool_calls": null}}]}),
        ];
        for body in bodies {
            let typed = serde_json::from_value::<wire::Response>(body.clone())
                .ok()
                .and_then(wire::Response::into_reply)
                .unwrap_or_else(|| panic!("{body} is read into its fields"));
            assert_eq!(Some(typed), model.parse_response(&body).ok(), "{body}");
        }
        // What the fields cannot hold is left to the JSON reading (and its errors).
        for body in [
            json!({"choices": []}),
            json!({"error": {"message": "no"}}),
            json!({"choices": [{"message": {"content": [{"type": "text", "text": "hi"}]}}]}),
        ] {
            let typed = serde_json::from_value::<wire::Response>(body.clone())
                .ok()
                .and_then(wire::Response::into_reply);
            assert_eq!(typed, None, "{body}");
        }
    }
}
