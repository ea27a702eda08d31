//! Forks and replays built from a session's events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use super::*;
use crate::{
    AgentSpec, Catalog, Effect, Input, Mode, OpenSession, PlannerMode, Route, Rules, Session, StartRun, Timestamp,
    ToolAnnotations, ToolOutcome, ToolSpec,
};

fn catalog() -> Catalog {
    let book = ToolSpec::new(
        "book",
        "Books a room.",
        json!({"type": "object", "properties": {"room": {"type": "string"}}}),
    )
    .provides("booking");
    let look = ToolSpec::new("look", "Looks.", json!({"type": "object"})).annotations(ToolAnnotations {
        read_only: true,
        ..ToolAnnotations::default()
    });
    let rules = Rules::new()
        .route(Route::tool("book", json!({"room": "{room}"})).pattern(r"book (?P<room>\w+)"))
        .route(Route::tool("look", json!({})).keywords(["look"]))
        .answer("Done: {result}.");
    Catalog::builder()
        .tool(book)
        .tool(look)
        .agent(AgentSpec::new("main").tool("book").tool("look").rules(rules))
        .agent(AgentSpec::new("thinker"))
        .mode(Mode::Single)
        .build()
        .unwrap()
}

/// A session driven by rules, whose tools answer at once; every event kept.
struct Case {
    catalog: Catalog,
    session: Session,
    events: Vec<Event>,
    /// The tool calls the session actually made.
    ran: Vec<String>,
    now: u64,
}

impl Case {
    fn new(session: Session) -> Self {
        Self {
            catalog: catalog(),
            session,
            events: Vec::new(),
            ran: Vec::new(),
            now: 10,
        }
    }

    fn step(&mut self, input: Input) -> Vec<Effect> {
        let step = self.session.step(input, &self.catalog).unwrap();
        self.events.extend(step.events);
        step.effects
    }

    /// Sends `start` and answers its tool calls until the run finishes.
    fn run(&mut self, start: StartRun) -> Option<String> {
        let mut effects = self.step(Input::StartRun(start));
        loop {
            let mut next = Vec::new();
            for effect in effects {
                match effect {
                    Effect::CallTool { run_id, call, .. } => {
                        self.ran.push(format!("{} {}", call.name, call.arguments));
                        self.now += 1;
                        let outcome = ToolOutcome::Ok(json!(format!(
                            "{} ok",
                            call.arguments["room"].as_str().unwrap_or("all")
                        )));
                        next.extend(self.step(Input::ToolFinished {
                            run_id,
                            call_id: call.id,
                            outcome,
                            duration_ms: 1,
                            usage: None,
                            at: Timestamp(self.now),
                        }));
                    }
                    Effect::Finish(output) => return output.reply,
                    _ => {}
                }
            }
            if next.is_empty() {
                return None;
            }
            effects = next;
        }
    }

    fn say(&mut self, text: &str) -> Option<String> {
        self.now += 1;
        self.run(StartRun::new(text, PlannerMode::Rules, Timestamp(self.now)))
    }

    fn last_seq(&self) -> u64 {
        self.events.last().map_or(0, |e| e.seq)
    }

    /// A new session opened from `fork`.
    fn open(fork: Fork) -> Self {
        let mut case = Case::new(Session::new("fork", "main"));
        let open = OpenSession {
            agent: fork.agent.clone(),
            named: false,
            tenant: None,
            fork: Some(Box::new(fork)),
            at: Timestamp(100),
        };
        case.step(Input::Open(open));
        case
    }
}

#[test]
fn a_fork_carries_the_conversation_up_to_its_event_and_says_what_was_done() {
    let mut original = Case::new(Session::new("s1", "main"));
    assert_eq!(original.say("book blue").as_deref(), Some("Done: blue ok."));
    let after_first = original.last_seq();
    let history_then = original.session.history().to_vec();
    original.say("book red");
    let fork = Fork::from_events(&"s1".into(), &original.events, after_first).unwrap();
    assert_eq!(fork.messages, history_then);
    assert_eq!(fork.agent.as_str(), "main");
    assert_eq!(fork.done.len(), 1);
    assert!(fork.done[0].changed, "booking changed something");
    assert_eq!(fork.origin.seq, after_first);
    assert_eq!(
        fork.origin.note,
        "This conversation was forked from an earlier one. Done before the fork point, and not done again here: book. \
         The original conversation is unchanged: what it did after the fork point still stands (book)."
    );

    let forked = Case::open(fork);
    assert_eq!(forked.session.history(), history_then.as_slice());
    assert!(matches!(
        &forked.events[0].kind,
        EventKind::SessionOpened { forked_from: Some(origin), .. } if origin.session.as_str() == "s1" && origin.seq == after_first
    ));
    let shown = forked
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Message { .. }))
        .count();
    assert_eq!(
        shown,
        history_then.len(),
        "each carried message is an event of the fork"
    );
    // What the booking provided is known in the fork too.
    assert_eq!(
        forked.session.blackboard().available.get("booking"),
        Some(&json!("blue ok"))
    );
}

#[test]
fn a_side_effect_done_before_the_fork_is_not_done_again_and_a_new_one_is() {
    let mut original = Case::new(Session::new("s1", "main"));
    original.say("book blue");
    let fork = Fork::from_events(&"s1".into(), &original.events, original.last_seq()).unwrap();
    let mut forked = Case::open(fork);
    assert_eq!(forked.say("book blue").as_deref(), Some("Done: blue ok."));
    assert!(
        forked.ran.is_empty(),
        "the booking is answered from the original: {:?}",
        forked.ran
    );
    assert!(
        forked
            .events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::ToolReused { tool, .. } if tool.as_str() == "book")),
        "the fork says it reused the booking"
    );
    forked.say("book green");
    assert_eq!(forked.ran, vec![r#"book {"room":"green"}"#.to_string()]);
    // In the original, the same request books again (no fork, no reuse).
    original.say("book blue");
    assert_eq!(original.ran.len(), 2);
}

#[test]
fn a_fork_in_the_middle_of_a_run_leaves_out_calls_not_answered_by_then() {
    let mut original = Case::new(Session::new("s1", "main"));
    original.say("book blue");
    let requested = original
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::ToolRequested { .. }))
        .unwrap()
        .seq;
    let calls = |messages: &[Message]| {
        messages
            .iter()
            .any(|m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()))
    };
    assert!(calls(original.session.history()), "the run's calls are in its history");
    let fork = Fork::from_events(&"s1".into(), &original.events, requested).unwrap();
    assert!(!calls(&fork.messages), "{:?}", fork.messages);
    assert!(matches!(fork.messages.last(), Some(Message::User { .. })));
    assert!(fork.done.is_empty());
}

#[test]
fn forking_at_an_event_the_session_does_not_have_says_which_it_has() {
    let mut original = Case::new(Session::new("s1", "main"));
    original.say("look");
    let last = original.last_seq();
    let error = Fork::from_events(&"s1".into(), &original.events, last + 1).unwrap_err();
    assert_eq!(error, ForkError::NoSuchEvent { at: last + 1, last });
    assert_eq!(
        error.to_string(),
        format!(
            "the conversation has no event {}: its events go from 1 to {last}",
            last + 1
        )
    );
    assert!(Fork::from_events(&"s1".into(), &original.events, 0).is_err());
}

#[test]
fn a_replay_answers_recorded_calls_and_refuses_others_without_running_a_tool() {
    let mut original = Case::new(Session::new("s1", "main"));
    original.say("look");
    original.say("book blue");
    let run = original.session.last_output().unwrap().run_id.clone();
    let record = RunRecord::from_events(&original.events, &run).unwrap();
    assert_eq!(record.reply.as_deref(), Some("Done: blue ok."));
    assert_eq!(record.calls.len(), 1);
    assert_eq!(record.messages, vec![Message::user("book blue")]);

    let fork = Fork::from_events(&"s1".into(), &original.events, record.started_seq - 1).unwrap();
    let mut replay = Case::open(fork);
    let mut start = StartRun::new("book blue", PlannerMode::Rules, Timestamp(200));
    start.replay = Some(record.calls.clone());
    assert_eq!(replay.run(start).as_deref(), Some("Done: blue ok."));
    assert!(replay.ran.is_empty());

    // A call the original did not make is refused, not run.
    let mut start = StartRun::new("book red", PlannerMode::Rules, Timestamp(300));
    start.replay = Some(record.calls);
    replay.run(start);
    assert!(replay.ran.is_empty());
    let refused = replay.events.iter().any(|e| {
        matches!(&e.kind, EventKind::ToolFinished { outcome: ToolOutcome::Error(error), .. }
            if error.message.starts_with("not run: this is a replay"))
    });
    assert!(refused, "the refusal reaches the planner");
}

#[test]
fn a_run_record_needs_a_run_that_finished() {
    let mut original = Case::new(Session::new("s1", "main"));
    original.say("look");
    assert_eq!(
        RunRecord::from_events(&original.events, &"r9".into()).unwrap_err(),
        ForkError::NoSuchRun("r9".into())
    );
    let started: Vec<Event> = original
        .events
        .iter()
        .filter(|e| !matches!(e.kind, EventKind::RunFinished { .. }))
        .cloned()
        .collect();
    assert_eq!(
        RunRecord::from_events(&started, &"r1".into()).unwrap_err(),
        ForkError::RunUnfinished("r1".into())
    );
}

#[test]
fn a_run_given_a_model_asks_that_model() {
    let mut case = Case::new(Session::new("s1", "thinker"));
    let mut start = StartRun::new("hello", PlannerMode::Model, Timestamp(1));
    start.model = Some("openai:other".into());
    let effects = case.step(Input::StartRun(start));
    let asked = effects.iter().find_map(|e| match e {
        Effect::CallModel { request, .. } => Some(request.model.clone()),
        _ => None,
    });
    assert_eq!(asked, Some(Some("openai:other".to_string())));
}
