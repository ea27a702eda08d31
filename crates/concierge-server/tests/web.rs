//! The web chat as the server serves it (the page, its files, their content
//! types and cache validation), and the `?after=` form of an event
//! stream's resume point that a reloaded page uses. (The page itself is
//! tested in a browser: `tests/browser/`.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::Runtime;
use concierge_server::HttpApi;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

struct Server {
    base: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::builder()
            .sqlite(dir.path().join("concierge.db"))
            .toolset(concierge_demo::calculator::toolset())
            .agents(concierge_demo::agents())
            .build()
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(HttpApi::new(rt).serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            base,
            http: reqwest::Client::new(),
            stop: Some(stop),
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A session of the calculator that ran one turn; its id and last event id.
    async fn finished_session(&self) -> (String, u64) {
        let created: Value = self
            .http
            .post(self.url("/api/v1/sessions"))
            .json(&json!({"agent": "calculator"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["id"].as_str().unwrap().to_string();
        let response = self
            .http
            .post(self.url(&format!("/api/v1/sessions/{id}/messages?wait=true")))
            .json(&json!({"text": "calculate 2 + 2"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let view: Value = self
            .http
            .get(self.url(&format!("/api/v1/sessions/{id}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let last = view["last_event_id"].as_str().unwrap().parse().unwrap();
        (id, last)
    }

    /// The ids of the session's events from a stream opened with `query`
    /// (and `Last-Event-ID: header`), up to the event `last`.
    async fn ids(&self, session: &str, query: &str, header: Option<&str>, last: u64) -> Vec<u64> {
        let mut request = self
            .http
            .get(self.url(&format!("/api/v1/sessions/{session}/events{query}")));
        if let Some(header) = header {
            request = request.header("Last-Event-ID", header);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut stream = response.bytes_stream().eventsource();
        let mut ids = Vec::new();
        while let Some(event) = stream.next().await {
            let id: u64 = event.unwrap().id.parse().unwrap();
            ids.push(id);
            if id == last {
                break;
            }
        }
        ids
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[tokio::test]
async fn the_page_and_its_files_are_served_with_their_types_and_validators() {
    let server = Server::start().await;
    let page = server.http.get(server.url("/")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert_eq!(page.headers()["cache-control"], "no-cache");
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    let etag = page.headers()["etag"].to_str().unwrap().to_string();
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<script type="module" src="/assets/app.js"></script>"#));

    // The browser asks again with the tag it has: 304, no body.
    let again = server
        .http
        .get(server.url("/"))
        .header("If-None-Match", etag.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()["etag"], etag.as_str());
    assert!(again.bytes().await.unwrap().is_empty());

    for (file, content_type) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("conversation.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ] {
        let response = server
            .http
            .get(server.url(&format!("/assets/{file}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{file}");
        assert_eq!(response.headers()["content-type"], content_type, "{file}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        assert!(!response.bytes().await.unwrap().is_empty());
    }
    // Every module the page imports is served.
    let app = server.http.get(server.url("/assets/app.js")).send().await.unwrap();
    let app = app.text().await.unwrap();
    for line in app.lines().filter(|l| l.starts_with("import ")) {
        let file = line.split("'./").nth(1).unwrap().split('\'').next().unwrap();
        let response = server
            .http
            .get(server.url(&format!("/assets/{file}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{file}");
    }

    let missing = server.http.get(server.url("/assets/nope.js")).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(missing.text().await.unwrap().contains("/assets/nope.js"));
    // The API's own routes are untouched by the page's.
    let health = server.http.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn a_stream_resumes_after_the_id_in_the_query_and_the_header_wins() {
    let server = Server::start().await;
    let (session, last) = server.finished_session().await;
    assert!(last > 6, "a run has more events than that: {last}");

    let all = server.ids(&session, "", None, last).await;
    assert_eq!(all, (1..=last).collect::<Vec<_>>());
    let after = server.ids(&session, "?after=3", None, last).await;
    assert_eq!(after, (4..=last).collect::<Vec<_>>());
    // A browser's own reconnect sends the header with a later id than its URL.
    let both = server.ids(&session, "?after=2", Some("5"), last).await;
    assert_eq!(both, (6..=last).collect::<Vec<_>>());

    let bad = server
        .http
        .get(server.url(&format!("/api/v1/sessions/{session}/events?after=twelve")))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["field"], "after");
    assert!(body["error"].as_str().unwrap().contains("12.3"), "{body}");
    server.stop().await;
}

#[tokio::test]
async fn the_openapi_document_describes_the_after_parameter() {
    let server = Server::start().await;
    let doc: Value = server
        .http
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let params = doc["paths"]["/api/v1/sessions/{id}/events"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let after = params.iter().find(|p| p["name"] == "after").unwrap();
    assert_eq!(after["in"], "query");
    assert!(
        params
            .iter()
            .any(|p| p["name"] == "Last-Event-ID" && p["in"] == "header")
    );
    server.stop().await;
}
