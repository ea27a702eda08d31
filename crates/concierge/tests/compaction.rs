//! Journal compaction in the SQLite engine: a session's entries before its
//! latest snapshot are deleted when the snapshot is written, and what
//! `history`, `session` and subscriptions show does not change.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, Event, HistoryPolicy, Message, ModelReply, RunOptions, Runtime, tool};
use futures::StreamExt;
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::Deserialize;

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

/// Calls `add` once per turn, then answers.
fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|request| {
        let results = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool { .. }))
            .count();
        let users = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count();
        Ok(if results < users {
            ModelReply::tool_call("add", format!(r#"{{"a": {users}, "b": 1}}"#)).with_usage(10, 2)
        } else {
            ModelReply::text(format!("{}", users + 1)).with_usage(12, 1)
        })
    })
}

/// A snapshot as soon as the inputs since the last one outweigh it:
/// compaction after a few turns.
async fn runtime(db: &Path, keep: bool) -> Runtime {
    runtime_growing(db, keep, 1).await
}

/// The runtime, snapshotting a session again once the inputs since its last
/// snapshot weigh `growth` times that snapshot.
async fn runtime_growing(db: &Path, keep: bool, growth: u64) -> Runtime {
    Runtime::builder()
        .tool(Add)
        // The model counts every question: it sees the whole conversation.
        .agent(
            AgentSpec::new("helper")
                .instructions("Add.")
                .tool("add")
                .history(HistoryPolicy::everything()),
        )
        .model(model())
        .sqlite(db)
        .snapshot_after_bytes(1)
        .snapshot_growth(growth)
        .keep_journal(keep)
        .build()
        .await
        .unwrap()
}

fn rows(db: &Path, table: &str) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// Runs `turns` turns on session `s`, returning every event seen live.
async fn drive(rt: &Runtime, turns: usize) -> Vec<Event> {
    let mut stream = rt.subscribe("s", 1);
    for i in 0..turns {
        rt.client("helper")
            .unwrap()
            .run(format!("turn {i}"), RunOptions::new().session_id("s"))
            .await
            .unwrap();
    }
    let last = rt.session("s").await.unwrap().last_seq();
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        let done = event.seq == last;
        seen.push(event);
        if done {
            break;
        }
    }
    seen
}

async fn replayed(rt: &Runtime, from: u64, count: usize) -> Vec<Event> {
    rt.subscribe("s", from).take(count).map(|e| e.unwrap()).collect().await
}

#[tokio::test]
async fn a_compacted_journal_shows_the_same_history_session_and_events_in_a_new_process() {
    let dir = tempfile::tempdir().unwrap();
    let compacted = dir.path().join("compacted.db");
    let kept = dir.path().join("kept.db");
    let turns = 30;

    let (live, before) = {
        let rt = runtime(&compacted, false).await;
        let live = drive(&rt, turns).await;
        let before = rt.session("s").await.unwrap();
        rt.shutdown().await;
        (live, before)
    };
    {
        let rt = runtime(&kept, true).await;
        drive(&rt, turns).await;
        rt.shutdown().await;
    }
    assert_eq!(before.runs_started(), turns as u64);
    // Each turn journals four inputs (start, model, tool, model): all kept
    // in one database, only those since the latest snapshot in the other. A
    // snapshot is written once the inputs since the last one outweigh it
    // (compressed, so how many turns that takes varies with the random ids
    // in them): a few turns' entries at most.
    let inputs = 4 * turns as i64;
    assert_eq!(rows(&kept, "log"), inputs);
    let left = rows(&compacted, "log");
    assert!(left < inputs / 3, "{left} of {inputs} entries left after compaction");
    assert!(rows(&compacted, "archive") > 0);
    assert_eq!(rows(&kept, "archive"), 0);

    // A new process on the compacted file.
    let rt = runtime(&compacted, false).await;
    let after = rt.session("s").await.unwrap();
    assert_eq!(after, before, "the same session state");
    assert_eq!(rt.history("s").await.unwrap(), before.history());
    assert_eq!(after.history().len(), 4 * turns);
    // Subscriptions from the start, from the middle (before the snapshot)
    // and from the end show the events that were emitted.
    assert_eq!(replayed(&rt, 1, live.len()).await, live);
    for from in [7, live.len() as u64 / 2, live.len() as u64 - 2] {
        let tail = replayed(&rt, from, live.len() - from as usize + 1).await;
        assert_eq!(tail, live[from as usize - 1..].to_vec(), "from {from}");
    }
    // The session goes on, and compacts on.
    let out = rt
        .client("helper")
        .unwrap()
        .run("one more", RunOptions::new().session_id("s"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some(&*format!("{}", turns + 2)));
    let history = rt.history("s").await.unwrap();
    rt.shutdown().await;
    assert!(rows(&compacted, "log") < inputs / 3);
    let rt = runtime(&compacted, false).await;
    assert_eq!(rt.history("s").await.unwrap(), history);
    let all = replayed(&rt, 1, live.len() + 1).await;
    assert_eq!(all[..live.len()], live[..]);
}

#[tokio::test]
async fn a_journal_kept_whole_is_compacted_when_a_process_compacts_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let live = {
        let rt = runtime(&db, true).await;
        let live = drive(&rt, 5).await;
        rt.shutdown().await;
        live
    };
    assert_eq!(rows(&db, "log"), 20);
    let rt = runtime(&db, false).await;
    let before = rt.session("s").await.unwrap();
    // Enough turns for the next snapshot (inputs as large as the last one).
    for i in 0..10 {
        rt.client("helper")
            .unwrap()
            .run(format!("again {i}"), RunOptions::new().session_id("s"))
            .await
            .unwrap();
    }
    rt.shutdown().await;
    assert!(rows(&db, "log") < 20, "{} entries left", rows(&db, "log"));
    let rt = runtime(&db, true).await;
    assert_eq!(
        rt.history("s").await.unwrap()[..before.history().len()],
        before.history()[..]
    );
    assert_eq!(replayed(&rt, 1, live.len()).await, live);
}

/// The snapshot in `db` (its entry's index and size), if any.
fn snapshot(db: &Path) -> Option<(i64, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT idx, length(state) FROM snapshots", [], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .optional()
    .unwrap()
}

/// The bytes of the inputs journaled after index `after` and before `before`.
fn input_bytes(db: &Path, after: i64, before: i64) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT COALESCE(SUM(length(input)), 0) FROM log WHERE idx > ?1 AND idx < ?2",
            [after, before],
            |r| r.get(0),
        )
        .unwrap()
}

#[tokio::test]
async fn a_session_is_snapshotted_again_once_its_journal_grew_by_the_growth_factor() {
    let mut taken = Vec::new();
    for growth in [1_u64, 4] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.db");
        let rt = runtime_growing(&db, true, growth).await;
        // Every snapshot seen after a turn, with the one before it.
        let mut snapshots: Vec<(i64, i64)> = Vec::new();
        for i in 0..60 {
            rt.client("helper")
                .unwrap()
                .run(format!("turn {i}"), RunOptions::new().session_id("s"))
                .await
                .unwrap();
            if let Some(now) = snapshot(&db)
                && snapshots.last() != Some(&now)
            {
                snapshots.push(now);
            }
        }
        rt.shutdown().await;
        assert!(snapshots.len() >= 2, "growth {growth}: snapshots {snapshots:?}");
        for pair in snapshots.windows(2) {
            let ((from, size), (at, _)) = (pair[0], pair[1]);
            let since = input_bytes(&db, from, at);
            assert!(
                since >= growth as i64 * size,
                "growth {growth}: a snapshot at input {at} after {since} bytes since the last one of {size} bytes"
            );
        }
        taken.push(snapshots.len());
    }
    assert!(taken[1] < taken[0], "fewer snapshots with growth 4: {taken:?}");
}
