//! Memory per person: an agent remembers with the `memory` toolset, a later
//! conversation of the same person is shown what is relevant, other people
//! (another user, the same user of another tenant) see nothing of it, and
//! the memories outlive the process with the SQLite database.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::memory::MemoryOwner;
use concierge::model::ScriptedModel;
use concierge::{AgentSpec, ModelReply, RunOptions, Runtime, ToolOutcome};

fn agent() -> AgentSpec {
    AgentSpec::new("assistant")
        .instructions("Help the person; remember what lasts.")
        .toolset("memory")
        .recall(3)
}

async fn runtime(model: ScriptedModel, db: &std::path::Path) -> Runtime {
    Runtime::builder()
        .agent(agent())
        .model(model)
        .sqlite(db)
        .build()
        .await
        .unwrap()
}

fn as_ana(session: &str) -> RunOptions {
    RunOptions::new().session_id(session).tenant("acme").user("ana")
}

#[tokio::test]
async fn a_remembered_fact_reaches_the_same_persons_next_conversation_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "remember",
            r#"{"fact": "Prefers aisle seats on long flights"}"#,
        ))
        .reply(ModelReply::text("Noted: aisle seats."))
        .reply(ModelReply::text("Booking an aisle seat."))
        .reply(ModelReply::text("Which flight?"))
        .reply(ModelReply::text("Which flight?"));
    let rt = runtime(model.clone(), &db).await;
    let client = rt.client("assistant").unwrap();
    let out = client
        .run("I always want an aisle seat on long flights", as_ana("s1"))
        .await
        .unwrap();
    assert!(matches!(out.tool_executions[0].outcome, ToolOutcome::Ok(_)), "{out:?}");
    rt.shutdown().await;

    // A new process: the memory is in the database file.
    let rt = runtime(model.clone(), &db).await;
    let client = rt.client("assistant").unwrap();
    client.run("Book me a flight to Lisbon", as_ana("s2")).await.unwrap();
    client
        .run(
            "Book me a flight to Lisbon",
            RunOptions::new().session_id("s3").tenant("acme").user("bob"),
        )
        .await
        .unwrap();
    client
        .run(
            "Book me a flight to Lisbon",
            RunOptions::new().session_id("s4").tenant("globex").user("ana"),
        )
        .await
        .unwrap();
    let requests = model.requests();
    let system = |i: usize| requests[i].system.clone();
    assert!(
        !system(0).contains("aisle"),
        "nothing was remembered before: {}",
        system(0)
    );
    assert!(
        system(2).contains("Prefers aisle seats on long flights"),
        "{}",
        system(2)
    );
    assert!(!system(3).contains("aisle"), "another user: {}", system(3));
    assert!(
        !system(4).contains("aisle"),
        "the same user of another tenant: {}",
        system(4)
    );

    let ana = MemoryOwner::new("acme", "ana");
    let listed = rt.memories().list(&ana, None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].session.as_deref(), Some("s1"));
    assert_eq!(listed[0].agent.as_deref(), Some("assistant"));
    rt.shutdown().await;
}

#[tokio::test]
async fn forgetting_through_the_tools_needs_the_id_recall_gave() {
    let model = ScriptedModel::from_fn(|request| {
        let last = request.messages.last().map(|m| m.text()).unwrap_or_default();
        let reply = if request.messages.len() == 1 {
            ModelReply::tool_call("recall", r#"{"about": "seat"}"#)
        } else if last.contains("\"memories\"") {
            let value: serde_json::Value = serde_json::from_str(&last).unwrap_or_default();
            let id = value["memories"][0]["id"].as_str().unwrap_or("none").to_string();
            ModelReply::tool_call("forget", serde_json::json!({"id": id}).to_string())
        } else {
            ModelReply::text("Forgotten.")
        };
        Ok(reply)
    });
    let rt = Runtime::builder()
        .agent(agent())
        .model(model)
        .in_memory()
        .build()
        .await
        .unwrap();
    let ana = MemoryOwner::new("acme", "ana");
    let store = rt.memories();
    store
        .remember(&ana, "Prefers window seats", Default::default())
        .await
        .unwrap();
    store.remember(&ana, "Has a dog", Default::default()).await.unwrap();
    let out = rt
        .client("assistant")
        .unwrap()
        .run("forget my seat preference", as_ana("f1"))
        .await
        .unwrap();
    let names: Vec<&str> = out.tool_executions.iter().map(|t| t.tool.as_str()).collect();
    assert_eq!(names, ["recall", "forget"], "{out:?}");
    let left: Vec<String> = store
        .list(&ana, None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(left, ["Has a dog"]);
}

/// Another connection changing the schema (another store creating its
/// tables, a newer process migrating) never fails a remember, recall or
/// forget: the index's statements are prepared again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_works_while_another_connection_changes_the_schema() {
    use concierge::memory::{MemoryOrigin, MemoryStore};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memories.db");
    let store = MemoryStore::open(&path).unwrap();
    let owner = MemoryOwner::new("acme", "ana");
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
            let mut changes = 0;
            while !stop.load(Ordering::Relaxed) {
                conn.execute_batch(
                    "CREATE TABLE churn_a (x); CREATE TABLE churn_b (x); DROP TABLE churn_a; DROP TABLE churn_b;",
                )
                .unwrap();
                changes += 4;
                if changes % 40 == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            changes
        })
    };
    for i in 0..60 {
        let kept = store
            .remember(
                &owner,
                &format!("Flight {i} leaves from gate {i}"),
                MemoryOrigin::default(),
            )
            .await
            .unwrap();
        let found = store
            .recall(&owner, &format!("which gate for flight {i}"), 3)
            .await
            .unwrap();
        assert!(!found.is_empty(), "recall {i} found nothing");
        assert!(store.forget(&owner, &kept.id).await.unwrap(), "forget {i}");
    }
    stop.store(true, Ordering::Relaxed);
    let changes = churn.join().unwrap();
    assert!(changes > 0, "the schema never changed under the store");
    assert_eq!(store.forget_all(&owner).await.unwrap(), 0);
}
