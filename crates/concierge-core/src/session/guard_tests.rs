//! A guardrail verdict carried by an input ends the run: the event, the
//! sentence, `blocked`, the message or reply kept out of the conversation,
//! and the effects carry each agent's own checks.

use serde_json::json;

use crate::{
    AgentSpec, Catalog, Effect, EventKind, GuardStage, Guardrail, GuardrailTrip, Input, ModelReply, PlannerMode, Route,
    Rules, RunStatus, Session, StartRun, Step, Timestamp, ToolError, ToolErrorKind, ToolId, ToolOutcome, ToolSpec,
};

fn catalog() -> Catalog {
    let shop = AgentSpec::new("shop")
        .tool("ship")
        .rules(
            Rules::new()
                .route(Route::tool("ship", json!({"item": "{message}"})).keywords(["ship"]))
                .answer("{result}"),
        )
        .guardrail(GuardStage::Output, Guardrail::redact_pii())
        .guardrail(GuardStage::ToolInput, Guardrail::deny(["(?i)everything"]))
        .guardrail(GuardStage::ToolOutput, Guardrail::max_length(100));
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

fn trip(stage: GuardStage, tool: Option<&str>) -> GuardrailTrip {
    GuardrailTrip {
        stage,
        guardrail: "pii".into(),
        reason: "it contains a card number".into(),
        tool: tool.map(ToolId::new),
    }
}

fn finished(step: &Step) -> crate::RunOutput {
    step.effects
        .iter()
        .find_map(|e| match e {
            Effect::Finish(output) => Some(output.clone()),
            _ => None,
        })
        .expect("the run finished")
}

fn tripped(step: &Step) -> Option<(GuardStage, String)> {
    step.events.iter().find_map(|e| match &e.kind {
        EventKind::GuardrailTripped { stage, reason, .. } => Some((*stage, reason.clone())),
        _ => None,
    })
}

#[test]
fn a_message_an_input_guardrail_stopped_never_enters_the_conversation() {
    let catalog = catalog();
    let mut session = Session::new("s", "shop");
    let mut start = StartRun::new("[card number redacted] ship it", PlannerMode::Rules, Timestamp(1));
    start.guardrail = Some(trip(GuardStage::Input, None));
    let step = session.step(Input::StartRun(start), &catalog).unwrap();
    assert_eq!(
        tripped(&step),
        Some((GuardStage::Input, "it contains a card number".into()))
    );
    let output = finished(&step);
    assert_eq!(output.status, RunStatus::Blocked);
    assert_eq!(
        output.reply.as_deref(),
        Some("I can't take that message: it contains a card number.")
    );
    assert_eq!(output.guardrail.as_ref().map(|t| t.stage), Some(GuardStage::Input));
    assert!(
        session.history().iter().all(|m| !m.text().contains("ship it")),
        "the stopped message is not in the history: {:?}",
        session.history()
    );
    // The session goes on: the next message starts a run as usual.
    let next = session
        .step(
            Input::StartRun(StartRun::new("ship a lamp", PlannerMode::Rules, Timestamp(2))),
            &catalog,
        )
        .unwrap();
    assert!(next.effects.iter().any(|e| matches!(e, Effect::CallTool { .. })));
}

#[test]
fn the_effects_carry_the_agents_own_checks_and_a_tool_trip_ends_the_run() {
    let catalog = catalog();
    let mut session = Session::new("s", "shop");
    let step = session
        .step(
            Input::StartRun(StartRun::new("ship everything", PlannerMode::Rules, Timestamp(1))),
            &catalog,
        )
        .unwrap();
    let Some(Effect::CallTool {
        run_id,
        call,
        guardrails,
        ..
    }) = step
        .effects
        .iter()
        .find(|e| matches!(e, Effect::CallTool { .. }))
        .cloned()
    else {
        panic!("no tool call: {:?}", step.effects);
    };
    assert_eq!(guardrails.tool_input.len(), 1);
    assert_eq!(guardrails.tool_output.len(), 1);
    assert!(guardrails.output.is_empty() && guardrails.input.is_empty());
    let step = session
        .step(
            Input::ToolFinished {
                run_id,
                call_id: call.id,
                outcome: ToolOutcome::Error(ToolError::blocked(trip(GuardStage::ToolInput, Some("ship")))),
                duration_ms: 0,
                usage: None,
                at: Timestamp(2),
            },
            &catalog,
        )
        .unwrap();
    assert_eq!(tripped(&step).map(|t| t.0), Some(GuardStage::ToolInput));
    let output = finished(&step);
    assert_eq!(output.status, RunStatus::Blocked);
    assert_eq!(
        output.reply.as_deref(),
        Some("I stopped before running ship: it contains a card number.")
    );
    assert_eq!(output.tool_executions.len(), 1);
    assert!(matches!(
        &output.tool_executions[0].outcome,
        ToolOutcome::Error(e) if e.kind == ToolErrorKind::Blocked
    ));
}

#[test]
fn a_model_reply_an_output_guardrail_stopped_ends_the_run_without_its_text() {
    let catalog = catalog();
    let mut session = Session::new("s", "shop");
    let step = session
        .step(
            Input::StartRun(StartRun::new("what do you sell?", PlannerMode::Model, Timestamp(1))),
            &catalog,
        )
        .unwrap();
    let Some(Effect::CallModel {
        run_id,
        call,
        guardrails,
        ..
    }) = step
        .effects
        .iter()
        .find(|e| matches!(e, Effect::CallModel { .. }))
        .cloned()
    else {
        panic!("no model call: {:?}", step.effects);
    };
    assert_eq!(guardrails, vec![Guardrail::redact_pii()]);
    let reply = ModelReply {
        guardrail: Some(trip(GuardStage::Output, None)),
        ..ModelReply::default()
    };
    let step = session
        .step(
            Input::ModelReplied {
                run_id,
                call,
                reply,
                at: Timestamp(2),
            },
            &catalog,
        )
        .unwrap();
    let output = finished(&step);
    assert_eq!(output.status, RunStatus::Blocked);
    assert_eq!(
        output.reply.as_deref(),
        Some("I can't give you that answer: it contains a card number.")
    );
}
