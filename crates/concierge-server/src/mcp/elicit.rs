//! Asking the MCP client's person (`elicitation/create`, form mode) what a
//! parked run waits for: approving a call (yes or no) or choosing one of
//! numbered options. Only for a client that declared the elicitation
//! capability; others get the run's waiting text as before.

use concierge::core::{PendingChoice, PendingConfirmation};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use serde_json::{Value, json};

/// What the person answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// Approve the call.
    Approve,
    /// Decline the call.
    Deny,
    /// This option (1-based).
    Option(usize),
    /// The person dismissed the question: the run stays parked.
    Dismissed,
}

/// Whether the client can be asked with a form.
pub(super) fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .and_then(|info| info.capabilities.elicitation.clone())
        // An empty capability means form mode (the URL mode is opted into).
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

fn schema(value: Value) -> Result<ElicitationSchema, String> {
    let Value::Object(object) = value else {
        return Err("the form is not an object".into());
    };
    ElicitationSchema::from_json_schema(object).map_err(|e| format!("the form could not be made: {e}"))
}

async fn ask(
    peer: &Peer<RoleServer>,
    message: String,
    requested_schema: ElicitationSchema,
) -> Result<(ElicitationAction, Option<Value>), String> {
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    };
    let result = peer
        .create_elicitation(params)
        .await
        .map_err(|e| format!("the client did not answer the question: {e}"))?;
    Ok((result.action, result.content))
}

/// Asks whether to run the parked call.
pub(super) async fn confirmation(peer: &Peer<RoleServer>, pending: &PendingConfirmation) -> Result<Answer, String> {
    let question = if pending.message.is_empty() {
        format!(
            "The agent wants to run {} with {}. Approve?",
            pending.tool, pending.arguments
        )
    } else {
        pending.message.clone()
    };
    let form = schema(json!({
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "title": "Approve",
                "description": format!("Run {} (yes) or not (no)", pending.tool)
            }
        },
        "required": ["approve"]
    }))?;
    let (action, content) = ask(peer, question, form).await?;
    Ok(match action {
        ElicitationAction::Accept => match content.as_ref().and_then(|c| c.get("approve")) {
            Some(Value::Bool(true)) => Answer::Approve,
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("yes") => {
                Answer::Approve
            }
            _ => Answer::Deny,
        },
        ElicitationAction::Decline => Answer::Deny,
        _ => Answer::Dismissed,
    })
}

/// Asks which option to take.
pub(super) async fn choice(peer: &Peer<RoleServer>, pending: &PendingChoice) -> Result<Answer, String> {
    let options: Vec<Value> = pending
        .choice
        .options
        .iter()
        .enumerate()
        .map(|(i, option)| json!({"const": (i + 1).to_string(), "title": option.label}))
        .collect();
    let form = schema(json!({
        "type": "object",
        "properties": {
            "choice": {
                "type": "string",
                "title": "Choice",
                "description": pending.choice.question,
                "oneOf": options
            }
        },
        "required": ["choice"]
    }))?;
    let (action, content) = ask(peer, pending.choice.question.clone(), form).await?;
    if action != ElicitationAction::Accept {
        return Ok(Answer::Dismissed);
    }
    let picked = content.as_ref().and_then(|c| c.get("choice"));
    let number = match picked {
        Some(Value::String(s)) => s.trim().parse::<usize>().ok().or_else(|| {
            // A client may send the option's title instead of its number.
            pending.choice.options.iter().position(|o| o.label == *s).map(|i| i + 1)
        }),
        Some(Value::Number(n)) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        _ => None,
    };
    match number {
        Some(n) if (1..=pending.choice.options.len()).contains(&n) => Ok(Answer::Option(n)),
        _ => Err(format!(
            "the client's answer {} is not one of the options 1 to {}",
            picked.map_or_else(|| "(none)".to_string(), Value::to_string),
            pending.choice.options.len()
        )),
    }
}
