//! The `concierge` binary, driven as a user would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/cli.rs"]
mod cli;

use cli::{concierge, example};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

#[test]
fn calculator_runs_offline_on_its_rules() {
    let dir = tempfile::tempdir().unwrap();
    let out = concierge(
        dir.path(),
        &["run", "--agent", "calculator", "--session", "s1", "calculate 5 + 3"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "5 + 3 = 8");
    assert!(
        dir.path().join("concierge.db").exists(),
        "the default database is ./concierge.db"
    );

    let out = concierge(dir.path(), &["run", "--session", "s1", "10 / 0"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("Cannot divide by zero"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["run", "--session", "s1", "square root of -4"]);
    assert!(
        stdout(&out).contains("square root of a negative number"),
        "{}",
        stdout(&out)
    );

    let out = concierge(dir.path(), &["run", "--session", "s1", "--json", "what is 17 plus 25?"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["reply"], "17 + 25 = 42");
    assert_eq!(json["status"], "completed");
    assert_eq!(json["tool_executions"][0]["tool"], "calculator");
    assert_eq!(json["confidence"], 0.9);
}

#[test]
fn history_agents_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("elsewhere.db");
    let db = db.to_str().unwrap();
    assert!(
        concierge(
            dir.path(),
            &["--db", db, "run", "--agent", "calculator", "--session", "h", "2 * 21"]
        )
        .status
        .success()
    );
    let out = concierge(dir.path(), &["--db", db, "history", "h"]);
    let text = stdout(&out);
    assert!(text.contains("user: 2 * 21"), "{text}");
    assert!(text.contains("calculator -> calculator("), "{text}");
    assert!(text.contains("calculator: 2 * 21 = 42"), "{text}");
    let out = concierge(dir.path(), &["--db", db, "history", "h", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["messages"].as_array().unwrap().len(), 4);
    let out = concierge(dir.path(), &["--db", db, "history", "missing"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("session missing not found"), "{}", stderr(&out));

    let out = concierge(dir.path(), &["agents"]);
    assert!(stdout(&out).contains("calculator  (Calculator)"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["tools"]);
    assert!(stdout(&out).contains("[math]") && stdout(&out).contains("calculator"));
    let out = concierge(dir.path(), &["tools", "calculator"]);
    let text = stdout(&out);
    assert!(text.contains("annotations: read_only, idempotent, cacheable"), "{text}");
    assert!(text.contains("\"enum\""), "{text}");
    let out = concierge(dir.path(), &["tools", "nope"]);
    assert!(!out.status.success() && stderr(&out).contains(", calculator, "));
    let out = concierge(dir.path(), &["--db", db, "sessions"]);
    assert!(stdout(&out).contains("h  calculator  idle"), "{}", stdout(&out));

    // A page at a time: the newest first, then after the last one listed.
    for session in ["p1", "p2"] {
        let out = concierge(dir.path(), &["--db", db, "run", "--session", session, "2 + 2"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = concierge(dir.path(), &["--db", db, "sessions", "--limit", "2"]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let after = lines[2]
        .strip_prefix("-- more: --after ")
        .expect("where the next page starts");
    let out = concierge(dir.path(), &["--db", db, "sessions", "--limit", "2", "--after", after]);
    let rest = stdout(&out);
    assert_eq!(rest.lines().count(), 1, "{rest}");
    let mut seen: Vec<&str> = lines[..2]
        .iter()
        .chain(rest.lines().collect::<Vec<_>>().iter())
        .map(|l| l.split("  ").next().unwrap())
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, ["h", "p1", "p2"]);
    let out = concierge(dir.path(), &["--db", db, "sessions", "--tenant", "acme"]);
    assert!(out.status.success() && stdout(&out).is_empty(), "{}", stdout(&out));
    let out = concierge(dir.path(), &["--db", db, "sessions", "--after", "nope"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = concierge(dir.path(), &["run", "--agent", "ghost", "--session", "s", "x"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("agent \"ghost\" not found; agents: calculator"),
        "{}",
        stderr(&out)
    );
    // With one agent, a new session that names none starts with it.
    let out = concierge(dir.path(), &["run", "--session", "new", "calculate 2 + 2"]);
    assert_eq!(stdout(&out).trim(), "2 + 2 = 4", "{}", stderr(&out));
    let out = concierge(dir.path(), &["--model", "gpt4", "agents"]);
    assert!(stderr(&out).contains("provider:name"), "{}", stderr(&out));
    let out = concierge(dir.path(), &["--model", "openai:gpt-4o", "agents"]);
    assert!(stderr(&out).contains("OPENAI_API_KEY"), "{}", stderr(&out));
    let out = concierge(dir.path(), &["--config", "missing.toml", "agents"]);
    assert!(stderr(&out).contains("missing.toml"), "{}", stderr(&out));
    std::fs::write(dir.path().join("concierge.toml"), "modle = \"x\"\n").unwrap();
    let out = concierge(dir.path(), &["agents"]);
    assert!(stderr(&out).contains("unknown field `modle`"), "{}", stderr(&out));
}

#[test]
fn config_file_sets_the_database_and_agent_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::write(
        dir.path().join("concierge.toml"),
        "db = \"data/from-config.db\"\nagents_dir = \"agents\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agents/greeter.toml"),
        "id = \"greeter\"\nname = \"Greeter\"\ndescription = \"Says hello\"\n\n[[rules.routes]]\nkeywords = [\"hello\"]\nreply = \"Hello to you too!\"\n",
    )
    .unwrap();
    let out = concierge(
        dir.path(),
        &["run", "--agent", "greeter", "--session", "g", "hello there"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello to you too!");
    assert!(dir.path().join("data/from-config.db").exists());
}

fn two_file_agents(dir: &Path) {
    std::fs::create_dir(dir.join("agents")).unwrap();
    std::fs::write(dir.join("concierge.toml"), "agents_dir = \"agents\"\n").unwrap();
    std::fs::write(
        dir.join("agents/travel.toml"),
        "id = \"travel\"\nname = \"Travel\"\ndescription = \"Books flights\"\n\n[intents]\nkeywords = [\"flight\", \"trip\"]\n\n[[rules.routes]]\nkeywords = [\"flight\"]\nreply = \"Travel here: {message}\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("agents/hr.toml"),
        "id = \"hr\"\nname = \"HR\"\ndescription = \"Time off\"\nstarter_prompt = \"Need a day off?\"\n\n[intents]\nkeywords = [\"pto\", \"time off\"]\n\n[[rules.routes]]\nkeywords = [\"pto\", \"time off\"]\nreply = \"HR here: {message}\"\n",
    )
    .unwrap();
}

#[test]
fn run_without_agent_starts_at_the_hub_which_routes_to_file_agents() {
    let dir = tempfile::tempdir().unwrap();
    two_file_agents(dir.path());
    let out = concierge(dir.path(), &["run", "--session", "S", "book a flight to London"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Travel here: book a flight to London");
    // Travel cannot place this one: the hub routes it to HR.
    let out = concierge(dir.path(), &["run", "--session", "S", "how much PTO do I have"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "HR here: how much PTO do I have");
    // "What can you do?" is the catalogue, as text.
    let out = concierge(dir.path(), &["run", "--session", "T", "what can you do?"]);
    let text = stdout(&out);
    assert!(text.contains("HR — Time off (\"Need a day off?\")"), "{text}");
    // --agent still pins a session.
    let out = concierge(
        dir.path(),
        &["run", "--agent", "calculator", "--session", "c", "calculate 5 + 3"],
    );
    assert_eq!(stdout(&out).trim(), "5 + 3 = 8", "{}", stderr(&out));
}

#[test]
fn single_mode_from_the_environment_needs_no_file_edit() {
    let dir = tempfile::tempdir().unwrap();
    two_file_agents(dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_concierge"))
        .current_dir(dir.path())
        .env_remove("CONCIERGE_MODEL")
        .env_remove("CONCIERGE_BASE_URL")
        .env_remove("CONCIERGE_DB")
        .env("CONCIERGE_MODE", "single")
        .env("CONCIERGE_AGENT", "hr")
        .args(["run", "--session", "E", "time off please"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "HR here: time off please");
}

/// A fault-injection server: takes one request, signals, never answers.
fn hanging_server() -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = tx.send(());
            held.push(stream);
        }
    });
    (url, rx)
}

/// An OpenAI-compatible server that answers every request with `body`.
fn answering_server(body: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut request = vec![0u8; length];
            let _ = reader.read_exact(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn a_run_in_flight_when_the_process_died_is_finished_by_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let (hanging, in_call) = hanging_server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_concierge"))
        .current_dir(dir.path())
        .args([
            "--model",
            "openai:m",
            "--base-url",
            &hanging,
            "run",
            "--agent",
            "calculator",
            "--session",
            "s",
            "hi",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    in_call.recv().unwrap();
    child.kill().unwrap(); // SIGKILL during the model call
    child.wait().unwrap();

    let answering = answering_server(
        r#"{"choices":[{"message":{"role":"assistant","content":"Hello! Ask me a sum."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":6}}"#,
    );
    let out = concierge(
        dir.path(),
        &[
            "--model",
            "openai:m",
            "--base-url",
            &answering,
            "run",
            "--session",
            "s",
            "and now?",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(
        lines,
        ["Hello! Ask me a sum.", "Hello! Ask me a sum."],
        "the resumed reply, then this turn's; stderr: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("finished the run this session had in flight"),
        "{}",
        stderr(&out)
    );
    let out = concierge(dir.path(), &["history", "s", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let roles: Vec<&str> = json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(json["usage"]["input_tokens"], 10);
}

/// Needs a real OpenAI-compatible model server; `scripts/test.sh` starts
/// llama.cpp with SmolLM2-135M and sets `CONCIERGE_TEST_MODEL_URL`.
#[test]
#[ignore = "needs a model server: run scripts/test.sh"]
fn real_model_calculator_with_the_llm_planner() {
    let url = std::env::var("CONCIERGE_TEST_MODEL_URL")
        .expect("CONCIERGE_TEST_MODEL_URL is not set: scripts/test.sh starts a model server and sets it");
    let dir = tempfile::tempdir().unwrap();
    let out = concierge(
        dir.path(),
        &[
            "--model",
            "openai:smollm2",
            "--base-url",
            &url,
            "run",
            "--agent",
            "calculator",
            "--session",
            "m",
            "--json",
            "what is 17 plus 25?",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Protocol facts, not the small model's arithmetic.
    assert_eq!(json["status"], "completed");
    let executions = json["tool_executions"].as_array().unwrap();
    assert!(
        !executions.is_empty(),
        "the model's tool call was parsed and executed: {json}"
    );
    assert!(executions.iter().all(|e| e["tool"] == "calculator"));
    assert!(json["usage"]["input_tokens"].as_u64().unwrap() > 0, "usage was counted");
    assert!(json["iterations"].as_u64().unwrap() >= 2);
    let out = concierge(dir.path(), &["history", "m", "--json"]);
    let history: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let last = history["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant", "a final message arrived");
}

#[test]
fn bench_runs_against_the_fixture_and_reports_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut fixture = Command::new(env!("CARGO_BIN_EXE_concierge"))
        .args(["bench", "--serve-fake", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(fixture.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    for durable in [false, true] {
        let mut args = vec![
            "--base-url",
            &url,
            "bench",
            "--sessions",
            "4",
            "--turns",
            "3",
            "--concurrency",
            "2",
        ];
        if durable {
            args.push("--durable");
        }
        let out = concierge(dir.path(), &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        for field in [
            "sessions",
            "turns",
            "concurrency",
            "wall_s",
            "turns_per_s",
            "cpu_s",
            "max_rss_mb",
            "llm_calls",
            "p50_turn_ms",
            "p95_turn_ms",
            "errors",
            "variant",
        ] {
            assert!(report.get(field).is_some(), "missing {field}: {report}");
        }
        assert_eq!(report["errors"], 0);
        assert_eq!(report["llm_calls"], 4 * 3 * 2, "two model calls per turn");
        assert_eq!(report["fsyncs_per_turn"].is_number(), durable);
    }
    let out = concierge(
        dir.path(),
        &[
            "--base-url",
            &url,
            "bench",
            "--sessions",
            "1",
            "--turns",
            "1",
            "--table",
        ],
    );
    assert!(stdout(&out).contains("turns/s"), "{}", stdout(&out));
    // Idle streams are opened after the turns and their memory reported
    // (a figure, not checked against any bound here).
    let out = concierge(
        dir.path(),
        &[
            "--base-url",
            &url,
            "bench",
            "--sessions",
            "3",
            "--turns",
            "1",
            "--idle-streams",
            "20",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["idle_streams"], 20, "{report}");
    assert!(report["idle_stream_kib"].is_number(), "{report}");
    fixture.kill().unwrap();
    fixture.wait().unwrap();
    let out = concierge(dir.path(), &["bench"]);
    assert!(stderr(&out).contains("--serve-fake"), "{}", stderr(&out));
}

#[test]
fn agents_use_different_models_and_history_shows_usage_and_cost() {
    let dir = tempfile::tempdir().unwrap();
    let openai = answering_server(
        r#"{"choices":[{"message":{"role":"assistant","content":"from the default model"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10}}"#,
    );
    let anthropic = answering_server(
        r#"{"content":[{"type":"text","text":"from claude"}],"stop_reason":"end_turn","usage":{"input_tokens":50,"output_tokens":5}}"#,
    );
    let anthropic_base = anthropic.trim_end_matches("/v1").to_string();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::write(
        dir.path().join("concierge.toml"),
        format!(
            "model = \"openai:small\"\nbase_url = \"{openai}\"\nagents_dir = \"agents\"\n\n[providers.anthropic]\nbase_url = \"{anthropic_base}\"\napi_key = \"test\"\n\n[prices.\"openai:small\"]\ninput = 1.0\noutput = 2.0\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agents/writer.toml"),
        "id = \"writer\"\ninstructions = \"Write.\"\nmodel = \"anthropic:claude-test\"\n",
    )
    .unwrap();
    let out = concierge(dir.path(), &["run", "--agent", "calculator", "--session", "a", "hi"]);
    assert_eq!(stdout(&out).trim(), "from the default model", "{}", stderr(&out));
    let out = concierge(dir.path(), &["run", "--agent", "writer", "--session", "b", "hi"]);
    assert_eq!(stdout(&out).trim(), "from claude", "{}", stderr(&out));
    let out = concierge(dir.path(), &["history", "a"]);
    assert!(
        stdout(&out).contains("tokens in 100 / out 10; cost $0.000120"),
        "{}",
        stdout(&out)
    );
    let out = concierge(dir.path(), &["history", "b"]);
    assert!(
        stdout(&out).contains("tokens in 50 / out 5; cost unknown"),
        "{}",
        stdout(&out)
    );
    let out = concierge(dir.path(), &["history", "a", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["usage"]["cost_usd"], 0.00012);
}

#[test]
fn chat_shows_tool_calls_and_answers_until_exit() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_concierge"))
        .current_dir(dir.path())
        .args(["chat", "--agent", "calculator", "--session", "c"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"calculate 5 + 3\nwhat is 10 divided by 4?\n/exit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("Calculator"), "greets with the agent: {text}");
    assert!(text.contains("-> calculator("), "shows the tool call: {text}");
    assert!(text.contains("<- calculator:"), "shows the result: {text}");
    assert!(text.contains("calculator: 5 + 3 = 8"), "{text}");
    assert!(text.contains("calculator: 10 / 4 = 2.5"), "{text}");
    let history = concierge(dir.path(), &["history", "c"]);
    assert!(stdout(&history).contains("2 runs"), "{}", stdout(&history));
}

/// No escape, bell or other control character but newline and tab.
fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{what} prints control characters: {text:?}"
    );
}

#[test]
fn stored_text_is_cleaned_of_terminal_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agents");
    std::fs::create_dir(&agents).unwrap();
    std::fs::write(
        agents.join("evil.toml"),
        "id = \"evil\"\nname = \"Evil\\u001b]0;pwned\\u0007 agent\"\ndescription = \"Clears \\u001b[2J screens\"\n\
         [[rules.routes]]\nkeywords = [\"hello\"]\nreply = \"Hi \\u001b[31mthere\\u001b[0m\\u009b2J!\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("concierge.toml"), "agents_dir = \"agents\"\n").unwrap();
    let evil = "\u{1b}[2J\u{1b}]0;pwned\u{7}";

    let out = concierge(
        dir.path(),
        &[
            "run",
            "--agent",
            "calculator",
            "--session",
            "s",
            &format!("{evil}calculate 5 + 3"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "5 + 3 = 8");
    let out = concierge(
        dir.path(),
        &["run", "--agent", "evil", "--session", "e", &format!("hello {evil}")],
    );
    assert_clean("run", &stdout(&out));
    assert_eq!(stdout(&out).trim(), "Hi there!");

    for args in [&["history", "s"][..], &["history", "e"], &["sessions"], &["agents"]] {
        let out = concierge(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_clean(&format!("{args:?}"), &stdout(&out));
        assert_clean(&format!("{args:?}"), &stderr(&out));
    }
    let history = stdout(&concierge(dir.path(), &["history", "s"]));
    assert!(history.contains("user: calculate 5 + 3"), "{history}");
    let agents = stdout(&concierge(dir.path(), &["agents"]));
    assert!(agents.contains("evil  (Evil agent)"), "{agents}");
    // JSON keeps the text, escaped.
    let json = stdout(&concierge(dir.path(), &["history", "s", "--json"]));
    assert_clean("history --json", &json);
    assert!(json.contains("\\u001b[2J"), "{json}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_concierge"))
        .current_dir(dir.path())
        .args(["chat", "--agent", "evil", "--session", "c"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("hello {evil}\n/exit\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_clean("chat", &stdout(&out));
    assert!(stdout(&out).contains("evil: Hi there!"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("Evil agent — Clears  screens"),
        "{}",
        stdout(&out)
    );
}

/// The stderr lines that report an error.
fn error_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn errors_speak_of_flags_and_are_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = concierge(dir.path(), &["run", "--agent", "ghost", "--session", "new", "x"]);
    assert!(!out.status.success());
    assert_eq!(error_lines(&out).len(), 1, "{:?}", error_lines(&out));
    let out = concierge(dir.path(), &["history", "missing"]);
    assert!(!out.status.success());
    let lines = error_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("error: session missing not found: `concierge sessions`"),
        "{lines:?}"
    );
    let out = concierge(dir.path(), &["tools", "nope"]);
    let lines = error_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    // The demo tools: the calculator, the task manager's, the CRM's and the assistant's domains'.
    assert!(
        lines[0].starts_with("error: no tool named \"nope\"; tools: add_interaction_to_contact, add_note_to_contact, ")
            && [
                ", calculator, ",
                ", complete_task, ",
                ", create_task, ",
                ", move_money, "
            ]
            .iter()
            .all(|name| lines[0].contains(name))
            && lines[0].ends_with(" (`concierge tools` lists them)"),
        "{lines:?}"
    );

    // A model that cannot be reached: one line that names the cause, no
    // retry chatter, no library words.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let out = concierge(
        dir.path(),
        &[
            "--model",
            "openai:m",
            "--base-url",
            &base,
            "run",
            "--agent",
            "calculator",
            "--session",
            "m",
            "hi",
        ],
    );
    assert!(!out.status.success());
    let lines = error_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert!(line.starts_with("error: "), "{line}");
    assert!(
        line.contains(&format!("cannot connect to {base}: connection refused")),
        "{line}"
    );
    assert_eq!(line.matches("model openai:m").count(), 1, "{line}");
    for word in [
        "error sending request",
        "error: error",
        "RunOptions",
        "ToolId(",
        "AgentId(",
        "os error",
    ] {
        assert!(!line.contains(word), "{line}");
    }
    assert_clean("stderr", &stderr(&out));
}

#[test]
fn calculator_phrasings_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (question, answer)) in [
        ("divide 10 by 2", "10 / 2 = 5"),
        ("what's 6 times 7", "6 * 7 = 42"),
        ("square root of 16", "sqrt(16) = 4"),
        ("calculate 2e3 + 1", "2000 + 1 = 2001"),
    ]
    .iter()
    .enumerate()
    {
        let session = format!("p{i}");
        let out = concierge(
            dir.path(),
            &["run", "--agent", "calculator", "--session", &session, question],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out).trim(), *answer, "{question}");
    }
}

#[test]
fn a_parked_call_is_answered_with_a_plain_yes_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("concierge.toml"),
        "[tools.calculator]\nconfirm = \"Work out {a} {operation} {b}?\"\n",
    )
    .unwrap();
    let out = concierge(
        dir.path(),
        &["run", "--agent", "calculator", "--session", "c", "calculate 5 + 3"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Work out 5 add 3?"), "{text}");
    assert!(text.contains("concierge run --session c yes"), "{text}");
    assert!(!text.contains('{'), "no raw JSON: {text}");

    // Not an answer: the call stays parked and the question is repeated.
    let out = concierge(dir.path(), &["run", "--session", "c", "what is this?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("yes or no") && text.contains("Work out 5 add 3?"),
        "{text}"
    );

    let out = concierge(dir.path(), &["run", "--session", "c", "yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "5 + 3 = 8");

    // A plain no declines: nothing is calculated.
    let out = concierge(
        dir.path(),
        &["run", "--session", "c", "--user", "ana", "calculate 2 + 2"],
    );
    assert!(stdout(&out).contains("Work out 2 add 2?"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["run", "--session", "c", "--json", "nope"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["tool_executions"][0]["outcome"]["error"]["kind"], "declined",
        "{json}"
    );
    let out = concierge(dir.path(), &["history", "c"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("5 + 3 = 8"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("2 + 2 = 4"), "{}", stdout(&out));
}

#[test]
fn calculator_is_found_by_the_hub_without_an_agent() {
    let dir = tempfile::tempdir().unwrap();
    two_file_agents(dir.path());
    for (question, answer) in [
        ("calculate 5 + 3", "5 + 3 = 8"),
        ("what is 17 plus 25?", "17 + 25 = 42"),
        ("square root of 16", "sqrt(16) = 4"),
        ("divide 10 by 4", "10 / 4 = 2.5"),
        ("6 times 7", "6 * 7 = 42"),
    ] {
        let session = format!("calc-{question}");
        let out = concierge(dir.path(), &["run", "--session", &session, "--json", question]);
        assert!(out.status.success(), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["agent"], "calculator", "{question}: {json}");
        assert_eq!(json["reply"], answer, "{question}: {json}");
    }
    // The other agents keep their messages.
    let out = concierge(dir.path(), &["run", "--session", "t", "book a flight on 2026-11-27"]);
    assert_eq!(stdout(&out).trim(), "Travel here: book a flight on 2026-11-27");
}

#[test]
fn the_tasks_example_through_the_hub_as_the_readme_shows() {
    let dir = tempfile::tempdir().unwrap();
    example(dir.path(), "tasks");
    let run = |args: &[&str]| {
        let out = concierge(dir.path(), args);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let text = run(&["run", "--session", "s1", "create a task to fix the printer"]);
    assert!(
        text.contains("I'll create a task 'fix the printer'. Proceed?"),
        "{text}"
    );
    assert!(!text.contains('{'), "no raw JSON: {text}");
    let text = run(&["run", "--session", "s1", "yes"]);
    assert_eq!(text.trim(), "Created task #9 'Fix the printer' (medium priority).");

    let text = run(&["run", "--session", "s1", "mark the login bug as done"]);
    assert!(text.contains("'Fix login bug' ("), "the match and its score: {text}");
    let text = run(&["run", "--session", "s1", "yes"]);
    assert!(text.starts_with("Marked task #1 'Fix login bug' ("), "{text}");

    let text = run(&["run", "--session", "s2", "good morning!"]);
    assert!(text.starts_with("Hello!"), "{text}");
    let text = run(&["run", "--session", "s3", "calculate 5 + 3"]);
    assert_eq!(text.trim(), "5 + 3 = 8");
    assert!(
        dir.path().join("tasks.db").exists(),
        "the tasks live next to the engine's database"
    );
}

#[test]
fn goals_and_tools_by_category_are_listed_as_a_person_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agents");
    std::fs::create_dir(&agents).unwrap();
    std::fs::write(
        agents.join("router.toml"),
        "id = \"router\"\nname = \"Contacts\"\ndescription = \"Keeps your contacts.\"\nstarter_prompt = \"Tell me about a call.\"\n[[agent_tools]]\nagent = \"helper\"\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("helper.toml"),
        "id = \"helper\"\ndescription = \"Helps the router.\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("concierge.toml"), "agents_dir = \"agents\"\n").unwrap();
    let out = concierge(dir.path(), &["goals"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("Contacts — Keeps your contacts.\n   Tell me about a call."),
        "{text}"
    );
    assert!(
        !text.contains("Helps the router"),
        "an agent called as a tool is not a goal: {text}"
    );

    let out = concierge(dir.path(), &["tools", "--category", "COMPUTATION"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("calculator"), "{}", stdout(&out));
    let out = concierge(dir.path(), &["tools", "--category", "astrology"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no tool is in the category \"astrology\"; categories: computation"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn output_to_a_reader_that_has_gone_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = cli::command(dir.path())
        .args(["tools"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes before the program writes anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
}

#[test]
fn bench_recovery_kills_a_server_with_runs_in_flight_and_a_new_one_finishes_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = concierge(
        dir.path(),
        &["bench", "--recovery", "4", "--idle-sessions", "3", "--concurrency", "2"],
    );
    assert!(
        out.status.success(),
        "{:?}\n{}\n{}",
        out.status,
        stdout(&out),
        stderr(&out)
    );
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["runs"], 4, "{report}");
    assert_eq!(report["idle_sessions"], 3, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["doubled"], 0, "{report}");
    for field in ["live_ms", "ready_ms", "answered_ms", "server_cpu_s"] {
        assert!(report[field].as_f64().is_some_and(|v| v >= 0.0), "{field}: {report}");
    }
}
