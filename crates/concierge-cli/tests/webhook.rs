//! `concierge webhook`: a webhook added from the command line hears about a
//! run that a one-shot `concierge run` made, delivered by a `concierge
//! serve` on the same database (it follows the session's journal), signed,
//! once; listed, paused and deleted per tenant.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
    command
        .current_dir(dir)
        .env_remove("CONCIERGE_MODEL")
        .env_remove("CONCIERGE_BASE_URL")
        .env_remove("CONCIERGE_DB")
        .env_remove("CONCIERGE_MODE")
        .env_remove("CONCIERGE_AGENT")
        .args(args);
    command
}

fn concierge(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// A child process killed when dropped, so a failing test leaves no server behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const PINGER: &str = r#"id = "pinger"
description = "Answers pings."

[rules]
fallback = "Pong."
"#;

type Taken = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_from_the_command_line_hears_about_a_run_of_another_process() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::write(dir.path().join("concierge.toml"), "agents_dir = \"agents\"\n").unwrap();
    std::fs::write(dir.path().join("agents/pinger.toml"), PINGER).unwrap();

    let taken: Taken = Arc::default();
    let keep = taken.clone();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let keep = keep.clone();
            async move {
                keep.lock().unwrap().push((headers, body));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    // Bad input is refused with what to write.
    let out = concierge(dir.path(), &["webhook", "add", "ftp://example.com/x"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("http://"), "{}", stderr(&out));
    let out = concierge(dir.path(), &["webhook", "add", url.as_str(), "--event", "run.done"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("run.finished"), "{}", stderr(&out));

    let out = concierge(
        dir.path(),
        &[
            "webhook",
            "add",
            url.as_str(),
            "--event",
            "run.needs_input",
            "--event",
            "run.failed",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let added = stdout(&out);
    assert!(
        added.starts_with("Added wh_") && added.contains("posts run.needs_input and run.failed to"),
        "{added}"
    );
    let id = added
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let secret = added.lines().last().unwrap().trim().to_string();
    assert!(secret.starts_with("whsec_"), "{added}");

    // Another tenant sees none of it and cannot delete it.
    let out = concierge(dir.path(), &["webhook", "list", "--tenant", "globex"]);
    assert!(stdout(&out).contains("has no webhooks"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["webhook", "delete", &id, "--tenant", "globex"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("has no webhook"), "{}", stderr(&out));

    let server = Killed(
        command(dir.path(), &["serve", "--addr", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let out = concierge(dir.path(), &["run", "--agent", "pinger", "--session", "p1", "ping"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let deadline = Instant::now() + Duration::from_secs(90);
    while taken.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "no delivery came");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (headers, body) = {
        let got = taken.lock().unwrap();
        assert_eq!(got.len(), 1, "one run, one delivery");
        got[0].clone()
    };
    let header = |name: &str| headers.get(name).unwrap().to_str().unwrap().to_string();
    assert!(concierge::webhook::verify(
        &secret,
        &header("webhook-id"),
        header("webhook-timestamp").parse().unwrap(),
        &body,
        &header("webhook-signature"),
    ));
    let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
    // The agent's answer is a question back: the run waits for the person.
    assert_eq!(value["type"], "run.needs_input");
    assert_eq!(value["data"]["session"], "p1");
    assert_eq!(value["data"]["reply"], "Pong.");

    let out = concierge(dir.path(), &["webhook", "deliveries", &id]);
    assert!(stdout(&out).contains("delivered after 1 attempt"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["webhook", "pause", &id]);
    assert!(stdout(&out).contains("Paused"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["webhook", "list"]);
    assert!(stdout(&out).contains(", paused"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["webhook", "delete", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    drop(server);
}
