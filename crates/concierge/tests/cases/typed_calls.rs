//! A custom planner's typed calls (`Calculator::plan(args)`, checked by the
//! compiler) run through a runtime on any engine, as the core runs them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;

use concierge::core::{Cap, ModelReply, Plan, PlanView, Planner, summarize_results};
use concierge::{AgentSpec, Message, RunOptions, RunStatus, Runtime, ToolOutcome, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{EngineUnderTest, OnEngine};

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct CalcArgs {
    pub a: i64,
    pub b: i64,
}

/// Multiplies two integers.
#[tool(read_only)]
pub async fn calculator(args: CalcArgs) -> Result<i64, String> {
    args.a
        .checked_mul(args.b)
        .ok_or_else(|| "the product is too large".to_string())
}

/// Squares the number in the person's message with the calculator, then
/// answers with the result: a planner in Rust, no model and no rules.
pub struct Squarer;

impl Planner for Squarer {
    fn next(&self, view: &PlanView<'_>) -> Plan {
        let results = view.history.iter().rev().find_map(|m| match m {
            Message::Tool { outcome, .. } => Some(outcome.clone()),
            _ => None,
        });
        if let Some(outcome) = results {
            return match outcome {
                ToolOutcome::Ok(value) => Plan::Answer(format!("The square is {value}.")),
                ToolOutcome::Error(error) => Plan::Answer(format!("I could not square it: {}", error.message)),
            };
        }
        let Some(n) = view
            .last_user_message()
            .and_then(|(_, text)| text.split_whitespace().find_map(|w| w.parse::<i64>().ok()))
        else {
            return Plan::Clarify("Which number should I square?".into());
        };
        Plan::CallTools {
            text: String::new(),
            calls: vec![Calculator::plan(CalcArgs { a: n, b: n })],
        }
    }

    fn on_model_reply(&self, _view: &PlanView<'_>, reply: &ModelReply) -> Plan {
        Plan::Answer(reply.text.clone())
    }

    fn synthesize(&self, view: &PlanView<'_>, _cap: Cap) -> Plan {
        Plan::Answer(summarize_results(view))
    }
}

pub async fn a_custom_planners_typed_call_runs_through_the_runtime(engine: &EngineUnderTest) {
    let rt = Runtime::builder()
        .tool(Calculator)
        .agent(AgentSpec::new("squarer").tool(Calculator::NAME))
        .planner("squarer", Arc::new(Squarer))
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let squarer = rt.client("squarer").unwrap();
    let out = squarer
        .run("square 12 please", RunOptions::new().session_id("s1"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.reply.as_deref(), Some("The square is 144."));
    assert_eq!(out.tool_executions.len(), 1);
    assert_eq!(out.tool_executions[0].arguments, json!({"a": 12, "b": 12}));
    assert_eq!(out.tool_executions[0].outcome, ToolOutcome::Ok(json!(144)));

    // The tool's own error reaches the planner, which answers with it.
    let out = squarer
        .run("square 9999999999 please", RunOptions::new().session_id("s2"))
        .await
        .unwrap();
    assert_eq!(
        out.reply.as_deref(),
        Some("I could not square it: the product is too large")
    );
}
