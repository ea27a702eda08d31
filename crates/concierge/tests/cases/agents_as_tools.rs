//! Agents as tools, on any engine: a router calls specialists in child
//! sessions; their replies come back as one answer, their questions (a
//! choice, a confirmation) reach the person through the router's
//! conversation, and their events appear in its stream.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use concierge::{AgentSpec, EventKind, RunOptions, RunStatus, Runtime, StreamCursor};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{EngineUnderTest, OnEngine};

#[path = "contacts.rs"]
mod contacts;

use contacts::{Log, LogNote, RemoveContact, agents};

async fn runtime(engine: &EngineUnderTest, log: &Log) -> Runtime {
    Runtime::builder()
        .tool(LogNote(log.clone()))
        .tool(RemoveContact(log.clone()))
        .agents(agents())
        .on_engine(engine)
        .build()
        .await
        .unwrap()
}

/// [`runtime`] on the durable store `name` of `engine`: a second runtime on
/// the same name finds the first one's sessions.
async fn runtime_on_store(engine: &EngineUnderTest, name: &str, log: &Log) -> Runtime {
    Runtime::builder()
        .tool(LogNote(log.clone()))
        .tool(RemoveContact(log.clone()))
        .agents(agents())
        .on_engine_store(engine, name)
        .build()
        .await
        .unwrap()
}

fn opts(session: &str) -> RunOptions {
    RunOptions::new().session_id(session)
}

pub async fn a_router_answers_a_compound_statement_once_with_each_specialists_part_in_order(engine: &EngineUnderTest) {
    let log = Log::default();
    let rt = runtime(engine, &log).await;
    assert_eq!(
        rt.catalog().default_agent().map(|a| a.to_string()).as_deref(),
        Some("router")
    );
    let events = rt.subscribe("s1", 1);
    let out = rt
        .send(
            "note about Mike: proposal sent; note about Mike: call back Friday",
            opts("s1"),
        )
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some("Logged the note for contact 2: proposal sent. Logged the note for contact 2: call back Friday.")
    );
    let written: Vec<String> = log.lock().unwrap().iter().map(|w| w.2.clone()).collect();
    assert_eq!(
        written,
        ["proposal sent", "call back Friday"],
        "one after another, in order"
    );
    assert_eq!(out.agent, "router", "the router keeps the conversation");

    // The children are sessions of their own, linked to the router's calls.
    let child = rt.session("s1:call_1").await.unwrap();
    assert_eq!(child.parent().map(|p| p.call_id.as_str()), Some("call_1"));
    assert_eq!(child.agent(), "notes");

    // The router's stream carries the children's events, marked with their session.
    let seen: Vec<_> = events
        .take_while(|e| {
            let done = matches!(&e, Ok(ev) if ev.session == "s1" && matches!(ev.kind, EventKind::RunFinished { .. }));
            async move { !done }
        })
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert!(seen.iter().any(|e| matches!(e.kind, EventKind::ChildStarted { .. })));
    let child_finished = seen
        .iter()
        .filter(|e| e.session == "s1:call_1" && matches!(e.kind, EventKind::RunFinished { .. }))
        .count();
    assert_eq!(child_finished, 1, "the child's run, in the parent's stream");
    rt.shutdown().await;
}

pub async fn a_specialists_choice_and_confirmation_reach_the_person_through_the_router(engine: &EngineUnderTest) {
    let log = Log::default();
    let rt = runtime(engine, &log).await;

    let out = rt.send("note about John: renewal is due", opts("s2")).await.unwrap();
    assert_eq!(out.status, RunStatus::AwaitingChoice, "{out:?}");
    let reply = out.reply.clone().unwrap();
    assert!(
        reply.contains("Which John do you mean?\n1. John Smith (Acme, john@acme.com)\n2."),
        "{reply}"
    );
    assert!(log.lock().unwrap().is_empty(), "nothing written before the choice");
    let out = rt.send("2", opts("s2")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some("Logged the note for contact 9: renewal is due.")
    );
    assert_eq!(log.lock().unwrap()[0].1, 9, "the second John");

    let out = rt.send("remove Jane", opts("s3")).await.unwrap();
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.clone().unwrap();
    assert_eq!(pending.message, "I'll remove Jane. Proceed?");
    assert_eq!(pending.session.as_ref().map(|s| s.as_str()), Some("s3:call_1"));
    // A structured answer quoting the child's call works through the router.
    let out = rt.answer(&pending, "s3", true).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.reply.as_deref(), Some("Removed Jane."));
    let removed = log.lock().unwrap().iter().filter(|w| w.0 == "remove_contact").count();
    assert_eq!(removed, 1);

    // And a plain "no" in words.
    let out = rt.send("remove Bob", opts("s4")).await.unwrap();
    assert_eq!(out.status, RunStatus::AwaitingConfirmation);
    let out = rt.send("no", opts("s4")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert!(log.lock().unwrap().iter().all(|w| w.2 != "Bob"));
    rt.shutdown().await;
}

/// A new runtime on the same store (a new process on the same database, or
/// new workers on the same Temporal queues) takes a parked tree over.
pub async fn a_new_runtime_on_the_same_database_finishes_a_parked_tree_without_repeating_a_child(
    engine: &EngineUnderTest,
) {
    let log = Log::default();
    {
        let rt = runtime_on_store(engine, "c", &log).await;
        let out = rt
            .send("note about Mike: sent the deck; remove Jane", opts("s5"))
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
        rt.shutdown().await;
    }
    assert_eq!(log.lock().unwrap().len(), 1, "the note, before the question");
    let rt = runtime_on_store(engine, "c", &log).await;
    let out = rt.send("yes", opts("s5")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some("Logged the note for contact 2: sent the deck. Removed Jane.")
    );
    let written: Vec<String> = log.lock().unwrap().iter().map(|w| w.0.clone()).collect();
    assert_eq!(written, ["log_note", "remove_contact"], "each once");
    rt.shutdown().await;
}

pub async fn a_prompt_template_and_a_prompt_builder_write_the_childs_message(engine: &EngineUnderTest) {
    let toml_agent = r#"
        id = "router"
        [[agent_tools]]
        agent = "contacts"
        [[agent_tools]]
        agent = "notes"
        prompt = "note about {who}: {what}"
        parameters = { type = "object", properties = { who = { type = "string" }, what = { type = "string" } }, required = ["who", "what"] }
        [rules]
        answer = "{result}"
        [[rules.routes]]
        pattern = '(?i)tell (?P<who>\w+) (?P<what>.+)'
        tool = "notes"
        arguments = { who = "{who}", what = "{what}" }
    "#;
    let router: AgentSpec = toml::from_str(toml_agent).unwrap();
    let log = Log::default();
    let mut specs = agents();
    specs.retain(|a| a.id != "router");
    let rt = Runtime::builder()
        .tool(LogNote(log.clone()))
        .tool(RemoveContact(log.clone()))
        .agents(specs.clone())
        .agent(router)
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let out = rt.send("tell Mike the deck is out", opts("t1")).await.unwrap();
    assert_eq!(
        out.reply.as_deref(),
        Some("Logged the note for contact 2: the deck is out.")
    );
    let child = rt.history("t1:call_1").await.unwrap();
    assert_eq!(child[0].text(), "note about Mike: the deck is out", "from the template");

    let rt = Runtime::builder()
        .tool(LogNote(log.clone()))
        .tool(RemoveContact(log.clone()))
        .agents(agents())
        .agent_prompt("notes", |args: &Value| {
            format!(
                "note about Mike: {}",
                args["request"].as_str().unwrap_or_default().to_uppercase()
            )
        })
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let out = rt.send("note about Mike: hello", opts("t2")).await.unwrap();
    assert_eq!(
        out.reply.as_deref(),
        Some("Logged the note for contact 2: NOTE ABOUT MIKE: HELLO.")
    );
}

#[derive(Deserialize, JsonSchema)]
struct Amount {
    /// How much.
    amount: i64,
}

/// Books an amount in the ledger.
#[concierge::tool(writes = ["ledger"])]
async fn book(args: Amount) -> Result<i64, String> {
    Ok(args.amount)
}

pub async fn what_a_tool_writes_is_declared_in_rust_or_by_configuration(engine: &EngineUnderTest) {
    let log = Log::default();
    let rt = Runtime::builder()
        .tool(Book)
        .tool(LogNote(log.clone()))
        .tool_writes("log_note", "ledger")
        .agent(AgentSpec::new("clerk").tool("book").tool("log_note"))
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let catalog = rt.catalog();
    let tools = catalog.tools_for(&"clerk".into());
    let writes = |name: &str| tools.iter().find(|t| t.name == name).unwrap().writes.clone();
    assert_eq!(writes("book"), ["ledger"]);
    assert_eq!(writes("log_note"), ["notes", "ledger"]);
    assert!(
        tools[0].conflicts_with(tools[1]),
        "both write the ledger: their calls run in turn"
    );
}

/// The merged stream from `cursor` until the session's own run finishes
/// completed: each event's (session, id, kind) and the cursor after it.
async fn follow_to_the_end(
    rt: &Runtime,
    session: &str,
    cursor: StreamCursor,
) -> Vec<((String, String, String), StreamCursor)> {
    let root = session.to_string();
    rt.follow(session, cursor)
        .map(|item| item.unwrap())
        .take_while(|(event, _)| {
            let done = event.session == root.as_str()
                && matches!(
                    &event.kind,
                    EventKind::RunFinished {
                        status: RunStatus::Completed,
                        ..
                    }
                );
            async move { !done }
        })
        .map(|(event, cursor)| {
            let key = (
                event.session.to_string(),
                event.id().to_string(),
                event.kind.name().to_string(),
            );
            (key, cursor)
        })
        .collect()
        .await
}

pub async fn a_subscriber_that_stops_anywhere_in_a_childs_events_resumes_with_every_event_exactly_once(
    engine: &EngineUnderTest,
) {
    let log = Log::default();
    let rt = runtime(engine, &log).await;
    // Two children: one finishes, one asks for a confirmation through the
    // router (its stop is shown before the router's question), then finishes.
    let out = rt
        .send("note about Mike: sent the deck; remove Jane", opts("s6"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let out = rt.send("yes", opts("s6")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");

    let full = follow_to_the_end(&rt, "s6", StreamCursor::default()).await;
    let sessions: std::collections::BTreeSet<&str> = full.iter().map(|((s, _, _), _)| s.as_str()).collect();
    assert_eq!(
        sessions.into_iter().collect::<Vec<_>>(),
        ["s6", "s6:call_1", "s6:call_2"]
    );
    assert!(
        full.iter().any(|(_, cursor)| cursor.has_children()),
        "the cursors inside a child's events name the child"
    );
    for (k, (_, cursor)) in full.iter().enumerate() {
        let written = cursor.to_string();
        let cursor: StreamCursor = written.parse().unwrap();
        let resumed: Vec<_> = follow_to_the_end(&rt, "s6", cursor)
            .await
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        let mut expected: Vec<_> = full[k + 1..].iter().map(|(key, _)| key.clone()).collect();
        let mut got = resumed.clone();
        expected.sort();
        got.sort();
        assert_eq!(got, expected, "resumed after {written}: every later event, once");
        // Each session's events in their own order.
        for session in ["s6", "s6:call_1", "s6:call_2"] {
            let order = |events: &[(String, String, String)]| -> Vec<String> {
                events.iter().filter(|e| e.0 == session).map(|e| e.1.clone()).collect()
            };
            let expected: Vec<_> = full[k + 1..].iter().map(|(key, _)| key.clone()).collect();
            assert_eq!(order(&resumed), order(&expected), "{session} after {written}");
        }
    }
    rt.shutdown().await;
}

pub async fn ending_the_router_ends_the_specialist_waiting_under_it(engine: &EngineUnderTest) {
    let log = Log::default();
    let rt = runtime(engine, &log).await;
    let out = rt.send("remove Jane", opts("s7")).await.unwrap();
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert!(rt.session("s7:call_1").await.unwrap().active_run().is_some());
    rt.end("s7", "the person left").await.unwrap();
    let child = rt.session("s7:call_1").await.unwrap();
    assert!(child.is_ended(), "the specialist's parked run is cancelled too");
    assert!(child.active_run().is_none());
    assert!(log.lock().unwrap().is_empty(), "nothing was removed");
    rt.shutdown().await;
}
