//! `concierge bench`: S sessions of T turns against the calculator agent with
//! the LLM planner, C sessions at a time, over an OpenAI-compatible server
//! (`--serve-fake ADDR` runs the instant, deterministic fixture), on the
//! embedded engine (in memory, or SQLite with `--durable`) or on Temporal
//! (`--temporal ADDRESS`, workers in this process; `--compare-embedded` runs
//! the embedded engine on the same workload first).

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use clap::Args;
#[cfg(feature = "temporal")]
use concierge::SessionId;
use concierge::model::{Model, ModelContext, ModelError, OpenAiCompatible};
use concierge::{Error, ModelReply, ModelRequest, Result, RunOptions, RunStatus, Runtime};
#[cfg(feature = "temporal")]
use concierge_temporal::{Temporal, TemporalConfig, Workers};
use futures::StreamExt;
use futures::future::BoxFuture;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use tokio::sync::Semaphore;

mod http;
mod listing;
pub(crate) mod measure;
mod recovery;
mod temporal;

use crate::{Cli, fake_server};
use measure::{gather, percentile, proc_usage, round};
use temporal::TemporalFigures;

/// `concierge bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Serve the benchmark fixture (an instant, deterministic OpenAI-compatible
    /// server) on this address instead of benchmarking.
    #[arg(long, value_name = "ADDR")]
    pub serve_fake: Option<SocketAddr>,
    /// Independent sessions.
    #[arg(long, default_value_t = 200)]
    pub sessions: usize,
    /// Turns per session.
    #[arg(long, default_value_t = 10)]
    pub turns: usize,
    /// Sessions running at once.
    #[arg(long, default_value_t = 50)]
    pub concurrency: usize,
    /// Use the embedded SQLite engine on a fresh temporary database (default: memory).
    #[arg(long)]
    pub durable: bool,
    /// The durable journal's group-commit window, in microseconds.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 1000)]
    pub commit_window_us: u64,
    /// How many times its last snapshot's size a session's journal grows
    /// before it is snapshotted again (with --durable) [default: the
    /// engine's, 4].
    #[arg(long, value_name = "FACTOR")]
    pub snapshot_growth: Option<u64>,
    /// Stream model answers (each session has a live subscriber, so the
    /// runtime asks for deltas and publishes them as events).
    #[arg(long)]
    pub stream: bool,
    /// After the turns, open this many event streams on the sessions (as
    /// browser tabs following conversations would), each read to its first
    /// event and then idle, and report the memory each holds (in process
    /// only: not with --http).
    #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "http")]
    pub idle_streams: usize,
    /// With --idle-streams: every stream on the first session, instead of
    /// one session after another.
    #[arg(long)]
    pub streams_on_one_session: bool,
    /// Spread the sessions over this many tenants, then measure what a page
    /// of one tenant's sessions costs (and reading every session, beside it).
    #[arg(long, value_name = "N", conflicts_with_all = ["http", "temporal"])]
    pub tenants: Option<usize>,
    /// Measure a restart instead: N runs in flight when a `concierge serve`
    /// on SQLite is killed, then how long a new one takes to be live, to be
    /// ready and to finish them all (and whether any was lost or doubled).
    #[arg(long, value_name = "N", conflicts_with_all = ["http", "temporal", "serve_fake", "tenants", "idle_streams"])]
    pub recovery: Option<usize>,
    /// With --recovery: this many sessions with a finished turn in the
    /// database beforehand (a restart should not read them).
    #[arg(long, value_name = "M", default_value_t = 0, requires = "recovery")]
    pub idle_sessions: usize,
    /// Print a table instead of a JSON line.
    #[arg(long, conflicts_with = "json")]
    pub table: bool,
    /// Print one JSON line (the default).
    #[arg(long)]
    pub json: bool,
    /// Send the turns through a running `concierge serve` at this URL (its
    /// OpenAI-compatible `/v1/chat/completions`) instead of in process.
    #[arg(long, value_name = "URL", conflicts_with = "serve_fake")]
    pub http: Option<String>,
    /// Which of the server's doors `--http` sends the turns through.
    #[arg(long, value_enum, default_value_t = http::Door::Openai, requires = "http")]
    pub door: http::Door,
    /// Run the sessions on the Temporal server at this address (host:port),
    /// with the workers (sessions, models, tools) in this process.
    #[arg(long, value_name = "ADDRESS", conflicts_with_all = ["http", "serve_fake"])]
    pub temporal: Option<String>,
    /// The Temporal namespace the sessions run in.
    #[arg(long, value_name = "NAMESPACE", default_value = "default", requires = "temporal")]
    pub temporal_namespace: String,
    /// Sends gRPC messages to Temporal uncompressed (the SDK gzips them by
    /// default, which costs CPU on loopback).
    #[arg(long, requires = "temporal")]
    pub temporal_no_compression: bool,
    /// Calls the model with local activities in the session's worker
    /// (`model_calls = "local"`) instead of activities on the models queue.
    #[arg(long, requires = "temporal")]
    pub temporal_local_model_calls: bool,
    /// The Temporal server's process id: its CPU per turn is reported too
    /// (read from /proc, so the server runs on this machine).
    #[arg(long, value_name = "PID", requires = "temporal")]
    pub temporal_server_pid: Option<u32>,
    /// With --temporal, first run the same workload on the embedded engine
    /// (in memory, or SQLite with --durable) and report both.
    #[arg(long, requires = "temporal")]
    pub compare_embedded: bool,
}

/// Which engine a benchmark runs its sessions on.
enum Target {
    /// The embedded engine (in memory, or SQLite with `--durable`).
    Embedded,
    /// Temporal, with the workers in this process.
    #[cfg(feature = "temporal")]
    Temporal(Box<TemporalConfig>),
}

impl Target {
    /// Whether the sessions run on Temporal.
    fn is_temporal(&self) -> bool {
        match self {
            Target::Embedded => false,
            #[cfg(feature = "temporal")]
            Target::Temporal(_) => true,
        }
    }
}

/// Counts model calls.
struct Counting {
    inner: OpenAiCompatible,
    calls: Arc<AtomicU64>,
}

impl Model for Counting {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.complete(request, cx)
    }
}

/// One benchmark's result: the fields the issue asks for, then extras.
#[derive(Debug, Serialize)]
pub struct Report {
    pub sessions: usize,
    pub turns: usize,
    pub concurrency: usize,
    pub wall_s: f64,
    pub turns_per_s: f64,
    pub cpu_s: f64,
    pub max_rss_mb: f64,
    pub llm_calls: u64,
    pub p50_turn_ms: f64,
    pub p95_turn_ms: f64,
    pub errors: u64,
    pub variant: String,
    pub cpu_ms_per_turn: f64,
    /// CPU per turn in each tenth of the turns, in the order they finished
    /// (with --concurrency equal to --sessions, the last tenth is the cost
    /// of the conversations' last turns, their history the longest).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_ms_per_turn_by_tenth: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written_per_turn: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_bytes_per_turn: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsyncs_per_turn: Option<f64>,
    /// Idle event streams opened after the turns (`--idle-streams`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_streams: Option<usize>,
    /// Resident memory each idle stream added, in KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_stream_kib: Option<f64>,
    /// What a page of one tenant's sessions costs (`--tenants`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub listing: Option<listing::ListFigures>,
    /// What the Temporal engine adds (its workers' and server's CPU, history).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub temporal: Option<TemporalFigures>,
}

pub async fn bench(cli: &Cli, args: &BenchArgs) -> Result<ExitCode> {
    if let Some(addr) = args.serve_fake {
        fake_server::serve(addr)
            .await
            .map_err(|e| Error::InvalidConfig(format!("cannot serve the fixture on {addr}: {e}")))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(runs) = args.recovery {
        if runs == 0 || args.concurrency == 0 {
            return Err(Error::InvalidConfig(
                "--recovery and --concurrency must be at least 1".into(),
            ));
        }
        let report = recovery::run(args, runs).await?;
        return recovery::print(args, &report);
    }
    if args.sessions == 0 || args.turns == 0 || args.concurrency == 0 {
        return Err(Error::InvalidConfig(
            "--sessions, --turns and --concurrency must be at least 1".into(),
        ));
    }
    if let Some(url) = &args.http {
        http::check_url(url)?;
        let report = http::run(args, url).await?;
        return print(args, report);
    }
    let Some(base_url) = cli.base_url.clone() else {
        return Err(Error::InvalidConfig(
            "bench needs --base-url URL (start the fixture with: concierge bench --serve-fake 127.0.0.1:8090)".into(),
        ));
    };
    let model_name = cli
        .model
        .as_deref()
        .map(|m| m.split_once(':').map_or(m, |(_, name)| name))
        .unwrap_or("fake")
        .to_string();
    let Some(address) = &args.temporal else {
        let report = run(args, &base_url, &model_name, Target::Embedded).await?;
        return print(args, report);
    };
    temporal(args, &base_url, &model_name, address).await
}

/// Without the `temporal` feature, `--temporal` is a clear error.
#[cfg(not(feature = "temporal"))]
async fn temporal(_: &BenchArgs, _: &str, _: &str, _: &str) -> Result<ExitCode> {
    Err(Error::InvalidConfig(crate::setup::NO_TEMPORAL.into()))
}

/// `--temporal`: the workload on Temporal, after the embedded engine with
/// `--compare-embedded`.
#[cfg(feature = "temporal")]
async fn temporal(args: &BenchArgs, base_url: &str, model_name: &str, address: &str) -> Result<ExitCode> {
    if args.durable && !args.compare_embedded {
        return Err(Error::InvalidConfig(
            "--durable chooses the embedded engine's journal: with --temporal it needs --compare-embedded".into(),
        ));
    }
    if let Some(pid) = args.temporal_server_pid {
        temporal::process_cpu_s(pid)?;
    }
    let mut failed = false;
    if args.compare_embedded {
        let report = run(args, base_url, model_name, Target::Embedded).await?;
        failed |= print(args, report)? != ExitCode::SUCCESS;
        if args.table {
            println!();
        }
    }
    let config = temporal::config(address, &args.temporal_namespace)
        .grpc_compression(!args.temporal_no_compression)
        .model_calls(match args.temporal_local_model_calls {
            true => concierge_temporal::ModelCalls::Local,
            false => concierge_temporal::ModelCalls::Activity,
        });
    let report = run(args, base_url, model_name, Target::Temporal(Box::new(config))).await?;
    failed |= print(args, report)? != ExitCode::SUCCESS;
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// Prints the report as asked; failure when a turn failed.
/// The id of the benchmark's session number `s` (in process).
pub(crate) fn session_of(s: usize) -> String {
    format!("bench-{s}")
}

fn print(args: &BenchArgs, report: Report) -> Result<ExitCode> {
    if args.table {
        print_table(&report);
    } else {
        let line = serde_json::to_string(&report).map_err(|e| Error::InvalidConfig(e.to_string()))?;
        println!("{line}");
    }
    Ok(if report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

// Without the Temporal engine, the figures only it reports are measured but unused.
#[cfg_attr(not(feature = "temporal"), allow(unused_variables))]
async fn run(args: &BenchArgs, base_url: &str, model_name: &str, target: Target) -> Result<Report> {
    let calls = Arc::new(AtomicU64::new(0));
    let model = Counting {
        inner: OpenAiCompatible::new(model_name).base_url(base_url),
        calls: calls.clone(),
    };
    let dir = tempfile::tempdir().map_err(|e| Error::Storage(e.to_string()))?;
    let mut builder = crate::demo::install(Runtime::builder())?
        .model(model)
        .commit_window(std::time::Duration::from_micros(args.commit_window_us));
    if let Some(factor) = args.snapshot_growth {
        builder = builder.snapshot_growth(factor);
    }
    builder = match &target {
        #[cfg(feature = "temporal")]
        Target::Temporal(config) => builder.engine(Temporal::new(config.as_ref().clone()).workers(Workers::all())),
        Target::Embedded if args.durable => builder.sqlite(dir.path().join("bench.db")),
        Target::Embedded => builder.in_memory(),
    };
    let rt = builder.build().await?;
    let client = rt.client("calculator")?;
    let stream = args.stream;

    let total = (args.sessions * args.turns) as u64;
    let bar = ProgressBar::with_draw_target(
        Some(total),
        if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} turns {per_sec} eta {eta}") {
        bar.set_style(style);
    }
    let semaphore = Arc::new(Semaphore::new(args.concurrency));
    let before = proc_usage();
    let threads_before = temporal::thread_cpu();
    let server_before = match (target.is_temporal(), args.temporal_server_pid) {
        (true, Some(pid)) => Some(temporal::process_cpu_s(pid)?),
        _ => None,
    };
    let stats_before = rt.journal_stats();
    let tenths = Arc::new(measure::Tenths::start(total));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(args.sessions);
    for s in 0..args.sessions {
        let client = client.clone();
        let rt = rt.clone();
        let semaphore = semaphore.clone();
        let bar = bar.clone();
        let tenths = tenths.clone();
        let turns = args.turns;
        let tenant = args.tenants.map(|n| listing::tenant_of(s, n));
        tasks.push(tokio::spawn(async move {
            let Ok(_permit) = semaphore.acquire_owned().await else {
                return (Vec::new(), turns as u64);
            };
            let mut latencies = Vec::with_capacity(turns);
            let mut errors = 0u64;
            let session = session_of(s);
            // A live subscriber makes the runtime stream; it drains the events.
            let drain = stream.then(|| {
                let mut events = rt.subscribe(session.as_str(), 1);
                tokio::spawn(async move { while events.next().await.is_some() {} })
            });
            for t in 0..turns {
                let question = format!("what is {} plus {}?", 10 + s % 90, t + 1);
                let start = Instant::now();
                let mut options = RunOptions::new().session_id(session.as_str());
                if let Some(tenant) = &tenant {
                    options = options.tenant(tenant.as_str());
                }
                let result = client.run(question, options).await;
                latencies.push(start.elapsed().as_secs_f64() * 1000.0);
                match result {
                    Ok(out) if out.status == RunStatus::Completed && out.error.is_none() => {}
                    Ok(out) => {
                        errors += 1;
                        tracing::warn!(session, status = ?out.status, error = ?out.error, "turn failed");
                    }
                    Err(error) => {
                        errors += 1;
                        tracing::warn!(session, %error, "turn failed");
                    }
                }
                bar.inc(1);
                tenths.turn_done();
            }
            if let Some(drain) = drain {
                drain.abort();
            }
            (latencies, errors)
        }));
    }
    let (mut latencies, errors) = gather(tasks, total, args.turns).await;
    let wall = started.elapsed();
    let after = proc_usage();
    let threads_after = temporal::thread_cpu();
    let server_cpu_s = match (server_before, args.temporal_server_pid) {
        (Some(before), Some(pid)) => Some(temporal::process_cpu_s(pid)? - before),
        _ => None,
    };
    bar.finish_and_clear();
    let stats = rt.journal_stats();
    let idle_stream_kib = match args.idle_streams {
        0 => None,
        n => Some(idle_streams(&rt, args, n).await),
    };
    let listing = match args.tenants {
        Some(n) => Some(listing::measure(&rt, n, args.sessions).await?),
        None => None,
    };
    latencies.sort_by(f64::total_cmp);
    let turns = total as f64;
    let cpu = after.cpu_s - before.cpu_s;
    let durable_run = args.durable && !target.is_temporal();
    let durable = |x: f64| durable_run.then(|| round(x / turns, 2));
    let temporal = match &target {
        Target::Embedded => None,
        #[cfg(feature = "temporal")]
        Target::Temporal(config) => {
            let sessions: Vec<SessionId> = (0..args.sessions).map(|s| SessionId::new(session_of(s))).collect();
            let figures =
                temporal::figures(config, &sessions, turns, (threads_before, threads_after), server_cpu_s).await?;
            rt.shutdown().await;
            Some(figures)
        }
    };
    Ok(Report {
        sessions: args.sessions,
        turns: args.turns,
        concurrency: args.concurrency,
        wall_s: round(wall.as_secs_f64(), 3),
        turns_per_s: round(turns / wall.as_secs_f64().max(1e-9), 3),
        cpu_s: round(cpu, 2),
        max_rss_mb: round(after.max_rss_mb, 1),
        llm_calls: calls.load(Ordering::Relaxed),
        p50_turn_ms: round(percentile(&latencies, 50.0), 2),
        p95_turn_ms: round(percentile(&latencies, 95.0), 2),
        errors,
        variant: format!(
            "{}{}",
            match &target {
                #[cfg(feature = "temporal")]
                Target::Temporal(config) => match config.model_calls {
                    concierge_temporal::ModelCalls::Local =>
                        "temporal, local model calls (workers in process)".to_string(),
                    concierge_temporal::ModelCalls::Activity => "temporal (workers in process)".to_string(),
                },
                Target::Embedded if args.durable => format!("sqlite (commit window {} us)", args.commit_window_us),
                Target::Embedded => "memory".into(),
            },
            if args.stream { ", streamed" } else { "" }
        ),
        cpu_ms_per_turn: round(cpu * 1000.0 / turns, 3),
        cpu_ms_per_turn_by_tenth: tenths.per_turn_ms(),
        bytes_written_per_turn: durable(after.write_bytes.saturating_sub(before.write_bytes) as f64),
        journal_bytes_per_turn: durable((stats.payload_bytes - stats_before.payload_bytes) as f64),
        fsyncs_per_turn: durable_run.then(|| round((stats.commits - stats_before.commits) as f64 / turns, 3)),
        idle_streams: (args.idle_streams > 0).then_some(args.idle_streams),
        idle_stream_kib,
        listing,
        temporal,
    })
}

/// Opens `n` event streams on the benchmark's sessions (all on the first
/// with `--streams-on-one-session`), each read to the session's last event
/// (as a page that shows the conversation does) and then idle, and returns
/// the resident memory each added, in KiB, while all are open.
async fn idle_streams(rt: &Runtime, args: &BenchArgs, n: usize) -> f64 {
    let before = measure::resident_kib();
    let mut streams = Vec::with_capacity(n);
    for i in 0..n {
        let session = session_of(if args.streams_on_one_session {
            0
        } else {
            i % args.sessions
        });
        let last = match rt.session(session.as_str()).await {
            Ok(state) => state.last_seq(),
            Err(_) => 0,
        };
        let mut events = rt.subscribe(session.as_str(), 1);
        while let Some(Ok(event)) = events.next().await {
            if event.seq >= last {
                break;
            }
        }
        streams.push(events);
    }
    let after = measure::resident_kib();
    drop(streams);
    round(after.saturating_sub(before) as f64 / n as f64, 1)
}

fn print_table(r: &Report) {
    let rows: Vec<(&str, String)> = vec![
        ("variant", r.variant.clone()),
        ("sessions x turns", format!("{} x {}", r.sessions, r.turns)),
        ("concurrency", r.concurrency.to_string()),
        ("wall", format!("{:.3} s", r.wall_s)),
        ("turns/s", format!("{:.1}", r.turns_per_s)),
        ("CPU", format!("{:.2} s ({:.3} ms/turn)", r.cpu_s, r.cpu_ms_per_turn)),
        (
            "CPU by tenth",
            r.cpu_ms_per_turn_by_tenth
                .iter()
                .map(|ms| format!("{ms:.3}"))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        ("max RSS", format!("{:.1} MB", r.max_rss_mb)),
        ("LLM calls", r.llm_calls.to_string()),
        (
            "turn p50 / p95",
            format!("{:.2} / {:.2} ms", r.p50_turn_ms, r.p95_turn_ms),
        ),
        ("errors", r.errors.to_string()),
    ];
    for (k, v) in rows {
        println!("{k:<18} {v}");
    }
    if let (Some(b), Some(j), Some(f)) = (r.bytes_written_per_turn, r.journal_bytes_per_turn, r.fsyncs_per_turn) {
        println!(
            "{:<18} {b:.0} B written, {j:.0} B journal payload, {f:.3} fsyncs",
            "per turn"
        );
    }
    if let (Some(n), Some(kib)) = (r.idle_streams, r.idle_stream_kib) {
        println!("{:<18} {kib:.1} KiB each ({n} open)", "idle streams");
    }
    if let Some(l) = &r.listing {
        println!(
            "{:<18} {:.3} ms a page of one tenant's (p50; p95 {:.3}), {:.2} ms every session ({} tenants)",
            "session list", l.list_page_ms_p50, l.list_page_ms_p95, l.list_every_session_ms, l.tenants
        );
        if let Some(next) = l.list_next_page_ms_p50 {
            println!("{:<18} {next:.3} ms (p50)", "the next page");
        }
        println!("{:<18} {:.3} ms (p50)", "ending one", l.end_conversation_ms_p50);
    }
    if let Some(t) = &r.temporal {
        println!("{:<18} {}", "temporal", t.temporal);
        println!(
            "{:<18} {:.3} ms workers' threads, {:.3} ms the rest (client)",
            "CPU per turn", t.worker_thread_cpu_ms_per_turn, t.client_cpu_ms_per_turn
        );
        if let Some(server) = t.server_cpu_ms_per_turn {
            println!("{:<18} {server:.3} ms/turn", "server CPU");
        }
        println!(
            "{:<18} {:.2} events, {:.0} bytes",
            "history per turn", t.history_events_per_turn, t.history_bytes_per_turn
        );
        for (kind, n) in &t.history_events_by_type_per_turn {
            println!("{:<18}   {n:>6.2} {kind}", "");
        }
    }
}
