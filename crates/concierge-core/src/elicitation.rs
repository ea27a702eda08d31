//! A question a running tool call puts to the person (MCP elicitation, and
//! a server's request to use the model when its policy says to ask): what
//! is asked ([`Elicitation`]), what the person answers
//! ([`ElicitationAnswer`]), and how words and content are read and checked
//! against the requested form. Unlike a choice, the call is still running
//! while the person thinks: the answer goes back to it (`docs/mcp.md`,
//! "Elicitation").

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::canonical::fingerprint;
use crate::id::{CallId, RunId, SessionId};

/// What a running call asks the person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Elicitation {
    /// Who asks: the MCP server, or the remote (A2A) agent.
    pub server: String,
    /// The server's question, in its words.
    pub message: String,
    /// What kind of answer it wants.
    #[serde(flatten)]
    pub mode: ElicitationMode,
}

/// What kind of answer a question wants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationMode {
    /// Values for a form: an object schema of string, number, integer,
    /// boolean and enum fields.
    Form {
        /// The requested schema (JSON Schema, an object of flat fields).
        schema: Value,
    },
    /// The person is to visit a page (the server learns the outcome there);
    /// accepting says they will.
    Url {
        /// The page.
        url: String,
    },
    /// The server wants to use the model (MCP sampling) and its policy is
    /// `ask`: accepting lets it.
    Sampling {
        /// What the server wants to send the model, in words.
        request: String,
    },
    /// A remote agent asks in words (an A2A task's `input-required`):
    /// whatever the person says is the reply, passed on as `{"text": …}`.
    Reply {
        /// The remote's id for the question (its status message's), so two
        /// questions in the same words are told apart.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked: Option<String>,
    },
}

/// A form field, as people are asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ElicitationField {
    /// The field's key in the content.
    pub name: String,
    /// Its title (or the key in words).
    pub title: String,
    /// `string`, `number`, `integer` or `boolean`.
    pub kind: String,
    /// The allowed values, for an enum.
    pub options: Vec<String>,
    /// Whether an answer must have it.
    pub required: bool,
    /// The server's description, if any.
    pub description: Option<String>,
}

impl Elicitation {
    /// What identifies the question across attempts of its call: the
    /// server, the message and the mode (not ids the server picks anew).
    pub fn fingerprint(&self) -> String {
        fingerprint(&serde_json::json!({
            "server": self.server,
            "message": self.message,
            "mode": serde_json::to_value(&self.mode).unwrap_or(Value::Null),
        }))
    }

    /// The form's fields, in the schema's order (none for other modes).
    pub fn fields(&self) -> Vec<ElicitationField> {
        let ElicitationMode::Form { schema } = &self.mode else {
            return Vec::new();
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        properties
            .iter()
            .map(|(name, prop)| {
                let options: Vec<String> = prop
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(|o| o.iter().map(plain).collect())
                    .or_else(|| {
                        prop.get("oneOf")
                            .and_then(Value::as_array)
                            .map(|o| o.iter().filter_map(|v| v.get("const")).map(plain).collect())
                    })
                    .unwrap_or_default();
                ElicitationField {
                    name: name.clone(),
                    title: prop
                        .get("title")
                        .and_then(Value::as_str)
                        .map_or_else(|| capitalized(&crate::confirmation::humanize(name)), str::to_string),
                    kind: prop.get("type").and_then(Value::as_str).unwrap_or("string").to_string(),
                    options,
                    required: required.contains(&name.as_str()),
                    description: prop.get("description").and_then(Value::as_str).map(str::to_string),
                }
            })
            .collect()
    }

    /// The question in words, with what an answer looks like.
    pub fn text(&self) -> String {
        match &self.mode {
            ElicitationMode::Form { .. } => {
                let fields = self.fields();
                let mut text = format!("The {} server asks: {}", self.server, self.message.trim());
                match fields.as_slice() {
                    [] => text.push_str("\nAnswer accept, decline or cancel."),
                    [only] => {
                        text.push_str(&format!("\nReply with {} ({})", only.title, field_hint(only)));
                        text.push_str(", or decline or cancel.");
                    }
                    many => {
                        text.push_str("\nReply with one line per field (`field: value`):");
                        for field in many {
                            text.push_str(&format!("\n- {}: {}", field.name, field_hint(field)));
                            if !field
                                .title
                                .eq_ignore_ascii_case(&crate::confirmation::humanize(&field.name))
                            {
                                text.push_str(&format!(" ({})", field.title));
                            }
                        }
                        text.push_str("\nor decline or cancel.");
                    }
                }
                text
            }
            ElicitationMode::Url { url } => format!(
                "The {} server asks: {}\nOpen {url} to continue, then answer accept (or decline or cancel).",
                self.server,
                self.message.trim()
            ),
            ElicitationMode::Sampling { request } => format!(
                "The {} server wants to ask the model: {}\nAllow? (yes or no)",
                self.server,
                request.trim()
            ),
            ElicitationMode::Reply { .. } => format!("The {} agent asks: {}", self.server, self.message.trim()),
        }
    }

    /// Checks accepted content against the form: required fields, types,
    /// allowed values and bounds. The error names the field, for a person.
    pub fn check(&self, content: Option<&Value>) -> Result<(), String> {
        if let ElicitationMode::Reply { .. } = &self.mode {
            return match content.and_then(|c| c.get("text")).and_then(Value::as_str) {
                Some(text) if !text.trim().is_empty() => Ok(()),
                _ => Err("the reply must be some text".into()),
            };
        }
        let ElicitationMode::Form { .. } = &self.mode else {
            return Ok(());
        };
        let empty = Map::new();
        let map = match content {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(map)) => map,
            Some(_) => return Err("the answer must be a set of named fields".into()),
        };
        let fields = self.fields();
        for field in &fields {
            match map.get(&field.name) {
                None | Some(Value::Null) if field.required => {
                    return Err(format!("{} is required", field.title));
                }
                None | Some(Value::Null) => {}
                Some(value) => check_field(field, value, self.property(&field.name))?,
            }
        }
        if let Some(extra) = map.keys().find(|k| !fields.iter().any(|f| &f.name == *k)) {
            return Err(format!("the form has no field {extra}"));
        }
        Ok(())
    }

    fn property(&self, name: &str) -> Option<&Value> {
        match &self.mode {
            ElicitationMode::Form { schema } => schema.get("properties").and_then(|p| p.get(name)),
            _ => None,
        }
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn plain(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_string)
}

fn field_hint(field: &ElicitationField) -> String {
    let what = if !field.options.is_empty() {
        format!("one of {}", field.options.join(", "))
    } else {
        match field.kind.as_str() {
            "boolean" => "yes or no".to_string(),
            "integer" => "a whole number".to_string(),
            "number" => "a number".to_string(),
            _ => "text".to_string(),
        }
    };
    let optional = if field.required { "" } else { ", optional" };
    match &field.description {
        Some(description) => format!("{what}{optional}; {description}"),
        None => format!("{what}{optional}"),
    }
}

fn check_field(field: &ElicitationField, value: &Value, prop: Option<&Value>) -> Result<(), String> {
    let title = &field.title;
    if !field.options.is_empty() && !field.options.contains(&plain(value)) {
        return Err(format!("{title} must be one of: {}", field.options.join(", ")));
    }
    let fits = match field.kind.as_str() {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !fits {
        let wanted = match field.kind.as_str() {
            "integer" => "a whole number",
            "number" => "a number",
            "boolean" => "yes or no",
            _ => "text",
        };
        return Err(format!("{title} must be {wanted}"));
    }
    let bound = |key: &str| prop.and_then(|p| p.get(key)).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if let Some(min) = bound("minimum").filter(|min| n < *min) {
            return Err(format!("{title} must be at least {min}"));
        }
        if let Some(max) = bound("maximum").filter(|max| n > *max) {
            return Err(format!("{title} must be at most {max}"));
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as f64;
        if let Some(min) = bound("minLength").filter(|min| len < *min) {
            return Err(format!("{title} must be at least {min} characters long"));
        }
        if let Some(max) = bound("maxLength").filter(|max| len > *max) {
            return Err(format!("{title} must be at most {max} characters long"));
        }
    }
    Ok(())
}

/// What the person does with a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    /// Answers it (with the form's content, for a form).
    Accept,
    /// Says no; the call goes on without the information.
    Decline,
    /// Dismisses it; the server is told to stop what it asked for.
    Cancel,
}

impl ElicitationAction {
    /// The action's name (`accept`, `decline`, `cancel`).
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitationAction::Accept => "accept",
            ElicitationAction::Decline => "decline",
            ElicitationAction::Cancel => "cancel",
        }
    }
}

/// The person's answer to an [`Elicitation`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitationAnswer {
    /// Accept, decline or cancel.
    pub action: ElicitationAction,
    /// The form's content, when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

impl ElicitationAnswer {
    /// An answer with no content.
    pub fn new(action: ElicitationAction) -> Self {
        Self { action, content: None }
    }

    /// Accepts with `content`.
    pub fn accept(content: Value) -> Self {
        Self {
            action: ElicitationAction::Accept,
            content: Some(content),
        }
    }

    /// Reads a person's words as an answer to `question`: for a remote
    /// agent's question, the words themselves; otherwise "decline"/"no",
    /// "cancel"; for a form with one field the text is its value, with
    /// several `field: value` lines; for a URL or a sampling request "yes"
    /// or "accept". The error says what was not understood.
    pub fn from_words(text: &str, question: &Elicitation) -> Result<Self, String> {
        let trimmed = text.trim();
        if let ElicitationMode::Reply { .. } = &question.mode {
            // Every word is for the agent that asked ("no" included).
            if trimmed.is_empty() {
                return Err("please write your reply".into());
            }
            return Ok(Self::accept(serde_json::json!({ "text": trimmed })));
        }
        let word = trimmed.trim_end_matches(['.', '!']).to_lowercase();
        let is = |words: &[&str]| words.contains(&word.as_str());
        if is(&["cancel", "stop", "never mind", "nevermind", "abort"]) {
            return Ok(Self::new(ElicitationAction::Cancel));
        }
        if is(&["decline", "no", "nope", "no thanks", "deny", "refuse"]) {
            return Ok(Self::new(ElicitationAction::Decline));
        }
        let yes = is(&["accept", "yes", "y", "ok", "okay", "sure", "allow", "go ahead", "done"]);
        let fields = question.fields();
        match (&question.mode, fields.as_slice()) {
            (ElicitationMode::Url { .. } | ElicitationMode::Sampling { .. } | ElicitationMode::Reply { .. }, _)
            | (_, []) => {
                if yes {
                    Ok(Self::new(ElicitationAction::Accept))
                } else {
                    Err("please answer yes (accept), decline or cancel".into())
                }
            }
            (ElicitationMode::Form { .. }, [only]) => {
                let value = read_value(only, trimmed)?;
                Ok(Self::accept(Value::Object(Map::from_iter([(
                    only.name.clone(),
                    value,
                )]))))
            }
            (ElicitationMode::Form { .. }, many) => {
                let mut content = Map::new();
                for line in trimmed.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    let Some((key, value)) = line.split_once(':') else {
                        return Err(format!(
                            "I could not read \"{line}\": write one `field: value` per line (fields: {})",
                            names(many)
                        ));
                    };
                    let key = key.trim();
                    let Some(field) = many
                        .iter()
                        .find(|f| f.name.eq_ignore_ascii_case(key) || f.title.eq_ignore_ascii_case(key))
                    else {
                        return Err(format!("the form has no field {key} (fields: {})", names(many)));
                    };
                    content.insert(field.name.clone(), read_value(field, value.trim())?);
                }
                Ok(Self::accept(Value::Object(content)))
            }
        }
    }
}

fn names(fields: &[ElicitationField]) -> String {
    fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// A field's value from text, of the field's type.
fn read_value(field: &ElicitationField, text: &str) -> Result<Value, String> {
    if let Some(option) = field.options.iter().find(|o| o.eq_ignore_ascii_case(text)) {
        return Ok(Value::String(option.clone()));
    }
    let title = &field.title;
    match field.kind.as_str() {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{title} must be a whole number, not \"{text}\"")),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{title} must be a number, not \"{text}\"")),
        "boolean" => match text.to_lowercase().as_str() {
            "yes" | "y" | "true" | "on" => Ok(Value::Bool(true)),
            "no" | "n" | "false" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!("{title} must be yes or no, not \"{text}\"")),
        },
        _ => Ok(Value::String(text.to_string())),
    }
}

/// A question a running call waits on, as front doors show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingElicitation {
    /// The run whose call asks.
    pub run_id: RunId,
    /// The call that asks (still running).
    pub call_id: CallId,
    /// Which of the call's questions this is (from 0).
    pub question: u32,
    /// What is asked.
    pub elicitation: Elicitation,
    /// The question in words (see [`Elicitation::text`]).
    pub text: String,
    /// The child session the call runs in, when a child run (an agent
    /// called as a tool) asks through this session; an answer sent to this
    /// session with the call id and question is passed on there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
}

/// A question a call asked and, once given, the person's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Asked {
    /// What was asked.
    pub elicitation: Elicitation,
    /// The answer, once the person gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<ElicitationAnswer>,
}

impl Asked {
    /// Where a call made again asks `question` again: the first question
    /// from number `from` on (the call made again from scratch asks them in
    /// the same order; one made again from a checkpoint skips those it
    /// answered before) with the same server, message and form. Every
    /// engine answers such a question from the session instead of asking
    /// the person a second time.
    pub fn again<'a>(asked: &'a [Asked], from: usize, question: &Elicitation) -> Option<(usize, &'a Asked)> {
        let fingerprint = question.fingerprint();
        asked
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, a)| a.elicitation.fingerprint() == fingerprint)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(schema: Value) -> Elicitation {
        Elicitation {
            server: "orders".into(),
            message: "Which address?".into(),
            mode: ElicitationMode::Form { schema },
        }
    }

    fn two_fields() -> Elicitation {
        form(json!({
            "type": "object",
            "properties": {
                "street": {"type": "string", "title": "Street"},
                "floor": {"type": "integer", "minimum": 0},
                "size": {"type": "string", "enum": ["S", "M", "L"]},
                "gift": {"type": "boolean"}
            },
            "required": ["street", "floor"]
        }))
    }

    #[test]
    fn words_become_answers_of_the_fields_types() {
        let one = form(json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}));
        assert_eq!(
            ElicitationAnswer::from_words(" 42 ", &one).unwrap(),
            ElicitationAnswer::accept(json!({"n": 42}))
        );
        assert!(
            ElicitationAnswer::from_words("many", &one)
                .unwrap_err()
                .contains("whole number")
        );
        assert_eq!(
            ElicitationAnswer::from_words("Decline.", &one).unwrap().action,
            ElicitationAction::Decline
        );
        assert_eq!(
            ElicitationAnswer::from_words("cancel", &one).unwrap().action,
            ElicitationAction::Cancel
        );
        let many = two_fields();
        let answer = ElicitationAnswer::from_words("street: Main St 1\nFloor: 3\nsize: m\ngift: yes", &many).unwrap();
        assert_eq!(
            answer.content,
            Some(json!({"street": "Main St 1", "floor": 3, "size": "M", "gift": true}))
        );
        assert!(many.check(answer.content.as_ref()).is_ok());
        let error = ElicitationAnswer::from_words("colour: red", &many).unwrap_err();
        assert!(error.contains("no field colour"), "{error}");
    }

    #[test]
    fn content_is_checked_field_by_field_and_the_error_names_the_field() {
        let q = two_fields();
        assert_eq!(q.check(Some(&json!({"floor": 1}))).unwrap_err(), "Street is required");
        assert_eq!(
            q.check(Some(&json!({"street": "x", "floor": -1}))).unwrap_err(),
            "Floor must be at least 0"
        );
        assert_eq!(
            q.check(Some(&json!({"street": "x", "floor": "two"}))).unwrap_err(),
            "Floor must be a whole number"
        );
        assert!(
            q.check(Some(&json!({"street": "x", "floor": 1, "size": "XL"})))
                .unwrap_err()
                .contains("Size must be one of: S, M, L")
        );
    }

    #[test]
    fn the_fingerprint_ignores_nothing_the_person_sees() {
        let a = two_fields();
        let mut b = a.clone();
        assert_eq!(a.fingerprint(), b.fingerprint());
        b.message = "Which other address?".into();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert!(a.text().contains("- street: text\n"), "{}", a.text());
        assert!(a.text().contains("- gift: yes or no, optional"), "{}", a.text());
    }
}
