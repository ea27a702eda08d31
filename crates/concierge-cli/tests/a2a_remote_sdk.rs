//! Our A2A client against a third-party A2A server: a booking agent made
//! with the official Python SDK (PyPI `a2a-sdk`, its server side;
//! `a2a_remote_sdk/server.py`). A caller's agent calls it as the tool
//! `booking`: its question reaches the person, the answer goes back on the
//! same task, its artifact is the tool's result and its tokens count in the
//! caller's totals; a caller killed while the person thinks follows the
//! same remote task when it comes back; a wrong token fails the call with a
//! sentence naming the agent.
//!
//! Ignored by default: they need the SDK that `scripts/setup-a2a-clients.sh`
//! installs (`scripts/test.sh` runs it, then these).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

#[cfg(feature = "temporal")]
#[path = "../../concierge-temporal/tests/support/mod.rs"]
mod temporal_support;

use concierge::a2a::A2aAgentConfig;
use concierge::{AgentSpec, ElicitationMode, EventKind, Mode, Route, Rules, RunOptions, RunStatus, Runtime};
use futures::StreamExt;
use serde_json::{Value, json};

/// The bearer token the server wants.
const TOKEN: &str = "booking-secret-7f3a";
/// The variable the restart test's caller reads the token from.
const TOKEN_VARIABLE: &str = "A2A_SERVER_TOKEN_FOR_TEST";

/// The virtual environment's Python that `scripts/setup-a2a-clients.sh` made.
fn python() -> PathBuf {
    let cache = std::env::var_os("CONCIERGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/concierge"));
    let python = cache.join("venv-a2a/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-a2a-clients.sh first",
        python.display()
    );
    python
}

/// `server.py` running, wanting [`TOKEN`].
struct Booking {
    child: Child,
    url: String,
}

impl Booking {
    /// The agent, its card saying it streams.
    fn start() -> Self {
        Self::start_with(true)
    }

    fn start_with(streaming: bool) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a_remote_sdk/server.py");
        let mut child = Command::new(python())
            .arg(script)
            .env("A2A_SERVER_TOKEN", TOKEN)
            .env("A2A_SERVER_STREAMING", if streaming { "1" } else { "0" })
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let url = line
            .trim()
            .strip_prefix("READY ")
            .unwrap_or_else(|| panic!("server.py did not start: {line:?}"))
            .to_string();
        Self { child, url }
    }

    /// How many tasks the agent made and how many bookings.
    async fn stats(&self) -> (u64, u64) {
        let stats = self.counts().await;
        (stats["tasks"].as_u64().unwrap(), stats["bookings"].as_u64().unwrap())
    }

    /// Everything `GET /stats` counts. (A test whose runtime runs in a
    /// child process has built no client here yet: TLS needs its provider.)
    async fn counts(&self) -> Value {
        concierge::tls::install_crypto_provider();
        reqwest::get(format!("{}/stats", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for Booking {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The caller: one agent whose rules send anything about booking to the
/// remote agent (the tool `booking`) and answer with its reply.
async fn caller(config: A2aAgentConfig, db: &Path) -> Runtime {
    caller_builder(config).sqlite(db).build().await.unwrap()
}

/// The caller of [`caller`], on no engine yet.
fn caller_builder(config: A2aAgentConfig) -> concierge::RuntimeBuilder {
    Runtime::builder()
        .a2a_agent("booking", config.description("Books seats."))
        .agent(
            AgentSpec::new("assistant")
                .description("Helps with everything.")
                .toolset("booking")
                .rules(
                    Rules::new()
                        .route(Route::tool("booking", json!({"message": "{message}"})).keywords(["book"]))
                        .answer("{result}"),
                ),
        )
        .mode(Mode::Single)
        .single_agent("assistant")
}

/// The agent at `url`, with `token` as the bearer token (in a header: the
/// test process's environment is left alone).
fn with_token(url: &str, token: &str) -> A2aAgentConfig {
    let mut config = A2aAgentConfig::new(url);
    config.headers.insert("Authorization".into(), format!("Bearer {token}"));
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the A2A Python SDK: scripts/setup-a2a-clients.sh (scripts/test.sh runs it)"]
async fn the_sdk_agents_question_reaches_the_person_and_yes_books_once_with_its_tokens_counted() {
    let booking = Booking::start();
    let dir = tempfile::tempdir().unwrap();
    let rt = caller(with_token(&booking.url, TOKEN), &dir.path().join("caller.db")).await;
    let assistant = rt.client("assistant").unwrap();

    let out = assistant
        .run("book a train to Oslo", RunOptions::new().session_id("s1"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput, "{out:?}");
    let pending = out.pending_elicitation.clone().expect("the remote's question");
    assert_eq!(pending.elicitation.server, "booking");
    assert_eq!(pending.elicitation.message, "Book a train to Oslo for 120 EUR?");
    assert!(matches!(
        pending.elicitation.mode,
        ElicitationMode::Reply { asked: Some(_) }
    ));
    assert!(
        out.reply
            .as_deref()
            .unwrap_or_default()
            .contains("Book a train to Oslo for 120 EUR?"),
        "{out:?}"
    );
    assert_eq!(booking.stats().await, (1, 0));

    let done = assistant.run("yes", RunOptions::new().session_id("s1")).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert_eq!(done.reply.as_deref(), Some("Booked a train to Oslo."), "{done:?}");
    assert_eq!(booking.stats().await, (1, 1), "one task, one booking");
    let usage = rt.session("s1").await.unwrap().usage();
    assert_eq!((usage.input_tokens, usage.output_tokens), (50, 7), "{usage:?}");

    // The working status's words showed as the call's progress.
    let mut events = rt.subscribe_after("s1", concierge::EventId::default());
    let mut progress = Vec::new();
    while let Ok(Some(Ok(event))) = tokio::time::timeout(Duration::from_secs(10), events.next()).await {
        match event.kind {
            EventKind::ToolProgress { message, .. } => progress.push(message),
            EventKind::ToolFinished { ok: true, .. } => break,
            _ => {}
        }
    }
    assert!(
        progress.iter().any(|p| p.contains("Looking for a train to Oslo")),
        "{progress:?}"
    );
    rt.shutdown().await;
}

/// On Temporal the call stops at the remote agent's question (an activity
/// cannot wait for the person) and is made again once the person answered:
/// it finds the same remote task by its checkpoint and answers it there, so
/// the agent still makes one task and one booking, and its tokens count once.
#[cfg(feature = "temporal")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the A2A Python SDK and the Temporal dev server: scripts/setup-a2a-clients.sh, \
            CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn on_temporal_the_sdk_agents_question_is_answered_on_the_same_task() {
    use concierge_temporal::{Temporal, Workers};
    let booking = Booking::start();
    let server = temporal_support::DevServer::start().await;
    let rt = caller_builder(with_token(&booking.url, TOKEN))
        .engine(Temporal::new(server.config("a2a")).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let assistant = rt.client("assistant").unwrap();

    let out = assistant
        .run("book a train to Oslo", RunOptions::new().session_id("t1"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput, "{out:?}");
    let pending = out.pending_elicitation.clone().expect("the remote's question");
    assert_eq!(pending.elicitation.message, "Book a train to Oslo for 120 EUR?");
    assert_eq!(booking.stats().await, (1, 0));

    let done = assistant.run("yes", RunOptions::new().session_id("t1")).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert_eq!(done.reply.as_deref(), Some("Booked a train to Oslo."), "{done:?}");
    assert_eq!(booking.stats().await, (1, 1), "one task, one booking");
    let usage = rt.session("t1").await.unwrap().usage();
    assert_eq!((usage.input_tokens, usage.output_tokens), (50, 7), "{usage:?}");
    rt.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the A2A Python SDK: scripts/setup-a2a-clients.sh (scripts/test.sh runs it)"]
async fn an_sdk_agent_that_does_not_stream_is_followed_by_polling_its_task() {
    let booking = Booking::start_with(false);
    let dir = tempfile::tempdir().unwrap();
    let rt = caller(with_token(&booking.url, TOKEN), &dir.path().join("caller.db")).await;
    let assistant = rt.client("assistant").unwrap();
    let out = assistant
        .run("book a ferry to Kiel", RunOptions::new().session_id("p"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput, "{out:?}");
    let pending = out.pending_elicitation.clone().expect("the remote's question");
    assert_eq!(pending.elicitation.message, "Book a ferry to Kiel for 120 EUR?");
    let done = assistant.run("yes", RunOptions::new().session_id("p")).await.unwrap();
    assert_eq!(done.reply.as_deref(), Some("Booked a ferry to Kiel."), "{done:?}");
    assert_eq!(booking.stats().await, (1, 1), "one task, one booking");
    let usage = rt.session("p").await.unwrap().usage();
    assert_eq!((usage.input_tokens, usage.output_tokens), (50, 7), "{usage:?}");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the A2A Python SDK: scripts/setup-a2a-clients.sh (scripts/test.sh runs it)"]
async fn no_to_the_sdk_agents_question_books_nothing_and_a_declined_question_cancels_its_task() {
    let booking = Booking::start();
    let dir = tempfile::tempdir().unwrap();
    let rt = caller(with_token(&booking.url, TOKEN), &dir.path().join("caller.db")).await;
    let assistant = rt.client("assistant").unwrap();
    let out = assistant
        .run("book a hotel in Bergen", RunOptions::new().session_id("n"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput, "{out:?}");
    let done = assistant.run("no", RunOptions::new().session_id("n")).await.unwrap();
    assert_eq!(done.reply.as_deref(), Some("Nothing booked."), "{done:?}");
    assert_eq!(booking.stats().await, (1, 0));

    // Declining to answer at all cancels the remote task.
    let out = assistant
        .run("book a car in Bodø", RunOptions::new().session_id("d"))
        .await
        .unwrap();
    let pending = out.pending_elicitation.expect("the remote's question");
    let done = rt
        .answer_question(
            "d",
            pending.call_id,
            pending.question,
            concierge::ElicitationAnswer::new(concierge::ElicitationAction::Decline),
        )
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert_eq!(done.reply.as_deref(), Some("OK, I did not do that."), "{done:?}");
    let counts = booking.counts().await;
    assert_eq!(
        (&counts["tasks"], &counts["bookings"], &counts["cancelled"]),
        (&json!(2), &json!(0), &json!(1)),
        "{counts}"
    );
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the A2A Python SDK: scripts/setup-a2a-clients.sh (scripts/test.sh runs it)"]
async fn a_wrong_or_missing_token_fails_the_call_with_a_sentence_naming_the_agent() {
    let booking = Booking::start();
    let dir = tempfile::tempdir().unwrap();

    // The server refuses the token: the call fails, the run goes on and says so.
    let rt = caller(with_token(&booking.url, "not-the-token"), &dir.path().join("wrong.db")).await;
    let out = tokio::time::timeout(
        Duration::from_secs(60), // a liveness guard, not a timing assertion
        rt.client("assistant")
            .unwrap()
            .run("book a train to Oslo", RunOptions::new().session_id("w")),
    )
    .await
    .expect("the call with a wrong token hung")
    .unwrap();
    assert_ne!(out.status, RunStatus::AwaitingInput, "{out:?}");
    assert!(out.pending_elicitation.is_none(), "{out:?}");
    let said = format!("{out:?}");
    assert!(
        said.contains("the agent booking: the message could not be sent (it refused our credentials, HTTP 401"),
        "{said}"
    );
    assert!(
        said.contains("check token_env or headers in [a2a_agents.booking]"),
        "{said}"
    );
    assert_eq!(booking.stats().await, (0, 0), "nothing reached the agent");
    rt.shutdown().await;

    // token_env names a variable nobody set: the call says which.
    let unset = A2aAgentConfig::new(&booking.url).token_env("A2A_TOKEN_NOBODY_SET_FOR_THIS_TEST");
    let rt = caller(unset, &dir.path().join("unset.db")).await;
    let out = rt
        .client("assistant")
        .unwrap()
        .run("book a train to Oslo", RunOptions::new().session_id("u"))
        .await
        .unwrap();
    let said = format!("{out:?}");
    assert!(
        said.contains("the agent booking could not be reached") && said.contains("A2A_TOKEN_NOBODY_SET_FOR_THIS_TEST"),
        "{said}"
    );
    assert_eq!(booking.stats().await, (0, 0));
    rt.shutdown().await;
}

/// The caller in a child process, its token from [`TOKEN_VARIABLE`]: `ask`
/// sends the message and prints the remote's question (the parent then
/// kills it); `answer` opens the same database, finds the run resumed and
/// the same question open, answers "yes" and prints the reply and tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the A2A SDK restart test"]
async fn a2a_sdk_crash_child() {
    let db = PathBuf::from(std::env::var("A2A_DB").expect("A2A_DB"));
    let url = std::env::var("A2A_REMOTE").expect("A2A_REMOTE");
    let rt = caller(A2aAgentConfig::new(url).token_env(TOKEN_VARIABLE), &db).await;
    match std::env::var("A2A_MODE").unwrap().as_str() {
        "ask" => {
            let out = rt
                .client("assistant")
                .unwrap()
                .run("book a seat to Tromsø", RunOptions::new().session_id("s2"))
                .await
                .unwrap();
            assert_eq!(out.status, RunStatus::AwaitingInput, "{out:?}");
            println!("QUESTION {}", serde_json::to_string(&out.pending_elicitation).unwrap());
            futures::future::pending::<()>().await;
        }
        "answer" => {
            assert!(rt.recovered().contains(&"s2".into()), "{:?}", rt.recovered());
            // A liveness guard, not a timing assertion.
            let again = tokio::time::timeout(Duration::from_secs(60), rt.wait("s2"))
                .await
                .expect("the resumed run did not stop")
                .unwrap()
                .unwrap();
            assert_eq!(again.status, RunStatus::AwaitingInput, "{again:?}");
            println!("REASKED {}", serde_json::to_string(&again.pending_elicitation).unwrap());
            let mut go = String::new();
            std::io::stdin().read_line(&mut go).unwrap();
            let done = rt
                .client("assistant")
                .unwrap()
                .run("yes", RunOptions::new().session_id("s2"))
                .await
                .unwrap();
            assert_eq!(done.status, RunStatus::Completed, "{done:?}");
            let usage = rt.session("s2").await.unwrap().usage();
            println!(
                "DONE {} {} {}",
                usage.input_tokens,
                usage.output_tokens,
                done.reply.unwrap_or_default()
            );
            rt.shutdown().await;
        }
        other => panic!("unknown mode {other}"),
    }
}

fn spawn(db: &Path, remote: &str, mode: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "a2a_sdk_crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("A2A_DB", db)
        .env("A2A_REMOTE", remote)
        .env("A2A_MODE", mode)
        .env(TOKEN_VARIABLE, TOKEN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

fn read_until(stdout: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the child exited before printing {prefix:?}");
        if let Some(at) = line.find(prefix) {
            return line[at + prefix.len()..].trim().to_string();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the A2A Python SDK: scripts/setup-a2a-clients.sh (scripts/test.sh runs it)"]
async fn a_caller_killed_while_the_person_thinks_follows_the_same_sdk_task_when_it_comes_back() {
    let booking = Booking::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("caller.db");

    let (mut first, mut out) = spawn(&db, &booking.url, "ask");
    let asked: Value = serde_json::from_str(&read_until(&mut out, "QUESTION ")).unwrap();
    assert_eq!(
        asked["elicitation"]["message"], "Book a seat to Tromsø for 120 EUR?",
        "{asked}"
    );
    assert_eq!(booking.stats().await, (1, 0));
    first.kill().unwrap(); // SIGKILL, with the remote's question open
    first.wait().unwrap();

    // The run resumes and the call is issued again from its checkpoint (the
    // remote task's id): the same question, and no second remote task.
    let (mut second, mut out) = spawn(&db, &booking.url, "answer");
    let again: Value = serde_json::from_str(&read_until(&mut out, "REASKED ")).unwrap();
    assert_eq!(again["call_id"], asked["call_id"]);
    assert_eq!(again["question"], asked["question"]);
    assert_eq!(again["elicitation"]["message"], asked["elicitation"]["message"]);
    assert_eq!(booking.stats().await, (1, 0), "the message was not sent again");
    writeln!(second.stdin.as_mut().unwrap(), "go").unwrap();
    let said = read_until(&mut out, "DONE ");
    assert_eq!(said, "50 7 Booked a seat to Tromsø.");
    assert!(second.wait().unwrap().success());
    assert_eq!(booking.stats().await, (1, 1), "one task, one booking");
}
