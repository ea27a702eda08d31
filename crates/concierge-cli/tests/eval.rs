//! `concierge eval` through the binary: the examples' suites pass offline
//! on rules without touching the examples' data, a case that must fail
//! fails and says why (the runner is no rubber stamp), reports in JSON and
//! JUnit compare, and a run recorded against a model server replays
//! offline the same way.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/cli.rs"]
mod cli;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use cli::{command, concierge, example};
use serde_json::Value;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn report(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The files of an example's folder, by name.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_examples_suites_pass_offline_and_touch_no_data() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for (name, suite, cases) in [
        ("assistant", "evals/intents.toml", 6),
        ("crm", "evals/crm.toml", 6),
        ("tasks", "evals/tasks.toml", 4),
    ] {
        // In the example's own folder, as its README says: nothing appears there.
        let folder = examples.join(name);
        let before = listing(&folder);
        let reports = tempfile::tempdir().unwrap();
        let junit = reports.path().join("junit.xml");
        // A CONCIERGE_*_DB variable points at real data: the eval leaves it alone.
        let real = reports.path().join("real.db");
        let out = command(&folder)
            .args(["eval", suite, "--junit", junit.to_str().unwrap()])
            .env("CONCIERGE_CRM_DB", &real)
            .env("CONCIERGE_TASKS_DB", &real)
            .env("CONCIERGE_ORDERS_DB", &real)
            .output()
            .unwrap();
        assert!(!real.exists(), "{name}: the eval opened the file the environment names");
        let text = stdout(&out);
        assert!(
            out.status.success(),
            "{name}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains(&format!("{cases} of {cases} cases passed (100%)")),
            "{name}: {text}"
        );
        let junit = std::fs::read_to_string(junit).unwrap();
        assert!(
            junit.contains(&format!("tests=\"{cases}\"")) && !junit.contains("<failure"),
            "{junit}"
        );
        assert_eq!(listing(&folder), before, "{name}: the eval wrote beside the example");
    }
}

/// The examples' suites replay the local test model's recorded answers
/// offline, and come out as they did when recorded: the same replies, the
/// same checks held or not, the same calls and tokens, the same failures.
#[test]
fn the_examples_suites_replay_the_local_models_recorded_run_as_it_went() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for (name, suite) in [("assistant", "intents"), ("crm", "crm"), ("tasks", "tasks")] {
        let folder = examples.join(name);
        let before = listing(&folder);
        let reports = tempfile::tempdir().unwrap();
        let replayed = reports.path().join("replayed.json");
        let out = command(&folder)
            .args([
                "eval",
                &format!("evals/{suite}.toml"),
                "--replay",
                &format!("evals/{suite}.cassette.jsonl"),
                "--threshold",
                "0",
                "--json",
                replayed.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let text = stdout(&out);
        assert!(
            out.status.success(),
            "{name}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let replayed = report(&replayed);
        let recorded = report(&folder.join(format!("evals/{suite}.recorded.json")));
        assert_eq!(replayed["model"], recorded["model"], "{name}");
        let (now, then) = (
            replayed["cases"].as_array().unwrap(),
            recorded["cases"].as_array().unwrap(),
        );
        assert_eq!(now.len(), then.len(), "{name}");
        for (a, b) in now.iter().zip(then) {
            let case = &b["name"];
            for field in [
                "name",
                "passed",
                "checks",
                "replies",
                "error",
                "model_calls",
                "input_tokens",
                "output_tokens",
            ] {
                assert_eq!(a[field], b[field], "{name}: {case}: {field}");
            }
        }
        assert!(
            replayed["model_calls"].as_u64().unwrap() > 0,
            "{name}: the answers came from the cassette, not the rules"
        );
        assert_eq!(listing(&folder), before, "{name}: the replay wrote beside the example");
    }
}

const MIXED: &str = r#"
[[case]]
name = "creates a task"
[[case.turn]]
user = "create a task to fix the printer"
expect = { agent = "task", asks = "confirmation" }

[[case]]
name = "expects the wrong things"
[[case.turn]]
user = "create a task to water the plants"
expect = { agent = "qa", tools = ["delete_task"], reply_contains = ["banana"] }
"#;

#[test]
fn a_case_that_must_fail_fails_says_why_and_shows_in_every_report() {
    let dir = tempfile::tempdir().unwrap();
    example(dir.path(), "tasks");
    std::fs::write(dir.path().join("mixed.toml"), MIXED).unwrap();
    let out = concierge(
        dir.path(),
        &["eval", "mixed.toml", "--json", "now.json", "--junit", "junit.xml"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("below the threshold"));
    assert!(text.contains("1 of 2 cases passed (50%)"), "{text}");
    assert!(text.contains("turn 1: expected qa answers: task answered"), "{text}");
    assert!(
        text.contains("turn 1: expected calls delete_task: no tool was called"),
        "{text}"
    );
    assert!(text.contains("expected the reply says \"banana\""), "{text}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<failure").count(), 1, "{junit}");
    let now = report(&dir.path().join("now.json"));
    assert_eq!(now["cases"][1]["passed"], false);
    assert_eq!(now["cases"][0]["checks"].as_array().unwrap().len(), 2);

    // Below a threshold it meets, the same run succeeds.
    let out = concierge(dir.path(), &["eval", "mixed.toml", "--threshold", "0.5"]);
    assert!(out.status.success(), "{}", stdout(&out));

    // Compared with a run where both passed, the broken case is named.
    let fixed = MIXED.replace(
        "expect = { agent = \"qa\", tools = [\"delete_task\"], reply_contains = [\"banana\"] }",
        "expect = { agent = \"task\" }",
    );
    std::fs::write(dir.path().join("fixed.toml"), fixed).unwrap();
    let out = concierge(dir.path(), &["eval", "fixed.toml", "--json", "before.json"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let out = concierge(
        dir.path(),
        &["eval", "mixed.toml", "--compare", "before.json", "--threshold", "0"],
    );
    let text = stdout(&out);
    assert!(text.contains("now FAILS expects the wrong things"), "{text}");
    assert!(text.contains("pass rate 100% -> 50% (0 fixed, 1 broken)"), "{text}");

    // A malformed dataset says where.
    std::fs::write(
        dir.path().join("bad.toml"),
        "[[case]]\nname = \"x\"\n[[case.turn]]\nusr = \"hi\"\n",
    )
    .unwrap();
    let out = concierge(dir.path(), &["eval", "bad.toml"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.toml"), "{:?}", out);
}

const ADDITION: &str = r#"{"name": "adds", "agent": "calculator", "turn": [{"user": "what is 17 plus 25?", "expect": {"tools": ["calculator"], "reply_contains": ["42"]}}]}
{"name": "multiplies", "agent": "calculator", "turn": [{"user": "what is 6 times 7?", "expect": {"tool_args": [{"tool": "calculator", "args": {"operation": "multiply"}}]}}]}
"#;

#[test]
fn a_recorded_eval_replays_offline_the_same_way_and_a_changed_request_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("math.jsonl"), ADDITION).unwrap();
    let mut fixture = Command::new(env!("CARGO_BIN_EXE_concierge"))
        .args(["bench", "--serve-fake", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The fixture's stdout stays open while it serves (it prints as it goes).
    let mut printed = BufReader::new(fixture.stdout.take().unwrap());
    let mut url = String::new();
    printed.read_line(&mut url).unwrap();
    let url = url.trim().to_string();
    let out = concierge(
        dir.path(),
        &[
            "--model",
            "openai:fixture",
            "--base-url",
            &url,
            "eval",
            "math.jsonl",
            "--record",
            "math.cassette.jsonl",
            "--json",
            "recorded.json",
        ],
    );
    fixture.kill().unwrap();
    fixture.wait().unwrap();
    drop(printed);
    assert!(
        out.status.success(),
        "{}{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded = report(&dir.path().join("recorded.json"));
    assert!(recorded["model_calls"].as_u64().unwrap() >= 4, "{recorded}");

    // The server is gone: the replay answers from the cassette alone.
    let out = concierge(
        dir.path(),
        &[
            "eval",
            "math.jsonl",
            "--replay",
            "math.cassette.jsonl",
            "--json",
            "replayed.json",
        ],
    );
    assert!(
        out.status.success(),
        "{}{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed = report(&dir.path().join("replayed.json"));
    for field in ["model", "pass_rate", "model_calls", "input_tokens", "output_tokens"] {
        assert_eq!(replayed[field], recorded[field], "{field}");
    }
    for (a, b) in replayed["cases"]
        .as_array()
        .unwrap()
        .iter()
        .zip(recorded["cases"].as_array().unwrap())
    {
        assert_eq!(a["replies"], b["replies"]);
        assert_eq!(a["checks"], b["checks"]);
    }

    // A request the cassette never saw fails its case, saying what to do.
    std::fs::write(
        dir.path().join("changed.jsonl"),
        ADDITION.replace("17 plus 25", "18 plus 25"),
    )
    .unwrap();
    let out = concierge(
        dir.path(),
        &["eval", "changed.jsonl", "--replay", "math.cassette.jsonl"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("record it again with --record"), "{text}");
    assert!(text.contains("1 of 2 cases passed"), "{text}");
}
