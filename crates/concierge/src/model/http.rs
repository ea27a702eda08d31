//! What the HTTP providers share: connection settings, error mapping,
//! reading JSON bodies and the assembly of streamed tool calls.

use std::time::Duration;

use concierge_core::ModelToolCall;
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::Value;

use super::{ModelError, ModelErrorKind};

/// How to reach a provider.
#[derive(Clone, Debug)]
pub(crate) struct Connection {
    pub client: reqwest::Client,
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub stream: bool,
}

impl Connection {
    pub(crate) fn new(base_url: &str) -> Self {
        Self {
            client: reqwest::Client::new(),
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
            stream: true,
        }
    }

    pub(crate) fn with_headers(&self, mut request: RequestBuilder) -> RequestBuilder {
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request.timeout(self.timeout)
    }
}

/// A transport failure: timeouts and connection errors (both retryable).
pub(crate) fn transport_error(model: &str, endpoint: &str, error: &reqwest::Error) -> ModelError {
    let kind = if error.is_timeout() {
        ModelErrorKind::Timeout
    } else if error.is_body() || error.is_decode() {
        ModelErrorKind::Interrupted
    } else {
        ModelErrorKind::Connect
    };
    ModelError::new(kind, model, format!("{error} ({endpoint})"))
}

/// The server's `Retry-After`, in seconds (the date form is not used by
/// model providers).
pub(crate) fn retry_after(response: &Response) -> Option<Duration> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// A refused request: 429 and 5xx are retryable, 400/401/403 say what is wrong.
pub(crate) fn status_error(model: &str, status: StatusCode, retry_after: Option<Duration>, body: &str) -> ModelError {
    let code = status.as_u16();
    let kind = match code {
        429 => ModelErrorKind::RateLimited { retry_after },
        401 | 403 => ModelErrorKind::Auth { status: code },
        500..=599 => ModelErrorKind::Server { status: code },
        _ => ModelErrorKind::BadRequest { status: code },
    };
    let hint = match code {
        400 => " (the request was refused: not retried)",
        401 => " (check the API key: not retried)",
        403 => " (the key may not use this model: not retried)",
        404 => " (check the base URL and the model name)",
        429 => " (rate limited)",
        _ => "",
    };
    ModelError::new(kind, model, format!("HTTP {code}{hint}: {}", snippet(body)))
}

/// Sends a request and returns the response if it succeeded, the mapped error otherwise.
pub(crate) async fn send(model: &str, endpoint: &str, request: RequestBuilder) -> Result<Response, ModelError> {
    let response = request.send().await.map_err(|e| transport_error(model, endpoint, &e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let after = retry_after(&response);
    let body = response.text().await.unwrap_or_default();
    Err(status_error(model, status, after, &body))
}

/// Reads a whole response body as JSON.
pub(crate) async fn read_json(model: &str, endpoint: &str, response: Response) -> Result<Value, ModelError> {
    let text = response
        .text()
        .await
        .map_err(|e| transport_error(model, endpoint, &e))?;
    serde_json::from_str(&text).map_err(|e| {
        ModelError::new(
            ModelErrorKind::Protocol,
            model,
            format!("the response is not JSON ({e}): {}", snippet(&text)),
        )
    })
}

/// The first 500 characters of a body, for error messages.
pub(crate) fn snippet(text: &str) -> String {
    let mut s: String = text.chars().take(500).collect();
    if text.chars().count() > 500 {
        s.push('…');
    }
    s
}

/// Tool calls assembled from streamed fragments, by position.
#[derive(Debug, Default)]
pub(crate) struct ToolCalls {
    calls: Vec<(String, String)>,
}

impl ToolCalls {
    /// Adds a fragment of call `index`: its name (when given) and more argument text.
    pub(crate) fn push(&mut self, index: usize, name: Option<&str>, arguments: &str) {
        if self.calls.len() <= index {
            self.calls.resize_with(index + 1, Default::default);
        }
        if let Some(call) = self.calls.get_mut(index) {
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                if call.0.is_empty() {
                    call.0 = name.to_string();
                }
            }
            call.1.push_str(arguments);
        }
    }

    /// Whether no fragment arrived.
    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The assembled calls (fragments without a name are dropped).
    pub(crate) fn finish(self) -> Vec<ModelToolCall> {
        self.calls
            .into_iter()
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, arguments)| ModelToolCall { name, arguments })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_assemble_by_index() {
        let mut calls = ToolCalls::default();
        calls.push(0, Some("add"), "{\"a\":");
        calls.push(1, Some("mul"), "{");
        calls.push(0, None, "1}");
        calls.push(1, Some("mul"), "}");
        let done = calls.finish();
        assert_eq!(
            done[0],
            ModelToolCall {
                name: "add".into(),
                arguments: "{\"a\":1}".into()
            }
        );
        assert_eq!(
            done[1],
            ModelToolCall {
                name: "mul".into(),
                arguments: "{}".into()
            }
        );
    }

    #[test]
    fn statuses_map_to_kinds() {
        let e = status_error(
            "m",
            StatusCode::TOO_MANY_REQUESTS,
            Some(Duration::from_secs(2)),
            "slow down",
        );
        assert_eq!(
            e.kind,
            ModelErrorKind::RateLimited {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        assert!(e.is_retryable());
        for (code, retry) in [(400, false), (401, false), (403, false), (500, true), (503, true)] {
            let e = status_error("m", StatusCode::from_u16(code).unwrap(), None, "");
            assert_eq!(e.is_retryable(), retry, "{code}");
        }
        assert!(
            status_error("m", StatusCode::UNAUTHORIZED, None, "")
                .message
                .contains("API key")
        );
    }
}
