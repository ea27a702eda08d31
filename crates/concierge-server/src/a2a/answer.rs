//! The answer to the question a task waits on, as a message on the task
//! says it: in words ("yes", "no", "2", which the runtime reads as the
//! other front doors' answers are read), or as a data part quoting the
//! call: `{"callId", "fingerprint", "decision": "approve" | "deny" |
//! "amend", "arguments", "reason"}` for a confirmation, `{"callId",
//! "option": n}` (or `"optionId"`) for a choice, `{"callId", "question",
//! "action": "accept" | "decline" | "cancel", "content"}` for a running
//! call's question (the form's values as `content`). A quoted call,
//! fingerprint or question that is not the pending one is refused, and
//! nothing runs.

use concierge::core::Decision;
use concierge::{ElicitationAction, ElicitationAnswer};
use serde_json::Value;

use super::error::A2aError;
use super::params::Said;
use super::record::Ask;

/// What an answer says.
#[derive(Clone, Debug, PartialEq)]
pub enum Reading {
    /// Words, said to the session as the person's next message.
    Words(String),
    /// A decision on the parked call.
    Decide {
        /// The call (the pending one).
        call_id: String,
        /// Its fingerprint (the pending one).
        fingerprint: String,
        /// Approve, deny or amend.
        decision: Decision,
    },
    /// The answer to a running call's question.
    Answer {
        /// The call that asks (the pending one).
        call_id: String,
        /// Which of its questions (the pending one).
        question: u32,
        /// Accept (with the form's content), decline or cancel.
        answer: ElicitationAnswer,
    },
}

/// Reads `said` as the answer to `ask`.
pub fn read(ask: Option<&Ask>, said: &Said) -> Result<Reading, A2aError> {
    let Some((index, data)) = said.data.first() else {
        let text = said.text.trim();
        if text.is_empty() {
            return Err(A2aError::field(
                "message.parts",
                "the answer is empty; say it in words (a text part) or quote the call in a data part",
            ));
        }
        return Ok(Reading::Words(text.to_string()));
    };
    let at = |key: &str| format!("message.parts[{index}].data.{key}");
    let text_of = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_string);
    let call_id = text_of("callId").ok_or_else(|| {
        A2aError::field(
            at("callId"),
            "a data part answers the call the task waits on: quote its callId (the task's status message has it)",
        )
    })?;
    let pending_call = match ask {
        Some(Ask::Confirmation(pending)) => pending.call_id.to_string(),
        Some(Ask::Choice(pending)) => pending.call_id.to_string(),
        Some(Ask::Elicitation(pending)) => pending.call_id.to_string(),
        Some(Ask::Question) | None => {
            return Err(A2aError::field(
                format!("message.parts[{index}]"),
                "the task asks a question in words; answer with a text part",
            ));
        }
    };
    if call_id != pending_call {
        return Err(A2aError::field(
            at("callId"),
            format!("call {call_id:?} is not the one the task waits on; the pending call is {pending_call:?}"),
        ));
    }
    match ask {
        Some(Ask::Confirmation(pending)) => {
            let fingerprint = text_of("fingerprint").ok_or_else(|| {
                A2aError::field(
                    at("fingerprint"),
                    "quote the call's fingerprint (the task's status message has it)",
                )
            })?;
            if fingerprint != pending.fingerprint {
                return Err(A2aError::field(
                    at("fingerprint"),
                    "the fingerprint is not the pending call's: its arguments are not the ones you were shown; read the task again and quote its fingerprint",
                ));
            }
            let decision = decision(data, &at)?;
            Ok(Reading::Decide {
                call_id,
                fingerprint,
                decision,
            })
        }
        Some(Ask::Choice(pending)) => {
            let options = &pending.choice.options;
            let n = options.len();
            let by_number = data.get("option").and_then(Value::as_u64).map(|k| k as usize);
            let by_id = data
                .get("optionId")
                .and_then(|id| options.iter().position(|o| &o.id == id))
                .map(|i| i + 1);
            match by_number.or(by_id) {
                Some(k) if (1..=n).contains(&k) => Ok(Reading::Words(k.to_string())),
                _ => Err(A2aError::field(
                    at("option"),
                    format!(
                        "the answer names no option of the choice; send \"option\": n with n from 1 to {n}, or an option's \"optionId\""
                    ),
                )),
            }
        }
        Some(Ask::Elicitation(pending)) => {
            let question = match data.get("question") {
                None => pending.question,
                Some(n) => n
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| *n == pending.question)
                    .ok_or_else(|| {
                        A2aError::field(
                            at("question"),
                            format!("the call's open question is number {}", pending.question),
                        )
                    })?,
            };
            let action = match data.get("action").and_then(Value::as_str).map(str::to_ascii_lowercase) {
                Some(a) if a == "accept" => ElicitationAction::Accept,
                Some(a) if a == "decline" => ElicitationAction::Decline,
                Some(a) if a == "cancel" => ElicitationAction::Cancel,
                _ => {
                    return Err(A2aError::field(
                        at("action"),
                        "say what you do with the question: \"action\": \"accept\" (with the form's \"content\"), \"decline\" or \"cancel\"",
                    ));
                }
            };
            let content = data.get("content").cloned();
            if action == ElicitationAction::Accept {
                pending
                    .elicitation
                    .check(content.as_ref())
                    .map_err(|problem| A2aError::field(at("content"), problem))?;
            }
            Ok(Reading::Answer {
                call_id,
                question,
                answer: ElicitationAnswer {
                    action,
                    content: content.filter(|_| action == ElicitationAction::Accept),
                },
            })
        }
        Some(Ask::Question) | None => Err(A2aError::field(at("callId"), "the task waits on no call")),
    }
}

/// A confirmation's decision from a data part: `decision` (or `approved`).
fn decision(data: &Value, at: &dyn Fn(&str) -> String) -> Result<Decision, A2aError> {
    let reason = data.get("reason").and_then(Value::as_str).map(str::to_string);
    let kind = match (
        data.get("decision").and_then(Value::as_str),
        data.get("approved").and_then(Value::as_bool),
    ) {
        (Some(kind), _) => kind.to_ascii_lowercase(),
        (None, Some(true)) => "approve".to_string(),
        (None, Some(false)) => "deny".to_string(),
        (None, None) => {
            return Err(A2aError::field(
                at("decision"),
                "say what you decide: \"decision\": \"approve\", \"deny\" or \"amend\" (with the complete new \"arguments\")",
            ));
        }
    };
    match kind.as_str() {
        "approve" => Ok(Decision::Approve),
        "deny" => Ok(Decision::Deny { reason }),
        "amend" => match data.get("arguments") {
            Some(arguments @ Value::Object(_)) => Ok(Decision::Amend {
                arguments: arguments.clone(),
            }),
            _ => Err(A2aError::field(
                at("arguments"),
                "an amendment needs the complete new arguments as a JSON object",
            )),
        },
        other => Err(A2aError::field(
            at("decision"),
            format!("{other:?} is no decision; send \"approve\", \"deny\" or \"amend\""),
        )),
    }
}
