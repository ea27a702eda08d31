//! What a run tells the outside: streamed deltas (live only), usage and
//! cost (the GenAI trace attributes are in `gen_ai_spans.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/observability.rs"]
mod cases;

use concierge::model::OpenAiCompatible;
use concierge::{AgentSpec, EventKind, RunOptions, Runtime};
use embedded::{EngineUnderTest, OnEngine};
use futures::StreamExt;
use serde_json::json;
use wiremock::matchers::{body_partial_json, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

on_the_embedded_engine!(cases, EngineUnderTest::memory();
    usage_and_cost_per_call_run_and_session,
    a_models_deltas_reach_a_live_subscriber_where_the_engine_streams_them,
    a_subscriber_that_reads_late_still_gets_every_delta,
);

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

#[tokio::test]
async fn model_deltas_are_live_events_and_are_not_journaled() {
    let server = MockServer::start().await;
    let mut stream = String::new();
    for piece in ["Hel", "lo ", "there"] {
        stream += &format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": piece}}]})
        );
    }
    stream += &format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 3}})
    );
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(stream),
        )
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let build = || {
        Runtime::builder()
            .agent(AgentSpec::new("greeter").instructions("Greet."))
            .model(OpenAiCompatible::new("m").base_url(format!("{}/v1", server.uri())))
            .sqlite(dir.path().join("d.db"))
    };
    let rt = build().build().await.unwrap();
    let mut live = rt.subscribe("s", 1);
    let out = rt.client("greeter").unwrap().run("hi", session("s")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("Hello there"));
    let mut deltas = Vec::new();
    let mut durable = Vec::new();
    while let Some(event) = live.next().await {
        let event = event.unwrap();
        match &event.kind {
            EventKind::ModelDelta { text } => deltas.push(text.clone()),
            EventKind::RunFinished { .. } => {
                durable.push(event);
                break;
            }
            _ => durable.push(event),
        }
    }
    assert_eq!(deltas, ["Hel", "lo ", "there"], "tokens arrive as they are produced");
    drop(rt);
    let rt = build().build().await.unwrap();
    let stored: Vec<_> = rt
        .subscribe("s", 1)
        .take(durable.len())
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert_eq!(stored, durable, "the journal has the final reply, not the deltas");
}
