//! Agents as tools, choices, read-only agents and their caps over `step`:
//! the child call's effect and its recovery, questions passed through the
//! parent, choice resolution, calls that write the same thing, usage roll-up.

use serde_json::{Value, json};

use crate::{
    AgentCall, AgentSpec, AgentTool, Cap, Catalog, CatalogError, Choice, Decision, Effect, EventKind, ForwardedAnswer,
    Input, PendingConfirmation, PlannerMode, Question, Route, Rules, RunPolicy, RunStatus, Session, StartRun, Step,
    Timestamp, ToolAnnotations, ToolErrorKind, ToolOutcome, ToolSpec, Usage,
};

fn write_tool(name: &str, writes: &str) -> ToolSpec {
    ToolSpec::new(
        name,
        "a tool",
        json!({"type": "object", "properties": {"text": {"type": "string"}, "contact_id": {"type": "integer"}}}),
    )
    .writes(writes)
}

/// A router that calls `notes` and `reminders` as tools, on rules.
fn catalog(policy: RunPolicy) -> Catalog {
    let notes = AgentSpec::new("notes")
        .description("Logs notes about contacts.")
        .tool("log_note")
        .writes("crm")
        .rules(
            Rules::new()
                .route(Route::tool("log_note", json!({"text": "{message}"})).keywords(["note"]))
                .answer("{result}"),
        );
    let reminders = AgentSpec::new("reminders")
        .description("Sets reminders.")
        .tool("set_reminder")
        .rules(
            Rules::new()
                .route(Route::tool("set_reminder", json!({"text": "{message}"})).keywords(["remind"]))
                .answer("{result}"),
        );
    let router = AgentSpec::new("router")
        .agent_tool(AgentTool::new("notes").prompt("Log a note: {request}"))
        .agent_tool(AgentTool::new("reminders"))
        .policy(policy)
        .rules(
            Rules::new()
                .every_match()
                .route(Route::tool("notes", json!({"request": "{part}"})).pattern(r"(?i)(?P<part>note[^,.]*)"))
                .route(Route::tool("reminders", json!({"request": "{part}"})).pattern(r"(?i)(?P<part>remind me[^,.]*)"))
                .answer("{result}"),
        );
    Catalog::builder()
        .tool(write_tool("log_note", "crm"))
        .tool(write_tool("set_reminder", "reminders"))
        .agent(notes)
        .agent(reminders)
        .agent(router)
        .build()
        .unwrap()
}

struct Case {
    session: Session,
    catalog: Catalog,
    now: u64,
}

impl Case {
    fn new(policy: RunPolicy) -> Self {
        Self {
            session: Session::new("s", "router"),
            catalog: catalog(policy),
            now: 0,
        }
    }

    fn send(&mut self, input: Input) -> Step {
        self.session.step(input, &self.catalog).unwrap()
    }

    fn say(&mut self, text: &str) -> Step {
        self.now += 1;
        self.send(Input::StartRun(StartRun::new(
            text,
            PlannerMode::Rules,
            Timestamp(self.now),
        )))
    }

    fn finish(&mut self, call: &AgentCall, reply: &str, usage: Option<Usage>) -> Step {
        self.now += 1;
        self.send(Input::ToolFinished {
            run_id: call.run_id.clone(),
            call_id: call.call.id.clone(),
            outcome: ToolOutcome::Ok(Value::String(reply.into())),
            duration_ms: 1,
            usage,
            at: Timestamp(self.now),
        })
    }

    fn ask(&mut self, call: &AgentCall, question: Question) -> Step {
        self.now += 1;
        self.send(Input::ToolAsked {
            run_id: call.run_id.clone(),
            call_id: call.call.id.clone(),
            question,
            usage: None,
            checkpoint: None,
            at: Timestamp(self.now),
        })
    }
}

fn agent_calls(step: &Step) -> Vec<AgentCall> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::CallAgent(call) => Some((**call).clone()),
            _ => None,
        })
        .collect()
}

fn reply(step: &Step) -> (RunStatus, String) {
    step.effects
        .iter()
        .find_map(|e| match e {
            Effect::Finish(out) | Effect::AwaitUser(out) => Some((out.status, out.reply.clone().unwrap_or_default())),
            _ => None,
        })
        .expect("an output")
}

#[test]
fn a_compound_statement_calls_each_agent_in_order_and_answers_once() {
    let mut case = Case::new(RunPolicy::default());
    let step = case.say("Took a note on the Acme call, remind me to call Mike on Tuesday");
    let calls = agent_calls(&step);
    assert_eq!(calls.len(), 2, "both children start at once: {:?}", step.effects);
    assert_eq!(calls[0].agent, "notes");
    assert_eq!(
        calls[0].prompt, "Log a note: note on the Acme call",
        "the tool's template"
    );
    assert_eq!(calls[1].agent, "reminders");
    assert_eq!(
        calls[1].prompt, "remind me to call Mike on Tuesday",
        "the request, as is"
    );
    assert_eq!(calls[0].session, "s:call_1", "the child's id comes from the call's");
    assert_eq!(calls[0].parent.depth, 1);
    let started: Vec<_> = step
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ChildStarted { agent, child, .. } => Some((agent.to_string(), child.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            ("notes".to_string(), "s:call_1".to_string()),
            ("reminders".into(), "s:call_2".into())
        ]
    );

    // The second finishes first; the answer still follows the statement.
    let usage = Usage::tokens(100, 20);
    case.finish(&calls[1], "Reminder set for Tuesday.", Some(usage));
    let step = case.finish(&calls[0], "Logged the Acme call.", Some(usage));
    assert_eq!(
        reply(&step),
        (
            RunStatus::Completed,
            "Logged the Acme call. Reminder set for Tuesday.".into()
        )
    );
    let Some(Effect::Finish(out)) = step.effects.last() else {
        panic!("finished")
    };
    assert_eq!(
        (out.usage.input_tokens, out.usage.output_tokens),
        (200, 40),
        "children's tokens roll up"
    );
    assert_eq!(case.session.usage().input_tokens, 200);
}

#[test]
fn a_finished_child_is_not_started_again_after_a_replay() {
    let mut case = Case::new(RunPolicy::default());
    let step = case.say("note: the proposal went out");
    let first = agent_calls(&step);
    // What an engine issues again after rebuilding the session: the same call.
    let again: Vec<AgentCall> = case
        .session
        .pending_effects(&case.catalog)
        .into_iter()
        .filter_map(|e| match e {
            Effect::CallAgent(call) => Some(*call),
            _ => None,
        })
        .collect();
    assert_eq!(again, first, "same child session, prompt and key");
    let json = serde_json::to_value(&case.session).unwrap();
    let back: Session = serde_json::from_value(json).unwrap();
    assert_eq!(back, case.session);
}

#[test]
fn calls_that_write_the_same_thing_run_one_after_another() {
    let mut case = Case::new(RunPolicy::default());
    let step = case.say("note about Acme, note about Globex");
    let calls = agent_calls(&step);
    assert_eq!(
        calls.len(),
        1,
        "the second note waits for the first: {:?}",
        step.effects
    );
    let step = case.finish(&calls[0], "Noted Acme.", None);
    let second = agent_calls(&step);
    assert_eq!(second.len(), 1, "then the second starts");
    assert_eq!(second[0].prompt, "Log a note: note about Globex");
    let step = case.finish(&second[0], "Noted Globex.", None);
    assert_eq!(reply(&step).1, "Noted Acme. Noted Globex.");
}

#[test]
fn a_childs_confirmation_is_asked_through_the_parent_and_the_answer_passed_on() {
    let mut case = Case::new(RunPolicy::default());
    let step = case.say("note: delete the old contact");
    let call = agent_calls(&step).remove(0);
    let child_pending = PendingConfirmation {
        run_id: "r1".into(),
        call_id: "call_1".into(),
        tool: "log_note".into(),
        arguments: json!({"text": "delete"}),
        fingerprint: "fp-child".into(),
        message: "I'll log 'delete'. Proceed?".into(),
        session: None,
    };
    let step = case.ask(
        &call,
        Question::ChildConfirmation {
            pending: child_pending.clone(),
            session: call.session.clone(),
        },
    );
    let (status, _) = reply(&step);
    assert_eq!(status, RunStatus::AwaitingConfirmation);
    let pending = case.session.pending_confirmation().unwrap();
    assert_eq!(pending.message, child_pending.message);
    assert_eq!(pending.session.as_ref(), Some(&call.session), "names the child");

    // A text answer goes to the child as is.
    case.now += 1;
    let step = case.send(Input::StartRun(StartRun::new(
        "yes",
        PlannerMode::Rules,
        Timestamp(case.now),
    )));
    let forwarded = agent_calls(&step).remove(0);
    let answer = forwarded.answer.clone().unwrap();
    assert_eq!(answer.call_id, "call_1");
    assert_eq!(answer.answer, ForwardedAnswer::Text { text: "yes".into() });
    assert_eq!(forwarded.session, call.session, "the same child");
    assert!(
        !step
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ChildStarted { .. })),
        "no new child"
    );
    let step = case.finish(&forwarded, "Logged.", None);
    assert_eq!(reply(&step), (RunStatus::Completed, "Logged.".into()));

    // A structured confirmation quoting the child's call is passed on too.
    let step = case.say("note: again");
    let call = agent_calls(&step).remove(0);
    case.ask(
        &call,
        Question::ChildConfirmation {
            pending: child_pending.clone(),
            session: call.session.clone(),
        },
    );
    case.now += 1;
    let wrong = case.session.clone().step(
        Input::Confirm(crate::Confirmation {
            run_id: case.session.active_run().cloned().unwrap(),
            call_id: "call_1".into(),
            fingerprint: "not-it".into(),
            decision: Decision::Approve,
            at: Timestamp(case.now),
        }),
        &case.catalog,
    );
    assert!(wrong.is_err(), "the child's fingerprint is checked");
    let step = case.send(Input::Confirm(crate::Confirmation {
        run_id: case.session.active_run().cloned().unwrap(),
        call_id: "call_1".into(),
        fingerprint: "fp-child".into(),
        decision: Decision::Approve,
        at: Timestamp(case.now),
    }));
    let forwarded = agent_calls(&step).remove(0);
    assert_eq!(
        forwarded.answer.unwrap().answer,
        ForwardedAnswer::Decision {
            fingerprint: "fp-child".into(),
            decision: Decision::Approve
        }
    );
}

#[test]
fn a_childs_running_question_is_asked_through_the_parent_and_the_answer_passed_on() {
    let mut case = Case::new(RunPolicy::default());
    let step = case.say("note: the new address");
    let call = agent_calls(&step).remove(0);
    let child_pending = crate::PendingElicitation {
        run_id: "r1".into(),
        call_id: "call_1".into(),
        question: 0,
        elicitation: crate::Elicitation {
            server: "crm".into(),
            message: "Which city?".into(),
            mode: crate::ElicitationMode::Form {
                schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            },
        },
        text: "Which city?".into(),
        session: None,
    };
    let question = Question::ChildElicitation {
        pending: child_pending.clone(),
        session: call.session.clone(),
    };
    let step = case.ask(&call, question.clone());
    let (status, text) = reply(&step);
    assert_eq!(status, RunStatus::AwaitingInput);
    assert_eq!(text, "Which city?");
    let pending = case.session.pending_elicitation().unwrap();
    assert_eq!(pending.call_id, "call_1", "the child's call");
    assert_eq!(pending.session.as_ref(), Some(&call.session), "names the child");
    assert!(
        step.events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::ElicitationRequested { pending: p } if p == &pending)),
        "shown in the parent's stream"
    );
    assert!(case.session.pending_confirmation().is_none() && case.session.pending_choice().is_none());

    // Words go to the child as they are (it reads them against its form).
    case.now += 1;
    let step = case.send(Input::StartRun(StartRun::new(
        "Lisbon",
        PlannerMode::Rules,
        Timestamp(case.now),
    )));
    let forwarded = agent_calls(&step).remove(0);
    assert_eq!(
        forwarded.answer.clone().unwrap().answer,
        ForwardedAnswer::Text { text: "Lisbon".into() }
    );
    let step = case.finish(&forwarded, "Noted: Lisbon.", None);
    assert_eq!(reply(&step), (RunStatus::Completed, "Noted: Lisbon.".into()));

    // A structured answer is checked against the child's form, then passed on.
    let step = case.say("note: again");
    let call = agent_calls(&step).remove(0);
    case.ask(
        &call,
        Question::ChildElicitation {
            pending: child_pending.clone(),
            session: call.session.clone(),
        },
    );
    let run_id = case.session.active_run().cloned().unwrap();
    let answered = |call_id: &str, question: u32, content: Value| Input::ElicitationAnswered {
        run_id: run_id.clone(),
        call_id: call_id.into(),
        question,
        answer: crate::ElicitationAnswer::accept(content),
        at: Timestamp(100),
    };
    let refused = case
        .session
        .clone()
        .step(answered("call_1", 0, json!({"town": 3})), &case.catalog);
    assert!(
        matches!(refused, Err(crate::StepError::AnswerRefused { .. })),
        "the child's form is checked here: {refused:?}"
    );
    let wrong = case
        .session
        .clone()
        .step(answered("call_9", 0, json!({"city": "Porto"})), &case.catalog);
    assert!(
        matches!(wrong, Err(crate::StepError::NoSuchQuestion { .. })),
        "{wrong:?}"
    );
    let wrong = case
        .session
        .clone()
        .step(answered("call_1", 1, json!({"city": "Porto"})), &case.catalog);
    assert!(
        matches!(wrong, Err(crate::StepError::NoSuchQuestion { .. })),
        "{wrong:?}"
    );
    let step = case.send(answered("call_1", 0, json!({"city": "Porto"})));
    assert!(
        step.events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::ElicitationAnswered { call_id, .. } if call_id == "call_1")),
        "the answer is shown in the parent's stream"
    );
    let forwarded = agent_calls(&step).remove(0);
    assert_eq!(forwarded.session, call.session, "the same child");
    assert_eq!(
        forwarded.answer.unwrap(),
        crate::Forward {
            call_id: "call_1".into(),
            answer: ForwardedAnswer::Elicitation {
                question: 0,
                answer: crate::ElicitationAnswer::accept(json!({"city": "Porto"})),
            },
        }
    );
    assert!(case.session.pending_elicitation().is_none(), "nothing asked any more");
}

fn johns() -> Choice {
    Choice::new("Which John do you mean?", "contact_id")
        .option(4, "John Smith (Acme, john@acme.com)")
        .option(9, "John Park (Globex, jpark@globex.com)")
}

/// The `notes` agent on its own, its tool asking which John.
fn asked_which_john() -> (Case, Step) {
    let mut case = Case::new(RunPolicy::default());
    case.session = Session::new("n", "notes");
    let step = case.say("note: call with John about the renewal");
    let Some(Effect::CallTool { call, run_id, .. }) =
        step.effects.iter().find(|e| matches!(e, Effect::CallTool { .. }))
    else {
        panic!("a tool call")
    };
    let (call, run_id) = (call.clone(), run_id.clone());
    case.now += 1;
    let step = case.send(Input::ToolAsked {
        run_id,
        call_id: call.id,
        question: Question::Choice { choice: johns() },
        usage: None,
        checkpoint: None,
        at: Timestamp(case.now),
    });
    (case, step)
}

#[test]
fn a_choice_parks_the_run_and_a_number_fills_the_arguments_and_runs_the_call_again() {
    let (mut case, step) = asked_which_john();
    let (status, text) = reply(&step);
    assert_eq!(status, RunStatus::AwaitingChoice);
    assert_eq!(
        text,
        "Which John do you mean?\n1. John Smith (Acme, john@acme.com)\n2. John Park (Globex, jpark@globex.com)"
    );
    assert!(
        step.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ChoiceRequested { .. }))
    );
    assert_eq!(case.session.pending_choice().unwrap().choice, johns());

    for answer in ["2", "the second one", "John Park"] {
        let mut again = Case {
            session: case.session.clone(),
            catalog: case.catalog.clone(),
            now: case.now,
        };
        let step = again.say(answer);
        let Some(Effect::CallTool { call, key, .. }) =
            step.effects.iter().find(|e| matches!(e, Effect::CallTool { .. }))
        else {
            panic!("{answer:?}: the call runs again: {:?}", step.effects)
        };
        assert_eq!(call.arguments["contact_id"], json!(9), "{answer:?}");
        assert_eq!(call.id, "call_1", "the same call");
        assert!(key.as_str().ends_with("#1"), "a new attempt's key: {key}");
        assert!(step.events.iter().any(|e| matches!(
            &e.kind,
            EventKind::ChoiceResolved { chosen: Some(id), .. } if id == &json!(9)
        )));
    }
    // A label picks too.
    let step = case.say("John Smith (Acme, john@acme.com)");
    assert!(
        step.effects
            .iter()
            .any(|e| matches!(e, Effect::CallTool { call, .. } if call.arguments["contact_id"] == json!(4)))
    );
}

#[test]
fn an_answer_that_matches_no_option_goes_to_the_planner_with_the_options() {
    let (mut case, _) = asked_which_john();
    let step = case.say("neither, I meant Jon Stewart");
    assert!(step.effects.iter().all(|e| !matches!(e, Effect::CallTool { .. })));
    let failed = case.session.blackboard().log.last().unwrap();
    let ToolOutcome::Error(error) = &failed.outcome else {
        panic!("an error for the planner")
    };
    assert_eq!(error.kind, ToolErrorKind::MissingInformation);
    assert!(
        error.message.contains("1. John Smith (Acme, john@acme.com)"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("neither, I meant Jon Stewart"),
        "{}",
        error.message
    );
    assert!(
        case.session.active_run().is_none(),
        "the rules answered: {:?}",
        reply(&step)
    );
}

#[test]
fn a_childs_choice_is_asked_through_the_parent() {
    let mut case = Case::new(RunPolicy::default());
    let step = case.say("note: call with John");
    let call = agent_calls(&step).remove(0);
    let pending = crate::PendingChoice {
        run_id: "r1".into(),
        call_id: "call_1".into(),
        choice: johns(),
        session: None,
    };
    let step = case.ask(
        &call,
        Question::ChildChoice {
            pending,
            session: call.session.clone(),
        },
    );
    assert_eq!(reply(&step).0, RunStatus::AwaitingChoice);
    assert_eq!(
        case.session.pending_choice().unwrap().session.as_ref(),
        Some(&call.session)
    );
    let step = case.say("2");
    let forwarded = agent_calls(&step).remove(0);
    assert_eq!(
        forwarded.answer.unwrap().answer,
        ForwardedAnswer::Text { text: "2".into() }
    );
}

#[test]
fn depth_and_agent_call_caps_stop_the_call_with_an_event() {
    let mut case = Case::new(RunPolicy {
        max_agent_calls: 1,
        ..RunPolicy::default()
    });
    let step = case.say("note about Acme, remind me to call");
    assert_eq!(agent_calls(&step).len(), 1, "one agent call only");
    assert!(
        step.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::CapReached { cap: Cap::AgentCalls }))
    );
    let child = &agent_calls(&step)[0];
    assert_eq!(child.parent.agent_calls, 0, "nothing left for the child's tree");

    let mut deep = Case::new(RunPolicy {
        max_depth: 0,
        ..RunPolicy::default()
    });
    let step = deep.say("note about Acme");
    assert!(agent_calls(&step).is_empty());
    assert!(
        step.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::CapReached { cap: Cap::Depth }))
    );
}

#[test]
fn a_read_only_agent_refuses_writing_tools_when_built_and_when_called() {
    let write = ToolSpec::new("update", "a tool", json!({"type": "object"}));
    let read = ToolSpec::new("search", "a tool", json!({"type": "object"})).annotations(ToolAnnotations {
        read_only: true,
        ..ToolAnnotations::default()
    });
    let refused = Catalog::builder()
        .tool(write.clone())
        .tool(read.clone())
        .agent(AgentSpec::new("query").read_only().tool("search").tool("update"))
        .build()
        .unwrap_err();
    assert_eq!(
        refused,
        CatalogError::NotReadOnly {
            agent: "query".into(),
            tool: "update".into()
        }
    );
    assert!(
        refused
            .to_string()
            .contains("is read-only, but its tool update may change things")
    );

    // Through a toolset: the writing tool is left out, and refused if called.
    let catalog = Catalog::builder()
        .toolset("crm", [write, read])
        .agent(
            AgentSpec::new("query").read_only().toolset("crm").rules(
                Rules::new()
                    .route(Route::tool("search", json!({})).keywords(["find"]))
                    .answer("{result}"),
            ),
        )
        .build()
        .unwrap();
    let resolved = catalog.agent(&"query".into()).unwrap();
    assert_eq!(resolved.tools, ["search"]);
    let mut session = Session::new("q", "query");
    let step = session
        .step(
            Input::StartRun(StartRun::new("hi", PlannerMode::Model, Timestamp(1))),
            &catalog,
        )
        .unwrap();
    let Some(Effect::CallModel { run_id, call, .. }) = step.effects.first().cloned() else {
        panic!("a model call")
    };
    let step = session
        .step(
            Input::ModelReplied {
                run_id,
                call,
                reply: crate::ModelReply {
                    text: String::new(),
                    tool_calls: vec![crate::ModelToolCall {
                        name: "update".into(),
                        arguments: "{}".into(),
                    }],
                    usage: None,
                    finish_reason: None,
                    guardrail: None,
                },
                at: Timestamp(2),
            },
            &catalog,
        )
        .unwrap();
    assert!(step.effects.iter().all(|e| !matches!(e, Effect::CallTool { .. })));
    let refused = session.blackboard().log.last().unwrap();
    assert!(
        matches!(&refused.outcome, ToolOutcome::Error(e) if e.kind == ToolErrorKind::UnknownTool || e.kind == ToolErrorKind::NotAllowed),
        "{:?}",
        refused.outcome
    );
}

#[test]
fn agents_called_as_tools_are_not_offered_by_the_hub() {
    let catalog = catalog(RunPolicy::default());
    assert_eq!(catalog.hub(), None, "one offered agent: no hub");
    assert_eq!(
        catalog.default_agent().map(|a| a.to_string()).as_deref(),
        Some("router")
    );
}
