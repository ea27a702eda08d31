//! A session's history in AG-UI's message form (`MESSAGES_SNAPSHOT`).
//!
//! The i-th message of session `s` has the id `s-i`; the text messages and
//! tool results streamed during a run carry the same ids, so a client's
//! messages agree with the snapshot. The person's messages keep the ids the
//! client gave them (matched by their text, from the latest back), so a
//! client's own messages keep their place.

use concierge::{Message, SessionId};
use serde_json::{Value, json};

/// The id of the `index`-th message of `session`'s history.
pub fn message_id(session: &SessionId, index: usize) -> String {
    format!("{session}-{index}")
}

/// The AG-UI id of `call_id`, a call of `session` (whose root is `root`):
/// the call id itself in the root session, prefixed by the child session in
/// a child run (call ids are numbered per session).
pub fn tool_call_id(root: &SessionId, session: &SessionId, call_id: &str) -> String {
    if session == root {
        call_id.to_string()
    } else {
        format!("{session}/{call_id}")
    }
}

/// `history` of `session` as AG-UI messages; `client` are the client's
/// user messages as (id, text), in order.
pub fn snapshot(session: &SessionId, history: &[Message], client: &[(String, String)]) -> Vec<Value> {
    let mut messages: Vec<Value> = history
        .iter()
        .enumerate()
        .map(|(i, message)| to_agui(session, i, message))
        .collect();
    // The person's messages, latest first, take the client's ids where their
    // texts agree (one the client did not send, such as a choice's number
    // said for it, keeps its own).
    let mut theirs = client.iter().rev().peekable();
    for (message, original) in messages.iter_mut().zip(history).rev() {
        if let Message::User { content } = original {
            if let Some((id, _)) = theirs.next_if(|(_, text)| text == content) {
                message["id"] = json!(id);
            }
        }
    }
    messages
}

fn to_agui(session: &SessionId, index: usize, message: &Message) -> Value {
    let id = message_id(session, index);
    match message {
        Message::System { content } => json!({"id": id, "role": "system", "content": content}),
        Message::User { content } => json!({"id": id, "role": "user", "content": content}),
        Message::Assistant {
            agent,
            content,
            tool_calls,
        } => {
            let mut value = json!({"id": id, "role": "assistant", "name": agent});
            if !content.is_empty() {
                value["content"] = json!(content);
            }
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": tool_call_id(session, session, call.id.as_str()),
                            "type": "function",
                            "function": {"name": call.name, "arguments": arguments_text(&call.arguments)},
                        })
                    })
                    .collect();
                value["toolCalls"] = json!(calls);
            }
            value
        }
        Message::Tool { call_id, outcome, .. } => {
            let mut value = json!({
                "id": id,
                "role": "tool",
                "toolCallId": call_id,
                "content": outcome.to_model_text(),
            });
            if let concierge::ToolOutcome::Error(error) = outcome {
                value["error"] = json!(error.to_string());
            }
            value
        }
    }
}

/// A call's arguments as the JSON text AG-UI carries (a string the model
/// sent that was not JSON is kept as it was).
pub fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
