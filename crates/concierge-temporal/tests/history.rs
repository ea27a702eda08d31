//! What sessions cost in Temporal's history, read back from a real dev
//! server (ignored: run with
//! `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal --test history -- --ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;

use std::time::{Duration, Instant};

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, ModelReply, RunOptions, RunStatus, Runtime, RuntimeBuilder, SessionId, tool};
use concierge_temporal::{HistoryCost, ModelCalls, Temporal, TemporalConfig, Workers, history_cost};
use schemars::JsonSchema;
use serde::Deserialize;
use support::DevServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_sessions_history_is_counted_by_workflow_and_by_event_type() {
    let server = DevServer::start().await;
    let config = server.config("cost");
    // The calculator on its rules: one tool call per turn, no model.
    let rt = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let calculator = rt.client("calculator").unwrap();
    for (session, turns) in [("h1", 2), ("h2", 1)] {
        for n in 0..turns {
            let out = calculator
                .run(format!("calculate {n} + 3"), RunOptions::new().session_id(session))
                .await
                .unwrap();
            assert_eq!(out.status, RunStatus::Completed);
        }
    }

    let sessions = [SessionId::new("h1"), SessionId::new("h2")];
    let both = history_cost(&config, &sessions, true).await.unwrap();
    let first = history_cost(&config, &sessions[..1], false).await.unwrap();
    assert_eq!(both.workflows, 2);
    assert!(first.events > 0 && first.bytes > 0, "{first:?}");
    assert!(
        both.events > first.events && both.bytes > first.bytes,
        "{both:?} {first:?}"
    );
    assert!(first.by_type.is_empty(), "types are counted only when asked");
    // The types are the first session's, every event counted once.
    assert_eq!(both.by_type.values().sum::<u64>(), first.events, "{:?}", both.by_type);
    assert_eq!(both.by_type.get("WORKFLOW_EXECUTION_STARTED"), Some(&1));
    assert_eq!(
        both.by_type.get("ACTIVITY_TASK_SCHEDULED"),
        Some(&2),
        "{:?}",
        both.by_type
    );

    let missing = history_cost(&config, &[SessionId::new("nobody")], false)
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("session nobody"), "{missing}");

    rt.shutdown().await;
    server.stop().await;
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Adds two integers.
#[tool(read_only)]
async fn add(args: AddArgs) -> Result<i64, String> {
    Ok(args.a + args.b)
}

/// A model that, for each question, calls `add` then answers.
fn adding_model(turns: usize) -> ScriptedModel {
    (0..turns).fold(ScriptedModel::new(), |model, _| {
        model
            .reply(ModelReply::tool_call("add", r#"{"a": 2, "b": 3}"#))
            .reply(ModelReply::text("It is 5."))
    })
}

fn adder(model: &ScriptedModel, config: TemporalConfig, workers: Workers) -> RuntimeBuilder {
    Runtime::builder()
        .tool(Add)
        .agent(AgentSpec::new("adder").instructions("Add.").tool("add"))
        .model(model.clone())
        .engine(Temporal::new(config).workers(workers))
}

async fn cost(config: &TemporalConfig, session: &str) -> HistoryCost {
    history_cost(config, &[SessionId::new(session)], true).await.unwrap()
}

fn count(cost: &HistoryCost, event: &str) -> u64 {
    cost.by_type.get(event).copied().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn local_model_calls_are_markers_and_a_session_keeps_how_it_started() {
    let server = DevServer::start().await;
    let model = adding_model(4);
    let local = server
        .config("local")
        .model_calls(ModelCalls::Local)
        .continue_after_events(12);
    let rt = adder(&model, local.clone(), Workers::all()).build().await.unwrap();
    let adder_client = rt.client("adder").unwrap();

    // A turn asks the model twice around one tool call: the model calls
    // are markers, the tool call is still an activity on the agent's queue.
    let out = adder_client
        .run("2 + 3?", RunOptions::new().session_id("m"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("It is 5."));
    let first = cost(&local, "m").await;
    assert_eq!(count(&first, "MARKER_RECORDED"), 2, "{:?}", first.by_type);
    assert_eq!(count(&first, "ACTIVITY_TASK_SCHEDULED"), 1, "{:?}", first.by_type);

    // Past 12 events the workflow continues as new at its next idle point;
    // the new run still calls the model locally.
    let deadline = Instant::now() + Duration::from_secs(30);
    while cost(&local, "m").await.events >= first.events {
        assert!(Instant::now() < deadline, "the session never continued as new");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    adder_client
        .run("2 + 3 again?", RunOptions::new().session_id("m"))
        .await
        .unwrap();
    let continued = cost(&local, "m").await;
    assert_eq!(count(&continued, "WORKFLOW_EXECUTION_STARTED"), 1);
    assert_eq!(count(&continued, "MARKER_RECORDED"), 2, "{:?}", continued.by_type);
    assert_eq!(
        count(&continued, "ACTIVITY_TASK_SCHEDULED"),
        1,
        "{:?}",
        continued.by_type
    );

    // A session started by a client that calls models by activity keeps
    // doing so when this client sends its next turn (its history replays).
    let by_activity = local
        .clone()
        .model_calls(ModelCalls::Activity)
        .continue_after_events(2_000);
    let other = adder(&model, by_activity, Workers::none()).build().await.unwrap();
    other
        .client("adder")
        .unwrap()
        .run("2 + 3?", RunOptions::new().session_id("a"))
        .await
        .unwrap();
    let out = adder_client
        .run("2 + 3 again?", RunOptions::new().session_id("a"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("It is 5."));
    let kept = cost(&local, "a").await;
    assert_eq!(count(&kept, "MARKER_RECORDED"), 0, "{:?}", kept.by_type);
    assert_eq!(count(&kept, "ACTIVITY_TASK_SCHEDULED"), 6, "{:?}", kept.by_type);
    assert_eq!(model.requests().len(), 8);

    other.shutdown().await;
    rt.shutdown().await;
    server.stop().await;
}
