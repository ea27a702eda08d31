//! The official OpenAI Python client (PyPI `openai`, installed by
//! `scripts/setup-openai-client.sh`) against `concierge serve` with the task
//! manager's example on its rules: the script
//! `crates/concierge-server/tests/openai_client/check.py` asserts what the
//! client sees. Ignored by default (it needs the Python client); the second
//! phase of `scripts/test.sh` runs it. And `concierge bench --http`, which
//! drives the same endpoint of a `concierge serve` on the bench fixture.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The virtual environment's Python that `scripts/setup-openai-client.sh` made.
fn python() -> PathBuf {
    let cache = std::env::var_os("CONCIERGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/concierge"));
    let python = cache.join("venv-openai/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-openai-client.sh first",
        python.display()
    );
    python
}

/// Kills the server when the test ends, passed or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first line a child prints (the URL it serves at).
fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim().to_string()
}

#[test]
fn bench_http_drives_serve_through_the_openai_endpoint_and_the_sessions_api() {
    let dir = tempfile::tempdir().unwrap();
    let concierge = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
        command
            .current_dir(dir.path())
            .env_remove("CONCIERGE_MODEL")
            .env_remove("CONCIERGE_BASE_URL")
            .env_remove("CONCIERGE_DB");
        command
    };
    let mut fixture = concierge()
        .args(["bench", "--serve-fake", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let model_url = first_line(&mut fixture);
    let _fixture = Server(fixture);
    let mut serve = concierge()
        .args([
            "--base-url",
            &model_url,
            "--model",
            "openai:fake",
            "serve",
            "--addr",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = first_line(&mut serve);
    let _serve = Server(serve);
    for (door, stream, path) in [
        ("openai", false, "/v1/chat/completions"),
        ("openai", true, "/v1/chat/completions"),
        ("messages", false, "/api/v1/sessions/{id}/messages?wait=true"),
    ] {
        let mut args = vec![
            "bench",
            "--http",
            &url,
            "--door",
            door,
            "--sessions",
            "3",
            "--turns",
            "2",
            "--concurrency",
            "2",
        ];
        if stream {
            args.push("--stream");
        }
        let out = concierge().args(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(report["errors"], 0, "{report}");
        assert_eq!(report["sessions"], 3);
        assert!(report["turns_per_s"].as_f64().unwrap() > 0.0, "{report}");
        assert!(report["variant"].as_str().unwrap().contains(path), "{report}");
    }
    let out = concierge().args(["bench", "--http", "localhost:1"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not an http:// or https:// URL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs the OpenAI Python client: scripts/setup-openai-client.sh (scripts/test.sh runs it)"]
fn the_official_openai_python_client_talks_to_concierge_serve() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_concierge"))
        .current_dir(dir.path())
        .env_remove("CONCIERGE_MODEL")
        .env_remove("CONCIERGE_BASE_URL")
        .env("CONCIERGE_TASKS_DB", dir.path().join("tasks.db"))
        .arg("--config")
        .arg(repo().join("examples/tasks/concierge.toml"))
        .arg("--db")
        .arg(dir.path().join("concierge.db"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let _server = Server(child);
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    let base = url
        .trim()
        .strip_suffix('/')
        .unwrap_or_else(|| panic!("the first line is the URL: {url:?}"))
        .to_string();
    let out = Command::new(python)
        .arg(repo().join("crates/concierge-server/tests/openai_client/check.py"))
        .arg(format!("{base}/v1"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "check.py failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("every check passed"), "{stdout}\n{stderr}");
}
