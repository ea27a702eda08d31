//! Micro-benchmarks of the core: a full turn through `Session::step`, and
//! event serialization. `cargo bench -p concierge-core`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use concierge_core::{
    AgentSpec, Catalog, Event, Input, ModelReply, PlannerMode, Route, Rules, Session, StartRun, Timestamp, ToolOutcome,
    ToolSpec,
};
use divan::Bencher;
use serde_json::json;

fn main() {
    divan::main();
}

fn catalog() -> Catalog {
    let schema = json!({
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": ["add", "subtract", "multiply", "divide", "sqrt", "abs"]},
            "a": {"type": "number"},
            "b": {"type": ["number", "null"]}
        },
        "required": ["operation", "a"]
    });
    let rules = Rules::new()
        .route(
            Route::tool("calculator", json!({"operation": "add", "a": "{a}", "b": "{b}"}))
                .pattern(r"(?P<a>\d+)\s*(?:\+|plus)\s*(?P<b>\d+)"),
        )
        .answer("{result.formula}");
    Catalog::builder()
        .tool(ToolSpec::new("calculator", "Arithmetic.", schema))
        .agent(
            AgentSpec::new("calculator")
                .instructions("You are a calculator. Use the calculator tool.")
                .example("what is 17 plus 25?", "17 + 25 = 42")
                .tool("calculator")
                .rules(rules),
        )
        .build()
        .unwrap()
}

fn result() -> ToolOutcome {
    ToolOutcome::Ok(json!({"formula": "17 + 25 = 42", "result": 42.0}))
}

/// The four inputs of one LLM-planned turn: start, a tool call, its result, the answer.
/// One LLM turn of run `run`; `call` is the session's call id for its tool
/// call (call ids count across the session: the nth call is `call_n`).
fn llm_turn(run: &str, call: &str) -> Vec<Input> {
    vec![
        Input::StartRun(
            StartRun::new("what is 17 plus 25?", PlannerMode::Model, Timestamp(1))
                .run_id(run)
                .agent("calculator"),
        ),
        Input::ModelReplied {
            run_id: run.into(),
            call: 1,
            reply: ModelReply::tool_call("calculator", r#"{"operation":"add","a":17,"b":25}"#).with_usage(120, 12),
            at: Timestamp(2),
        },
        Input::ToolFinished {
            run_id: run.into(),
            call_id: call.into(),
            outcome: result(),
            duration_ms: 0,
            usage: None,
            at: Timestamp(3),
        },
        Input::ModelReplied {
            run_id: run.into(),
            call: 2,
            reply: ModelReply::text("17 + 25 = 42").with_usage(150, 8),
            at: Timestamp(4),
        },
    ]
}

#[divan::bench]
fn step_full_turn_llm(bencher: Bencher) {
    let catalog = catalog();
    bencher
        .with_inputs(|| (Session::new("s", "calculator"), llm_turn("r1", "call_1")))
        .bench_local_values(|(mut session, inputs)| {
            for input in inputs {
                divan::black_box(session.step(input, &catalog).unwrap());
            }
            session
        });
}

#[divan::bench]
fn step_full_turn_rules(bencher: Bencher) {
    let catalog = catalog();
    bencher
        .with_inputs(|| Session::new("s", "calculator"))
        .bench_local_values(|mut session| {
            let start = StartRun::new("calculate 17 + 25", PlannerMode::Rules, Timestamp(1)).agent("calculator");
            divan::black_box(session.step(Input::StartRun(start), &catalog).unwrap());
            let finished = Input::ToolFinished {
                run_id: "r1".into(),
                call_id: "call_1".into(),
                outcome: result(),
                duration_ms: 0,
                usage: None,
                at: Timestamp(2),
            };
            divan::black_box(session.step(finished, &catalog).unwrap());
            session
        });
}

/// The tenth turn of a session: history and blackboard have grown.
#[divan::bench]
fn step_tenth_turn_llm(bencher: Bencher) {
    let catalog = catalog();
    let mut warm = Session::new("s", "calculator");
    for i in 0..9 {
        for input in llm_turn(&format!("r{i}"), &format!("call_{}", i + 1)) {
            warm.step(input, &catalog).unwrap();
        }
    }
    bencher
        .with_inputs(|| {
            let inputs = llm_turn("r9", "call_10");
            (warm.clone(), inputs)
        })
        .bench_local_values(|(mut session, inputs)| {
            for input in inputs {
                divan::black_box(session.step(input, &catalog).unwrap());
            }
            session
        });
}

fn turn_events() -> Vec<Event> {
    let catalog = catalog();
    let mut session = Session::new("s", "calculator");
    llm_turn("r1", "call_1")
        .into_iter()
        .flat_map(|input| session.step(input, &catalog).unwrap().events)
        .collect()
}

/// Serializing one turn's events (about 18) to JSON, as subscribers receive them.
#[divan::bench]
fn event_serialization_per_turn(bencher: Bencher) {
    let events = turn_events();
    bencher.bench_local(|| {
        for event in &events {
            divan::black_box(serde_json::to_string(event).unwrap());
        }
    });
}
