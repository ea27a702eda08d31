//! What sessions cost in Temporal's history, read back from a real dev
//! server (ignored: run with
//! `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal --test history -- --ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;
#[path = "support/workflows.rs"]
mod workflows;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, ModelReply, RunOptions, RunStatus, Runtime, RuntimeBuilder, SessionId, tool};
use concierge_temporal::{HistoryCost, ModelCalls, Temporal, TemporalConfig, Workers, connect, history_cost};
use schemars::JsonSchema;
use serde::Deserialize;
use support::DevServer;
use workflows::runs_by_type;

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

/// A model that, for each turn, calls `add` as many times as that turn
/// asks, then answers.
fn adding_model(calls_per_turn: &[usize]) -> ScriptedModel {
    calls_per_turn.iter().fold(ScriptedModel::new(), |model, &calls| {
        (0..calls)
            .fold(model, |model, _| {
                model.reply(ModelReply::tool_call("add", r#"{"a": 2, "b": 3}"#))
            })
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

fn count(by_type: &BTreeMap<String, u64>, event: &str) -> u64 {
    by_type.get(event).copied().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn local_model_calls_are_markers_and_continue_as_new_keeps_them() {
    let server = DevServer::start().await;
    // A long first turn (three tool calls), then a short one.
    let model = adding_model(&[3, 1]);
    // The workflow decides at an idle point from the history's length when
    // its last workflow task started: the long turn's last task starts past
    // 24 events, the short turn's (in a continued run, its update in a
    // second task) at about 14.
    let local = server
        .config("local")
        .model_calls(ModelCalls::Local)
        .continue_after_events(20);
    let rt = adder(&model, local.clone(), Workers::all()).build().await.unwrap();
    let adder_client = rt.client("adder").unwrap();
    let client = connect(&local).await.unwrap();

    // The model calls are markers; the tool calls are still activities on
    // the agent's queue.
    let out = adder_client
        .run("2 + 3, three times?", RunOptions::new().session_id("m"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("It is 5."));

    // Past 20 events the workflow continues as new at its idle point, the
    // end of the long turn.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut runs = runs_by_type(&client, &local, "m").await;
    while runs.len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the session never continued as new: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        runs = runs_by_type(&client, &local, "m").await;
    }
    assert_eq!(count(&runs[0], "MARKER_RECORDED"), 4, "{runs:?}");
    assert_eq!(count(&runs[0], "ACTIVITY_TASK_SCHEDULED"), 3, "{runs:?}");

    // The new run still calls the model locally, and the conversation goes
    // on in it (the short turn does not reach the limit).
    let out = adder_client
        .run("2 + 3 again?", RunOptions::new().session_id("m"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("It is 5."));
    let runs = runs_by_type(&client, &local, "m").await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(count(&runs[1], "MARKER_RECORDED"), 2, "{runs:?}");
    assert_eq!(count(&runs[1], "ACTIVITY_TASK_SCHEDULED"), 1, "{runs:?}");
    // Both turns, every call: 8 messages, then 4.
    let history = rt.history("m").await.unwrap();
    assert_eq!(history.len(), 12, "{history:?}");

    rt.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_session_keeps_the_way_it_started_calling_its_model() {
    let server = DevServer::start().await;
    let model = adding_model(&[1, 1]);
    // This process runs the workers and calls models locally; the other is a
    // client only, calling them by activity.
    let local = server.config("kept").model_calls(ModelCalls::Local);
    let rt = adder(&model, local.clone(), Workers::all()).build().await.unwrap();
    let by_activity = local.clone().model_calls(ModelCalls::Activity);
    let other = adder(&model, by_activity, Workers::none()).build().await.unwrap();

    // The session starts by activity; the local client's next turn keeps
    // that (its history replays).
    other
        .client("adder")
        .unwrap()
        .run("2 + 3?", RunOptions::new().session_id("a"))
        .await
        .unwrap();
    let out = rt
        .client("adder")
        .unwrap()
        .run("2 + 3 again?", RunOptions::new().session_id("a"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("It is 5."));
    let kept = cost(&local, "a").await.by_type;
    assert_eq!(count(&kept, "MARKER_RECORDED"), 0, "{kept:?}");
    assert_eq!(count(&kept, "ACTIVITY_TASK_SCHEDULED"), 6, "{kept:?}");
    assert_eq!(model.requests().len(), 4);

    other.shutdown().await;
    rt.shutdown().await;
    server.stop().await;
}
