//! How the server holds its connections: HTTP/1.1 by hyper, one task per
//! connection, with three limits so that clients that stall cannot pile
//! connections up until the process runs out of file descriptors.
//!
//! - **Header read timeout** (`[server] header_read_timeout_secs`, 10 s):
//!   hyper's own. It runs while a connection waits for a request's headers:
//!   from the moment it is accepted and, on a kept-alive connection, from the
//!   end of each response. A connection that sends nothing, or half a
//!   request, is closed when it runs out.
//! - **Idle timeout** (`[server] idle_timeout_secs`, 60 s): a connection
//!   with no request in progress for this long is shut down (as at a
//!   server's shutdown: hyper's `graceful_shutdown`), and a request body
//!   that stops arriving for this long fails (tower-http's `TimeoutBody`;
//!   the request is answered 408). A response in progress is not idle: an
//!   event stream lasts as long as it streams.
//! - **Connection cap** (`[server] max_connections`, 512): each open
//!   connection holds a permit; with none left the server accepts nothing,
//!   and a new client waits in the listen backlog until a connection closes.
//!
//! At shutdown the server stops accepting, each connection finishes its
//! response in progress (event streams end by themselves, on
//! [`ApiState::stopping`](super::ApiState::stopping)) and closes, and
//! [`serve`] returns once every one has.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tower_http::timeout::TimeoutBody;
use tower_service::Service as _;

/// The address a connection came in on: `serve` puts it on each request,
/// and the Host check compares with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServedAddr(pub SocketAddr);

/// How long a client has to send a request's headers, by default.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may be idle, by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How many connections the server holds open at once, by default: well
/// under Linux's usual open-file limit of 1024, which the server shares with
/// its database, its MCP servers and its model connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The limits on the server's connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// How long a client has to send a request's headers.
    pub header_read_timeout: Duration,
    /// How long a connection may go without a request in progress, and a
    /// request body without arriving.
    pub idle_timeout: Duration,
    /// How many connections are open at once, at most (at least 1).
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Serves `router` on `listener` until `stopping` turns true (or its sender
/// goes away); returns once every connection has closed.
pub(crate) async fn serve(listener: TcpListener, router: Router, limits: Limits, mut stopping: watch::Receiver<bool>) {
    let max = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let permits = Arc::new(Semaphore::new(max as usize));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let fallback_addr = listener.local_addr().ok();
    loop {
        // A permit first: past the cap, nothing is accepted.
        let permit = tokio::select! {
            biased;
            _ = stopping.wait_for(|stop| *stop) => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            biased;
            _ = stopping.wait_for(|stop| *stop) => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, remote) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                if !dropped_by_peer(&error) {
                    // Out of file descriptors, say: wait a moment rather
                    // than spin.
                    tracing::warn!("the server could not accept a connection: {error}");
                    tokio::select! {
                        _ = stopping.wait_for(|stop| *stop) => break,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
                continue;
            }
        };
        let Some(served) = stream.local_addr().ok().or(fallback_addr) else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection = Connection {
            builder: builder.clone(),
            served,
            remote,
            router: router.clone(),
            idle: limits.idle_timeout,
            stopping: stopping.clone(),
            _permit: permit,
        };
        tokio::spawn(connection.run(stream));
    }
    drop(listener);
    // Every permit back: every connection has closed.
    let _ = permits.acquire_many(max).await;
}

/// An accept error about that one connection only.
fn dropped_by_peer(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// One accepted connection and what serving it needs.
struct Connection {
    builder: http1::Builder,
    served: SocketAddr,
    remote: SocketAddr,
    router: Router,
    idle: Duration,
    stopping: watch::Receiver<bool>,
    /// Its place under the cap, given back when it closes.
    _permit: OwnedSemaphorePermit,
}

impl Connection {
    async fn run(mut self, stream: TcpStream) {
        let (activity, requests) = watch::channel(0usize);
        let service = PerConnection {
            router: self.router.clone(),
            served: self.served,
            remote: self.remote,
            idle: self.idle,
            activity: Arc::new(activity),
        };
        let conn = self.builder.serve_connection(TokioIo::new(stream), service);
        let mut conn = std::pin::pin!(conn);
        let mut quiet = std::pin::pin!(quiet_for(requests, self.idle));
        let mut closing = false;
        loop {
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(remote = %self.remote, "connection closed: {error}");
                    }
                    break;
                }
                _ = self.stopping.wait_for(|stop| *stop), if !closing => {
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
                () = quiet.as_mut(), if !closing => {
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Resolves once no request has been in progress for `idle` (`requests`
/// counts those in progress).
async fn quiet_for(mut requests: watch::Receiver<usize>, idle: Duration) {
    loop {
        if requests.wait_for(|n| *n == 0).await.is_err() {
            return std::future::pending().await;
        }
        tokio::select! {
            () = tokio::time::sleep(idle) => return,
            changed = requests.changed() => {
                if changed.is_err() {
                    return std::future::pending().await;
                }
            }
        }
    }
}

/// The router as hyper calls it on one connection: each request carries
/// the connection's addresses, its body the idle timeout, and counts as in
/// progress until its response has been sent.
#[derive(Clone)]
struct PerConnection {
    router: Router,
    served: SocketAddr,
    remote: SocketAddr,
    idle: Duration,
    activity: Arc<watch::Sender<usize>>,
}

impl hyper::service::Service<Request<Incoming>> for PerConnection {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Tracked>, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let in_progress = InProgress::begin(&self.activity);
        let mut req = req.map(|body| Body::new(TimeoutBody::new(self.idle, body)));
        req.extensions_mut().insert(ServedAddr(self.served));
        req.extensions_mut().insert(ConnectInfo(self.remote));
        let mut router = self.router.clone();
        Box::pin(async move {
            let response = match router.call(req).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok(response.map(|body| Tracked {
                body,
                _in_progress: in_progress,
            }))
        })
    }
}

/// One request in progress on a connection (until dropped).
struct InProgress(Arc<watch::Sender<usize>>);

impl InProgress {
    fn begin(activity: &Arc<watch::Sender<usize>>) -> Self {
        activity.send_modify(|n| *n += 1);
        Self(Arc::clone(activity))
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// A response body that keeps its request in progress until hyper has
/// sent it (or given up on it).
struct Tracked {
    body: Body,
    _in_progress: InProgress,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
