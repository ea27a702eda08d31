//! Argument validation and lenient coercion (seed 000's `validate_and_convert_args`).

use std::fmt;

use concierge_core::{FieldError, ToolError};
use jsonschema::Validator;
use serde_json::{Map, Number, Value};

/// Coerces and validates a tool's arguments against its JSON Schema.
///
/// Coercion happens only where the schema asks for another type and the value
/// converts without loss: `"42"` → `42` for an integer, `"2.5"` → `2.5` for a
/// number, `"yes"`/`"true"`/`"1"` → `true` for a boolean, `5` → `"5"` for a
/// string, a string holding a JSON object or array where one is expected, and
/// an enum string matched case-insensitively. Then the value is validated;
/// every problem is reported with its field.
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
        let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        Ok(Self {
            schema: schema.clone(),
            validator,
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Coerces `args` in place, then validates them.
    pub fn check(&self, args: &mut Value) -> Result<(), ToolError> {
        if let Value::String(raw) = args {
            return Err(ToolError::invalid_arguments(
                format!("the arguments are not valid JSON: {raw}"),
                Vec::new(),
            ));
        }
        coerce(args, &self.schema, &self.schema, 0);
        let problems: Vec<FieldError> = self
            .validator
            .iter_errors(args)
            .map(|error| {
                let path = error.instance_path().to_string();
                let field = path.trim_start_matches('/').to_string();
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

fn coerce(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = resolve(schema, root);
    if let Some(Value::Array(parts)) = schema.get("allOf") {
        for part in parts {
            coerce(value, part, root, depth + 1);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            coerce_alternatives(value, branches, root, depth);
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
        Value::Object(map) => coerce_object(map, schema, root, depth),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    coerce(item, item_schema, root, depth + 1);
                }
            }
        }
        Value::String(s) => {
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

fn coerce_alternatives(value: &mut Value, branches: &[Value], root: &Value, depth: usize) {
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
            coerce(value, branch, root, depth + 1);
        }
        return;
    }
    for branch in resolved {
        if types_of(branch).iter().all(|t| *t == "null") {
            continue;
        }
        let mut candidate = value.clone();
        coerce(&mut candidate, branch, root, depth + 1);
        if types_of(branch).iter().any(|t| matches_type(&candidate, t)) {
            *value = candidate;
            return;
        }
    }
}

fn coerce_object(map: &mut Map<String, Value>, schema: &Value, root: &Value, depth: usize) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    for (key, item) in map.iter_mut() {
        if let Some(sub) = properties.and_then(|p| p.get(key)).or(additional) {
            coerce(item, sub, root, depth + 1);
        }
    }
}

fn convert(value: &Value, ty: &str) -> Option<Value> {
    match (ty, value) {
        ("integer", Value::String(s)) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Some(Value::from(i));
            }
            let f = t.parse::<f64>().ok()?;
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
            let f = t.parse::<f64>().ok().filter(|f| f.is_finite())?;
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
