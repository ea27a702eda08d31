//! `#[tool]`'s typed call helper in a custom planner: `Calculator::plan(args)`
//! builds the call a planner returns, checked by the compiler, and the core
//! runs it like any other; and through a runtime on the embedded engine (the
//! shared case of `cases/typed_calls.rs`, which concierge-temporal runs on
//! Temporal).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/typed_calls.rs"]
mod cases;

use std::sync::Arc;

use cases::{CalcArgs, Calculator, Squarer};
use concierge::core::{Catalog, Effect, Input, PlannedCall, StartRun, Timestamp};
use concierge::{AgentSpec, PlannerMode, RunStatus, Session, Tool, ToolContext, ToolOutcome};
use embedded::{EngineUnderTest, OnEngine};
use serde_json::json;

on_the_embedded_engine!(cases, EngineUnderTest::memory(); a_custom_planners_typed_call_runs_through_the_runtime);

fn catalog() -> Catalog {
    Catalog::builder()
        .tool(Calculator.spec())
        .agent(AgentSpec::new("squarer").tool(Calculator::NAME))
        .planner("squarer", Arc::new(Squarer))
        .build()
        .unwrap()
}

#[test]
fn the_typed_helper_names_the_tool_and_serializes_the_arguments() {
    assert_eq!(Calculator::NAME, "calculator");
    assert_eq!(Calculator::NAME, Calculator.spec().name.as_str());
    assert_eq!(
        Calculator::plan(CalcArgs { a: 6, b: 7 }),
        PlannedCall::new("calculator", json!({"a": 6, "b": 7}))
    );
}

#[tokio::test]
async fn a_custom_planner_plans_a_typed_call_and_the_core_runs_it() {
    let catalog = catalog();
    let mut session = Session::new("s1", "squarer");
    let step = session
        .step(
            Input::StartRun(StartRun::new("square 12 please", PlannerMode::Custom, Timestamp(1))),
            &catalog,
        )
        .unwrap();
    let Some(Effect::CallTool {
        run_id,
        call,
        key,
        user,
        blackboard,
        asked_at,
        checkpoint,
        ..
    }) = step.effects.iter().find(|e| matches!(e, Effect::CallTool { .. }))
    else {
        panic!("expected a tool call, got {:?}", step.effects)
    };
    assert_eq!(call.name, Calculator::NAME);
    assert_eq!(call.arguments, json!({"a": 12, "b": 12}));

    // Run the real tool on the arguments the core asked for.
    let args: CalcArgs = serde_json::from_value(call.arguments.clone()).unwrap();
    let cx = ToolContext {
        session_id: session.id().clone(),
        run_id: run_id.clone(),
        call_id: call.id.clone(),
        agent: session.agent().clone(),
        idempotency_key: key.clone(),
        user: user.clone(),
        tenant: None,
        blackboard: std::sync::Arc::new(blackboard.clone()),
        asked_at: *asked_at,
        channel: None,
        checkpoint: checkpoint.clone(),
    };
    let outcome = match Calculator.call(args, cx).await {
        Ok(value) => ToolOutcome::Ok(value),
        Err(error) => ToolOutcome::Error(error),
    };
    let step = session
        .step(
            Input::ToolFinished {
                run_id: run_id.clone(),
                call_id: call.id.clone(),
                outcome,
                duration_ms: 1,
                usage: None,
                at: Timestamp(2),
            },
            &catalog,
        )
        .unwrap();
    let Some(Effect::Finish(output)) = step.effects.last() else {
        panic!("expected the run to finish, got {:?}", step.effects)
    };
    assert_eq!(output.status, RunStatus::Completed);
    assert_eq!(output.reply.as_deref(), Some("The square is 144."));
    assert_eq!(output.tool_executions.len(), 1);
    assert!(output.tool_executions[0].success());
}

#[test]
fn a_typed_call_still_goes_through_the_gate() {
    // The agent does not have the calculator: the typed call compiles, and
    // the core refuses it at run time like any call of an unknown tool.
    let catalog = Catalog::builder()
        .tool(Calculator.spec())
        .agent(AgentSpec::new("squarer"))
        .planner("squarer", Arc::new(Squarer))
        .build()
        .unwrap();
    let mut session = Session::new("s1", "squarer");
    let step = session
        .step(
            Input::StartRun(StartRun::new("square 3", PlannerMode::Custom, Timestamp(1))),
            &catalog,
        )
        .unwrap();
    assert!(!step.effects.iter().any(|e| matches!(e, Effect::CallTool { .. })));
    let Some(Effect::Finish(output)) = step.effects.last() else {
        panic!("expected the run to finish, got {:?}", step.effects)
    };
    let reply = output.reply.as_deref().unwrap();
    assert!(reply.contains("there is no tool named \"calculator\""), "{reply}");
}
