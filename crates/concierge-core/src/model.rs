//! What the core asks of a model and what it gets back (provider-neutral).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::id::AgentId;
use crate::message::Message;
use crate::tool::ToolDef;

/// A chat request built by the LLM planner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The agent on whose behalf the model is asked.
    pub agent: AgentId,
    /// The model named by the agent, if any (the runtime default otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Arc<[ToolDef]>,
    /// Whether and which tool the model must call.
    pub tool_choice: ToolChoice,
    /// Sampling temperature; `None` leaves the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The most tokens the reply may have; `None` leaves the model's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// Tool choice, as providers understand it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// A model's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelReply {
    /// The text, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The tool calls, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ModelToolCall>,
    /// Tokens used, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model stopped, as the provider put it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The output guardrail that stopped the reply, checked before it was
    /// journaled (its text and calls are then withheld, and the run ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrail: Option<crate::guardrail::GuardrailTrip>,
}

impl ModelReply {
    /// A text-only reply.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// A reply that calls one tool; `arguments` is the raw JSON text.
    pub fn tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            tool_calls: vec![ModelToolCall {
                name: name.into(),
                arguments: arguments.into(),
            }],
            ..Self::default()
        }
    }

    /// Adds usage (with an unknown cost).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage::tokens(input_tokens, output_tokens));
        self
    }
}

/// A tool call as the model sent it. The provider's own call id is not kept:
/// the core numbers calls itself (some servers reuse ids).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// The function name (may name no tool).
    pub name: String,
    /// The arguments as raw text (may not be valid JSON).
    pub arguments: String,
}

/// Token counts and what they cost.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt sent to the model.
    pub input_tokens: u64,
    /// Tokens in the model's reply.
    pub output_tokens: u64,
    /// Cost in US dollars; `None` when a model's price is not known (never
    /// shown as zero: unknown is not free).
    #[serde(default = "zero_cost")]
    pub cost_usd: Option<f64>,
}

fn zero_cost() -> Option<f64> {
    Some(0.0)
}

impl Default for Usage {
    /// Nothing used, nothing spent.
    fn default() -> Self {
        Self {
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: Some(0.0),
        }
    }
}

impl Usage {
    /// Token counts whose cost is not known yet.
    pub fn tokens(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            cost_usd: None,
        }
    }

    /// Adds `other` to `self`; an unknown cost makes the total unknown.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }

    /// Whether no tokens were counted.
    pub fn is_zero(&self) -> bool {
        self.input_tokens == 0 && self.output_tokens == 0
    }
}
