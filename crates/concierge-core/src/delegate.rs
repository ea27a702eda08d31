//! Agents as tools (a router and its specialists; `docs/architecture.md`,
//! "Agents as tools"): an agent calls another agent like a tool; the call
//! runs a child run of that agent in a child session linked to the parent's
//! call, and the child's reply is the call's result. An agent declares such
//! a tool with an [`AgentTool`](crate::AgentTool); this module holds what a
//! call of one carries and what passes between parent and child.
//!
//! The core decides everything that must replay the same way: the child's
//! session id (derived from the parent's session and call id, so a call
//! issued again after a crash finds its child), its prompt (from the tool's
//! template), its depth and its budget of agent calls. The engine runs the
//! child ([`Effect::CallAgent`](crate::Effect::CallAgent)) and answers the
//! parent with the child's reply, or with the question the child asks the
//! person ([`Input::ToolAsked`](crate::Input::ToolAsked)).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::elicitation::{ElicitationAnswer, PendingElicitation};
use crate::id::{AgentId, CallId, IdempotencyKey, RunId, SessionId};
use crate::message::ToolCall;
use crate::pending::{Decision, PendingChoice, PendingConfirmation};

/// A child session's link to the call that started it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parent {
    /// The parent session.
    pub session: SessionId,
    /// The parent's run.
    pub run: RunId,
    /// The parent's call the child answers.
    pub call_id: CallId,
    /// How deep the child is: 1 for a child of a top-level session.
    pub depth: u32,
    /// How many agent calls the child's runs may still make (what is left
    /// of the parent's budget).
    pub agent_calls: u32,
}

/// The child session id for `call` of `session`: the same for every
/// attempt of the call.
pub fn child_session(session: &SessionId, call: &CallId) -> SessionId {
    session.child(call)
}

/// A call of an agent tool, for the engine to run as a child run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentCall {
    /// The parent's run.
    pub run_id: RunId,
    /// The parent's call (its id, tool and arguments).
    pub call: ToolCall,
    /// The agent to run.
    pub agent: AgentId,
    /// The child session (see [`child_session`]).
    pub session: SessionId,
    /// The child's message.
    pub prompt: String,
    /// Who asked for the parent's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The parent session's tenant: the child belongs to it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// When the person wrote the parent's message: the child's dates count from it too.
    pub asked_at: crate::time::Timestamp,
    /// The child's link to the parent: to put on the child's first run.
    pub parent: Parent,
    /// Deduplication key of the parent's call.
    pub key: IdempotencyKey,
    /// The person's answer to the child's question, to pass on to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Forward>,
}

/// The person's answer to a question a child asked, passed on to the child.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Forward {
    /// The child's call the question is about (an engine passes the answer
    /// on only while the child still waits on it).
    pub call_id: CallId,
    /// The answer.
    pub answer: ForwardedAnswer,
}

/// An answer passed on to a child.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ForwardedAnswer {
    /// What the person wrote (the child interprets it).
    Text {
        /// The person's words.
        text: String,
    },
    /// A structured answer to the question the child's running call asks.
    Elicitation {
        /// Which of the call's questions it answers (from 0).
        question: u32,
        /// The answer.
        answer: ElicitationAnswer,
    },
    /// A structured decision on the child's parked call.
    Decision {
        /// The fingerprint of the arguments the person saw.
        fingerprint: String,
        /// The decision.
        decision: Decision,
    },
}

/// What a call asks the person instead of returning a result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "question", rename_all = "snake_case")]
pub enum Question {
    /// The tool asks the person to choose; the call runs again with the
    /// chosen option's id in its arguments.
    Choice {
        /// The question and its options.
        choice: crate::choice::Choice,
    },
    /// A child run waits for the person to approve one of its calls.
    ChildConfirmation {
        /// The child's parked call (with the child's run and call ids).
        pending: PendingConfirmation,
        /// The child session.
        session: SessionId,
    },
    /// A child run waits for the person to choose.
    ChildChoice {
        /// The child's pending choice.
        pending: PendingChoice,
        /// The child session.
        session: SessionId,
    },
    /// A child run's call asks the person something while it runs (MCP
    /// elicitation in the child): the parent waits for the answer and
    /// passes it on.
    ChildElicitation {
        /// The child's open question (with the child's run and call ids).
        pending: PendingElicitation,
        /// The child session.
        session: SessionId,
    },
    /// The call's MCP server asks the person something while the call
    /// runs (elicitation, or leave to use the model): the call stays in
    /// flight and the answer goes back to it.
    Elicitation {
        /// What is asked.
        elicitation: crate::elicitation::Elicitation,
    },
}

impl Question {
    /// What the person is asked, in words.
    pub fn text(&self) -> String {
        match self {
            Question::Choice { choice } => choice.text(),
            Question::ChildConfirmation { pending, .. } => pending.message.clone(),
            Question::ChildChoice { pending, .. } => pending.choice.text(),
            Question::ChildElicitation { pending, .. } => pending.text.clone(),
            Question::Elicitation { elicitation } => elicitation.text(),
        }
    }
}

/// Fills `{name}` placeholders of `template` from `arguments`; a `[ ... ]`
/// part is kept only if every placeholder in it has a value.
pub(crate) fn render_prompt(template: &str, arguments: &Value) -> String {
    crate::confirmation::fill_template(template, arguments)
}

/// The child's message for a call without a template: the `request`
/// argument (or the only string argument), else the arguments in words.
pub(crate) fn default_prompt(arguments: &Value) -> String {
    let Some(map) = arguments.as_object() else {
        return arguments.as_str().map(str::to_string).unwrap_or_default();
    };
    if let Some(Value::String(request)) = map.get("request") {
        return request.clone();
    }
    let strings: Vec<&str> = map.values().filter_map(Value::as_str).collect();
    if let [only] = strings.as_slice() {
        if map.len() == 1 {
            return (*only).to_string();
        }
    }
    map.iter()
        .map(|(k, v)| {
            format!(
                "{}: {}",
                crate::confirmation::humanize(k),
                crate::confirmation::readable(v)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
