//! `concierge schedule`: a schedule added from the command line is fired by
//! a running `concierge serve` on the same database, once, and listed,
//! paused, resumed and deleted per person.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
    command
        .current_dir(dir)
        .env_remove("CONCIERGE_MODEL")
        .env_remove("CONCIERGE_BASE_URL")
        .env_remove("CONCIERGE_DB")
        .env_remove("CONCIERGE_MODE")
        .env_remove("CONCIERGE_AGENT")
        .args(args);
    command
}

fn concierge(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// A rules agent: it answers whatever it is sent.
/// A child process killed when dropped, so a failing test leaves no server behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const PINGER: &str = r#"id = "pinger"
description = "Answers pings."

[rules]
answer = "Pong."
"#;

#[test]
fn a_schedule_from_the_command_line_runs_once_in_the_server() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::write(dir.path().join("concierge.toml"), "agents_dir = \"agents\"\n").unwrap();
    std::fs::write(dir.path().join("agents/pinger.toml"), PINGER).unwrap();

    // Bad input is refused with what to write.
    let out = concierge(dir.path(), &["schedule", "add", "ping", "--cron", "every day"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("five fields"), "{}", stderr(&out));
    let out = concierge(
        dir.path(),
        &["schedule", "add", "ping", "--agent", "nobody", "--in-minutes", "0"],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nobody"), "{}", stderr(&out));

    let out = concierge(
        dir.path(),
        &[
            "schedule",
            "add",
            "ping",
            "--in-minutes",
            "0",
            "--agent",
            "pinger",
            "--user",
            "ana",
            "--session",
            "pings",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let added = stdout(&out);
    assert!(
        added.starts_with("Scheduled sch_") && added.contains("\"ping\" once at"),
        "{added}"
    );
    let id = added
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let daily = concierge(
        dir.path(),
        &[
            "schedule",
            "add",
            "daily digest",
            "--cron",
            "0 9 * * 1-5",
            "--agent",
            "pinger",
            "--user",
            "ana",
        ],
    );
    assert!(daily.status.success(), "{}", stderr(&daily));
    let daily_id = stdout(&daily)
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();

    // Another person sees none of them, and cannot delete them.
    let out = concierge(dir.path(), &["schedule", "list", "--user", "bob"]);
    assert!(stdout(&out).contains("has no schedules"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["schedule", "delete", &id, "--user", "bob"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("has no schedule"), "{}", stderr(&out));

    // A server on the database fires the due one.
    let server = Killed(
        command(dir.path(), &["serve", "--addr", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let listed = stdout(&concierge(dir.path(), &["schedule", "list", "--user", "ana", "--json"]));
        let schedules: serde_json::Value = serde_json::from_str(&listed).unwrap();
        let ping = schedules
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id.as_str())
            .unwrap()
            .clone();
        if ping["runs"] == 1 {
            assert_eq!(
                ping["next_at"],
                serde_json::Value::Null,
                "a one-time schedule is done: {ping}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not fire the schedule: {ping}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let history = loop {
        let out = concierge(dir.path(), &["history", "pings"]);
        if stdout(&out).contains("pinger: ") {
            break stdout(&out);
        }
        assert!(
            Instant::now() < deadline,
            "no reply in the session: {}{}",
            stdout(&out),
            stderr(&out)
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        history.contains("user: ping"),
        "the scheduled message starts the run: {history}"
    );
    drop(server);

    let listed = stdout(&concierge(dir.path(), &["schedule", "list", "--user", "ana"]));
    assert!(
        listed.contains("(1 run so far)") && listed.contains(", done"),
        "{listed}"
    );
    let out = concierge(dir.path(), &["schedule", "pause", &daily_id, "--user", "ana"]);
    assert!(
        stdout(&out).starts_with("Paused") && stdout(&out).contains("paused"),
        "{}",
        stdout(&out)
    );
    let out = concierge(dir.path(), &["schedule", "resume", &daily_id, "--user", "ana"]);
    assert!(stdout(&out).contains("next at"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["schedule", "delete", &daily_id, "--user", "ana"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&concierge(dir.path(), &["schedule", "list", "--user", "ana"]));
    assert!(!listed.contains(&daily_id), "{listed}");
}
