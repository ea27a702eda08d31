//! The official AG-UI client (`@ag-ui/client` from npm, run by node) against
//! real `concierge serve` processes on loopback: the task manager's example
//! (text, tool calls, state, a confirmation and a choice as interrupts) and
//! the CRM's (a router calling specialists as tools: subagents). The client
//! validates every event and the stream's order itself.
//!
//! Ignored by default: it needs node and the packages that
//! `scripts/setup-agui-client.sh` installs (`scripts/test.sh` runs both).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A `concierge serve` of an example's config, its data in a temp dir.
struct Serve {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Serve {
    fn start(example: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = repo().join("examples").join(example).join("concierge.toml");
        let mut child = Command::new(env!("CARGO_BIN_EXE_concierge"))
            .current_dir(dir.path())
            .env_remove("CONCIERGE_MODEL")
            .env_remove("CONCIERGE_BASE_URL")
            .env("CONCIERGE_DB", dir.path().join("concierge.db"))
            .env("CONCIERGE_TASKS_DB", dir.path().join("tasks.db"))
            .env("CONCIERGE_CRM_DB", dir.path().join("crm.db"))
            .env("CONCIERGE_TASKS_KNOWLEDGE", repo().join("examples/tasks/knowledge.md"))
            .arg("--config")
            .arg(&config)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The first line is the URL, printed once the server listens.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        stdout.read_line(&mut url).unwrap();
        let url = url.trim().trim_end_matches('/').to_string();
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "the first line is the URL: {url:?}"
        );
        Self { child, url, _dir: dir }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs node and @ag-ui/client: scripts/setup-agui-client.sh installs them"]
fn the_official_ag_ui_client_runs_agents_and_answers_interrupts() {
    let client = repo().join("crates/concierge-server/tests/agui_client");
    assert!(
        client.join("node_modules/@ag-ui/client/package.json").exists(),
        "@ag-ui/client is not installed: run scripts/setup-agui-client.sh"
    );
    let tasks = Serve::start("tasks");
    let crm = Serve::start("crm");
    let out = Command::new("node")
        .args(["--test", "run.mjs"])
        .current_dir(&client)
        .env("AGUI_URL", &tasks.url)
        .env("AGUI_CRM_URL", &crm.url)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the AG-UI client's tests failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("# pass 4"), "{stdout}");
    assert!(stdout.contains("# fail 0"), "{stdout}");
}
