//! Erasing a person: their conversations (and the child sessions of agents
//! they called), their memories and schedules go, for good and across a
//! restart; another person's stay.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::memory::{MemoryOrigin, MemoryOwner};
use concierge::model::ScriptedModel;
use concierge::schedule::{NewSchedule, When};
use concierge::{AgentSpec, Error, ModelReply, RunOptions, Runtime};

async fn runtime(db: &std::path::Path) -> Runtime {
    let mut model = ScriptedModel::new();
    for _ in 0..8 {
        model = model.reply(ModelReply::text("Noted."));
    }
    Runtime::builder()
        .agent(AgentSpec::new("assistant").instructions("Help."))
        .model(model)
        .sqlite(db)
        .fire_schedules(false)
        .build()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erasing_a_person_erases_their_conversations_memories_and_schedules_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("erase.db");
    let rt = runtime(&db).await;
    let client = rt.client("assistant").unwrap();
    let as_user = |session: &str, user: &str| RunOptions::new().session_id(session).tenant("acme").user(user);
    client
        .run("my passport number is X123", as_user("ana-1", "ana"))
        .await
        .unwrap();
    client.run("and my address", as_user("ana-2", "ana")).await.unwrap();
    // An id with a ':' in it, as a child run's session has (this one is
    // not): an earlier version let a caller open one so.
    let open = concierge::core::OpenSession {
        agent: "assistant".into(),
        named: false,
        tenant: Some("acme".into()),
        fork: None,
        at: concierge::core::Timestamp(1),
    };
    rt.engine()
        .open("ana:3".into(), open, concierge::engine::EngineOptions::default())
        .await
        .unwrap();
    client.run("and my phone", as_user("ana:3", "ana")).await.unwrap();
    client.run("hello", as_user("bob-1", "bob")).await.unwrap();
    // Another tenant's person of the same name.
    let other_ana = RunOptions::new().session_id("globex-ana").tenant("globex").user("ana");
    client.run("hello", other_ana).await.unwrap();
    let ana = MemoryOwner::new("acme", "ana");
    let bob = MemoryOwner::new("acme", "bob");
    rt.memories()
        .remember(&ana, "Ana's passport is X123", MemoryOrigin::default())
        .await
        .unwrap();
    rt.memories()
        .remember(&bob, "Bob likes tea", MemoryOrigin::default())
        .await
        .unwrap();
    rt.schedule(NewSchedule::new(
        ana.clone(),
        "check in",
        When::cron("0 9 * * *").unwrap(),
    ))
    .await
    .unwrap();

    let erased = rt.erase_person(&ana).await.unwrap();
    assert_eq!(
        (erased.sessions, erased.memories, erased.schedules),
        (3, 1, 1),
        "{erased:?}"
    );
    for session in ["ana-1", "ana-2", "ana:3"] {
        assert!(
            matches!(rt.session(session).await, Err(Error::SessionNotFound(_))),
            "{session} is gone"
        );
    }
    assert!(rt.session("bob-1").await.is_ok(), "another person's conversation stays");
    assert!(
        rt.session("globex-ana").await.is_ok(),
        "another tenant's person of the same name keeps theirs"
    );
    assert_eq!(rt.memories().list(&bob, None).await.unwrap().len(), 1);
    assert!(rt.memories().list(&ana, None).await.unwrap().is_empty());
    assert!(rt.schedules().list(&ana).await.unwrap().is_empty());
    rt.shutdown().await;

    // Gone from the file, not only from this process.
    let rt = runtime(&db).await;
    assert!(matches!(rt.session("ana-1").await, Err(Error::SessionNotFound(_))));
    assert!(rt.session("bob-1").await.is_ok());
    let mut listed: Vec<String> = rt
        .sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    listed.sort();
    assert_eq!(listed, ["bob-1", "globex-ana"]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let sessions: i64 = conn
        .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    let heads: i64 = conn.query_row("SELECT COUNT(*) FROM heads", [], |r| r.get(0)).unwrap();
    let orphans: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM log WHERE no NOT IN (SELECT no FROM sessions)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((sessions, heads, orphans), (2, 2, 0));
    // A new conversation under an erased id starts afresh.
    let out = rt
        .client("assistant")
        .unwrap()
        .run("hi again", as_user("ana-1", "ana"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("Noted."));
    assert_eq!(rt.session("ana-1").await.unwrap().runs_started(), 1);
    assert!(!rt.erase_session("nobody").await.unwrap(), "nothing to erase");
    rt.shutdown().await;
}
