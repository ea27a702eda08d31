//! One pooled client per MCP server: started lazily, restarted with backoff
//! after a crash or a hang, shut down cleanly.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use concierge_core::{IdempotencyKey, ToolError, ToolErrorKind};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock, Implementation, JsonObject,
    ProgressNotificationParam, RequestMetaObject, ResourceContents, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};

use super::McpServerConfig;

/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 20;
/// Longest backoff between restart attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Base64 payloads (images, audio) larger than this are described, not included.
const MAX_INLINE_BYTES: usize = 16 * 1024;

/// Receives the server's notifications.
#[derive(Clone)]
struct Handler {
    stale: Arc<AtomicBool>,
    progress: Arc<tokio::sync::watch::Sender<u64>>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::Relaxed);
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        tracing::debug!(progress = params.progress, total = ?params.total, "MCP progress");
        self.progress.send_modify(|n| *n += 1);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("concierge", env!("CARGO_PKG_VERSION")),
        )
    }
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    pid: Option<u32>,
}

#[derive(Default)]
struct State {
    connection: Option<Arc<Connection>>,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
    tools: Option<Vec<Tool>>,
}

/// Why an MCP server could not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MCP server {server}: {message}")]
pub struct McpError {
    /// The server's name.
    pub server: String,
    /// What went wrong, with the tail of its stderr when it has one.
    pub message: String,
}

/// A client for one MCP server.
pub struct McpClient {
    name: String,
    config: McpServerConfig,
    state: tokio::sync::Mutex<State>,
    stale: Arc<AtomicBool>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    progress: Arc<tokio::sync::watch::Sender<u64>>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("server", &self.config.describe())
            .finish()
    }
}

impl McpClient {
    /// A client for `config` (nothing starts until it is used).
    pub fn new(name: impl Into<String>, config: McpServerConfig) -> Self {
        Self {
            name: name.into(),
            config,
            state: tokio::sync::Mutex::default(),
            stale: Arc::default(),
            stderr: Arc::default(),
            progress: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }

    /// Counts the progress notifications the server sent (a long call is
    /// under way when it moves).
    pub fn progress(&self) -> tokio::sync::watch::Receiver<u64> {
        self.progress.subscribe()
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The process id of a running stdio server.
    pub async fn pid(&self) -> Option<u32> {
        self.state.lock().await.connection.as_ref().and_then(|c| c.pid)
    }

    /// Whether the tool list must be read again (never read, or the server
    /// said it changed).
    pub async fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed) || self.state.lock().await.tools.is_none()
    }

    fn error(&self, message: impl Into<String>) -> McpError {
        McpError {
            server: self.name.clone(),
            message: message.into(),
        }
    }

    fn stderr_tail(&self) -> String {
        let lines = self
            .stderr
            .lock()
            .map(|l| l.iter().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        if lines.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends with: {}", lines.join(" | "))
        }
    }

    /// The live connection, starting the server if needed (not during backoff).
    async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        let mut state = self.state.lock().await;
        if let Some(connection) = &state.connection {
            if !connection.service.is_transport_closed() {
                return Ok(connection.clone());
            }
            state.connection = None;
            state.tools = None;
        }
        if let Some(at) = state.retry_at {
            let now = Instant::now();
            if now < at {
                return Err(self.error(format!(
                    "is restarting (next attempt in {:.1} s); last error: {}",
                    (at - now).as_secs_f32(),
                    state.last_error.clone().unwrap_or_default()
                )));
            }
        }
        match self.start().await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                state.connection = Some(connection.clone());
                state.failures = 0;
                state.retry_at = None;
                state.last_error = None;
                self.stale.store(true, Ordering::Relaxed);
                Ok(connection)
            }
            Err(error) => {
                state.failures += 1;
                let backoff = Duration::from_millis(500)
                    .saturating_mul(1 << state.failures.saturating_sub(1).min(10))
                    .min(MAX_BACKOFF);
                state.retry_at = Some(Instant::now() + backoff);
                state.last_error = Some(error.message.clone());
                Err(error)
            }
        }
    }

    async fn start(&self) -> Result<Connection, McpError> {
        let handler = Handler {
            stale: self.stale.clone(),
            progress: self.progress.clone(),
        };
        let timeout = self.config.call_timeout().max(Duration::from_secs(10));
        match (&self.config.command, &self.config.url) {
            (Some(command), _) => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(&self.config.args).envs(&self.config.env).kill_on_drop(true);
                if let Some(dir) = &self.config.cwd {
                    cmd.current_dir(dir);
                }
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| self.error(format!("cannot start `{}`: {e}", self.config.describe())))?;
                let pid = transport.id();
                if let Ok(mut lines) = self.stderr.lock() {
                    lines.clear();
                }
                let reader = stderr.map(|stderr| {
                    let sink = self.stderr.clone();
                    let server = self.name.clone();
                    tokio::spawn(async move {
                        use tokio::io::AsyncBufReadExt;
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::debug!(server, "stderr: {line}");
                            if let Ok(mut kept) = sink.lock() {
                                if kept.len() == STDERR_LINES {
                                    kept.pop_front();
                                }
                                kept.push_back(line);
                            }
                        }
                    })
                });
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => Ok(Connection { service, pid }),
                    failed => {
                        let reason = match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("no answer to initialize within {} s", timeout.as_secs()),
                        };
                        // The process is gone or going: read what it said.
                        if let Some(reader) = reader {
                            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
                        }
                        Err(self.error(format!(
                            "`{}` did not start: {reason}{}",
                            self.config.describe(),
                            self.stderr_tail()
                        )))
                    }
                }
            }
            (None, Some(url)) => {
                let mut headers = std::collections::HashMap::new();
                for (name, value) in &self.config.headers {
                    let name = http::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|e| self.error(format!("header name {name:?}: {e}")))?;
                    let value = http::HeaderValue::from_str(value)
                        .map_err(|e| self.error(format!("header value for {name}: {e}")))?;
                    headers.insert(name, value);
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
                // rmcp retries a broken event stream forever by default, which
                // leaves a call in flight hanging when the server dies: give up
                // after two attempts, so the call fails and the next restarts.
                let mut backoff = ExponentialBackoff::default();
                backoff.max_times = Some(2);
                config.retry_config = Arc::new(backoff);
                let transport = StreamableHttpClientTransport::from_config(config);
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => Ok(Connection { service, pid: None }),
                    Ok(Err(e)) => Err(self.error(format!("cannot connect to {url}: {e}"))),
                    Err(_) => Err(self.error(format!(
                        "{url} did not answer initialize within {} s",
                        timeout.as_secs()
                    ))),
                }
            }
            (None, None) => Err(self.error("needs a command (stdio) or a url (streamable HTTP)")),
        }
    }

    /// Drops a broken connection (killing a stdio server) so the next use restarts it.
    async fn discard(&self, broken: &Arc<Connection>) {
        let mut state = self.state.lock().await;
        if state.connection.as_ref().is_some_and(|c| Arc::ptr_eq(c, broken)) {
            state.connection = None;
            state.tools = None;
        }
        drop(state);
        // A hung server does not answer a polite close: stop it. (Other
        // calls may still hold the connection, so dropping it is not enough.)
        #[cfg(unix)]
        if let Some(pid) = broken.pid.and_then(|pid| i32::try_from(pid).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// The server's tools (read again when stale).
    pub async fn tools(&self) -> Result<Vec<Tool>, McpError> {
        if !self.is_stale().await {
            if let Some(tools) = self.state.lock().await.tools.clone() {
                return Ok(tools);
            }
        }
        let connection = self.connection().await?;
        self.stale.store(false, Ordering::Relaxed);
        let listed = tokio::time::timeout(self.config.call_timeout(), connection.service.list_all_tools()).await;
        match listed {
            Ok(Ok(tools)) => {
                self.state.lock().await.tools = Some(tools.clone());
                Ok(tools)
            }
            Ok(Err(e)) => {
                self.discard(&connection).await;
                Err(self.error(format!("tools/list failed: {e}{}", self.stderr_tail())))
            }
            Err(_) => {
                self.discard(&connection).await;
                Err(self.error("tools/list did not answer in time; the server is restarted on next use"))
            }
        }
    }

    /// Calls a tool; the idempotency key travels in `_meta`.
    pub async fn call(&self, tool: &str, arguments: JsonObject, key: &IdempotencyKey) -> Result<Value, ToolError> {
        let connection = self
            .connection()
            .await
            .map_err(|e| ToolError::new(ToolErrorKind::Unavailable, e.to_string()))?;
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let mut meta = RequestMetaObject::new();
        meta.insert("idempotency_key".to_string(), json!(key.as_str()));
        params.meta = Some(meta);
        let timeout = self.config.call_timeout();
        match tokio::time::timeout(timeout, connection.service.call_tool(params)).await {
            Ok(Ok(result)) => outcome(result),
            Ok(Err(ServiceError::McpError(error))) => {
                let kind = match error.code.0 {
                    -32602 => ToolErrorKind::InvalidArguments,
                    -32601 => ToolErrorKind::UnknownTool,
                    _ => ToolErrorKind::Failed,
                };
                Err(ToolError::new(
                    kind,
                    format!("{} (MCP error {})", error.message, error.code.0),
                ))
            }
            Ok(Err(error)) => {
                self.discard(&connection).await;
                Err(ToolError::new(
                    ToolErrorKind::Unavailable,
                    format!(
                        "the MCP server {} stopped ({error}); it is restarted on the next call{}",
                        self.name,
                        self.stderr_tail()
                    ),
                ))
            }
            Err(_) => {
                self.discard(&connection).await;
                Err(ToolError::new(
                    ToolErrorKind::Timeout,
                    format!(
                        "the MCP server {} did not answer within {} s; it is restarted on the next call",
                        self.name,
                        timeout.as_secs()
                    ),
                ))
            }
        }
    }

    /// Closes the connection (a stdio server is asked to exit, then stopped).
    pub async fn shutdown(&self) {
        let connection = self.state.lock().await.connection.take();
        if let Some(connection) = connection {
            match Arc::try_unwrap(connection) {
                Ok(connection) => {
                    let _ = tokio::time::timeout(Duration::from_secs(5), connection.service.cancel()).await;
                }
                Err(shared) => self.discard(&shared).await,
            }
        }
    }
}

/// A tool result as the model sees it: structured content if the server
/// gave some, else the text (one item) or the list of items; `isError`
/// results become tool errors.
pub(crate) fn outcome(result: CallToolResult) -> Result<Value, ToolError> {
    let items: Vec<Value> = result.content.iter().map(content).collect();
    if result.is_error == Some(true) {
        // Another concierge (or any server that answers in our shape) sends
        // `{"error": ToolError}`: keep its kind and fields for the model.
        if let Some(error) = structured_error(&result) {
            return Err(error);
        }
        let text: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        let message = if text.is_empty() {
            Value::Array(items).to_string()
        } else {
            text.join("\n")
        };
        return Err(ToolError::failed(message));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    Ok(match items.len() {
        0 => Value::Null,
        1 => items.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(items),
    })
}

fn structured_error(result: &CallToolResult) -> Option<ToolError> {
    #[derive(serde::Deserialize)]
    struct Body {
        error: ToolError,
    }
    let parsed = match (&result.structured_content, result.content.as_slice()) {
        (Some(value), _) => serde::Deserialize::deserialize(value).ok(),
        (None, [only]) => only.as_text().and_then(|t| serde_json::from_str::<Body>(&t.text).ok()),
        _ => None,
    };
    parsed.map(|body| body.error)
}

fn inline(kind: &str, mime_type: &str, data: &str) -> Value {
    if data.len() <= MAX_INLINE_BYTES {
        json!({"type": kind, "mime_type": mime_type, "data": data})
    } else {
        json!({"type": kind, "mime_type": mime_type, "base64_bytes": data.len(), "note": "too large to include"})
    }
}

fn content(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text(text) => Value::String(text.text.clone()),
        ContentBlock::Image(image) => inline("image", &image.mime_type, &image.data),
        ContentBlock::Audio(audio) => inline("audio", &audio.mime_type, &audio.data),
        ContentBlock::Resource(resource) => match &resource.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                json!({"type": "resource", "uri": uri, "text": text})
            }
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => {
                let mut value = inline(
                    "resource",
                    mime_type.as_deref().unwrap_or("application/octet-stream"),
                    blob,
                );
                value["uri"] = json!(uri);
                value
            }
            _ => json!({"type": "resource"}),
        },
        ContentBlock::ResourceLink(link) => json!({"type": "resource_link", "uri": link.uri, "name": link.name}),
        _ => json!({"type": "unknown"}),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_structured_error_keeps_its_kind_and_fields() {
        let error = ToolError::invalid_arguments(
            "bad",
            vec![concierge_core::FieldError {
                field: "a".into(),
                problem: "is required".into(),
            }],
        );
        let result = CallToolResult::error(vec![ContentBlock::text(json!({"error": error}).to_string())]);
        assert_eq!(outcome(result).unwrap_err(), error);
    }

    #[test]
    fn a_plain_error_is_a_failure_with_its_text() {
        let result = CallToolResult::error(vec![ContentBlock::text("disk full")]);
        let error = outcome(result).unwrap_err();
        assert_eq!(error.kind, ToolErrorKind::Failed);
        assert_eq!(error.message, "disk full");
        let result = CallToolResult::error(vec![ContentBlock::text(r#"{"error": "not ours"}"#)]);
        assert_eq!(outcome(result).unwrap_err().kind, ToolErrorKind::Failed);
    }

    #[test]
    fn structured_content_wins_and_single_items_unwrap() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("42")]);
        assert_eq!(outcome(result.clone()).unwrap(), json!("42"));
        result.structured_content = Some(json!({"value": 42}));
        assert_eq!(outcome(result).unwrap(), json!({"value": 42}));
        let result = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(outcome(result).unwrap(), json!(["a", "b"]));
    }
}
