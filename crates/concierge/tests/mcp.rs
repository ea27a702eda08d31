//! MCP against real servers on the embedded engine: the shared cases of
//! `cases/mcp.rs` in memory (concierge-temporal runs them on Temporal), and
//! a server's tools remembered in the SQLite database for a replay after a
//! restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/mcp.rs"]
mod cases;

use cases::{everything, outcomes, script, session};
use concierge::model::ScriptedModel;
use concierge::{AgentSpec, EventKind, Runtime};
use embedded::{EngineUnderTest, OnEngine};
use futures::StreamExt;
use serde_json::json;

on_the_embedded_engine!(cases, EngineUnderTest::memory();
    a_server_that_will_not_start_is_an_error_quoting_its_stderr,
    http_calls_errors_idempotency_keys_and_list_changed,
    http_server_gone_mid_conversation_is_reported_then_reconnected,
    http_a_tool_without_annotations_asks_first_and_a_read_only_one_does_not,
    http_a_call_that_times_out_is_cancelled_on_the_server,
    http_a_call_whose_caller_stops_waiting_is_cancelled_on_the_server,
    http_structured_content_counts_against_the_result_limit,
    http_an_answer_over_the_message_limit_is_reported_as_too_large_not_as_a_timeout,
    stdio_an_answer_over_the_message_limit_is_reported_as_too_large_not_as_a_timeout,
    a_server_answering_an_unsupported_protocol_version_is_refused,
);

on_the_embedded_engine!(cases, EngineUnderTest::memory(); ignore = "needs npm packages: scripts/setup-mcp.sh";
    stdio_discovery_filtering_coercion_rejection_and_content,
    stdio_included_tools_the_server_lacks_is_an_error_naming_what_it_offers,
    stdio_server_killed_mid_call_is_reported_and_restarted,
    stdio_server_that_hangs_times_out_on_its_own_timeout_and_is_restarted,
    stdio_progress_extends_a_calls_timeout_and_is_reported,
    stdio_destructive_tools_ask_first_unless_read_only_or_the_server_is_trusted,
);

#[tokio::test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn stdio_tools_are_remembered_for_replay_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mcp.db");
    let build = |model: ScriptedModel| {
        Runtime::builder()
            .mcp_server("everything", everything().include(["echo"]).prefix("ev_"))
            .agent(AgentSpec::new("helper").toolset("everything"))
            .model(model)
            .sqlite(&db)
    };
    {
        let rt = build(script(vec![("ev_echo", json!({"message": "one"}))]))
            .build()
            .await
            .unwrap();
        let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
        assert_eq!(outcomes(&out), [Ok(json!("Echo: one"))]);
        rt.shutdown().await;
    }
    // A new process knows the server's tools before listing it again.
    let rt = build(script(vec![])).build().await.unwrap();
    assert_eq!(rt.catalog().tools_for(&"helper".into())[0].name, "ev_echo");
    let events: Vec<_> = rt.subscribe("s", 1).take(15).map(|e| e.unwrap().kind).collect().await;
    assert!(
        events
            .iter()
            .any(|k| matches!(k, EventKind::ToolFinished { ok: true, .. })),
        "the replayed call is the successful one: {events:?}"
    );
    rt.shutdown().await;
}
