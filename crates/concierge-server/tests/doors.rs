//! The server's doors through real HTTP on loopback: `/metrics` behind the
//! tokens, a token in the URL only on event streams, JSON bodies only, the
//! Host and Origin checks against other web pages and DNS rebinding, the
//! connection timeouts and cap, and every malformed query as a JSON error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use concierge::engine::TracingHooks;
use concierge::{AgentSpec, Route, Rules, Runtime, Tool, ToolContext, ToolError, ToolSpec};
use concierge_server::TokenConfig;
use concierge_server::metrics::Metrics;
use concierge_server::{HttpApi, Tokens};
use futures::StreamExt;
use reqwest::StatusCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long anything the server should do by itself may take, at most:
/// generous, so that a slow machine does not fail a test.
const BOUND: Duration = Duration::from_secs(30);

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// Books a day off: counts its calls (what a page on another site must not
/// be able to make happen).
struct BookPto(Arc<AtomicUsize>);

impl Tool for BookPto {
    type Args = Nothing;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("book_pto", "Books a day off.", concierge::tool::schema_for::<Nothing>()).annotations(
            concierge::ToolAnnotations {
                read_only: true,
                ..Default::default()
            },
        )
    }

    async fn call(&self, _args: Nothing, _cx: ToolContext) -> Result<Value, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(json!("Booked."))
    }
}

fn hr() -> AgentSpec {
    AgentSpec::new("hr").tool("book_pto").rules(
        Rules::new()
            .route(Route::tool("book_pto", json!({})).keywords(["pto"]))
            .answer("{result}")
            .fallback("HR here."),
    )
}

const TOKEN: &str = "doors-token-1";

fn token_config() -> TokenConfig {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(TOKEN.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    TokenConfig {
        hash: format!("sha256:{hex}"),
        tenant: "acme".into(),
        user: "jordan".into(),
    }
}

fn tokens() -> Tokens {
    Tokens::from_config(&[token_config()]).unwrap()
}

struct Server {
    addr: SocketAddr,
    base: String,
    http: reqwest::Client,
    booked: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<std::io::Result<()>>>,
    rt: Runtime,
}

impl Server {
    async fn start(api: impl FnOnce(HttpApi) -> HttpApi) -> Self {
        Self::with_metrics(None, api).await
    }

    async fn with_metrics(metrics: Option<Arc<Metrics>>, api: impl FnOnce(HttpApi) -> HttpApi) -> Self {
        let booked = Arc::new(AtomicUsize::new(0));
        let mut builder = Runtime::builder()
            .in_memory()
            .tool(BookPto(Arc::clone(&booked)))
            .agent(hr());
        if let Some(metrics) = &metrics {
            builder = builder.hooks(metrics.hooks(TracingHooks::default()));
        }
        let rt = builder.build().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let mut server = HttpApi::new(rt.clone());
        if let Some(metrics) = metrics {
            server = server.metrics(metrics);
        }
        let served = tokio::spawn(api(server).serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            addr,
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
            booked,
            stop: Some(stop),
            served: Some(served),
            rt,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            tokio::time::timeout(BOUND, served)
                .await
                .expect("the server stops")
                .unwrap()
                .unwrap();
        }
        self.rt.shutdown().await;
    }
}

/// A response's status and its body as JSON (a string if it is not JSON).
async fn read(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// Sends `request` as it is on a new connection and reads the answer to the
/// end (the request says `Connection: close`): its status and its body as JSON.
async fn raw(addr: SocketAddr, request: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    tokio::time::timeout(BOUND, stream.read_to_end(&mut bytes))
        .await
        .expect("the server answers")
        .unwrap();
    let text = String::from_utf8_lossy(&bytes).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {text:?}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (
        status,
        serde_json::from_str(body).unwrap_or(Value::String(body.to_string())),
    )
}

/// A request with `host` as its Host header.
fn request(method: &str, path: &str, host: &str, headers: &[(&str, &str)], body: &str) -> String {
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Whether the server closes `stream` by itself (reading up to the end;
/// whatever it answers before closing is read past).
async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    let until = tokio::time::Instant::now() + BOUND;
    loop {
        match tokio::time::timeout_at(until, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

// A. /metrics

#[tokio::test]
async fn metrics_need_a_token_when_tokens_are_configured_and_not_on_their_own_address() {
    let metrics_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics_addr = metrics_listener.local_addr().unwrap();
    let server = Server::with_metrics(Some(Arc::new(Metrics::new())), |api| {
        api.tokens(tokens()).metrics_listener(metrics_listener)
    })
    .await;
    let (status, body) = read(server.http.get(server.url("/metrics")).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["field"], "Authorization", "{body}");
    let (status, _) = read(
        server
            .http
            .get(server.url("/metrics"))
            .bearer_auth("not-a-token")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let response = server
        .http
        .get(server.url("/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.text().await.unwrap().ends_with("# EOF\n"));

    // Its own address: no token, /metrics only, and only to its own name.
    let response = server
        .http
        .get(format!("http://{metrics_addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let kind = response.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let (status, body) = read(
        server
            .http
            .get(format!("http://{metrics_addr}/api/v1/sessions"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = raw(metrics_addr, &request("GET", "/metrics", "evil.example", &[], "")).await;
    assert_eq!(status, 421, "{body}");
    server.stop().await;
}

// B. ?access_token=

#[tokio::test]
async fn a_token_in_the_url_is_taken_on_event_streams_only() {
    let server = Server::start(|api| api.tokens(tokens())).await;
    let response = server
        .http
        .post(server.url("/api/v1/sessions"))
        .bearer_auth(TOKEN)
        .json(&json!({"id": "q1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);

    // POST, a GET that is not a stream, the OpenAI endpoint: refused even
    // with a valid token in the URL, and even with a header as well.
    for (method, path) in [
        (reqwest::Method::POST, "/api/v1/sessions"),
        (reqwest::Method::POST, "/api/v1/sessions/q1/messages"),
        (reqwest::Method::GET, "/api/v1/sessions"),
        (reqwest::Method::GET, "/api/v1/sessions/q1"),
        (reqwest::Method::GET, "/v1/models"),
    ] {
        let url = server.url(&format!("{path}?access_token={TOKEN}"));
        let mut request = server.http.request(method.clone(), url.as_str());
        if method == reqwest::Method::POST {
            request = request.json(&json!({"text": "book pto"}));
        }
        let (status, body) = read(request.send().await.unwrap()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {body}");
        assert_eq!(body["field"], "access_token", "{body}");
        assert!(
            body["error"].as_str().unwrap().contains("Authorization: Bearer"),
            "{body}"
        );
        let (status, _) = read(
            server
                .http
                .request(method.clone(), url.as_str())
                .bearer_auth(TOKEN)
                .json(&json!({"text": "book pto"}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} with a header too");
    }
    assert_eq!(server.booked.load(Ordering::SeqCst), 0);

    // The event stream takes it (a browser's EventSource cannot send headers).
    let response = server
        .http
        .get(server.url(&format!("/api/v1/sessions/q1/events?access_token={TOKEN}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    drop(response);
    server.stop().await;
}

// C1. JSON bodies only

#[tokio::test]
async fn a_body_that_is_not_said_to_be_json_is_refused_with_415() {
    let server = Server::start(|api| api).await;
    let response = server
        .http
        .post(server.url("/api/v1/sessions"))
        .json(&json!({"id": "t1", "agent": "hr"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);

    // What a page on another site can send without asking first: the
    // three requests that booked PTO, then variants.
    let attacks: [(&str, Option<&str>, &str); 6] = [
        ("/api/v1/sessions", Some("text/plain"), "{}"),
        (
            "/api/v1/sessions/t1/messages",
            Some("text/plain;charset=UTF-8"),
            r#"{"text":"book pto"}"#,
        ),
        (
            "/api/v1/sessions/t1/messages?wait=true",
            Some("text/plain"),
            r#"{"text":"yes"}"#,
        ),
        (
            "/api/v1/sessions/t1/messages",
            Some("application/x-www-form-urlencoded"),
            r#"{"text":"book pto"}"#,
        ),
        (
            "/api/v1/sessions/t1/messages",
            Some("multipart/form-data; boundary=x"),
            r#"{"text":"book pto"}"#,
        ),
        ("/api/v1/sessions/t1/messages", None, r#"{"text":"book pto"}"#),
    ];
    for (path, kind, body) in attacks {
        let mut request = server.http.post(server.url(path)).body(body);
        if let Some(kind) = kind {
            request = request.header("content-type", kind);
        }
        let (status, answer) = read(request.send().await.unwrap()).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{path} {kind:?}: {answer}");
        assert_eq!(answer["field"], "Content-Type", "{answer}");
        assert!(
            answer["error"].as_str().unwrap().contains("application/json"),
            "{answer}"
        );
    }
    for (path, body) in [
        ("/api/v1/agui", json!({})),
        ("/api/v1/sessions/t1/confirm", json!({})),
        ("/api/v1/sessions/t1/choose", json!({"option": 1})),
        ("/api/v1/sessions/t1/end", json!({})),
    ] {
        let (status, answer) = read(
            server
                .http
                .post(server.url(path))
                .header("content-type", "text/plain")
                .body(body.to_string())
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{path}: {answer}");
        assert_eq!(answer["field"], "Content-Type", "{answer}");
    }
    // The OpenAI endpoint says it in OpenAI's shape.
    let (status, answer) = read(
        server
            .http
            .post(server.url("/v1/chat/completions"))
            .header("content-type", "text/plain")
            .body(json!({"model": "hr", "messages": [{"role": "user", "content": "book pto"}]}).to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{answer}");
    assert_eq!(answer["error"]["param"], "Content-Type", "{answer}");
    assert_eq!(server.booked.load(Ordering::SeqCst), 0, "nothing was booked");
    let (status, session) = read(server.http.get(server.url("/api/v1/sessions/t1")).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!session.to_string().contains("book pto"), "{session}");

    // JSON, with parameters or as a +json type, and an empty optional body.
    let (status, answer) = read(
        server
            .http
            .post(server.url("/api/v1/sessions/t1/messages?wait=true"))
            .header("content-type", "application/json; charset=utf-8")
            .body(r#"{"text":"book pto"}"#)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(server.booked.load(Ordering::SeqCst), 1);
    let (status, answer) = read(
        server
            .http
            .post(server.url("/api/v1/sessions"))
            .header("content-type", "application/vnd.concierge+json")
            .body(r#"{"id": "t2"}"#)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (status, answer) = read(server.http.post(server.url("/api/v1/sessions")).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (status, answer) = read(
        server
            .http
            .post(server.url("/api/v1/sessions/t2/end"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    server.stop().await;
}

// C2. Host

#[tokio::test]
async fn a_server_without_tokens_answers_only_to_its_own_names() {
    let server = Server::start(|api| api).await;
    let port = server.addr.port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = raw(server.addr, &request("GET", "/api/v1/sessions", &host, &[], "")).await;
        assert_eq!(status, 200, "{host}: {body}");
    }
    // A page of evil.example whose name now resolves to 127.0.0.1 (DNS
    // rebinding) still sends its own name.
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
    ] {
        let (status, body) = raw(
            server.addr,
            &request(
                "POST",
                "/api/v1/sessions",
                &host,
                &[("content-type", "application/json")],
                "{}",
            ),
        )
        .await;
        assert_eq!(status, 421, "{host}: {body}");
        assert_eq!(body["field"], "Host", "{body}");
        assert!(body["error"].as_str().unwrap().contains("allowed_hosts"), "{body}");
        let (status, body) = raw(server.addr, &request("GET", "/v1/models", &host, &[], "")).await;
        assert_eq!(status, 421, "{body}");
        assert_eq!(body["error"]["param"], "Host", "{body}");
    }
    // /healthz answers whatever the name.
    let (status, body) = raw(server.addr, &request("GET", "/healthz", "evil.example", &[], "")).await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;

    // Configured names are let in too.
    let server = Server::start(|api| api.allowed_hosts(["chat.example.com"]).unwrap()).await;
    let (status, body) = raw(
        server.addr,
        &request("GET", "/api/v1/sessions", "chat.example.com", &[], ""),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = raw(
        server.addr,
        &request("GET", "/api/v1/sessions", "evil.example", &[], ""),
    )
    .await;
    assert_eq!(status, 421);
    server.stop().await;
}

#[tokio::test]
async fn a_server_with_tokens_checks_the_host_only_once_names_are_configured() {
    let auth = format!("Bearer {TOKEN}");
    let server = Server::start(|api| api.tokens(tokens())).await;
    let (status, body) = raw(
        server.addr,
        &request(
            "GET",
            "/api/v1/sessions",
            "chat.example.com",
            &[("authorization", &auth)],
            "",
        ),
    )
    .await;
    assert_eq!(status, 200, "behind a proxy, under its public name: {body}");
    server.stop().await;

    let server = Server::start(|api| api.tokens(tokens()).allowed_hosts(["chat.example.com"]).unwrap()).await;
    let (status, body) = raw(
        server.addr,
        &request(
            "GET",
            "/api/v1/sessions",
            "chat.example.com",
            &[("authorization", &auth)],
            "",
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = raw(
        server.addr,
        &request(
            "GET",
            "/api/v1/sessions",
            "evil.example",
            &[("authorization", &auth)],
            "",
        ),
    )
    .await;
    assert_eq!(status, 421, "{body}");
    server.stop().await;
}

// C3. Origin

#[tokio::test]
async fn pages_of_other_origins_are_refused_and_configured_ones_get_cors() {
    let server = Server::start(|api| api).await;
    let own = server.base.clone();
    // The web chat, served by this server: same origin, JSON.
    let (status, body) = read(
        server
            .http
            .post(server.url("/api/v1/sessions"))
            .header("origin", own.as_str())
            .json(&json!({"id": "o1", "agent": "hr"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = read(
        server
            .http
            .post(server.url("/api/v1/sessions/o1/messages?wait=true"))
            .header("origin", own.as_str())
            .json(&json!({"text": "book pto"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(server.booked.load(Ordering::SeqCst), 1);
    // Another site's page: refused, JSON or not, GET or POST.
    for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
        let (status, body) = read(
            server
                .http
                .post(server.url("/api/v1/sessions/o1/messages?wait=true"))
                .header("origin", origin)
                .json(&json!({"text": "book pto"}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}: {body}");
        assert_eq!(body["field"], "Origin", "{body}");
        let (status, _) = read(
            server
                .http
                .get(server.url("/api/v1/sessions"))
                .header("origin", origin)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}");
    }
    assert_eq!(server.booked.load(Ordering::SeqCst), 1);
    let (status, _) = read(
        server
            .http
            .get(server.url("/healthz"))
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;

    // A configured origin: its preflight is answered, its requests let in.
    let server = Server::start(|api| api.cors_origins(["https://app.example.com"]).unwrap()).await;
    let preflight = server
        .http
        .request(reqwest::Method::OPTIONS, server.url("/api/v1/sessions"))
        .header("origin", "https://app.example.com")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let response = server
        .http
        .post(server.url("/api/v1/sessions"))
        .header("origin", "https://app.example.com")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let preflight = server
        .http
        .request(reqwest::Method::OPTIONS, server.url("/api/v1/sessions"))
        .header("origin", "http://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), StatusCode::FORBIDDEN);
    assert!(preflight.headers().get("access-control-allow-origin").is_none());
    server.stop().await;
}

// D. Timeouts and the connection cap

#[tokio::test]
async fn half_sent_requests_silent_and_idle_connections_and_stalled_bodies_are_closed() {
    let server = Server::start(|api| {
        api.header_read_timeout(Duration::from_secs(1))
            .idle_timeout(Duration::from_secs(1))
    })
    .await;
    let host = format!("127.0.0.1:{}", server.addr.port());
    let mut half_sent = TcpStream::connect(server.addr).await.unwrap();
    half_sent
        .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Slow: ").as_bytes())
        .await
        .unwrap();
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let mut idle = TcpStream::connect(server.addr).await.unwrap();
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut stalled = TcpStream::connect(server.addr).await.unwrap();
    stalled
        .write_all(
            format!(
                "POST /api/v1/sessions HTTP/1.1\r\nHost: {host}\r\ncontent-type: application/json\r\nContent-Length: 100\r\n\r\n{{\"id\""
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    assert!(closed_by_server(&mut half_sent).await, "a half-sent request");
    assert!(closed_by_server(&mut silent).await, "a silent connection");
    assert!(closed_by_server(&mut idle).await, "an idle kept-alive connection");
    let mut answer = Vec::new();
    tokio::time::timeout(BOUND, stalled.read_to_end(&mut answer))
        .await
        .expect("a stalled body is answered")
        .ok();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // The server still serves.
    let response = server.http.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn past_the_cap_a_new_connection_waits_until_one_closes() {
    let server = Server::start(|api| {
        api.max_connections(2)
            .header_read_timeout(Duration::from_secs(600))
            .idle_timeout(Duration::from_secs(600))
    })
    .await;
    let first = TcpStream::connect(server.addr).await.unwrap();
    let _second = TcpStream::connect(server.addr).await.unwrap();
    let host = format!("127.0.0.1:{}", server.addr.port());
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    third
        .write_all(request("GET", "/healthz", &host, &[], "").as_bytes())
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let early = tokio::time::timeout(Duration::from_millis(1500), third.read(&mut buf)).await;
    assert!(early.is_err(), "served past the cap: {early:?}");
    drop(first);
    let mut answer = Vec::new();
    tokio::time::timeout(BOUND, third.read_to_end(&mut answer))
        .await
        .expect("served once a connection closed")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn an_event_stream_outlives_the_idle_timeout_and_ends_at_shutdown() {
    let server = Server::start(|api| {
        api.header_read_timeout(Duration::from_secs(1))
            .idle_timeout(Duration::from_secs(1))
    })
    .await;
    let response = server
        .http
        .post(server.url("/api/v1/sessions"))
        .json(&json!({"id": "e1", "agent": "hr"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let stream = server
        .http
        .get(server.url("/api/v1/sessions/e1/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let mut chunks = stream.bytes_stream();
    // Three idle timeouts, with no event.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let response = server
        .http
        .post(server.url("/api/v1/sessions/e1/messages"))
        .json(&json!({"text": "book pto"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let mut seen = String::new();
    let finished = tokio::time::timeout(BOUND, async {
        while let Some(chunk) = chunks.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if seen.contains("event: run_finished") {
                return true;
            }
        }
        false
    })
    .await
    .expect("the run's events arrive");
    assert!(finished, "the stream ended early: {seen}");
    // Shutdown ends it.
    let Server { stop, served, rt, .. } = server;
    let _ = stop.unwrap().send(());
    let ended = tokio::time::timeout(BOUND, async {
        while let Some(chunk) = chunks.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream ends at shutdown");
    tokio::time::timeout(BOUND, served.unwrap())
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
    rt.shutdown().await;
}

// E. Query strings and paths

#[tokio::test]
async fn a_malformed_query_or_path_is_a_json_error_naming_the_field() {
    let server = Server::start(|api| api).await;
    let response = server
        .http
        .post(server.url("/api/v1/sessions"))
        .json(&json!({"id": "m1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let cases = [
        (reqwest::Method::GET, "/api/v1/tools?category=a&category=b", "category"),
        (
            reqwest::Method::POST,
            "/api/v1/sessions/m1/messages?wait=true&wait=false",
            "wait",
        ),
        (reqwest::Method::POST, "/api/v1/sessions/m1/messages?wait=maybe", "wait"),
        (
            reqwest::Method::GET,
            "/api/v1/sessions/m1/events?after=a&after=b",
            "after",
        ),
        (reqwest::Method::GET, "/api/v1/sessions/%FF", "id"),
    ];
    for (method, path, field) in cases {
        let response = server
            .http
            .request(method.clone(), server.url(path))
            .json(&json!({"text": "hi"}))
            .send()
            .await
            .unwrap();
        let kind = response.headers()["content-type"].to_str().unwrap().to_string();
        let (status, body) = read(response).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{method} {path}: {body}");
        assert!(kind.starts_with("application/json"), "{method} {path}: {kind} {body}");
        assert_eq!(body["field"], field, "{method} {path}: {body}");
        assert!(!body["error"].as_str().unwrap().is_empty(), "{body}");
    }
    server.stop().await;
}
