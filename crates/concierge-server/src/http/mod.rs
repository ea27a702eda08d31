//! concierge's HTTP API (`concierge serve`): sessions and their runs under
//! `/api/v1`, each session's events as resumable Server-Sent Events, the
//! catalogue, `/healthz` and the OpenAPI document at `/openapi.json`.
//!
//! ```no_run
//! # async fn serve(rt: concierge::Runtime) -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! concierge_server::HttpApi::new(rt)
//!     .serve(listener, async { let _ = tokio::signal::ctrl_c().await; })
//!     .await
//! # }
//! ```

pub mod auth;
pub mod body;
pub mod catalog;
pub mod checks;
pub mod error;
pub mod events;
pub mod limit;
pub mod openapi;
pub mod sessions;
pub mod types;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use concierge::{Runtime, Session};
use tokio::sync::watch;
use tower_http::limit::RequestBodyLimitLayer;

pub use auth::{Caller, TokenError, Tokens};
pub use error::{ApiError, ErrorBody};
pub use limit::{DEFAULT_MAX_RUNS_PER_TENANT, RunLimiter, RunPermit};

/// The default limit on a request body, in bytes.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

/// Why `concierge serve` refuses an address.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Without API tokens the server only listens on loopback.
    #[error(
        "{0} is not a loopback address: without API tokens the server listens only on this machine (127.0.0.1 or ::1); use --addr 127.0.0.1:PORT"
    )]
    NotLoopback(SocketAddr),
}

/// Checks that `addr` may be served without authentication (loopback only).
pub fn check_unauthenticated_addr(addr: SocketAddr) -> Result<(), BindError> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(BindError::NotLoopback(addr))
    }
}

/// What the handlers share.
#[derive(Clone)]
pub struct ApiState {
    pub(crate) rt: Runtime,
    ids: Arc<AtomicU64>,
    stopping: watch::Receiver<bool>,
    limiter: RunLimiter,
    /// The interrupts the AG-UI endpoint raised (confirmations and choices).
    interrupts: crate::agui::Interrupts,
}

impl ApiState {
    /// The runtime the API serves.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// A fresh session id: the process id and a counter that starts at the
    /// server's start time (in milliseconds), so ids do not repeat across restarts.
    pub fn new_session_id(&self) -> String {
        let n = self.ids.fetch_add(1, Ordering::Relaxed);
        format!("s-{}-{n}", std::process::id())
    }

    /// Session `id` if it is `caller`'s; another tenant's session is a 404,
    /// as one that does not exist.
    pub async fn session_of(&self, caller: &Caller, id: &str) -> Result<Session, ApiError> {
        self.maybe_session_of(caller, id)
            .await?
            .ok_or_else(|| ApiError::unknown_session(id))
    }

    /// Session `id` if it is `caller`'s, `None` if no session has this id;
    /// another tenant's session is a 404 (a caller may not take its id).
    pub async fn maybe_session_of(&self, caller: &Caller, id: &str) -> Result<Option<Session>, ApiError> {
        match self.rt.session(id).await {
            Ok(session) if caller.owns(session.tenant()) => Ok(Some(session)),
            Ok(_) => Err(ApiError::unknown_session(id)),
            Err(concierge::Error::SessionNotFound(_)) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// The interrupts the AG-UI endpoint raised.
    pub(crate) fn interrupts(&self) -> &crate::agui::Interrupts {
        &self.interrupts
    }

    /// A place for one more run of the caller's tenant (429 past the cap);
    /// hold it until the run stops.
    pub fn run_permit(&self, caller: &Caller) -> Result<RunPermit, ApiError> {
        self.limiter.permit(caller)
    }

    /// Turns true when the server begins to shut down (event streams end then).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.clone()
    }
}

/// The HTTP API over a runtime.
pub struct HttpApi {
    state: ApiState,
    stop: watch::Sender<bool>,
    body_limit: usize,
    tokens: Tokens,
    metrics: Option<Arc<crate::metrics::Metrics>>,
}

impl std::fmt::Debug for HttpApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpApi")
            .field("body_limit", &self.body_limit)
            .finish_non_exhaustive()
    }
}

impl HttpApi {
    /// The API over `rt`, with the default body limit.
    pub fn new(rt: Runtime) -> Self {
        let (stop, stopping) = watch::channel(false);
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or_default();
        Self {
            state: ApiState {
                rt,
                ids: Arc::new(AtomicU64::new(seed)),
                stopping,
                limiter: RunLimiter::default(),
                interrupts: crate::agui::Interrupts::default(),
            },
            stop,
            body_limit: DEFAULT_BODY_LIMIT,
            tokens: Tokens::default(),
            metrics: None,
        }
    }

    /// Requires one of `tokens` on every API request; each request then
    /// sees only its token's tenant's sessions, and its runs are for the
    /// token's user.
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.tokens = tokens;
        self
    }

    /// Serves `metrics` at `/metrics` (the runtime must have been built with
    /// [`Metrics::hooks`](crate::metrics::Metrics::hooks) to fill them).
    pub fn metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// At most `max` runs in progress per tenant (429 past it).
    pub fn max_runs_per_tenant(mut self, max: usize) -> Self {
        self.state.limiter = RunLimiter::new(max);
        self
    }

    /// Refuses request bodies over `bytes` (413).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// How long an AG-UI interrupt (a confirmation or a choice a run parked
    /// on) can be answered; a later resume is refused. One hour by default.
    pub fn interrupt_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.state.interrupts = crate::agui::Interrupts::new(ttl);
        self
    }

    /// The routes: `/healthz`, `/openapi.json`, `/api/v1/...` (AG-UI at
    /// `/api/v1/agui`), the OpenAI-compatible `/v1/...` ([`crate::openai`]),
    /// the web chat at `/` and, with metrics, `/metrics`.
    pub fn router(&self) -> Router {
        let limit = self.body_limit;
        let metrics = self
            .metrics
            .as_ref()
            .map_or_else(Router::new, crate::metrics::Metrics::router);
        let api = Router::new()
            .route("/sessions", post(sessions::create).get(sessions::list))
            .route("/sessions/{id}", get(sessions::show))
            .route("/sessions/{id}/messages", post(sessions::post_message))
            .route("/sessions/{id}/confirm", post(sessions::confirm))
            .route("/sessions/{id}/choose", post(sessions::choose))
            .route("/sessions/{id}/end", post(sessions::end))
            .route("/sessions/{id}/events", get(events::events))
            .route("/agents", get(catalog::agents))
            .route("/goals", get(catalog::goals))
            .route("/tools", get(catalog::tools))
            .route("/agui", post(crate::agui::run))
            .fallback(unknown_route)
            .route_layer(middleware::from_fn_with_state(self.tokens.clone(), auth::authenticate));
        Router::new()
            .route("/healthz", get(openapi::health))
            .route("/openapi.json", get(openapi::document))
            .nest("/api/v1", api)
            .merge(crate::web::router())
            .merge(
                crate::openai::router()
                    .route_layer(middleware::from_fn_with_state(self.tokens.clone(), auth::authenticate)),
            )
            .merge(metrics)
            .fallback(unknown_route)
            .with_state(self.state.clone())
            .layer(RequestBodyLimitLayer::new(limit))
            // Outside the limit, so that its own 413 is said in a sentence too.
            .layer(middleware::from_fn(move |req: Request, next: Next| {
                explain_too_large(req, next, limit)
            }))
    }

    /// Serves on `listener` until `shutdown` resolves; then event streams
    /// end, requests in flight finish, and this returns. (Shut the runtime
    /// down after.)
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let router = self.router();
        let stop = self.stop;
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                let _ = stop.send(true);
            })
            .await
    }
}

/// A 413 from the body limit, said in a sentence as every error is.
async fn explain_too_large(req: Request, next: Next, limit: usize) -> Response {
    let openai = req.uri().path().starts_with("/v1/");
    let response = next.run(req).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE && !json {
        if openai {
            return crate::openai::OpenAiError::body_too_large(limit).into_response();
        }
        return ApiError::body_too_large(limit).into_response();
    }
    response
}

async fn unknown_route(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "there is nothing at {} {}; the API is described at /openapi.json",
            req.method(),
            req.uri().path()
        ),
    )
}
