//! `concierge memory`: what an agent remembered about a person, seen and
//! erased from the command line, per user.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/cli.rs"]
mod cli;

use cli::concierge;
use std::process::Output;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

const NOTER: &str = r#"id = "noter"
toolsets = ["memory"]

[rules]
answer = "Noted."

[[rules.routes]]
pattern = '(?i)remember that (?P<fact>.+)'
tool = "remember"
arguments = { fact = "{fact}" }
"#;

#[test]
fn a_remembered_fact_is_listed_exported_and_forgotten_per_user() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::write(dir.path().join("concierge.toml"), "agents_dir = \"agents\"\n").unwrap();
    std::fs::write(dir.path().join("agents/noter.toml"), NOTER).unwrap();
    let out = concierge(
        dir.path(),
        &[
            "run",
            "--agent",
            "noter",
            "--user",
            "ana",
            "--session",
            "s1",
            "remember that I like aisle seats",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout(&out).trim(), "Noted.");

    let listed = stdout(&concierge(dir.path(), &["memory", "list", "--user", "ana"]));
    assert!(listed.contains("I like aisle seats"), "{listed}");
    let other = stdout(&concierge(dir.path(), &["memory", "list", "--user", "bob"]));
    assert!(other.contains("Nothing is remembered about user bob"), "{other}");

    let exported = stdout(&concierge(dir.path(), &["memory", "export", "--user", "ana"]));
    let line: serde_json::Value = serde_json::from_str(exported.trim()).unwrap();
    assert_eq!(line["text"], "I like aisle seats");
    assert_eq!(line["session"], "s1");
    let id = line["id"].as_str().unwrap();

    // Another person cannot erase it by its id.
    let refused = concierge(dir.path(), &["memory", "forget", "--user", "bob", id]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("Nothing is remembered about user bob"));
    let forgot = concierge(dir.path(), &["memory", "forget", "--user", "ana", id]);
    assert!(forgot.status.success());
    let listed = stdout(&concierge(dir.path(), &["memory", "list", "--user", "ana"]));
    assert!(listed.contains("Nothing is remembered"), "{listed}");

    let added = concierge(dir.path(), &["memory", "add", "--user", "ana", "Vegetarian"]);
    assert!(stdout(&added).contains("Remembered"), "{}", stdout(&added));
    let all = stdout(&concierge(dir.path(), &["memory", "forget", "--user", "ana", "--all"]));
    assert!(all.contains("Forgot 1 memory of user ana"), "{all}");

    // Erasing the person takes their conversation too, and only on --yes.
    concierge(dir.path(), &["memory", "add", "--user", "ana", "Vegetarian"]);
    let asked = concierge(dir.path(), &["erase", "--user", "ana"]);
    assert!(!asked.status.success());
    assert!(String::from_utf8_lossy(&asked.stderr).contains("--yes"));
    let erased = concierge(dir.path(), &["erase", "--user", "ana", "--yes"]);
    assert!(erased.status.success(), "{}", String::from_utf8_lossy(&erased.stderr));
    assert_eq!(
        stdout(&erased).trim(),
        "Erased everything stored of user ana: 1 conversation, 1 memory and 0 schedules."
    );
    let history = concierge(dir.path(), &["history", "s1"]);
    assert!(!stdout(&history).contains("aisle"), "{}", stdout(&history));
}
