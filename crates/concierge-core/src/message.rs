//! Conversation messages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::{AgentId, CallId, ToolId};
use crate::tool::ToolOutcome;

/// One message of a session's history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Extra instructions supplied by the caller.
    System {
        /// The instructions, as the caller wrote them.
        content: String,
    },
    /// What the person said.
    User {
        /// What the person wrote.
        content: String,
    },
    /// What an agent said, and the tools it asked for.
    Assistant {
        /// The agent that spoke.
        agent: AgentId,
        /// The text (may be empty when the message only calls tools).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        content: String,
        /// The tool calls this message makes.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The agent whose call this answers.
        agent: AgentId,
        /// The call this answers.
        call_id: CallId,
        /// The tool that ran.
        tool: ToolId,
        /// What it returned, or why it failed.
        outcome: ToolOutcome,
    },
}

impl Message {
    /// A user message with this text.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// A system message with these instructions.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(agent: impl Into<AgentId>, content: impl Into<String>) -> Self {
        Message::Assistant {
            agent: agent.into(),
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    /// The role name (`system`, `user`, `assistant`, `tool`).
    pub fn role(&self) -> &'static str {
        match self {
            Message::System { .. } => "system",
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::Tool { .. } => "tool",
        }
    }

    /// The text of the message (for a tool message, its outcome as text).
    pub fn text(&self) -> String {
        match self {
            Message::System { content } | Message::User { content } => content.clone(),
            Message::Assistant { content, .. } => content.clone(),
            Message::Tool { outcome, .. } => outcome.to_model_text(),
        }
    }
}

/// A request to call a tool, as recorded in the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the core assigned to this call (unique within the session).
    pub id: CallId,
    /// The tool asked for (it may not exist: the model can be wrong).
    pub name: ToolId,
    /// The arguments. A JSON string here means the model sent text that was
    /// not valid JSON; it is kept verbatim so the history shows what was sent.
    pub arguments: Value,
}
