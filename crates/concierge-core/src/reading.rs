//! Reading the person's answer to a parked call with the model, when the
//! rules cannot read it fully ("yes, but make it urgent").
//!
//! A message sent to a session whose run waits for the person's approval
//! answers that approval. The rules ([`interpret_answer`]) read a yes, a no,
//! or a change they find against the tool's schema. When the run's agent
//! plans with a model, the session asks that model once, as one of the
//! run's model calls (so its usage counts in the run's and the session's
//! totals, and every engine runs it where it runs model calls), when:
//!
//! - the rules do not understand the message (not an answer), or
//! - the rules read a plain yes, but the message also has a word that asks
//!   for more than a yes ([`CHANGE_WORDS`]: "yes, and put it on the 5th
//!   instead"; the rules may have read that as a yes that changes nothing).
//!
//! A "no" the rules understand never reaches the model, nor does a change
//! they understand. The model answers with a decision (approve, decline,
//! amend with the new arguments, or unclear), which becomes the
//! [`Decision`] on the parked call (a change is checked against the schema
//! and shown back for a final yes, as the rules' are). When the model says
//! it is unclear, or its call or its answer fails, the rules' reading
//! stands (a plain yes approves; anything else reminds the person).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::AgentSpec;
use crate::confirmation::{Answer, check_arguments};
use crate::message::Message;
use crate::model::{ModelReply, ModelRequest, ToolChoice};
use crate::pending::{Decision, PendingConfirmation};
use crate::tool::{ToolDef, ToolSpec};

/// The function the model answers through.
const ANSWER_TOOL: &str = "answer_confirmation";

/// Words that, after a yes, ask for more than the yes: the model reads the
/// message then, in case it asks for a change the rules did not find.
const CHANGE_WORDS: &[&str] = &[
    "but", "and", "instead", "except", "change", "make", "put", "move", "set", "rather", "actually", "only", "with",
    "without",
];

/// The model's reading of the answer (the [`ANSWER_TOOL`] arguments).
#[derive(Debug, Deserialize)]
struct Reading {
    decision: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    reason: Option<String>,
}

/// What the model's reading comes to.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Answer the parked call so.
    Decide(Decision),
    /// The rules' reading stands; why, in words.
    Unclear(String),
}

/// Whether the rules' reading `rules` of `text` leaves a question for the
/// model: never for a no or a change the rules found; always when they
/// found no answer; for a yes, when the message asks for more.
pub(crate) fn asks_the_model(rules: &Answer, text: &str) -> bool {
    match rules {
        Answer::Decline { .. } | Answer::Amend { .. } => false,
        Answer::Unclear => true,
        Answer::Approve => text
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .any(|word| CHANGE_WORDS.contains(&word.to_lowercase().as_str())),
    }
}

/// The request that asks the model what `text` says about the parked call.
pub(crate) fn request(agent: &AgentSpec, spec: &ToolSpec, pending: &PendingConfirmation, text: &str) -> ModelRequest {
    let system = format!(
        "A person was asked to approve an action before it runs, and answered. Decide what the answer means.\n\n\
         The action: the tool `{tool}`: {description}\n\
         Its arguments now: {arguments}\n\
         The JSON schema of its arguments: {schema}\n\
         The question the person saw: {question}\n\n\
         Call `{ANSWER_TOOL}` with:\n\
         - decision \"approve\" if the person agrees to the action exactly as it is;\n\
         - \"decline\" if they do not want it;\n\
         - \"amend\" if they want it with changes (whether or not they also said yes), with \"arguments\" the \
         complete new arguments: the ones above with the person's changes applied, fitting the schema;\n\
         - \"unclear\" if the message does not answer the question.\n\
         Add a short \"reason\". If you cannot call the function, answer with its arguments as one JSON object \
         and nothing else.",
        tool = spec.name,
        description = spec.description,
        arguments = pending.arguments,
        schema = spec.input_schema,
        question = pending.message,
    );
    let parameters = json!({
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["approve", "decline", "amend", "unclear"]},
            "arguments": {"type": "object", "description": "For amend: the complete new arguments of the action."},
            "reason": {"type": "string", "description": "Why, in a few words."}
        },
        "required": ["decision"]
    });
    ModelRequest {
        agent: agent.id.clone(),
        model: agent.model.clone(),
        system,
        messages: vec![Message::user(text)],
        tools: Arc::from(vec![ToolDef {
            name: ANSWER_TOOL.into(),
            description: "Says what the person's answer means for the action.".into(),
            parameters,
        }]),
        tool_choice: ToolChoice::Tool(ANSWER_TOOL.into()),
        temperature: Some(0.0),
        max_tokens: None,
    }
}

/// The model's reading, from its call of [`ANSWER_TOOL`] or from a JSON
/// object in its text (in a code fence or not).
fn reading(reply: &ModelReply) -> Option<Reading> {
    let raw = match reply.tool_calls.iter().find(|c| c.name == ANSWER_TOOL) {
        Some(call) => call.arguments.as_str(),
        None => reply.text.as_str(),
    };
    let start = raw.find('{')?;
    let end = raw.rfind('}')?;
    serde_json::from_str(raw.get(start..=end)?).ok()
}

/// What the reading comes to for the call parked with `pending`'s
/// arguments. A change is applied over the parked arguments (a model that
/// names only what changes is understood), must change something and must
/// fit the tool's schema.
fn verdict(reading: Reading, spec: &ToolSpec, pending: &PendingConfirmation) -> Verdict {
    match reading.decision.trim().to_lowercase().as_str() {
        "approve" => Verdict::Decide(Decision::Approve),
        "decline" => Verdict::Decide(Decision::Deny {
            reason: reading.reason.filter(|r| !r.trim().is_empty()),
        }),
        "amend" => {
            let Some(Value::Object(changes)) = reading.arguments else {
                return Verdict::Unclear("it asked for a change without the new arguments".into());
            };
            let mut arguments = pending.arguments.as_object().cloned().unwrap_or_default();
            arguments.extend(changes);
            let arguments = Value::Object(arguments);
            if arguments == pending.arguments {
                return Verdict::Unclear("it asked for a change that changes nothing".into());
            }
            match check_arguments(spec, &arguments) {
                Ok(()) => Verdict::Decide(Decision::Amend { arguments }),
                Err(problem) => Verdict::Unclear(format!("its change does not fit the tool: {problem}")),
            }
        }
        other => Verdict::Unclear(format!("it answered {other:?}")),
    }
}

/// What the model's `reply` says about the call parked with `pending`.
pub(crate) fn read(reply: &ModelReply, spec: &ToolSpec, pending: &PendingConfirmation) -> Verdict {
    match reading(reply) {
        Some(reading) => verdict(reading, spec, pending),
        None => Verdict::Unclear("its answer was not a decision".into()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::confirmation::interpret_answer;
    use crate::time::Timestamp;

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "create_task",
            "Creates a task.",
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "priority": {"type": "string", "enum": ["low", "medium", "high"]},
                    "due": {"type": "string"}
                },
                "required": ["title"]
            }),
        )
    }

    fn pending() -> PendingConfirmation {
        PendingConfirmation {
            run_id: "r1".into(),
            call_id: "c1".into(),
            tool: "create_task".into(),
            arguments: json!({"title": "Fix login bug", "priority": "low"}),
            fingerprint: "f".into(),
            message: "Create it?".into(),
            session: None,
        }
    }

    #[test]
    fn only_answers_the_rules_cannot_read_fully_go_to_the_model() {
        let spec = spec();
        let args = pending().arguments;
        let ask = |text: &str| asks_the_model(&interpret_answer(text, &spec, &args, Timestamp(0)), text);
        assert!(!ask("no thanks"), "a no never reaches the model");
        assert!(!ask("nah, skip it"));
        assert!(!ask("yes"));
        assert!(!ask("yes please"));
        assert!(!ask("yes, high priority"), "a change the rules found");
        assert!(ask("yes but make it urgent"));
        assert!(ask("go ahead, and put it on the 5th instead"));
        assert!(ask("hmm, sounds about right I guess"));
    }

    #[test]
    fn the_reading_comes_from_the_function_call_or_from_text_in_a_fence() {
        let call = ModelReply::tool_call(ANSWER_TOOL, r#"{"decision": "approve"}"#);
        assert_eq!(reading(&call).unwrap().decision, "approve");
        let fenced = ModelReply::text("Sure:\n```json\n{\"decision\": \"decline\", \"reason\": \"no\"}\n```");
        assert_eq!(reading(&fenced).unwrap().decision, "decline");
        assert!(reading(&ModelReply::text("I think they agree")).is_none());
    }

    #[test]
    fn a_change_is_applied_over_the_parked_arguments_and_checked() {
        let (spec, pending) = (spec(), pending());
        let read = |json: Value| verdict(serde_json::from_value(json).unwrap(), &spec, &pending);
        assert_eq!(
            read(json!({"decision": "amend", "arguments": {"priority": "high"}})),
            Verdict::Decide(Decision::Amend {
                arguments: json!({"title": "Fix login bug", "priority": "high"})
            })
        );
        assert!(matches!(
            read(json!({"decision": "amend", "arguments": {"priority": "urgent"}})),
            Verdict::Unclear(why) if why.contains("one of")
        ));
        assert!(matches!(
            read(json!({"decision": "amend", "arguments": {"priority": "low"}})),
            Verdict::Unclear(_)
        ));
        assert!(matches!(read(json!({"decision": "amend"})), Verdict::Unclear(_)));
        assert_eq!(
            read(json!({"decision": "Decline", "reason": ""})),
            Verdict::Decide(Decision::Deny { reason: None })
        );
        assert!(matches!(read(json!({"decision": "maybe"})), Verdict::Unclear(_)));
    }
}
