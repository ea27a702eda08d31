//! A run killed mid-way is not failed by a command that only looks, and is
//! finished by the next process that has the model.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "support/held_model.rs"]
mod held_model;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use held_model::model;

fn concierge(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
    command
        .current_dir(dir)
        .env_remove("CONCIERGE_MODEL")
        .env_remove("CONCIERGE_BASE_URL")
        .env_remove("CONCIERGE_DB");
    command
}

fn run(command: &mut Command) -> Output {
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[test]
fn a_killed_run_survives_a_read_only_command_without_a_model_and_finishes_with_one() {
    let dir = tempfile::tempdir().unwrap();
    let model = model();
    let with_model = ["--model", "openai:m", "--base-url", model.url.as_str()];

    // A run whose model call hangs; the process is killed in the middle of it.
    let mut child = concierge(dir.path())
        .args(with_model)
        .args([
            "run",
            "--agent",
            "calculator",
            "--session",
            "s",
            "tell me about numbers",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while model.seen.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the run never called its model");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Read-only commands, with no model configured, take nothing over.
    let sessions = run(concierge(dir.path()).arg("sessions"));
    assert!(sessions.status.success(), "{}", text(&sessions.stderr));
    assert!(text(&sessions.stdout).contains('s'), "{}", text(&sessions.stdout));
    let history = run(concierge(dir.path()).args(["history", "s"]));
    assert!(history.status.success(), "{}", text(&history.stderr));
    assert!(!text(&history.stdout).contains("no model"), "{}", text(&history.stdout));
    assert_eq!(model.seen.load(Ordering::SeqCst), 1, "nothing called the model again");

    // A process with the model finishes the interrupted turn, then runs its own.
    model.hold.store(false, Ordering::SeqCst);
    let next = run(concierge(dir.path())
        .args(with_model)
        .args(["run", "--session", "s", "thanks"]));
    assert!(next.status.success(), "{}", text(&next.stderr));
    assert!(
        text(&next.stderr).contains("finished the run this session had in flight"),
        "{}",
        text(&next.stderr)
    );
    let history = run(concierge(dir.path()).args(["history", "s"]));
    let shown = text(&history.stdout);
    let first = shown.find("tell me about numbers").expect("the first turn is there");
    let reply = shown[first..].find("All done.").expect("with its reply");
    assert!(
        shown[first + reply..].contains("thanks"),
        "then the second turn:\n{shown}"
    );
    assert_eq!(shown.matches("tell me about numbers").count(), 1, "{shown}");
}

/// `concierge serve` with the held model on a free loopback port in `dir`;
/// the process and its address.
fn serve_with(dir: &Path, model: &held_model::Model) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = concierge(dir)
        .args(["--model", "openai:m", "--base-url", model.url.as_str()])
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    let addr = url
        .trim()
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("the first line is the URL: {url:?}"))
        .to_string();
    (child, addr)
}

/// A JSON request on a fresh connection; the status and the body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn a_second_server_takes_over_a_killed_servers_session_and_answers_the_queued_message() {
    let dir = tempfile::tempdir().unwrap();
    let model = model();
    // Two servers on one database, as behind a load balancer.
    let (mut first, a) = serve_with(dir.path(), &model);
    let (mut second, b) = serve_with(dir.path(), &model);

    let (status, body) = http(&a, "POST", "/api/v1/sessions", r#"{"id":"s","agent":"calculator"}"#);
    assert_eq!(status, 201, "{body}");
    let (status, body) = http(
        &a,
        "POST",
        "/api/v1/sessions/s/messages",
        r#"{"text":"tell me about numbers"}"#,
    );
    assert_eq!(status, 202, "{body}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while model.seen.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the run never called its model");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The first server dies with the run in flight.
    first.kill().unwrap();
    first.wait().unwrap();

    // A message to the other server waits behind the killed run (which it
    // takes over and finishes) instead of being refused.
    let queued = std::thread::spawn(move || {
        http(
            &b,
            "POST",
            "/api/v1/sessions/s/messages?wait=true",
            r#"{"text":"thanks"}"#,
        )
    });
    // The other server took the killed run over: its model call is made again.
    while model.seen.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline, "the killed run was not taken over");
        std::thread::sleep(Duration::from_millis(20));
    }
    model.hold.store(false, Ordering::SeqCst);
    let (status, body) = queued.join().unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""reply":"All done.""#), "{body}");
    assert!(body.contains(r#""status":"completed""#), "{body}");
    second.kill().unwrap();
    second.wait().unwrap();

    // Each message once, each answered, in order: nothing lost, nothing doubled.
    let history = run(concierge(dir.path()).args(["history", "s"]));
    let shown = text(&history.stdout);
    assert_eq!(shown.matches("tell me about numbers").count(), 1, "{shown}");
    assert_eq!(shown.matches("thanks").count(), 1, "{shown}");
    assert_eq!(shown.matches("All done.").count(), 2, "{shown}");
    let first_turn = shown.find("tell me about numbers").unwrap();
    let second_turn = shown.find("thanks").unwrap();
    assert!(first_turn < second_turn, "{shown}");
    assert_eq!(
        model.seen.load(Ordering::SeqCst),
        3,
        "one call per turn, and the killed one again"
    );
}

/// A server that starts where a killed one left runs in flight answers
/// `/healthz` at once and says on `/readyz` when the runs are resumed
/// (503 with Retry-After until then); the runs then finish.
#[test]
fn a_restarted_server_is_live_at_once_and_ready_once_the_left_runs_are_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let model = model();
    let (mut first, a) = serve_with(dir.path(), &model);
    for session in ["r1", "r2", "r3"] {
        let (status, body) = http(
            &a,
            "POST",
            "/api/v1/sessions",
            &format!(r#"{{"id":"{session}","agent":"calculator"}}"#),
        );
        assert_eq!(status, 201, "{body}");
        let (status, body) = http(
            &a,
            "POST",
            &format!("/api/v1/sessions/{session}/messages"),
            r#"{"text":"tell me about numbers"}"#,
        );
        assert_eq!(status, 202, "{body}");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while model.seen.load(Ordering::SeqCst) < 3 {
        assert!(Instant::now() < deadline, "the runs never called their model");
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill().unwrap();
    first.wait().unwrap();

    let (mut second, b) = serve_with(dir.path(), &model);
    let (status, body) = http(&b, "GET", "/healthz", "");
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
    loop {
        let (status, body) = http(&b, "GET", "/readyz", "");
        match status {
            200 => {
                assert_eq!(body, r#"{"status":"ready"}"#);
                break;
            }
            503 => assert_eq!(body, r#"{"status":"recovering"}"#),
            other => panic!("/readyz answered {other}: {body}"),
        }
        assert!(Instant::now() < deadline, "the server never became ready");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Ready: the three killed runs are resumed (their model calls made again).
    while model.seen.load(Ordering::SeqCst) < 6 {
        assert!(Instant::now() < deadline, "the killed runs were not resumed");
        std::thread::sleep(Duration::from_millis(20));
    }
    model.hold.store(false, Ordering::SeqCst);
    for session in ["r1", "r2", "r3"] {
        loop {
            let (_, body) = http(&b, "GET", &format!("/api/v1/sessions/{session}"), "");
            if body.contains("All done.") {
                break;
            }
            assert!(Instant::now() < deadline, "{session} never finished: {body}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    second.kill().unwrap();
    second.wait().unwrap();
}
