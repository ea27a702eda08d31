//! Seed 000's intent table, offline, through the `concierge` binary in a
//! copy of `examples/assistant` (with the task manager and the CRM beside
//! it, as its concierge.toml expects; no databases are copied). Each phrase
//! starts a new session at the hub: a clear intent goes to its goal (a
//! message that only asks for the goal gets the goal's starter prompt), two
//! goals that fit about equally make a numbered choice naming just them,
//! and a greeting or "what agents do you have?" gets the assistant's goals.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml" || e == "md") {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}

struct Assistant {
    _dir: tempfile::TempDir,
    home: PathBuf,
}

impl Assistant {
    fn new() -> Self {
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let dir = tempfile::tempdir().unwrap();
        for example in ["assistant", "tasks", "crm"] {
            copy_dir(&examples.join(example), &dir.path().join(example));
            copy_dir(
                &examples.join(example).join("agents"),
                &dir.path().join(example).join("agents"),
            );
        }
        let home = dir.path().join("assistant");
        Self { _dir: dir, home }
    }

    /// The run's output (`--json`) for `text` in `session`.
    fn say(&self, session: &str, text: &str) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_concierge"))
            .current_dir(&self.home)
            .env_remove("CONCIERGE_MODEL")
            .env_remove("CONCIERGE_BASE_URL")
            .env_remove("CONCIERGE_DB")
            .env_remove("CONCIERGE_MODE")
            .env_remove("CONCIERGE_AGENT")
            .env_remove("CONCIERGE_INTENT_DETECTION")
            .env_remove("CONCIERGE_FALLBACK")
            .args(["run", "--json", "--session", session, text])
            .output()
            .unwrap();
        assert!(out.status.success(), "{text}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{text}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    }

    /// The agent that answered and its reply.
    fn ask(&self, session: &str, text: &str) -> (String, String) {
        let out = self.say(session, text);
        (
            out["agent"].as_str().unwrap_or_default().to_string(),
            out["reply"].as_str().unwrap_or_default().to_string(),
        )
    }

    /// The starter prompt of the assistant's goal `file`.
    fn starter(&self, dir: &str, file: &str) -> String {
        let text = std::fs::read_to_string(self.home.join("..").join(dir).join("agents").join(file)).unwrap();
        // A TOML basic string on one line reads as a JSON string.
        let value = text
            .lines()
            .find_map(|line| line.strip_prefix("starter_prompt = "))
            .unwrap();
        serde_json::from_str(value).unwrap()
    }
}

/// The options of a numbered choice: "1. Banking — …" gives "Banking".
fn options(reply: &str) -> Vec<String> {
    reply
        .lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once(". ")?;
            number.trim().parse::<u32>().ok()?;
            Some(rest.split(" — ").next().unwrap_or(rest).trim().to_string())
        })
        .collect()
}

#[test]
fn i_want_to_book_a_flight_opens_the_event_trip() {
    let a = Assistant::new();
    let (agent, reply) = a.ask("f1", "I want to book a flight");
    assert_eq!(agent, "travel_events");
    assert_eq!(reply, a.starter("assistant", "travel_events.toml"));
}

#[test]
fn check_my_pto_balance_goes_to_hr_and_answers() {
    let a = Assistant::new();
    let (agent, reply) = a.ask("p1", "Check my PTO balance");
    assert_eq!(agent, "hr");
    assert!(reply.starts_with("Jordan Avery has 12.5 days of PTO"), "{reply}");
}

#[test]
fn order_some_food_opens_food_ordering_without_adding_food_to_the_cart() {
    let a = Assistant::new();
    let (agent, reply) = a.ask("o1", "Order some food");
    assert_eq!(agent, "food");
    assert_eq!(reply, a.starter("assistant", "food.toml"));
    assert!(!reply.contains("not on the menu"), "{reply}");
    // The goal stays open for the order itself.
    let (agent, reply) = a.ask("o1", "add 2 margherita pizzas to my cart");
    assert_eq!(agent, "food");
    assert!(reply.starts_with("Added 2 × Margherita pizza to your cart."), "{reply}");
}

#[test]
fn money_and_pto_asks_banking_or_hr_and_the_answer_runs_there() {
    let a = Assistant::new();
    let out = a.say("m1", "I need help with money and PTO");
    assert_eq!(out["agent"], "hub");
    assert_eq!(out["status"], "needs_input");
    let reply = out["reply"].as_str().unwrap();
    assert!(reply.starts_with("Banking or HR?"), "{reply}");
    assert_eq!(options(reply), ["Banking", "HR"], "{reply}");
    let (agent, reply) = a.ask("m1", "2");
    assert_eq!(agent, "hr");
    assert!(reply.starts_with("Jordan Avery has 12.5 days of PTO"), "{reply}");

    a.ask("m2", "I need help with money and PTO");
    let (agent, reply) = a.ask("m2", "Banking");
    assert_eq!(agent, "finance");
    assert_eq!(reply, a.starter("assistant", "finance.toml"));
}

#[test]
fn i_need_a_vacation_asks_travel_or_time_off() {
    let a = Assistant::new();
    let (agent, reply) = a.ask("v1", "I need a vacation");
    assert_eq!(agent, "hub");
    let mut offered = options(&reply);
    offered.sort();
    assert_eq!(offered, ["Event trip", "HR"], "{reply}");
    let (agent, reply) = a.ask("v1", "Event trip");
    assert_eq!(agent, "travel_events", "the person chose the trip: {reply}");
    assert_eq!(reply, a.starter("assistant", "travel_events.toml"));
}

#[test]
fn hello_gets_the_assistants_goals_not_the_task_managers_greeting() {
    let a = Assistant::new();
    let (agent, reply) = a.ask("h1", "hello");
    assert_eq!(agent, "hub");
    assert!(reply.starts_with("Hi! I can help with "), "{reply}");
    for goal in [
        "Banking",
        "Food ordering",
        "HR",
        "Orders",
        "Event trip",
        "Football trip",
        "Hint game",
        "Tasks",
    ] {
        assert!(reply.contains(goal), "{goal}: {reply}");
    }
    assert!(!reply.contains("what should I work on"), "{reply}");
    // A goal named next opens it.
    let (agent, reply) = a.ask("h1", "HR");
    assert_eq!(agent, "hr");
    assert_eq!(reply, a.starter("assistant", "hr.toml"));
}

#[test]
fn what_agents_do_you_have_and_show_me_other_agents_show_the_catalogue() {
    let a = Assistant::new();
    for (session, text) in [("c1", "What agents do you have?"), ("c2", "Show me other agents")] {
        let (agent, reply) = a.ask(session, text);
        assert_eq!(agent, "hub", "{text}");
        assert!(reply.starts_with("Here is what I can help with:"), "{text}: {reply}");
        let offered = options(&reply);
        for goal in [
            "Banking",
            "Food ordering",
            "HR",
            "Orders",
            "Event trip",
            "Football trip",
            "Hint game",
        ] {
            assert!(offered.iter().any(|o| o == goal), "{text}: {goal} in {offered:?}");
        }
    }
}

#[test]
fn i_want_hr_help_opens_hr() {
    let a = Assistant::new();
    let (agent, reply) = a.ask("r1", "I want HR help");
    assert_eq!(agent, "hr");
    assert_eq!(reply, a.starter("assistant", "hr.toml"));
}

#[test]
fn the_intent_words_reach_their_goals() {
    let a = Assistant::new();
    // One word or phrase per goal, as the intent table lists them.
    for (i, (text, goal, file)) in [
        ("time off", "hr", None),
        ("I want to check my account", "finance", Some("finance.toml")),
        ("restaurant", "food", Some("food.toml")),
        ("a meal", "food", Some("food.toml")),
        ("order status", "orders", Some("orders.toml")),
        ("billing", "orders", Some("orders.toml")),
        ("let's play a game", "hint_game", None),
    ]
    .into_iter()
    .enumerate()
    {
        let (agent, reply) = a.ask(&format!("w{i}"), text);
        assert_eq!(agent, goal, "{text}: {reply}");
        if let Some(file) = file {
            assert_eq!(reply, a.starter("assistant", file), "{text}");
        }
    }
    // Travel and trips: the two travel goals fit equally.
    for (i, text) in ["travel", "I'd like a trip"].into_iter().enumerate() {
        let (agent, reply) = a.ask(&format!("t{i}"), text);
        assert_eq!(agent, "hub", "{text}");
        assert_eq!(options(&reply), ["Event trip", "Football trip"], "{text}: {reply}");
    }
}

#[test]
fn the_crms_own_examples_reach_the_crm_from_the_hub_and_run_there() {
    let a = Assistant::new();
    // Each phrase the CRM's starter prompt offers, said first to the hub.
    let (agent, reply) = a.ask("c1", "remind me to follow up with Sarah next Tuesday");
    assert_eq!(agent, "router", "{reply}");
    assert!(
        reply.starts_with("Reminder set for") && reply.contains("Sarah"),
        "{reply}"
    );
    let (agent, reply) = a.ask("c2", "had a call with Mike yesterday about the proposal");
    assert_eq!(agent, "router", "{reply}");
    assert!(reply.contains("Logged the call with Mike"), "{reply}");
    // "my" contacts need to know who asks: the CRM says how to tell it.
    let (agent, reply) = a.ask("c3", "show my overdue contacts");
    assert_eq!(agent, "router", "{reply}");
    assert!(reply.contains("which contacts are yours"), "{reply}");
}
