//! OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter...).

use std::time::Duration;

use concierge_core::{Message, ModelReply, ModelRequest, ModelToolCall, ToolChoice, Usage};
use futures::future::BoxFuture;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Model, ModelContext, ModelError, ModelErrorKind};

/// A Chat Completions client for any OpenAI-compatible server.
#[derive(Clone, Debug)]
pub struct OpenAiCompatible {
    client: reqwest::Client,
    model: String,
    base_url: String,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

impl OpenAiCompatible {
    /// OpenAI's own endpoint.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A client for `model` at OpenAI's endpoint, with no key yet.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            client: reqwest::Client::new(),
            model: model.into(),
            base_url: Self::DEFAULT_BASE_URL.to_string(),
            api_key: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
        }
    }

    /// Sets the base URL (requests go to `{base}/chat/completions`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_string();
        self
    }

    /// Sets the API key (optional for local servers).
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key.filter(|k| !k.is_empty());
        self
    }

    /// Adds a header to every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the per-request timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The model name sent to the server.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// The JSON body for `request`.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for message in &request.messages {
            messages.push(wire_message(message));
        }
        let mut body = json!({
            "model": self.model,
            "messages": messages,
        });
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {"name": t.name, "description": t.description, "parameters": t.parameters}
                    })
                })
                .collect();
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        body
    }

    /// Reads a (non-streamed) response body.
    pub fn parse_response(&self, body: &Value) -> Result<ModelReply, ModelError> {
        let choice = body.get("choices").and_then(|c| c.get(0)).ok_or_else(|| {
            self.error(
                ModelErrorKind::Protocol,
                format!("the response has no choices: {}", snippet(&body.to_string())),
            )
        })?;
        let message = choice.get("message").cloned().unwrap_or(Value::Null);
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut tool_calls = Vec::new();
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                let function = call.get("function").cloned().unwrap_or(Value::Null);
                let name = function
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let arguments = match function.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                tool_calls.push(ModelToolCall { name, arguments });
            }
        }
        Ok(ModelReply {
            text,
            tool_calls,
            usage: body.get("usage").and_then(parse_usage),
            finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_string),
        })
    }

    fn error(&self, kind: ModelErrorKind, message: impl Into<String>) -> ModelError {
        ModelError::new(kind, self.name(), message)
    }

    async fn send(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let mut http = self
            .client
            .post(self.endpoint())
            .timeout(self.timeout)
            .json(&self.request_body(request));
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        for (name, value) in &self.headers {
            http = http.header(name.as_str(), value.as_str());
        }
        let response = http.send().await.map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(Duration::from_secs_f64);
        let text = response.text().await.map_err(|e| self.transport_error(&e))?;
        if !status.is_success() {
            return Err(self.status_error(status, retry_after, &text));
        }
        let body: Value = serde_json::from_str(&text).map_err(|e| {
            self.error(
                ModelErrorKind::Protocol,
                format!("the response is not JSON ({e}): {}", snippet(&text)),
            )
        })?;
        self.parse_response(&body)
    }

    fn transport_error(&self, error: &reqwest::Error) -> ModelError {
        let kind = if error.is_timeout() {
            ModelErrorKind::Timeout
        } else {
            ModelErrorKind::Connect
        };
        self.error(kind, format!("{} ({})", error, self.endpoint()))
    }

    fn status_error(&self, status: StatusCode, retry_after: Option<Duration>, body: &str) -> ModelError {
        let code = status.as_u16();
        let kind = match code {
            429 => ModelErrorKind::RateLimited { retry_after },
            401 | 403 => ModelErrorKind::Auth { status: code },
            500..=599 => ModelErrorKind::Server { status: code },
            _ => ModelErrorKind::BadRequest { status: code },
        };
        let hint = match code {
            401 => " (check the API key)",
            403 => " (the key is not allowed to use this model)",
            404 => " (check the base URL and the model name)",
            _ => "",
        };
        self.error(kind, format!("HTTP {code}{hint}: {}", snippet(body)))
    }
}

fn wire_message(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content, tool_calls, ..
        } => {
            let mut m = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = match &c.arguments {
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        };
                        json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
                    })
                    .collect();
                m["tool_calls"] = Value::Array(calls);
            }
            m
        }
        Message::Tool { call_id, outcome, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": outcome.to_model_text()})
        }
    }
}

fn parse_usage(usage: &Value) -> Option<Usage> {
    let input = usage.get("prompt_tokens").and_then(Value::as_u64)?;
    let output = usage.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: input,
        output_tokens: output,
    })
}

fn snippet(text: &str) -> String {
    let mut s: String = text.chars().take(500).collect();
    if text.chars().count() > 500 {
        s.push('…');
    }
    s
}

impl Model for OpenAiCompatible {
    fn name(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(self.send(request))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use concierge_core::{ToolCall, ToolDef, ToolOutcome};

    use super::*;

    fn request() -> ModelRequest {
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
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: 12,
                output_tokens: 3
            })
        );
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert!(model.parse_response(&json!({"error": "x"})).is_err());
    }
}
