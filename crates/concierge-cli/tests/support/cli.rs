//! The `concierge` binary as a user runs it, from a test: in a folder of
//! its own, without the `CONCIERGE_*` settings of the shell that runs the
//! tests, and the repository's examples copied there.

// Each test binary uses part of this.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// The settings a shell may have that change what a command does.
const SETTINGS: [&str; 11] = [
    "CONCIERGE_MODEL",
    "CONCIERGE_BASE_URL",
    "CONCIERGE_DB",
    "CONCIERGE_MODE",
    "CONCIERGE_AGENT",
    "CONCIERGE_INTENT_DETECTION",
    "CONCIERGE_FALLBACK",
    "CONCIERGE_CRM_DB",
    "CONCIERGE_TASKS_DB",
    "CONCIERGE_TASKS_KNOWLEDGE",
    "CONCIERGE_ENGINE",
];

/// `concierge` to run in `dir`, for a test that adds to it.
pub fn command(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
    command.current_dir(dir);
    for setting in SETTINGS {
        command.env_remove(setting);
    }
    command
}

/// `concierge ARGS` run in `dir`, to its end.
pub fn concierge(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(args).output().unwrap()
}

/// A copy of `examples/<name>/` in `dir`: its `concierge.toml`, its
/// `knowledge.md` if it has one, its `agents/` and its `evals/` (the
/// databases its commands make land in the copy).
pub fn example(dir: &Path, name: &str) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
    for file in ["concierge.toml", "knowledge.md"] {
        if example.join(file).exists() {
            std::fs::copy(example.join(file), dir.join(file)).unwrap();
        }
    }
    for folder in ["agents", "evals"] {
        let Ok(entries) = std::fs::read_dir(example.join(folder)) else {
            continue;
        };
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        for entry in entries {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.join(folder).join(path.file_name().unwrap())).unwrap();
        }
    }
}
