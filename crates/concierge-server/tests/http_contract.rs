//! What Schemathesis found, kept: through real HTTP on loopback, a request
//! the OpenAPI document allows is accepted and one it forbids is refused
//! with a JSON error naming the field; the document says what only the
//! running server knows (its agents).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::Runtime;
use concierge_server::HttpApi;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

struct Server {
    base: String,
    http: reqwest::Client,
    stop: oneshot::Sender<()>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    rt: Runtime,
}

impl Server {
    async fn start() -> Self {
        let rt = Runtime::builder()
            .in_memory()
            .toolset(concierge_demo::calculator::toolset())
            .agents(concierge_demo::agents())
            .build()
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(HttpApi::new(rt.clone()).serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            base,
            http: reqwest::Client::new(),
            stop,
            served,
            rt,
        }
    }

    /// POSTs `body` as it is written (JSON or not); the status and the JSON answer.
    async fn post(&self, path: &str, body: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"));
        (status, value)
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.served.await.unwrap().unwrap();
        self.rt.shutdown().await;
    }
}

#[tokio::test]
async fn an_optional_body_may_be_null_but_no_body_is_an_array() {
    let server = Server::start().await;
    let (status, session) = server.post("/api/v1/sessions", "null").await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    let id = session["id"].as_str().unwrap();
    let (status, error) = server.post("/api/v1/sessions", "[null, null]").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert!(error["error"].as_str().unwrap().contains("JSON object"), "{error}");
    let (status, ended) = server.post(&format!("/api/v1/sessions/{id}/end"), "null").await;
    assert_eq!(status, StatusCode::OK, "{ended}");
    server.stop().await;
}

#[tokio::test]
async fn a_malformed_query_string_is_a_json_error_naming_the_parameter() {
    let server = Server::start().await;
    let (_, session) = server.post("/api/v1/sessions", r#"{"agent": "calculator"}"#).await;
    let id = session["id"].as_str().unwrap();
    for path in [
        format!("/api/v1/sessions/{id}/messages?wait=null"),
        format!("/api/v1/sessions/{id}/choose?wait=maybe"),
    ] {
        let (status, error) = server.post(&path, r#"{"text": "5 + 3", "option": 1}"#).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {error}");
        assert_eq!(error["field"], "wait", "{path}: {error}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_option_number_may_be_written_as_a_whole_float() {
    let server = Server::start().await;
    let (_, session) = server.post("/api/v1/sessions", r#"{"agent": "calculator"}"#).await;
    let id = session["id"].as_str().unwrap();
    // 2.0 is a number: the session waits for no choice, so that is the answer.
    let (status, error) = server
        .post(&format!("/api/v1/sessions/{id}/choose"), r#"{"option": 2.0}"#)
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    let (status, error) = server
        .post(&format!("/api/v1/sessions/{id}/choose"), r#"{"option": 2.5}"#)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert_eq!(error["field"], "option", "{error}");
    server.stop().await;
}

#[tokio::test]
async fn the_document_lists_the_agents_and_bounds_what_the_server_checks() {
    let server = Server::start().await;
    let doc: Value = server
        .http
        .get(format!("{}/openapi.json", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let schemas = &doc["components"]["schemas"];
    let agents = schemas["CreateSession"]["properties"]["agent"]["enum"]
        .as_array()
        .unwrap();
    assert!(agents.contains(&json!("calculator")), "{agents:?}");
    assert_eq!(schemas["PostMessage"]["properties"]["text"]["minLength"], 1);
    assert_eq!(schemas["ConfirmRequest"]["then"]["required"], json!(["arguments"]));
    let events = &doc["paths"]["/api/v1/sessions/{id}/events"]["get"];
    let header = events["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Last-Event-ID")
        .unwrap();
    assert!(header["schema"]["pattern"].is_string(), "{header}");
    let sse = &events["responses"]["200"]["content"]["text/event-stream"]["schema"];
    assert_eq!(sse["$ref"], "#/components/schemas/SseMessage", "{sse}");
    // An id the pattern forbids is refused.
    let (_, session) = server.post("/api/v1/sessions", r#"{"agent": "calculator"}"#).await;
    let response = server
        .http
        .get(format!(
            "{}/api/v1/sessions/{}/events",
            server.base,
            session["id"].as_str().unwrap()
        ))
        .header("Last-Event-ID", "null")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    server.stop().await;
}
