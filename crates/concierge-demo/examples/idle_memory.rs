//! Measures the memory an idle session costs: N sessions each run one turn
//! of the calculator (on its rules, so no model is involved), then go idle
//! and leave memory. A counting allocator reports the heap in use.
//!
//! `cargo run --release -p concierge-demo --example idle_memory -- 100000 [--durable]`

use std::alloc::System;
use std::sync::Arc;
use std::time::{Duration, Instant};

use concierge::{RunOptions, Runtime};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tokio::sync::Semaphore;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap bytes in use since the region began (stats_alloc already counts a
/// realloc's growth or shrink in `bytes_allocated` / `bytes_deallocated`).
fn heap(region: &Region<'_, System>) -> i64 {
    let change = region.change();
    change.bytes_allocated as i64 - change.bytes_deallocated as i64
}

#[tokio::main]
async fn main() -> concierge::Result<()> {
    let mut args = std::env::args().skip(1);
    let sessions: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let durable = args.any(|a| a == "--durable");
    let dir = tempfile::tempdir().map_err(|e| concierge::Error::Storage(e.to_string()))?;
    let builder = concierge_demo::install(Runtime::builder()).idle_timeout(Duration::from_millis(500));
    let builder = if durable {
        builder.sqlite(dir.path().join("idle.db"))
    } else {
        builder.in_memory()
    };
    let rt = builder.build().await?;
    let client = rt.client("calculator")?;
    // Warm up allocator pools and caches with one session.
    client
        .run("calculate 1 + 1", RunOptions::new().session_id("warm"))
        .await?;
    let region = Region::new(GLOBAL);
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(256));
    let mut tasks = Vec::with_capacity(sessions);
    for i in 0..sessions {
        let client = client.clone();
        let permits = permits.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = permits.acquire_owned().await;
            client
                .run(
                    format!("calculate {i} + 1"),
                    RunOptions::new().session_id(format!("s{i}")),
                )
                .await
                .map(|out| out.success())
        }));
    }
    let mut failures = 0;
    for task in tasks {
        if !matches!(task.await, Ok(Ok(true))) {
            failures += 1;
        }
    }
    let resident = heap(&region);
    let in_memory = rt.sessions_in_memory();
    let elapsed = started.elapsed();
    // Let the idle sessions leave memory.
    while rt.sessions_in_memory() > 0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let idle = heap(&region);
    if std::env::var("IDLE_DEBUG").is_ok() {
        tokio::time::sleep(Duration::from_secs(12)).await;
        eprintln!("after 12 s: {:.0} B/session", heap(&region) as f64 / sessions as f64);
        drop(client);
        drop(rt);
        tokio::time::sleep(Duration::from_millis(200)).await;
        eprintln!(
            "after dropping the runtime: {:.0} B/session",
            heap(&region) as f64 / sessions as f64
        );
    }
    let per = |bytes: i64| bytes as f64 / sessions as f64;
    println!(
        "{{\"sessions\":{sessions},\"engine\":\"{}\",\"failures\":{failures},\"seconds\":{:.1},\"in_memory_after_turn\":{in_memory},\"bytes_per_session_in_memory\":{:.0},\"bytes_per_idle_session\":{:.0}}}",
        if durable { "sqlite" } else { "memory" },
        elapsed.as_secs_f64(),
        per(resident),
        per(idle),
    );
    Ok(())
}
