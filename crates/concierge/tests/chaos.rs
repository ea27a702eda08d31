//! The chaos suite: processes killed at random points, several processes on
//! one SQLite database at once, models and MCP servers that hang, refuse or
//! die. Every scenario ends with the same checks (see `harness::Scenario::check`):
//! every turn a process reported done is in its session's history exactly
//! once, and every side-effecting call ran once per idempotency key (the
//! tools append each invocation, with its key and pid, to a ledger file).
//!
//! Children are this test binary re-executed (`chaos_child`, ignored as a test
//! of its own); `CHAOS_ROLE` picks what a child does. Every random choice
//! derives from one seed: `CHAOS_SEED=<n>` replays a run; failures quote it.
//!
//! Turns are labelled `<name>~<plan>`: the plan spells the turn's tool calls,
//! `r` for `record` (a side effect) and `p` for `pay` (a side effect that
//! needs the person's approval). The model reads the plan from the label, so
//! any process, given the history, asks for the same calls.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "chaos/harness.rs"]
mod harness;

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use concierge::model::{Model, ModelContext, ModelError, OpenAiCompatible, RetryPolicy, ScriptedModel};
use concierge::{
    AgentSpec, Decision, Error, Message, ModelReply, ModelRequest, PendingConfirmation, RunOptions, RunStatus, Runtime,
    RuntimeBuilder, StepError, ToolContext, ToolErrorKind, ToolOutcome, tool,
};
use futures::future::BoxFuture;
use harness::{Proc, Scenario, seed};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const AGENT: &str = "worker";

// ----- turns, plans and the deterministic model -----

/// One planned tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Record,
    Pay,
}

/// The tool calls of turn `label` (spelled after its `~`).
fn plan(label: &str) -> Vec<Call> {
    let spelled = label.split_once('~').map(|(_, p)| p).unwrap_or("");
    spelled
        .chars()
        .map(|c| if c == 'p' { Call::Pay } else { Call::Record })
        .collect()
}

/// A random plan of up to three calls, a third of them needing approval.
fn random_plan(rng: &mut fastrand::Rng) -> String {
    (0..rng.usize(0..=3))
        .map(|_| if rng.usize(0..3) == 0 { 'p' } else { 'r' })
        .collect()
}

fn user_text(label: &str) -> String {
    format!("turn {label}")
}

fn done_text(label: &str) -> String {
    format!("done {label}")
}

/// The turn the request is about (its last user message) and how many tool
/// results it has had since.
fn current_turn(messages: &[Message]) -> Option<(String, usize)> {
    let at = messages.iter().rposition(|m| matches!(m, Message::User { .. }))?;
    let Message::User { content } = &messages[at] else {
        return None;
    };
    let label = content.strip_prefix("turn ")?.to_string();
    let results = messages[at..]
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .count();
    Some((label, results))
}

/// Answers from the turn's plan; blocks forever at `CHAOS_BLOCK=model:<label>/<n>`
/// (the n-th model call of the turn), for a kill at a known point.
struct ChaosModel;

impl Model for ChaosModel {
    fn name(&self) -> String {
        "chaos:deterministic".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let turn = current_turn(&request.messages);
        Box::pin(async move {
            let Some((label, results)) = turn else {
                return Ok(ModelReply::text("no turn to work on"));
            };
            say(&format!("STEP model {label}/{results}"));
            if block_at() == format!("model:{label}/{results}") {
                say(&format!("BLOCKED model {label}/{results}"));
                futures::future::pending::<()>().await;
            }
            let calls = plan(&label);
            Ok(match calls.get(results) {
                Some(Call::Record) => {
                    ModelReply::tool_call("record", json!({"label": format!("{label}/{results}")}).to_string())
                }
                Some(Call::Pay) => {
                    ModelReply::tool_call("pay", json!({"label": format!("{label}/{results}")}).to_string())
                }
                None => ModelReply::text(done_text(&label)),
            })
        })
    }
}

// ----- the side-effecting tools -----

#[derive(Deserialize, JsonSchema)]
struct EffectArgs {
    /// The logical call: `<turn label>/<index>`.
    label: String,
}

/// Records an effect in the ledger.
#[tool]
async fn record(args: EffectArgs, cx: ToolContext) -> Result<Value, String> {
    effect(&args.label, &cx).await
}

/// Pays (needs the person's approval); records the payment in the ledger.
#[tool(requires_confirmation)]
async fn pay(args: EffectArgs, cx: ToolContext) -> Result<Value, String> {
    effect(&args.label, &cx).await
}

/// Appends `key<TAB>label<TAB>pid` to the ledger in one O_APPEND write. Takes
/// `CHAOS_TOOL_MS` first (a slow tool widens the windows where processes
/// overlap); blocks forever after the effect at `CHAOS_BLOCK=tool:<label>`.
async fn effect(label: &str, cx: &ToolContext) -> Result<Value, String> {
    let key = cx.idempotency_key.to_string();
    say(&format!("STEP tool {label}"));
    if let Some(ms) = std::env::var("CHAOS_TOOL_MS").ok().and_then(|v| v.parse().ok()) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let path = std::env::var("CHAOS_LEDGER").map_err(|e| e.to_string())?;
    let line = format!("{key}\t{label}\t{}\n", std::process::id());
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| e.to_string())?;
    file.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
    file.sync_all().map_err(|e| e.to_string())?;
    say(&format!("STEP effect {label}"));
    if block_at() == format!("tool:{label}") {
        say(&format!("BLOCKED tool {label}"));
        futures::future::pending::<()>().await;
    }
    Ok(json!({"done": label, "key": key}))
}

// ----- the child process -----

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

fn block_at() -> String {
    env("CHAOS_BLOCK")
}

/// The child's runtime: the worker agent, its tools and the model `CHAOS_MODEL` names
/// (`scripted`, the default; `refused:<port>`, an endpoint nobody listens on;
/// `no-agent`, a configuration without the agent, its tools or a model).
fn child_builder() -> RuntimeBuilder {
    let builder = Runtime::builder()
        .sqlite(env("CHAOS_DB"))
        .idle_timeout(Duration::from_millis(100))
        .busy_timeout(Duration::from_secs(10));
    let model = env("CHAOS_MODEL");
    if model == "no-agent" {
        return builder;
    }
    let builder = configured(builder);
    match model.strip_prefix("refused:") {
        Some(port) => builder
            .model(
                OpenAiCompatible::new("chaos")
                    .base_url(format!("http://127.0.0.1:{port}/v1"))
                    .timeout(Duration::from_secs(2)),
            )
            .retry(RetryPolicy {
                max_attempts: 2,
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(20),
            }),
        None => builder.model(ChaosModel),
    }
}

/// The worker agent, its tools and the deterministic model.
fn configured(builder: RuntimeBuilder) -> RuntimeBuilder {
    builder.tool(Record).tool(Pay).model(ChaosModel).agent(
        AgentSpec::new(AGENT)
            .instructions("Do what the turn's plan says.")
            .tool("record")
            .tool("pay"),
    )
}

/// Waits for `GO` on stdin when `CHAOS_GO` is set (so siblings start at once).
fn ready_set_go() {
    if std::env::var("CHAOS_GO").is_ok() {
        say("READY");
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
    }
}

/// Rejections that mean "someone else's run is in the way": try again.
fn in_the_way(error: &Error) -> bool {
    matches!(error, Error::Rejected(StepError::RunInProgress { .. }))
}

enum Drove {
    Finished,
    Parked(PendingConfirmation),
}

/// Takes turn `label` in `session` to its end, whatever state an earlier
/// (killed) process or another process left it in: starts it, waits for it,
/// approves its calls (unless `approve` is false: then returns when it parks).
/// `obstacle` says what stood in the way last, for the message if the turn never ends.
async fn drive(
    rt: &Runtime,
    session: &str,
    label: &str,
    approve: bool,
    obstacle: &mut String,
) -> Result<Drove, String> {
    let client = rt.client(AGENT).map_err(|e| e.to_string())?;
    let call_prefix = format!("{label}/");
    loop {
        let state = match rt.session(session).await {
            Ok(state) => Some(state),
            Err(Error::SessionNotFound(_)) => None,
            Err(e) => return Err(format!("reading session {session}: {e}")),
        };
        let history = state.as_ref().map(|s| s.history().to_vec()).unwrap_or_default();
        let has = |text: &str| {
            history.iter().any(|m| match m {
                Message::User { content } | Message::Assistant { content, .. } => content == text,
                _ => false,
            })
        };
        if has(&done_text(label)) {
            return Ok(Drove::Finished);
        }
        let pending = state.as_ref().and_then(|s| s.pending_confirmation()).filter(|p| {
            p.arguments["label"]
                .as_str()
                .is_some_and(|l| l.starts_with(&call_prefix))
        });
        if let Some(pending) = pending {
            if !approve {
                return Ok(Drove::Parked(pending));
            }
            *obstacle = format!("approving {} (parked)", pending.call_id);
            match rt.answer(&pending, session, true).await {
                Ok(_) => {}
                Err(e) if in_the_way(&e) => {
                    *obstacle = format!("approving {}: {e}", pending.call_id);
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                Err(e) => return Err(format!("approving {} of turn {label}: {e}", pending.call_id)),
            }
            continue;
        }
        if !has(&user_text(label)) {
            *obstacle = "starting the turn".into();
            match client
                .run(user_text(label), RunOptions::new().session_id(session))
                .await
            {
                Ok(_) => {}
                Err(e) if in_the_way(&e) => {
                    *obstacle = format!("starting the turn: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                Err(e) => return Err(format!("starting turn {label} in session {session}: {e}")),
            }
            continue;
        }
        if let Some(run) = state.as_ref().and_then(|s| s.active_run()) {
            *obstacle = format!("waiting for run {run}, in flight");
            match rt.wait(session).await {
                Ok(Some(_)) => {}
                Ok(None) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) if in_the_way(&e) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => return Err(format!("waiting for turn {label} in session {session}: {e}")),
            }
            continue;
        }
        let last = state.as_ref().and_then(|s| s.last_output());
        return Err(format!(
            "turn {label} started but its run ended without its answer (last run: {:?}, error: {:?})",
            last.map(|o| o.status),
            last.and_then(|o| o.error.clone())
        ));
    }
}

/// How long a child gives one turn (longer than the busy timeout).
const TURN_BOUND: Duration = Duration::from_secs(15);

/// The child process. Not a test by itself: the scenarios below run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the chaos suite"]
async fn chaos_child() {
    match env("CHAOS_ROLE").as_str() {
        "worker" => worker().await,
        "reader" => reader().await,
        "confirm" => confirmer().await,
        "recover" => recoverer().await,
        other => say(&format!("ERROR - unknown role {other:?}")),
    }
}

/// `CHAOS_PLAN=<session>:<label>,...`: takes each turn to its end, printing
/// `DONE <session> <label>`, then `ALLDONE`. With `CHAOS_NOCONFIRM` it stops
/// at the first parked call instead, printing `PARKED <session> <call> <fingerprint>`.
async fn worker() {
    let turns: Vec<(String, String)> = env("CHAOS_PLAN")
        .split(',')
        .filter_map(|t| t.split_once(':'))
        .map(|(s, l)| (s.to_string(), l.to_string()))
        .collect();
    let rt = match child_builder().build().await {
        Ok(rt) => rt,
        Err(e) => return say(&format!("ERROR - opening the database: {e}")),
    };
    say(&format!("OPENED {}", rt.recovered().len()));
    ready_set_go();
    let approve = std::env::var("CHAOS_NOCONFIRM").is_err();
    for (session, label) in &turns {
        let mut obstacle = String::new();
        let drove = tokio::time::timeout(TURN_BOUND, drive(&rt, session, label, approve, &mut obstacle)).await;
        let drove = drove.unwrap_or_else(|_| {
            Err(format!(
                "turn {label} in session {session} did not finish within {} s; it was {obstacle}",
                TURN_BOUND.as_secs()
            ))
        });
        match drove {
            Ok(Drove::Finished) => say(&format!("DONE {session} {label}")),
            Ok(Drove::Parked(p)) => {
                say(&format!("PARKED {session} {} {}", p.call_id, p.fingerprint));
                break;
            }
            Err(e) => {
                say(&format!("ERROR {label} {e}"));
                break;
            }
        }
    }
    rt.shutdown().await;
    say("ALLDONE");
}

/// What `concierge sessions` and `concierge history` do: lists the sessions
/// and reads each history, read-only.
async fn reader() {
    let rt = match child_builder().read_only().build().await {
        Ok(rt) => rt,
        Err(e) => return say(&format!("ERROR - opening the database read-only: {e}")),
    };
    let mut messages = 0;
    match rt.sessions().await {
        Ok(sessions) => {
            for s in &sessions {
                match rt.history(s.id.clone()).await {
                    Ok(h) => messages += h.len(),
                    Err(e) => say(&format!("ERROR - reading the history of {}: {e}", s.id)),
                }
            }
            say(&format!("READ {} sessions, {messages} messages", sessions.len()));
        }
        Err(e) => say(&format!("ERROR - listing sessions: {e}")),
    }
    rt.shutdown().await;
}

/// Approves `CHAOS_CALL` (`CHAOS_FP`) in `CHAOS_SESSION` at `GO`; prints
/// `CONFIRM ok <status>` or `CONFIRM err <message>`, and `DONE` if the turn finished.
async fn confirmer() {
    let (session, label) = (env("CHAOS_SESSION"), env("CHAOS_LABEL"));
    let rt = match child_builder().build().await {
        Ok(rt) => rt,
        Err(e) => return say(&format!("CONFIRM err opening the database: {e}")),
    };
    ready_set_go();
    match rt
        .confirm(session.as_str(), env("CHAOS_CALL"), env("CHAOS_FP"), Decision::Approve)
        .await
    {
        Ok(out) => {
            say(&format!("CONFIRM ok {:?}", out.status));
            if out.reply.as_deref() == Some(done_text(&label).as_str()) {
                say(&format!("DONE {session} {label}"));
            }
        }
        Err(e) => say(&format!("CONFIRM err {e}")),
    }
    rt.shutdown().await;
}

/// Opens the database (with the configuration `CHAOS_MODEL` names) and waits
/// a little for `CHAOS_SESSION`'s run; prints `RECOVERY <what happened>`.
async fn recoverer() {
    let rt = match child_builder().build().await {
        Ok(rt) => rt,
        Err(e) => return say(&format!("RECOVERY open failed: {e}")),
    };
    say(&format!("OPENED {}", rt.recovered().len()));
    match tokio::time::timeout(Duration::from_secs(5), rt.wait(env("CHAOS_SESSION"))).await {
        Ok(Ok(Some(out))) => say(&format!("RECOVERY {:?} {}", out.status, out.error.unwrap_or_default())),
        Ok(Ok(None)) => say("RECOVERY nothing running"),
        Ok(Err(e)) => say(&format!("RECOVERY error {e}")),
        Err(_) => say("RECOVERY still pending"),
    }
    rt.shutdown().await;
}

// ----- scenario helpers -----

fn plan_env(session: &str, labels: &[String]) -> (&'static str, String) {
    let turns: Vec<String> = labels.iter().map(|l| format!("{session}:{l}")).collect();
    ("CHAOS_PLAN", turns.join(","))
}

fn labels(rng: &mut fastrand::Rng, prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}~{}", random_plan(rng))).collect()
}

fn strs(labels: &[String]) -> Vec<&str> {
    labels.iter().map(String::as_str).collect()
}

/// One process per turn, in order (as a person running `concierge run` in a
/// loop would); the processes, for the caller to absorb.
fn writer_loop(sc: &Scenario, name: &str, session: &str, labels: &[String]) -> Vec<Proc> {
    let mut procs = Vec::new();
    for label in labels {
        let mut proc = sc.spawn(
            &format!("{name} turn {label}"),
            "worker",
            &[
                plan_env(session, std::slice::from_ref(label)),
                ("CHAOS_TOOL_MS", "15".into()),
            ],
        );
        proc.finish(sc.deadline(), &sc.tag());
        let failed = !proc.lines_with("ERROR ").is_empty();
        procs.push(proc);
        if failed {
            break;
        }
    }
    procs
}

// ----- 1. random kill points -----

/// A child runs scripted turns with tools and approvals; it is SIGKILLed at
/// random points (during startup and recovery, in model calls, before and
/// after effects, while parked) and restarted until every turn is done.
#[test]
fn random_kill_points_lose_no_turn_and_repeat_no_effect() {
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut sc = Scenario::new("random-kill-points", seed);
    let tag = sc.tag();
    let (mut kills, mut spawns) = (0, 0);
    let mut expected = Vec::new();
    let mut epoch = 0;
    while kills < 32 && epoch < 12 && sc.errors.is_empty() {
        let session = format!("k{epoch}");
        let turns = labels(&mut rng, &format!("k{epoch}t"), 8);
        expected.extend(turns.clone());
        let plan = plan_env(&session, &turns);
        let mut finished = false;
        for attempt in 0..80 {
            spawns += 1;
            let mut proc = sc.spawn(
                &format!("worker {session}#{attempt}"),
                "worker",
                std::slice::from_ref(&plan),
            );
            let deadline = sc.deadline();
            // Kill after `steps` model or tool steps (0: during startup and recovery).
            let steps = rng.usize(0..=8);
            let mut seen = 0;
            let mut ended = false;
            if steps == 0 {
                std::thread::sleep(Duration::from_millis(rng.u64(0..25)));
            } else {
                loop {
                    match proc.next_line(deadline) {
                        Some(line) if line.starts_with("STEP ") => {
                            seen += 1;
                            if seen >= steps {
                                break;
                            }
                        }
                        Some(line) if line == "ALLDONE" => {
                            ended = true;
                            break;
                        }
                        Some(_) => {}
                        None => {
                            ended = true;
                            break;
                        }
                    }
                }
            }
            if ended {
                proc.finish(deadline, &tag);
            } else {
                std::thread::sleep(Duration::from_micros(rng.u64(0..3000)));
                proc.kill(deadline);
                if !proc.seen.iter().any(|l| l == "ALLDONE") {
                    sc.killed.insert(proc.pid());
                    kills += 1;
                }
            }
            sc.absorb(&proc);
            if proc.seen.iter().any(|l| l == "ALLDONE") || !sc.errors.is_empty() {
                finished = true;
                break;
            }
        }
        assert!(finished, "{tag}: session {session} was not done after 80 restarts");
        epoch += 1;
    }
    let ledger = harness::ledger(&sc.ledger);
    let keys: std::collections::BTreeSet<&str> = ledger.iter().map(|i| i.key.as_str()).collect();
    eprintln!(
        "{tag}: {kills} kill points over {spawns} processes, {} turns, {} side effects, {} of them run again after a kill",
        expected.len(),
        keys.len(),
        ledger.len() - keys.len()
    );
    sc.check(&strs(&expected));
    assert!(kills >= 30, "{tag}: only {kills} kill points");
}

// ----- 2. several processes on one database -----

/// (a) Two writers take turns in the same session at the same time, one
/// process per turn: no turn is lost or doubled, no call runs twice.
#[test]
fn two_writers_on_one_session_lose_no_turn() {
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut sc = Scenario::new("two-writers-one-session", seed);
    let a = labels(&mut rng, "A", 6);
    let b = labels(&mut rng, "B", 6);
    // The session exists first: creating one at once is scenario (d).
    let first = "S0~r".to_string();
    sc.run_to_end("creator", "worker", &[plan_env("shared", std::slice::from_ref(&first))]);
    let (pa, pb) = std::thread::scope(|s| {
        let ta = s.spawn(|| writer_loop(&sc, "writer A", "shared", &a));
        let tb = s.spawn(|| writer_loop(&sc, "writer B", "shared", &b));
        (
            ta.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            tb.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
        )
    });
    for p in pa.iter().chain(&pb) {
        sc.absorb(p);
    }
    let all: Vec<String> = std::iter::once(&first).chain(&a).chain(&b).cloned().collect();
    sc.check(&strs(&all));
}

/// (b) Two writers on different sessions while a third process keeps
/// running read-only commands: nobody takes anybody's session over.
#[test]
fn two_writers_on_two_sessions_and_a_reader_take_nothing_from_each_other() {
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut sc = Scenario::new("two-writers-two-sessions-one-reader", seed);
    let a = labels(&mut rng, "a", 6);
    let b = labels(&mut rng, "b", 6);
    let writers_done = AtomicBool::new(false);
    let (pa, pb, readers) = std::thread::scope(|s| {
        let ta = s.spawn(|| writer_loop(&sc, "writer a", "sa", &a));
        let tb = s.spawn(|| writer_loop(&sc, "writer b", "sb", &b));
        let tr = s.spawn(|| {
            let mut procs = Vec::new();
            for i in 0..40 {
                if writers_done.load(Ordering::SeqCst) {
                    break;
                }
                let mut proc = sc.spawn(&format!("reader {i}"), "reader", &[]);
                proc.finish(sc.deadline(), &sc.tag());
                procs.push(proc);
            }
            procs
        });
        let pa = ta.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        let pb = tb.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        writers_done.store(true, Ordering::SeqCst);
        (pa, pb, tr.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    });
    for p in pa.iter().chain(&pb) {
        sc.absorb(p);
    }
    for r in &readers {
        sc.readers.insert(r.pid());
        sc.absorb(r);
    }
    let tag = sc.tag();
    assert!(!readers.is_empty(), "{tag}: no reader ran");
    for r in &readers {
        assert!(
            !r.lines_with("READ ").is_empty(),
            "{tag}: {} did not read (output {:?}, stderr {})",
            r.name,
            r.seen,
            r.stderr_tail()
        );
    }
    let all: Vec<String> = a.iter().chain(&b).cloned().collect();
    sc.check(&strs(&all));
}

/// Starts a turn whose first call needs approval, in a process that stops
/// once it is parked; returns (call id, fingerprint).
fn park(sc: &mut Scenario, session: &str, label: &str) -> (String, String) {
    let tag = sc.tag();
    let proc = sc.run_to_end(
        "parker",
        "worker",
        &[plan_env(session, &[label.to_string()]), ("CHAOS_NOCONFIRM", "1".into())],
    );
    let parked = proc.lines_with("PARKED ");
    let Some(parked) = parked.first() else {
        panic!(
            "{tag}: the turn did not park (output {:?}, stderr {})",
            proc.seen,
            proc.stderr_tail()
        )
    };
    let parts: Vec<&str> = parked.split_whitespace().collect();
    (parts[1].to_string(), parts[2].to_string())
}

/// (c) Two processes approve the same parked call at the same instant:
/// exactly one runs it, the other gets a clear error.
#[test]
fn two_processes_confirming_one_parked_call_run_it_once() {
    let seed = seed();
    let mut sc = Scenario::new("two-confirmations", seed);
    let tag = sc.tag();
    let label = "C0~pr";
    let (call, fingerprint) = park(&mut sc, "c", label);
    let env = [
        ("CHAOS_GO", "1".to_string()),
        ("CHAOS_SESSION", "c".into()),
        ("CHAOS_LABEL", label.into()),
        ("CHAOS_CALL", call),
        ("CHAOS_FP", fingerprint),
    ];
    let mut one = sc.spawn("confirmer 1", "confirm", &env);
    let mut two = sc.spawn("confirmer 2", "confirm", &env);
    let deadline = sc.deadline();
    one.expect("READY", deadline, &tag);
    two.expect("READY", deadline, &tag);
    one.go();
    two.go();
    one.finish(deadline, &tag);
    two.finish(deadline, &tag);
    sc.absorb(&one);
    sc.absorb(&two);
    let answers: Vec<String> = one
        .lines_with("CONFIRM ")
        .into_iter()
        .chain(two.lines_with("CONFIRM "))
        .collect();
    let ok = answers.iter().filter(|a| a.starts_with("ok ")).count();
    let errors: Vec<&String> = answers.iter().filter(|a| a.starts_with("err ")).collect();
    assert!(
        ok == 1 && errors.len() == 1,
        "{tag}: expected one approval to go through and one clear error; got {answers:?}"
    );
    let error = errors[0].to_lowercase();
    assert!(
        !error.contains("constraint") && !error.contains("storage") && error.len() > 10,
        "{tag}: the second approval's error is not clear: {error}"
    );
    let pays = harness::ledger(&sc.ledger)
        .into_iter()
        .filter(|i| i.label == "C0~pr/0")
        .count();
    assert_eq!(pays, 1, "{tag}: the approved payment C0~pr/0 ran {pays} times");
    sc.check(&[label]);
}

/// (d) Two processes create the same new session at the same instant: no
/// `UNIQUE constraint` error, both turns land.
#[test]
fn two_processes_creating_one_session_both_land() {
    let seed = seed();
    let mut sc = Scenario::new("two-creators", seed);
    let tag = sc.tag();
    let (la, lb) = ("D-A~r".to_string(), "D-B~r".to_string());
    let mut one = sc.spawn(
        "creator A",
        "worker",
        &[plan_env("fresh", std::slice::from_ref(&la)), ("CHAOS_GO", "1".into())],
    );
    let mut two = sc.spawn(
        "creator B",
        "worker",
        &[plan_env("fresh", std::slice::from_ref(&lb)), ("CHAOS_GO", "1".into())],
    );
    let deadline = sc.deadline();
    one.expect("READY", deadline, &tag);
    two.expect("READY", deadline, &tag);
    one.go();
    two.go();
    one.finish(deadline, &tag);
    two.finish(deadline, &tag);
    sc.absorb(&one);
    sc.absorb(&two);
    sc.check(&[&la, &lb]);
}

/// (e) A writer is killed mid-run; read-only commands run while it is alive
/// and after it died, and take nothing over; a third process opens the
/// database and finishes the run (its owner is dead), running the
/// interrupted call again under the same key only.
#[test]
fn a_killed_writers_run_is_finished_by_a_third_process_not_by_readers() {
    let seed = seed();
    let mut sc = Scenario::new("killed-writer-readers-finisher", seed);
    let tag = sc.tag();
    let label = "E0~rrr".to_string();
    let plan = plan_env("e", std::slice::from_ref(&label));
    let mut writer = sc.spawn(
        "writer",
        "worker",
        &[plan.clone(), ("CHAOS_BLOCK", "tool:E0~rrr/1".into())],
    );
    let deadline = sc.deadline();
    writer.expect("BLOCKED", deadline, &tag);
    let alive = sc.run_to_end("reader (writer alive)", "reader", &[]);
    sc.readers.insert(alive.pid());
    sc.killed.insert(writer.pid());
    writer.kill(deadline);
    sc.absorb(&writer);
    let dead = sc.run_to_end("reader (writer dead)", "reader", &[]);
    sc.readers.insert(dead.pid());
    for r in [&alive, &dead] {
        assert!(
            !r.lines_with("READ ").is_empty(),
            "{tag}: {} did not read: {:?} {}",
            r.name,
            r.seen,
            r.stderr_tail()
        );
    }
    let finisher = sc.run_to_end("finisher", "worker", &[plan]);
    assert!(
        finisher.lines_with("DONE ").len() == 1,
        "{tag}: the third process did not finish the killed writer's turn: {:?} {}",
        finisher.seen,
        finisher.stderr_tail()
    );
    sc.check(&[&label]);
}

// ----- 3. model fault modes -----

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(20),
    }
}

/// An in-process runtime with two agents: `faulty` on `model`, `fine` on a scripted model.
async fn faulty_and_fine(model: OpenAiCompatible, db: &std::path::Path) -> Runtime {
    let fine = ScriptedModel::from_fn(|request| {
        let n = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count();
        Ok(ModelReply::text(format!("fine {n}")))
    });
    Runtime::builder()
        .agent(AgentSpec::new("faulty").model("faulty"))
        .agent(AgentSpec::new("fine"))
        .named_model("faulty", std::sync::Arc::new(model))
        .model(fine)
        .retry(fast_retry())
        .sqlite(db)
        .build()
        .await
        .unwrap()
}

/// Runs one turn on the faulty agent while another session keeps working;
/// returns the faulty run's error.
async fn faulty_run_fails(model: OpenAiCompatible, scenario: &str, accepted: Option<&tokio::sync::Notify>) -> String {
    let tag = format!("[chaos scenario={scenario}]");
    let dir = tempfile::tempdir().unwrap();
    let rt = faulty_and_fine(model, &dir.path().join("faults.db")).await;
    let handle = rt
        .client("faulty")
        .unwrap()
        .start("hello", RunOptions::new().session_id("faulty"))
        .await
        .unwrap();
    if let Some(accepted) = accepted {
        accepted.notified().await;
    }
    // Other sessions keep working meanwhile.
    for i in 1..=3 {
        let out = rt
            .client("fine")
            .unwrap()
            .run(format!("hi {i}"), RunOptions::new().session_id("fine"))
            .await
            .unwrap();
        assert_eq!(out.reply, Some(format!("fine {i}")), "{tag}: the other session");
    }
    // A liveness guard, not a timing assertion: a hung run fails here.
    let out = tokio::time::timeout(Duration::from_secs(60), handle.wait())
        .await
        .unwrap_or_else(|_| panic!("{tag}: the run hung past its model timeout"))
        .unwrap();
    assert_eq!(out.status, RunStatus::Failed, "{tag}: {out:?}");
    let error = out.error.unwrap_or_default();
    eprintln!("{tag}: the run failed with: {error}");
    rt.shutdown().await;
    error
}

/// A model endpoint that accepts connections and never answers: the run
/// fails on the model's timeout, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_never_answers_times_out_and_other_sessions_go_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
            signal.notify_one();
        }
    });
    let model = OpenAiCompatible::new("m")
        .base_url(format!("http://{addr}/v1"))
        .timeout(Duration::from_secs(1));
    let error = faulty_run_fails(model, "model-never-answers", Some(&accepted)).await;
    let lower = error.to_lowercase();
    assert!(
        lower.contains("timed out") || lower.contains("timeout") || lower.contains("did not answer within"),
        "[chaos scenario=model-never-answers] the error does not name the timeout: {error}"
    );
}

/// A model endpoint that refuses connections: the run fails saying it could not connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_refuses_connections_fails_the_run_saying_so() {
    let port = closed_port();
    let model = OpenAiCompatible::new("m")
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .timeout(Duration::from_secs(5));
    let error = faulty_run_fails(model, "model-refuses", None).await;
    let lower = error.to_lowercase();
    assert!(
        lower.contains("connect") || lower.contains("refused"),
        "[chaos scenario=model-refuses] the error does not name the refused connection: {error}"
    );
    assert!(
        error.contains(&port.to_string()),
        "the error names the endpoint: {error}"
    );
}

/// A model endpoint answering 500: the run fails naming the status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_answering_500_fails_the_run_naming_the_status() {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(wiremock::ResponseTemplate::new(500).set_body_string("the model server is on fire"))
        .mount(&server)
        .await;
    let model = OpenAiCompatible::new("m")
        .base_url(format!("{}/v1", server.uri()))
        .timeout(Duration::from_secs(5));
    let error = faulty_run_fails(model, "model-500", None).await;
    assert!(
        error.contains("500"),
        "[chaos scenario=model-500] the error does not name the status: {error}"
    );
    let calls = server.received_requests().await.unwrap_or_default().len();
    assert_eq!(calls, 2, "[chaos scenario=model-500] retried once (2 attempts)");
}

/// A port nobody listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A writer is killed at `block` (in a model call or right after an effect); a process opens the
/// database with `configuration` (which cannot run the model); the run must
/// stay pending (not failed), and a process with a working model finishes it.
fn recovery_that_cannot_proceed_keeps_the_run(scenario: &str, configuration: String, block: &str) {
    let seed = seed();
    let mut sc = Scenario::new(scenario, seed);
    let tag = sc.tag();
    let label = "P0~rr".to_string();
    let plan = plan_env("p", std::slice::from_ref(&label));
    let mut writer = sc.spawn("writer", "worker", &[plan.clone(), ("CHAOS_BLOCK", block.into())]);
    let deadline = sc.deadline();
    writer.expect("BLOCKED", deadline, &tag);
    sc.killed.insert(writer.pid());
    writer.kill(deadline);
    sc.absorb(&writer);
    let recoverer = sc.run_to_end(
        "recoverer without a working model",
        "recover",
        &[("CHAOS_MODEL", configuration), ("CHAOS_SESSION", "p".into())],
    );
    let recovery = recoverer.lines_with("RECOVERY ").join(" | ");
    let finisher = sc.run_to_end("finisher", "worker", &[plan]);
    assert!(
        finisher.lines_with("DONE ").len() == 1,
        "{tag}: the process with a working model did not finish the interrupted turn \
         (the process that could not run it reported: {recovery:?}); finisher output {:?}",
        finisher.seen
    );
    assert!(
        !recovery.contains("Failed"),
        "{tag}: the process that could not run the model failed the run: {recovery}"
    );
    sc.check(&[&label]);
}

/// Recovery by a process whose model is unreachable leaves the run pending.
#[test]
fn an_in_flight_run_whose_model_is_unreachable_at_recovery_stays_pending() {
    recovery_that_cannot_proceed_keeps_the_run(
        "recovery-model-unreachable",
        format!("refused:{}", closed_port()),
        "model:P0~rr/1",
    );
}

/// Recovery by a process without the agent's configuration leaves the run
/// pending, and does not run its calls again later.
#[test]
fn an_in_flight_run_opened_without_its_agent_stays_pending() {
    recovery_that_cannot_proceed_keeps_the_run("recovery-without-agent", "no-agent".into(), "model:P0~rr/1");
}

/// `concierge history` run with another configuration (without the agent):
/// a read-only process must still see every message of every session.
#[test]
fn a_reader_without_the_agents_configuration_is_told_why_it_cannot_read() {
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut sc = Scenario::new("reader-without-configuration", seed);
    let tag = sc.tag();
    let turns = labels(&mut rng, "R", 3);
    sc.run_to_end("writer", "worker", &[plan_env("r", &turns)]);
    let configured = sc.run_to_end("configured reader", "reader", &[]);
    let bare = sc.run_to_end(
        "reader without the agent",
        "reader",
        &[("CHAOS_MODEL", "no-agent".into())],
    );
    sc.readers.insert(configured.pid());
    sc.readers.insert(bare.pid());
    let (with, without) = (configured.lines_with("READ "), bare.lines_with("READ "));
    // The core cannot replay a session without its agent: the reader is told
    // so (which session, which input, what to do), never shown a partial history.
    let told: Vec<String> = bare.lines_with("ERROR ");
    assert!(
        !with.is_empty()
            && (with == without
                || (!told.is_empty()
                    && told
                        .iter()
                        .all(|e| e.contains("cannot be loaded here") && e.contains("configuration")))),
        "{tag}: a reader with the agent's configuration read {with:?}; one without it read {without:?} \
         and said {told:?} (stderr: {})",
        bare.stderr_tail()
    );
    sc.errors.retain(|e| !e.starts_with("reader without the agent"));
    sc.check(&strs(&turns));
}

// ----- 4. an MCP server that dies mid-call -----

/// A stdio MCP server in `sh`: it lists `crash` and `echo`, answers `echo`,
/// and exits in the middle of a `crash` call.
const DYING_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | grep -o '"id":[0-9]*' | head -n 1 | cut -d: -f2)
  case "$line" in
    *'"method":"initialize"'*)
      v=$(printf '%s\n' "$line" | sed -n 's/.*"protocolVersion":"\([^"]*\)".*/\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"dying","version":"0.1.0"}}}\n' "$id" "$v" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"crash","description":"Dies in the middle of the call.","inputSchema":{"type":"object"}},{"name":"echo","description":"Says ok.","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
    *'"method":"tools/call"'*'"name":"crash"'*|*'"name":"crash"'*'"method":"tools/call"'*)
      exit 3 ;;
    *'"method":"tools/call"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}\n' "$id" ;;
    *'"method":"ping"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
  esac
done
"#;

/// The server dies in the middle of a call: the run reports the tool as
/// unavailable and finishes; another session keeps working; nothing hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_dying_mid_call_is_reported_unavailable_and_the_run_finishes() {
    let tag = "[chaos scenario=mcp-dies-mid-call]";
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::from_fn(|request| {
        let results = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool { .. }))
            .count();
        Ok(match results {
            0 => ModelReply::tool_call("crash", "{}"),
            1 => ModelReply::tool_call("echo", "{}"),
            _ => ModelReply::text("done"),
        })
    });
    let rt = Runtime::builder()
        .mcp_server(
            "dying",
            // Its tools carry no annotations, so they would ask first; trust it.
            concierge::mcp::McpServerConfig::stdio("sh", ["-c".to_string(), DYING_SERVER.to_string()])
                .timeout(Duration::from_secs(10))
                .trusted(),
        )
        .agent(AgentSpec::new("helper").toolset("dying"))
        .agent(AgentSpec::new("plain"))
        .model(model)
        .sqlite(dir.path().join("mcp.db"))
        .build()
        .await
        .unwrap();
    let handle = rt
        .client("helper")
        .unwrap()
        .start("go", RunOptions::new().session_id("m"))
        .await
        .unwrap();
    let other = rt
        .client("plain")
        .unwrap()
        .run("hello", RunOptions::new().session_id("other"))
        .await
        .unwrap();
    assert_eq!(other.status, RunStatus::Completed, "{tag}: the other session");
    // A liveness guard: a hung call fails here, long before the server's own timeout matters.
    let out = tokio::time::timeout(Duration::from_secs(60), handle.wait())
        .await
        .unwrap_or_else(|_| panic!("{tag}: the run hung after the server died"))
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{tag}: {out:?}");
    assert_eq!(out.reply.as_deref(), Some("done"), "{tag}");
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!(
            "{tag}: the call the server died in succeeded: {:?}",
            out.tool_executions[0]
        )
    };
    assert_eq!(error.kind, ToolErrorKind::Unavailable, "{tag}: {}", error.message);
    assert!(
        error.message.contains("dying"),
        "{tag}: the error names the server: {}",
        error.message
    );
    assert_eq!(out.tool_executions.len(), 2, "{tag}: the run went on after the crash");
    rt.shutdown().await;
}
