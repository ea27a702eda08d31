//! Tenants and the `data_changed` event, on any engine.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Mutex};

use concierge::engine::SessionSummary;
use concierge::{
    AgentId, AgentSpec, AgentTool, Error, EventKind, Route, Rules, RunOptions, RunStatus, Runtime, Tool, ToolContext,
    ToolError, ToolSpec,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{EngineUnderTest, OnEngine};

type Notes = Arc<Mutex<Vec<String>>>;

#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    /// The note.
    text: String,
}

/// Saves a note (writes `notes`).
struct SaveNote(Notes);

impl Tool for SaveNote {
    type Args = NoteArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("save_note", "Saves a note.", concierge::tool::schema_for::<NoteArgs>()).writes("notes")
    }

    async fn call(&self, args: NoteArgs, _cx: ToolContext) -> Result<Value, ToolError> {
        self.0.lock().unwrap().push(args.text.clone());
        Ok(json!(format!("Saved: {}.", args.text)))
    }
}

fn agents() -> Vec<AgentSpec> {
    let notes = AgentSpec::new("notes")
        .description("Keeps notes.")
        .tool("save_note")
        .rules(
            Rules::new()
                .route(Route::tool("save_note", json!({"text": "{text}"})).pattern(r"(?i)note: (?P<text>.+)"))
                .answer("{result}")
                .fallback("Say 'note: ...'."),
        );
    let desk = AgentSpec::new("desk")
        .description("Passes notes on.")
        .agent_tool(AgentTool::new("notes"))
        .rules(
            Rules::new()
                .route(Route::tool("notes", json!({"request": "{part}"})).pattern(r"(?i)(?P<part>note: .+)"))
                .answer("{result}")
                .fallback("Desk here."),
        );
    vec![notes, desk]
}

async fn runtime(engine: &EngineUnderTest, notes: &Notes) -> Runtime {
    Runtime::builder()
        .tool(SaveNote(notes.clone()))
        .agents(agents())
        .on_engine(engine)
        .build()
        .await
        .unwrap()
}

/// [`runtime`] on the durable store `name` of `engine`: a second runtime on
/// the same name finds the first one's sessions.
async fn runtime_on_store(engine: &EngineUnderTest, name: &str, notes: &Notes) -> Runtime {
    Runtime::builder()
        .tool(SaveNote(notes.clone()))
        .agents(agents())
        .on_engine_store(engine, name)
        .build()
        .await
        .unwrap()
}

/// The runtime's sessions once `ids` are among them: an engine may list
/// from a store that lags a moment behind a new session (Temporal's
/// visibility store), so the list is asked again until they show.
async fn listed(rt: &Runtime, ids: &[&str]) -> Vec<SessionSummary> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed = rt.sessions().await.unwrap();
        if ids.iter().all(|id| listed.iter().any(|s| s.id == *id)) {
            return listed;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{ids:?} are never listed: {listed:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn acme(session: &str) -> RunOptions {
    RunOptions::new().session_id(session).tenant("acme")
}

pub async fn another_tenants_session_is_not_found_and_runs_nothing(engine: &EngineUnderTest) {
    let notes = Notes::default();
    let rt = runtime(engine, &notes).await;
    rt.client("notes")
        .unwrap()
        .run("note: for acme", acme("s1"))
        .await
        .unwrap();
    let globex = RunOptions::new().session_id("s1").tenant("globex");
    let error = rt.send("note: from globex", globex).await.unwrap_err();
    assert!(matches!(error, Error::SessionNotFound(_)), "{error:?}");
    let error = rt
        .send("note: from nobody", RunOptions::new().session_id("s1"))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::SessionNotFound(_)), "{error:?}");
    assert_eq!(notes.lock().unwrap().as_slice(), ["for acme"]);
    assert_eq!(rt.session("s1").await.unwrap().tenant(), Some("acme"));

    // An opened session of one tenant is not another's either.
    rt.open(None, acme("s2")).await.unwrap();
    let error = rt
        .send("note: x", RunOptions::new().session_id("s2").tenant("globex"))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::SessionNotFound(_)), "{error:?}");
}

pub async fn a_child_session_belongs_to_its_parents_tenant_and_a_write_says_what_changed(engine: &EngineUnderTest) {
    let notes = Notes::default();
    let rt = runtime(engine, &notes).await;
    let events = rt.subscribe("s1", 1);
    let out = rt
        .client("desk")
        .unwrap()
        .run("note: call the bank", acme("s1"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let child = rt.session("s1:call_1").await.unwrap();
    assert_eq!(child.tenant(), Some("acme"));
    let listed = listed(&rt, &["s1", "s1:call_1"]).await;
    assert!(listed.iter().all(|s| s.tenant.as_deref() == Some("acme")), "{listed:?}");

    let seen: Vec<_> = events
        .take_while(|e| {
            let done = matches!(&e, Ok(ev) if ev.session == "s1" && matches!(ev.kind, EventKind::RunFinished { .. }));
            async move { !done }
        })
        .map(|e| e.unwrap())
        .collect()
        .await;
    let changed: Vec<_> = seen
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::DataChanged { tool, changed, .. } => {
                Some((e.session.to_string(), tool.to_string(), changed.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        changed,
        [(
            "s1:call_1".to_string(),
            "save_note".to_string(),
            vec!["notes".to_string()]
        )],
        "the child's write, once; the agent call itself changes nothing of its own: {:?}",
        seen.iter()
            .map(|e| (e.session.as_str(), e.kind.name()))
            .collect::<Vec<_>>()
    );
}

/// An opened session is durable: a new runtime on the same store (a new
/// process on the same database, or new workers on the same Temporal
/// queues) lists it and runs its first message.
pub async fn an_opened_session_is_durable_listed_and_its_first_message_goes_to_its_agent(engine: &EngineUnderTest) {
    let notes = Notes::default();
    {
        let rt = runtime_on_store(engine, "c", &notes).await;
        rt.open(Some(AgentId::new("notes")), acme("s1")).await.unwrap();
        let again = rt.open(None, acme("s1")).await.unwrap_err();
        assert!(again.to_string().contains("exists already"), "{again}");
        rt.shutdown().await;
    }
    let rt = runtime_on_store(engine, "c", &notes).await;
    let listed = listed(&rt, &["s1"]).await;
    let s1 = listed.iter().find(|s| s.id == "s1").unwrap();
    assert_eq!(s1.agent, "notes");
    assert_eq!(s1.tenant.as_deref(), Some("acme"));
    let session = rt.session("s1").await.unwrap();
    assert_eq!(session.runs_started(), 0);
    assert!(session.is_pinned());
    let first: Vec<_> = rt.subscribe("s1", 1).take(1).collect().await;
    assert!(matches!(
        &first[0].as_ref().unwrap().kind,
        EventKind::SessionOpened { .. }
    ));

    let out = rt.send("note: buy milk", acme("s1")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.agent, "notes");
    assert_eq!(notes.lock().unwrap().as_slice(), ["buy milk"]);
}

/// Waits until the test opens its gate (a run that stays in progress).
struct Gate(Arc<tokio::sync::Semaphore>);

impl Tool for Gate {
    type Args = NoArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("wait_for_gate", "Waits.", concierge::tool::schema_for::<NoArgs>()).annotations(
            concierge::ToolAnnotations {
                read_only: true,
                ..Default::default()
            },
        )
    }

    async fn call(&self, _args: NoArgs, _cx: ToolContext) -> Result<Value, ToolError> {
        let permit = self.0.acquire().await.map_err(|_| ToolError::failed("closed"))?;
        permit.forget();
        Ok(json!("the gate opened"))
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

pub async fn a_message_for_a_busy_session_is_refused_queued_or_interrupts_as_asked(engine: &EngineUnderTest) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let slow = AgentSpec::new("slow").tool("wait_for_gate").rules(
        Rules::new()
            .route(Route::tool("wait_for_gate", json!({})).keywords(["wait"]))
            .answer("{result}")
            .fallback("Slow here."),
    );
    let rt = Runtime::builder()
        .tool(Gate(gate.clone()))
        .agent(slow)
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let opts = || RunOptions::new().session_id("busy");
    let first = rt.start("wait please", opts()).await.unwrap();

    // A caller that does not wait is refused by default, and when it asks so.
    for options in [opts(), opts().multitask(concierge::Multitask::Reject)] {
        let refused = rt.start("hello", options).await.err().unwrap();
        assert!(
            matches!(refused, Error::Rejected(concierge::StepError::RunInProgress { .. })),
            "{refused}"
        );
    }
    // One that waits is queued: it runs once the run in progress stops.
    let queued = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.send("hello", opts()).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!queued.is_finished(), "it waits behind the run in progress");
    gate.add_permits(1);
    let out = queued.await.unwrap().unwrap();
    assert_eq!(out.reply.as_deref(), Some("Slow here."), "{out:?}");
    assert_eq!(first.wait().await.unwrap().reply.as_deref(), Some("the gate opened"));

    // Interrupting: the run in progress is cancelled, then the message runs.
    let second = rt.start("wait again", opts()).await.unwrap();
    let out = rt
        .send("hello", opts().multitask(concierge::Multitask::Interrupt))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("Slow here."), "{out:?}");
    let cancelled = second.wait().await.unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled, "{cancelled:?}");
    let session = rt.session("busy").await.unwrap();
    assert!(!session.is_ended(), "the session goes on");
    assert_eq!(session.runs_started(), 4);
    gate.add_permits(8);
    rt.shutdown().await;
}

pub async fn an_erased_person_s_conversations_are_gone_and_another_s_stay(engine: &EngineUnderTest) {
    let notes = Notes::default();
    let rt = runtime(engine, &notes).await;
    let client = rt.client("notes").unwrap();
    client
        .run("note: ana's secret", acme("e-ana").user("ana"))
        .await
        .unwrap();
    client.run("note: bob's", acme("e-bob").user("bob")).await.unwrap();
    listed(&rt, &["e-ana", "e-bob"]).await;
    let ana = concierge::memory::MemoryOwner::new("acme", "ana");
    let erased = rt.erase_person(&ana).await.unwrap();
    assert_eq!(erased.sessions, 1, "{erased:?}");
    let error = rt.session("e-ana").await.unwrap_err();
    assert!(matches!(error, Error::SessionNotFound(_)), "{error:?}");
    assert!(rt.session("e-bob").await.is_ok());
    assert!(!rt.erase_session("e-ana").await.unwrap(), "nothing left to erase");
}

/// A person erased right after their first message (before any list has
/// had time to show the conversation) loses it too.
pub async fn a_conversation_begun_just_before_an_erase_is_erased_with_it(engine: &EngineUnderTest) {
    let notes = Notes::default();
    let rt = runtime(engine, &notes).await;
    let client = rt.client("notes").unwrap();
    client
        .run("note: ana's secret", acme("e-now").user("ana"))
        .await
        .unwrap();
    let ana = concierge::memory::MemoryOwner::new("acme", "ana");
    let erased = rt.erase_person(&ana).await.unwrap();
    assert_eq!(erased.sessions, 1, "{erased:?}");
    let error = rt.session("e-now").await.unwrap_err();
    assert!(matches!(error, Error::SessionNotFound(_)), "{error:?}");
}

/// Erasing a conversation erases the sessions of the agents it called, and
/// not another conversation whose id only looks like one of theirs (one an
/// earlier version let a caller name so: a new one is refused).
pub async fn erasing_a_conversation_erases_its_child_runs_and_not_one_named_like_them(engine: &EngineUnderTest) {
    let notes = Notes::default();
    let rt = runtime(engine, &notes).await;
    let out = rt
        .client("desk")
        .unwrap()
        .run("note: call the bank", acme("s1"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let notes_agent = rt.client("notes").unwrap();
    let refused = notes_agent.run("note: mine", acme("s1:call_8")).await.unwrap_err();
    assert!(matches!(refused, Error::InvalidSessionId(_)), "{refused:?}");
    assert!(refused.to_string().contains("choose one without"), "{refused}");
    assert!(matches!(rt.session("s1:call_8").await, Err(Error::SessionNotFound(_))));
    // As an earlier version opened it; a conversation that exists goes on.
    let open = concierge::core::OpenSession {
        agent: AgentId::new("notes"),
        named: true,
        tenant: Some("acme".into()),
        fork: None,
        at: concierge::core::Timestamp(1),
    };
    rt.engine()
        .open("s1:call_9".into(), open, concierge::engine::EngineOptions::default())
        .await
        .unwrap();
    notes_agent.run("note: mine", acme("s1:call_9")).await.unwrap();
    listed(&rt, &["s1", "s1:call_1", "s1:call_9"]).await;
    assert!(rt.erase_session("s1").await.unwrap());
    for gone in ["s1", "s1:call_1"] {
        let error = rt.session(gone).await.unwrap_err();
        assert!(matches!(error, Error::SessionNotFound(_)), "{gone}: {error:?}");
    }
    assert!(
        rt.session("s1:call_9").await.is_ok(),
        "a conversation of its own, though its id starts like a child's, stays"
    );
}
