//! Chaos at the binary's level: `concierge run` loops in two terminals on one
//! session while a third keeps running `concierge sessions` and `concierge
//! history`, all on one database (the offline calculator agent, on its rules).
//! Every turn a `run` printed is in the history exactly once; no command
//! fails with a storage error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/cli.rs"]
mod cli;

use cli::concierge;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

/// `calculate <a> + <b>` for the i-th turn of `writer`, and the answer it must print.
fn turn(writer: u64, i: u64) -> (String, String) {
    let (a, b) = (1000 * writer + i, i);
    (format!("calculate {a} + {b}"), format!("{a} + {b} = {}", a + b))
}

/// Runs `turns` turns in session `shared`, one `concierge run` per turn;
/// returns the questions answered and the failures.
fn run_loop(dir: &Path, writer: u64, turns: u64) -> (Vec<String>, Vec<String>) {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    for i in 0..turns {
        let (question, answer) = turn(writer, i);
        let out = concierge(dir, &["run", "--agent", "calculator", "--session", "shared", &question]);
        if out.status.success() && text(&out.stdout) == answer {
            done.push(question);
        } else {
            failed.push(format!(
                "writer {writer}: `run {question}` exited {:?}: stdout {:?}, stderr {:?}",
                out.status.code(),
                text(&out.stdout),
                text(&out.stderr)
            ));
        }
    }
    (done, failed)
}

#[test]
fn two_run_loops_on_one_session_and_a_reader_lose_no_turn() {
    let dir = tempfile::tempdir().unwrap();
    let first = concierge(
        dir.path(),
        &["run", "--agent", "calculator", "--session", "shared", "calculate 1 + 1"],
    );
    assert!(first.status.success(), "{}", text(&first.stderr));
    let stop = AtomicBool::new(false);
    let ((done_a, failed_a), (done_b, failed_b), reads) = std::thread::scope(|s| {
        let a = s.spawn(|| run_loop(dir.path(), 1, 8));
        let b = s.spawn(|| run_loop(dir.path(), 2, 8));
        let reader = s.spawn(|| {
            let mut failures = Vec::new();
            for _ in 0..30 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                for args in [&["sessions"][..], &["history", "shared"][..]] {
                    let out = concierge(dir.path(), args);
                    if !out.status.success() {
                        failures.push(format!("`{}`: {}", args.join(" "), text(&out.stderr)));
                    }
                }
            }
            failures
        });
        let a = a.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        let b = b.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        stop.store(true, Ordering::SeqCst);
        (a, b, reader.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    });
    let mut problems: Vec<String> = failed_a.into_iter().chain(failed_b).chain(reads).collect();
    let out = concierge(dir.path(), &["history", "shared", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let history: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let messages = history["messages"].as_array().cloned().unwrap_or_default();
    for question in done_a.iter().chain(&done_b) {
        let n = messages
            .iter()
            .filter(|m| m["role"] == "user" && m["content"] == question.as_str())
            .count();
        if n != 1 {
            problems.push(format!(
                "`run {question}` printed its answer, but the question is in the history {n} times"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "[chaos scenario=cli-two-run-loops-and-a-reader] {} problem(s):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}
