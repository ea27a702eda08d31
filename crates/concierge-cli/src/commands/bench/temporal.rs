//! `concierge bench --temporal ADDRESS`: the same workload on the Temporal
//! engine, with the workers (sessions, models, every agent's tools) in the
//! bench process, and what only this engine has to report: the CPU of the
//! workers' thread and of the Temporal server process, and what a turn adds
//! to the sessions' workflow histories.
//!
//! ```sh
//! temporal server start-dev --headless --ip 127.0.0.1 --port 7233 --namespace concierge &
//! concierge bench --serve-fake 127.0.0.1:8090 &
//! concierge --base-url http://127.0.0.1:8090/v1 --model openai:fake bench \
//!   --temporal 127.0.0.1:7233 --temporal-namespace concierge \
//!   --temporal-server-pid $(pgrep -n temporal) --compare-embedded --table
//! ```

use std::collections::BTreeMap;

#[cfg(feature = "temporal")]
use concierge::SessionId;
use concierge::{Error, Result};
#[cfg(feature = "temporal")]
use concierge_temporal::{TemporalConfig, history_cost};
use serde::Serialize;

#[cfg(feature = "temporal")]
use super::measure::round;

/// The names (as the kernel keeps them, 15 bytes at most) of the threads
/// the Temporal workers run on: concierge's `concierge-temporal-workers`
/// and the SDK's own `workflow-processing` and `temporal-real-sysinfo`.
const WORKER_THREADS: [&str; 3] = ["concierge-tempo", "workflow-proces", "temporal-real-s"];

/// What the Temporal engine adds to a benchmark's report, per turn.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TemporalFigures {
    /// The server's address and namespace, and the prefix of this run's
    /// queues and workflow ids.
    pub temporal: String,
    /// CPU of the workers' threads (workflow tasks, activities, polling).
    pub worker_thread_cpu_ms_per_turn: f64,
    /// CPU of the rest of the process (the client: updates, waiting).
    pub client_cpu_ms_per_turn: f64,
    /// CPU of the Temporal server process, when its pid was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_ms_per_turn: Option<f64>,
    /// History events the sessions' workflows have, per turn.
    pub history_events_per_turn: f64,
    /// History bytes the sessions' workflows have, per turn.
    pub history_bytes_per_turn: f64,
    /// The first session's history events by type, per turn.
    pub history_events_by_type_per_turn: BTreeMap<String, f64>,
}

/// The configuration the benchmark runs on: its own queue prefix, so runs
/// never meet an earlier run's sessions.
#[cfg(feature = "temporal")]
pub fn config(address: &str, namespace: &str) -> TemporalConfig {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    TemporalConfig::new(address)
        .namespace(namespace)
        .task_queue_prefix(format!("bench-{}-{millis}", std::process::id()))
}

/// CPU seconds (user + system) from a `stat` file's text.
fn stat_cpu_s(stat: &str) -> Option<f64> {
    // Linux counts CPU time in clock ticks of 1/100 s (USER_HZ); the name
    // in parentheses may hold spaces, so fields are counted after it.
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The CPU seconds process `pid` has used, from procfs.
pub fn process_cpu_s(pid: u32) -> Result<f64> {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat_cpu_s(&stat))
        .ok_or_else(|| {
            Error::InvalidConfig(format!(
                "--temporal-server-pid {pid}: no such process can be read in /proc; give the pid of the running \
                 Temporal server"
            ))
        })
}

/// CPU seconds this process's threads have used, split into the workers'
/// threads and the others (threads that ended are not counted).
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadCpu {
    /// The Temporal workers' threads.
    pub workers_s: f64,
    /// Every other live thread.
    pub others_s: f64,
}

/// This process's CPU by thread, from procfs.
pub fn thread_cpu() -> ThreadCpu {
    let mut cpu = ThreadCpu::default();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return cpu;
    };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let name = stat
            .split_once('(')
            .and_then(|(_, rest)| rest.rsplit_once(')'))
            .map(|(name, _)| name)
            .unwrap_or_default();
        let used = stat_cpu_s(&stat).unwrap_or_default();
        if WORKER_THREADS.contains(&name) {
            cpu.workers_s += used;
        } else {
            cpu.others_s += used;
        }
    }
    cpu
}

/// The figures of a finished run: CPU differences and the sessions' history.
#[cfg(feature = "temporal")]
pub async fn figures(
    config: &TemporalConfig,
    sessions: &[SessionId],
    turns: f64,
    threads: (ThreadCpu, ThreadCpu),
    server_cpu_s: Option<f64>,
) -> Result<TemporalFigures> {
    let cost = history_cost(config, sessions, true).await?;
    let first_turns = turns / sessions.len().max(1) as f64;
    let per_turn = |x: f64, n: f64| round(x * 1000.0 / n.max(1.0), 3);
    Ok(TemporalFigures {
        temporal: format!(
            "{} namespace {} prefix {}",
            config.address, config.namespace, config.task_queue_prefix
        ),
        worker_thread_cpu_ms_per_turn: per_turn(threads.1.workers_s - threads.0.workers_s, turns),
        client_cpu_ms_per_turn: per_turn(threads.1.others_s - threads.0.others_s, turns),
        server_cpu_ms_per_turn: server_cpu_s.map(|s| per_turn(s, turns)),
        history_events_per_turn: round(cost.events as f64 / turns.max(1.0), 2),
        history_bytes_per_turn: round(cost.bytes as f64 / turns.max(1.0), 0),
        history_events_by_type_per_turn: cost
            .by_type
            .into_iter()
            .map(|(kind, n)| (kind, round(n as f64 / first_turns.max(1.0), 2)))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_read_after_the_name_even_when_it_has_spaces_and_parentheses() {
        let stat = "42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 100 0 0";
        assert_eq!(stat_cpu_s(stat), Some(3.0));
        assert_eq!(stat_cpu_s("42 (short"), None);
    }

    #[test]
    fn a_missing_server_pid_is_named() {
        let error = process_cpu_s(u32::MAX).unwrap_err().to_string();
        assert!(error.contains("--temporal-server-pid"), "{error}");
    }
}
