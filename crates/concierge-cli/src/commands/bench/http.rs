//! `concierge bench --http URL`: the same load as `concierge bench` (S
//! sessions of T turns asking the calculator agent, C sessions at a time),
//! sent through a running `concierge serve`. By default through its
//! OpenAI-compatible endpoint: `POST URL/v1/chat/completions` with model
//! `calculator`, each session named by the `X-Concierge-Session` header
//! (with `--stream`, streamed answers read to `[DONE]`). With `--door
//! messages`, through the sessions API: each session created with `POST
//! URL/api/v1/sessions`, each turn `POST …/messages?wait=true`. Start the
//! server on a model, e.g. the fixture:
//!
//! ```sh
//! concierge bench --serve-fake 127.0.0.1:8090 &
//! concierge --base-url http://127.0.0.1:8090/v1 --model openai:fake serve --addr 127.0.0.1:8080 &
//! concierge bench --http http://127.0.0.1:8080 --table
//! ```
//!
//! The CPU and memory figures are this driver's own, not the server's, and
//! the model calls are not seen from here (`llm_calls` is 0).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Instant;

use concierge::{Error, Result};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::measure::{gather, percentile, proc_usage, round};
use super::{BenchArgs, Report};

/// A door of the server the turns go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Door {
    /// `POST /v1/chat/completions`, the session named by a header.
    Openai,
    /// `POST /api/v1/sessions/{id}/messages?wait=true`.
    Messages,
}

/// Runs the load against the server at `url` (its root, e.g. `http://127.0.0.1:8080`).
pub async fn run(args: &BenchArgs, url: &str) -> Result<Report> {
    if args.door == Door::Messages && args.stream {
        return Err(Error::InvalidConfig(
            "--stream reads /v1/chat/completions' streamed answers; drop it with --door messages".into(),
        ));
    }
    let root = url.trim_end_matches('/').to_string();
    let endpoint = match args.door {
        Door::Openai => format!("{root}/v1/chat/completions"),
        Door::Messages => format!("{root}/api/v1/sessions"),
    };
    let http = reqwest::Client::new();
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
    let run_id = std::process::id();
    let before = proc_usage();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(args.sessions);
    for s in 0..args.sessions {
        let http = http.clone();
        let endpoint = endpoint.clone();
        let semaphore = semaphore.clone();
        let bar = bar.clone();
        let (turns, stream, door) = (args.turns, args.stream, args.door);
        tasks.push(tokio::spawn(async move {
            let Ok(_permit) = semaphore.acquire_owned().await else {
                return (Vec::new(), turns as u64);
            };
            let session = format!("bench-{run_id}-{s}");
            let mut latencies = Vec::with_capacity(turns);
            let mut errors = 0u64;
            if door == Door::Messages
                && let Err(error) = create_session(&http, &endpoint, &session).await
            {
                tracing::warn!(session, %error, "the session could not be created");
                return (latencies, turns as u64);
            }
            for t in 0..turns {
                let question = format!("what is {} plus {}?", 10 + s % 90, t + 1);
                let start = Instant::now();
                let result = match door {
                    Door::Openai => turn(&http, &endpoint, &session, &question, stream).await,
                    Door::Messages => message(&http, &endpoint, &session, &question).await,
                };
                latencies.push(start.elapsed().as_secs_f64() * 1000.0);
                if let Err(error) = result {
                    errors += 1;
                    tracing::warn!(session, %error, "turn failed");
                }
                bar.inc(1);
            }
            (latencies, errors)
        }));
    }
    let (mut latencies, errors) = gather(tasks, total, args.turns).await;
    let wall = started.elapsed();
    let after = proc_usage();
    bar.finish_and_clear();
    latencies.sort_by(f64::total_cmp);
    let turns = total as f64;
    let cpu = after.cpu_s - before.cpu_s;
    Ok(Report {
        sessions: args.sessions,
        turns: args.turns,
        concurrency: args.concurrency,
        wall_s: round(wall.as_secs_f64(), 3),
        turns_per_s: round(turns / wall.as_secs_f64().max(1e-9), 3),
        cpu_s: round(cpu, 2),
        max_rss_mb: round(after.max_rss_mb, 1),
        llm_calls: 0,
        p50_turn_ms: round(percentile(&latencies, 50.0), 2),
        p95_turn_ms: round(percentile(&latencies, 95.0), 2),
        errors,
        variant: format!(
            "http {}{} (CPU and memory: this driver's)",
            match args.door {
                Door::Openai => endpoint,
                Door::Messages => format!("{endpoint}/{{id}}/messages?wait=true"),
            },
            if args.stream { ", streamed" } else { "" }
        ),
        cpu_ms_per_turn: round(cpu * 1000.0 / turns, 3),
        cpu_ms_per_turn_by_tenth: Vec::new(),
        bytes_written_per_turn: None,
        journal_bytes_per_turn: None,
        fsyncs_per_turn: None,
        idle_streams: None,
        idle_stream_kib: None,
        listing: None,
        temporal: None,
    })
}

/// One turn: the question in the session; an error unless the answer is
/// a 200 with text that is not a failure.
async fn turn(
    http: &reqwest::Client,
    endpoint: &str,
    session: &str,
    question: &str,
    stream: bool,
) -> std::result::Result<(), String> {
    let body = json!({
        "model": "calculator",
        "stream": stream,
        "messages": [{"role": "user", "content": question}],
    });
    let response = http
        .post(endpoint)
        .header("x-concierge-session", session)
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let response = succeeded(response).await?;
    let text = if stream {
        let mut body = response.bytes_stream();
        let mut raw = Vec::new();
        while let Some(bytes) = body.next().await {
            raw.extend_from_slice(&bytes.map_err(|e| e.to_string())?);
        }
        let raw = String::from_utf8_lossy(&raw);
        if !raw.contains("data: [DONE]") {
            return Err("the stream ended without [DONE]".into());
        }
        raw.lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str().map(str::to_string))
            .collect::<String>()
    } else {
        let answer: Value = response.json().await.map_err(|e| e.to_string())?;
        answer["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    if text.trim().is_empty() || text.starts_with("Something went wrong") {
        return Err(format!("the answer is not one: {text:?}"));
    }
    Ok(())
}

/// Creates `session` for the calculator agent through the sessions API at `endpoint`.
async fn create_session(http: &reqwest::Client, endpoint: &str, session: &str) -> std::result::Result<(), String> {
    let response = http
        .post(endpoint)
        .json(&json!({"id": session, "agent": "calculator"}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    succeeded(response).await.map(drop)
}

/// One turn through the sessions API: the question posted to `session` and
/// waited for; an error unless the answer is a 200 with a reply.
async fn message(
    http: &reqwest::Client,
    endpoint: &str,
    session: &str,
    question: &str,
) -> std::result::Result<(), String> {
    let response = http
        .post(format!("{endpoint}/{session}/messages?wait=true"))
        .json(&json!({"text": question}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let response = succeeded(response).await?;
    let answer: Value = response.json().await.map_err(|e| e.to_string())?;
    match answer["reply"].as_str() {
        Some(reply) if !reply.trim().is_empty() && !reply.starts_with("Something went wrong") => Ok(()),
        _ => Err(format!("the answer is not one: {answer}")),
    }
}

/// `response` if it is a success; else its status and body as the error.
async fn succeeded(response: reqwest::Response) -> std::result::Result<reqwest::Response, String> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let text = response.text().await.unwrap_or_default();
    Err(format!("{status}: {text}"))
}

/// `--http` needs a URL the server answers at.
pub fn check_url(url: &str) -> Result<()> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(Error::InvalidConfig(format!(
            "--http {url:?} is not an http:// or https:// URL; pass the server's root, e.g. http://127.0.0.1:8080"
        )))
    }
}
