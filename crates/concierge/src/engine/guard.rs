//! Running an agent's guardrails on a text or a JSON value: the core's
//! checks on text (deny, PII, length), and the ones that need the runtime (a
//! JSON schema, a custom [`Guard`](crate::guardrail::Guard), a model
//! classifier, through this executor).

use std::sync::Arc;

use concierge_core::{
    AgentId, GuardCheck, GuardStage, Guardrail, GuardrailTrip, Input, Message, ModelRequest, TextVerdict, ToolChoice,
    ToolId,
};
use serde_json::Value;

use super::{Executor, Whose};
use crate::guardrail::GuardDecision;
use crate::model::ModelContext;

/// What checking gave: the text or value to use (redacted where a check
/// redacted), and the trip that stops the run, if one did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Checked<T> {
    /// What to use instead of what was checked.
    pub(crate) value: T,
    /// The check that tripped.
    pub(crate) trip: Option<GuardrailTrip>,
}

impl Executor {
    /// Checks `text` at `stage` with `checks`, in order: redactions carry
    /// on to the next check, the first trip stops.
    pub(crate) async fn check_text(
        &self,
        stage: GuardStage,
        checks: &[Guardrail],
        text: &str,
        whose: Whose<'_>,
    ) -> Checked<String> {
        let mut text = text.to_owned();
        for guardrail in checks {
            let verdict = match guardrail.check_text(&text) {
                Some(verdict) => verdict,
                None => self.check_with_runtime(stage, guardrail, &text, None, whose).await,
            };
            match verdict {
                TextVerdict::Pass => {}
                TextVerdict::Redacted { text: redacted, .. } => text = redacted,
                TextVerdict::Trip(reason) => {
                    return Checked {
                        value: text,
                        trip: Some(trip(stage, guardrail, reason, None)),
                    };
                }
            }
        }
        Checked {
            value: text,
            trip: None,
        }
    }

    /// Checks a tool call's arguments or result (`tool`'s) at `stage`:
    /// PII is redacted in every string of the value; the other checks read
    /// its JSON (a schema, the value itself).
    pub(crate) async fn check_value(
        &self,
        stage: GuardStage,
        checks: &[Guardrail],
        value: &Value,
        tool: &ToolId,
        whose: Whose<'_>,
    ) -> Checked<Value> {
        let mut value = value.clone();
        for guardrail in checks {
            let verdict = match &guardrail.check {
                GuardCheck::Pii { .. } => {
                    redact_strings(&mut value, guardrail);
                    TextVerdict::Pass
                }
                _ => {
                    let json = value.to_string();
                    match guardrail.check_text(&json) {
                        Some(verdict) => verdict,
                        None => {
                            self.check_with_runtime(stage, guardrail, &json, Some(&value), whose)
                                .await
                        }
                    }
                }
            };
            match verdict {
                TextVerdict::Pass => {}
                TextVerdict::Redacted { text, .. } => match serde_json::from_str(&text) {
                    Ok(replaced) => value = replaced,
                    Err(_) => {
                        let reason = "its check replaced it with something that is not JSON".to_string();
                        return Checked {
                            value,
                            trip: Some(trip(stage, guardrail, reason, Some(tool))),
                        };
                    }
                },
                TextVerdict::Trip(reason) => {
                    return Checked {
                        value,
                        trip: Some(trip(stage, guardrail, reason, Some(tool))),
                    };
                }
            }
        }
        Checked { value, trip: None }
    }

    /// The checks the core cannot run: a schema, a custom check, a classifier.
    async fn check_with_runtime(
        &self,
        stage: GuardStage,
        guardrail: &Guardrail,
        text: &str,
        value: Option<&Value>,
        whose: Whose<'_>,
    ) -> TextVerdict {
        match &guardrail.check {
            GuardCheck::JsonSchema { schema } => check_schema(schema, text, value),
            GuardCheck::Custom { guard } => match self.custom_guards().get(guard) {
                Some(custom) => match custom.check(stage, text) {
                    GuardDecision::Pass => TextVerdict::Pass,
                    GuardDecision::Replace(text) => TextVerdict::Redacted {
                        text,
                        kinds: Vec::new(),
                    },
                    GuardDecision::Trip(reason) => TextVerdict::Trip(reason),
                },
                // Closed, not open: a check that cannot run lets nothing through.
                None => TextVerdict::Trip(format!("its check '{guard}' is not available on this server")),
            },
            GuardCheck::Classifier { instructions, model } => {
                self.classify(instructions, model.as_deref(), stage, text, whose).await
            }
            GuardCheck::Deny { .. } | GuardCheck::Pii { .. } | GuardCheck::MaxLength { .. } => {
                guardrail.check_text(text).unwrap_or(TextVerdict::Pass)
            }
        }
    }

    /// Asks a model whether `text` may pass, through this executor (hooks,
    /// metrics, retries): `ALLOW`, or `BLOCK: <reason>`. A classifier that
    /// cannot answer lets nothing through.
    async fn classify(
        &self,
        instructions: &str,
        model: Option<&str>,
        stage: GuardStage,
        text: &str,
        whose: Whose<'_>,
    ) -> TextVerdict {
        let what = match stage {
            GuardStage::Input => "a message a person sent to an assistant",
            GuardStage::Output => "an assistant's reply, before the person reads it",
            GuardStage::ToolInput => "the arguments of a tool call an assistant is about to make",
            GuardStage::ToolOutput => "the result of a tool call, before the assistant reads it",
        };
        let request = ModelRequest {
            agent: AgentId::new("guardrail"),
            model: model.map(str::to_owned),
            system: format!(
                "You check {what}. Do not let through: {instructions}\n\
                 Answer with one line: ALLOW if it may pass, or BLOCK: followed by the reason, \
                 in a few words a person reads (e.g. \"BLOCK: it asks for another customer's data\")."
            ),
            messages: vec![Message::user(text)],
            tools: Arc::from([]),
            tool_choice: ToolChoice::None,
            temperature: Some(0.0),
            max_tokens: Some(100),
        };
        // Boxed: a classifier's call is a model call, whose reply may be checked.
        let (answer, _) = Box::pin(self.call_model(
            whose.session,
            whose.run.clone(),
            0,
            &request,
            &ModelContext::default(),
            &[],
        ))
        .await;
        match answer {
            Input::ModelReplied { reply, .. } => read_classification(&reply.text),
            _ => TextVerdict::Trip("its check could not be made (the model did not answer)".into()),
        }
    }
}

/// `ALLOW`, or `BLOCK: reason`; anything else trips (it could not decide).
fn read_classification(answer: &str) -> TextVerdict {
    let line = answer.trim().trim_matches(|c: char| c == '"' || c == '*' || c == '`');
    let upper = line.to_ascii_uppercase();
    if upper.starts_with("ALLOW") {
        return TextVerdict::Pass;
    }
    if upper.starts_with("BLOCK") {
        let reason = line
            .get(5..)
            .unwrap_or_default()
            .trim_start_matches([':', ' ', '-'])
            .trim()
            .trim_end_matches('.');
        let reason = if reason.is_empty() {
            "a check judged it not allowed".to_string()
        } else {
            reason.to_string()
        };
        return TextVerdict::Trip(reason);
    }
    TextVerdict::Trip("its check could not decide".into())
}

/// Checks `value` (or `text` as JSON) against `schema`.
fn check_schema(schema: &Value, text: &str, value: Option<&Value>) -> TextVerdict {
    let parsed;
    let value = match value {
        Some(value) => value,
        None if text.trim().is_empty() => return TextVerdict::Pass,
        None => match serde_json::from_str::<Value>(text.trim()) {
            Ok(v) => {
                parsed = v;
                &parsed
            }
            Err(_) => return TextVerdict::Trip("it is not JSON, and JSON in a set form is expected".into()),
        },
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(validator) => validator,
        Err(e) => return TextVerdict::Trip(format!("its schema cannot be used ({e})")),
    };
    match validator.iter_errors(value).next() {
        None => TextVerdict::Pass,
        Some(error) => {
            let at = error.instance_path().to_string();
            let place = if at.is_empty() {
                String::new()
            } else {
                format!(" at {at}")
            };
            TextVerdict::Trip(format!("it is not in the expected form{place}: {error}"))
        }
    }
}

/// Redacts PII in every string of `value` (keys are left as they are).
fn redact_strings(value: &mut Value, guardrail: &Guardrail) {
    match value {
        Value::String(s) => {
            if let Some(TextVerdict::Redacted { text, .. }) = guardrail.check_text(s) {
                *s = text;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, guardrail)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_strings(v, guardrail)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn trip(stage: GuardStage, guardrail: &Guardrail, reason: String, tool: Option<&ToolId>) -> GuardrailTrip {
    GuardrailTrip {
        stage,
        guardrail: guardrail.name().to_owned(),
        reason,
        tool: tool.cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_classifiers_answer_is_read_and_anything_else_trips() {
        assert_eq!(read_classification("ALLOW"), TextVerdict::Pass);
        assert_eq!(read_classification("**allow**"), TextVerdict::Pass);
        assert_eq!(
            read_classification("BLOCK: it asks for another customer's data."),
            TextVerdict::Trip("it asks for another customer's data".into())
        );
        assert!(matches!(read_classification("I think so"), TextVerdict::Trip(_)));
    }

    #[test]
    fn a_schema_check_reads_text_as_json_and_says_where_it_is_wrong() {
        let schema =
            serde_json::json!({"type": "object", "required": ["total"], "properties": {"total": {"type": "number"}}});
        assert_eq!(check_schema(&schema, "{\"total\": 3}", None), TextVerdict::Pass);
        assert!(matches!(check_schema(&schema, "three", None), TextVerdict::Trip(r) if r.contains("not JSON")));
        assert!(
            matches!(check_schema(&schema, "{\"total\": \"3\"}", None), TextVerdict::Trip(r) if r.contains("/total"))
        );
    }
}
