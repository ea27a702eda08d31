//! A tools worker killed (SIGKILL) in the middle of a tool call: the call is
//! retried on the worker started after it, and its effect happens once
//! (ignored: needs the Temporal dev server,
//! `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal -- --ignored`).
//!
//! The tools worker is a second process: this test binary, run as its
//! `worker_child` entry point.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, ModelReply, RunOptions, RunStatus, Runtime, ToolContext, tool};
use concierge_temporal::{Temporal, TemporalConfig, Workers};
use schemars::JsonSchema;
use serde::Deserialize;
use support::DevServer;
use tokio::process::{Child, Command};

#[derive(Deserialize, JsonSchema)]
struct RecordArgs {
    entry: String,
}

fn dir() -> PathBuf {
    PathBuf::from(std::env::var_os("WORKER_DIR").expect("WORKER_DIR"))
}

fn append(ledger: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(ledger)
        .unwrap();
    // One write: `writeln!` may write the line and its newline apart, and a
    // worker killed between the two leaves a line without its end.
    file.write_all(format!("{line}\n").as_bytes()).unwrap();
    file.sync_all().unwrap();
}

fn lines(ledger: &Path) -> Vec<String> {
    std::fs::read_to_string(ledger)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Records an entry in the ledger, once per idempotency key (waits for the
/// test's gate before it does).
#[tool(idempotent)]
async fn record(args: RecordArgs, cx: ToolContext) -> Result<String, String> {
    let dir = dir();
    let ledger = dir.join("ledger");
    let key = cx.idempotency_key.to_string();
    append(&ledger, &format!("started {key}"));
    while !dir.join("gate").exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if !lines(&ledger).contains(&format!("effect {key}")) {
        append(&ledger, &format!("effect {key}"));
    }
    append(&ledger, &format!("done {key}"));
    Ok(format!("recorded {}", args.entry))
}

/// Charges an amount: not safe to run twice (the ledger says if it did).
#[tool]
async fn charge(args: RecordArgs, cx: ToolContext) -> Result<String, String> {
    record(args, cx).await
}

fn agent() -> AgentSpec {
    AgentSpec::new("ledger")
        .instructions("Record.")
        .tool("record")
        .tool("charge")
}

fn config(address: &str, prefix: &str) -> TemporalConfig {
    TemporalConfig::new(address)
        .namespace(support::NAMESPACE)
        .task_queue_prefix(prefix)
        .poll_interval(Duration::from_millis(50))
        .tool_heartbeat_timeout(Duration::from_secs(2))
}

/// The tools worker process: runs the ledger agent's tool calls until killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "only runs inside a_killed_tools_worker_s_call_runs_once_on_the_next_one"]
async fn worker_child() {
    let address = std::env::var("WORKER_ADDRESS").expect("only runs inside its parent test");
    let prefix = std::env::var("WORKER_PREFIX").expect("WORKER_PREFIX");
    let _rt = Runtime::builder()
        .tool(Record)
        .tool(Charge)
        .agent(agent())
        .model(ScriptedModel::new())
        .engine(Temporal::new(config(&address, &prefix)).workers(Workers::none().tools_of(["ledger"])))
        .build()
        .await
        .unwrap();
    println!("worker ready");
    std::future::pending::<()>().await;
}

fn spawn_worker(address: &str, prefix: &str, dir: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "worker_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("WORKER_ADDRESS", address)
        .env("WORKER_DIR", dir)
        .env("WORKER_PREFIX", prefix)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_killed_tools_worker_s_call_runs_once_on_the_next_one() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    // This process runs the sessions and the model; the tools run elsewhere.
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("record", r#"{"entry": "x"}"#))
        .reply(ModelReply::text("Recorded."));
    let rt = Runtime::builder()
        .tool(Record)
        .tool(Charge)
        .agent(agent())
        .model(model)
        .engine(Temporal::new(config(&server.address, "loss")).workers(Workers::all().no_tools()))
        .build()
        .await
        .unwrap();

    let mut first = spawn_worker(&server.address, "loss", dir.path());
    let handle = rt
        .client("ledger")
        .unwrap()
        .start("record x", RunOptions::new().session_id("k"))
        .await
        .unwrap();
    // The call has started in the first worker (which waits at the gate).
    while !lines(&ledger).iter().any(|l| l.starts_with("started ")) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().await.unwrap();
    std::fs::write(dir.path().join("gate"), "open").unwrap();
    let mut second = spawn_worker(&server.address, "loss", dir.path());

    let out = handle.wait().await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("Recorded."));
    let ledger = lines(&ledger);
    let key = format!("k/{}/", out.run_id);
    let started = ledger.iter().filter(|l| l.starts_with("started ")).count();
    let effects: Vec<&String> = ledger.iter().filter(|l| l.starts_with("effect ")).collect();
    assert_eq!(started, 2, "the call was retried on the second worker: {ledger:?}");
    assert_eq!(effects.len(), 1, "the effect happened once: {ledger:?}");
    assert!(effects[0].starts_with(&format!("effect {key}")), "{ledger:?}");

    second.kill().await.unwrap();
    rt.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_side_effecting_call_is_not_run_again_after_its_worker_is_lost() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("charge", r#"{"entry": "y"}"#))
        .reply(ModelReply::text("The charge did not go through."));
    let rt = Runtime::builder()
        .tool(Record)
        .tool(Charge)
        .agent(agent())
        .model(model.clone())
        .engine(Temporal::new(config(&server.address, "once")).workers(Workers::all().no_tools()))
        .build()
        .await
        .unwrap();

    let mut first = spawn_worker(&server.address, "once", dir.path());
    let handle = rt
        .client("ledger")
        .unwrap()
        .start("charge y", RunOptions::new().session_id("c"))
        .await
        .unwrap();
    while !lines(&ledger).iter().any(|l| l.starts_with("started ")) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().await.unwrap();
    std::fs::write(dir.path().join("gate"), "open").unwrap();
    let mut second = spawn_worker(&server.address, "once", dir.path());

    // The call is not retried blindly: the model hears it did not complete.
    let out = handle.wait().await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("The charge did not go through."));
    let seen = model.requests()[1].messages.last().unwrap().text();
    assert!(seen.contains("did not complete"), "{seen}");
    let ledger = lines(&ledger);
    assert_eq!(
        ledger.iter().filter(|l| l.starts_with("started ")).count(),
        1,
        "the call ran once: {ledger:?}"
    );
    assert!(!ledger.iter().any(|l| l.starts_with("effect ")), "{ledger:?}");

    second.kill().await.unwrap();
    rt.shutdown().await;
    server.stop().await;
}
