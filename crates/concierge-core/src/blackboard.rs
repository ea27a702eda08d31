//! The blackboard: what the session knows (the goal, the information
//! available so far, and the log of tool executions).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::{CallId, RunId, ToolId};
use crate::tool::{ToolOutcome, ToolSpec};

/// How many of the latest tool executions a cacheable call's result is
/// looked for in.
pub const CACHE_WINDOW: usize = 256;

/// Shared knowledge of a session: the goal, required versus available
/// information, and the log of every tool execution.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Blackboard {
    /// The current goal (the person's latest request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<Goal>,
    /// Information known so far, by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub available: BTreeMap<String, Value>,
    /// Every tool execution of the session, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<ToolExecution>,
    /// Planner iterations of the current (or last) run.
    #[serde(default)]
    pub iterations: u32,
    /// Confidence in the last answer, from 0 to 1.
    #[serde(default)]
    pub confidence: f32,
}

impl Blackboard {
    /// Keys the goal requires that are not available yet.
    pub fn missing_information(&self) -> Vec<String> {
        match &self.goal {
            Some(goal) => goal
                .required
                .iter()
                .filter(|key| !self.available.contains_key(*key))
                .cloned()
                .collect(),
            None => Vec::new(),
        }
    }

    /// Whether everything the goal requires is available.
    pub fn has_required_information(&self) -> bool {
        self.missing_information().is_empty()
    }

    /// Whether `tool` ran successfully in this session.
    pub fn was_tool_used(&self, tool: &ToolId) -> bool {
        self.log.iter().any(|e| &e.tool == tool && e.outcome.is_ok())
    }

    /// The latest successful result of `tool`.
    pub fn tool_result(&self, tool: &ToolId) -> Option<&Value> {
        self.log.iter().rev().find_map(|e| match &e.outcome {
            ToolOutcome::Ok(value) if &e.tool == tool => Some(value),
            _ => None,
        })
    }

    /// A successful execution of `tool` with arguments of this fingerprint,
    /// among the latest [`CACHE_WINDOW`] executions (so a lookup costs the
    /// same however long the conversation).
    pub fn cached(&self, tool: &ToolId, fingerprint: &str) -> Option<&ToolExecution> {
        self.log
            .iter()
            .rev()
            .take(CACHE_WINDOW)
            .find(|e| e.fingerprint == fingerprint && &e.tool == tool && e.outcome.is_ok())
    }

    /// Keeps what a successful call of `spec` provides (its declared
    /// `provides` keys, from its result `value`).
    pub fn take_provided(&mut self, spec: &ToolSpec, value: &Value) {
        for key in &spec.provides {
            let provided = value.get(key).cloned().unwrap_or_else(|| value.clone());
            self.available.insert(key.clone(), provided);
        }
    }

    /// A successful call of `tool` with arguments of this fingerprint made
    /// before the conversation was forked: done there, not to be done again.
    pub fn done_before_fork(&self, tool: &ToolId, fingerprint: &str) -> Option<&ToolExecution> {
        // A fork's executions open the log (the fork starts with them).
        self.log
            .iter()
            .take_while(|e| e.forked)
            .find(|e| e.fingerprint == fingerprint && &e.tool == tool && e.outcome.is_ok())
    }
}

/// The goal of the current run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Goal {
    /// What the person asked for.
    pub description: String,
    /// Keys the goal needs (from the agent's `required_information`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
}

/// One entry of the execution log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolExecution {
    /// The run that made the call.
    pub run_id: RunId,
    /// The call's id, as in its `tool_requested` event.
    pub call_id: CallId,
    /// The tool that was called.
    pub tool: ToolId,
    /// The arguments as the model or planner gave them.
    pub arguments: Value,
    /// The fingerprint of the arguments.
    pub fingerprint: String,
    /// How long it took, in milliseconds (zero when not run).
    pub duration_ms: u64,
    /// The result or the error.
    pub outcome: ToolOutcome,
    /// When the result was reused, the call it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<CallId>,
    /// Whether the call was made in the conversation this one was forked
    /// from (a fork answers the same call again with its result).
    #[serde(default, skip_serializing_if = "is_false")]
    pub forked: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl ToolExecution {
    /// Whether the call succeeded.
    pub fn success(&self) -> bool {
        self.outcome.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn execution(n: usize, forked: bool) -> ToolExecution {
        ToolExecution {
            run_id: "r".into(),
            call_id: format!("c{n}").into(),
            tool: "lookup".into(),
            arguments: Value::Null,
            fingerprint: format!("f{n}"),
            duration_ms: 0,
            outcome: ToolOutcome::Ok(Value::from(n)),
            reused_from: None,
            forked,
        }
    }

    #[test]
    fn a_cached_result_is_found_among_the_latest_executions_and_a_forks_among_its_first() {
        let mut board = Blackboard::default();
        board.log.extend((0..3).map(|n| execution(n, true)));
        board.log.extend((3..CACHE_WINDOW + 10).map(|n| execution(n, false)));
        let tool = ToolId::from("lookup");
        assert!(board.cached(&tool, &format!("f{}", CACHE_WINDOW + 9)).is_some());
        assert!(board.cached(&tool, "f10").is_some(), "within the latest {CACHE_WINDOW}");
        assert!(board.cached(&tool, "f5").is_none(), "older than the window");
        assert!(board.cached(&ToolId::from("other"), "f20").is_none());
        assert!(board.done_before_fork(&tool, "f1").is_some());
        assert!(board.done_before_fork(&tool, "f4").is_none(), "made after the fork");
    }
}
