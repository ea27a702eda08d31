//! The server: every front door mounted on one router behind the doors
//! ([`doors`]), the OpenAPI document describing them ([`openapi`]), and
//! [`HttpApi`], which builds and serves it (`concierge serve`). The front
//! doors ([`crate::http`], [`crate::agui`], [`crate::openai`]) know nothing
//! of each other; this is the one place that knows them all.
//!
//! ```no_run
//! # async fn serve(rt: concierge::Runtime) -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! concierge_server::HttpApi::new(rt)
//!     .serve(listener, async { let _ = tokio::signal::ctrl_c().await; })
//!     .await
//! # }
//! ```

pub mod doors;
pub mod openapi;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRef, Request};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use concierge::Runtime;
use tokio::sync::watch;
use tower_http::limit::RequestBodyLimitLayer;

use crate::agui::Interrupts;
use crate::ground::{ApiError, ApiState, DEFAULT_BODY_LIMIT, Limits, RunLimiter, Tokens, auth, connections};
use crate::metrics::Metrics;
pub use doors::DoorError;

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

/// What the router's handlers share: the state every front door uses, and
/// AG-UI's interrupt ledger, which only AG-UI's handlers extract.
#[derive(Clone)]
struct AppState {
    api: ApiState,
    interrupts: Interrupts,
}

impl FromRef<AppState> for ApiState {
    fn from_ref(state: &AppState) -> Self {
        state.api.clone()
    }
}

impl FromRef<AppState> for Interrupts {
    fn from_ref(state: &AppState) -> Self {
        state.interrupts.clone()
    }
}

/// The server over a runtime: the HTTP API, AG-UI, the OpenAI-compatible
/// endpoint, the web chat and, if given, metrics, on one router.
pub struct HttpApi {
    state: AppState,
    stop: watch::Sender<bool>,
    body_limit: usize,
    tokens: Tokens,
    metrics: Option<Arc<Metrics>>,
    /// Where `/metrics` is also served, without a token.
    metrics_listener: Option<tokio::net::TcpListener>,
    allowed_hosts: Vec<String>,
    cors_origins: Vec<String>,
    limits: Limits,
    /// Where the server is reached from outside, for the A2A agent cards.
    public_url: Option<String>,
}

impl std::fmt::Debug for HttpApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpApi")
            .field("body_limit", &self.body_limit)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("cors_origins", &self.cors_origins)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl HttpApi {
    /// The API over `rt`, with the default body limit.
    pub fn new(rt: Runtime) -> Self {
        let (stop, stopping) = watch::channel(false);
        // A2A push notifications render the task they are about.
        rt.render_pushes_with(std::sync::Arc::new(crate::a2a::push::TaskPusher));
        Self {
            state: AppState {
                api: ApiState::new(rt, stopping),
                interrupts: Interrupts::default(),
            },
            stop,
            body_limit: DEFAULT_BODY_LIMIT,
            tokens: Tokens::default(),
            metrics: None,
            metrics_listener: None,
            allowed_hosts: Vec::new(),
            cors_origins: Vec::new(),
            limits: Limits::default(),
            public_url: None,
        }
    }

    /// The URL the server is reached at from outside
    /// (`https://agents.example.com`): the A2A agent cards name their
    /// endpoints under it. Without it they use the request's `Host`.
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into());
        self
    }

    /// Requires one of `tokens` on every API request; each request then
    /// sees only its token's tenant's sessions, and its runs are for the
    /// token's user.
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.tokens = tokens;
        self
    }

    /// Serves `metrics` at `/metrics` (the runtime must have been built with
    /// [`Metrics::hooks`](crate::metrics::Metrics::hooks) to fill them),
    /// behind the API's tokens when there are any.
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Also serves `/metrics` (and nothing else) on `listener`, without a
    /// token, for a scraper on a private address. Its requests must name
    /// its address (or an allowed host) as their `Host`.
    pub fn metrics_listener(mut self, listener: tokio::net::TcpListener) -> Self {
        self.metrics_listener = Some(listener);
        self
    }

    /// The names the server answers to besides its own address
    /// (`"chat.example.com"` for any port, `"chat.example.com:8443"`): any
    /// other `Host` is refused with 421. Without tokens the Host check holds
    /// always; with tokens, only once this list is given.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Result<Self, DoorError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.allowed_hosts = hosts
            .into_iter()
            .map(|host| doors::allowed_host(host.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// Web origins (`"https://app.example.com"`) whose pages may call the
    /// API: their CORS preflights are answered and their requests let in. A
    /// page of any other origin is refused with 403.
    pub fn cors_origins<I, S>(mut self, origins: I) -> Result<Self, DoorError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.cors_origins = origins
            .into_iter()
            .map(|origin| doors::origin(origin.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// How long a client has to send a request's headers, counted from when
    /// its connection starts waiting for one (10 s by default).
    pub fn header_read_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.limits.header_read_timeout = timeout;
        self
    }

    /// How long a connection may go without a request in progress, and a
    /// request body without arriving (60 s by default). Event streams are
    /// responses in progress: they are not cut.
    pub fn idle_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// How many connections are open at once, at most (512 by default; 0
    /// is taken as 1). Past it new clients wait until one closes.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.limits.max_connections = max.max(1);
        self
    }

    /// At most `max` runs in progress per tenant (429 past it).
    pub fn max_runs_per_tenant(mut self, max: usize) -> Self {
        self.state.api = self.state.api.limited(RunLimiter::new(max));
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
        self.state.interrupts = Interrupts::new(ttl);
        self
    }

    /// The routes: `/healthz` (liveness), `/readyz` (readiness), `/openapi.json`, `/api/v1/...` (AG-UI at
    /// `/api/v1/agui`), the OpenAI-compatible `/v1/...` ([`crate::openai`]),
    /// A2A's agent cards and endpoints (`/.well-known/agent-card.json`,
    /// `/a2a/...`, [`crate::a2a`]),
    /// the web chat at `/` and, with metrics, `/metrics`; behind the doors
    /// ([`doors`]: Host, Origin, JSON bodies).
    pub fn router(&self) -> Router {
        let limit = self.body_limit;
        let auth = || middleware::from_fn_with_state(self.tokens.clone(), auth::authenticate);
        let metrics = self
            .metrics
            .as_ref()
            .map_or_else(Router::new, |metrics| Metrics::router(metrics).route_layer(auth()));
        let api = crate::http::router()
            .merge(crate::agui::router())
            .fallback(unknown_route)
            .route_layer(middleware::from_fn(|req: Request, next: Next| {
                doors::json_bodies(req, next, doors::Shape::Api)
            }))
            .route_layer(auth());
        let a2a_settings = crate::a2a::A2aSettings {
            public_url: self.public_url.clone(),
            secured: !self.tokens.is_empty(),
        };
        let a2a = crate::a2a::endpoints()
            .route_layer(middleware::from_fn(|req: Request, next: Next| {
                doors::json_bodies(req, next, doors::Shape::Api)
            }))
            .route_layer(auth())
            .merge(crate::a2a::cards())
            .layer(axum::Extension(a2a_settings));
        let router = Router::new()
            .route("/healthz", get(openapi::health))
            .route("/readyz", get(openapi::ready))
            .route("/openapi.json", get(openapi::document))
            .nest("/api/v1", api)
            .merge(crate::web::router())
            .merge(
                crate::openai::router()
                    .route_layer(middleware::from_fn(|req: Request, next: Next| {
                        doors::json_bodies(req, next, doors::Shape::OpenAi)
                    }))
                    .route_layer(auth()),
            )
            .merge(a2a)
            .merge(metrics)
            .fallback(unknown_route)
            .with_state(self.state.clone())
            .layer(RequestBodyLimitLayer::new(limit))
            // Outside the limit, so that its own 413 is said in a sentence too.
            .layer(middleware::from_fn(move |req: Request, next: Next| {
                explain_too_large(req, next, limit)
            }));
        self.behind_doors(router, self.tokens.is_empty() || !self.allowed_hosts.is_empty())
    }

    /// `router` behind the doors: CORS for the configured origins, the Host
    /// and Origin checks (when `guarded`), and every plain-text 4xx said as
    /// the API's JSON error.
    fn behind_doors(&self, router: Router, guarded: bool) -> Router {
        let doors = doors::Doors::new(self.allowed_hosts.clone(), self.cors_origins.clone(), guarded);
        let router = match doors.cors() {
            Some(cors) => router.layer(cors),
            None => router,
        };
        router
            .layer(middleware::from_fn_with_state(doors, doors::guard))
            .layer(middleware::from_fn(doors::json_errors))
    }

    /// What the metrics listener serves: `/metrics` alone, without a token,
    /// to requests that name its address.
    fn metrics_router(&self) -> Router {
        let metrics = self
            .metrics
            .as_ref()
            .map_or_else(Router::new, Metrics::router)
            .fallback(unknown_route);
        self.behind_doors(metrics, true)
    }

    /// Serves on `listener` (and `/metrics` on the metrics listener, if
    /// one was given) until `shutdown` resolves; then event streams end,
    /// requests in flight finish, and this returns once every connection
    /// has closed. (Shut the runtime down after.) Connections are held to
    /// the header-read and idle timeouts and the connection cap
    /// ([`connections`]).
    pub async fn serve(
        mut self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let router = self.router();
        let metrics = self
            .metrics_listener
            .take()
            .map(|listener| (listener, self.metrics_router()));
        let limits = self.limits;
        let stopping = self.state.api.stopping();
        let stop = self.stop;
        let signal = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        let metrics_stopping = stopping.clone();
        let metrics = async move {
            if let Some((listener, router)) = metrics {
                connections::serve(listener, router, limits, metrics_stopping).await;
            }
        };
        tokio::join!(connections::serve(listener, router, limits, stopping), metrics, signal);
        Ok(())
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
