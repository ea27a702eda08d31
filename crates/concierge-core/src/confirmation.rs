//! Confirmations a person can read and answer (`docs/architecture.md`,
//! "Confirmation").
//!
//! Before a side-effecting call runs, the person is asked in words: the
//! tool's own template ("I'll create a task '{title}' due {due}. Proceed?")
//! filled from the call, or a readable default that lists the arguments by
//! their schema titles ("Run *create task* with Title: Fix login bug,
//! Priority: high? (yes/no)") — never raw JSON.
//!
//! The person answers in plain words: "yes" (and "y", "sure", "go ahead"...)
//! approves, "no" (and "nope", "cancel", "stop"...) declines, and "yes, but
//! high priority and due Friday" asks for changes, found by rules against
//! the tool's schema (enum values, "due <day>" for date fields, "<field> 3"
//! for numbers, "<field> 'text'" for text). Anything else is not an answer.
//! Everything here is a pure function of its inputs (dates resolve against
//! the time the answer carries), so a replay interprets an answer the same way.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::time::Timestamp;
use crate::tool::ToolSpec;

/// What a person's message says about a pending confirmation.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// Run the call as shown.
    Approve,
    /// Do not run it.
    Decline {
        /// What the person added after the "no", if anything.
        reason: Option<String>,
    },
    /// Change the call: these are the complete new arguments (they differ
    /// from the parked ones); the person sees the changed call before it runs.
    Amend {
        /// The arguments with the person's changes applied.
        arguments: Value,
    },
    /// Neither yes, no, nor a change the rules understood.
    Unclear,
}

/// The question a person answers before `spec`'s call with `arguments` runs:
/// the tool's template filled in, or the readable default.
pub fn confirmation_message(spec: &ToolSpec, arguments: &Value) -> String {
    match &spec.confirm {
        Some(template) => fill_template(template, arguments),
        None => default_message(spec, arguments),
    }
}

/// Fills `{argument}` placeholders from `arguments` (`{{` and `}}` are
/// literal braces; a missing argument reads "not set"). A part in square
/// brackets holding placeholders is optional: `[ due {due}]` shows
/// " due Friday" when `due` is given and nothing when it is not (brackets
/// around text without placeholders stay as written).
pub fn fill_template(template: &str, arguments: &Value) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else {
            break;
        };
        let inner = &rest[open + 1..close];
        let names = placeholders(inner);
        out.push_str(&fill_placeholders(&rest[..open], arguments));
        if names.is_empty() {
            out.push_str(&fill_placeholders(&rest[open..=close], arguments));
        } else if names.iter().all(|name| lookup(arguments, filtered(name).0).is_some()) {
            out.push_str(&fill_placeholders(inner, arguments));
        }
        rest = &rest[close + 1..];
    }
    out.push_str(&fill_placeholders(rest, arguments));
    out
}

/// The placeholder names in `text` (`{{` escapes left out).
fn placeholders(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{") {
            rest = after;
            continue;
        }
        match tail.find('}') {
            Some(end) => {
                let name = tail[1..end].trim();
                if is_placeholder(name) {
                    names.push(name);
                }
                rest = &tail[end + 1..];
            }
            None => break,
        }
    }
    names
}

fn is_placeholder(name: &str) -> bool {
    let (path, filter) = filtered(name);
    !path.is_empty()
        && path.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && filter.is_none_or(|f| FILTERS.contains(&f))
}

/// How a placeholder may ask for its value to be shown: `{amount|money}`
/// reads `500` or `"$500"` as "$500.00".
const FILTERS: &[&str] = &["money"];

/// A placeholder's argument path and its filter (`amount|money` → `amount`, `money`).
fn filtered(name: &str) -> (&str, Option<&str>) {
    match name.split_once('|') {
        Some((path, filter)) => (path.trim(), Some(filter.trim())),
        None => (name, None),
    }
}

/// A value as its placeholder's filter shows it.
fn shown(value: &Value, filter: Option<&str>) -> String {
    match filter {
        Some("money") => money(value).unwrap_or_else(|| readable(value)),
        _ => readable(value),
    }
}

/// An amount of dollars as people write it ("$1,250.50"), from a number or
/// a numeric text ("500", "$1,250.5"); `None` for anything else.
fn money(value: &Value) -> Option<String> {
    let amount = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(text) => text
            .trim()
            .trim_start_matches('$')
            .replace(',', "")
            .trim()
            .parse::<f64>()
            .ok()?,
        _ => return None,
    };
    if !amount.is_finite() || amount.abs() >= 1e15 {
        return None;
    }
    let cents = (amount.abs() * 100.0).round() as u64;
    let whole = (cents / 100).to_string();
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    let sign = if amount < 0.0 && cents > 0 { "-" } else { "" };
    Some(format!("{sign}${grouped}.{:02}", cents % 100))
}

fn fill_placeholders(template: &str, arguments: &Value) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if tail.starts_with('{') {
            if let Some(end) = tail.find('}') {
                let name = tail[1..end].trim();
                if is_placeholder(name) {
                    let (path, filter) = filtered(name);
                    out.push_str(&lookup(arguments, path).map_or_else(|| "not set".to_string(), |v| shown(v, filter)));
                    rest = &tail[end + 1..];
                    continue;
                }
            }
        }
        out.push_str(&tail[..1]);
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

fn lookup<'a>(arguments: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(arguments, |value, key| value.get(key))
        .filter(|v| !v.is_null())
}

/// "Run *create task* with Title: Fix login bug, Priority: high? (yes/no)".
fn default_message(spec: &ToolSpec, arguments: &Value) -> String {
    let tool = humanize(spec.name.as_str());
    let Some(map) = arguments.as_object().filter(|m| !m.is_empty()) else {
        return format!("Run *{tool}*? (yes/no)");
    };
    let parts: Vec<String> = ordered_keys(spec, map)
        .into_iter()
        .filter_map(|key| {
            let value = map.get(key)?;
            Some(format!("{}: {}", label(spec, key), readable(value)))
        })
        .collect();
    format!("Run *{tool}* with {}? (yes/no)", parts.join(", "))
}

/// The arguments' keys: the schema's required properties in their order,
/// then the rest in name order.
fn ordered_keys<'a>(spec: &'a ToolSpec, map: &'a Map<String, Value>) -> Vec<&'a str> {
    let mut keys: Vec<&str> = spec
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|k| map.contains_key(*k))
        .collect();
    for key in map.keys() {
        if !keys.contains(&key.as_str()) {
            keys.push(key);
        }
    }
    keys
}

/// A property's schema title, or its name made readable ("due_date" → "Due date").
fn label(spec: &ToolSpec, key: &str) -> String {
    let title = property(spec, key)
        .and_then(|p| p.get("title"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let text = title.unwrap_or_else(|| humanize(key));
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => text,
    }
}

fn property<'a>(spec: &'a ToolSpec, key: &str) -> Option<&'a Value> {
    spec.input_schema.get("properties")?.get(key)
}

/// "create_task" / "createTask" / "create-task" → "create task".
pub(crate) fn humanize(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut previous_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' || c == '.' {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            previous_lower = false;
        } else if c.is_uppercase() {
            if previous_lower {
                out.push(' ');
            }
            out.extend(c.to_lowercase());
            previous_lower = false;
        } else {
            out.push(c);
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
        }
    }
    out.trim().to_string()
}

/// A value for people: text as is, numbers, yes/no, lists joined, objects
/// as "Key: value" pairs.
pub(crate) fn readable(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "none".into(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items.iter().map(readable).collect::<Vec<_>>().join(", "),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{}: {}", humanize(k), readable(v)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

// ----- answers -----

const YES: &[&str] = &[
    "yes please",
    "yes",
    "yeah",
    "yep",
    "yup",
    "ya",
    "y",
    "sure",
    "okay",
    "ok",
    "go ahead",
    "go for it",
    "do it",
    "please do",
    "confirmed",
    "confirm",
    "approved",
    "approve",
    "proceed",
    "sounds good",
    "looks good",
    "correct",
    "that's right",
    "alright",
    "absolutely",
    "of course",
    "fine",
];

const NO: &[&str] = &[
    "no thank you",
    "no thanks",
    "nope",
    "nah",
    "no",
    "n",
    "cancel",
    "stop",
    "don't",
    "dont",
    "do not",
    "decline",
    "deny",
    "abort",
    "never mind",
    "nevermind",
    "not now",
];

/// Words that add nothing to a yes or a no.
const FILLER: &[&str] = &[
    "please", "thanks", "thank", "you", "but", "and", "go", "ahead", "do", "it", "that", "that's", "is", "fine",
    "good", "great", "sounds", "looks", "perfect", "sure", "ok", "okay", "yes", "thx", "then",
];

/// What `text` says about the parked call of `spec` with `arguments`; `at`
/// is when the person said it (dates like "Friday" resolve against it).
pub fn interpret_answer(text: &str, spec: &ToolSpec, arguments: &Value, at: Timestamp) -> Answer {
    let text = normalize(text);
    let lower = text.to_lowercase();
    let (lead, rest) = match leading(&lower, YES) {
        Some(len) => (Some(true), &text[len..]),
        None => match leading(&lower, NO) {
            Some(len) => (Some(false), &text[len..]),
            None => (None, text.as_str()),
        },
    };
    let rest = rest.trim_start_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '"');
    let amended = amend(rest, spec, arguments, at);
    let changed = amended.as_ref().filter(|a| *a != arguments);
    match (lead, changed) {
        (_, Some(arguments)) => Answer::Amend {
            arguments: arguments.clone(),
        },
        (Some(true), None) if is_filler(rest) || amended.is_some() => Answer::Approve,
        (Some(false), None) => Answer::Decline {
            reason: (!is_filler(rest)).then(|| rest.trim().to_string()),
        },
        _ => Answer::Unclear,
    }
}

/// Trims, turns typographic apostrophes plain, drops trailing punctuation.
fn normalize(text: &str) -> String {
    text.trim()
        .replace(['\u{2019}', '\u{2018}'], "'")
        .trim_end_matches(['.', '!', '?', ' '])
        .to_string()
}

/// The length of the phrase of `phrases` that `lower` starts with, as a
/// whole word.
fn leading(lower: &str, phrases: &[&str]) -> Option<usize> {
    phrases
        .iter()
        .filter(|p| lower.starts_with(*p))
        .filter(|p| {
            lower[p.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric() && c != '\'')
        })
        .map(|p| p.len())
        .max()
}

fn is_filler(rest: &str) -> bool {
    rest.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .all(|w| FILLER.contains(&w.to_lowercase().as_str()))
}

// ----- changes -----

static DATE: &str = r"today|tonight|tomorrow|(?:next |this )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|week|month)|end of (?:the )?(?:day|week|month)|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*";

static ISO_DATE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^\d{4}-\d{2}-\d{2}").ok());

/// The arguments with every change `text` asks for, or `None` if it asks for none.
fn amend(text: &str, spec: &ToolSpec, arguments: &Value, at: Timestamp) -> Option<Value> {
    let properties = spec.input_schema.get("properties")?.as_object()?;
    let mut changed = arguments.as_object().cloned().unwrap_or_default();
    let mut any = false;
    for (name, schema) in properties {
        let words = property_words(name, schema);
        let value = if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            enum_change(text, &words, options, properties, name)
        } else if is_date(name, schema) {
            date_change(text, &words, schema, changed.get(name), at)
        } else {
            match schema_type(schema) {
                Some("integer") | Some("number") => number_change(text, &words, schema_type(schema) == Some("integer")),
                Some("string") => text_change(text, &words, name),
                _ => None,
            }
        };
        if let Some(value) = value {
            changed.insert(name.clone(), value);
            any = true;
        }
    }
    any.then_some(Value::Object(changed))
}

fn schema_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) => types.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

/// The ways a person names a property: its name made readable, its name, its title.
fn property_words(name: &str, schema: &Value) -> Vec<String> {
    let mut words = vec![humanize(name), name.to_lowercase()];
    if let Some(title) = schema.get("title").and_then(Value::as_str) {
        words.push(title.to_lowercase());
    }
    words.dedup();
    words
}

fn alternation(words: &[String]) -> String {
    words.iter().map(|w| regex::escape(w)).collect::<Vec<_>>().join("|")
}

fn mentions(text: &str, words: &[String]) -> bool {
    Regex::new(&format!(r"(?i)\b(?:{})\b", alternation(words))).is_ok_and(|re| re.is_match(text))
}

/// An enum value named in the text ("high priority", "priority high"). A
/// value several properties allow counts only where the property is named.
fn enum_change(
    text: &str,
    words: &[String],
    options: &[Value],
    properties: &Map<String, Value>,
    name: &str,
) -> Option<Value> {
    let found: Vec<&Value> = options
        .iter()
        .filter(|option| {
            let word = readable(option);
            !word.is_empty()
                && Regex::new(&format!(r"(?i)\b{}\b", regex::escape(&word))).is_ok_and(|re| re.is_match(text))
        })
        .collect();
    let [value] = found.as_slice() else {
        return None;
    };
    let shared = properties.iter().any(|(other, schema)| {
        other != name
            && schema
                .get("enum")
                .and_then(Value::as_array)
                .is_some_and(|o| o.contains(value))
    });
    (!shared || mentions(text, words)).then(|| (*value).clone())
}

fn is_date(name: &str, schema: &Value) -> bool {
    let format = schema.get("format").and_then(Value::as_str);
    if matches!(format, Some("date") | Some("date-time")) {
        return true;
    }
    let name = humanize(name);
    schema_type(schema).is_none_or(|t| t == "string")
        && name
            .split(' ')
            .any(|w| matches!(w, "due" | "date" | "deadline" | "when" | "day" | "by"))
}

/// "due Friday", "by tomorrow", "<field> 2025-03-07": ISO when the field is
/// a date (or already holds one), the words as written otherwise.
fn date_change(text: &str, words: &[String], schema: &Value, current: Option<&Value>, at: Timestamp) -> Option<Value> {
    let pattern = format!(
        r"(?i)\b(?:due|by|on|for|{})\s+(?:on\s+|date\s+|to\s+|is\s+)?({DATE})\b",
        alternation(words)
    );
    let re = Regex::new(&pattern).ok()?;
    let phrase = re.captures(text)?.get(1)?.as_str();
    let wants_iso = schema.get("format").and_then(Value::as_str) == Some("date")
        || current
            .and_then(Value::as_str)
            .is_some_and(|c| ISO_DATE.as_ref().is_some_and(|re| re.is_match(c)));
    if wants_iso {
        if let Some(date) = resolve_date(&phrase.to_lowercase(), at) {
            return Some(Value::String(date));
        }
    }
    let mut chars = phrase.chars();
    let written: String = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => return None,
    };
    Some(Value::String(written))
}

/// "quantity 3", "3 people", "amount to 40.5".
fn number_change(text: &str, words: &[String], integer: bool) -> Option<Value> {
    let names = alternation(words);
    let number = r"(-?\d+(?:\.\d+)?)";
    let after = format!(r"(?i)\b(?:{names})\s*(?:to|=|:|of|is|at)?\s*{number}");
    let before = format!(r"(?i){number}\s*(?:{names})\b");
    let raw = [after, before].iter().find_map(|p| {
        Regex::new(p)
            .ok()?
            .captures(text)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().to_string())
    })?;
    if integer {
        raw.parse::<i64>().ok().map(Value::from)
    } else {
        raw.parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
    }
}

/// "title 'Fix the login bug'", "call it \"Standup\"" (names and titles only).
fn text_change(text: &str, words: &[String], name: &str) -> Option<Value> {
    let quoted = r#"["'“‘]([^"'”’]+)["'”’]"#;
    let mut patterns = vec![format!(
        r"(?i)\b(?:{})\s*(?:to|=|:|is|as)?\s*{quoted}",
        alternation(words)
    )];
    if matches!(name, "title" | "name" | "label" | "subject") {
        patterns.push(format!(r"(?i)\b(?:call it|rename it(?: to)?|named|called)\s*{quoted}"));
    }
    patterns.iter().find_map(|p| {
        Regex::new(p)
            .ok()?
            .captures(text)
            .and_then(|c| c.get(1))
            .map(|m| Value::String(m.as_str().trim().to_string()))
    })
}

/// The date (YYYY-MM-DD, UTC) a phrase names, counted from `at`.
fn resolve_date(phrase: &str, at: Timestamp) -> Option<String> {
    const DAYS: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    if ISO_DATE.as_ref().is_some_and(|re| re.is_match(phrase)) {
        return Some(phrase[..10].to_string());
    }
    let today = i64::try_from(at.0 / 86_400_000).ok()?;
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = (today + 3).rem_euclid(7);
    let offset = match phrase {
        "today" | "tonight" => 0,
        "tomorrow" => 1,
        "next week" => 7,
        _ => {
            let (next, day) = match phrase.strip_prefix("next ") {
                Some(day) => (true, day),
                None => (false, phrase.strip_prefix("this ").unwrap_or(phrase)),
            };
            let target = i64::try_from(DAYS.iter().position(|d| *d == day)?).ok()?;
            let ahead = (target - weekday).rem_euclid(7);
            if next && ahead == 0 { 7 } else { ahead }
        }
    };
    let (y, m, d) = civil_from_days(today + offset);
    Some(format!("{y:04}-{m:02}-{d:02}"))
}

/// Days since 1970-01-01 to a (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Checks `arguments` against the parts of `spec`'s schema a changed call
/// can get wrong: each property's type, allowed values and bounds, and the
/// required properties. The message says what is wrong, for a person.
pub fn check_arguments(spec: &ToolSpec, arguments: &Value) -> Result<(), String> {
    let Some(map) = arguments.as_object() else {
        return Err("the arguments must be an object of named values".into());
    };
    let schema = &spec.input_schema;
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if map.get(key).is_none_or(Value::is_null) {
            return Err(format!("{} is required", label(spec, key)));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, value) in map {
        let Some(prop) = property(spec, key) else {
            if closed {
                return Err(format!(
                    "{} does not take {}",
                    humanize(spec.name.as_str()),
                    humanize(key)
                ));
            }
            continue;
        };
        if let Some(options) = prop.get("enum").and_then(Value::as_array) {
            if !options.contains(value) {
                let allowed: Vec<String> = options.iter().map(readable).collect();
                return Err(format!("{} must be one of: {}", label(spec, key), allowed.join(", ")));
            }
        }
        let fits = match schema_type(prop) {
            Some("string") => value.is_string(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            Some("boolean") => value.is_boolean(),
            Some("array") => value.is_array(),
            Some("object") => value.is_object(),
            _ => true,
        };
        if !fits && !value.is_null() {
            return Err(format!(
                "{} must be {}",
                label(spec, key),
                kind_words(schema_type(prop))
            ));
        }
        if let Some(n) = value.as_f64() {
            if let Some(min) = prop.get("minimum").and_then(Value::as_f64).filter(|min| n < *min) {
                return Err(format!("{} must be at least {min}", label(spec, key)));
            }
            if let Some(max) = prop.get("maximum").and_then(Value::as_f64).filter(|max| n > *max) {
                return Err(format!("{} must be at most {max}", label(spec, key)));
            }
        }
    }
    Ok(())
}

fn kind_words(kind: Option<&str>) -> &'static str {
    match kind {
        Some("string") => "text",
        Some("integer") => "a whole number",
        Some("number") => "a number",
        Some("boolean") => "yes or no",
        Some("array") => "a list",
        _ => "a group of named values",
    }
}

#[cfg(test)]
#[path = "confirmation_tests.rs"]
mod tests;
