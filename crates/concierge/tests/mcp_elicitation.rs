//! MCP elicitation on the embedded engine (SQLite): the shared cases of
//! `cases/elicitation.rs` (concierge-temporal runs them on Temporal), and a
//! process killed while the question is open (and again after the answer)
//! that asks the person once and performs the effect once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support {
    pub mod child;
}

use std::io::BufReader;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdout};
use std::sync::atomic::Ordering;

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/elicitation.rs"]
mod cases;

use cases::{Shipper, Shipping, serve};
use concierge::mcp::{McpServerConfig, SamplingPolicy};
use concierge::{AgentSpec, ElicitationAnswer, RunOptions, RunStatus, Runtime};
use embedded::{EngineUnderTest, OnEngine};
use serde_json::json;

on_the_embedded_engine!(cases, EngineUnderTest::sqlite();
    accept_decline_and_cancel_reach_the_server_and_content_that_does_not_fit_is_refused,
    a_childs_question_is_asked_and_answered_through_the_parent,
    sampling_is_denied_by_default_allowed_within_the_cap_or_asked_and_its_tokens_count,
);

async fn runtime(addr: SocketAddr, db: &Path) -> Runtime {
    cases::builder(addr, SamplingPolicy::Deny)
        .sqlite(db)
        .build()
        .await
        .unwrap()
}

// ----- a process killed while the person thinks, and after they answered -----

const SESSION: &str = "ship-1";

/// The front desk's session, whose child asks.
const DESK: &str = "desk-1";

/// The child process: `ask` starts the run and prints the question;
/// `answer` resumes the run, finds the same question open (not asked
/// again) and answers it; `finish` resumes the run and waits for its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the elicitation restart test"]
async fn elicitation_child() {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .with_writer(std::io::stderr)
        .try_init();
    let db = std::env::var("ELICIT_DB").expect("ELICIT_DB");
    let addr: SocketAddr = std::env::var("ELICIT_ADDR").unwrap().parse().unwrap();
    let rt = runtime(addr, Path::new(&db)).await;
    match std::env::var("ELICIT_MODE").unwrap().as_str() {
        "ask" => {
            let out = rt
                .client("shop")
                .unwrap()
                .run("ship the lamp", RunOptions::new().session_id(SESSION))
                .await
                .unwrap();
            assert_eq!(out.status, RunStatus::AwaitingInput);
            println!("QUESTION {}", serde_json::to_string(&out.pending_elicitation).unwrap());
        }
        "answer" => {
            assert!(rt.recovered().contains(&SESSION.into()), "{:?}", rt.recovered());
            // A liveness guard, not a timing assertion.
            let out = tokio::time::timeout(std::time::Duration::from_secs(60), rt.wait(SESSION))
                .await
                .expect("the resumed run did not stop")
                .unwrap()
                .unwrap();
            assert_eq!(out.status, RunStatus::AwaitingInput);
            let pending = out.pending_elicitation.unwrap();
            println!("REASKED {}", pending.question);
            // The person answers once the server has asked again (the parent says when).
            let mut go = String::new();
            std::io::stdin().read_line(&mut go).unwrap();
            let answer = ElicitationAnswer::accept(json!({"city": "Oslo"}));
            let handle = rt.answer_question(SESSION, pending.call_id, pending.question, answer);
            // The server hangs after this accept: the parent kills us then.
            tokio::select! {
                _ = handle => panic!("the server was to hang after the first accept"),
                () = async {
                    loop {
                        let state = rt.session(SESSION).await.unwrap();
                        if state.pending_elicitation().is_none() {
                            break;
                        }
                        tokio::task::yield_now().await;
                    }
                } => println!("ANSWERED"),
            }
            futures::future::pending::<()>().await;
        }
        "finish" => {
            assert!(rt.recovered().contains(&SESSION.into()), "{:?}", rt.recovered());
            let out = tokio::time::timeout(std::time::Duration::from_secs(60), rt.wait(SESSION))
                .await
                .expect("the resumed run did not finish")
                .unwrap()
                .unwrap();
            println!("DONE {}", out.reply.unwrap_or_default());
        }
        "desk_ask" => {
            let out = rt
                .client("desk")
                .unwrap()
                .run("ship the lamp", RunOptions::new().session_id(DESK))
                .await
                .unwrap();
            assert_eq!(out.status, RunStatus::AwaitingInput);
            println!("QUESTION {}", serde_json::to_string(&out.pending_elicitation).unwrap());
            futures::future::pending::<()>().await;
        }
        "desk_answer" => {
            let pending = rt.session(DESK).await.unwrap().pending_elicitation().unwrap();
            assert!(pending.session.is_some(), "still the child's question");
            let answer = ElicitationAnswer::accept(json!({"city": "Lima"}));
            let out = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                rt.answer_question(DESK, pending.call_id, pending.question, answer),
            )
            .await
            .expect("the answer did not finish the run")
            .unwrap();
            println!("DONE {}", out.reply.unwrap_or_default());
        }
        other => panic!("unknown mode {other}"),
    }
}

fn spawn(db: &Path, addr: SocketAddr, mode: &str) -> (Child, BufReader<ChildStdout>) {
    support::child::spawn(
        "elicitation_child",
        &[
            ("ELICIT_DB", db.as_os_str()),
            ("ELICIT_ADDR", addr.to_string().as_ref()),
            ("ELICIT_MODE", mode.as_ref()),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_question_survives_a_killed_process() {
    let server = Shipping::default();
    let addr = serve(server.clone(), 0).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");

    let (mut first, mut out) = spawn(&db, addr, "desk_ask");
    let question = support::child::read_until(&mut out, "QUESTION ");
    assert!(question.contains("Where should the lamp go?"), "{question}");
    first.kill().unwrap(); // SIGKILL, with the child's question open
    first.wait().unwrap();

    let (mut second, mut out) = spawn(&db, addr, "desk_answer");
    assert_eq!(
        support::child::read_until(&mut out, "DONE "),
        "the shop says: done: shipped the lamp to Lima"
    );
    assert!(second.wait().unwrap().success());
    assert_eq!(server.effects.load(Ordering::SeqCst), 1, "shipped once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_while_the_person_thinks_asks_once_and_ships_once() {
    let server = Shipping::default();
    server.hang_after_accept.store(1, Ordering::SeqCst);
    let addr = serve(server.clone(), 0).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");

    let (mut first, mut out) = spawn(&db, addr, "ask");
    let question = support::child::read_until(&mut out, "QUESTION ");
    assert!(question.contains("Where should the lamp go?"), "{question}");
    first.kill().unwrap(); // SIGKILL, with the question open
    first.wait().unwrap();

    // The run resumes, the call is made again, the server asks again: the
    // same open question, not a second one. The person answers it.
    let (mut second, mut out) = spawn(&db, addr, "answer");
    assert_eq!(support::child::read_until(&mut out, "REASKED "), "0");
    while server.asked.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    use std::io::Write;
    writeln!(second.stdin.as_mut().unwrap(), "go").unwrap();
    support::child::read_until(&mut out, "ANSWERED");
    while server.hang_after_accept.load(Ordering::SeqCst) != 0 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        server.effects.load(Ordering::SeqCst),
        0,
        "the server hangs before shipping"
    );
    second.kill().unwrap(); // SIGKILL, after the answer, before the effect
    second.wait().unwrap();

    // Again: the server asks a third time and gets the journaled answer.
    let (mut third, mut out) = spawn(&db, addr, "finish");
    assert_eq!(
        support::child::read_until(&mut out, "DONE "),
        "done: shipped the lamp to Oslo"
    );
    assert!(third.wait().unwrap().success());
    assert_eq!(
        server.asked.load(Ordering::SeqCst),
        3,
        "asked by each attempt of the call"
    );
    assert_eq!(server.effects.load(Ordering::SeqCst), 1, "shipped once");

    // The journal holds one question and one answer.
    let rt = Runtime::builder()
        .mcp_server(
            "shipping",
            McpServerConfig::http(format!("http://{addr}/mcp")).trusted(),
        )
        .agent(AgentSpec::new("shop").toolset("shipping"))
        .model(Shipper)
        .sqlite(&db)
        .read_only()
        .build()
        .await
        .unwrap();
    let mut questions = 0;
    let mut answers = 0;
    let mut events = rt.subscribe_after(SESSION, concierge::EventId::default());
    let last = rt.session(SESSION).await.unwrap().last_seq();
    use futures::StreamExt;
    while let Some(Ok(event)) = events.next().await {
        match event.kind {
            concierge::EventKind::ElicitationRequested { .. } => questions += 1,
            concierge::EventKind::ElicitationAnswered { .. } => answers += 1,
            _ => {}
        }
        if event.seq >= last {
            break;
        }
    }
    assert_eq!((questions, answers), (1, 1));
}
