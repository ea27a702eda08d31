//! Seed 002's CRM (`examples/crm/`) through the `concierge` binary, as its
//! README tells a new user to run it: offline, on rules, from a copy of the
//! example's folder (the databases land in the copy).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/cli.rs"]
mod cli;

use cli::{concierge, example};

#[test]
fn the_crm_example_as_the_readme_shows() {
    let dir = tempfile::tempdir().unwrap();
    example(dir.path(), "crm");
    let run = |args: &[&str]| {
        let out = concierge(dir.path(), args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let text = run(&[
        "run",
        "--user",
        "maya",
        "--agent",
        "interaction",
        "--session",
        "s1",
        "Had a call with Mike yesterday about the proposal",
    ]);
    assert!(
        text.starts_with("Logged the call with Mike Brennan on ") && text.ends_with(" about the proposal."),
        "{text}"
    );
    assert!(
        dir.path().join("crm.db").exists(),
        "the CRM lives next to the engine's database"
    );

    let text = run(&[
        "run",
        "--user",
        "maya",
        "--session",
        "s2",
        "Log a call with John about the renewal",
    ]);
    assert!(text.contains(
        "Which John do you mean?\n1. John Smith (Acme, john.smith@acme.example)\n2. John Park (Globex, john.park@globex.example)"
    ), "{text}");
    let text = run(&["run", "--user", "maya", "--session", "s2", "2"]);
    assert!(text.starts_with("Logged the call with John Park on "), "{text}");

    let text = run(&[
        "run",
        "--user",
        "maya",
        "--session",
        "s3",
        "Remind me to follow up with Sarah next Tuesday",
    ]);
    assert!(
        text.starts_with("Reminder set for ") && text.ends_with(": follow up with Sarah Lee."),
        "{text}"
    );
    let text = run(&[
        "run",
        "--agent",
        "update",
        "--session",
        "s4",
        "Update Jane's title to CEO",
    ]);
    assert_eq!(text, "Updated Jane Cooper's title to CEO.");

    let text = run(&["run", "--user", "maya", "--session", "s5", "Show my overdue contacts"]);
    assert!(text.starts_with("2 overdue contacts of yours:"), "{text}");
    assert!(text.contains("Mike Brennan") && text.contains("Nina Alvarez"), "{text}");
    assert!(!text.contains('{'), "no raw JSON: {text}");
    // The call logged above is in Mike's history.
    let text = run(&["run", "--agent", "query", "--session", "s6", "what happened with Mike?"]);
    assert!(text.contains("Call: the proposal"), "{text}");
    // "My" needs to know who asks.
    let text = run(&["run", "--agent", "query", "--session", "s7", "Show my overdue contacts"]);
    assert!(text.contains("--user"), "{text}");
}
