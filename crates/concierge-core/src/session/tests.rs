use serde_json::{Value, json};

use crate::{
    AgentSpec, CallId, Cap, Catalog, Confirmation, Decision as UserDecision, Effect, Event, EventKind, IdempotencyKey,
    Input, Message, ModelReply, ModelRequest, PendingConfirmation, Phase, PlannerMode, Route, Rules, RunId, RunOutput,
    RunPolicy, RunStatus, Session, StartRun, Step, StepError, Timestamp, ToolAnnotations, ToolCall, ToolChoice,
    ToolError, ToolErrorKind, ToolOutcome, ToolSpec, Usage,
};

fn schema_ab() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a"]
    })
}

fn catalog() -> Catalog {
    let add = ToolSpec::new("add", "Adds a and b.", schema_ab()).provides("sum");
    let lookup = ToolSpec::new("lookup", "Looks a value up.", json!({"type": "object"})).annotations(ToolAnnotations {
        read_only: true,
        cacheable: true,
        ..ToolAnnotations::default()
    });
    let pay = ToolSpec::new("pay", "Pays.", json!({"type": "object"})).annotations(ToolAnnotations {
        requires_confirmation: true,
        ..ToolAnnotations::default()
    });
    let profile = ToolSpec::new("profile", "Needs a user id.", json!({"type": "object"})).requires("user_id");
    let rules = Rules::new()
        .route(
            Route::tool("add", json!({"a": "{a}", "b": "{b}"}))
                .pattern(r"(?P<a>-?\d+(?:\.\d+)?)\s*\+\s*(?P<b>-?\d+(?:\.\d+)?)"),
        )
        .route(Route::handoff("helper").keywords(["help"]))
        .answer("{result.formula}")
        .fallback("Try: calculate 5 + 3");
    Catalog::builder()
        .tool(add)
        .tool(lookup)
        .tool(pay)
        .tool(profile)
        .agent(
            AgentSpec::new("main")
                .instructions("You add numbers.")
                .tool("add")
                .tool("lookup")
                .tool("pay")
                .tool("profile")
                .handoff("helper")
                .rules(rules),
        )
        .agent(
            AgentSpec::new("helper")
                .instructions("You help.")
                .tool("lookup")
                .rules(Rules::new().route(Route::reply("helper here: {message}").keywords(["help"]))),
        )
        // These tests are about one agent's runs; the hub's are in `hub_tests`.
        .mode(crate::Mode::Single)
        .build()
        .unwrap()
}

/// What a step (or `pending_effects`) produced, for the helpers below.
trait Out {
    fn effects(&self) -> &[Effect];
    fn events(&self) -> &[Event];
}

impl Out for Step {
    fn effects(&self) -> &[Effect] {
        &self.effects
    }
    fn events(&self) -> &[Event] {
        &self.events
    }
}

impl Out for Vec<Effect> {
    fn effects(&self) -> &[Effect] {
        self
    }
    fn events(&self) -> &[Event] {
        &[]
    }
}

/// Drives one session, recording every accepted input (the journal).
struct Harness {
    session: Session,
    catalog: Catalog,
    now: u64,
    journal: Vec<Input>,
}

impl Harness {
    fn new() -> Self {
        Self::with_catalog(catalog())
    }

    fn with_catalog(catalog: Catalog) -> Self {
        Self {
            session: Session::new("s1", "main"),
            catalog,
            now: 1_000,
            journal: Vec::new(),
        }
    }

    fn at(&mut self) -> Timestamp {
        self.now += 10;
        Timestamp(self.now)
    }

    fn send(&mut self, input: Input) -> Step {
        self.try_send(input).unwrap()
    }

    fn try_send(&mut self, input: Input) -> Result<Step, StepError> {
        let before = self.session.clone();
        let result = self.session.step(input.clone(), &self.catalog);
        match &result {
            Ok(_) => self.journal.push(input),
            Err(_) => assert_eq!(self.session, before, "a rejected input changed the session"),
        }
        result
    }

    fn start(&mut self, text: &str, mode: PlannerMode) -> Step {
        let at = self.at();
        let run = format!("r{}", self.session.runs_started() + 1);
        self.send(Input::StartRun(StartRun::new(text, mode, at).run_id(run)))
    }

    fn start_with_policy(&mut self, text: &str, policy: RunPolicy) -> Step {
        let at = self.at();
        let mut start = StartRun::new(text, PlannerMode::Model, at).run_id("r1");
        start.policy = Some(policy);
        self.send(Input::StartRun(start))
    }

    fn run_id(&self) -> RunId {
        self.session.active_run().cloned().unwrap()
    }

    fn reply(&mut self, effects: &impl Out, reply: ModelReply) -> Step {
        let (run_id, call, _) = model_call(effects);
        let at = self.at();
        self.send(Input::ModelReplied {
            run_id,
            call,
            reply,
            at,
        })
    }

    fn finish_tool(&mut self, call_id: &CallId, outcome: ToolOutcome) -> Step {
        let at = self.at();
        let run_id = self.run_id();
        self.send(Input::ToolFinished {
            run_id,
            call_id: call_id.clone(),
            outcome,
            duration_ms: 3,
            usage: None,
            at,
        })
    }

    fn confirm(&mut self, call_id: &CallId, fingerprint: &str, decision: UserDecision) -> Result<Step, StepError> {
        let at = self.at();
        let run_id = self.run_id();
        self.try_send(Input::Confirm(Confirmation {
            run_id,
            call_id: call_id.clone(),
            fingerprint: fingerprint.into(),
            decision,
            at,
        }))
    }
}

fn model_call(effects: &impl Out) -> (RunId, u32, ModelRequest) {
    effects
        .effects()
        .iter()
        .find_map(|e| match e {
            Effect::CallModel {
                run_id, call, request, ..
            } => Some((run_id.clone(), *call, request.clone())),
            _ => None,
        })
        .expect("expected a model call")
}

fn tool_calls(effects: &impl Out) -> Vec<(ToolCall, IdempotencyKey)> {
    effects
        .effects()
        .iter()
        .filter_map(|e| match e {
            Effect::CallTool { call, key, .. } => Some((call.clone(), key.clone())),
            _ => None,
        })
        .collect()
}

fn events(effects: &impl Out) -> Vec<EventKind> {
    effects.events().iter().map(|event| event.kind.clone()).collect()
}

fn phases(effects: &impl Out) -> Vec<Phase> {
    events(effects)
        .into_iter()
        .filter_map(|k| match k {
            EventKind::PhaseChanged { to, .. } => Some(to),
            _ => None,
        })
        .collect()
}

fn finished(effects: &impl Out) -> RunOutput {
    effects
        .effects()
        .iter()
        .find_map(|e| match e {
            Effect::Finish(out) => Some(out.clone()),
            _ => None,
        })
        .expect("expected the run to finish")
}

fn parked(effects: &impl Out) -> RunOutput {
    effects
        .effects()
        .iter()
        .find_map(|e| match e {
            Effect::AwaitUser(out) => Some(out.clone()),
            _ => None,
        })
        .expect("expected the run to park")
}

fn caps(effects: &impl Out) -> Vec<Cap> {
    events(effects)
        .into_iter()
        .filter_map(|k| match k {
            EventKind::CapReached { cap } => Some(cap),
            _ => None,
        })
        .collect()
}

fn ok(value: Value) -> ToolOutcome {
    ToolOutcome::Ok(value)
}

fn add_call(a: i64, b: i64) -> ModelReply {
    ModelReply::tool_call("add", json!({"a": a, "b": b}).to_string())
}

#[test]
fn tool_call_then_result_then_answer() {
    let mut h = Harness::new();
    let e1 = h.start("what is 2 + 3?", PlannerMode::Model);
    assert_eq!(phases(&e1), [Phase::Planning]);
    let (_, call, request) = model_call(&e1);
    assert_eq!(call, 1);
    assert!(request.system.contains("You add numbers."));
    assert_eq!(request.messages, vec![Message::user("what is 2 + 3?")]);
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "lookup", "pay", "profile", "transfer_to_helper"]);
    assert_eq!(request.tool_choice, ToolChoice::Auto);

    let e2 = h.reply(&e1, add_call(2, 3).with_usage(100, 10));
    assert_eq!(phases(&e2), [Phase::ToolSelection, Phase::ToolExecution]);
    let calls = tool_calls(&e2);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0.name, "add");
    assert_eq!(calls[0].0.arguments, json!({"a": 2, "b": 3}));
    assert_eq!(calls[0].1.as_str(), "s1/r1/call_1");

    let e3 = h.finish_tool(&calls[0].0.id, ok(json!({"sum": 5})));
    assert_eq!(phases(&e3), [Phase::Analysis]);
    let (_, call, request) = model_call(&e3);
    assert_eq!(call, 2);
    assert_eq!(request.messages.len(), 3, "user, assistant tool call, tool result");
    assert_eq!(h.session.blackboard().available.get("sum"), Some(&json!(5)));

    let e4 = h.reply(&e3, ModelReply::text("2 + 3 = 5").with_usage(120, 8));
    assert_eq!(phases(&e4), [Phase::Synthesis, Phase::Completion]);
    let out = finished(&e4);
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("2 + 3 = 5"));
    assert_eq!(out.iterations, 2);
    assert_eq!(out.tool_executions.len(), 1);
    assert!(out.tool_executions[0].success());
    assert_eq!(out.confidence, 0.9);
    assert_eq!(
        out.usage,
        Usage::tokens(220, 18),
        "tokens add up; the replies had no price"
    );
    assert!(h.session.active_run().is_none());
    assert_eq!(h.session.history().len(), 4);
    assert_eq!(h.session.last_output(), Some(&out));
}

#[test]
fn events_are_numbered_without_gaps() {
    let mut h = Harness::new();
    let mut all = h.start("2 + 3", PlannerMode::Rules);
    let call = tool_calls(&all)[0].0.clone();
    all.events
        .extend(h.finish_tool(&call.id, ok(json!({"formula": "2 + 3 = 5"}))).events);
    let seqs: Vec<u64> = all.events.iter().map(|ev| ev.seq).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected);
    assert_eq!(h.session.last_seq(), seqs.len() as u64);
}

#[test]
fn invalid_json_arguments_go_back_to_the_model_which_corrects_them() {
    let mut h = Harness::new();
    let e1 = h.start("add 2 and 3", PlannerMode::Model);
    let e2 = h.reply(&e1, ModelReply::tool_call("add", "{a: 2,"));
    assert!(tool_calls(&e2).is_empty(), "nothing runs with broken arguments");
    let finished_events: Vec<EventKind> = events(&e2)
        .into_iter()
        .filter(|k| matches!(k, EventKind::ToolFinished { .. }))
        .collect();
    let EventKind::ToolFinished {
        ok: success, outcome, ..
    } = &finished_events[0]
    else {
        unreachable!()
    };
    assert!(!success);
    let ToolOutcome::Error(error) = outcome else {
        unreachable!()
    };
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
    let (_, _, request) = model_call(&e2);
    let Message::Tool { outcome, .. } = request.messages.last().unwrap() else {
        panic!("the model must see the tool error")
    };
    assert!(outcome.to_model_text().contains("not valid JSON"));

    let e3 = h.reply(&e2, add_call(2, 3));
    let calls = tool_calls(&e3);
    assert_eq!(calls.len(), 1);
    let e4 = h.finish_tool(&calls[0].0.id, ok(json!(5)));
    let e5 = h.reply(&e4, ModelReply::text("5"));
    let out = finished(&e5);
    assert_eq!(out.tool_executions.len(), 2);
    assert_eq!(out.confidence, 0.67);
}

#[test]
fn a_schema_error_from_the_engine_is_shown_to_the_model_and_corrected() {
    let mut h = Harness::new();
    let e1 = h.start("add 2 and x", PlannerMode::Model);
    let e2 = h.reply(&e1, ModelReply::tool_call("add", r#"{"a": "x"}"#));
    let call = tool_calls(&e2)[0].0.clone();
    let error = ToolError::invalid_arguments(
        "the arguments do not match the schema",
        vec![crate::FieldError {
            field: "a".into(),
            problem: "\"x\" is not of type \"number\"".into(),
        }],
    );
    let e3 = h.finish_tool(&call.id, ToolOutcome::Error(error));
    let (_, _, request) = model_call(&e3);
    let text = request.messages.last().unwrap().text();
    assert!(
        text.contains("invalid_arguments") && text.contains("\"field\":\"a\""),
        "{text}"
    );
    let e4 = h.reply(&e3, add_call(2, 0));
    assert_eq!(tool_calls(&e4).len(), 1);
}

#[test]
fn unknown_tool_is_reported_with_the_tools_that_exist() {
    let mut h = Harness::new();
    let e1 = h.start("hi", PlannerMode::Model);
    let e2 = h.reply(&e1, ModelReply::tool_call("multiply", "{}"));
    assert!(tool_calls(&e2).is_empty());
    let (_, _, request) = model_call(&e2);
    let text = request.messages.last().unwrap().text();
    assert!(text.contains("unknown_tool"), "{text}");
    assert!(text.contains("add, lookup, pay, profile, transfer_to_helper"), "{text}");
}

#[test]
fn iteration_cap_moves_to_synthesis_without_tools() {
    let mut h = Harness::new();
    let policy = RunPolicy {
        max_iterations: 2,
        ..RunPolicy::default()
    };
    let mut effects = h.start_with_policy("loop", policy);
    for i in 0..2 {
        effects = h.reply(&effects, add_call(i, 1));
        let call = tool_calls(&effects)[0].0.clone();
        effects = h.finish_tool(&call.id, ok(json!(i + 1)));
    }
    assert_eq!(caps(&effects), [Cap::Iterations]);
    assert!(phases(&effects).ends_with(&[Phase::Synthesis]));
    let (_, _, request) = model_call(&effects);
    assert_eq!(request.tool_choice, ToolChoice::None);
    assert!(request.system.contains("the iteration limit"));
    // Even if the model calls a tool now, the run answers.
    let mut reply = ModelReply::text("I got 2 so far.");
    reply.tool_calls = add_call(1, 1).tool_calls;
    let last = h.reply(&effects, reply);
    assert!(tool_calls(&last).is_empty());
    let out = finished(&last);
    assert_eq!(out.cap, Some(Cap::Iterations));
    assert_eq!(out.reply.as_deref(), Some("I got 2 so far."));
    assert_eq!(out.iterations, 2);
    assert!(out.confidence < 0.9);
}

#[test]
fn tool_call_cap_refuses_extra_calls_and_synthesizes() {
    let mut h = Harness::new();
    let policy = RunPolicy {
        max_tool_calls: 1,
        ..RunPolicy::default()
    };
    let e1 = h.start_with_policy("two sums", policy);
    let mut reply = add_call(1, 2);
    reply.tool_calls.extend(add_call(3, 4).tool_calls);
    let e2 = h.reply(&e1, reply);
    assert_eq!(tool_calls(&e2).len(), 1, "only one call may run");
    assert_eq!(caps(&e2), [Cap::ToolCalls]);
    let call = tool_calls(&e2)[0].0.clone();
    let e3 = h.finish_tool(&call.id, ok(json!(3)));
    let (_, _, request) = model_call(&e3);
    assert_eq!(request.tool_choice, ToolChoice::None);
    let out = finished(&h.reply(&e3, ModelReply::text("1+2=3; 3+4 not computed")));
    assert_eq!(out.cap, Some(Cap::ToolCalls));
    let refused = &out.tool_executions[0];
    assert!(matches!(&refused.outcome, ToolOutcome::Error(e) if e.kind == ToolErrorKind::LimitReached));
}

#[test]
fn consecutive_failures_cap() {
    let mut h = Harness::new();
    let policy = RunPolicy {
        max_consecutive_tool_failures: 2,
        ..RunPolicy::default()
    };
    let mut effects = h.start_with_policy("fail", policy);
    for _ in 0..2 {
        effects = h.reply(&effects, add_call(1, 1));
        let call = tool_calls(&effects)[0].0.clone();
        effects = h.finish_tool(&call.id, ToolOutcome::Error(ToolError::failed("backend down")));
    }
    assert_eq!(caps(&effects), [Cap::ConsecutiveToolFailures]);
    let out = finished(&h.reply(&effects, ModelReply::text("The backend is down.")));
    assert_eq!(out.cap, Some(Cap::ConsecutiveToolFailures));
    assert_eq!(
        out.status,
        RunStatus::NeedsInput,
        "a cap with nothing done needs the person"
    );
}

#[test]
fn a_success_resets_the_failure_count() {
    let mut h = Harness::new();
    let policy = RunPolicy {
        max_consecutive_tool_failures: 2,
        ..RunPolicy::default()
    };
    let mut effects = h.start_with_policy("flaky", policy);
    for result in [Err(()), Ok(()), Err(())] {
        effects = h.reply(&effects, add_call(1, 1));
        let call = tool_calls(&effects)[0].0.clone();
        let outcome = match result {
            Ok(()) => ok(json!(2)),
            Err(()) => ToolOutcome::Error(ToolError::failed("flaky")),
        };
        effects = h.finish_tool(&call.id, outcome);
        assert!(caps(&effects).is_empty());
    }
}

#[test]
fn time_budget_abandons_running_tools_and_synthesizes() {
    let mut h = Harness::new();
    let policy = RunPolicy {
        time_budget_ms: Some(1_000),
        ..RunPolicy::default()
    };
    let e1 = h.start_with_policy("slow", policy);
    let wake = e1
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::WakeAt { at, .. } => Some(*at),
            _ => None,
        })
        .unwrap();
    let e2 = h.reply(&e1, add_call(1, 1));
    let call = tool_calls(&e2)[0].0.clone();
    // A tick before the deadline does nothing (and is not journaled).
    let early = Timestamp(wake.0 - 1);
    assert_eq!(h.try_send(Input::Tick { at: early }), Err(StepError::Idle));
    let e3 = h.send(Input::Tick { at: wake });
    assert_eq!(caps(&e3), [Cap::TimeBudget]);
    assert_eq!(phases(&e3), [Phase::Analysis, Phase::Synthesis]);
    // The late result is dropped.
    let late = h.try_send(Input::ToolFinished {
        run_id: "r1".into(),
        call_id: call.id.clone(),
        outcome: ok(json!(2)),
        duration_ms: 5_000,
        usage: None,
        at: Timestamp(wake.0 + 10),
    });
    assert!(matches!(late, Err(StepError::Unexpected { .. })));
    let out = finished(&h.reply(&e3, ModelReply::text("Too slow.")));
    assert_eq!(out.cap, Some(Cap::TimeBudget));
    assert!(matches!(&out.tool_executions[0].outcome, ToolOutcome::Error(e) if e.kind == ToolErrorKind::Timeout));
}

fn park_pay(h: &mut Harness) -> (Step, PendingConfirmation) {
    let e1 = h.start("pay the bill", PlannerMode::Model);
    let e2 = h.reply(&e1, ModelReply::tool_call("pay", r#"{"amount": 10}"#));
    assert!(tool_calls(&e2).is_empty(), "a call needing confirmation does not run");
    assert_eq!(phases(&e2), [Phase::ToolSelection, Phase::Clarifying]);
    let out = parked(&e2);
    assert_eq!(out.status, RunStatus::AwaitingConfirmation);
    let pending = out.pending_confirmation.unwrap();
    assert_eq!(pending.tool, "pay");
    assert_eq!(pending.arguments, json!({"amount": 10}));
    assert_eq!(h.session.pending_confirmation(), Some(pending.clone()));
    (e2, pending)
}

#[test]
fn confirmation_approved_runs_the_exact_call() {
    let mut h = Harness::new();
    let (_, pending) = park_pay(&mut h);
    let e3 = h
        .confirm(&pending.call_id, &pending.fingerprint, UserDecision::Approve)
        .unwrap();
    assert_eq!(phases(&e3), [Phase::ToolExecution]);
    let calls = tool_calls(&e3);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0.id, pending.call_id);
    assert_eq!(calls[0].0.arguments, json!({"amount": 10}));
    let e4 = h.finish_tool(&pending.call_id, ok(json!("paid")));
    let out = finished(&h.reply(&e4, ModelReply::text("Paid.")));
    assert_eq!(out.status, RunStatus::Completed);
    assert!(out.tool_executions[0].success());
}

#[test]
fn confirmation_denied_becomes_a_declined_result() {
    let mut h = Harness::new();
    let (_, pending) = park_pay(&mut h);
    let e3 = h
        .confirm(
            &pending.call_id,
            &pending.fingerprint,
            UserDecision::Deny {
                reason: Some("too expensive".into()),
            },
        )
        .unwrap();
    assert!(tool_calls(&e3).is_empty());
    assert_eq!(phases(&e3), [Phase::Analysis]);
    let (_, _, request) = model_call(&e3);
    let text = request.messages.last().unwrap().text();
    assert!(text.contains("declined") && text.contains("too expensive"), "{text}");
}

#[test]
fn confirmation_with_wrong_fingerprint_or_call_is_rejected() {
    let mut h = Harness::new();
    let (_, pending) = park_pay(&mut h);
    let wrong_fp = h.confirm(&pending.call_id, "0000000000000000", UserDecision::Approve);
    assert!(matches!(wrong_fp, Err(StepError::ConfirmationMismatch { .. })));
    let wrong_call = h.confirm(&"call_99".into(), &pending.fingerprint, UserDecision::Approve);
    assert!(matches!(wrong_call, Err(StepError::ConfirmationMismatch { .. })));
    // Still parked; the right answer still works.
    assert_eq!(h.session.phase(), Some(Phase::Clarifying));
    assert!(
        h.confirm(&pending.call_id, &pending.fingerprint, UserDecision::Approve)
            .is_ok()
    );
}

#[test]
fn confirmation_when_nothing_is_parked_is_rejected() {
    let mut h = Harness::new();
    let _ = h.start("hi", PlannerMode::Model);
    let result = h.confirm(&"call_1".into(), "x", UserDecision::Approve);
    assert_eq!(result, Err(StepError::NotAwaitingConfirmation));
}

#[test]
fn time_parked_for_confirmation_does_not_count_against_the_budget() {
    let mut h = Harness::new();
    let policy = RunPolicy {
        time_budget_ms: Some(1_000),
        ..RunPolicy::default()
    };
    let e1 = h.start_with_policy("pay", policy);
    let e2 = h.reply(&e1, ModelReply::tool_call("pay", "{}"));
    let pending = parked(&e2).pending_confirmation.unwrap();
    h.now += 60_000;
    assert_eq!(h.try_send(Input::Tick { at: Timestamp(h.now) }), Err(StepError::Idle));
    let e3 = h
        .confirm(&pending.call_id, &pending.fingerprint, UserDecision::Approve)
        .unwrap();
    assert_eq!(tool_calls(&e3).len(), 1);
    let e4 = h.finish_tool(&pending.call_id, ok(json!("paid")));
    assert!(caps(&e4).is_empty(), "the wait for the person is not the run's time");
}

#[test]
fn ready_calls_run_before_parking_for_a_confirmation() {
    let mut h = Harness::new();
    let e1 = h.start("sum then pay", PlannerMode::Model);
    let mut reply = add_call(1, 1);
    reply.tool_calls.extend(ModelReply::tool_call("pay", "{}").tool_calls);
    let e2 = h.reply(&e1, reply);
    let calls = tool_calls(&e2);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0.name, "add");
    let e3 = h.finish_tool(&calls[0].0.id, ok(json!(2)));
    assert_eq!(phases(&e3), [Phase::Analysis, Phase::Clarifying]);
    let pending = parked(&e3).pending_confirmation.unwrap();
    assert_eq!(pending.tool, "pay");
    let e4 = h
        .confirm(&pending.call_id, &pending.fingerprint, UserDecision::Approve)
        .unwrap();
    let e5 = h.finish_tool(&pending.call_id, ok(json!("paid")));
    let (_, _, request) = model_call(&e5);
    let tail: Vec<&str> = request.messages.iter().map(Message::role).collect();
    assert_eq!(
        tail,
        ["user", "assistant", "tool", "tool"],
        "results follow the call message in order"
    );
    drop(e4);
}

#[test]
fn cacheable_results_are_reused_with_an_event() {
    let mut h = Harness::new();
    let e1 = h.start("look it up", PlannerMode::Model);
    let e2 = h.reply(&e1, ModelReply::tool_call("lookup", r#"{"k": 1}"#));
    let call = tool_calls(&e2)[0].0.clone();
    let e3 = h.finish_tool(&call.id, ok(json!("v1")));
    let _ = h.reply(&e3, ModelReply::text("v1"));

    let e4 = h.start("look it up again", PlannerMode::Model);
    // Same arguments, different key order: same fingerprint.
    let e5 = h.reply(&e4, ModelReply::tool_call("lookup", r#"{ "k" : 1 }"#));
    assert!(tool_calls(&e5).is_empty(), "the tool is not called again");
    let reused: Vec<EventKind> = events(&e5)
        .into_iter()
        .filter(|k| matches!(k, EventKind::ToolReused { .. }))
        .collect();
    assert_eq!(
        reused,
        [EventKind::ToolReused {
            call_id: "call_2".into(),
            tool: "lookup".into(),
            from: call.id.clone()
        }]
    );
    let (_, _, request) = model_call(&e5);
    assert_eq!(request.messages.last().unwrap().text(), "v1");
    // Other arguments are not reused.
    let _ = h.reply(&e5, ModelReply::text("v1"));
    let e6 = h.start("another", PlannerMode::Model);
    let e7 = h.reply(&e6, ModelReply::tool_call("lookup", r#"{"k": 2}"#));
    assert_eq!(tool_calls(&e7).len(), 1);
}

#[test]
fn missing_required_information_blocks_the_tool() {
    let mut h = Harness::new();
    let e1 = h.start("my profile", PlannerMode::Model);
    let e2 = h.reply(&e1, ModelReply::tool_call("profile", "{}"));
    assert!(tool_calls(&e2).is_empty());
    let (_, _, request) = model_call(&e2);
    let text = request.messages.last().unwrap().text();
    assert!(
        text.contains("missing_information") && text.contains("user_id"),
        "{text}"
    );

    let mut h = Harness::new();
    let at = h.at();
    let mut start = StartRun::new("my profile", PlannerMode::Model, at).run_id("r1");
    start.context.insert("user_id".into(), json!("u-7"));
    let e1 = h.send(Input::StartRun(start));
    assert!(model_call(&e1).2.system.contains("user_id: \"u-7\""));
    let e2 = h.reply(&e1, ModelReply::tool_call("profile", "{}"));
    assert_eq!(tool_calls(&e2).len(), 1);
}

#[test]
fn handoff_switches_agent_and_keeps_history() {
    let mut h = Harness::new();
    let e1 = h.start("I need help", PlannerMode::Model);
    let e2 = h.reply(
        &e1,
        ModelReply::tool_call("transfer_to_helper", r#"{"reason": "asked for help"}"#),
    );
    assert!(tool_calls(&e2).is_empty());
    let changed: Vec<EventKind> = events(&e2)
        .into_iter()
        .filter(|k| matches!(k, EventKind::AgentChanged { .. }))
        .collect();
    assert_eq!(
        changed,
        [EventKind::AgentChanged {
            from: "main".into(),
            to: "helper".into(),
            reason: "asked for help".into()
        }]
    );
    assert_eq!(h.session.agent(), "helper");
    let (_, _, request) = model_call(&e2);
    assert_eq!(request.agent, "helper");
    assert!(request.system.contains("You help."));
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["lookup"], "a specialist sees only its own tools");
    assert_eq!(request.messages.len(), 3, "the history travels with the handoff");
    let out = finished(&h.reply(&e2, ModelReply::text("Helper here.")));
    assert_eq!(out.agent, "helper");
    // The next run continues with the new agent.
    let e3 = h.start("thanks", PlannerMode::Model);
    assert_eq!(model_call(&e3).2.agent, "helper");
}

#[test]
fn handoff_to_an_agent_not_allowed_is_an_unknown_tool() {
    let mut h = Harness::new();
    let at = h.at();
    let e1 = h.send(Input::StartRun(
        StartRun::new("x", PlannerMode::Model, at).run_id("r1").agent("helper"),
    ));
    let e2 = h.reply(&e1, ModelReply::tool_call("transfer_to_main", "{}"));
    assert_eq!(h.session.agent(), "helper");
    let text = model_call(&e2).2.messages.last().unwrap().text();
    assert!(text.contains("unknown_tool"), "{text}");
}

#[test]
fn rules_planner_runs_without_a_model() {
    let mut h = Harness::new();
    let e1 = h.start("calculate 5 + 3", PlannerMode::Rules);
    assert!(!e1.effects.iter().any(|e| matches!(e, Effect::CallModel { .. })));
    let calls = tool_calls(&e1);
    assert_eq!(calls[0].0.name, "add");
    assert_eq!(calls[0].0.arguments, json!({"a": "5", "b": "3"}));
    let e2 = h.finish_tool(&calls[0].0.id, ok(json!({"result": 8, "formula": "5 + 3 = 8"})));
    let out = finished(&e2);
    assert_eq!(out.reply.as_deref(), Some("5 + 3 = 8"));
    assert_eq!(out.iterations, 2);
}

#[test]
fn rules_planner_reports_tool_errors_and_falls_back() {
    let mut h = Harness::new();
    let e1 = h.start("1 + 0", PlannerMode::Rules);
    let call = tool_calls(&e1)[0].0.clone();
    let out = finished(&h.finish_tool(
        &call.id,
        ToolOutcome::Error(ToolError::failed("Cannot divide by zero.")),
    ));
    assert_eq!(out.reply.as_deref(), Some("add failed: Cannot divide by zero."));

    let out = finished(&h.start("hello there", PlannerMode::Rules));
    assert_eq!(out.status, RunStatus::NeedsInput);
    assert_eq!(out.reply.as_deref(), Some("Try: calculate 5 + 3"));
}

#[test]
fn rules_planner_hands_off_and_the_target_answers() {
    let mut h = Harness::new();
    let effects = h.start("please help", PlannerMode::Rules);
    let out = finished(&effects);
    assert_eq!(out.agent, "helper");
    assert_eq!(out.reply.as_deref(), Some("helper here: please help"));
}

#[test]
fn rules_mode_requires_rules() {
    let catalog = Catalog::builder().agent(AgentSpec::new("main")).build().unwrap();
    let mut h = Harness::with_catalog(catalog);
    let at = h.at();
    let result = h.try_send(Input::StartRun(StartRun::new("x", PlannerMode::Rules, at).run_id("r1")));
    assert_eq!(result, Err(StepError::NoPlanner { agent: "main".into() }));
}

#[test]
fn model_failure_fails_the_run_through_the_error_phase() {
    let mut h = Harness::new();
    let e1 = h.start("hi", PlannerMode::Model);
    let (run_id, call, _) = model_call(&e1);
    let at = h.at();
    let e2 = h.send(Input::ModelFailed {
        run_id,
        call,
        error: "HTTP 500".into(),
        at,
    });
    assert_eq!(phases(&e2), [Phase::Error, Phase::Completion]);
    let out = finished(&e2);
    assert_eq!(out.status, RunStatus::Failed);
    assert!(out.error.unwrap().contains("HTTP 500"));
    assert_eq!(out.confidence, 0.0);
    assert!(events(&e2).iter().any(|k| matches!(k, EventKind::Error { .. })));
    // The session takes a new run afterwards.
    assert!(
        h.try_send(Input::StartRun(
            StartRun::new("again", PlannerMode::Model, Timestamp(99_999)).run_id("r2")
        ))
        .is_ok()
    );
}

#[test]
fn inputs_that_do_not_fit_the_phase_are_rejected_without_change() {
    let mut h = Harness::new();
    let e1 = h.start("hi", PlannerMode::Model);
    let run_id = h.run_id();
    // A tool result while the run waits for the model.
    let r = h.try_send(Input::ToolFinished {
        run_id: run_id.clone(),
        call_id: "call_1".into(),
        outcome: ok(json!(1)),
        duration_ms: 1,
        usage: None,
        at: Timestamp(2_000),
    });
    assert!(matches!(r, Err(StepError::Unexpected { .. })));
    // A reply quoting the wrong model call.
    let r = h.try_send(Input::ModelReplied {
        run_id: run_id.clone(),
        call: 7,
        reply: ModelReply::text("x"),
        at: Timestamp(2_000),
    });
    assert!(matches!(r, Err(StepError::Unexpected { .. })));
    // A reply for another run.
    let r = h.try_send(Input::ModelReplied {
        run_id: "other".into(),
        call: 1,
        reply: ModelReply::text("x"),
        at: Timestamp(2_000),
    });
    assert!(matches!(r, Err(StepError::NoSuchRun { .. })));
    // A second run while one is in progress.
    let r = h.try_send(Input::StartRun(
        StartRun::new("x", PlannerMode::Model, Timestamp(2_000)).run_id("r2"),
    ));
    assert!(matches!(
        r,
        Err(StepError::RunInProgress {
            phase: Phase::Planning,
            ..
        })
    ));
    // A run without a user message, and an unknown agent.
    let _ = h.reply(&e1, ModelReply::text("hello"));
    let mut start = StartRun::new("x", PlannerMode::Model, Timestamp(3_000)).run_id("r2");
    start.messages = vec![Message::system("only system")];
    assert_eq!(h.try_send(Input::StartRun(start)), Err(StepError::NoUserMessage));
    let r = h.try_send(Input::StartRun(
        StartRun::new("x", PlannerMode::Model, Timestamp(3_000))
            .run_id("r2")
            .agent("ghost"),
    ));
    assert!(matches!(r, Err(StepError::UnknownAgent { .. })));
}

#[test]
fn ending_a_session_cancels_the_run_and_refuses_more_input() {
    let mut h = Harness::new();
    let e1 = h.start("hi", PlannerMode::Model);
    let e2 = h.reply(&e1, add_call(1, 2));
    assert_eq!(tool_calls(&e2).len(), 1);
    let at = h.at();
    let e3 = h.send(Input::End {
        reason: "user left".into(),
        at,
    });
    let out = finished(&e3);
    assert_eq!(out.status, RunStatus::Cancelled);
    assert_eq!(phases(&e3), [Phase::Error, Phase::Completion]);
    assert!(h.session.is_ended());
    let last = h.session.history().last().unwrap();
    assert!(matches!(last, Message::Tool { outcome: ToolOutcome::Error(e), .. } if e.kind == ToolErrorKind::Cancelled));
    let r = h.try_send(Input::StartRun(
        StartRun::new("x", PlannerMode::Model, Timestamp(9_999)).run_id("r2"),
    ));
    assert_eq!(r, Err(StepError::SessionEnded));
    let r = h.try_send(Input::End {
        reason: "again".into(),
        at: Timestamp(9_999),
    });
    assert_eq!(r, Err(StepError::SessionEnded));
}

#[test]
fn replaying_the_journal_rebuilds_the_same_session_and_effects() {
    let mut h = Harness::new();
    let e1 = h.start("pay then add", PlannerMode::Model);
    let mut reply = add_call(1, 1);
    reply.tool_calls.extend(ModelReply::tool_call("pay", "{}").tool_calls);
    let e2 = h.reply(&e1, reply);
    let call = tool_calls(&e2)[0].0.clone();
    let e3 = h.finish_tool(&call.id, ok(json!(2)));
    let pending = parked(&e3).pending_confirmation.unwrap();
    let e4 = h
        .confirm(&pending.call_id, &pending.fingerprint, UserDecision::Approve)
        .unwrap();

    let mut replayed = Session::new("s1", "main");
    let mut all = Vec::new();
    for input in &h.journal {
        all.push(replayed.step(input.clone(), &h.catalog).unwrap());
    }
    assert_eq!(replayed, h.session);
    assert_eq!(all.last(), Some(&e4));
    // After a crash here, only the approved call is outstanding.
    let pending_effects = replayed.pending_effects(&h.catalog);
    assert_eq!(pending_effects.len(), 1);
    assert_eq!(tool_calls(&pending_effects)[0].0.id, pending.call_id);
    // And the snapshot round-trips.
    let json = serde_json::to_string(&replayed).unwrap();
    let restored: Session = serde_json::from_str(&json).unwrap();
    assert_eq!(restored, replayed);
}

#[test]
fn pending_effects_reissue_the_model_call_and_the_parked_confirmation() {
    let mut h = Harness::new();
    let e1 = h.start("hi", PlannerMode::Model);
    let pending = h.session.pending_effects(&h.catalog);
    assert_eq!(model_call(&pending), model_call(&e1));

    let mut h = Harness::new();
    let (e2, _) = park_pay(&mut h);
    let again = h.session.pending_effects(&h.catalog);
    assert_eq!(parked(&again), parked(&e2));

    let h = Harness::new();
    assert!(h.session.pending_effects(&h.catalog).is_empty());
}

#[test]
fn an_agent_named_by_the_caller_takes_over() {
    let mut h = Harness::new();
    let at = h.at();
    let e1 = h.send(Input::StartRun(
        StartRun::new("x", PlannerMode::Model, at).run_id("r1").agent("helper"),
    ));
    assert!(
        events(&e1)
            .iter()
            .any(|k| matches!(k, EventKind::AgentChanged { to, .. } if to == "helper"))
    );
    assert_eq!(model_call(&e1).2.agent, "helper");
}

/// Serializes and deserializes the session, checks it is equal, and returns the copy.
fn round_trip(session: &Session) -> Session {
    let json = serde_json::to_string(session).unwrap();
    let restored: Session = serde_json::from_str(&json).unwrap();
    assert_eq!(&restored, session, "{json}");
    restored
}

#[test]
fn a_session_round_trips_through_serde_in_every_wait_and_carries_on() {
    let mut h = Harness::new();
    round_trip(&h.session);
    // Waiting for the model.
    let e1 = h.start("sum then pay", PlannerMode::Model);
    round_trip(&h.session);
    // Waiting for tools, with a call awaiting approval behind them.
    let mut reply = add_call(1, 1);
    reply.tool_calls.extend(ModelReply::tool_call("pay", "{}").tool_calls);
    let e2 = h.reply(&e1, reply);
    let restored = round_trip(&h.session);
    assert_eq!(
        restored.pending_effects(&h.catalog),
        h.session.pending_effects(&h.catalog)
    );
    // Parked for the confirmation.
    let call = tool_calls(&e2)[0].0.clone();
    let e3 = h.finish_tool(&call.id, ok(json!(2)));
    let pending = parked(&e3).pending_confirmation.unwrap();
    let mut restored = round_trip(&h.session);
    assert_eq!(restored.pending_confirmation(), Some(pending.clone()));
    // The restored copy takes the next input exactly as the original does.
    let approval = Input::Confirm(Confirmation {
        run_id: h.run_id(),
        call_id: pending.call_id.clone(),
        fingerprint: pending.fingerprint.clone(),
        decision: UserDecision::Approve,
        at: Timestamp(h.now + 1),
    });
    let from_copy = restored.step(approval.clone(), &h.catalog).unwrap();
    let from_original = h.send(approval);
    assert_eq!(from_copy, from_original);
    assert_eq!(restored, h.session);
    // Finished.
    let e5 = h.finish_tool(&pending.call_id, ok(json!("paid")));
    let _ = h.reply(&e5, ModelReply::text("Done."));
    round_trip(&h.session);
}

#[test]
fn inputs_effects_and_steps_serialize() {
    let mut h = Harness::new();
    let e1 = h.start("pay", PlannerMode::Model);
    let e2 = h.reply(&e1, ModelReply::tool_call("pay", "{}"));
    for input in &h.journal {
        let json = serde_json::to_string(input).unwrap();
        assert_eq!(&serde_json::from_str::<Input>(&json).unwrap(), input);
    }
    for step in [&e1, &e2] {
        let json = serde_json::to_string(step).unwrap();
        assert_eq!(&serde_json::from_str::<Step>(&json).unwrap(), step);
        for effect in &step.effects {
            let json = serde_json::to_string(effect).unwrap();
            assert_eq!(&serde_json::from_str::<Effect>(&json).unwrap(), effect);
        }
    }
}

#[test]
fn a_snapshot_whose_wait_contradicts_itself_is_refused() {
    let mut h = Harness::new();
    let (_, _) = park_pay(&mut h);
    let mut value = serde_json::to_value(&h.session).unwrap();
    // Point the parked slot past the batch.
    assert_eq!(value["run"]["waiting"]["parked"]["slot"], json!(0));
    value["run"]["waiting"]["parked"]["slot"] = json!(5);
    let error = serde_json::from_value::<Session>(value).unwrap_err().to_string();
    assert!(
        error.contains("a parked batch must stop on a call that waits for the person"),
        "{error}"
    );
}

// ----- readable confirmations, plain answers, values from the blackboard -----

fn task_catalog() -> Catalog {
    let confirm = ToolAnnotations {
        requires_confirmation: true,
        ..ToolAnnotations::default()
    };
    let create = ToolSpec::new(
        "create_task",
        "Creates a task.",
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "title": "Title"},
                "priority": {"type": "string", "enum": ["low", "medium", "high"]},
                "due": {"type": "string"}
            },
            "required": ["title"]
        }),
    )
    .annotations(confirm.clone())
    .confirm("I'll create a task '{title}' due {due}, priority {priority}. Proceed?");
    let list = ToolSpec::new(
        "list_tasks",
        "Lists the person's tasks.",
        json!({"type": "object", "properties": {"user_id": {"type": "string"}}, "required": ["user_id"]}),
    )
    .requires("user_id")
    .provides("top_task");
    let complete = ToolSpec::new(
        "complete_task",
        "Marks a task done.",
        json!({"type": "object", "properties": {"top_task": {"type": "string"}}, "required": ["top_task"]}),
    )
    .requires("top_task")
    .annotations(confirm)
    .confirm("Mark '{top_task}' as done?");
    let rules = Rules::new()
        .route(Route::tool("list_tasks", json!({})).keywords(["my tasks"]))
        .route(Route::tool("complete_task", json!({})).keywords(["complete"]))
        .answer("Done: {result}");
    Catalog::builder()
        .tool(create)
        .tool(list)
        .tool(complete)
        .agent(
            AgentSpec::new("tasks")
                .tool("create_task")
                .tool("list_tasks")
                .tool("complete_task")
                .rules(rules),
        )
        .build()
        .unwrap()
}

impl Harness {
    fn tasks() -> Self {
        let mut h = Self::with_catalog(task_catalog());
        h.session = Session::new("s1", "tasks");
        h
    }

    /// The person writes `text` as a new message (no run id: it may answer a parked call).
    fn say(&mut self, text: &str) -> Step {
        let at = self.at();
        self.send(Input::StartRun(StartRun::new(text, PlannerMode::Model, at)))
    }

    fn replayed(&self) -> Session {
        let mut session = Session::new("s1", self.session.agent().clone());
        for input in &self.journal {
            session.step(input.clone(), &self.catalog).unwrap();
        }
        session
    }
}

fn park_create(h: &mut Harness) -> PendingConfirmation {
    let e1 = h.start("create a task to review code", PlannerMode::Model);
    let e2 = h.reply(
        &e1,
        ModelReply::tool_call(
            "create_task",
            r#"{"title": "Review code", "priority": "low", "due": "Monday"}"#,
        ),
    );
    parked(&e2).pending_confirmation.unwrap()
}

#[test]
fn a_template_confirmation_reads_as_words_and_a_plain_yes_runs_the_call() {
    let mut h = Harness::tasks();
    let pending = park_create(&mut h);
    assert_eq!(
        pending.message,
        "I'll create a task 'Review code' due Monday, priority low. Proceed?"
    );
    let history = h.session.history().len();
    let step = h.say("Yep!");
    assert!(step.run_started().is_none(), "an answer starts no run");
    assert_eq!(step.run(), Some(&"r1".into()), "it goes on with the parked run");
    assert!(events(&step).contains(&EventKind::ConfirmationResolved {
        call_id: pending.call_id.clone(),
        approved: true
    }));
    let calls = tool_calls(&step);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].0.arguments,
        json!({"title": "Review code", "priority": "low", "due": "Monday"})
    );
    assert_eq!(
        h.session.history().len(),
        history,
        "the answer does not enter the history"
    );
    assert_eq!(h.session.runs_started(), 1);
    let e = h.finish_tool(&pending.call_id, ok(json!("created")));
    let out = finished(&h.reply(&e, ModelReply::text("Created.")));
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(h.replayed(), h.session, "the journal replays to the same session");
}

#[test]
fn without_a_template_the_arguments_are_listed_by_title() {
    let mut h = Harness::new();
    let (_, pending) = park_pay(&mut h);
    assert_eq!(pending.message, "Run *pay* with Amount: 10? (yes/no)");
    assert!(!pending.message.contains('{'), "never raw JSON");
}

#[test]
fn a_plain_no_declines_the_call() {
    let mut h = Harness::tasks();
    let pending = park_create(&mut h);
    let step = h.say("nope");
    assert!(tool_calls(&step).is_empty());
    assert!(events(&step).contains(&EventKind::ConfirmationResolved {
        call_id: pending.call_id,
        approved: false
    }));
    let (_, _, request) = model_call(&step);
    assert!(request.messages.last().unwrap().text().contains("declined"));
}

#[test]
fn an_edited_approval_is_shown_back_and_runs_only_after_a_final_yes() {
    let mut h = Harness::tasks();
    let first = park_create(&mut h);
    let step = h.say("Yes, but high priority and due Friday");
    assert!(tool_calls(&step).is_empty(), "a changed call does not run blindly");
    let out = parked(&step);
    let pending = out.pending_confirmation.unwrap();
    assert_eq!(pending.call_id, first.call_id);
    assert_ne!(pending.fingerprint, first.fingerprint);
    assert_eq!(
        pending.arguments,
        json!({"title": "Review code", "priority": "high", "due": "Friday"})
    );
    assert_eq!(
        pending.message,
        "I'll create a task 'Review code' due Friday, priority high. Proceed?"
    );
    assert_eq!(out.reply.as_deref(), Some("Changed due to Friday, priority to high."));
    assert!(
        events(&step)
            .iter()
            .any(|e| matches!(e, EventKind::AwaitingConfirmation { .. }))
    );
    // The old fingerprint no longer approves anything.
    assert!(matches!(
        h.confirm(&first.call_id, &first.fingerprint, UserDecision::Approve),
        Err(StepError::ConfirmationMismatch { .. })
    ));
    let step = h.say("yes");
    let calls = tool_calls(&step);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0.arguments, pending.arguments);
    // The history holds the call as it runs, for the planner.
    let in_history = h.session.history().iter().find_map(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls.first().map(|c| c.arguments.clone()),
        _ => None,
    });
    assert_eq!(in_history, Some(pending.arguments.clone()));
    assert_eq!(h.replayed(), h.session);
}

#[test]
fn a_message_that_does_not_answer_leaves_the_call_parked_with_a_reminder() {
    let mut h = Harness::tasks();
    let pending = park_create(&mut h);
    let before = h.session.history().to_vec();
    // Without a model (the agent plans by its rules), the rules remind at once.
    let at = h.at();
    let step = h.send(Input::StartRun(StartRun::new(
        "what is 2 plus 3",
        PlannerMode::Rules,
        at,
    )));
    assert!(tool_calls(&step).is_empty());
    assert!(step.run_started().is_none());
    let out = parked(&step);
    assert!(out.reply.unwrap().contains("yes or no"));
    assert_eq!(out.pending_confirmation.unwrap().fingerprint, pending.fingerprint);
    assert_eq!(
        h.session.pending_confirmation().unwrap().fingerprint,
        pending.fingerprint
    );
    assert_eq!(h.session.history(), before);
    assert_eq!(h.session.runs_started(), 1);
    // A message for another agent is refused as before.
    let at = h.at();
    let other = h.try_send(Input::StartRun(
        StartRun::new("yes", PlannerMode::Model, at).agent("main"),
    ));
    assert!(matches!(other, Err(StepError::RunInProgress { .. })));
    // Still answerable.
    assert_eq!(tool_calls(&h.say("ok")).len(), 1);
}

#[test]
fn the_agents_model_reads_an_answer_the_rules_cannot_as_one_of_the_runs_calls() {
    let mut h = Harness::tasks();
    let pending = park_create(&mut h);
    let usage_before = h.session.usage();
    // The rules cannot read it: the model is asked, the call stays parked.
    let step = h.say("what is 2 plus 3");
    let (_, call, request) = model_call(&step);
    assert_eq!(call, 2, "the run's next model call");
    assert_eq!(request.tool_choice, ToolChoice::Tool("answer_confirmation".into()));
    assert!(request.system.contains("create_task"), "{}", request.system);
    assert!(step.run_started().is_none() && tool_calls(&step).is_empty());
    assert_eq!(
        h.session.pending_confirmation().unwrap().fingerprint,
        pending.fingerprint
    );
    // A second message while it reads is a message during a run.
    let at = h.at();
    let during = h.try_send(Input::StartRun(StartRun::new("hello?", PlannerMode::Model, at)));
    assert!(matches!(during, Err(StepError::RunInProgress { .. })), "{during:?}");
    // After a restart, the reading is asked again.
    assert!(h.session.pending_effects(&h.catalog).iter().any(|e| matches!(
        e,
        Effect::CallModel { call: 2, request, .. } if request.tool_choice == ToolChoice::Tool("answer_confirmation".into())
    )));
    // No decision in its answer: the person is reminded; its tokens count.
    let unclear = ModelReply::tool_call("answer_confirmation", r#"{"decision": "unclear"}"#).with_usage(30, 4);
    let step = h.reply(&step, unclear);
    assert!(parked(&step).reply.unwrap().contains("yes or no"));
    assert_eq!(h.session.usage().input_tokens, usage_before.input_tokens + 30);
    // A change the rules miss: the model's reading amends the call, shown back for a final yes.
    let step = h.say("yes, but bump it up a notch");
    let amend = ModelReply::tool_call(
        "answer_confirmation",
        r#"{"decision": "amend", "arguments": {"priority": "high"}}"#,
    );
    let step = h.reply(&step, amend);
    let shown = parked(&step).pending_confirmation.unwrap();
    assert_eq!(shown.arguments["priority"], "high");
    assert_ne!(shown.fingerprint, pending.fingerprint);
    // A failed reading of a plain yes with more words: the yes stands.
    let step = h.say("yes and thanks");
    let (run_id, call, _) = model_call(&step);
    let at = h.at();
    let step = h.send(Input::ModelFailed {
        run_id,
        call,
        error: "timeout".into(),
        at,
    });
    assert_eq!(tool_calls(&step).len(), 1, "the call runs");
    assert_eq!(h.replayed(), h.session);
}

#[test]
fn a_structured_answer_settles_the_call_while_the_model_reads_a_message() {
    let mut h = Harness::tasks();
    let pending = park_create(&mut h);
    let reading = h.say("hmm, what do you think");
    let step = h
        .confirm(&pending.call_id, &pending.fingerprint, UserDecision::Approve)
        .unwrap();
    assert_eq!(tool_calls(&step).len(), 1);
    // The reading arrives too late: refused, nothing changes.
    let (run_id, call, _) = model_call(&reading);
    let at = h.at();
    let late = h.try_send(Input::ModelReplied {
        run_id,
        call,
        reply: ModelReply::tool_call("answer_confirmation", r#"{"decision": "decline"}"#),
        at,
    });
    assert!(late.is_err());
}

#[test]
fn changed_arguments_that_do_not_fit_the_schema_are_refused() {
    let mut h = Harness::tasks();
    let pending = park_create(&mut h);
    let refused = h.confirm(
        &pending.call_id,
        &pending.fingerprint,
        UserDecision::Amend {
            arguments: json!({"title": "Review code", "priority": "urgent"}),
        },
    );
    assert_eq!(
        refused,
        Err(StepError::AmendmentRefused {
            problem: "Priority must be one of: low, medium, high".into()
        })
    );
    // The same arguments approve as they are.
    let step = h
        .confirm(
            &pending.call_id,
            &pending.fingerprint,
            UserDecision::Amend {
                arguments: pending.arguments.clone(),
            },
        )
        .unwrap();
    assert_eq!(tool_calls(&step).len(), 1);
}

#[test]
fn required_values_reach_tools_from_the_blackboard_so_rules_chain_tools() {
    let mut h = Harness::tasks();
    let at = h.at();
    let step = h.send(Input::StartRun(
        StartRun::new("show my tasks", PlannerMode::Rules, at)
            .run_id("r1")
            .user("u-7"),
    ));
    assert_eq!(h.session.blackboard().available["user_id"], json!("u-7"));
    let Some(Effect::CallTool {
        call, user, blackboard, ..
    }) = step.effects.iter().find(|e| matches!(e, Effect::CallTool { .. }))
    else {
        panic!("expected a tool call")
    };
    assert_eq!(call.arguments, json!({"user_id": "u-7"}), "filled from the blackboard");
    assert_eq!(user.as_deref(), Some("u-7"));
    assert_eq!(blackboard["user_id"], json!("u-7"));
    let done = h.finish_tool(&call.id.clone(), ok(json!("Fix login bug")));
    assert_eq!(finished(&done).status, RunStatus::Completed);

    // The next tool requires what the first provided: the rules pass `{}` and
    // the core fills it in; the confirmation names it.
    let step = h.start("complete it", PlannerMode::Rules);
    let out = parked(&step);
    let pending = out.pending_confirmation.unwrap();
    assert_eq!(pending.arguments, json!({"top_task": "Fix login bug"}));
    assert_eq!(pending.message, "Mark 'Fix login bug' as done?");
    let at = h.at();
    let step = h.send(Input::StartRun(StartRun::new("go ahead", PlannerMode::Rules, at)));
    let calls = tool_calls(&step);
    assert_eq!(calls[0].0.arguments, json!({"top_task": "Fix login bug"}));
    let Some(Effect::CallTool { user, .. }) = step.effects.iter().find(|e| matches!(e, Effect::CallTool { .. })) else {
        panic!("expected a tool call")
    };
    assert_eq!(user, &None, "the second run did not say who asked");
}

#[test]
fn a_route_with_a_second_step_asks_about_the_found_task_and_answers_a_decline() {
    let confirm = ToolAnnotations {
        requires_confirmation: true,
        ..ToolAnnotations::default()
    };
    let search = ToolSpec::new(
        "search_tasks",
        "Finds tasks.",
        json!({"type": "object", "properties": {"query": {"type": "string"}}}),
    );
    let complete = ToolSpec::new(
        "complete_task",
        "Marks a task done.",
        json!({"type": "object", "properties": {"task": {"type": "string"}, "found": {"type": "string"}}}),
    )
    .annotations(confirm)
    .confirm("I'll mark {task}[, {found},] as done. Proceed?");
    let then = crate::Then::new(
        "complete_task",
        json!({"task": "#{result.match.id}", "found": "{result.match.label}"}),
    )
    .declined("OK, I left {result.match.label} as it is. Other matches: {result.others}");
    let rules = Rules::new()
        .route(
            Route::tool("search_tasks", json!({"query": "{task}"}))
                .pattern(r"(?i)mark (?P<task>.+) as done")
                .then(then),
        )
        .route(Route::tool("complete_task", json!({"task": "#{id}"})).pattern(r"complete #(?P<id>\d+)"))
        .answer("{result.message}");
    let catalog = Catalog::builder()
        .tool(search)
        .tool(complete)
        .agent(
            AgentSpec::new("tasks")
                .tool("search_tasks")
                .tool("complete_task")
                .rules(rules),
        )
        .build()
        .unwrap();
    let found = json!({
        "match": {"id": 1, "label": "'Fix login bug' (95% match)"},
        "others": "#5 'Fix logout button' (60% match)",
        "message": "I found task #1 'Fix login bug' (95% match)."
    });

    // Found: the parked change names the match before the person answers.
    let mut h = Harness::with_catalog(catalog.clone());
    h.session = Session::new("s1", "tasks");
    let step = h.start("mark the login bug as done", PlannerMode::Rules);
    let calls = tool_calls(&step);
    assert_eq!(calls[0].0.arguments, json!({"query": "the login bug"}));
    let step = h.finish_tool(&calls[0].0.id.clone(), ok(found.clone()));
    let pending = parked(&step).pending_confirmation.unwrap();
    assert_eq!(
        pending.arguments,
        json!({"task": "#1", "found": "'Fix login bug' (95% match)"})
    );
    assert_eq!(
        pending.message,
        "I'll mark #1, 'Fix login bug' (95% match), as done. Proceed?"
    );
    let step = h.say("no");
    assert_eq!(
        finished(&step).reply.as_deref(),
        Some("OK, I left 'Fix login bug' (95% match) as it is. Other matches: #5 'Fix logout button' (60% match)")
    );

    // No single match: no second call, the search's answer.
    let mut h = Harness::with_catalog(catalog);
    h.session = Session::new("s1", "tasks");
    let step = h.start("mark the fix as done", PlannerMode::Rules);
    let calls = tool_calls(&step);
    let step = h.finish_tool(
        &calls[0].0.id.clone(),
        ok(json!({"message": "Several tasks could match.", "others": ""})),
    );
    let out = finished(&step);
    assert_eq!(out.reply.as_deref(), Some("Several tasks could match."));
    assert_eq!(out.status, RunStatus::Completed);

    // A plain no to a one-step route: said as a decision, not an error.
    let step = h.start("complete #5", PlannerMode::Rules);
    assert!(parked(&step).pending_confirmation.is_some());
    let step = h.say("no");
    assert_eq!(finished(&step).reply.as_deref(), Some("OK, I did not do that."));
}
