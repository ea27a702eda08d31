//! Sessions opened before their first message, tenants, and the
//! `data_changed` event, on the embedded engine over SQLite: the shared
//! cases of `cases/tenants.rs` (concierge-temporal runs them on Temporal),
//! and an opened session that outlives its runtime.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/tenants.rs"]
mod cases;

use cases::{Notes, SaveNote, acme, agents};
use concierge::{AgentId, EventKind, RunStatus, Runtime};
use embedded::{EngineUnderTest, OnEngine};
use futures::StreamExt;

on_the_embedded_engine!(cases, EngineUnderTest::sqlite();
    another_tenants_session_is_not_found_and_runs_nothing,
    a_child_session_belongs_to_its_parents_tenant_and_a_write_says_what_changed,
    an_opened_session_is_listed_and_its_first_message_goes_to_its_agent,
);

async fn runtime(db: &std::path::Path, notes: &Notes) -> Runtime {
    Runtime::builder()
        .tool(SaveNote(notes.clone()))
        .agents(agents())
        .sqlite(db)
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_opened_session_is_durable_listed_and_its_first_message_goes_to_its_agent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let notes = Notes::default();
    {
        let rt = runtime(&db, &notes).await;
        rt.open(Some(AgentId::new("notes")), acme("s1")).await.unwrap();
        let again = rt.open(None, acme("s1")).await.unwrap_err();
        assert!(again.to_string().contains("exists already"), "{again}");
        rt.shutdown().await;
    }
    let rt = runtime(&db, &notes).await;
    let listed = rt.sessions().await.unwrap();
    let s1 = listed
        .iter()
        .find(|s| s.id == "s1")
        .expect("the opened session is listed");
    assert_eq!(s1.agent, "notes");
    assert_eq!(s1.tenant.as_deref(), Some("acme"));
    let session = rt.session("s1").await.unwrap();
    assert_eq!(session.runs_started(), 0);
    assert!(session.is_pinned());
    let first: Vec<_> = rt.subscribe("s1", 1).take(1).collect().await;
    assert!(matches!(
        &first[0].as_ref().unwrap().kind,
        EventKind::SessionOpened { .. }
    ));

    let out = rt.send("note: buy milk", acme("s1")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.agent, "notes");
    assert_eq!(notes.lock().unwrap().as_slice(), ["buy milk"]);
}
