//! The parent side of the chaos suite: child processes (this test binary,
//! re-executed), the seed, the side-effect ledger and the checks every
//! scenario ends with.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use concierge::{Message, Runtime};

/// How long any one scenario may take before it is declared hung.
pub const SCENARIO_DEADLINE: Duration = Duration::from_secs(90);

/// The seed: `CHAOS_SEED` if set, else the clock. Printed so a failure can be replayed.
pub fn seed() -> u64 {
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("chaos seed: {seed} (replay with CHAOS_SEED={seed})");
    seed
}

/// One side-effecting tool call as the tool recorded it.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The idempotency key it was called with.
    pub key: String,
    /// The logical call: `<turn label>/<index in the turn>`.
    pub label: String,
    /// The process that ran it.
    pub pid: u32,
}

/// Reads the ledger (one line per invocation, in the order they happened).
pub fn ledger(path: &Path) -> Vec<Invocation> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut parts = line.split('\t');
            Some(Invocation {
                key: parts.next()?.to_string(),
                label: parts.next()?.to_string(),
                pid: parts.next()?.parse().ok()?,
            })
        })
        .collect()
}

/// What a child printed, line by line, with its pid.
pub enum Line {
    /// A line of output (the libtest prefix removed).
    Out(String),
    /// The child closed its output (it exited or was killed).
    Closed,
}

/// A child process; killed when dropped, so a failing test leaves none behind.
pub struct Proc {
    /// What it does, for messages (`writer A`, `reader 3`...).
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Line>,
    /// Every line read so far.
    pub seen: Vec<String>,
    stderr: PathBuf,
    closed: bool,
}

impl Proc {
    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line, or `None` once the output is closed or the deadline passed.
    pub fn next_line(&mut self, deadline: Instant) -> Option<String> {
        if self.closed {
            return None;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(Line::Out(line)) => {
                self.seen.push(line.clone());
                Some(line)
            }
            Ok(Line::Closed) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.closed = true;
                None
            }
            Err(mpsc::RecvTimeoutError::Timeout) => None,
        }
    }

    /// Reads until a line starting with `prefix`; returns the rest of it.
    pub fn expect(&mut self, prefix: &str, deadline: Instant, context: &str) -> String {
        loop {
            match self.next_line(deadline) {
                Some(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.trim().to_string();
                    }
                }
                None => panic!(
                    "{context}: {} never printed {prefix:?} (output: {:?}; stderr: {})",
                    self.name,
                    self.seen,
                    self.stderr_tail()
                ),
            }
        }
    }

    /// Reads everything until the child closes its output, then reaps it.
    pub fn finish(&mut self, deadline: Instant, context: &str) -> std::process::ExitStatus {
        while self.next_line(deadline).is_some() {}
        if !self.closed {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!(
                "{context}: {} did not finish in time (hung?); output: {:?}; stderr: {}",
                self.name,
                self.seen,
                self.stderr_tail()
            );
        }
        self.child
            .wait()
            .unwrap_or_else(|e| panic!("{context}: waiting for {}: {e}", self.name))
    }

    /// SIGKILL, then reads what it had printed before dying.
    pub fn kill(&mut self, deadline: Instant) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        while self.next_line(deadline).is_some() {}
    }

    /// Tells a child waiting at `READY` to go.
    pub fn go(&mut self) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "GO");
            let _ = stdin.flush();
        }
    }

    /// The last lines of the child's stderr, for failure messages.
    pub fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// The lines that start with `prefix` (the prefix removed).
    pub fn lines_with(&self, prefix: &str) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|l| l.strip_prefix(prefix).map(|r| r.trim().to_string()))
            .collect()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scenario's directory, database, ledger and seed, and what its children reported.
pub struct Scenario {
    /// The scenario's name, for messages.
    pub name: String,
    /// The seed every random choice derives from.
    pub seed: u64,
    dir: tempfile::TempDir,
    /// The SQLite database all processes share.
    pub db: PathBuf,
    /// The side-effect ledger.
    pub ledger: PathBuf,
    /// Pids the scenario killed with SIGKILL.
    pub killed: BTreeSet<u32>,
    /// Pids of read-only processes (which must never run a tool).
    pub readers: BTreeSet<u32>,
    /// Turn label -> (session, how many times it was reported done).
    pub done: BTreeMap<String, (String, usize)>,
    /// Errors children reported.
    pub errors: Vec<String>,
    spawned: std::sync::atomic::AtomicUsize,
    started: Instant,
}

impl Scenario {
    /// A fresh scenario.
    pub fn new(name: &str, seed: u64) -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
        Scenario {
            name: name.to_string(),
            seed,
            db: dir.path().join("chaos.db"),
            ledger: dir.path().join("ledger.tsv"),
            dir,
            killed: BTreeSet::new(),
            readers: BTreeSet::new(),
            done: BTreeMap::new(),
            errors: Vec::new(),
            spawned: std::sync::atomic::AtomicUsize::new(0),
            started: Instant::now(),
        }
    }

    /// `[chaos seed=S scenario=X]`, the start of every failure message.
    pub fn tag(&self) -> String {
        format!("[chaos seed={} scenario={}]", self.seed, self.name)
    }

    /// When the scenario is declared hung.
    pub fn deadline(&self) -> Instant {
        self.started + SCENARIO_DEADLINE
    }

    /// Starts a child in `role` with `env`.
    pub fn spawn(&self, name: &str, role: &str, env: &[(&str, String)]) -> Proc {
        let n = self.spawned.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let stderr = self.dir.path().join(format!("child-{n}.err"));
        let mut command = Command::new(std::env::current_exe().unwrap_or_else(|e| panic!("the test binary: {e}")));
        command
            .args(["chaos_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env("CHAOS_ROLE", role)
            .env("CHAOS_DB", &self.db)
            .env("CHAOS_LEDGER", &self.ledger)
            .env("CHAOS_SEED", self.seed.to_string())
            .env_remove("CHAOS_PLAN")
            .env_remove("CHAOS_BLOCK")
            .env_remove("CHAOS_MODEL")
            .env_remove("CHAOS_GO")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(
                std::fs::File::create(&stderr)
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            );
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{}: spawning {name}: {e}", self.tag()));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            if let Some(stdout) = stdout {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    // libtest prints `test chaos_child ... ` without a newline first.
                    let line = match line.find("test chaos_child ... ") {
                        Some(at) => line[at + "test chaos_child ... ".len()..].to_string(),
                        None => line,
                    };
                    if tx.send(Line::Out(line)).is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send(Line::Closed);
        });
        Proc {
            name: name.to_string(),
            child,
            stdin,
            lines: rx,
            seen: Vec::new(),
            stderr,
            closed: false,
        }
    }

    /// Records what a finished or killed child reported: its `DONE` turns and `ERROR`s.
    pub fn absorb(&mut self, proc: &Proc) {
        for line in &proc.seen {
            if let Some(rest) = line.strip_prefix("DONE ") {
                let mut parts = rest.split_whitespace();
                let (Some(session), Some(label)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let entry = self
                    .done
                    .entry(label.to_string())
                    .or_insert_with(|| (session.to_string(), 0));
                entry.1 += 1;
            } else if let Some(rest) = line.strip_prefix("ERROR ") {
                let stderr = proc.stderr_tail();
                let stderr = if stderr.trim().is_empty() {
                    String::new()
                } else {
                    format!("\n    its stderr ends with:\n{stderr}")
                };
                self.errors
                    .push(format!("{} (pid {}) reported: {rest}{stderr}", proc.name, proc.pid()));
            }
        }
    }

    /// Runs a child to its end and absorbs what it reported.
    pub fn run_to_end(&mut self, name: &str, role: &str, env: &[(&str, String)]) -> Proc {
        let mut proc = self.spawn(name, role, env);
        let deadline = self.deadline();
        let tag = self.tag();
        proc.finish(deadline, &tag);
        self.absorb(&proc);
        proc
    }

    /// Every session's history, read by a read-only runtime in this process.
    pub fn histories(&self) -> BTreeMap<String, Vec<Message>> {
        let db = self.db.clone();
        let tag = self.tag();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("a tokio runtime: {e}"));
        rt.block_on(async move {
            let rt = crate::configured(Runtime::builder().sqlite(&db))
                .read_only()
                .build()
                .await
                .unwrap_or_else(|e| panic!("{tag}: opening the database read-only: {e}"));
            let mut out = BTreeMap::new();
            for summary in rt
                .sessions()
                .await
                .unwrap_or_else(|e| panic!("{tag}: listing sessions: {e}"))
            {
                let history = rt
                    .history(summary.id.clone())
                    .await
                    .unwrap_or_else(|e| panic!("{tag}: the history of {}: {e}", summary.id));
                out.insert(summary.id.to_string(), history);
            }
            out
        })
    }

    /// The checks every scenario ends with:
    /// - no child reported an error;
    /// - every turn reported done is in its session's history exactly once
    ///   (its message, its answer, and between them one result per planned call);
    /// - every side-effecting call ran once per idempotency key (a key runs
    ///   again only after the process that ran it was killed, never in a
    ///   read-only process), and each logical call under one key only.
    pub fn check(&self, expect_done: &[&str]) {
        let tag = self.tag();
        let mut problems: Vec<String> = self.errors.clone();
        for label in expect_done {
            if !self.done.contains_key(*label) {
                problems.push(format!("turn {label} was never reported done"));
            }
        }
        // The ledger first: on an engine where opening takes sessions over,
        // reading the histories below could run calls in this process.
        let ledger_problems = self.ledger_problems();
        let histories = self.histories();
        for (label, (session, _)) in &self.done {
            let Some(history) = histories.get(session) else {
                problems.push(format!(
                    "turn {label} was reported done but session {session} does not exist"
                ));
                continue;
            };
            if let Err(problem) = turn_in_history(history, label) {
                problems.push(format!("turn {label} (session {session}): {problem}"));
            }
        }
        problems.extend(ledger_problems);
        assert!(
            problems.is_empty(),
            "{tag}: {} problem(s):\n  {}\n(killed pids: {:?}; reader pids: {:?})",
            problems.len(),
            problems.join("\n  "),
            self.killed,
            self.readers
        );
    }

    /// What is wrong in the ledger (see [`Scenario::check`]).
    pub fn ledger_problems(&self) -> Vec<String> {
        let ledger = ledger(&self.ledger);
        let mut problems = Vec::new();
        let mut by_key: BTreeMap<&str, Vec<&Invocation>> = BTreeMap::new();
        let mut keys_by_label: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for inv in &ledger {
            by_key.entry(&inv.key).or_default().push(inv);
            keys_by_label.entry(&inv.label).or_default().insert(&inv.key);
            if self.readers.contains(&inv.pid) {
                problems.push(format!(
                    "call {} (key {}) ran in read-only process {}",
                    inv.label, inv.key, inv.pid
                ));
            }
        }
        for (key, invs) in &by_key {
            if invs.len() < 2 {
                continue;
            }
            let pids: Vec<u32> = invs.iter().map(|i| i.pid).collect();
            let legit = invs[..invs.len() - 1].iter().all(|i| self.killed.contains(&i.pid))
                && pids.iter().collect::<BTreeSet<_>>().len() == pids.len();
            if !legit {
                problems.push(format!(
                    "key {key} ({}) ran {} times, by pids {pids:?}, though only a killed process's call may be repeated",
                    invs[0].label,
                    invs.len()
                ));
            }
        }
        for (label, keys) in &keys_by_label {
            if keys.len() > 1 {
                problems.push(format!(
                    "call {label} ran under {} idempotency keys {keys:?}: the same call was issued again",
                    keys.len()
                ));
            }
        }
        // Every call of every finished turn ran.
        for label in self.done.keys() {
            for j in 0..crate::plan(label).len() {
                let call = format!("{label}/{j}");
                if !keys_by_label.contains_key(call.as_str()) {
                    problems.push(format!("call {call} of finished turn {label} never ran"));
                }
            }
        }
        problems
    }
}

/// Whether turn `label` is in `history` exactly once, with all its calls answered.
pub fn turn_in_history(history: &[Message], label: &str) -> Result<(), String> {
    let user = crate::user_text(label);
    let done = crate::done_text(label);
    let users: Vec<usize> = positions(history, |m| matches!(m, Message::User { content } if *content == user));
    let answers: Vec<usize> = positions(
        history,
        |m| matches!(m, Message::Assistant { content, .. } if *content == done),
    );
    if users.len() != 1 || answers.len() != 1 {
        return Err(format!(
            "its message is in the history {} times and its answer {} times (expected once each; history has {} messages)",
            users.len(),
            answers.len(),
            history.len()
        ));
    }
    let (from, to) = (users[0], answers[0]);
    if to < from {
        return Err("its answer comes before its message".into());
    }
    let results = history[from..to]
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .count();
    let planned = crate::plan(label).len();
    if results != planned {
        return Err(format!(
            "{results} tool results between its message and its answer, {planned} planned"
        ));
    }
    Ok(())
}

fn positions(history: &[Message], f: impl Fn(&Message) -> bool) -> Vec<usize> {
    history
        .iter()
        .enumerate()
        .filter(|(_, m)| f(m))
        .map(|(i, _)| i)
        .collect()
}
