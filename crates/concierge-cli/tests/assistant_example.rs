//! Seed 000's assistant (`examples/assistant/`) through the `concierge`
//! binary, as the README tells a new user to run it: offline, on rules, one
//! session that moves from a flight search to a PTO booking to a food order,
//! from a copy of the examples (the databases land in the copy). The orders
//! goal's MCP server is started with `cargo run` inside the repository; in
//! the copy it cannot start, which only takes that goal's tools away.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml" || e == "md") {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn the_assistant_as_the_readme_shows_moves_between_goals_in_one_session() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in [
        ("assistant", "assistant"),
        ("assistant/agents", "assistant/agents"),
        ("tasks", "tasks"),
        ("tasks/agents", "tasks/agents"),
        ("crm", "crm"),
        ("crm/agents", "crm/agents"),
    ] {
        copy_dir(&examples.join(from), &dir.path().join(to));
    }
    let home = dir.path().join("assistant");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_concierge"))
            .current_dir(&home)
            .env_remove("CONCIERGE_MODEL")
            .env_remove("CONCIERGE_BASE_URL")
            .env_remove("CONCIERGE_DB")
            .env_remove("CONCIERGE_MODE")
            .env_remove("CONCIERGE_AGENT")
            .env_remove("CONCIERGE_INTENT_DETECTION")
            .env_remove("CONCIERGE_FALLBACK")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
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
}
