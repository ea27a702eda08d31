//! What a benchmark measures of this process (procfs), and the arithmetic
//! its report uses.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// What this process has used so far, from procfs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Usage {
    pub(crate) cpu_s: f64,
    pub(crate) write_bytes: u64,
    pub(crate) max_rss_mb: f64,
}

pub(crate) fn proc_usage() -> Usage {
    usage_of("self")
}

/// What the process `pid` (or `self`) has used so far, from procfs.
pub(crate) fn usage_of(pid: &str) -> Usage {
    // Linux reports CPU time in clock ticks of 1/100 s (USER_HZ).
    let cpu_s = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = after.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or_default();
    Usage {
        cpu_s,
        write_bytes: field(&format!("/proc/{pid}/io"), "write_bytes:").unwrap_or_default(),
        max_rss_mb: field(&format!("/proc/{pid}/status"), "VmHWM:").unwrap_or_default() as f64 / 1024.0,
    }
}

/// This process's resident memory now (`VmRSS`), in KiB.
pub(crate) fn resident_kib() -> u64 {
    field("/proc/self/status", "VmRSS:").unwrap_or_default()
}

/// The number after `name` on its line of the procfs `file`.
fn field(file: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The `p`th percentile (0–100) of sorted values, nearest rank; 0 when there are none.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// `x` rounded to `digits` decimals.
pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The turn latencies and errors of a benchmark's session tasks, as they
/// finish (a task that panicked counts all its `turns` as errors).
pub(crate) async fn gather(
    tasks: Vec<tokio::task::JoinHandle<(Vec<f64>, u64)>>,
    total: u64,
    turns: usize,
) -> (Vec<f64>, u64) {
    let mut latencies = Vec::with_capacity(total as usize);
    let mut errors = 0;
    for task in tasks {
        match task.await {
            Ok((l, e)) => {
                latencies.extend(l);
                errors += e;
            }
            Err(_) => errors += turns as u64,
        }
    }
    (latencies, errors)
}

/// The CPU this process used in each tenth of a benchmark's turns, in the
/// order they finished: with as many sessions at once as there are, the
/// last tenth is what the conversations' last turns cost, history and all.
pub(crate) struct Tenths {
    total: u64,
    done: AtomicU64,
    marks: Mutex<Vec<f64>>,
}

impl Tenths {
    /// Starts counting `total` turns, from the CPU used so far.
    pub(crate) fn start(total: u64) -> Self {
        Self {
            total,
            done: AtomicU64::new(0),
            marks: Mutex::new(vec![proc_usage().cpu_s]),
        }
    }

    /// Counts a finished turn; at the end of a tenth, notes the CPU used.
    pub(crate) fn turn_done(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let tenth = self.total.div_ceil(10).max(1);
        if done % tenth == 0 || done == self.total {
            let cpu_s = proc_usage().cpu_s;
            if let Ok(mut marks) = self.marks.lock() {
                marks.push(cpu_s);
            }
        }
    }

    /// Milliseconds of CPU per turn in each tenth (empty under ten turns).
    pub(crate) fn per_turn_ms(&self) -> Vec<f64> {
        let tenth = self.total.div_ceil(10).max(1);
        if self.total < 10 {
            return Vec::new();
        }
        let Ok(marks) = self.marks.lock() else {
            return Vec::new();
        };
        marks
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                let turns = tenth.min(self.total - tenth * i as u64).max(1);
                round((w[1] - w[0]) * 1000.0 / turns as f64, 3)
            })
            .collect()
    }
}
