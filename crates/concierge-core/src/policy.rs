//! Run policy: caps and confirmation.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Limits and confirmation rules for a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunPolicy {
    /// How many times the planner is consulted in one run (10 by default).
    pub max_iterations: u32,
    /// How many tool calls one run may make.
    pub max_tool_calls: u32,
    /// How many tool failures in a row end the tool phase.
    pub max_consecutive_tool_failures: u32,
    /// Wall-clock budget for a run in milliseconds (time parked for a
    /// confirmation does not count); none by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_budget_ms: Option<u64>,
    /// Which tool calls need the person's approval.
    pub confirmation: ConfirmationPolicy,
    /// How deep agents may call agents: a run at this depth (a top-level
    /// session is at 0) makes no agent call.
    pub max_depth: u32,
    /// How many agent calls one run may make; a child's runs get what is
    /// left of its parent's, so the cap holds across the tree.
    pub max_agent_calls: u32,
}

impl Default for RunPolicy {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            max_tool_calls: 32,
            max_consecutive_tool_failures: 3,
            time_budget_ms: None,
            confirmation: ConfirmationPolicy::Annotated,
            max_depth: 3,
            max_agent_calls: 8,
        }
    }
}

impl RunPolicy {
    /// This policy with `delta` applied on top.
    pub fn with(mut self, delta: &PolicyDelta) -> Self {
        if let Some(v) = delta.max_iterations {
            self.max_iterations = v;
        }
        if let Some(v) = delta.max_tool_calls {
            self.max_tool_calls = v;
        }
        if let Some(v) = delta.max_consecutive_tool_failures {
            self.max_consecutive_tool_failures = v;
        }
        if let Some(v) = delta.time_budget_ms {
            self.time_budget_ms = v;
        }
        if let Some(v) = delta.confirmation {
            self.confirmation = v;
        }
        if let Some(v) = delta.max_depth {
            self.max_depth = v;
        }
        if let Some(v) = delta.max_agent_calls {
            self.max_agent_calls = v;
        }
        self
    }
}

/// A partial policy: the fields that are set replace the agent's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyDelta {
    /// Replaces `max_iterations`.
    pub max_iterations: Option<u32>,
    /// Replaces `max_tool_calls`.
    pub max_tool_calls: Option<u32>,
    /// Replaces `max_consecutive_tool_failures`.
    pub max_consecutive_tool_failures: Option<u32>,
    /// Replaces `time_budget_ms` (`Some(None)` removes the budget).
    pub time_budget_ms: Option<Option<u64>>,
    /// Replaces `confirmation`.
    pub confirmation: Option<ConfirmationPolicy>,
    /// Replaces `max_depth`.
    pub max_depth: Option<u32>,
    /// Replaces `max_agent_calls`.
    pub max_agent_calls: Option<u32>,
}

impl PolicyDelta {
    /// Merges `other` over `self` (fields set in `other` win).
    pub fn merge(mut self, other: &PolicyDelta) -> Self {
        if other.max_iterations.is_some() {
            self.max_iterations = other.max_iterations;
        }
        if other.max_tool_calls.is_some() {
            self.max_tool_calls = other.max_tool_calls;
        }
        if other.max_consecutive_tool_failures.is_some() {
            self.max_consecutive_tool_failures = other.max_consecutive_tool_failures;
        }
        if other.time_budget_ms.is_some() {
            self.time_budget_ms = other.time_budget_ms;
        }
        if other.confirmation.is_some() {
            self.confirmation = other.confirmation;
        }
        if other.max_depth.is_some() {
            self.max_depth = other.max_depth;
        }
        if other.max_agent_calls.is_some() {
            self.max_agent_calls = other.max_agent_calls;
        }
        self
    }
}

/// What an agent is shown of what is remembered about the person
/// (`[memory]` in its file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryPolicy {
    /// How many memories, the most relevant to the person's message, are
    /// put into the agent's context when a run starts (0: none; the agent
    /// may still `recall` them with the `memory` toolset).
    #[serde(default)]
    pub recall: u32,
}

impl MemoryPolicy {
    /// Whether the agent is shown no memories.
    pub fn is_off(&self) -> bool {
        self.recall == 0
    }
}

/// Which tool calls wait for the person's approval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationPolicy {
    /// Tools annotated `requires_confirmation`.
    #[default]
    Annotated,
    /// Those, and every tool that is not `read_only`.
    SideEffects,
    /// None: every call runs at once.
    Never,
}

/// A limit a run can reach; reaching one moves the run to synthesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    /// `max_iterations`.
    Iterations,
    /// `max_tool_calls`.
    ToolCalls,
    /// `max_consecutive_tool_failures`.
    ConsecutiveToolFailures,
    /// `time_budget_ms`.
    TimeBudget,
    /// The conversation went back to an agent it had left in the same run
    /// with no tool progress in between (A → B → A).
    HandoffLoop,
    /// `max_depth`: an agent call would go deeper than agents may call agents.
    Depth,
    /// `max_agent_calls`: the run (or its tree) made all the agent calls it may.
    AgentCalls,
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cap::Iterations => "the iteration limit",
            Cap::ToolCalls => "the tool call limit",
            Cap::ConsecutiveToolFailures => "the limit of consecutive tool failures",
            Cap::TimeBudget => "the time budget",
            Cap::HandoffLoop => "a handoff loop",
            Cap::Depth => "the limit on how deep agents may call agents",
            Cap::AgentCalls => "the limit of agent calls",
        })
    }
}
