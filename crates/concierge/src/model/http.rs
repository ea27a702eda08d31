//! What the HTTP providers share: connection settings and their builder
//! setters, the request size guardrail, sending, error classification,
//! reading JSON bodies and the assembly of streamed tool calls.

use std::error::Error as StdError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use concierge_core::{ModelReply, ModelToolCall};
use eventsource_stream::EventStreamError;
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::Value;

use super::{ModelError, ModelErrorKind, human_bytes, human_duration};

/// How long connecting to a provider may take, by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one attempt (one HTTP request, its answer included) may take, by default.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one model call may take across all its attempts and backoff, by default.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest request body sent to a provider, by default (8 MiB).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;

/// How to reach a provider.
#[derive(Clone, Debug)]
pub(crate) struct Connection {
    client: reqwest::Client,
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// One attempt's timeout.
    pub timeout: Duration,
    connect_timeout: Duration,
    /// The whole call's budget, retries included.
    pub total_timeout: Duration,
    pub max_request_bytes: usize,
    pub stream: bool,
    /// The endpoint as text and parsed, once: reqwest parses a URL given as
    /// text again for every request.
    endpoint: Arc<OnceLock<Option<(String, reqwest::Url)>>>,
}

impl Connection {
    pub(crate) fn new(base_url: &str) -> Self {
        Self {
            client: build_client(DEFAULT_CONNECT_TIMEOUT, true),
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: None,
            headers: Vec::new(),
            timeout: DEFAULT_ATTEMPT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            stream: true,
            endpoint: Arc::default(),
        }
    }

    /// Sets the base URL (without its trailing slashes).
    pub(crate) fn set_base_url(&mut self, url: &str) {
        self.base_url = url.trim_end_matches('/').to_string();
        self.endpoint = Arc::default();
    }

    /// The pooled client.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// A client that keeps no idle connection (for a retry after the pooled
    /// connection died).
    pub(crate) fn fresh_client(&self) -> reqwest::Client {
        build_client(self.connect_timeout, false)
    }

    /// Sets the connect timeout (the client is rebuilt to apply it).
    pub(crate) fn set_connect_timeout(&mut self, timeout: Duration) {
        self.connect_timeout = timeout;
        self.client = build_client(timeout, true);
    }

    /// Serializes a request body, refusing one over the size limit before
    /// anything is sent.
    pub(crate) fn encode(&self, model: &str, body: &impl serde::Serialize) -> Result<Vec<u8>, ModelError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            ModelError::new(
                ModelErrorKind::Protocol,
                model,
                format!("the request cannot be encoded as JSON: {e}"),
            )
        })?;
        if bytes.len() > self.max_request_bytes {
            return Err(ModelError::new(
                ModelErrorKind::RequestTooLarge {
                    bytes: bytes.len(),
                    limit: self.max_request_bytes,
                },
                model,
                format!(
                    "the request is {}, over the {} limit, so it was not sent; shorten the conversation or the tool results, or raise max_request_bytes",
                    human_bytes(bytes.len()),
                    human_bytes(self.max_request_bytes)
                ),
            ));
        }
        Ok(bytes)
    }

    /// A POST of a JSON `body` to `url`, with the extra headers and the attempt timeout.
    pub(crate) fn post(&self, client: &reqwest::Client, url: &str, body: Vec<u8>) -> RequestBuilder {
        let parsed = self
            .endpoint
            .get_or_init(|| reqwest::Url::parse(url).ok().map(|parsed| (url.to_string(), parsed)));
        let request = match parsed {
            Some((text, parsed)) if text == url => client.post(parsed.clone()),
            _ => client.post(url),
        };
        let mut request = request
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request.timeout(self.timeout)
    }

    /// Sends a request and returns the response if it succeeded, the
    /// classified error otherwise.
    pub(crate) async fn send(
        &self,
        model: &str,
        endpoint: &str,
        request: RequestBuilder,
    ) -> Result<Response, ModelError> {
        let response = request.send().await.map_err(|e| self.transport_error(model, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let after = retry_after(&response);
        let body = response.text().await.unwrap_or_default();
        Err(status_error(model, endpoint, status, after, &body))
    }

    /// Reads a whole response body as JSON.
    pub(crate) async fn read_json(&self, model: &str, response: Response) -> Result<Value, ModelError> {
        json_of(model, &self.read_bytes(model, response).await?)
    }

    /// Reads a whole response body.
    pub(crate) async fn read_bytes(
        &self,
        model: &str,
        response: Response,
    ) -> Result<impl std::ops::Deref<Target = [u8]> + use<>, ModelError> {
        response.bytes().await.map_err(|e| self.transport_error(model, &e))
    }

    /// A failure of the transport, named by its cause: a timeout (connect or
    /// answer), a refused connection, an unknown host, TLS, or a connection
    /// or answer that broke off.
    pub(crate) fn transport_error(&self, model: &str, error: &reqwest::Error) -> ModelError {
        let base = &self.base_url;
        let cause = root_cause(error);
        let io = io_kind(error);
        let (kind, message) = if error.is_dns() {
            (
                ModelErrorKind::Dns,
                format!(
                    "cannot resolve host {} ({cause}); check the base URL and the network",
                    host_of(base)
                ),
            )
        } else if error.is_connect() {
            if error.is_timeout() {
                (
                    ModelErrorKind::ConnectTimeout,
                    format!(
                        "cannot connect to {base}: no connection within {}",
                        human_duration(self.connect_timeout)
                    ),
                )
            } else if io == Some(std::io::ErrorKind::ConnectionRefused) {
                (
                    ModelErrorKind::ConnectionRefused,
                    format!("cannot connect to {base}: connection refused; is the server running?"),
                )
            } else if is_tls(error, base) {
                (ModelErrorKind::Tls, format!("TLS with {base} failed: {cause}"))
            } else {
                (ModelErrorKind::Connect, format!("cannot connect to {base}: {cause}"))
            }
        } else if error.is_timeout() {
            (
                ModelErrorKind::Timeout,
                format!("did not answer within {}", human_duration(self.timeout)),
            )
        } else if error.is_body() || error.is_decode() {
            (
                ModelErrorKind::Interrupted,
                format!("the answer from {base} broke off: {cause}"),
            )
        } else {
            (
                ModelErrorKind::Connect,
                format!("the connection to {base} failed: {cause}"),
            )
        };
        ModelError::new(kind, model, message)
    }

    /// A failure while reading a streamed answer.
    pub(crate) fn stream_error(&self, model: &str, error: &EventStreamError<reqwest::Error>) -> ModelError {
        match error {
            EventStreamError::Transport(e) if e.is_timeout() => ModelError::new(
                ModelErrorKind::Timeout,
                model,
                format!("did not finish its answer within {}", human_duration(self.timeout)),
            ),
            EventStreamError::Transport(e) => ModelError::new(
                ModelErrorKind::Interrupted,
                model,
                format!("the answer stream from {} broke off: {}", self.base_url, root_cause(e)),
            ),
            EventStreamError::Utf8(e) => ModelError::new(
                ModelErrorKind::Protocol,
                model,
                format!("the answer stream is not UTF-8: {e}"),
            ),
            EventStreamError::Parser(e) => ModelError::new(
                ModelErrorKind::Protocol,
                model,
                format!("the answer stream is not a server-sent event stream: {e}"),
            ),
        }
    }
}

/// Idle connections kept to one model server: as many as the calls of runs
/// taken over after a restart that go at once (`resume_concurrency`'s
/// default), so a steady load of that many calls reuses its connections; a
/// burst of calls (thousands of runs resumed at once) opens more, which
/// close once they are idle instead of staying open.
const IDLE_CONNECTIONS_PER_SERVER: usize = 128;

fn build_client(connect_timeout: Duration, pool: bool) -> reqwest::Client {
    crate::tls::install_crypto_provider();
    let idle = if pool { IDLE_CONNECTIONS_PER_SERVER } else { 0 };
    let builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .pool_max_idle_per_host(idle);
    // Building fails only when the TLS backend cannot start; the default
    // client then reports the same failure on its first request.
    builder.build().unwrap_or_default()
}

/// A response body parsed as JSON, or the error that says it is not JSON.
pub(crate) fn json_of(model: &str, body: &[u8]) -> Result<Value, ModelError> {
    serde_json::from_slice(body).map_err(|e| {
        ModelError::new(
            ModelErrorKind::Protocol,
            model,
            format!(
                "the answer is not JSON ({e}): {}",
                snippet(&String::from_utf8_lossy(body))
            ),
        )
    })
}

/// The sources of an error, outermost first (the error itself excluded).
fn sources<'a>(error: &'a (dyn StdError + 'static)) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(error.source(), |e: &&'a (dyn StdError + 'static)| (*e).source())
}

/// The innermost cause's text (reqwest's own "error sending request for
/// url (…)" says nothing a person can act on).
fn root_cause(error: &reqwest::Error) -> String {
    let innermost = sources(error).last();
    let text = innermost.map_or_else(|| error.to_string(), ToString::to_string);
    // io errors end with "(os error 111)": noise for a person.
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

fn io_kind(error: &reqwest::Error) -> Option<std::io::ErrorKind> {
    sources(error).find_map(|e| e.downcast_ref::<std::io::Error>().map(std::io::Error::kind))
}

/// Whether a connect failure happened in the TLS handshake (rustls reports
/// its errors as invalid data, or names certificates and handshakes).
fn is_tls(error: &reqwest::Error, base: &str) -> bool {
    if !base.starts_with("https:") {
        return false;
    }
    sources(error).any(|e| {
        let text = e.to_string().to_ascii_lowercase();
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidData)
            || ["tls", "certificate", "handshake", "corrupt message"]
                .iter()
                .any(|word| text.contains(word))
    })
}

/// The host of a URL, for messages.
fn host_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| url.to_string())
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

/// A refused request: 429 and 5xx are retryable, 400/401/403 say what is
/// wrong. The message carries the status and the server's own message.
pub(crate) fn status_error(
    model: &str,
    endpoint: &str,
    status: StatusCode,
    retry_after: Option<Duration>,
    body: &str,
) -> ModelError {
    let code = status.as_u16();
    let kind = match code {
        429 => ModelErrorKind::RateLimited { retry_after },
        401 | 403 => ModelErrorKind::Auth { status: code },
        500..=599 => ModelErrorKind::Server { status: code },
        _ => ModelErrorKind::BadRequest { status: code },
    };
    let hint = match code {
        401 => " (check the API key)".to_string(),
        403 => " (the key may not use this model)".to_string(),
        404 => format!(" (check the base URL and the model name; the request went to {endpoint})"),
        429 => " (rate limited)".to_string(),
        _ => String::new(),
    };
    let reason = status.canonical_reason().map(|r| format!(" {r}")).unwrap_or_default();
    let said = server_message(body);
    let said = if said.is_empty() {
        "no message".to_string()
    } else {
        said
    };
    ModelError::new(
        kind,
        model,
        format!("the server answered HTTP {code}{reason}{hint}: {said}"),
    )
}

/// What the server said in an error body: `error.message` (OpenAI and
/// Anthropic), a bare `error` or `message` string, or the body itself; on
/// one line, trimmed to 300 characters.
pub(crate) fn server_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.to_string());
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    trim_chars(&one_line, 300)
}

/// The first 500 characters of a body, for error messages.
pub(crate) fn snippet(text: &str) -> String {
    trim_chars(text.trim(), 500)
}

fn trim_chars(text: &str, max: usize) -> String {
    let mut s: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        s.push('…');
    }
    s
}

/// A reply with neither text nor tool calls is a failure (retried like an
/// interrupted stream), never a success.
pub(crate) fn non_empty(model: &str, reply: ModelReply) -> Result<ModelReply, ModelError> {
    if reply.text.trim().is_empty() && reply.tool_calls.is_empty() {
        let reason = reply
            .finish_reason
            .as_deref()
            .map(|r| format!(" (finish reason: {r})"))
            .unwrap_or_default();
        return Err(ModelError::new(
            ModelErrorKind::EmptyReply,
            model,
            format!("answered with neither text nor a tool call{reason}"),
        ));
    }
    Ok(reply)
}

/// The builder setters both HTTP providers share, written once: each
/// provider has a `connection: Connection` field and invokes this in its
/// `impl` block with the docs of its base URL and key.
macro_rules! connection_setters {
    (base_url: $base_doc:literal, api_key: $key_doc:literal) => {
        #[doc = $base_doc]
        pub fn base_url(mut self, url: impl Into<String>) -> Self {
            self.connection.set_base_url(&url.into());
            self
        }

        #[doc = $key_doc]
        pub fn api_key(mut self, key: Option<String>) -> Self {
            self.connection.api_key = key.filter(|k| !k.is_empty());
            self
        }

        /// Adds a header to every request.
        pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.connection.headers.push((name.into(), value.into()));
            self
        }

        /// Sets how long one attempt may take, its answer included
        /// (default 120 s).
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.connection.timeout = timeout;
            self
        }

        /// Sets how long connecting may take (default 10 s).
        pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.connection.set_connect_timeout(timeout);
            self
        }

        /// Sets how long one model call may take across all its attempts
        /// and the waits between them (default 300 s); honoured by
        /// [`complete_with_retry`](crate::model::complete_with_retry).
        pub fn total_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.connection.total_timeout = timeout;
            self
        }

        /// Sets the largest request body sent (default 8 MiB); a larger
        /// request fails before it is sent.
        pub fn max_request_bytes(mut self, bytes: usize) -> Self {
            self.connection.max_request_bytes = bytes;
            self
        }

        /// Whether to stream when the caller wants deltas (default true).
        pub fn streaming(mut self, stream: bool) -> Self {
            self.connection.stream = stream;
            self
        }

        /// The connection settings, for configuration code in this crate.
        pub(crate) fn connection_mut(&mut self) -> &mut crate::model::http::Connection {
            &mut self.connection
        }
    };
}
pub(crate) use connection_setters;

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
            "http://x/v1/chat/completions",
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
            let e = status_error("m", "e", StatusCode::from_u16(code).unwrap(), None, "");
            assert_eq!(e.is_retryable(), retry, "{code}");
        }
        assert!(
            status_error("m", "e", StatusCode::UNAUTHORIZED, None, "")
                .message
                .contains("API key")
        );
    }

    #[test]
    fn server_messages_are_read_from_json_and_trimmed() {
        assert_eq!(
            server_message(r#"{"error": {"message": "Incorrect API key", "type": "auth"}}"#),
            "Incorrect API key"
        );
        assert_eq!(server_message("upstream\n   exploded  "), "upstream exploded");
        assert_eq!(server_message(&"x".repeat(400)).chars().count(), 301);
        let e = status_error(
            "m",
            "e",
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            r#"{"error": "boom"}"#,
        );
        assert_eq!(e.message, "the server answered HTTP 500 Internal Server Error: boom");
    }
}
