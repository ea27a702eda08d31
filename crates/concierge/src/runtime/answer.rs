//! The person's answer to a parked call, understood by the model when the
//! rules cannot read it ("yes, but make it urgent").
//!
//! A message sent to a session whose run waits for the person's approval
//! answers that approval. The core reads it by rules only
//! ([`interpret_answer`]): yes, no, a change it finds against the tool's
//! schema, or not an answer (the person is reminded of the question). When a
//! model is configured for the session's agent, the runtime first reads the
//! message itself, with the same rules, and asks the model once when:
//!
//! - the rules do not understand it (not an answer), or
//! - the rules read a plain yes, but the message also has a word that asks
//!   for more than a yes ([`CHANGE_WORDS`]: "yes, and put it on the 5th
//!   instead"; the rules may have read that as a yes that changes nothing).
//!
//! A "no" the rules understand never reaches the model, nor does a change
//! they understand: the core handles those as before. The model answers with
//! a decision (approve, decline, amend with the complete new arguments, or
//! unclear), which becomes a [`Decision`] for the engine (a change is checked
//! against the schema and shown back for a final yes, as the rules' are).
//! When the model says it is unclear, or its call or its answer fails, the
//! message goes to the core as before (which reminds the person). What the
//! model decided is a tracing event, not a message to the person.

use std::sync::Arc;

use concierge_core::{
    Answer, Catalog, Decision, Input, Message, ModelRequest, PendingConfirmation, SessionId, StartRun, ToolChoice,
    ToolDef, ToolSpec, check_arguments, interpret_answer,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{RunHandle, Runtime};
use crate::engine::Engine;
use crate::model::ModelContext;

/// The number the reading's model call has for hooks and traces (a run's
/// own calls count from 1).
const READING_CALL: u32 = 0;

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

/// What the runtime makes of the model's reading.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Answer the parked call so.
    Decide(Decision),
    /// Leave the message to the core's rules.
    Unclear(String),
}

impl Runtime {
    /// Answers the call parked in `session` with the person's message when
    /// the rules cannot read it and the agent's model can: the handle of the
    /// parked run going on, or `None` to send the message as usual.
    pub(super) async fn answer_with_model(
        &self,
        engine: &Arc<dyn Engine>,
        session: &SessionId,
        start: &StartRun,
        catalog: &Catalog,
    ) -> Option<RunHandle> {
        let (agent, tenant, messages, at) = (start.agent.as_ref(), start.tenant.as_deref(), &start.messages, start.at);
        let models = self.inner.executor.models();
        // Cheap checks first: most messages answer nothing, and without a
        // model there is nothing to ask.
        let could_ask = match agent.and_then(|a| catalog.agent(a)) {
            Some(resolved) => models.available_for(&resolved.spec),
            None => catalog.agents().any(|resolved| models.available_for(&resolved.spec)),
        };
        let text = messages.iter().rev().find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })?;
        if !could_ask {
            return None;
        }
        let state = engine.session(session.clone()).await.ok().flatten()?;
        if state.is_ended() || agent.is_some_and(|a| a != state.agent()) || state.tenant() != tenant {
            return None;
        }
        let pending = state.pending_confirmation()?;
        let spec = catalog.tool(&pending.tool)?;
        let owner = catalog.agent(state.agent())?;
        if catalog.custom_planner(state.agent()).is_some() || !models.available_for(&owner.spec) {
            return None;
        }
        let rules = interpret_answer(text, spec, &pending.arguments, at);
        if !asks_the_model(&rules, text) {
            return None;
        }
        let request = request(&owner.spec, spec, &pending, text);
        models.for_request(&request)?;
        // Through the executor, as a run's calls go: its retry policy, hooks
        // (traces, metrics) and prices. Numbered 0: not one of the run's calls.
        let (answered, _) = self
            .inner
            .executor
            .call_model(
                session,
                pending.run_id.clone(),
                READING_CALL,
                &request,
                &ModelContext::default(),
            )
            .await;
        let verdict = match answered {
            Input::ModelReplied { reply, .. } => match reading(&reply) {
                Some(reading) => verdict(reading, spec, &pending),
                None => Verdict::Unclear("its answer was not a decision".into()),
            },
            Input::ModelFailed { error, .. } => Verdict::Unclear(format!("the model call failed: {error}")),
            _ => Verdict::Unclear("the model call gave no answer".into()),
        };
        let decision = match verdict {
            Verdict::Decide(decision) => decision,
            Verdict::Unclear(why) => {
                tracing::info!(
                    session = %session,
                    tool = %pending.tool,
                    why,
                    "the model did not understand the answer to a confirmation; the rules answer it"
                );
                return None;
            }
        };
        tracing::info!(
            session = %session,
            tool = %pending.tool,
            decision = decision_name(&decision),
            "the model interpreted the answer to a confirmation"
        );
        let first_seq = state.last_seq() + 1;
        match engine
            .confirm(
                session.clone(),
                pending.call_id.clone(),
                pending.fingerprint.clone(),
                decision,
            )
            .await
        {
            Ok(stop) => Some(RunHandle::new(
                self.clone(),
                session.clone(),
                pending.run_id,
                stop,
                first_seq,
            )),
            Err(error) => {
                tracing::info!(
                    session = %session,
                    %error,
                    "the model's reading of a confirmation answer was refused; the rules answer it"
                );
                None
            }
        }
    }
}

/// Whether the rules' reading `rules` of `text` leaves a question for the
/// model: never for a no or a change the rules found; always when they
/// found no answer; for a yes, when the message asks for more.
fn asks_the_model(rules: &Answer, text: &str) -> bool {
    match rules {
        Answer::Decline { .. } | Answer::Amend { .. } => false,
        Answer::Unclear => true,
        Answer::Approve => text
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .any(|word| CHANGE_WORDS.contains(&word.to_lowercase().as_str())),
    }
}

/// The request that asks the model what `text` says about the parked call.
fn request(
    agent: &concierge_core::AgentSpec,
    spec: &ToolSpec,
    pending: &PendingConfirmation,
    text: &str,
) -> ModelRequest {
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
fn reading(reply: &concierge_core::ModelReply) -> Option<Reading> {
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

fn decision_name(decision: &Decision) -> &'static str {
    match decision {
        Decision::Approve => "approve",
        Decision::Deny { .. } => "decline",
        Decision::Amend { .. } => "amend",
        Decision::Invalid { .. } => "invalid",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use concierge_core::{ModelReply, Timestamp};

    use super::*;

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
