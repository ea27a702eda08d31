//! A request's parameters, read with the path of the field that does not
//! fit (`message.parts[0]`), and the message checked for what this agent
//! takes: from the user, with text or data parts.

use a2a::{Message, PartContent, Role};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::A2aError;

/// Reads `value` as a `T`; a mismatch names the field (under `prefix`, if one).
pub fn read<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, A2aError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.inner().to_string();
        // "missing field `messageId`" names the field below the path.
        let missing = inner
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
            .map(str::to_string);
        let mut field = if path == "." { String::new() } else { path };
        if let Some(missing) = missing {
            if !field.is_empty() {
                field.push('.');
            }
            field.push_str(&missing);
        }
        let field = match (prefix.is_empty(), field.is_empty()) {
            (true, true) => "params".to_string(),
            (true, false) => field,
            (false, true) => prefix.to_string(),
            (false, false) => format!("{prefix}.{field}"),
        };
        A2aError::field(field, describe(&inner))
    })
}

/// serde's wording, said for a person.
fn describe(inner: &str) -> String {
    let inner = inner.split(" at line ").next().unwrap_or(inner);
    if inner.starts_with("missing field") {
        "this field is required".to_string()
    } else {
        inner.replace('`', "\"")
    }
}

/// What a message says: its text, and its data parts.
#[derive(Clone, Debug, Default)]
pub struct Said {
    /// The text parts, joined by blank lines.
    pub text: String,
    /// The data parts, with the index of each in `parts`.
    pub data: Vec<(usize, Value)>,
}

/// Checks a message a client sends: from the user, with an id and at least
/// one part, each text or data.
pub fn check_message(message: &Message) -> Result<Said, A2aError> {
    if message.message_id.trim().is_empty() {
        return Err(A2aError::field(
            "message.messageId",
            "a message needs an id; send a unique one",
        ));
    }
    if message.role != Role::User {
        return Err(A2aError::field(
            "message.role",
            "a message to this agent is from the user: send \"role\": \"ROLE_USER\"",
        ));
    }
    if message.parts.is_empty() {
        return Err(A2aError::field(
            "message.parts",
            "the message has no parts; send at least one text part ({\"text\": \"...\"})",
        ));
    }
    let mut said = Said::default();
    let mut texts = Vec::new();
    for (i, part) in message.parts.iter().enumerate() {
        match &part.content {
            PartContent::Text(text) => texts.push(text.clone()),
            PartContent::Data(value) => said.data.push((i, value.clone())),
            PartContent::Raw(_) | PartContent::Url(_) => {
                return Err(A2aError::ContentTypeNotSupported(format!(
                    "message.parts[{i}]: this agent takes text and data parts, not files; send the content as text"
                )));
            }
        }
    }
    said.text = texts.join("\n\n");
    Ok(said)
}
