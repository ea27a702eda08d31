//! Questions a running call asks (MCP elicitation) over `step`: the run
//! waits with the call in flight, the answer is checked, recorded on the
//! call and handed to the engine, words answer it too, and a replay of the
//! same inputs gives the same session.

use serde_json::json;

use crate::{
    AgentSpec, Catalog, Effect, Elicitation, ElicitationAction, ElicitationAnswer, ElicitationMode, Input, PlannerMode,
    Question, Route, Rules, RunStatus, Session, StartRun, Step, StepError, Timestamp, ToolOutcome, ToolSpec, Usage,
};

fn catalog() -> Catalog {
    let shop = AgentSpec::new("shop").tool("ship").rules(
        Rules::new()
            .route(Route::tool("ship", json!({"item": "{message}"})).keywords(["ship"]))
            .answer("{result}"),
    );
    Catalog::builder()
        .tool(ToolSpec::new(
            "ship",
            "Ships an item.",
            json!({"type": "object", "properties": {"item": {"type": "string"}}}),
        ))
        .agent(shop)
        .build()
        .unwrap()
}

fn address() -> Elicitation {
    Elicitation {
        server: "orders".into(),
        message: "Where to?".into(),
        mode: ElicitationMode::Form {
            schema: json!({
                "type": "object",
                "properties": {"city": {"type": "string"}, "floor": {"type": "integer"}},
                "required": ["city"]
            }),
        },
    }
}

struct Case {
    session: Session,
    catalog: Catalog,
    inputs: Vec<Input>,
}

impl Case {
    fn new() -> Self {
        Self {
            session: Session::new("s", "shop"),
            catalog: catalog(),
            inputs: Vec::new(),
        }
    }

    fn send(&mut self, input: Input) -> Result<Step, StepError> {
        let step = self.session.step(input.clone(), &self.catalog)?;
        self.inputs.push(input);
        Ok(step)
    }

    fn say(&mut self, text: &str) -> Step {
        self.send(Input::StartRun(StartRun::new(text, PlannerMode::Rules, Timestamp(1))))
            .unwrap()
    }

    fn ask(&mut self, elicitation: Elicitation) -> Step {
        self.send(Input::ToolAsked {
            run_id: "r1".into(),
            call_id: "call_1".into(),
            question: Question::Elicitation { elicitation },
            usage: None,
            checkpoint: None,
            at: Timestamp(2),
        })
        .unwrap()
    }

    fn answer(&mut self, question: u32, answer: ElicitationAnswer) -> Result<Step, StepError> {
        self.send(Input::ElicitationAnswered {
            run_id: "r1".into(),
            call_id: "call_1".into(),
            question,
            answer,
            at: Timestamp(3),
        })
    }

    /// A fresh session fed the same inputs.
    fn replayed(&self) -> Session {
        let mut session = Session::new("s", "shop");
        for input in &self.inputs {
            session.step(input.clone(), &self.catalog).unwrap();
        }
        session
    }
}

fn awaited(step: &Step) -> Option<&crate::RunOutput> {
    step.effects.iter().find_map(|e| match e {
        Effect::AwaitUser(out) => Some(out),
        _ => None,
    })
}

#[test]
fn a_question_waits_with_the_call_in_flight_and_the_answer_goes_back_to_it() {
    let mut case = Case::new();
    let step = case.say("ship the lamp");
    assert!(step.effects.iter().any(|e| matches!(e, Effect::CallTool { .. })));
    let step = case.ask(address());
    let out = awaited(&step).expect("the run's output says it waits");
    assert_eq!(out.status, RunStatus::AwaitingInput);
    let pending = out.pending_elicitation.clone().unwrap();
    assert_eq!((pending.call_id.as_str(), pending.question), ("call_1", 0));
    assert!(out.reply.as_deref().unwrap().contains("Where to?"));
    assert_eq!(case.session.pending_elicitation(), Some(pending));
    // The call is still in flight: a replay would issue it again.
    let pending_effects = case.session.pending_effects(&case.catalog);
    assert!(pending_effects.iter().any(|e| matches!(e, Effect::CallTool { .. })));

    // Content that does not fit is refused, naming the field; nothing changes.
    let before = case.session.clone();
    let error = case
        .answer(0, ElicitationAnswer::accept(json!({"floor": 2})))
        .unwrap_err();
    assert_eq!(
        error,
        StepError::AnswerRefused {
            problem: "City is required".into()
        }
    );
    assert_eq!(case.session, before);

    let step = case
        .answer(0, ElicitationAnswer::accept(json!({"city": "Oslo"})))
        .unwrap();
    assert!(step.effects.iter().any(|e| matches!(
        e,
        Effect::AnswerElicitation { question: 0, answer, .. } if answer.content == Some(json!({"city": "Oslo"}))
    )));
    assert!(case.session.pending_elicitation().is_none());
    assert_eq!(
        case.session.asked(&"call_1".into())[0].answer,
        Some(ElicitationAnswer::accept(json!({"city": "Oslo"})))
    );
    assert!(matches!(
        case.answer(0, ElicitationAnswer::new(ElicitationAction::Cancel)),
        Err(StepError::NoSuchQuestion { .. })
    ));

    // The server uses the model on the call's behalf: its tokens count.
    case.send(Input::Sampled {
        run_id: "r1".into(),
        call_id: "call_1".into(),
        usage: Usage::tokens(10, 5),
        at: Timestamp(4),
    })
    .unwrap();
    assert_eq!(case.session.usage().input_tokens, 10);

    // Replaying the inputs gives the same session, and a snapshot reads back.
    assert_eq!(case.replayed(), case.session);
    let text = serde_json::to_string(&case.session).unwrap();
    assert_eq!(serde_json::from_str::<Session>(&text).unwrap(), case.session);

    let step = case
        .send(Input::ToolFinished {
            run_id: "r1".into(),
            call_id: "call_1".into(),
            outcome: ToolOutcome::Ok(json!("shipped to Oslo")),
            duration_ms: 1,
            usage: None,
            at: Timestamp(5),
        })
        .unwrap();
    let finished = step.effects.iter().find_map(|e| match e {
        Effect::Finish(out) => Some(out),
        _ => None,
    });
    assert_eq!(finished.unwrap().status, RunStatus::Completed);
    assert_eq!(case.session.usage().output_tokens, 5);
}

#[test]
fn words_answer_the_question_and_words_that_do_not_fit_ask_again() {
    let mut case = Case::new();
    case.say("ship the lamp");
    case.ask(address());
    let step = case.say("floor: two");
    let out = awaited(&step).unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput);
    assert!(
        out.reply.as_deref().unwrap().contains("Floor must be a whole number"),
        "{:?}",
        out.reply
    );
    assert!(case.session.pending_elicitation().is_some());

    let step = case.say("decline");
    assert!(step.effects.iter().any(|e| matches!(
        e,
        Effect::AnswerElicitation { answer, .. } if answer.action == ElicitationAction::Decline
    )));
    assert_eq!(case.replayed(), case.session);
}

#[test]
fn a_call_issued_again_that_asks_another_question_replaces_the_unanswered_one() {
    let mut case = Case::new();
    case.say("ship the lamp");
    case.ask(address());
    case.answer(0, ElicitationAnswer::accept(json!({"city": "Oslo"})))
        .unwrap();
    let mut second = address();
    second.message = "Gift wrap?".into();
    case.ask(second.clone());
    let mut third = address();
    third.message = "Gift wrap, really?".into();
    let step = case.ask(third);
    let pending = awaited(&step).unwrap().pending_elicitation.clone().unwrap();
    assert_eq!(pending.question, 1, "the unanswered second question was replaced");
    assert_eq!(case.session.asked(&"call_1".into()).len(), 2);
    assert_eq!(case.replayed(), case.session);
}

fn report(case: &mut Case, report: crate::CallReport) -> Result<Step, StepError> {
    case.send(Input::ToolReported {
        run_id: "r1".into(),
        call_id: "call_1".into(),
        report,
        at: Timestamp(2),
    })
}

#[test]
fn a_calls_checkpoint_is_given_to_its_next_attempt_and_its_words_and_tokens_are_shown() {
    let mut case = Case::new();
    case.say("ship the lamp");
    let step = report(
        &mut case,
        crate::CallReport {
            checkpoint: Some(json!({"task": "t-7"})),
            progress: Some("The courier is on it.".into()),
            usage: Some(Usage::tokens(12, 5)),
        },
    )
    .unwrap();
    assert!(step.effects.is_empty(), "a report changes nothing the engine does");
    assert!(step.events.iter().any(|e| matches!(
        &e.kind,
        crate::EventKind::ToolProgress { message, tool, .. } if message == "The courier is on it." && tool.as_str() == "ship"
    )));
    assert_eq!(case.session.usage().input_tokens, 12);
    // After a crash the call is issued again, from where it said it stood.
    let again = case.replayed();
    let effects = again.pending_effects(&case.catalog);
    let checkpoint = effects.iter().find_map(|e| match e {
        Effect::CallTool { checkpoint, .. } => Some(checkpoint.clone()),
        _ => None,
    });
    assert_eq!(checkpoint, Some(Some(json!({"task": "t-7"}))));
    // A report for a call that is not running is refused.
    case.send(Input::ToolFinished {
        run_id: "r1".into(),
        call_id: "call_1".into(),
        outcome: ToolOutcome::Ok(json!("shipped")),
        duration_ms: 1,
        usage: None,
        at: Timestamp(3),
    })
    .unwrap();
    assert!(report(&mut case, crate::CallReport::progress("late")).is_err());
}

#[test]
fn a_remote_agents_question_takes_every_word_as_the_reply() {
    let question = Elicitation {
        server: "booking".into(),
        message: "Shall I book the 9:40?".into(),
        mode: ElicitationMode::Reply {
            asked: Some("m-1".into()),
        },
    };
    assert_eq!(question.text(), "The booking agent asks: Shall I book the 9:40?");
    let answer = ElicitationAnswer::from_words(" no ", &question).unwrap();
    assert_eq!(answer, ElicitationAnswer::accept(json!({"text": "no"})));
    assert!(ElicitationAnswer::from_words("  ", &question).is_err());
    assert!(question.check(Some(&json!({"text": "yes"}))).is_ok());
    assert!(question.check(Some(&json!({"city": "Oslo"}))).is_err());
    let mut other = question.clone();
    other.mode = ElicitationMode::Reply {
        asked: Some("m-2".into()),
    };
    assert_ne!(question.fingerprint(), other.fingerprint());
}
