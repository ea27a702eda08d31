//! Forks and replays, on any engine: a fork carries the conversation up to
//! an event and does not redo what was done; a replay runs a past run
//! against another model or planner with its tools answered from the run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Mutex};

use concierge::model::ScriptedModel;
use concierge::runtime::ReplayOptions;
use concierge::{
    AgentSpec, Error, Event, EventKind, Message, ModelReply, PlannerMode, Route, Rules, RunOptions, RunStatus, Runtime,
    Tool, ToolContext, ToolError, ToolSpec,
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

/// Saves a note: a side effect the test counts.
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

fn notes_agent() -> AgentSpec {
    AgentSpec::new("notes").tool("save_note").rules(
        Rules::new()
            .route(Route::tool("save_note", json!({"text": "{text}"})).pattern(r"(?i)note: (?P<text>.+)"))
            .answer("{result}")
            .fallback("Say 'note: ...'."),
    )
}

async fn events(rt: &Runtime, session: &str) -> Vec<Event> {
    let last = rt.session(session).await.unwrap().last_seq();
    rt.subscribe(session, 1)
        .map(Result::unwrap)
        .filter(|e| futures::future::ready(e.delta == 0))
        .take(last as usize)
        .collect()
        .await
}

pub async fn a_fork_carries_the_conversation_and_does_not_redo_what_was_done(engine: &EngineUnderTest) {
    let notes = Notes::default();
    let rt = Runtime::builder()
        .tool(SaveNote(notes.clone()))
        .agent(notes_agent())
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let acme = || RunOptions::new().session_id("s").tenant("acme");
    rt.send("note: milk", acme()).await.unwrap();
    let after_first = rt.session("s").await.unwrap().last_seq();
    let history_then = rt.history("s").await.unwrap();
    rt.send("note: eggs", acme()).await.unwrap();
    assert_eq!(*notes.lock().unwrap(), ["milk", "eggs"]);

    // Another tenant cannot fork it, nor see that it exists.
    let theirs = rt
        .fork("s", None, RunOptions::new().session_id("theirs").tenant("other"))
        .await;
    assert!(matches!(theirs, Err(Error::SessionNotFound(_))), "{theirs:?}");

    let forked = rt
        .fork("s", Some(after_first), RunOptions::new().session_id("f").tenant("acme"))
        .await
        .unwrap();
    assert_eq!(forked.session.as_str(), "f");
    assert_eq!(forked.origin.seq, after_first);
    assert!(
        forked
            .origin
            .note
            .contains("Done before the fork point, and not done again here: save_note."),
        "{}",
        forked.origin.note
    );
    assert!(
        forked.origin.note.contains("still stands (save_note)"),
        "{}",
        forked.origin.note
    );
    assert_eq!(rt.history("f").await.unwrap(), history_then);
    let opened = events(&rt, "f").await;
    assert!(
        matches!(&opened[0].kind, EventKind::SessionOpened { forked_from: Some(o), .. } if o.session.as_str() == "s"),
        "{opened:?}"
    );

    // The same note again in the fork is answered from the original.
    let out = rt
        .send("note: milk", RunOptions::new().session_id("f").tenant("acme"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("Saved: milk."));
    assert_eq!(*notes.lock().unwrap(), ["milk", "eggs"], "not saved twice");
    let reused = events(&rt, "f")
        .await
        .into_iter()
        .any(|e| matches!(e.kind, EventKind::ToolReused { .. }));
    assert!(reused, "the fork says the note was reused");
    // A new note is saved.
    rt.send("note: bread", RunOptions::new().session_id("f").tenant("acme"))
        .await
        .unwrap();
    assert_eq!(*notes.lock().unwrap(), ["milk", "eggs", "bread"]);
    // The original is untouched.
    assert_eq!(rt.history("s").await.unwrap().len(), history_then.len() * 2);

    // Forking at an event the session does not have says which it has.
    let last = rt.session("s").await.unwrap().last_seq();
    let error = rt
        .fork("s", Some(last + 5), RunOptions::new().session_id("g").tenant("acme"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the conversation has no event {}: its events go from 1 to {last}",
            last + 5
        )
    );
    rt.shutdown().await;
}

pub async fn a_replay_runs_against_another_model_without_side_effects(engine: &EngineUnderTest) {
    let notes = Notes::default();
    let first = ScriptedModel::new()
        .reply(ModelReply::tool_call("save_note", r#"{"text": "milk"}"#))
        .reply(ModelReply::text("Saved it."));
    // The other model calls the same tool with the same arguments, then
    // one the original never made.
    let other = ScriptedModel::new()
        .reply(ModelReply::tool_call("save_note", r#"{"text": "milk"}"#))
        .reply(ModelReply::tool_call("save_note", r#"{"text": "cheese"}"#))
        .reply(ModelReply::text("Noted milk; cheese was not saved."));
    let rt = Runtime::builder()
        .tool(SaveNote(notes.clone()))
        .agent(notes_agent())
        .model(first)
        .named_model("scripted:other", Arc::new(other))
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let out = rt
        .send("note: milk please", RunOptions::new().session_id("s"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("Saved it."));
    assert_eq!(*notes.lock().unwrap(), ["milk"]);

    let replay = rt
        .replay(
            "s",
            out.run_id.clone(),
            ReplayOptions::new().model("scripted:other").session_id("s-replay"),
        )
        .await
        .unwrap();
    assert_eq!(replay.original.reply.as_deref(), Some("Saved it."));
    assert_eq!(replay.original.messages, vec![Message::user("note: milk please")]);
    assert_eq!(replay.replayed.status, RunStatus::Completed, "{:?}", replay.replayed);
    assert_eq!(
        replay.replayed.reply.as_deref(),
        Some("Noted milk; cheese was not saved.")
    );
    assert_eq!((replay.answered, replay.refused), (1, 1));
    assert_eq!(*notes.lock().unwrap(), ["milk"], "a replay runs no tool");
    assert_eq!(rt.history("s").await.unwrap().len(), 4, "the original is untouched");

    // Against the agent's rules instead of a model.
    let by_rules = rt
        .replay(
            "s",
            out.run_id.clone(),
            ReplayOptions::new().planner(PlannerMode::Rules).session_id("s-rules"),
        )
        .await
        .unwrap();
    // The rules save "milk please", a call the original did not make: refused.
    assert_eq!((by_rules.answered, by_rules.refused), (0, 1), "{by_rules:?}");
    assert_eq!(*notes.lock().unwrap(), ["milk"]);

    // A model that is not configured is named in the error.
    let error = rt
        .replay(
            "s",
            out.run_id.clone(),
            ReplayOptions::new().model("nope:x").session_id("s-x"),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, Error::ModelNotConfigured(_)), "{error}");
    rt.shutdown().await;
}
