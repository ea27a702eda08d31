//! What a run tells the outside, on any engine: usage and cost, and model
//! deltas where the engine streams them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use concierge::config::Price;
use concierge::model::{Model, ModelContext, ModelError, ScriptedModel};
use concierge::{AgentSpec, EventKind, ModelReply, ModelRequest, RunOptions, Runtime};
use futures::StreamExt;
use futures::future::BoxFuture;

use super::{EngineUnderTest, OnEngine};

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

pub async fn usage_and_cost_per_call_run_and_session(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .named("scripted:priced")
        .reply(ModelReply::text("one").with_usage(1_000, 500))
        .reply(ModelReply::text("two").with_usage(2_000, 0));
    let rt = Runtime::builder()
        .agent(AgentSpec::new("a"))
        .model(model)
        .price(
            "scripted:priced",
            Price {
                input: 1.0,
                output: 2.0,
            },
        )
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let out = rt.client("a").unwrap().run("x", session("s")).await.unwrap();
    assert_eq!(out.usage.input_tokens, 1_000);
    assert_eq!(out.usage.cost_usd, Some(0.002));
    let out = rt.client("a").unwrap().run("y", session("s")).await.unwrap();
    assert_eq!(out.usage.cost_usd, Some(0.002));
    let total = rt.session("s").await.unwrap().usage();
    assert_eq!((total.input_tokens, total.output_tokens), (3_000, 500));
    assert!((total.cost_usd.unwrap() - 0.004).abs() < 1e-12);
    // The usage event of each call carries its cost and the run's total.
    let usage: Vec<_> = rt
        .subscribe("s", 1)
        .filter_map(|e| async move {
            match e.unwrap().kind {
                EventKind::Usage { usage, run_total } => Some((usage, run_total)),
                _ => None,
            }
        })
        .take(2)
        .collect()
        .await;
    assert_eq!(usage[0].0.cost_usd, Some(0.002));

    // Without a price the cost is unknown, not zero.
    let rt = Runtime::builder()
        .agent(AgentSpec::new("a"))
        .model(ScriptedModel::new().reply(ModelReply::text("one").with_usage(10, 5)))
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let out = rt.client("a").unwrap().run("x", session("s")).await.unwrap();
    assert_eq!(out.usage.cost_usd, None);
    assert_eq!(
        serde_json::to_value(out.usage).unwrap()["cost_usd"],
        serde_json::Value::Null
    );
}

/// Answers with its pieces, streamed one at a time.
struct Streaming(Vec<String>);

impl Streaming {
    /// "Hello there", in three pieces.
    fn hello() -> Self {
        Self(["Hel", "lo ", "there"].map(String::from).to_vec())
    }

    /// 300 words.
    fn talkative() -> Self {
        Self((0..300).map(|i| format!("w{i} ")).collect())
    }
}

impl Model for Streaming {
    fn name(&self) -> String {
        "scripted:streaming".into()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            if let Some(sink) = &cx.on_delta {
                for piece in &self.0 {
                    sink(piece);
                }
            }
            Ok(ModelReply::text(self.0.concat()))
        })
    }
}

/// A subscriber that reads only once the run is over (far behind the live
/// channel) still gets every delta, in order: it catches up from the
/// session's kept events.
pub async fn a_subscriber_that_reads_late_still_gets_every_delta(engine: &EngineUnderTest) {
    let rt = Runtime::builder()
        .agent(AgentSpec::new("talker").instructions("Talk."))
        .model(Streaming::talkative())
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let mut live = rt.subscribe("s", 1);
    let out = rt.client("talker").unwrap().run("hi", session("s")).await.unwrap();
    let mut deltas = Vec::new();
    while let Some(event) = live.next().await {
        match event.unwrap().kind {
            EventKind::ModelDelta { text } => deltas.push(text),
            EventKind::RunFinished { .. } => break,
            _ => {}
        }
    }
    if EngineUnderTest::STREAMS_MODEL_DELTAS {
        assert_eq!(deltas.len(), 300);
        assert_eq!(Some(deltas.concat()), out.reply, "every delta, in order");
    } else {
        assert!(deltas.is_empty(), "{deltas:?}");
    }
}

pub async fn a_models_deltas_reach_a_live_subscriber_where_the_engine_streams_them(engine: &EngineUnderTest) {
    let rt = Runtime::builder()
        .agent(AgentSpec::new("greeter").instructions("Greet."))
        .model(Streaming::hello())
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let mut live = rt.subscribe("s", 1);
    let out = rt.client("greeter").unwrap().run("hi", session("s")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("Hello there"));
    let mut deltas = Vec::new();
    let mut reply = None;
    // Each delta comes right after the model's request, numbered after it.
    let mut requested = None;
    while let Some(event) = live.next().await {
        let event = event.unwrap();
        let id = event.id();
        match event.kind {
            EventKind::ModelRequested { .. } => requested = Some(id.seq),
            EventKind::ModelDelta { text } => {
                let place = (Some(id.seq), id.delta);
                assert_eq!(place, (requested, u32::try_from(deltas.len()).unwrap() + 1), "{text:?}");
                deltas.push(text);
            }
            EventKind::RunFinished { reply: finished, .. } => {
                reply = finished;
                break;
            }
            _ => requested = None,
        }
    }
    assert_eq!(reply, out.reply, "the whole reply, in the run's last event");
    if EngineUnderTest::STREAMS_MODEL_DELTAS {
        assert_eq!(deltas, ["Hel", "lo ", "there"], "tokens arrive as they are produced");
    } else {
        assert!(deltas.is_empty(), "{deltas:?}");
    }
}
