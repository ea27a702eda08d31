//! The runtime API end to end on the embedded engine: the shared cases of
//! `cases/runtime.rs` in memory (concierge-temporal runs them on Temporal),
//! and what only this engine has: a SQLite database that outlives the
//! runtime, sessions leaving memory, a runtime without an engine.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/runtime.rs"]
mod cases;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, Error, Message, ModelReply, RunOptions, Runtime, tool};
use embedded::{EngineUnderTest, OnEngine};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

on_the_embedded_engine!(cases, EngineUnderTest::memory();
    arguments_are_coerced_and_a_schema_error_is_corrected_by_the_model,
    a_panicking_tool_is_a_tool_error_and_the_run_goes_on,
    confirmation_parks_the_run_and_only_the_exact_call_is_approved,
    a_declined_call_is_reported_to_the_model,
    arguments_are_validated_before_the_person_is_asked,
    results_and_messages_over_their_limits_fail_fast_and_say_so,
    events_are_ordered_and_a_subscriber_resumes_from_any_seq,
    a_live_subscriber_sees_a_later_run,
    typed_errors_for_bad_calls,
    an_agent_without_model_or_rules_is_refused_with_what_to_do,
    policy_overrides_apply_to_new_runs,
    introspection_lists_agents_toolsets_and_schemas,
    ending_a_session_cancels_its_run,
    failing_models_are_retried_then_reported,
    a_model_naming_a_missing_tool_or_sending_bad_json_is_corrected,
    a_templated_confirmation_is_answered_by_a_plain_yes_through_send,
    a_tool_reads_who_asks_and_the_blackboard_from_its_context,
    a_new_session_naming_no_agent_starts_at_the_hub_which_routes_by_rules,
    the_hub_asks_the_model_when_no_rule_is_confident,
    single_mode_has_no_hub_and_offers_no_hub_tools,
);

on_the_embedded_engine!(cases, EngineUnderTest::sqlite(); events_replayed_from_the_database_are_the_events_that_were_emitted);

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

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

#[tokio::test]
async fn calculator_on_rules_survives_a_restart_of_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    {
        let rt = concierge_demo_runtime(&db).await;
        let out = rt
            .client("calculator")
            .unwrap()
            .run("calculate 5 + 3", session("s"))
            .await
            .unwrap();
        assert_eq!(out.reply.as_deref(), Some("sum: 8"));
        assert_eq!(out.confidence, 0.9);
        assert!(out.success());
    }
    let rt = concierge_demo_runtime(&db).await;
    assert!(rt.recovered().is_empty(), "nothing was in flight");
    let history = rt.history("s").await.unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(history[0], Message::user("calculate 5 + 3"));
    // The session goes on with the agent it had.
    let out = rt.send("sqrt 49", session("s")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("sqrt(49) = 7"));
    let sessions = rt.sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].agent, "calculator");
    assert!(
        !sessions[0].live,
        "the run finished: none is under way, though the session is in memory"
    );
    rt.shutdown().await;
    let sessions = rt.sessions().await.unwrap();
    assert!(!sessions[0].live, "shutdown records it as idle");
    assert!(rt.journal_stats().commits >= 1);
}

async fn concierge_demo_runtime(db: &std::path::Path) -> Runtime {
    // A calculator on rules: a route to `add`, and a fixed answer for sqrt.
    let rules = concierge::Rules::new()
        .route(concierge::Route::tool("add", json!({"a": "{a}", "b": "{b}"})).pattern(r"(?P<a>\d+)\s*\+\s*(?P<b>\d+)"))
        .route(concierge::Route::reply("sqrt(49) = 7").keywords(["sqrt"]))
        .answer("sum: {result}");
    let calculator = AgentSpec::new("calculator").tool("add").rules(rules);
    Runtime::builder()
        .tool(Add)
        .agent(calculator)
        .sqlite(db)
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn sessions_leave_memory_when_idle_and_come_back() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let model = ScriptedModel::from_fn(move |_| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        Ok(ModelReply::text(format!("reply {n}")))
    });
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::builder()
        .agent(AgentSpec::new("a"))
        .model(model)
        .sqlite(dir.path().join("c.db"))
        .idle_timeout(Duration::from_millis(1))
        .snapshot_after_bytes(1)
        .build()
        .await
        .unwrap();
    for i in 0..5 {
        let out = rt
            .client("a")
            .unwrap()
            .run(format!("m{i}"), session("s"))
            .await
            .unwrap();
        assert_eq!(out.reply, Some(format!("reply {i}")));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let session = rt.session("s").await.unwrap();
    assert_eq!(session.history().len(), 10);
    assert_eq!(session.runs_started(), 5);
    assert!(rt.journal_stats().snapshots >= 1);
}

#[tokio::test]
async fn a_runtime_without_an_engine_describes_but_does_not_run() {
    let rt = Runtime::builder()
        .tool(Add)
        .agent(AgentSpec::new("a").tool("add"))
        .without_engine()
        .build()
        .await
        .unwrap();
    assert_eq!(rt.catalog().tools_for(&"a".into()).len(), 1, "introspection works");
    let error = rt.client("a").unwrap().run("x", session("s")).await.unwrap_err();
    assert!(matches!(error, Error::EngineNotConfigured), "{error}");
    assert!(matches!(rt.session("s").await, Err(Error::EngineNotConfigured)));
    let first = rt.subscribe("s", 1).next().await.unwrap();
    assert!(matches!(first, Err(Error::EngineNotConfigured)));
}
