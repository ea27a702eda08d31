//! Argument validation and lenient coercion: a model's `"3"` for an integer or
//! `"yes"` for a boolean is taken as meant, anything else is a structured error.

use std::fmt;

use concierge_core::{FieldError, Timestamp, ToolError};
use jsonschema::Validator;
use serde_json::{Map, Number, Value};

/// Coerces and validates a tool's arguments against its JSON Schema.
///
/// Coercion happens only where the schema asks for another type and the value
/// converts without loss: `"42"` → `42` for an integer, `"2.5"`, `"$500"`,
/// `"1,250.50 USD"` or `"five hundred"` → a number, `"yes"`/`"true"`/`"1"` →
/// `true` for a boolean, `5` → `"5"` for a string, a string holding a JSON
/// object or array where one is expected, an enum string matched
/// case-insensitively, and a date as people write it (`"next Friday"`,
/// `"tomorrow"`, `"Oct 28"`) → `YYYY-MM-DD` where the schema says
/// `format: "date"`, counted from the day the person asked. Then the value is
/// validated, formats included (`date`, `date-time`, `email`...: asserted,
/// not just annotations); every problem is reported with its field.
pub struct ArgumentValidator {
    schema: Value,
    validator: Validator,
}

impl fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentValidator")
            .field("schema", &self.schema)
            .finish()
    }
}

const MAX_DEPTH: usize = 32;

impl ArgumentValidator {
    /// Compiles `schema`; an error says why it is not a usable JSON Schema.
    pub fn new(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| e.to_string())?;
        Ok(Self {
            schema: schema.clone(),
            validator,
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Coerces `args` in place (dates counted from today), then validates them.
    pub fn check(&self, args: &mut Value) -> Result<(), ToolError> {
        self.check_at(args, crate::clock::now())
    }

    /// Coerces `args` in place, reading dates against `asked_at` (when the
    /// person's message was accepted; the day is taken in UTC), then
    /// validates them.
    pub fn check_at(&self, args: &mut Value, asked_at: Timestamp) -> Result<(), ToolError> {
        if let Value::String(raw) = args {
            return Err(ToolError::invalid_arguments(
                format!("the arguments are not valid JSON: {raw}"),
                Vec::new(),
            ));
        }
        let today = chrono::DateTime::from_timestamp_millis(i64::try_from(asked_at.0).unwrap_or(i64::MAX))
            .map(|t| t.date_naive())
            .unwrap_or_default();
        let cx = Coercion {
            root: &self.schema,
            today,
        };
        cx.coerce(args, &self.schema, 0);
        let problems: Vec<FieldError> = self
            .validator
            .iter_errors(args)
            .map(|error| {
                let path = error.instance_path().to_string();
                let mut field = path.trim_start_matches('/').to_string();
                // A missing property is that property's problem, not the object's.
                if let jsonschema::error::ValidationErrorKind::Required {
                    property: Value::String(name),
                } = error.kind()
                {
                    field = if field.is_empty() {
                        name.clone()
                    } else {
                        format!("{field}/{name}")
                    };
                }
                FieldError {
                    field,
                    problem: error.to_string(),
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            let summary: Vec<String> = problems
                .iter()
                .map(|p| {
                    if p.field.is_empty() {
                        p.problem.clone()
                    } else {
                        format!("{}: {}", p.field, p.problem)
                    }
                })
                .collect();
            Err(ToolError::invalid_arguments(
                format!("the arguments do not match the schema ({})", summary.join("; ")),
                problems,
            ))
        }
    }
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..MAX_DEPTH {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            return current;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            return current;
        };
        match root.pointer(pointer) {
            Some(target) => current = target,
            None => return current,
        }
    }
    current
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn matches_type(value: &Value, ty: &str) -> bool {
    match (ty, value) {
        ("null", Value::Null) | ("boolean", Value::Bool(_)) | ("string", Value::String(_)) => true,
        ("object", Value::Object(_)) | ("array", Value::Array(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// What coercion reads: the root schema (for `$ref`) and the day dates count from.
struct Coercion<'a> {
    root: &'a Value,
    today: chrono::NaiveDate,
}

impl Coercion<'_> {
    fn coerce(&self, value: &mut Value, schema: &Value, depth: usize) {
        let root = self.root;
        if depth > MAX_DEPTH {
            return;
        }
        let schema = resolve(schema, root);
        if let Some(Value::Array(parts)) = schema.get("allOf") {
            for part in parts {
                self.coerce(value, part, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = schema.get(key) {
                self.coerce_alternatives(value, branches, depth);
            }
        }
        let types = types_of(schema);
        if !types.is_empty() && !types.iter().any(|t| matches_type(value, t)) {
            if let Some(converted) = types.iter().find_map(|t| convert(value, t)) {
                *value = converted;
            }
        }
        // `4.0` is an integer to JSON Schema but not to serde: make it `4`.
        if types.contains(&"integer") && !types.contains(&"number") {
            if let Value::Number(n) = value {
                if n.is_f64() {
                    if let Some(converted) = convert(&Value::Number(n.clone()), "integer") {
                        *value = converted;
                    }
                }
            }
        }
        match value {
            Value::Object(map) => self.coerce_object(map, schema, depth),
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for item in items {
                        self.coerce(item, item_schema, depth + 1);
                    }
                }
            }
            Value::String(s) => {
                if schema.get("format").and_then(Value::as_str) == Some("date") && !is_iso_date(s) {
                    if let Ok(date) = crate::dates::parse_date(s, self.today) {
                        *s = date.format("%Y-%m-%d").to_string();
                    }
                }
                if let Some(Value::Array(allowed)) = schema.get("enum") {
                    if !allowed.iter().any(|a| a.as_str() == Some(s)) {
                        if let Some(found) = allowed
                            .iter()
                            .filter_map(Value::as_str)
                            .find(|a| a.eq_ignore_ascii_case(s.trim()))
                        {
                            *s = found.to_string();
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn coerce_alternatives(&self, value: &mut Value, branches: &[Value], depth: usize) {
        let root = self.root;
        let resolved: Vec<&Value> = branches.iter().map(|b| resolve(b, root)).collect();
        if let Value::String(s) = value {
            // A `const` branch spelled differently ("Add" for "add").
            let wanted = s.trim();
            if let Some(exact) = resolved
                .iter()
                .filter_map(|b| b.get("const").and_then(Value::as_str))
                .find(|c| c.eq_ignore_ascii_case(wanted))
            {
                *s = exact.to_string();
                return;
            }
        }
        if resolved
            .iter()
            .any(|b| types_of(b).iter().any(|t| matches_type(value, t)))
        {
            // The value already has a type one branch accepts: coerce within that branch.
            if let Some(branch) = resolved
                .iter()
                .find(|b| types_of(b).iter().any(|t| matches_type(value, t)))
            {
                self.coerce(value, branch, depth + 1);
            }
            return;
        }
        for branch in resolved {
            if types_of(branch).iter().all(|t| *t == "null") {
                continue;
            }
            let mut candidate = value.clone();
            self.coerce(&mut candidate, branch, depth + 1);
            if types_of(branch).iter().any(|t| matches_type(&candidate, t)) {
                *value = candidate;
                return;
            }
        }
    }

    fn coerce_object(&self, map: &mut Map<String, Value>, schema: &Value, depth: usize) {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties").filter(|a| a.is_object());
        for (key, item) in map.iter_mut() {
            if let Some(sub) = properties.and_then(|p| p.get(key)).or(additional) {
                self.coerce(item, sub, depth + 1);
            }
        }
    }
}

/// Whether `s` starts with a `YYYY-MM-DD` date.
fn is_iso_date(s: &str) -> bool {
    chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").is_ok()
}

fn convert(value: &Value, ty: &str) -> Option<Value> {
    match (ty, value) {
        ("integer", Value::String(s)) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Some(Value::from(i));
            }
            let f = t.parse::<f64>().ok().or_else(|| amount(t))?;
            (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| Value::from(f as i64))
        }
        ("integer", Value::Number(n)) => {
            let f = n.as_f64()?;
            (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| Value::from(f as i64))
        }
        ("number", Value::String(s)) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Some(Value::from(i));
            }
            let f = t.parse::<f64>().ok().or_else(|| amount(t)).filter(|f| f.is_finite())?;
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                return Some(Value::from(f as i64));
            }
            Number::from_f64(f).map(Value::Number)
        }
        ("boolean", Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "1" | "on" => Some(Value::Bool(true)),
            "false" | "no" | "n" | "0" | "off" => Some(Value::Bool(false)),
            _ => None,
        },
        ("boolean", Value::Number(n)) => match n.as_i64() {
            Some(1) => Some(Value::Bool(true)),
            Some(0) => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("object", Value::String(s)) => serde_json::from_str::<Value>(s).ok().filter(Value::is_object),
        ("array", Value::String(s)) => serde_json::from_str::<Value>(s).ok().filter(Value::is_array),
        _ => None,
    }
}

/// A number as people write an amount: `$500`, `1,250.50 USD`, `€20`,
/// `500 dollars`, `five hundred`, `twenty-five`, `two thousand and ten`.
fn amount(text: &str) -> Option<f64> {
    let lower = text.trim().to_lowercase();
    let mut t = lower.as_str();
    for prefix in ["$", "us$", "usd", "€", "eur", "£", "gbp"] {
        t = t.strip_prefix(prefix).unwrap_or(t).trim_start();
    }
    for suffix in [
        "usd", "eur", "gbp", "dollars", "dollar", "euros", "euro", "pounds", "pound", "bucks", "$", "€",
    ] {
        t = t.strip_suffix(suffix).unwrap_or(t).trim_end();
    }
    let digits: String = t.chars().filter(|c| *c != ',' && *c != '_').collect();
    if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '-') {
        return digits.parse::<f64>().ok();
    }
    number_words(t)
}

/// A whole number written in English words ("five hundred", "twenty-five").
fn number_words(text: &str) -> Option<f64> {
    const SMALL: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 8] = [
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    let mut total: u64 = 0;
    let mut current: u64 = 0;
    let mut any = false;
    for word in text
        .split(|c: char| c.is_whitespace() || c == '-')
        .filter(|w| !w.is_empty())
    {
        if word == "and" || word == "a" {
            continue;
        }
        if let Some(n) = SMALL.iter().position(|w| *w == word) {
            current += n as u64;
        } else if let Some(n) = TENS.iter().position(|w| *w == word) {
            current += (n as u64 + 2) * 10;
        } else if word == "hundred" {
            current = current.max(1) * 100;
        } else if let Some(scale) = match word {
            "thousand" => Some(1_000),
            "million" => Some(1_000_000),
            "billion" => Some(1_000_000_000),
            _ => None,
        } {
            total += current.max(1) * scale;
            current = 0;
        } else {
            return None;
        }
        any = true;
    }
    any.then(|| (total + current) as f64)
}

#[cfg(test)]
mod tests {
    use concierge_core::ToolErrorKind;
    use serde_json::json;

    use super::*;

    fn validator() -> ArgumentValidator {
        ArgumentValidator::new(&json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "flag": {"type": "boolean"},
                "label": {"type": "string"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "op": {"oneOf": [{"const": "add", "type": "string"}, {"const": "sub", "type": "string"}]},
                "maybe": {"type": ["number", "null"]},
                "nested": {"$ref": "#/$defs/Nested"},
                "tags": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["count"],
            "$defs": {"Nested": {"type": "object", "properties": {"on": {"type": "boolean"}}}}
        }))
        .unwrap()
    }

    #[test]
    fn coerces_where_the_schema_allows() {
        let mut args = json!({
            "count": "42",
            "ratio": "2.5",
            "flag": "yes",
            "label": 5,
            "mode": "FAST",
            "op": " Sub",
            "maybe": "7",
            "nested": "{\"on\": \"true\"}",
            "tags": ["1", 2, "3"]
        });
        validator().check(&mut args).unwrap();
        assert_eq!(
            args,
            json!({
                "count": 42,
                "ratio": 2.5,
                "flag": true,
                "label": "5",
                "mode": "fast",
                "op": "sub",
                "maybe": 7,
                "nested": {"on": true},
                "tags": [1, 2, 3]
            })
        );
    }

    #[test]
    fn amounts_and_dates_as_people_write_them() {
        let validator = ArgumentValidator::new(&json!({
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "days": {"type": "integer"},
                "on": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "date-time"}
            }
        }))
        .unwrap();
        // Wednesday 2025-03-05, noon UTC.
        let asked = Timestamp(1_741_176_000_000);
        for (amount, expected) in [
            ("$500", json!(500)),
            ("$1,250.50", json!(1250.5)),
            ("500 dollars", json!(500)),
            ("five hundred", json!(500)),
            ("twenty-five", json!(25)),
            ("two thousand and ten", json!(2010)),
            ("€20", json!(20)),
        ] {
            let mut args = json!({"amount": amount});
            validator.check_at(&mut args, asked).unwrap();
            assert_eq!(args["amount"], expected, "{amount}");
        }
        let mut args = json!({"days": "three"});
        validator.check_at(&mut args, asked).unwrap();
        assert_eq!(args["days"], json!(3));
        for (said, date) in [
            ("next Friday", "2025-03-07"),
            ("next Wednesday", "2025-03-12"),
            ("Friday", "2025-03-07"),
            ("tomorrow", "2025-03-06"),
            ("Oct 28", "2025-10-28"),
            ("2025-04-01", "2025-04-01"),
        ] {
            let mut args = json!({"on": said});
            validator.check_at(&mut args, asked).unwrap();
            assert_eq!(args["on"], json!(date), "{said}");
        }
        // Formats are asserted, not only annotations.
        for bad in [
            json!({"on": "someday"}),
            json!({"on": "2025-02-30"}),
            json!({"at": "noon"}),
        ] {
            let mut args = bad.clone();
            let error = validator.check_at(&mut args, asked).unwrap_err();
            assert_eq!(error.kind, ToolErrorKind::InvalidArguments, "{bad}");
            assert!(!error.fields.is_empty(), "{bad}: {error}");
        }
        let mut args = json!({"at": "2025-03-05T10:00:00Z", "amount": "lots"});
        let error = validator.check_at(&mut args, asked).unwrap_err();
        assert_eq!(error.fields.len(), 1, "{error}");
        assert_eq!(error.fields[0].field, "amount");
    }

    #[test]
    fn null_stays_null_for_optional_values() {
        let mut args = json!({"count": 1, "maybe": null});
        validator().check(&mut args).unwrap();
        assert_eq!(args["maybe"], Value::Null);
    }

    #[test]
    fn reports_each_bad_field() {
        let mut args = json!({"count": "many", "flag": "perhaps", "mode": "medium"});
        let error = validator().check(&mut args).unwrap_err();
        assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
        let fields: Vec<&str> = error.fields.iter().map(|f| f.field.as_str()).collect();
        assert!(fields.contains(&"count"), "{fields:?}");
        assert!(fields.contains(&"flag"), "{fields:?}");
        assert!(fields.contains(&"mode"), "{fields:?}");
        assert!(error.message.contains("count"), "{}", error.message);
    }

    #[test]
    fn missing_required_and_non_json_arguments() {
        let mut args = json!({});
        let error = validator().check(&mut args).unwrap_err();
        assert_eq!(error.fields[0].field, "count", "{error}");
        assert!(error.fields[0].problem.contains("count"), "{error}");
        let mut raw = Value::String("{count: 1".into());
        let error = validator().check(&mut raw).unwrap_err();
        assert!(error.message.contains("not valid JSON"));
    }

    #[test]
    fn integers_refuse_fractions() {
        let mut args = json!({"count": "4.5"});
        assert!(validator().check(&mut args).is_err());
        let mut args = json!({"count": 4.0});
        validator().check(&mut args).unwrap();
        assert_eq!(args["count"], json!(4));
    }
}
