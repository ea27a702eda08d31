//! A test binary that runs one of its own ignored tests as a child process
//! (to kill it with SIGKILL mid-run), and reads what the child prints.
//! Included by `crash.rs`, `resume_pacing.rs` and the MCP elicitation tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

/// Runs the ignored test `entry` of this binary as a child with `envs`, its
/// stdin and stdout piped to the caller.
pub fn spawn(entry: &str, envs: &[(&str, &std::ffi::OsStr)]) -> (Child, BufReader<ChildStdout>) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args([entry, "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    for (name, value) in envs {
        command.env(name, value);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// Reads the child's output until a line containing `prefix`; returns what follows it.
pub fn read_until(stdout: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the child exited before printing {prefix:?}");
        // libtest prints `test <name> ... ` without a newline first.
        if let Some(at) = line.find(prefix) {
            return line[at + prefix.len()..].trim().to_string();
        }
    }
}
