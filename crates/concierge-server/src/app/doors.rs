//! The server's doors: what a request must look like before any handler
//! sees it, so that a web page on another site cannot use a server on
//! this machine (or, by DNS rebinding, pretend to be it).
//!
//! - **Host**: the request must name the address the server listens on
//!   (`127.0.0.1:PORT`, `localhost:PORT` or `[::1]:PORT` for a loopback
//!   address) or one of `[server] allowed_hosts`; otherwise 421. A page
//!   that rebinds its own name to 127.0.0.1 still sends its own name.
//! - **Origin**: a browser's request from a page must come from the
//!   server's own pages (`http://<Host>`, or `https://` behind a TLS proxy)
//!   or from one of `[server] cors_origins`; otherwise 403. Those origins'
//!   CORS preflights are answered ([`Doors::cors`]).
//! - **Content type**: a body sent to a JSON endpoint must say
//!   `Content-Type: application/json` (or `application/<x>+json`);
//!   otherwise 415. A page can send `text/plain` to any site without
//!   asking first, but not JSON.
//!
//! Both address checks hold always on a server without API tokens; on one
//! with tokens (reached through a proxy, under a public name) they hold once
//! `allowed_hosts` is configured: the tokens are what protect it, and a
//! page cannot send a token it does not have. `/healthz` passes every door.
//!
//! Every refusal is the API's JSON error (`{"error", "field"}`, OpenAI's
//! shape under `/v1/`), and so is every other 4xx an extractor answers in
//! plain text ([`json_errors`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::ground::ApiError;
use crate::ground::body::json_content_type;
use crate::ground::connections::ServedAddr;
use crate::openai::OpenAiError;

/// A host name or origin of the configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DoorError {
    /// An `allowed_hosts` entry is not `name` or `name:port`.
    #[error(
        "allowed host {0:?} is not a host name with an optional port (\"chat.example.com\" or \"chat.example.com:8443\"; no scheme, no path)"
    )]
    BadHost(String),
    /// A `cors_origins` entry is not `scheme://host[:port]`.
    #[error(
        "CORS origin {0:?} is not a web origin: give http:// or https://, a host and optionally a port, and nothing after (\"https://app.example.com\")"
    )]
    BadOrigin(String),
}

/// What the doors let in: the configured names and origins, and whether the
/// Host and Origin checks hold.
#[derive(Clone, Debug, Default)]
pub struct Doors {
    allowed_hosts: Arc<[String]>,
    cors_origins: Arc<[String]>,
    guarded: bool,
}

impl Doors {
    /// Doors with these names and origins (already checked with
    /// [`allowed_host`] and [`origin`]); `guarded`: whether the Host and
    /// Origin checks hold.
    pub fn new(allowed_hosts: Vec<String>, cors_origins: Vec<String>, guarded: bool) -> Self {
        Self {
            allowed_hosts: allowed_hosts.into(),
            cors_origins: cors_origins.into(),
            guarded,
        }
    }

    /// The CORS layer answering the configured origins (with their
    /// preflights), or `None` without any.
    pub fn cors(&self) -> Option<CorsLayer> {
        if self.cors_origins.is_empty() {
            return None;
        }
        let origins: Vec<HeaderValue> = self
            .cors_origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        Some(
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(origins))
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    header::ACCEPT,
                    HeaderName::from_static("last-event-id"),
                    HeaderName::from_static(crate::openai::SESSION_HEADER),
                ])
                .expose_headers([
                    HeaderName::from_static(crate::openai::SESSION_HEADER),
                    header::RETRY_AFTER,
                ])
                .max_age(Duration::from_secs(600)),
        )
    }

    /// The names a request may give as its Host on a connection to `served`.
    fn expected(&self, served: Option<SocketAddr>) -> Vec<String> {
        let mut names = match served {
            Some(addr) if addr.ip().is_loopback() => ["127.0.0.1", "localhost", "[::1]"]
                .iter()
                .map(|name| format!("{name}:{}", addr.port()))
                .collect(),
            Some(addr) => vec![addr.to_string()],
            None => vec!["127.0.0.1".into(), "localhost".into(), "[::1]".into()],
        };
        names.extend(self.allowed_hosts.iter().cloned());
        names
    }
}

/// An `allowed_hosts` entry, checked and lower-cased.
pub fn allowed_host(entry: &str) -> Result<String, DoorError> {
    let host = entry.trim().to_ascii_lowercase();
    let fits = !host.is_empty()
        && !host.contains(['/', '@', '?', '#', ' '])
        && split_host(&host).is_some_and(|(name, _)| !name.is_empty());
    if fits {
        Ok(host)
    } else {
        Err(DoorError::BadHost(entry.to_string()))
    }
}

/// A `cors_origins` entry, checked and written as browsers send it
/// (lower case, no default port, no trailing slash).
pub fn origin(entry: &str) -> Result<String, DoorError> {
    let bad = || DoorError::BadOrigin(entry.to_string());
    let text = entry.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, authority) = text.split_once("://").ok_or_else(bad)?;
    if !matches!(scheme, "http" | "https")
        || authority.is_empty()
        || authority.contains(['/', '@', '?', '#', ' '])
        || split_host(authority).is_none_or(|(name, _)| name.is_empty())
    {
        return Err(bad());
    }
    Ok(normal_origin(scheme, authority))
}

/// `scheme://authority` without the scheme's default port.
fn normal_origin(scheme: &str, authority: &str) -> String {
    let default = if scheme == "https" { ":443" } else { ":80" };
    let authority = authority.strip_suffix(default).unwrap_or(authority);
    format!("{scheme}://{authority}")
}

/// A Host value's name and port (`None` when it names none).
fn split_host(host: &str) -> Option<(&str, Option<u16>)> {
    if host.starts_with('[') {
        let end = host.find(']')?;
        let port = match &host[end + 1..] {
            "" => None,
            rest => Some(rest.strip_prefix(':')?.parse().ok()?),
        };
        return Some((&host[..=end], port));
    }
    match host.rsplit_once(':') {
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
        None => Some((host, None)),
    }
}

/// The IP address a Host name writes literally (`127.0.0.1`, `[::1]`).
fn literal_ip(name: &str) -> Option<IpAddr> {
    let bare = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')).unwrap_or(name);
    bare.parse().ok()
}

/// Whether `host` (a Host header) names the server on a connection to
/// `served`, or one of `allowed`.
fn host_allowed(host: &str, served: Option<SocketAddr>, allowed: &[String]) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let Some((name, port)) = split_host(&host) else {
        return false;
    };
    let configured = allowed.iter().any(|entry| match split_host(entry) {
        Some((allowed_name, None)) => allowed_name == name,
        Some((allowed_name, Some(allowed_port))) => allowed_name == name && allowed_port == port.unwrap_or(80),
        None => false,
    });
    if configured {
        return true;
    }
    let ip = literal_ip(name);
    let loopback_name = name == "localhost" || ip.is_some_and(|ip| ip.is_loopback());
    match served {
        Some(addr) => {
            let same_port = port.unwrap_or(80) == addr.port();
            let same_name = if addr.ip().is_loopback() {
                loopback_name
            } else {
                ip == Some(addr.ip())
            };
            same_port && same_name
        }
        // A router served by other means: loopback names, on any port.
        None => loopback_name,
    }
}

/// Whether a page of `origin` may call the server it reached as `host`.
fn origin_allowed(origin: &str, host: &str, cors: &[String]) -> bool {
    let origin = origin.trim().to_ascii_lowercase();
    let origin = match origin.split_once("://") {
        Some((scheme, authority)) => normal_origin(scheme, authority),
        None => origin,
    };
    if cors.contains(&origin) {
        return true;
    }
    let host = host.trim().to_ascii_lowercase();
    ["http", "https"]
        .iter()
        .any(|scheme| normal_origin(scheme, &host) == origin)
}

/// The error said in the shape of the API `path` belongs to.
fn refusal(openai: bool, error: ApiError) -> Response {
    if openai {
        let status = error.status;
        let code = match status {
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Some("unsupported_media_type"),
            StatusCode::MISDIRECTED_REQUEST => Some("misdirected_request"),
            StatusCode::FORBIDDEN => Some("forbidden_origin"),
            _ => None,
        };
        let mut out = OpenAiError::new(status, error.body.error);
        out.body.error.param = error.body.field;
        if let Some(code) = code {
            out = out.code(code);
        }
        out.into_response()
    } else {
        error.into_response()
    }
}

/// Middleware: the Host and Origin checks (when they hold). `/healthz`
/// and `/readyz` always pass (a load balancer's probes).
pub async fn guard(State(doors): State<Doors>, req: Request, next: Next) -> Response {
    if !doors.guarded || matches!(req.uri().path(), "/healthz" | "/readyz") {
        return next.run(req).await;
    }
    let openai = req.uri().path().starts_with("/v1/");
    let served = req.extensions().get::<ServedAddr>().map(|s| s.0);
    let host = req
        .headers()
        .get(header::HOST)
        .map(|v| v.to_str().unwrap_or("\u{fffd}").to_string())
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_string()));
    let expected = || doors.expected(served).join(", ");
    let Some(host) = host else {
        return refusal(
            openai,
            ApiError::field(
                StatusCode::BAD_REQUEST,
                "Host",
                format!("the request names no Host; this server answers to {}", expected()),
            ),
        );
    };
    if !host_allowed(&host, served, &doors.allowed_hosts) {
        return refusal(
            openai,
            ApiError::field(
                StatusCode::MISDIRECTED_REQUEST,
                "Host",
                format!(
                    "this server answers to {}, not to {host:?}: open it by one of those names, or add the name to allowed_hosts in the [server] section of concierge.toml",
                    expected()
                ),
            ),
        );
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("\u{fffd}");
        if !origin_allowed(origin, &host, &doors.cors_origins) {
            return refusal(
                openai,
                ApiError::field(
                    StatusCode::FORBIDDEN,
                    "Origin",
                    format!(
                        "requests from pages of {origin} are refused: this server answers its own pages (http://{host}) and the origins in cors_origins of the [server] section of concierge.toml"
                    ),
                ),
            );
        }
    }
    next.run(req).await
}

/// Which API a middleware guards, for the shape of its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `/api/v1`: `{"error", "field"}`.
    Api,
    /// `/v1`: OpenAI's `{"error": {"message", "type", "param", "code"}}`.
    OpenAi,
}

/// Middleware for JSON endpoints: a request with a body must send it as
/// JSON (415 otherwise). Requests without one (GET, or an empty POST) pass.
pub async fn json_bodies(req: Request, next: Next, shape: Shape) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    match json_content_type(req.headers()) {
        Ok(()) => next.run(req).await,
        Err(error) => refusal(shape == Shape::OpenAi, error),
    }
}

/// Middleware: a 4xx of the API (`/api/`, `/v1/`) answered in plain text
/// (axum's extractors answer a malformed path or query string so) is
/// answered as the API's JSON error instead, naming the field the text names.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let openai = path.starts_with("/v1/");
    let api = openai || path.starts_with("/api/");
    let response = next.run(req).await;
    if !api || !response.status().is_client_error() || !plain_text(response.headers()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let error = explain(parts.status, text.trim());
    let mut out = refusal(openai, error);
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    out
}

fn plain_text(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain"))
}

/// An extractor's plain-text rejection as a sentence, with the field it
/// names (the first name in backquotes: "duplicate field `category`").
fn explain(status: StatusCode, text: &str) -> ApiError {
    let sentence = if let Some(rest) = text.strip_prefix("Failed to deserialize query string: ") {
        format!("the query string does not fit: {rest}")
    } else if let Some(rest) = text.strip_prefix("Invalid URL: ") {
        format!("the URL's path does not fit: {rest}")
    } else if text.is_empty() {
        format!(
            "the request was refused ({})",
            status.canonical_reason().unwrap_or("a client error")
        )
    } else {
        let mut chars = text.chars();
        match chars.next() {
            Some(first) => first.to_lowercase().chain(chars).collect(),
            None => String::new(),
        }
    };
    match named_field(text) {
        Some(field) => ApiError::field(status, field, sentence),
        None => ApiError::new(status, sentence),
    }
}

/// The first name in backquotes that is a field's name.
fn named_field(text: &str) -> Option<String> {
    if text.contains("Content-Type") {
        return Some("Content-Type".into());
    }
    text.split('`')
        .skip(1)
        .step_by(2)
        .find(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn at(text: &str) -> Option<SocketAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn a_loopback_server_answers_to_its_loopback_names_only() {
        let served = at("127.0.0.1:8080");
        for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080"] {
            assert!(host_allowed(host, served, &[]), "{host}");
        }
        for host in [
            "evil.example:8080",
            "127.0.0.1:8081",
            "localhost",
            "127.0.0.1.evil.example:8080",
            "",
        ] {
            assert!(!host_allowed(host, served, &[]), "{host}");
        }
        let allowed = vec![
            allowed_host("Chat.Example.com").unwrap(),
            allowed_host("api.example:8443").unwrap(),
        ];
        assert!(host_allowed("chat.example.com", served, &allowed));
        assert!(host_allowed("chat.example.com:9000", served, &allowed));
        assert!(host_allowed("api.example:8443", served, &allowed));
        assert!(!host_allowed("api.example", served, &allowed));
        assert!(host_allowed("10.0.0.5:80", at("10.0.0.5:80"), &[]));
        assert!(host_allowed("10.0.0.5", at("10.0.0.5:80"), &[]));
        assert!(!host_allowed("localhost:80", at("10.0.0.5:80"), &[]));
    }

    #[test]
    fn a_page_may_call_its_own_server_and_the_configured_origins() {
        assert!(origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080", &[]));
        assert!(origin_allowed("https://chat.example.com", "chat.example.com", &[]));
        assert!(origin_allowed("http://localhost", "localhost:80", &[]));
        assert!(!origin_allowed("http://evil.example", "127.0.0.1:8080", &[]));
        assert!(!origin_allowed("null", "127.0.0.1:8080", &[]));
        let cors = vec![origin("https://App.example.com:443/").unwrap()];
        assert_eq!(cors, vec!["https://app.example.com".to_string()]);
        assert!(origin_allowed("https://app.example.com", "127.0.0.1:8080", &cors));
        assert!(origin("app.example.com").is_err());
        assert!(origin("https://app.example.com/path").is_err());
        assert!(allowed_host("https://chat.example.com").is_err());
    }

    #[test]
    fn a_plain_text_rejection_names_its_field() {
        let error = explain(
            StatusCode::BAD_REQUEST,
            "Failed to deserialize query string: duplicate field `category`",
        );
        assert_eq!(error.body.field.as_deref(), Some("category"));
        assert!(
            error.body.error.starts_with("the query string does not fit"),
            "{}",
            error.body.error
        );
        let error = explain(StatusCode::BAD_REQUEST, "Invalid URL: Invalid UTF-8 in `id`");
        assert_eq!(error.body.field.as_deref(), Some("id"));
    }
}
