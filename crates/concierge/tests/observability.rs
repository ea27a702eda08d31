//! What a run tells the outside: streamed deltas (live only), usage and
//! cost, and OpenTelemetry GenAI trace attributes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/observability.rs"]
mod cases;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use concierge::model::{OpenAiCompatible, ScriptedModel};
use concierge::{AgentSpec, EventKind, ModelReply, RunOptions, Runtime};
use embedded::{EngineUnderTest, OnEngine};
use futures::StreamExt;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use wiremock::matchers::{body_partial_json, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

on_the_embedded_engine!(cases, EngineUnderTest::memory();
    usage_and_cost_per_call_run_and_session,
    a_models_deltas_reach_a_live_subscriber_where_the_engine_streams_them,
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

type Fieldset = BTreeMap<String, String>;

/// Records span and event fields.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<BTreeMap<u64, (String, Fieldset)>>>,
    events: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.spans
            .lock()
            .unwrap()
            .insert(id.into_u64(), (attrs.metadata().name().to_string(), fields));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some((_, fields)) = self.spans.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(fields);
    }
}

async fn traced_run(log_prompts: bool) -> Capture {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = Runtime::builder()
        .agent(AgentSpec::new("a").instructions("secret instructions"))
        .model(ScriptedModel::new().reply(ModelReply::text("ok").with_usage(10, 2)))
        .log_prompts(log_prompts)
        .in_memory()
        .build()
        .await
        .unwrap();
    rt.client("a")
        .unwrap()
        .run("the user's private text", session("s"))
        .await
        .unwrap();
    capture
}

#[tokio::test(flavor = "current_thread")]
async fn each_model_call_has_a_span_with_gen_ai_attributes() {
    let capture = traced_run(false).await;
    let spans = capture.spans.lock().unwrap();
    let (_, chat) = spans.values().find(|(name, _)| name == "chat").expect("a chat span");
    assert_eq!(chat["gen_ai.operation.name"], "chat");
    assert_eq!(chat["gen_ai.system"], "scripted");
    assert_eq!(chat["gen_ai.request.model"], "test");
    assert_eq!(chat["gen_ai.usage.input_tokens"], "10");
    assert_eq!(chat["gen_ai.usage.output_tokens"], "2");
    assert_eq!(chat["concierge.session"], "s");
    let everything = format!("{:?} {:?}", *spans, *capture.events.lock().unwrap());
    assert!(
        !everything.contains("private text"),
        "prompts are not logged unless asked"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn prompts_are_logged_only_when_asked() {
    let capture = traced_run(true).await;
    let events = capture.events.lock().unwrap();
    let prompt = events
        .iter()
        .find_map(|e| e.get("gen_ai.prompt"))
        .expect("a prompt event");
    assert!(prompt.contains("the user's private text") && prompt.contains("secret instructions"));
}
