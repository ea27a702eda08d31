//! Seed 000's assistant (`examples/assistant/`) through the `concierge`
//! binary, as the README tells a new user to run it: offline, on rules, one
//! session that moves from a flight search to a PTO booking to a food order,
//! from a copy of the examples (their sources only: the databases land in
//! the copy). The orders goal's MCP server is the `concierge-orders`
//! program beside the `concierge` binary (`cargo test --workspace` builds
//! both into one directory); a file an agent file names (the tasks help
//! file) is found relative to that agent file, from any folder.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Copies the example sources (TOML and Markdown files) of `from`, never the
/// databases that using the example may have left there.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml" || e == "md") {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}

/// A copy of examples/assistant and the examples it borrows agents from, in
/// `dir`; returns the assistant's folder.
fn examples_copy(dir: &Path) -> PathBuf {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for (from, to) in [
        ("assistant", "assistant"),
        ("assistant/agents", "assistant/agents"),
        ("tasks", "tasks"),
        ("tasks/agents", "tasks/agents"),
        ("crm", "crm"),
        ("crm/agents", "crm/agents"),
    ] {
        copy_dir(&examples.join(from), &dir.join(to));
    }
    dir.join("assistant")
}

/// Runs `concierge` in `home` with none of the environment's settings.
fn concierge(home: &Path, args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
    command.current_dir(home);
    for name in [
        "CONCIERGE_MODEL",
        "CONCIERGE_BASE_URL",
        "CONCIERGE_DB",
        "CONCIERGE_MODE",
        "CONCIERGE_AGENT",
        "CONCIERGE_INTENT_DETECTION",
        "CONCIERGE_FALLBACK",
    ] {
        command.env_remove(name);
    }
    // The demo domains' files, which the environment could move.
    for (_, name, _) in concierge_demo::PATHS {
        command.env_remove(name);
    }
    let out = command.args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_assistant_as_the_readme_shows_moves_between_goals_in_one_session() {
    let dir = tempfile::tempdir().unwrap();
    let home = examples_copy(dir.path());
    let run = |args: &[&str]| concierge(&home, args);
    let say = |text: &str| run(&["run", "--session", "t1", text]);

    let goals = run(&["goals"]);
    for goal in [
        "Event trip",
        "HR",
        "Food ordering",
        "Banking",
        "Orders",
        "Hint game",
        "CRM",
        "Tasks",
    ] {
        assert!(goals.contains(goal), "{goal} is offered: {goals}");
    }

    let events = say("what's on in Melbourne in March?");
    assert!(events.contains("events in Melbourne in March"), "{events}");
    let flights = say("find me a flight from Sydney");
    assert!(flights.contains("flights from Sydney to Melbourne"), "{flights}");
    let asked = say("book it");
    assert!(asked.starts_with("I'll create an invoice for "), "{asked}");
    let booked = say("yes");
    assert!(booked.starts_with("Created invoice INV-"), "{booked}");

    let asked = say("I'd like to take next Friday off");
    assert!(asked.starts_with("I'll book PTO for next Friday. Proceed?"), "{asked}");
    let booked = say("yes");
    assert!(
        booked.starts_with("Booked PTO for Friday") && booked.ends_with("Jordan Avery has 11.5 days left."),
        "{booked}"
    );

    let added = say("add 2 margherita pizzas to my cart");
    assert!(added.starts_with("Added 2 × Margherita pizza to your cart."), "{added}");
    let asked = say("check out");
    assert!(
        asked.starts_with("I'll place your order of 2 × Margherita pizza for $25.00. Proceed?"),
        "{asked}"
    );
    let ordered = say("yes");
    assert!(ordered.starts_with("Placed order #1"), "{ordered}");

    for db in ["concierge.db", "travel.db", "hr.db", "food.db"] {
        assert!(home.join(db).exists(), "{db} is next to the engine's database");
    }

    // The orders goal: its MCP server is the concierge-orders program beside
    // concierge, which `cargo test --workspace` builds (a run of this test
    // alone, `--test assistant_example`, may not have built it).
    let orders = Path::new(env!("CARGO_BIN_EXE_concierge")).with_file_name("concierge-orders");
    if orders.exists() {
        let order = run(&["run", "--session", "o1", "where is my order 1001?"]);
        assert!(
            order.starts_with("Order 1001 ") && order.contains("PX41001US"),
            "{order}"
        );
        assert!(
            home.join("orders.db").exists(),
            "the server runs in the assistant's folder"
        );
    } else {
        eprintln!(
            "{} is not built: the orders goal was not asked (cargo test --workspace builds it)",
            orders.display()
        );
    }
}

#[test]
fn the_tasks_help_file_is_found_from_the_assistants_folder() {
    let dir = tempfile::tempdir().unwrap();
    let home = examples_copy(dir.path());
    // examples/tasks/agents/qa.toml names ../knowledge.md; the session runs
    // in examples/assistant, where there is no knowledge.md.
    assert!(!home.join("knowledge.md").exists());
    let answer = concierge(&home, &["run", "--session", "h1", "how do I delete a task?"]);
    assert!(
        answer.contains("Say \"delete task 4\"") && answer.contains("Deleting cannot be"),
        "the help text, not an error: {answer}"
    );
    assert!(!answer.contains("could not be read"), "{answer}");
    // The task manager's database lies next to the assistant's concierge.db.
    let answer = concierge(&home, &["run", "--session", "h2", "what should I work on?"]);
    assert!(answer.starts_with("Work on #"), "{answer}");
    assert!(
        home.join("tasks.db").exists(),
        "tasks.db is next to the engine's database"
    );
    assert!(!dir.path().join("tasks/tasks.db").exists());
}

#[test]
fn the_domains_databases_lie_next_to_the_engines_database_from_any_folder() {
    let dir = tempfile::tempdir().unwrap();
    let home = examples_copy(dir.path());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let config = home.join("concierge.toml");
    let config = config.to_str().unwrap();
    let answer = concierge(
        &elsewhere,
        &["--config", config, "run", "--session", "h1", "how do I delete a task?"],
    );
    assert!(answer.contains("Deleting cannot be"), "{answer}");
    let added = concierge(
        &elsewhere,
        &[
            "--config",
            config,
            "run",
            "--session",
            "f1",
            "add 2 margherita pizzas to my cart",
        ],
    );
    assert!(added.starts_with("Added 2 × Margherita pizza to your cart."), "{added}");
    for db in ["concierge.db", "food.db"] {
        assert!(home.join(db).exists(), "{db} is next to concierge.toml's database");
    }
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing in the working directory"
    );
}
