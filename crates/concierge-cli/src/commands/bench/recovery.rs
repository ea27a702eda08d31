//! `concierge bench --recovery N [--idle-sessions M]`: what a restart costs
//! with N runs in flight and M idle sessions in the database.
//!
//! On a fresh SQLite database, M sessions first have one turn each (in this
//! process). Then a `concierge serve` child starts N runs through the HTTP
//! API on a model that does not answer (the fixture, held), and is killed
//! (SIGKILL) once every run waits for its model call. A second `concierge
//! serve` opens the same database with the model answering: the report says
//! when it answered `/healthz` (liveness), when `/readyz` (every unfinished
//! run under way again), when the model had given every run its final
//! answer, the server's CPU until then, and, read back through the API,
//! how many runs were lost (no answer) or doubled (more than one).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use concierge::model::OpenAiCompatible;
use concierge::{Error, Result, RunOptions, Runtime};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use super::BenchArgs;
use super::measure::{round, usage_of};
use crate::fake_server::Fixture;

/// How long the bench waits for any one stage before it gives up.
const PATIENCE: Duration = Duration::from_secs(300);

/// How long after the model's last answer a run may still be journaling it
/// before it counts as lost.
const SETTLE: Duration = Duration::from_secs(30);

/// What a restart with runs in flight cost.
#[derive(Debug, Serialize)]
pub struct RecoveryReport {
    /// Runs in flight when the first server was killed.
    pub runs: usize,
    /// Sessions with a finished turn in the database, never touched again.
    pub idle_sessions: usize,
    /// From starting the second server to its first `/healthz` 200.
    pub live_ms: f64,
    /// From starting it to its first `/readyz` 200.
    pub ready_ms: f64,
    /// From starting it to the model's final answer to every run.
    pub answered_ms: f64,
    /// The second server's CPU from its start until then, in seconds.
    pub server_cpu_s: f64,
    /// The second server's peak resident memory, in MiB.
    pub server_max_rss_mb: f64,
    /// Runs without a final answer, read back through the API.
    pub lost: usize,
    /// Runs with more than one final answer.
    pub doubled: usize,
    /// What was measured.
    pub variant: String,
}

/// Runs the scenario with the CLI's own binary as the server.
pub async fn run(args: &BenchArgs, runs: usize) -> Result<RecoveryReport> {
    let storage = |e: &dyn std::fmt::Display| Error::Storage(e.to_string());
    let dir = tempfile::tempdir().map_err(|e| storage(&e))?;
    let db = dir.path().join("bench.db");
    let fixture = Fixture::new(true);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| storage(&e))?;
    let model_url = format!("http://{}/v1", listener.local_addr().map_err(|e| storage(&e))?);
    tokio::spawn(fixture.clone().serve(listener));
    let idle = args.idle_sessions;
    if idle > 0 {
        idle_sessions(&db, &model_url, idle, args.concurrency).await?;
    }

    fixture.close();
    let http = reqwest::Client::new();
    let mut first = Server::start(dir.path(), &db, &model_url, runs, "first").await?;
    first.wait_for("/healthz", &http).await?;
    start_runs(&http, &first.url, runs, args.concurrency).await?;
    let waited = Instant::now();
    while fixture.held() < runs as u64 {
        if waited.elapsed() > PATIENCE {
            return Err(first.failure(&format!("only {} of {runs} runs reached the model", fixture.held())));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.kill().await;

    let answered_before = fixture.answers();
    fixture.open();
    let mut second = Server::start(dir.path(), &db, &model_url, runs, "second").await?;
    let live = second.wait_for("/healthz", &http).await?;
    let ready = second.wait_for("/readyz", &http).await?;
    while fixture.answers() - answered_before < runs as u64 {
        if second.started.elapsed() > PATIENCE {
            return Err(second.failure(&format!(
                "only {} of {runs} runs were answered",
                fixture.answers() - answered_before
            )));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let answered = second.started.elapsed();
    let usage = usage_of(&second.pid.to_string());
    // The model has answered every run; an answer is in its session once
    // journaled, a moment later: read back until none is missing, or long
    // enough that one missing is lost.
    let mut counted = count_answers(&http, &second.url, runs, args.concurrency).await?;
    let settling = Instant::now();
    while counted.0 > 0 && settling.elapsed() < SETTLE {
        tokio::time::sleep(Duration::from_millis(50)).await;
        counted = count_answers(&http, &second.url, runs, args.concurrency).await?;
    }
    let (lost, doubled) = counted;
    second.kill().await;
    Ok(RecoveryReport {
        runs,
        idle_sessions: idle,
        live_ms: round(live.as_secs_f64() * 1000.0, 1),
        ready_ms: round(ready.as_secs_f64() * 1000.0, 1),
        answered_ms: round(answered.as_secs_f64() * 1000.0, 1),
        server_cpu_s: round(usage.cpu_s, 2),
        server_max_rss_mb: round(usage.max_rss_mb, 1),
        lost,
        doubled,
        variant: "recovery: concierge serve on SQLite, restarted after SIGKILL".into(),
    })
}

/// `count` sessions with one finished turn each, written in this process.
async fn idle_sessions(db: &Path, model_url: &str, count: usize, concurrency: usize) -> Result<()> {
    let rt = crate::demo::install(Runtime::builder())?
        .model(OpenAiCompatible::new("fixture").base_url(model_url))
        .sqlite(db)
        .build()
        .await?;
    let client = rt.client("calculator")?;
    let failed = futures::stream::iter(0..count)
        .map(|s| {
            let client = client.clone();
            async move {
                let options = RunOptions::new().session_id(format!("idle-{s}"));
                client.run(format!("what is {s} plus 1?"), options).await.is_err()
            }
        })
        .buffer_unordered(concurrency.max(1))
        .filter(|failed| std::future::ready(*failed))
        .count()
        .await;
    rt.shutdown().await;
    match failed {
        0 => Ok(()),
        n => Err(Error::Storage(format!(
            "{n} of the {count} idle sessions' turns failed"
        ))),
    }
}

/// Creates `runs` sessions on the server and starts a run in each, without
/// waiting for it.
async fn start_runs(http: &reqwest::Client, url: &str, runs: usize, concurrency: usize) -> Result<()> {
    let errors: Vec<String> = futures::stream::iter(0..runs)
        .map(|r| async move {
            let id = format!("run-{r}");
            let created = http
                .post(format!("{url}/api/v1/sessions"))
                .json(&json!({"id": id, "agent": "calculator"}))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if created.status().as_u16() != 201 {
                return Err(format!("creating {id}: {}", created.status()));
            }
            let started = http
                .post(format!("{url}/api/v1/sessions/{id}/messages"))
                .json(&json!({"text": format!("what is {r} plus 1?")}))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            match started.status().as_u16() {
                202 => Ok(()),
                status => Err(format!(
                    "starting a run in {id}: {status} {}",
                    started.text().await.unwrap_or_default()
                )),
            }
        })
        .buffer_unordered(concurrency.max(1))
        .filter_map(|result| std::future::ready(result.err()))
        .collect()
        .await;
    match errors.first() {
        None => Ok(()),
        Some(first) => Err(Error::Storage(format!(
            "{} of {runs} runs could not be started; the first: {first}",
            errors.len()
        ))),
    }
}

/// Reads every run's session back: (no final answer, more than one).
async fn count_answers(http: &reqwest::Client, url: &str, runs: usize, concurrency: usize) -> Result<(usize, usize)> {
    let answers: Vec<std::result::Result<usize, String>> = futures::stream::iter(0..runs)
        .map(|r| async move {
            let view: Value = http
                .get(format!("{url}/api/v1/sessions/run-{r}"))
                .send()
                .await
                .map_err(|e| e.to_string())?
                .json()
                .await
                .map_err(|e| e.to_string())?;
            let history = view["history"].as_array().cloned().unwrap_or_default();
            Ok(history
                .iter()
                .filter(|m| m["role"] == "assistant" && m["tool_calls"].as_array().is_none_or(Vec::is_empty))
                .count())
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut counts = Vec::with_capacity(runs);
    for answer in answers {
        counts.push(answer.map_err(|e| Error::Storage(format!("reading a run back: {e}")))?);
    }
    Ok((
        counts.iter().filter(|n| **n == 0).count(),
        counts.iter().filter(|n| **n > 1).count(),
    ))
}

/// A `concierge serve` child on the bench's database.
struct Server {
    child: Child,
    pid: u32,
    url: String,
    started: Instant,
    log: std::path::PathBuf,
}

impl Server {
    /// Starts `concierge serve` on a free loopback port, its log in `dir`.
    async fn start(dir: &Path, db: &Path, model_url: &str, runs: usize, name: &str) -> Result<Self> {
        let storage = |e: &dyn std::fmt::Display| Error::Storage(e.to_string());
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| storage(&e))?;
        let log = dir.join(format!("{name}-server.log"));
        let log_file = std::fs::File::create(&log).map_err(|e| storage(&e))?;
        let exe = std::env::current_exe().map_err(|e| storage(&e))?;
        let started = Instant::now();
        let child = Command::new(exe)
            .current_dir(dir)
            .arg("--db")
            .arg(db)
            .args(["--base-url", model_url, "--model", "openai:fixture", "serve", "--addr"])
            .arg(addr.to_string())
            .arg("--max-runs-per-tenant")
            .arg((runs + 1).to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Error::Storage(format!("cannot start concierge serve: {e}")))?;
        let pid = child
            .id()
            .ok_or_else(|| Error::Storage("concierge serve ended at once".into()))?;
        Ok(Self {
            child,
            pid,
            url: format!("http://{addr}"),
            started,
            log,
        })
    }

    /// Polls `path` until it answers 200; the time since the server started.
    async fn wait_for(&mut self, path: &str, http: &reqwest::Client) -> Result<Duration> {
        loop {
            let answer = http
                .get(format!("{}{path}", self.url))
                .timeout(Duration::from_secs(5))
                .send()
                .await;
            if answer.is_ok_and(|a| a.status().is_success()) {
                return Ok(self.started.elapsed());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.failure(&format!("the server ended ({status}) before {path} answered")));
            }
            if self.started.elapsed() > PATIENCE {
                return Err(self.failure(&format!("{path} did not answer 200")));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// SIGKILL, and reaps it.
    async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// An error that quotes the end of the server's log.
    fn failure(&self, what: &str) -> Error {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(10).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Error::Storage(format!(
            "recovery bench: {what}; the server's log ends:\n{}",
            tail.join("\n")
        ))
    }
}

/// Prints the report as asked; failure when a run was lost or doubled.
pub fn print(args: &BenchArgs, report: &RecoveryReport) -> Result<std::process::ExitCode> {
    if args.table {
        println!("runs in flight      {}", report.runs);
        println!("idle sessions       {}", report.idle_sessions);
        println!("/healthz after      {} ms", report.live_ms);
        println!("/readyz after       {} ms", report.ready_ms);
        println!("all answered after  {} ms", report.answered_ms);
        println!("server CPU          {} s", report.server_cpu_s);
        println!("server max RSS      {} MiB", report.server_max_rss_mb);
        println!("lost / doubled      {} / {}", report.lost, report.doubled);
    } else {
        let line = serde_json::to_string(report).map_err(|e| Error::InvalidConfig(e.to_string()))?;
        println!("{line}");
    }
    Ok(if report.lost == 0 && report.doubled == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}
