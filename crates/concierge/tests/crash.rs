//! Crash recovery: the runtime runs in a child process (this test binary,
//! re-executed) that is killed with SIGKILL in the middle of a model call or
//! of a tool call, then restarted on the same database. The conversation must
//! finish with the same history as an uninterrupted run, and the
//! side-effecting tool, which records its effects by idempotency key, must
//! have performed each effect exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support {
    pub mod child;
}

use std::ffi::OsStr;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout};
use std::sync::atomic::{AtomicUsize, Ordering};

use concierge::model::{Model, ModelContext, ModelError};
use concierge::{AgentSpec, Message, ModelReply, ModelRequest, RunOptions, Runtime, ToolContext, tool};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use support::child::{read_until, spawn as spawn_child};

const SESSION: &str = "s1";
const RUN: &str = "r1";

/// Where the child stops: `model:N` blocks in the N-th model call of the
/// process, `tool` blocks in the second tool call after performing its effect.
fn crash_point() -> String {
    std::env::var("CRASH_AT").unwrap_or_default()
}

fn announce(what: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY {what}");
    let _ = out.flush();
}

/// A deterministic model: it decides from the history alone, so a restarted
/// process asks the same questions and gets the same answers.
struct Deterministic {
    calls: AtomicUsize,
}

impl Model for Deterministic {
    fn name(&self) -> String {
        "deterministic".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let results = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool { .. }))
            .count();
        let reply = match (request.agent.as_str(), results) {
            // The router hands the work to the worker agent, called as a tool.
            ("router", 0) => ModelReply::tool_call("worker", r#"{"request": "record two effects"}"#),
            ("router", _) => ModelReply::text("router: done: first, second"),
            (_, 0) => ModelReply::tool_call("record_effect", r#"{"label": "first"}"#),
            (_, 1) => ModelReply::tool_call("record_effect", r#"{"label": "second"}"#),
            _ => ModelReply::text("done: first, second"),
        };
        let block = crash_point() == format!("model:{n}");
        Box::pin(async move {
            if block {
                announce("model");
                futures::future::pending::<()>().await;
            }
            Ok(reply)
        })
    }
}

#[derive(Deserialize, JsonSchema)]
struct EffectArgs {
    label: String,
}

/// Performs an effect once per idempotency key: appends `key<TAB>label` to
/// the effects file, unless the key is there already.
#[tool]
async fn record_effect(args: EffectArgs, cx: ToolContext) -> Result<serde_json::Value, String> {
    let path = std::env::var("CRASH_EFFECTS").map_err(|e| e.to_string())?;
    let key = cx.idempotency_key.to_string();
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    if !existing
        .lines()
        .any(|line| line.split('\t').next() == Some(key.as_str()))
    {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| e.to_string())?;
        // One write, so a kill cannot land between the line and its end.
        file.write_all(format!("{key}\t{}\n", args.label).as_bytes())
            .map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
    }
    if crash_point() == "tool" && args.label == "second" {
        announce("tool");
        futures::future::pending::<()>().await;
    }
    Ok(json!({"performed": args.label, "key": key}))
}

/// The child process. Not a test by itself: the tests below run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the crash tests"]
async fn crash_child() {
    let db = std::env::var("CRASH_DB").expect("CRASH_DB");
    let tree = std::env::var("CRASH_TREE").is_ok();
    let (agent, reply) = if tree {
        ("router", "router: done: first, second")
    } else {
        ("worker", "done: first, second")
    };
    let rt = Runtime::builder()
        .tool(RecordEffect)
        .agent(
            AgentSpec::new("worker")
                .instructions("Record two effects.")
                .tool("record_effect"),
        )
        .agent(AgentSpec::new("router").agent_tool(concierge::AgentTool::new("worker")))
        .model(Deterministic {
            calls: AtomicUsize::new(0),
        })
        .sqlite(&db)
        .build()
        .await
        .unwrap();
    let output = if std::env::var("CRASH_MODE").as_deref() == Ok("resume") {
        assert!(
            rt.recovered().contains(&SESSION.into()),
            "the run in flight is resumed: {:?}",
            rt.recovered()
        );
        // A liveness guard, not a timing assertion: a run that is not resumed
        // would otherwise wait forever.
        tokio::time::timeout(std::time::Duration::from_secs(60), rt.wait(SESSION))
            .await
            .expect("the resumed run did not finish")
            .unwrap()
            .expect("a run was in flight")
    } else {
        rt.client(agent)
            .unwrap()
            .run("record two effects", RunOptions::new().session_id(SESSION).run_id(RUN))
            .await
            .unwrap()
    };
    assert_eq!(output.reply.as_deref(), Some(reply));
    let history = rt.history(SESSION).await.unwrap();
    println!("HISTORY {}", serde_json::to_string(&history).unwrap());
}

fn spawn(db: &Path, effects: &Path, crash_at: &str, mode: &str) -> (Child, BufReader<ChildStdout>) {
    spawn_with(db, effects, crash_at, mode, false)
}

fn spawn_with(db: &Path, effects: &Path, crash_at: &str, mode: &str, tree: bool) -> (Child, BufReader<ChildStdout>) {
    let mut envs: Vec<(&str, &OsStr)> = vec![
        ("CRASH_DB", db.as_os_str()),
        ("CRASH_EFFECTS", effects.as_os_str()),
        ("CRASH_AT", OsStr::new(crash_at)),
        ("CRASH_MODE", OsStr::new(mode)),
    ];
    if tree {
        envs.push(("CRASH_TREE", OsStr::new("1")));
    }
    spawn_child("crash_child", &envs)
}

fn history_of(stdout: &mut BufReader<ChildStdout>) -> Vec<Message> {
    serde_json::from_str(&read_until(stdout, "HISTORY ")).unwrap()
}

struct Dirs {
    _dir: tempfile::TempDir,
    db: PathBuf,
    effects: PathBuf,
}

fn dirs() -> Dirs {
    let dir = tempfile::tempdir().unwrap();
    Dirs {
        db: dir.path().join("crash.db"),
        effects: dir.path().join("effects.log"),
        _dir: dir,
    }
}

fn uninterrupted() -> (Vec<Message>, String) {
    let d = dirs();
    let (mut child, mut out) = spawn(&d.db, &d.effects, "", "run");
    let history = history_of(&mut out);
    assert!(child.wait().unwrap().success());
    (history, std::fs::read_to_string(&d.effects).unwrap())
}

fn killed_then_resumed(crash_at: &str, ready: &str) -> (Vec<Message>, String) {
    let d = dirs();
    let (mut child, mut out) = spawn(&d.db, &d.effects, crash_at, "run");
    read_until(&mut out, &format!("READY {ready}"));
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success());
    let (mut child, mut out) = spawn(&d.db, &d.effects, "", "resume");
    let history = history_of(&mut out);
    assert!(child.wait().unwrap().success());
    (history, std::fs::read_to_string(&d.effects).unwrap())
}

fn effects_once(effects: &str) {
    let lines: Vec<&str> = effects.lines().collect();
    assert_eq!(
        lines,
        [
            format!("{SESSION}/{RUN}/call_1\tfirst"),
            format!("{SESSION}/{RUN}/call_2\tsecond")
        ],
        "each effect exactly once"
    );
}

#[test]
fn killed_during_a_model_call_the_run_resumes_and_finishes_the_same() {
    let (expected, clean_effects) = uninterrupted();
    effects_once(&clean_effects);
    assert_eq!(expected.len(), 6, "user, call, result, call, result, answer");
    // The second model call comes after the first tool call finished.
    let (history, effects) = killed_then_resumed("model:2", "model");
    assert_eq!(history, expected);
    effects_once(&effects);
}

#[test]
fn killed_during_a_tool_call_the_effect_is_not_repeated() {
    let (expected, _) = uninterrupted();
    // The second tool call performed its effect, then the process died before
    // its result was journaled: the restart calls it again with the same key.
    let (history, effects) = killed_then_resumed("tool", "tool");
    assert_eq!(history, expected);
    effects_once(&effects);
}

#[test]
fn killed_while_a_child_run_calls_a_tool_the_parent_finishes_and_the_effect_is_not_repeated() {
    // A router calls the worker agent as a tool; the worker's second tool
    // call performs its effect, then the process dies.
    let d = dirs();
    let (mut child, mut out) = spawn_with(&d.db, &d.effects, "tool", "run", true);
    read_until(&mut out, "READY tool");
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());
    let (mut child, mut out) = spawn_with(&d.db, &d.effects, "", "resume", true);
    let history = history_of(&mut out);
    assert!(child.wait().unwrap().success());
    assert_eq!(
        history.len(),
        4,
        "user, call of the worker, its answer, the router's reply: {history:?}"
    );
    assert_eq!(
        history[3].text(),
        "router: done: first, second",
        "the answer is complete"
    );
    let effects = std::fs::read_to_string(&d.effects).unwrap();
    let child_session = format!("{SESSION}:call_1");
    let lines: Vec<&str> = effects.lines().collect();
    assert_eq!(
        lines,
        [
            format!("{child_session}/r1/call_1\tfirst"),
            format!("{child_session}/r1/call_2\tsecond")
        ],
        "the child's effects, each exactly once"
    );
}
