//! The LLM planner: the model decides.

use std::fmt::Write as _;

use serde_json::Value;

use super::rules::summarize_results;
use super::{Plan, PlanView, PlannedCall, Planner};
use crate::history::json_size;
use crate::model::{ModelReply, ModelRequest, ToolChoice};
use crate::policy::Cap;

/// Builds model requests from the agent's instructions, the history and its
/// tools, and turns replies into tool calls, answers or handoffs (a handoff
/// is a call to a `transfer_to_<agent>` tool).
#[derive(Clone, Copy, Debug, Default)]
pub struct LlmPlanner;

impl LlmPlanner {
    /// The system prompt for the agent in `view`.
    pub fn system_prompt(view: &PlanView<'_>) -> String {
        let agent = view.agent;
        let mut prompt = String::new();
        if !agent.instructions.is_empty() {
            prompt.push_str(&agent.instructions);
        } else {
            let _ = write!(prompt, "You are {}.", agent.name);
            if !agent.description.is_empty() {
                let _ = write!(prompt, " {}", agent.description);
            }
        }
        if !agent.examples.is_empty() {
            prompt.push_str("\n\nExample conversation:");
            for turn in &agent.examples {
                let _ = write!(prompt, "\nuser: {}\nagent: {}", turn.user, turn.agent);
            }
        }
        if !agent.handoffs.is_empty() {
            prompt.push_str(
                "\n\nIf the request is another agent's job, call its transfer_to_<agent> tool; the conversation moves to it.",
            );
        }
        if !agent.agent_tools.is_empty() {
            // A router agent: its specialists are tools, and the person sees
            // one answer, never the specialists.
            prompt.push_str(
                "\n\nSome of your tools are specialists: call every one the request needs, several at once for a \
                 statement with several parts. Then answer in one message that follows the order of the person's \
                 statement. Never name the specialists or tools, and never say you are transferring or handing over.",
            );
        }
        let board = view.blackboard;
        if !board.available.is_empty() {
            prompt.push_str("\n\nKnown information:");
            for (key, value) in &board.available {
                let _ = write!(prompt, "\n- {key}: {value}");
            }
        }
        let missing = board.missing_information();
        if !missing.is_empty() {
            let _ = write!(
                prompt,
                "\n\nStill needed before the goal can be met: {}.",
                missing.join(", ")
            );
        }
        prompt
    }

    /// A request with no messages yet.
    fn frame(view: &PlanView<'_>, tool_choice: ToolChoice, extra: Option<&str>) -> ModelRequest {
        let mut system = Self::system_prompt(view);
        if let Some(extra) = extra {
            system.push_str("\n\n");
            system.push_str(extra);
        }
        ModelRequest {
            agent: view.agent.id.clone(),
            model: view.agent.model.clone(),
            system,
            messages: Vec::new(),
            tools: view.tools.clone(),
            tool_choice,
            temperature: view.agent.temperature,
            max_tokens: None,
        }
    }

    /// The size of a request for `view` without its messages, in bytes, with
    /// room for a forced tool choice or a closing note: the same for every
    /// request of a step, so the window and the summary agree on it.
    /// Measured only when the agent's history policy bounds a request's
    /// size (the window needs it for nothing else).
    fn fixed_bytes(view: &PlanView<'_>) -> usize {
        const SLACK: usize = 512;
        if view.agent.history.max_request_bytes.is_none() {
            return 0;
        }
        json_size(&Self::frame(view, ToolChoice::Auto, None)).unwrap_or(0) + SLACK
    }

    fn request(view: &PlanView<'_>, tool_choice: ToolChoice, extra: Option<&str>) -> ModelRequest {
        let mut request = Self::frame(view, tool_choice, extra);
        let policy = &view.agent.history;
        request.messages = if policy.is_off() {
            view.history.to_vec()
        } else {
            policy
                .window_indexed(view.history, view.turns, view.summary, Self::fixed_bytes(view))
                .messages
        };
        request
    }

    /// The request asking the model to update the running summary, when the
    /// agent's history policy says it is due, with the number of turns the
    /// new summary covers.
    pub fn summary_request(view: &PlanView<'_>) -> Option<(usize, ModelRequest)> {
        let policy = &view.agent.history;
        if !policy.asks_model_for_summary() {
            return None;
        }
        let upto = policy.summary_due_in(view.history, view.turns.ranges(), view.summary, Self::fixed_bytes(view))?;
        let frame = Self::frame(view, ToolChoice::None, None);
        Some((upto, policy.summary_request(&frame, view.history, view.summary, upto)))
    }
}

/// Parses a model's raw argument text: empty means `{}`; text that is not JSON
/// is kept as a JSON string so the core can report it to the model.
pub fn parse_arguments(raw: &str) -> Value {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(trimmed).unwrap_or_else(|_| Value::String(raw.to_string()))
}

impl Planner for LlmPlanner {
    fn next(&self, view: &PlanView<'_>) -> Plan {
        // The run's first model call: nothing said since the person spoke.
        let first_step = match view.last_user_message() {
            Some((index, _)) => index + 1 == view.history.len(),
            None => false,
        };
        let choice = match &view.agent.first_tool {
            _ if view.tools.is_empty() => ToolChoice::None,
            Some(tool) if first_step => ToolChoice::Tool(tool.to_string()),
            _ => ToolChoice::Auto,
        };
        Plan::CallModel(Self::request(view, choice, None))
    }

    fn on_model_reply(&self, _view: &PlanView<'_>, reply: &ModelReply) -> Plan {
        if reply.tool_calls.is_empty() {
            return Plan::Answer(reply.text.clone());
        }
        let calls = reply
            .tool_calls
            .iter()
            .map(|call| PlannedCall {
                name: call.name.clone(),
                arguments: parse_arguments(&call.arguments),
            })
            .collect();
        Plan::CallTools {
            text: reply.text.clone(),
            calls,
        }
    }

    fn synthesize(&self, view: &PlanView<'_>, cap: Cap) -> Plan {
        if view.history.is_empty() {
            return Plan::Answer(summarize_results(view));
        }
        let note = format!(
            "The run reached {cap}. Do not call tools. Answer the person now with what is known, and say what is still missing."
        );
        Plan::CallModel(Self::request(view, ToolChoice::None, Some(&note)))
    }
}
