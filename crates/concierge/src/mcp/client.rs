//! One pooled client per MCP server: started lazily, restarted with backoff
//! after a crash or a hang, shut down cleanly.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use concierge_core::{IdempotencyKey, ToolError, ToolErrorKind};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientNotification,
    ClientRequest, JsonObject, ProgressToken, ProtocolVersion, RequestId, RequestMetaObject, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};

use super::McpServerConfig;
use super::changes::McpChange;
use super::elicitation::{self, LiveCalls};
use super::framing;
pub use super::handler::McpProgress;
use super::handler::{Calls, Handler};
use super::http::GuardedHttp;
use super::result::outcome;
use super::sampling::Sampling;
use crate::error::McpError;

/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 20;
/// Longest backoff between restart attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// However much progress a call reports, it ends after this many times its
/// server's `timeout_secs`.
pub const MAX_CALL_TIMEOUTS: u32 = 10;

/// Sends `notifications/cancelled` for a request whose caller stopped
/// waiting (its future was dropped) before the answer came.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    token: ProgressToken,
    calls: Calls,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            if let Ok(mut calls) = self.calls.lock() {
                calls.remove(&self.token);
            }
            return;
        };
        // The call's last progress notifications may be handled after its
        // answer: keep naming its tool for a moment before forgetting it.
        let (calls, token) = (self.calls.clone(), self.token.clone());
        handle.spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            if let Ok(mut calls) = calls.lock() {
                calls.remove(&token);
            }
        });
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        handle.spawn(async move {
            let notification = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("the caller stopped waiting".into()),
            ));
            let _ = peer
                .send_notification(ClientNotification::CancelledNotification(notification))
                .await;
        });
    }
}

/// The protocol versions concierge speaks (all that rmcp knows).
pub fn supported_protocol_versions() -> Vec<String> {
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .map(|v| v.as_str().to_string())
        .collect()
}

/// The resources a client subscribed to (a subscription lasts as long as
/// the server's session, so they are made again on a new one).
#[derive(Clone, Default)]
struct Subscriptions(Arc<Mutex<std::collections::BTreeSet<String>>>);

impl Subscriptions {
    fn remember(&self, uri: &str, subscribed: bool) {
        if let Ok(mut set) = self.0.lock() {
            if subscribed {
                set.insert(uri.to_string());
            } else {
                set.remove(uri);
            }
        }
    }

    /// Subscribes `peer`'s session to every remembered resource; one the
    /// server refuses is logged and forgotten.
    async fn make_again(&self, server: &str, peer: &Peer<RoleClient>, timeout: Duration) {
        let uris: Vec<String> = self
            .0
            .lock()
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        for uri in uris {
            #[allow(deprecated)]
            let asked = peer.subscribe(rmcp::model::SubscribeRequestParams::new(uri.as_str()));
            match tokio::time::timeout(timeout, asked).await {
                Ok(Ok(())) => tracing::debug!(server, %uri, "subscribed again on a new session"),
                Ok(Err(error)) => {
                    tracing::warn!(server, %uri, %error, "the server refused the subscription on its new session");
                    self.remember(&uri, false);
                }
                Err(_) => tracing::warn!(server, %uri, "no answer to subscribing again on a new session"),
            }
        }
    }

    /// Makes the subscriptions again each time the HTTP client behind
    /// `peer` starts a new session (the server forgot the old one and rmcp
    /// initialized again), until the client is gone.
    fn follow_renewals(
        &self,
        server: &str,
        peer: Peer<RoleClient>,
        mut renewed: mpsc::UnboundedReceiver<()>,
        timeout: Duration,
    ) {
        let (subscriptions, server) = (self.clone(), server.to_string());
        tokio::spawn(async move {
            while renewed.recv().await.is_some() {
                subscriptions.make_again(&server, &peer, timeout).await;
            }
        });
    }
}

pub(super) struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// A stdio server's process (killed when the connection is dropped).
    child: Option<tokio::process::Child>,
    pid: Option<u32>,
}

impl Connection {
    /// The session's peer, to send requests on.
    pub(super) fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// What the server declared it offers.
    pub(super) fn capabilities(&self) -> rmcp::model::ServerCapabilities {
        self.service
            .peer_info()
            .map(|info| info.capabilities.clone())
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct State {
    connection: Option<Arc<Connection>>,
    /// Whether this process tried to start the server yet.
    started: bool,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
    tools: Option<Vec<Tool>>,
}

/// How a client's connection stands (see [`McpClient::probe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Another task holds the client (the server may be starting).
    Busy,
    /// No connection; `started` if this process started (or tried to start) it before.
    Down { started: bool },
    /// Connected; `closed` if the server has gone since (crashed or exited).
    Up { closed: bool },
}

/// A client for one MCP server.
pub struct McpClient {
    name: String,
    config: McpServerConfig,
    state: tokio::sync::Mutex<State>,
    stale: Arc<AtomicBool>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    progress: tokio::sync::broadcast::Sender<McpProgress>,
    calls: Calls,
    live: LiveCalls,
    changes: tokio::sync::broadcast::Sender<McpChange>,
    /// The resources subscribed to: made again on every new connection
    /// and every new HTTP session.
    subscribed: Subscriptions,
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
            progress: tokio::sync::broadcast::channel(64).0,
            calls: Calls::default(),
            live: LiveCalls::default(),
            changes: tokio::sync::broadcast::channel(64).0,
            subscribed: Subscriptions::default(),
        }
    }

    /// Remembers (or forgets) a subscription to `uri`, to make it again
    /// after the server restarts.
    pub(super) fn remember_subscription(&self, uri: &str, subscribed: bool) {
        self.subscribed.remember(uri, subscribed);
    }

    /// Subscribes the new `connection` to the resources subscribed to
    /// before the server restarted (a subscription lasts as long as its
    /// connection).
    async fn subscribe_again(&self, connection: &Connection) {
        self.subscribed
            .make_again(&self.name, &connection.peer(), self.config.call_timeout())
            .await;
    }

    /// What the server says changed (its resources, a subscribed resource,
    /// its prompts), from now on.
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<McpChange> {
        self.changes.subscribe()
    }

    /// The progress the server reports on calls under way, from now on
    /// (also logged at info level).
    pub fn progress(&self) -> tokio::sync::broadcast::Receiver<McpProgress> {
        self.progress.subscribe()
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The configuration the server was started from.
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

    /// How the connection stands, without waiting (`Busy` while another
    /// task holds the client, e.g. while the server starts).
    pub(crate) fn probe(&self) -> Probe {
        let Ok(state) = self.state.try_lock() else {
            return Probe::Busy;
        };
        match &state.connection {
            Some(connection) => Probe::Up {
                closed: connection.service.is_transport_closed(),
            },
            None => Probe::Down { started: state.started },
        }
    }

    /// How long until the next start may be attempted, while restarts back off.
    pub(crate) fn retry_in(&self) -> Option<Duration> {
        let state = self.state.try_lock().ok()?;
        let at = state.retry_at?;
        at.checked_duration_since(Instant::now())
    }

    /// Whether the server said its tools changed (or was started again)
    /// since they were last listed.
    pub(crate) fn list_changed(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    /// Starts the server unless it runs (not during backoff).
    pub(crate) async fn connect(&self) -> Result<(), McpError> {
        self.connection().await.map(|_| ())
    }

    pub(super) fn error(&self, message: impl Into<String>) -> McpError {
        McpError {
            server: self.name.clone(),
            message: message.into(),
        }
    }

    pub(super) fn stderr_tail(&self) -> String {
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
    /// A call that finds the server between restart attempts waits for the
    /// next one when it comes within `limit` (the call's timeout): the
    /// server may be back, and failing at once would refuse a call it could
    /// answer. Background restarts keep their backoff; a call makes no more
    /// attempts than they would.
    async fn wait_for_restart(&self, limit: Duration) {
        let retry_at = self.state.lock().await.retry_at;
        if let Some(at) = retry_at {
            let now = Instant::now();
            if at > now && at - now <= limit {
                tokio::time::sleep_until(at.into()).await;
            }
        }
    }

    pub(super) async fn connection(&self) -> Result<Arc<Connection>, McpError> {
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
        state.started = true;
        match self.start().await {
            Ok(connection) => {
                self.subscribe_again(&connection).await;
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
            server: self.name.clone(),
            stale: self.stale.clone(),
            progress: self.progress.clone(),
            calls: self.calls.clone(),
            live: self.live.clone(),
            sampling: Sampling {
                policy: self.config.sampling,
                model: self.config.sampling_model.clone(),
                max_tokens: self.config.sampling_max_tokens,
            },
            changes: self.changes.clone(),
        };
        let timeout = self.config.call_timeout().max(Duration::from_secs(10));
        let connection = match (&self.config.command, &self.config.url) {
            (Some(command), _) => {
                let program = self.config.program().unwrap_or_else(|| command.into());
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(&self.config.args)
                    .envs(&self.config.env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true);
                if let Some(dir) = &self.config.cwd {
                    cmd.current_dir(dir);
                }
                let mut child = cmd.spawn().map_err(|e| {
                    let hint = if e.kind() == std::io::ErrorKind::NotFound && !command.contains('/') {
                        format!(
                            " ({command} is neither beside this program nor on PATH: build or install it, \
                             or give its path as command)"
                        )
                    } else {
                        String::new()
                    };
                    self.error(format!("cannot start `{}`: {e}{hint}", self.config.describe()))
                })?;
                let pid = child.id();
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(self.error("its standard input and output could not be connected"));
                };
                if let Ok(mut lines) = self.stderr.lock() {
                    lines.clear();
                }
                let reader = child.stderr.take().map(|stderr| {
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
                // Its output reaches rmcp through the size guard.
                let (output, guarded) = tokio::io::duplex(64 * 1024);
                tokio::spawn(framing::forward(
                    self.name.clone(),
                    stdout,
                    guarded,
                    self.config.message_limit(),
                ));
                match tokio::time::timeout(timeout, handler.serve((output, stdin))).await {
                    Ok(Ok(service)) => Connection {
                        service,
                        child: Some(child),
                        pid,
                    },
                    failed => {
                        let reason = match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("no answer to initialize within {} s", timeout.as_secs()),
                        };
                        let _ = child.start_kill();
                        // The process is gone or going: read what it said.
                        if let Some(reader) = reader {
                            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
                        }
                        return Err(self.error(format!(
                            "`{}` did not start: {reason}{}",
                            self.config.describe(),
                            self.stderr_tail()
                        )));
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
                // Its answers reach rmcp through the size guard.
                let limit = self.config.message_limit();
                config.max_sse_event_size = limit;
                let (renewals, renewed) = mpsc::unbounded_channel();
                let client = GuardedHttp::new(&self.name, limit, renewals)
                    .map_err(|e| self.error(format!("cannot make an HTTP client for {url}: {e}")))?;
                #[cfg(feature = "mcp-oauth")]
                let client = match &self.config.oauth {
                    Some(oauth) => {
                        // The token first: a refusal is said as such, not
                        // as a failed initialize.
                        let token = Arc::new(super::oauth::OAuthToken::new(&self.name, url, oauth.clone()));
                        token
                            .token()
                            .await
                            .map_err(|e| self.error(format!("could not get an OAuth access token for {url}: {e}")))?;
                        client.oauth(token)
                    }
                    None => client,
                };
                #[cfg(not(feature = "mcp-oauth"))]
                if self.config.oauth.is_some() {
                    return Err(self.error(
                        "uses oauth, which needs concierge built with the mcp-oauth feature (the CLI has it by default)",
                    ));
                }
                let transport = StreamableHttpClientTransport::with_client(client, config);
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => {
                        let peer = service.peer().clone();
                        self.subscribed
                            .follow_renewals(&self.name, peer, renewed, self.config.call_timeout());
                        Connection {
                            service,
                            child: None,
                            pid: None,
                        }
                    }
                    Ok(Err(e)) => return Err(self.error(format!("cannot connect to {url}: {e}"))),
                    Err(_) => {
                        return Err(self.error(format!(
                            "{url} did not answer initialize within {} s",
                            timeout.as_secs()
                        )));
                    }
                }
            }
            (None, None) => return Err(self.error("needs a command (stdio) or a url (streamable HTTP)")),
        };
        self.check_protocol_version(connection).await
    }

    /// Refuses a server that answered `initialize` with a protocol version
    /// concierge does not speak.
    async fn check_protocol_version(&self, connection: Connection) -> Result<Connection, McpError> {
        let offered = connection.service.peer_info().map(|info| info.protocol_version.clone());
        match offered {
            Some(version) if ProtocolVersion::KNOWN_VERSIONS.contains(&version) => Ok(connection),
            offered => {
                let offered = offered.map_or_else(|| "none".to_string(), |v| v.to_string());
                self.close(connection).await;
                Err(self.error(format!(
                    "answered initialize with MCP protocol version {offered}, which concierge does not support \
                     (it supports {}); use a version of the server that speaks one of these",
                    supported_protocol_versions().join(", ")
                )))
            }
        }
    }

    /// Closes a connection: the session is ended, a stdio server is given a
    /// moment to exit on its own, then stopped.
    async fn close(&self, connection: Connection) {
        let Connection { service, child, .. } = connection;
        let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
        if let Some(mut child) = child {
            if tokio::time::timeout(Duration::from_secs(3), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }

    /// Drops a broken connection (killing a stdio server) so the next use restarts it.
    pub(super) async fn discard(&self, broken: &Arc<Connection>) {
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

    /// Calls a tool; the idempotency key travels in `_meta`. The call may
    /// take the server's `timeout_secs` between two signs of life (progress
    /// notifications), and [`MAX_CALL_TIMEOUTS`] times that in all; when it
    /// runs out, or when the returned future is dropped, the server is sent
    /// `notifications/cancelled`.
    pub async fn call(&self, tool: &str, arguments: JsonObject, key: &IdempotencyKey) -> Result<Value, ToolError> {
        self.call_in(tool, arguments, key, None).await
    }

    /// Calls a tool for the call `cx` (see [`McpClient::call`]): the
    /// server's questions to the person and requests to use the model
    /// during the call go to `cx`'s session, and the call's timeouts pause
    /// while they wait.
    pub async fn call_in(
        &self,
        tool: &str,
        arguments: JsonObject,
        key: &IdempotencyKey,
        cx: Option<&crate::tool::ToolContext>,
    ) -> Result<Value, ToolError> {
        self.wait_for_restart(self.config.call_timeout()).await;
        let connection = self
            .connection()
            .await
            .map_err(|e| ToolError::new(ToolErrorKind::Unavailable, e.to_string()))?;
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let mut meta = RequestMetaObject::new();
        meta.insert("idempotency_key".to_string(), json!(key.as_str()));
        params.meta = Some(meta);
        let idle = self.config.call_timeout();
        let cap = idle.saturating_mul(MAX_CALL_TIMEOUTS);
        // The timeouts are ours (elicitation::await_response), paused while the server waits on us.
        let options = PeerRequestOptions::no_options();
        let peer = connection.service.peer();
        // Known before the request goes: the server may ask at once.
        let (live, _leave) = self.live.enter(tool, cx);
        let sent = peer
            .send_cancellable_request(ClientRequest::CallToolRequest(CallToolRequest::new(params)), options)
            .await;
        let answer = match sent {
            Ok(handle) => {
                if let Ok(mut calls) = self.calls.lock() {
                    calls.insert(handle.progress_token.clone(), tool.to_string());
                }
                let mut guard = CancelOnDrop {
                    peer: peer.clone(),
                    id: Some(handle.id.clone()),
                    token: handle.progress_token.clone(),
                    calls: self.calls.clone(),
                };
                live.sent_as(handle.progress_token.clone());
                let answer = elicitation::await_response(handle, &live, idle, cap).await;
                // Answered, or timed out (rmcp sent the cancellation then).
                guard.disarm();
                answer
            }
            Err(error) => Err(error),
        };
        match answer {
            Ok(ServerResult::CallToolResult(result)) => outcome(result),
            Ok(ServerResult::InputRequiredResult(_)) => Err(ToolError::failed(format!(
                "{tool} on the MCP server {} asked for more input during the call, which concierge does not support",
                self.name
            ))),
            Ok(ServerResult::CreateTaskResult(_)) => Err(ToolError::failed(format!(
                "{tool} on the MCP server {} answered with a task to poll, which concierge does not support",
                self.name
            ))),
            Ok(_) => Err(ToolError::failed(format!(
                "the MCP server {} answered tools/call with something other than a tool result",
                self.name
            ))),
            Err(ServiceError::McpError(error)) => {
                if let Some(too_large) = framing::too_large(error.data.as_ref()) {
                    let limit = too_large.limit;
                    let size = match too_large.bytes {
                        Some(bytes) => format!("{bytes} bytes or more, over the limit of {limit} bytes"),
                        None => format!("more than the limit of {limit} bytes"),
                    };
                    return Err(ToolError::failed(format!(
                        "the result of {tool} was too large: the MCP server {} answered with {size} for one \
                         message. The tool may have run (its effects may have happened); ask for less, e.g. a \
                         page or a summary",
                        self.name
                    )));
                }
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
            Err(ServiceError::Timeout { timeout }) => {
                self.discard(&connection).await;
                let why = if timeout >= cap && cap > idle {
                    format!(
                        "did not finish within {} s, the most a call may take ({MAX_CALL_TIMEOUTS} times its timeout_secs, \
                         however much progress it reports)",
                        cap.as_secs()
                    )
                } else {
                    format!("did not answer or report progress within {} s", idle.as_secs())
                };
                Err(ToolError::new(
                    ToolErrorKind::Timeout,
                    format!(
                        "{tool} on the MCP server {} {why}; the call was cancelled and the server is restarted \
                         on the next call",
                        self.name
                    ),
                ))
            }
            Err(error) => {
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
        }
    }

    /// Closes the connection (a stdio server is asked to exit, then stopped).
    pub async fn shutdown(&self) {
        let connection = self.state.lock().await.connection.take();
        if let Some(connection) = connection {
            match Arc::try_unwrap(connection) {
                Ok(connection) => self.close(connection).await,
                Err(shared) => self.discard(&shared).await,
            }
        }
    }
}
