//! Agents called as tools through the Temporal engine: each child is a
//! session workflow of its own, driven by the parent's `concierge.call_agent`
//! activity; a child's confirmation reaches the person through the parent
//! (ignored: needs the Temporal dev server,
//! `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal -- --ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;

use std::sync::Mutex;

use concierge::{AgentSpec, AgentTool, Route, Rules, RunOptions, RunStatus, Runtime, tool};
use concierge_temporal::{Temporal, Workers};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use support::DevServer;

/// What the tools did, in order.
static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    /// Who the note is about.
    contact: String,
    /// The note.
    text: String,
}

/// Logs a note about a contact.
#[tool]
async fn log_note(args: NoteArgs) -> Result<String, String> {
    DONE.lock()
        .unwrap()
        .push(format!("note {}: {}", args.contact, args.text));
    Ok(format!("Logged the note for {}: {}.", args.contact, args.text))
}

#[derive(Deserialize, JsonSchema)]
struct RemoveArgs {
    /// Who to remove.
    contact: String,
}

/// Removes a contact (the person approves first).
#[tool(requires_confirmation)]
async fn remove_contact(args: RemoveArgs) -> Result<String, String> {
    DONE.lock().unwrap().push(format!("removed {}", args.contact));
    Ok(format!("Removed {}.", args.contact))
}

fn agents() -> Vec<AgentSpec> {
    let notes = AgentSpec::new("notes")
        .description("Logs notes about contacts.")
        .tool("log_note")
        .rules(
            Rules::new()
                .route(
                    Route::tool("log_note", json!({"contact": "{who}", "text": "{text}"}))
                        .pattern(r"(?i)note about (?P<who>\w+): (?P<text>.+)"),
                )
                .answer("{result}"),
        );
    let contacts = AgentSpec::new("contacts")
        .description("Removes contacts.")
        .tool("remove_contact")
        .rules(
            Rules::new()
                .route(Route::tool("remove_contact", json!({"contact": "{who}"})).pattern(r"(?i)remove (?P<who>\w+)"))
                .answer("{result}"),
        );
    let router = AgentSpec::new("router")
        .description("Keeps your contacts up to date.")
        .agent_tool(AgentTool::new("notes"))
        .agent_tool(AgentTool::new("contacts"))
        .rules(
            Rules::new()
                .route(Route::tool("notes", json!({"request": "{part}"})).pattern(r"(?i)(?P<part>note about .+)"))
                .route(Route::tool("contacts", json!({"request": "{part}"})).pattern(r"(?i)(?P<part>remove \w+)"))
                .answer("{result}"),
        );
    vec![notes, contacts, router]
}

fn opts(session: &str) -> RunOptions {
    RunOptions::new().session_id(session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_router_calls_its_specialists_in_child_sessions() {
    let server = DevServer::start().await;
    let rt = Runtime::builder()
        .tool(LogNote)
        .tool(RemoveContact)
        .agents(agents())
        .engine(Temporal::new(server.config("agents")).workers(Workers::all()))
        .build()
        .await
        .unwrap();

    let out = rt.send("note about Mike: proposal sent", opts("s1")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.reply.as_deref(), Some("Logged the note for Mike: proposal sent."));
    assert_eq!(out.agent, "router", "the router keeps the conversation");
    let child = rt.session("s1.call_1").await.unwrap();
    assert_eq!(child.parent().map(|p| p.call_id.as_str()), Some("call_1"));
    assert_eq!(child.agent(), "notes");

    // The child's confirmation is the parent's question; the answer reaches
    // the child, whose call then runs once.
    let out = rt.send("remove Jane", opts("s2")).await.unwrap();
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.clone().unwrap();
    assert_eq!(pending.session.as_ref().map(|s| s.as_str()), Some("s2.call_1"));
    assert!(!DONE.lock().unwrap().iter().any(|d| d == "removed Jane"));
    let out = rt.answer(&pending, "s2", true).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.reply.as_deref(), Some("Removed Jane."));
    assert_eq!(
        *DONE.lock().unwrap(),
        ["note Mike: proposal sent", "removed Jane"],
        "each call ran once"
    );

    rt.shutdown().await;
    server.stop().await;
}
