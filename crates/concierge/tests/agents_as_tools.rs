//! Agents as tools on the embedded engine (SQLite): the shared cases of
//! `cases/agents_as_tools.rs` (concierge-temporal runs them on Temporal),
//! and a new runtime on the same database that neither loses nor repeats a
//! child.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/agents_as_tools.rs"]
mod cases;

use cases::{Log, LogNote, RemoveContact, agents};
use concierge::{RunOptions, RunStatus, Runtime};
use embedded::{EngineUnderTest, OnEngine};

on_the_embedded_engine!(cases, EngineUnderTest::sqlite();
    a_router_answers_a_compound_statement_once_with_each_specialists_part_in_order,
    a_specialists_choice_and_confirmation_reach_the_person_through_the_router,
    a_prompt_template_and_a_prompt_builder_write_the_childs_message,
    what_a_tool_writes_is_declared_in_rust_or_by_configuration,
    a_subscriber_that_stops_anywhere_in_a_childs_events_resumes_with_every_event_exactly_once,
    ending_the_router_ends_the_specialist_waiting_under_it,
);

async fn runtime(db: &std::path::Path, log: &Log) -> Runtime {
    Runtime::builder()
        .tool(LogNote(log.clone()))
        .tool(RemoveContact(log.clone()))
        .agents(agents())
        .sqlite(db)
        .build()
        .await
        .unwrap()
}

fn opts(session: &str) -> RunOptions {
    RunOptions::new().session_id(session)
}

#[tokio::test]
async fn a_new_runtime_on_the_same_database_finishes_a_parked_tree_without_repeating_a_child() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let log = Log::default();
    {
        let rt = runtime(&db, &log).await;
        let out = rt
            .send("note about Mike: sent the deck; remove Jane", opts("s5"))
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
        rt.shutdown().await;
    }
    assert_eq!(log.lock().unwrap().len(), 1, "the note, before the question");
    let rt = runtime(&db, &log).await;
    let out = rt.send("yes", opts("s5")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some("Logged the note for contact 2: sent the deck. Removed Jane.")
    );
    let written: Vec<String> = log.lock().unwrap().iter().map(|w| w.0.clone()).collect();
    assert_eq!(written, ["log_note", "remove_contact"], "each once");
    rt.shutdown().await;
}
