//! Micro-benchmarks of the facade: tool argument validation with coercion,
//! and journal appends (memory, and SQLite alone or grouped).
//! `cargo bench -p concierge`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::Duration;

use concierge::ModelReply;
use concierge::core::{Input, RunId, Timestamp};
use concierge::engine::bench::{self as store, Claim, Cursor, Entry, MemoryStore, Store};
use concierge::tool::ArgumentValidator;
use divan::Bencher;
use serde_json::json;

fn main() {
    divan::main();
}

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": ["add", "subtract", "multiply", "divide", "sqrt", "abs"]},
            "a": {"type": "number"},
            "b": {"type": ["number", "null"]}
        },
        "required": ["operation", "a"]
    })
}

/// Arguments as a model sends them: already right.
#[divan::bench]
fn validate_clean_arguments(bencher: Bencher) {
    let validator = ArgumentValidator::new(&schema()).unwrap();
    bencher
        .with_inputs(|| json!({"operation": "add", "a": 17, "b": 25}))
        .bench_local_values(|mut args| validator.check(&mut args).unwrap());
}

/// Arguments that need coercion ("17" -> 17, "Add" -> "add").
#[divan::bench]
fn validate_and_coerce(bencher: Bencher) {
    let validator = ArgumentValidator::new(&schema()).unwrap();
    bencher
        .with_inputs(|| json!({"operation": "Add", "a": "17", "b": 25}))
        .bench_local_values(|mut args| validator.check(&mut args).unwrap());
}

fn entry(session: &str, index: u64) -> Entry {
    Entry {
        session: session.into(),
        index,
        input: Input::ModelReplied {
            run_id: RunId::new("r1"),
            call: 1,
            reply: ModelReply::tool_call("calculator", r#"{"a":17.0,"b":25.0,"operation":"add"}"#).with_usage(91, 12),
            at: Timestamp(1_795_232_112_296),
        },
        agent: (index == 0).then(|| "calculator".into()),
        tenant: None,
        first_since_claim: index == 0,
        snapshot: None,
        compact: None,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Claims a session for this process (as an engine does before its first append).
fn claim(rt: &tokio::runtime::Runtime, store: &dyn Store, session: &str) -> Cursor {
    match rt.block_on(store.claim(&session.into(), &"calculator".into())).unwrap() {
        Claim::Owned { session_no } => Cursor { session_no, head: 0 },
        Claim::Busy(owner) => panic!("{session} is owned by {owner}"),
    }
}

#[divan::bench]
fn journal_append_memory(bencher: Bencher) {
    let rt = runtime();
    let journal = MemoryStore::new();
    let mut index = 0;
    bencher.bench_local(|| {
        rt.block_on(journal.append(entry("s", index), Cursor::default()))
            .unwrap();
        index += 1;
    });
}

/// One durable append: a commit and an fsync of the WAL.
#[divan::bench(sample_count = 30, sample_size = 10)]
fn journal_append_sqlite_alone(bencher: Bencher) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let journal = store::sqlite(&dir.path().join("bench.db"), Duration::ZERO).unwrap();
    let mut cursor = claim(&rt, &journal, "s");
    let mut index = 0;
    bencher.bench_local(|| {
        cursor = rt.block_on(journal.append(entry("s", index), cursor)).unwrap().cursor;
        index += 1;
    });
}

/// 64 sessions appending at once: group commit shares the fsync (per iteration: 64 entries).
#[divan::bench(sample_count = 30, sample_size = 5)]
fn journal_append_sqlite_64_concurrent(bencher: Bencher) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let journal = std::sync::Arc::new(store::sqlite(&dir.path().join("bench.db"), Duration::ZERO).unwrap());
    let mut cursors: Vec<Cursor> = (0..64)
        .map(|s| claim(&rt, journal.as_ref(), &format!("s{s}")))
        .collect();
    let mut index = 0;
    bencher
        .counter(divan::counter::ItemsCount::new(64usize))
        .bench_local(|| {
            let appends: Vec<_> = cursors
                .iter()
                .enumerate()
                .map(|(s, cursor)| journal.append(entry(&format!("s{s}"), index), *cursor))
                .collect();
            let done = rt.block_on(futures::future::join_all(appends));
            for (cursor, appended) in cursors.iter_mut().zip(done) {
                *cursor = appended.unwrap().cursor;
            }
            index += 1;
        });
}
