//! What sessions cost in Temporal's history, read back from a real dev
//! server (ignored: run with
//! `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal --test history -- --ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;

use concierge::{RunOptions, RunStatus, Runtime, SessionId};
use concierge_temporal::{Temporal, Workers, history_cost};
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
