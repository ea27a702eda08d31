//! MCP elicitation and sampling against servers written by others (ignored:
//! they need programs installed by scripts): a Python MCP server (PyPI
//! `mcp`, `scripts/setup-mcp-python.sh`) whose side-effecting tool asks
//! where to ship, with the concierge process SIGKILLed while the question is
//! open; and `@modelcontextprotocol/server-everything` (npm,
//! `scripts/setup-mcp.sh`) for its elicitation and sampling tools.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support {
    pub mod child;
}

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout};

use concierge::mcp::{McpServerConfig, SamplingPolicy};
use concierge::model::{Model, ModelContext};
use concierge::{
    AgentSpec, ElicitationAction, ElicitationAnswer, Message, ModelError, ModelReply, ModelRequest, RunOptions,
    RunStatus, Runtime,
};
use futures::future::BoxFuture;
use serde_json::json;

/// The virtual environment's Python that `scripts/setup-mcp-python.sh` made.
fn python() -> PathBuf {
    let cache = std::env::var_os("CONCIERGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/concierge"));
    let python = cache.join("venv-mcp-python/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-mcp-python.sh first",
        python.display()
    );
    python
}

fn everything() -> McpServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "server-everything is not installed: run scripts/setup-mcp.sh"
    );
    McpServerConfig::stdio("node", [script.to_string_lossy().to_string(), "stdio".to_string()])
}

/// Calls the tool named in the person's message once (arguments after a
/// `:`), then answers with its result; a server's sampling request (no
/// tools) is answered with a fixed sentence.
struct Caller;

impl Model for Caller {
    fn name(&self) -> String {
        "caller".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let result = request.messages.iter().find_map(|m| match m {
            Message::Tool { .. } => Some(m.text()),
            _ => None,
        });
        let asked = request
            .messages
            .iter()
            .find_map(|m| match m {
                Message::User { content } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let reply = match (result, request.tools.is_empty()) {
            (_, true) => ModelReply::text("the sampled answer").with_usage(5, 4),
            (Some(text), false) => ModelReply::text(format!("done: {text}")),
            (None, false) => {
                let (tool, args) = asked.split_once(':').unwrap_or((asked.as_str(), "{}"));
                ModelReply::tool_call(tool.trim(), args.trim())
            }
        };
        Box::pin(async move { Ok(reply) })
    }
}

async fn runtime(server: McpServerConfig, db: &Path) -> Runtime {
    Runtime::builder()
        .mcp_server("shop", server.trusted())
        .agent(AgentSpec::new("helper").toolset("shop"))
        .model(Caller)
        .sqlite(db)
        .build()
        .await
        .unwrap()
}

// ----- Python: the concierge process killed while the question is open -----

const SESSION: &str = "py-1";

fn shipping(effects: &Path) -> McpServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_python/shipping.py");
    McpServerConfig::stdio(python().to_string_lossy(), [script.to_string_lossy().to_string()])
        .env("SHIPPING_EFFECTS", effects.to_string_lossy())
}

/// The child process: `ask` starts the run and prints the question;
/// `answer` resumes it, answers the open question and prints the reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the Python elicitation test"]
async fn python_elicitation_child() {
    let db = PathBuf::from(std::env::var("ELICIT_DB").unwrap());
    let effects = PathBuf::from(std::env::var("ELICIT_EFFECTS").unwrap());
    let rt = runtime(shipping(&effects), &db).await;
    match std::env::var("ELICIT_MODE").unwrap().as_str() {
        "ask" => {
            let out = rt
                .client("helper")
                .unwrap()
                .run(r#"ship: {"item": "lamp"}"#, RunOptions::new().session_id(SESSION))
                .await
                .unwrap();
            assert_eq!(out.status, RunStatus::AwaitingInput, "{out:?}");
            println!("QUESTION {}", out.reply.unwrap_or_default().replace('\n', " "));
            futures::future::pending::<()>().await;
        }
        "answer" => {
            assert!(rt.recovered().contains(&SESSION.into()), "{:?}", rt.recovered());
            // A liveness guard, not a timing assertion.
            let out = tokio::time::timeout(std::time::Duration::from_secs(60), rt.wait(SESSION))
                .await
                .expect("the resumed run did not stop")
                .unwrap()
                .unwrap();
            let pending = out.pending_elicitation.expect("the same question is open");
            assert_eq!(pending.question, 0, "not a second question");
            let done = rt
                .answer_question(
                    SESSION,
                    pending.call_id,
                    pending.question,
                    ElicitationAnswer::accept(json!({"city": "Oslo", "floor": 2})),
                )
                .await
                .unwrap();
            println!("DONE {}", done.reply.unwrap_or_default());
        }
        other => panic!("unknown mode {other}"),
    }
}

fn spawn(db: &Path, effects: &Path, mode: &str) -> (Child, BufReader<ChildStdout>) {
    support::child::spawn(
        "python_elicitation_child",
        &[
            ("ELICIT_DB", db.as_os_str()),
            ("ELICIT_EFFECTS", effects.as_os_str()),
            ("ELICIT_MODE", mode.as_ref()),
        ],
    )
}

#[test]
#[ignore = "needs the Python MCP SDK: scripts/setup-mcp-python.sh"]
fn python_server_a_sigkill_while_the_question_is_open_asks_once_and_ships_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let effects = dir.path().join("effects.log");
    let _ = python();

    let (mut first, mut out) = spawn(&db, &effects, "ask");
    let question = support::child::read_until(&mut out, "QUESTION ");
    assert!(question.contains("Where should the lamp go?"), "{question}");
    first.kill().unwrap(); // SIGKILL while the person thinks
    first.wait().unwrap();
    assert!(!effects.exists() || std::fs::read_to_string(&effects).unwrap().is_empty());

    let (mut second, mut out) = spawn(&db, &effects, "answer");
    let done = support::child::read_until(&mut out, "DONE ");
    assert!(done.contains("shipped the lamp to Oslo"), "{done}");
    assert!(second.wait().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(&effects).unwrap(),
        "lamp -> Oslo\n",
        "shipped once"
    );
}

// ----- @modelcontextprotocol/server-everything -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn everything_elicitation_form_answered_and_declined() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(
        everything().include(["trigger-elicitation-request"]),
        &dir.path().join("db"),
    )
    .await;
    let helper = rt.client("helper").unwrap();
    let out = helper
        .run("trigger-elicitation-request", RunOptions::new().session_id("e1"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput, "{out:?}");
    let pending = out.pending_elicitation.unwrap();
    assert!(pending.elicitation.fields().iter().any(|f| f.name == "name"));
    // Out of the form's range: refused, naming the field.
    let refused = rt
        .answer_question(
            "e1",
            pending.call_id.clone(),
            pending.question,
            ElicitationAnswer::accept(json!({"name": "Ada", "integer": 500})),
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("Integer"), "{refused}");
    let done = rt
        .answer_question(
            "e1",
            pending.call_id,
            pending.question,
            ElicitationAnswer::accept(json!({"name": "Ada Lovelace", "check": true, "integer": 7})),
        )
        .await
        .unwrap();
    let reply = done.reply.unwrap();
    assert!(reply.contains("Ada Lovelace"), "{reply}");

    let out = helper
        .run("trigger-elicitation-request", RunOptions::new().session_id("e2"))
        .await
        .unwrap();
    let pending = out.pending_elicitation.unwrap();
    let done = rt
        .answer_question(
            "e2",
            pending.call_id,
            pending.question,
            ElicitationAnswer::new(ElicitationAction::Decline),
        )
        .await
        .unwrap();
    assert!(done.reply.unwrap().to_lowercase().contains("decline"));
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn everything_sampling_goes_through_our_model_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything()
        .include(["trigger-sampling-request"])
        .sampling(SamplingPolicy::Allow);
    let rt = runtime(config, &dir.path().join("db")).await;
    let out = rt
        .client("helper")
        .unwrap()
        .run(
            r#"trigger-sampling-request: {"prompt": "say hi", "maxTokens": 50}"#,
            RunOptions::new().session_id("s"),
        )
        .await
        .unwrap();
    let reply = out.reply.unwrap();
    assert!(reply.contains("the sampled answer"), "{reply}");
    assert_eq!(out.usage.input_tokens, 5, "the sampled tokens count in the run");
    rt.shutdown().await;
}
