//! Planners decide a run's next step.
//!
//! A planner is pure: it looks at the agent, the history and the blackboard
//! and returns a [`Decision`]. The [`LlmPlanner`] decides by asking a model
//! (it returns [`Decision::CallModel`], then interprets the reply); the
//! [`RulesPlanner`] maps text to tools directly, so an agent can run with no
//! model at all.

pub mod llm;
pub mod rules;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::AgentSpec;
use crate::blackboard::Blackboard;
use crate::message::Message;
use crate::model::{ModelReply, ModelRequest};
use crate::policy::Cap;
use crate::tool::ToolDef;

pub use llm::LlmPlanner;
pub use rules::RulesPlanner;

/// Which planner a run uses (fixed when the run starts, recorded in its input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlannerMode {
    /// Ask a model.
    Model,
    /// Use the agent's rules.
    Rules,
    /// Use the custom planner registered for the agent in the catalog.
    Custom,
}

/// What a planner sees.
#[derive(Clone, Copy, Debug)]
pub struct PlanView<'a> {
    /// The agent in charge.
    pub agent: &'a AgentSpec,
    /// The tools it may call (including handoff tools).
    pub tools: &'a Arc<[ToolDef]>,
    /// The conversation so far.
    pub history: &'a [Message],
    /// What is known.
    pub blackboard: &'a Blackboard,
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

/// A planner's decision.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Ask the model this; its reply goes to [`Planner::on_model_reply`].
    CallModel(ModelRequest),
    /// Call these tools (with optional text to show alongside).
    CallTools {
        /// Text that accompanies the calls.
        text: String,
        /// The calls.
        calls: Vec<PlannedCall>,
    },
    /// The run's answer.
    Answer(String),
    /// Ask the person something; the run ends waiting for their reply.
    Clarify(String),
}

/// A tool call a planner wants.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCall {
    /// The tool name (it may name no tool).
    pub name: String,
    /// The arguments; a JSON string stands for text that was not valid JSON.
    pub arguments: Value,
}

/// Decides the next step of a run.
pub trait Planner {
    /// The next step, at the start of a run or after tool results.
    fn next(&self, view: &PlanView<'_>) -> Decision;

    /// Interprets the model's reply to a [`Decision::CallModel`].
    fn on_model_reply(&self, view: &PlanView<'_>, reply: &ModelReply) -> Decision;

    /// The final step when a cap was reached: answer with what is known.
    fn synthesize(&self, view: &PlanView<'_>, cap: Cap) -> Decision;
}
