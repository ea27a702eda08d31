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
