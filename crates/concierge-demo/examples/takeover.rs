//! Measures how fast a process takes over the runs a dead process left in
//! flight: one process starts N runs whose model never answers and dies
//! (its owner entry stays); a second opens the database, takes them over and
//! finishes them all with a model that answers at once.
//!
//! `cargo run --release -p concierge-demo --example takeover -- 10000`

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use concierge::model::{Model, ModelContext, ModelError};
use concierge::{AgentSpec, ModelReply, ModelRequest, RunOptions, Runtime};
use futures::future::BoxFuture;

/// A model that never answers (the process dies while it waits).
struct Silent;

impl Model for Silent {
    fn name(&self) -> String {
        "bench:silent".into()
    }

    fn complete<'a>(
        &'a self,
        _: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(futures::future::pending())
    }
}

/// A model that answers at once.
struct Quick;

impl Model for Quick {
    fn name(&self) -> String {
        "bench:quick".into()
    }

    fn complete<'a>(
        &'a self,
        _: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async { Ok(ModelReply::text("done").with_usage(10, 1)) })
    }
}

fn builder(db: &Path) -> concierge::RuntimeBuilder {
    Runtime::builder()
        .agent(AgentSpec::new("helper").instructions("Help."))
        .sqlite(db)
}

/// Starts `n` runs that never finish, then ends the process without a word.
async fn fill(db: &Path, n: usize) -> concierge::Result<()> {
    let rt = builder(db).model(Silent).build().await?;
    let client = rt.client("helper")?;
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        handles.push(client.start("hello", RunOptions::new().session_id(format!("s{i}"))));
    }
    for handle in futures::future::join_all(handles).await {
        handle?;
    }
    println!("{n} runs in flight; the process dies now");
    std::process::exit(0);
}

async fn take(db: &Path) -> concierge::Result<()> {
    let started = Instant::now();
    let rt = builder(db).model(Quick).build().await?;
    let taken = started.elapsed();
    let recovered = rt.recovered();
    let waits = recovered.iter().map(|id| rt.wait(id.clone()));
    let mut finished = 0;
    for output in futures::future::join_all(waits).await {
        if output?.is_some_and(|o| o.reply.as_deref() == Some("done")) {
            finished += 1;
        }
    }
    let done = started.elapsed();
    println!(
        "took over {} sessions in {:.2} s; all {} runs finished {:.2} s after opening",
        recovered.len(),
        taken.as_secs_f64(),
        finished,
        done.as_secs_f64()
    );
    rt.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> concierge::Result<()> {
    let mut args = std::env::args().skip(1);
    let first = args.next().unwrap_or_else(|| "10000".into());
    if first == "--fill" {
        let db = args.next().unwrap_or_default();
        let n = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
        return fill(Path::new(&db), n).await;
    }
    if first == "--take" {
        let db = args.next().unwrap_or_default();
        return take(Path::new(&db)).await;
    }
    let n: usize = first.parse().unwrap_or(10_000);
    let dir = tempfile::tempdir().map_err(|e| concierge::Error::Storage(e.to_string()))?;
    let db = dir.path().join("takeover.db");
    let me = std::env::current_exe().map_err(|e| concierge::Error::Storage(e.to_string()))?;
    let status = Command::new(&me)
        .args(["--fill", &db.to_string_lossy(), &n.to_string()])
        .status()
        .map_err(|e| concierge::Error::Storage(e.to_string()))?;
    if !status.success() {
        return Err(concierge::Error::Storage("the filling process failed".into()));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let status = Command::new(&me)
        .args(["--take", &db.to_string_lossy()])
        .status()
        .map_err(|e| concierge::Error::Storage(e.to_string()))?;
    if !status.success() {
        return Err(concierge::Error::Storage("the taking process failed".into()));
    }
    Ok(())
}
