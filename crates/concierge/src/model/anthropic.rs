//! Anthropic's Messages API.

use std::collections::BTreeMap;
use std::time::Duration;

use concierge_core::{Message, ModelReply, ModelRequest, ModelToolCall, ToolChoice, Usage};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::http::{Connection, connection_setters, non_empty, snippet};
use super::{Model, ModelContext, ModelError, ModelErrorKind};

/// A client for Anthropic's Messages API (`{base}/v1/messages`).
///
/// The system prompt goes in `system`; tool calls and results are
/// `tool_use` / `tool_result` blocks; streaming reads
/// `content_block_start/delta/stop` and `message_delta` (with usage).
#[derive(Clone, Debug)]
pub struct Anthropic {
    model: String,
    connection: Connection,
    max_tokens: u32,
    version: String,
}

impl Anthropic {
    /// Anthropic's own endpoint.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";

    /// A client for `model`, with no key yet and `max_tokens` 1024.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            connection: Connection::new(Self::DEFAULT_BASE_URL),
            max_tokens: 1024,
            version: "2023-06-01".into(),
        }
    }

    connection_setters!(
        base_url: "Sets the base URL (requests go to `{base}/v1/messages`).",
        api_key: "Sets the API key (sent as `x-api-key`)."
    );

    /// Sets `max_tokens` (required by the API; default 1024).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.connection.base_url)
    }

    /// The JSON body for `request`.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let mut system = request.system.clone();
        let mut messages: Vec<(String, Vec<Value>)> = Vec::new();
        let mut push = |role: &str, block: Value| match messages.last_mut() {
            Some((last, blocks)) if last == role => blocks.push(block),
            _ => messages.push((role.to_string(), vec![block])),
        };
        for message in &request.messages {
            match message {
                Message::System { content } => {
                    if !system.is_empty() {
                        system.push_str("\n\n");
                    }
                    system.push_str(content);
                }
                Message::User { content } => {
                    if !content.is_empty() {
                        push("user", json!({"type": "text", "text": content}));
                    }
                }
                Message::Assistant {
                    content, tool_calls, ..
                } => {
                    if !content.is_empty() {
                        push("assistant", json!({"type": "text", "text": content}));
                    }
                    for call in tool_calls {
                        let input = match &call.arguments {
                            Value::Object(_) => call.arguments.clone(),
                            Value::String(raw) => json!({"_unparsed": raw}),
                            other => json!({"_value": other}),
                        };
                        push(
                            "assistant",
                            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                        );
                    }
                }
                Message::Tool { call_id, outcome, .. } => push(
                    "user",
                    json!({
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": outcome.to_model_text(),
                        "is_error": !outcome.is_ok(),
                    }),
                ),
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let mut body = json!({
            "model": self.model,
            "max_tokens": request.max_tokens.map_or(self.max_tokens, |m| m.min(self.max_tokens)),
            "messages": messages,
        });
        if !system.is_empty() {
            body["system"] = json!(system);
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        body
    }

    /// Reads a (non-streamed) response body.
    pub fn parse_response(&self, body: &Value) -> Result<ModelReply, ModelError> {
        let content = body.get("content").and_then(Value::as_array).ok_or_else(|| {
            self.error(
                ModelErrorKind::Protocol,
                format!("the response has no content: {}", snippet(&body.to_string())),
            )
        })?;
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
                Some("tool_use") => tool_calls.push(ModelToolCall {
                    name: block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    arguments: block.get("input").map_or_else(|| "{}".to_string(), Value::to_string),
                }),
                _ => {}
            }
        }
        let usage = body.get("usage").map(|u| {
            Usage::tokens(
                u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
                u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
            )
        });
        Ok(ModelReply {
            text,
            tool_calls,
            usage,
            finish_reason: body.get("stop_reason").and_then(Value::as_str).map(str::to_string),
            guardrail: None,
        })
    }

    fn error(&self, kind: ModelErrorKind, message: impl Into<String>) -> ModelError {
        ModelError::new(kind, self.name(), message)
    }

    /// A POST of `body` (refused before sending when over the size limit).
    fn post(&self, body: &Value) -> Result<reqwest::RequestBuilder, ModelError> {
        let bytes = self.connection.encode(&self.name(), body)?;
        let mut request = self
            .connection
            .post(self.connection.client(), &self.endpoint(), bytes)
            .header("anthropic-version", self.version.as_str());
        if let Some(key) = &self.connection.api_key {
            request = request.header("x-api-key", key.as_str());
        }
        Ok(request)
    }

    async fn complete_whole(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let name = self.name();
        let post = self.post(&self.request_body(request))?;
        let response = self.connection.send(&name, &self.endpoint(), post).await?;
        self.parse_response(&self.connection.read_json(&name, response).await?)
    }

    async fn complete_streamed(&self, request: &ModelRequest, cx: &ModelContext) -> Result<ModelReply, ModelError> {
        let name = self.name();
        let mut body = self.request_body(request);
        body["stream"] = json!(true);
        let post = self.post(&body)?;
        let response = self.connection.send(&name, &self.endpoint(), post).await?;
        let mut events = response.bytes_stream().eventsource();
        let mut text = String::new();
        // Tool-use blocks by content index: (name, partial JSON).
        let mut tools: BTreeMap<u64, (String, String)> = BTreeMap::new();
        let mut input_tokens = 0;
        let mut output_tokens = 0;
        let mut stop_reason = None;
        let mut stopped = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| self.connection.stream_error(&name, &e))?;
            let data: Value = match serde_json::from_str(&event.data) {
                Ok(data) => data,
                Err(_) if event.data.trim().is_empty() => continue,
                Err(e) => {
                    return Err(self.error(
                        ModelErrorKind::Protocol,
                        format!("sent a stream event that is not JSON ({e}): {}", snippet(&event.data)),
                    ));
                }
            };
            let kind = data.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
            match kind {
                "message_start" => {
                    let usage = data.pointer("/message/usage");
                    input_tokens = usage
                        .and_then(|u| u.get("input_tokens"))
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    output_tokens = usage
                        .and_then(|u| u.get("output_tokens"))
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                }
                "content_block_start" => {
                    let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                    let block = &data["content_block"];
                    if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                        let name = block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        tools.insert(index, (name, String::new()));
                    }
                }
                "content_block_delta" => {
                    let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                    let delta = &data["delta"];
                    match delta.get("type").and_then(Value::as_str) {
                        Some("text_delta") => {
                            let piece = delta.get("text").and_then(Value::as_str).unwrap_or_default();
                            text.push_str(piece);
                            if let (Some(sink), false) = (&cx.on_delta, piece.is_empty()) {
                                sink(piece);
                            }
                        }
                        Some("input_json_delta") => {
                            let piece = delta.get("partial_json").and_then(Value::as_str).unwrap_or_default();
                            if let Some(tool) = tools.get_mut(&index) {
                                tool.1.push_str(piece);
                            }
                        }
                        _ => {}
                    }
                }
                "message_delta" => {
                    if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                        stop_reason = Some(reason.to_string());
                    }
                    if let Some(out) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                        output_tokens = out;
                    }
                }
                "message_stop" => {
                    stopped = true;
                    break;
                }
                "error" => {
                    let kind_name = data.pointer("/error/type").and_then(Value::as_str).unwrap_or("error");
                    let message = data
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let kind = match kind_name {
                        "overloaded_error" | "api_error" => ModelErrorKind::Server { status: 529 },
                        "rate_limit_error" => ModelErrorKind::RateLimited { retry_after: None },
                        _ => ModelErrorKind::Protocol,
                    };
                    return Err(self.error(
                        kind,
                        format!("the server reported an error mid-answer ({kind_name}): {message}"),
                    ));
                }
                _ => {}
            }
        }
        if !stopped {
            return Err(self.error(
                ModelErrorKind::Interrupted,
                format!(
                    "the answer stream from {} ended before the model finished (no message_stop)",
                    self.connection.base_url
                ),
            ));
        }
        let tool_calls = tools
            .into_values()
            .map(|(name, arguments)| ModelToolCall {
                name,
                arguments: if arguments.trim().is_empty() {
                    "{}".into()
                } else {
                    arguments
                },
            })
            .collect();
        Ok(ModelReply {
            text,
            tool_calls,
            usage: Some(Usage::tokens(input_tokens, output_tokens)),
            finish_reason: stop_reason,
            guardrail: None,
        })
    }

    async fn complete_inner(&self, request: &ModelRequest, cx: &ModelContext) -> Result<ModelReply, ModelError> {
        if cx.on_delta.is_some() && self.connection.stream {
            self.complete_streamed(request, cx).await
        } else {
            self.complete_whole(request).await
        }
    }
}

impl Model for Anthropic {
    fn name(&self) -> String {
        format!("anthropic:{}", self.model)
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

    use concierge_core::{ToolCall, ToolDef, ToolError, ToolOutcome};

    use super::*;

    #[test]
    fn body_uses_blocks_and_merges_turns() {
        let request = ModelRequest {
            agent: "a".into(),
            model: None,
            system: "Be brief.".into(),
            messages: vec![
                Message::system("Extra rule."),
                Message::user("sum and product"),
                Message::Assistant {
                    agent: "a".into(),
                    content: "On it.".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "call_1".into(),
                            name: "add".into(),
                            arguments: json!({"a": 1}),
                        },
                        ToolCall {
                            id: "call_2".into(),
                            name: "mul".into(),
                            arguments: Value::String("{broken".into()),
                        },
                    ],
                },
                Message::Tool {
                    agent: "a".into(),
                    call_id: "call_1".into(),
                    tool: "add".into(),
                    outcome: ToolOutcome::Ok(json!(1)),
                },
                Message::Tool {
                    agent: "a".into(),
                    call_id: "call_2".into(),
                    tool: "mul".into(),
                    outcome: ToolOutcome::Error(ToolError::failed("bad")),
                },
            ],
            tools: Arc::from(vec![ToolDef {
                name: "add".into(),
                description: "Adds.".into(),
                parameters: json!({"type": "object"}),
            }]),
            tool_choice: ToolChoice::Required,
            temperature: None,
            max_tokens: None,
        };
        let body = Anthropic::new("claude").max_tokens(256).request_body(&request);
        assert_eq!(body["system"], "Be brief.\n\nExtra rule.");
        assert_eq!(body["max_tokens"], 256);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "user, assistant, user (both results merged)");
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
        assert_eq!(messages[1]["content"][1]["input"], json!({"a": 1}));
        assert_eq!(messages[1]["content"][2]["input"], json!({"_unparsed": "{broken"}));
        assert_eq!(messages[2]["content"][1]["is_error"], true);
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
    }

    #[test]
    fn response_blocks_become_text_and_calls() {
        let reply = Anthropic::new("claude")
            .parse_response(&json!({
                "content": [
                    {"type": "text", "text": "Let me add."},
                    {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}}
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 20, "output_tokens": 9}
            }))
            .unwrap();
        assert_eq!(reply.text, "Let me add.");
        assert_eq!(reply.tool_calls[0].name, "add");
        assert_eq!(
            serde_json::from_str::<Value>(&reply.tool_calls[0].arguments).unwrap(),
            json!({"a": 1, "b": 2})
        );
        assert_eq!(reply.usage, Some(Usage::tokens(20, 9)));
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_use"));
    }
}
