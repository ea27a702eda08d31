//! The body of `POST /v1/chat/completions` and what concierge makes of it:
//! the new user message, the client's earlier turns, and how to answer.
//!
//! Sampling parameters (`temperature`, `top_p`, `max_tokens`, ...) are
//! accepted and ignored: the agents' own configuration decides how their
//! model is called. Fields this endpoint does not know are ignored too, as
//! OpenAI clients send more than it needs.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::error::OpenAiError;

/// What an empty `model` is told.
pub const EMPTY_MODEL: &str = "model is empty: name an agent (GET /v1/models lists them) or use \"concierge\"";

/// `POST /v1/chat/completions`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatCompletionRequest {
    /// An agent's id, or `concierge` for the default agent (the hub, which
    /// routes each message as `concierge run` without `--agent` does).
    #[schema(min_length = 1, pattern = "[^\\s\\u0085\\u001c-\\u001f\\ufeff]")]
    pub model: String,
    /// The conversation. Only the last message is new (it must be the
    /// user's): the session named by `X-Concierge-Session` holds the rest.
    /// For a new session, earlier user and assistant messages become its
    /// history; system and developer messages are ignored (the agents have
    /// their own instructions).
    #[schema(min_items = 1)]
    pub messages: Vec<ChatMessage>,
    /// Stream the answer as Server-Sent Events of `chat.completion.chunk` objects.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// How many answers: only 1 is supported.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 1, maximum = 1)]
    pub n: Option<u32>,
    /// Client-side tools: not supported (concierge runs its agents' own tools).
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>, max_items = 0)]
    pub tools: Option<Vec<Value>>,
    /// Log probabilities: not supported (only `false`).
    #[serde(default)]
    pub logprobs: Option<bool>,
    /// Accepted and ignored.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Accepted and ignored.
    #[serde(default)]
    pub top_p: Option<f64>,
    /// Accepted and ignored.
    #[serde(default, deserialize_with = "whole_number")]
    pub max_tokens: Option<u64>,
    /// Accepted and ignored.
    #[serde(default, deserialize_with = "whole_number")]
    pub max_completion_tokens: Option<u64>,
    /// Accepted and ignored.
    #[serde(default)]
    pub presence_penalty: Option<f64>,
    /// Accepted and ignored.
    #[serde(default)]
    pub frequency_penalty: Option<f64>,
    /// Accepted and ignored.
    #[serde(default, deserialize_with = "whole_number")]
    pub seed: Option<i64>,
    /// Accepted and ignored (a string or a list of strings).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub stop: Option<Value>,
    /// Accepted and ignored: the session is named by the `X-Concierge-Session` header.
    #[serde(default)]
    pub user: Option<String>,
}

/// An optional whole number, written `3` or `3.0` (JSON Schema's integer).
fn whole_number<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i128>,
{
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let whole = if let Some(n) = number.as_i64() {
        Some(i128::from(n))
    } else if let Some(n) = number.as_u64() {
        Some(i128::from(n))
    } else {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e18)
            .map(|f| f as i128)
    };
    whole
        .and_then(|n| T::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("expected a whole number in range, found {number}")))
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct StreamOptions {
    /// Send a last chunk with the run's token usage (and no choices) before `[DONE]`.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// One message of `messages`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatMessage {
    /// Who speaks.
    pub role: Role,
    /// The text: a string, or a list of `{"type": "text", "text": ...}` parts.
    #[serde(default)]
    #[schema(value_type = Option<MessageContent>)]
    pub content: Option<Value>,
    /// The speaker's name (ignored).
    #[serde(default)]
    pub name: Option<String>,
}

/// Who speaks a message.
#[derive(Clone, Copy, Debug, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions (ignored: the agents have their own).
    System,
    /// Instructions (ignored, as `system`).
    Developer,
    /// The person.
    User,
    /// The assistant.
    Assistant,
    /// A client-side tool's result (ignored: concierge runs its own tools).
    Tool,
    /// A client-side function's result (ignored, as `tool`).
    Function,
}

/// A message's content, for the schema: a string or text parts.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Text parts, joined.
    Parts(Vec<ContentPart>),
}

/// One part of a message's content; only text parts are supported.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ContentPart {
    /// `text`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The text.
    pub text: String,
}

/// What a request asks for, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The model as named.
    pub model: String,
    /// The new user message.
    pub text: String,
    /// The client's earlier user and assistant messages, oldest first.
    pub earlier: Vec<(Role, String)>,
    /// Whether to stream.
    pub stream: bool,
    /// Whether a streamed answer ends with a usage chunk.
    pub include_usage: bool,
}

impl ChatCompletionRequest {
    /// Checks the request: the error names the field at fault.
    pub fn into_turn(self) -> Result<Turn, OpenAiError> {
        if concierge::trim_blank(&self.model).is_empty() {
            return Err(OpenAiError::invalid("model", EMPTY_MODEL));
        }
        if let Some(n) = self.n
            && n != 1
        {
            return Err(OpenAiError::invalid(
                "n",
                format!("n is {n}, but only one answer per request is supported: leave n out or set it to 1"),
            ));
        }
        if self.tools.as_ref().is_some_and(|tools| !tools.is_empty()) {
            return Err(OpenAiError::invalid(
                "tools",
                "client-side tools are not supported: concierge's agents run their own tools; leave tools out",
            ));
        }
        if self.logprobs == Some(true) {
            return Err(OpenAiError::invalid(
                "logprobs",
                "log probabilities are not supported: leave logprobs out or set it to false",
            ));
        }
        let Some((last, earlier)) = self.messages.split_last() else {
            return Err(OpenAiError::invalid(
                "messages",
                "messages is empty: send at least the user's message",
            ));
        };
        let at = self.messages.len() - 1;
        if last.role != Role::User {
            return Err(OpenAiError::invalid(
                "messages",
                "the last message must be the user's (role \"user\"): it is the new message of the conversation",
            ));
        }
        let text = text_of(last, at)?.unwrap_or_default();
        if concierge::trim_blank(&text).is_empty() {
            return Err(OpenAiError::invalid(
                format!("messages[{at}].content"),
                "the user's message is empty; say something",
            ));
        }
        let mut turns = Vec::new();
        for (i, message) in earlier.iter().enumerate() {
            let content = text_of(message, i)?;
            if matches!(message.role, Role::User | Role::Assistant)
                && let Some(content) = content.filter(|c| !c.trim().is_empty())
            {
                turns.push((message.role, content));
            }
        }
        Ok(Turn {
            model: self.model.trim().to_string(),
            text,
            earlier: turns,
            stream: self.stream.unwrap_or(false),
            include_usage: self.stream_options.and_then(|o| o.include_usage).unwrap_or(false),
        })
    }
}

/// The text of message `i`: its string, or its text parts joined; `None`
/// when it has none. Anything else names the field.
fn text_of(message: &ChatMessage, i: usize) -> Result<Option<String>, OpenAiError> {
    let field = format!("messages[{i}].content");
    match &message.content {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (j, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str);
                match (kind, part.get("text").and_then(Value::as_str)) {
                    (Some("text"), Some(text)) => texts.push(text.to_string()),
                    (Some("text"), None) => {
                        return Err(OpenAiError::invalid(
                            format!("{field}[{j}].text"),
                            "a text part needs its text as a string",
                        ));
                    }
                    (Some(other), _) => {
                        return Err(OpenAiError::invalid(
                            format!("{field}[{j}].type"),
                            format!("content parts of type {other:?} are not supported: send text"),
                        ));
                    }
                    (None, _) => {
                        return Err(OpenAiError::invalid(
                            format!("{field}[{j}].type"),
                            "each content part needs a type; only \"text\" parts are supported",
                        ));
                    }
                }
            }
            Ok(Some(texts.join("\n")))
        }
        Some(_) => Err(OpenAiError::invalid(
            field,
            "content must be a string or a list of text parts",
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn turn(body: Value) -> Result<Turn, OpenAiError> {
        serde_json::from_value::<ChatCompletionRequest>(body)
            .unwrap()
            .into_turn()
    }

    #[test]
    fn the_last_user_message_is_the_new_one_and_earlier_turns_are_kept() {
        let t = turn(json!({
            "model": "calculator",
            "messages": [
                {"role": "system", "content": "be nice"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                {"role": "user", "content": [{"type": "text", "text": "calculate"}, {"type": "text", "text": "2 + 2"}]}
            ],
            "temperature": 0.2,
            "stream": true,
            "stream_options": {"include_usage": true}
        }))
        .unwrap();
        assert_eq!(t.text, "calculate\n2 + 2");
        assert_eq!(
            t.earlier,
            vec![(Role::User, "hi".to_string()), (Role::Assistant, "hello".to_string())]
        );
        assert!(t.stream && t.include_usage);
        let whole = json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 5.0, "seed": -3, "n": 1.0});
        let request: ChatCompletionRequest = serde_json::from_value(whole).unwrap();
        assert_eq!(
            (request.max_tokens, request.seed, request.n),
            (Some(5), Some(-3), Some(1))
        );
        for bad in [json!(1.5), json!(-1), json!("5")] {
            let body = json!({"model": "m", "messages": [], "max_tokens": bad});
            assert!(serde_json::from_value::<ChatCompletionRequest>(body).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_unsupported_or_malformed_part_names_its_param() {
        let param = |body: Value| turn(body).unwrap_err().body.error.param.unwrap();
        assert_eq!(param(json!({"model": "m", "messages": []})), "messages");
        assert_eq!(
            param(json!({"model": "m", "messages": [{"role": "assistant", "content": "x"}]})),
            "messages"
        );
        assert_eq!(
            param(json!({"model": "m", "messages": [{"role": "user", "content": "  "}]})),
            "messages[0].content"
        );
        assert_eq!(
            param(json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})),
            "messages[0].content[0].type"
        );
        assert_eq!(
            param(json!({"model": "m", "messages": [{"role": "user", "content": 5}]})),
            "messages[0].content"
        );
        assert_eq!(
            param(json!({"model": "m", "n": 2, "messages": [{"role": "user", "content": "x"}]})),
            "n"
        );
        assert_eq!(
            param(json!({"model": " ", "messages": [{"role": "user", "content": "x"}]})),
            "model"
        );
    }
}
