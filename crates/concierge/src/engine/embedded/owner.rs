//! Which process owns a session, and whether that process is still alive.
//!
//! A process that writes to a database registers itself (pid, the kernel's
//! boot and pid-namespace identity, start time) and renews a heartbeat. A
//! session is driven by one process at a time: its owner. An owner is gone
//! when, on the same machine and pid namespace, its pid no longer runs the
//! same process (seen at once, through `/proc`), or elsewhere when its
//! heartbeat is older than the lease.

use std::time::Duration;

/// A process as recorded in the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Process {
    /// The process id, meaningful only within `space`.
    pub pid: u32,
    /// The kernel boot and pid namespace it runs in (pids compare only within one).
    pub space: String,
    /// When it started, in clock ticks after boot (tells a reused pid apart).
    pub started: u64,
    /// What it is, for people ("concierge serve", "concierge run"...).
    pub label: String,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The start time of `pid` (field 22 of `/proc/<pid>/stat`), if it runs.
fn start_time(pid: u32) -> Option<u64> {
    let stat = read(&format!("/proc/{pid}/stat"))?;
    // The command name is in parentheses and may hold spaces: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn space() -> String {
    let boot = read("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let host = read("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{host}/{boot}/{ns}")
}

impl Process {
    /// This process.
    pub fn current(label: &str) -> Self {
        let pid = std::process::id();
        Self {
            pid,
            space: space(),
            started: start_time(pid).unwrap_or_default(),
            label: label.to_string(),
        }
    }

    /// Whether this recorded process is alive: checked through `/proc` when
    /// it ran where this one runs, else by its heartbeat (`beat_age`: how
    /// long ago it last renewed) against the lease.
    pub fn is_alive(&self, here: &Process, beat_age: Duration, lease: Duration) -> bool {
        if self.space == here.space && !self.space.is_empty() {
            return start_time(self.pid) == Some(self.started);
        }
        beat_age < lease
    }

    /// How people see it: "process 1234 (concierge serve)".
    pub fn describe(&self) -> String {
        if self.label.is_empty() {
            format!("process {}", self.pid)
        } else {
            format!("process {} ({})", self.pid, self.label)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_dead_pid_is_not() {
        let here = Process::current("test");
        assert!(here.started > 0, "/proc gives a start time");
        assert!(here.is_alive(&here, Duration::from_secs(3600), Duration::from_secs(1)));
        let mut gone = here.clone();
        gone.started += 1;
        assert!(
            !gone.is_alive(&here, Duration::ZERO, Duration::from_secs(60)),
            "a reused pid is not the owner"
        );
        let mut elsewhere = here.clone();
        elsewhere.space = "other-host".into();
        assert!(elsewhere.is_alive(&here, Duration::from_secs(1), Duration::from_secs(10)));
        assert!(!elsewhere.is_alive(&here, Duration::from_secs(11), Duration::from_secs(10)));
    }
}
