//! The official A2A clients — the Python SDK (PyPI `a2a-sdk`) and the JS
//! SDK (npm `@a2a-js/sdk`) — against a real `concierge serve` of the task
//! manager's example with two tenants' tokens: each client answers,
//! streams, answers a confirmation (by its data part and in words),
//! re-subscribes to a waiting task, cancels one, and, as the other tenant,
//! finds none of the first's tasks. The scripts in
//! `crates/concierge-server/tests/a2a_client/` assert what the clients see.
//!
//! Ignored by default: they need the clients that
//! `scripts/setup-a2a-clients.sh` installs (`scripts/test.sh` runs both).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn client_dir() -> PathBuf {
    repo().join("crates/concierge-server/tests/a2a_client")
}

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

/// A `concierge serve` of the task manager's example with tokens for
/// tenants acme and globex, its data in a temp dir.
struct Serve {
    child: Child,
    url: String,
    acme: String,
    globex: String,
    _dir: tempfile::TempDir,
}

impl Serve {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let concierge = || {
            let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
            command
                .current_dir(dir.path())
                .env_remove("CONCIERGE_MODEL")
                .env_remove("CONCIERGE_BASE_URL");
            command
        };
        // The clients' push receivers listen on loopback.
        let mut config = format!(
            "db = {:?}\nagents_dir = {:?}\nfallback = \"general\"\n[server]\nwebhooks_to_private_addresses = true\n",
            dir.path().join("concierge.db").display().to_string(),
            repo().join("examples/tasks/agents").display().to_string(),
        );
        let mut tokens = Vec::new();
        for tenant in ["acme", "globex"] {
            let out = concierge()
                .args(["token", "new", "--tenant", tenant, "--user", "ana"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            tokens.push(String::from_utf8(out.stdout).unwrap().trim().to_string());
            let lines = String::from_utf8(out.stderr).unwrap();
            config.push_str(&lines[lines.find("[[server.tokens]]").unwrap()..]);
            config.push('\n');
        }
        let file = dir.path().join("concierge.toml");
        std::fs::write(&file, config).unwrap();
        let mut child = concierge()
            .env_remove("CONCIERGE_DB")
            .env("CONCIERGE_TASKS_DB", dir.path().join("tasks.db"))
            .env("CONCIERGE_TASKS_KNOWLEDGE", repo().join("examples/tasks/knowledge.md"))
            .arg("--config")
            .arg(&file)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        stdout.read_line(&mut url).unwrap();
        let url = url.trim().trim_end_matches('/').to_string();
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "the first line is the URL: {url:?}"
        );
        let globex = tokens.pop().unwrap();
        let acme = tokens.pop().unwrap();
        Self {
            child,
            url,
            acme,
            globex,
            _dir: dir,
        }
    }

    /// `command` with the server's URL and the tenants' tokens in its environment.
    fn env<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        command
            .env("A2A_URL", &self.url)
            .env("A2A_TOKEN_ACME", &self.acme)
            .env("A2A_TOKEN_GLOBEX", &self.globex)
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
#[ignore = "needs the A2A Python SDK: scripts/setup-a2a-clients.sh (scripts/test.sh runs it)"]
fn the_official_a2a_python_client_talks_to_concierge_serve() {
    let python = python();
    let serve = Serve::start();
    let out = serve
        .env(&mut Command::new(python))
        .arg(client_dir().join("check.py"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "check.py failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("JSONRPC: ok"), "{stdout}\n{stderr}");
    assert!(stdout.contains("HTTP+JSON: ok"), "{stdout}\n{stderr}");
}

#[test]
#[ignore = "needs node and @a2a-js/sdk: scripts/setup-a2a-clients.sh installs them"]
fn the_official_a2a_js_client_talks_to_concierge_serve() {
    assert!(
        client_dir().join("node_modules/@a2a-js/sdk/package.json").exists(),
        "@a2a-js/sdk is not installed: run scripts/setup-a2a-clients.sh"
    );
    let serve = Serve::start();
    let out = serve
        .env(&mut Command::new("node"))
        .args(["--test", "run.mjs"])
        .current_dir(client_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the A2A JS client's tests failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("# pass 2"), "{stdout}");
    assert!(stdout.contains("# fail 0"), "{stdout}");
}
