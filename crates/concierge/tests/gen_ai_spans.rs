//! OpenTelemetry GenAI trace attributes of a model call, and prompts in
//! traces only when asked. Alone in their test binary and in one test: a
//! thread's `tracing` subscriber shares the callsites' cached interest with
//! every other thread of the process, so tests running beside them could
//! hide their spans.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, ModelReply, RunOptions, Runtime};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
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
async fn each_model_call_has_a_span_with_gen_ai_attributes_and_prompts_only_when_asked() {
    let capture = traced_run(false).await;
    {
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

    let capture = traced_run(true).await;
    let events = capture.events.lock().unwrap();
    let prompt = events
        .iter()
        .find_map(|e| e.get("gen_ai.prompt"))
        .expect("a prompt event");
    assert!(prompt.contains("the user's private text") && prompt.contains("secret instructions"));
}
