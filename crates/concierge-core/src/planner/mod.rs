//! Planners decide a run's next step.
//!
//! A planner is pure: it looks at the agent, the history and the blackboard
//! and returns a [`Plan`]. The [`LlmPlanner`] decides by asking a model
//! (it returns [`Plan::CallModel`], then interprets the reply); the
//! [`RulesPlanner`] maps text to tools directly, so an agent can run with no
//! model at all. A custom [`Planner`] registered in the catalog plans in
//! Rust; `#[tool]` gives every tool a typed `plan(args)` that builds its
//! [`PlannedCall`].

mod llm;
mod rules;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::AgentSpec;
use crate::blackboard::Blackboard;
use crate::history::{RunningSummary, TurnIndex};
use crate::message::Message;
use crate::model::{ModelReply, ModelRequest};
use crate::policy::Cap;
use crate::tool::ToolDef;

pub use llm::{LlmPlanner, parse_arguments};
pub use rules::{CompiledRules, RulesPlanner, render_value, summarize_results};

/// What a planner sees.
#[derive(Clone, Copy, Debug)]
pub struct PlanView<'a> {
    /// The agent in charge.
    pub agent: &'a AgentSpec,
    /// The tools it may call (including handoff tools).
    pub tools: &'a Arc<[ToolDef]>,
    /// The conversation so far.
    pub history: &'a [Message],
    /// Where each of its turns begins.
    pub turns: &'a TurnIndex,
    /// Shared knowledge: the goal, what is known so far, and every tool execution.
    pub blackboard: &'a Blackboard,
    /// The model's running summary of the conversation's first turns, if it wrote one.
    pub summary: Option<&'a RunningSummary>,
}

impl PlanView<'_> {
    /// The text of the latest user message, and its index in the history.
    pub fn last_user_message(&self) -> Option<(usize, &str)> {
        self.history.iter().enumerate().rev().find_map(|(i, m)| match m {
            Message::User { content } => Some((i, content.as_str())),
            _ => None,
        })
    }
}

/// What a planner decides to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Ask the model this; its reply goes to [`Planner::on_model_reply`].
    CallModel(ModelRequest),
    /// Call these tools (with optional text to show alongside).
    CallTools {
        /// Text that accompanies the calls.
        text: String,
        /// The tool calls to make.
        calls: Vec<PlannedCall>,
    },
    /// The run's answer.
    Answer(String),
    /// Ask the person something; the run ends waiting for their reply.
    Clarify(String),
}

/// A tool call a planner wants.
///
/// `#[tool]` generates a typed constructor for each tool
/// (`Calculator::plan(CalcArgs { .. })`), checked by the compiler; the core
/// checks every call again when it is planned (see the tool-call gate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedCall {
    /// The tool name (it may name no tool).
    pub name: String,
    /// The arguments; a JSON string stands for text that was not valid JSON.
    pub arguments: Value,
}

impl PlannedCall {
    /// A call of `name` with arguments already in JSON.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            name: name.into(),
            arguments,
        }
    }

    /// A call of `name` with typed arguments, serialized to JSON.
    ///
    /// Arguments that cannot be serialized (a map with non-string keys, a
    /// `Serialize` impl that fails) become a JSON string saying why: the core
    /// refuses the call with an `invalid_arguments` error the planner sees,
    /// rather than the step failing.
    pub fn typed<A: Serialize + ?Sized>(name: impl Into<String>, arguments: &A) -> Self {
        let arguments = serde_json::to_value(arguments)
            .unwrap_or_else(|error| Value::String(format!("the arguments could not be serialized: {error}")));
        Self::new(name, arguments)
    }
}

/// Decides the next step of a run.
pub trait Planner {
    /// The next step, at the start of a run or after tool results.
    fn next(&self, view: &PlanView<'_>) -> Plan;

    /// Interprets the model's reply to a [`Plan::CallModel`].
    fn on_model_reply(&self, view: &PlanView<'_>, reply: &ModelReply) -> Plan;

    /// The final step when a cap was reached: answer with what is known.
    fn synthesize(&self, view: &PlanView<'_>, cap: Cap) -> Plan;
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    #[derive(Serialize)]
    struct Add {
        a: i64,
        b: i64,
    }

    #[test]
    fn typed_calls_serialize_their_arguments() {
        let call = PlannedCall::typed("add", &Add { a: 2, b: 3 });
        assert_eq!(call, PlannedCall::new("add", json!({"a": 2, "b": 3})));
    }

    #[test]
    fn arguments_that_cannot_be_serialized_become_a_reason() {
        let mut map = BTreeMap::new();
        map.insert((1, 2), "pair keys are not JSON object keys");
        let call = PlannedCall::typed("add", &map);
        let Value::String(reason) = &call.arguments else {
            panic!("expected a reason, got {}", call.arguments)
        };
        assert!(reason.contains("could not be serialized"), "{reason}");
    }
}
