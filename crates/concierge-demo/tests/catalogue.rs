//! Every tool of the assistant's catalogue, checked the way a call is: a
//! call missing a required field fails with an error naming that field, and
//! the coercions of `docs/agents.md` ("Tools as the model sees them") work
//! on every field they apply to — numbers written as text ("3", "$3",
//! "three"), dates in words where the schema says `format: "date"`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::Runtime;
use concierge::tool::ArgumentValidator;
use concierge::{Timestamp, ToolErrorKind};
use serde_json::{Map, Value, json};

/// Wednesday 2025-03-05, noon UTC.
const ASKED: Timestamp = Timestamp(1_741_176_000_000);

#[tokio::test]
async fn every_tool_names_a_missing_field_and_coerces_numbers_and_dates() {
    let rt = concierge_demo::install(Runtime::builder())
        .in_memory()
        .build()
        .await
        .unwrap();
    let catalog = rt.catalog();
    let tools: Vec<_> = catalog.tools().collect();
    assert!(tools.len() >= 40, "the whole catalogue: {}", tools.len());
    let (mut required_checked, mut numbers, mut dates) = (0, 0, 0);
    for tool in &tools {
        let validator = ArgumentValidator::new(&tool.input_schema)
            .unwrap_or_else(|e| panic!("{}: an unusable schema: {e}", tool.name));
        let schema = &tool.input_schema;
        let properties = schema["properties"].as_object().cloned().unwrap_or_default();
        let required: Vec<String> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default();

        // Missing required fields: each one named.
        if !required.is_empty() {
            let mut empty = json!({});
            let error = validator
                .check_at(&mut empty, ASKED)
                .expect_err(&format!("{}: a call without its required fields", tool.name));
            assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
            for field in &required {
                assert!(
                    error.fields.iter().any(|f| &f.field == field),
                    "{}: the error names {field}: {error}",
                    tool.name
                );
            }
            required_checked += 1;
        }

        // Coercions, one field at a time: the field's own problem (if any) is
        // not a type or format problem once coerced.
        for (name, property) in &properties {
            // `["integer", "null"]` for an optional field: its non-null type.
            let kind = match &property["type"] {
                Value::String(kind) => kind.as_str(),
                Value::Array(kinds) => kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|k| *k != "null")
                    .unwrap_or_default(),
                _ => "",
            };
            let format = property["format"].as_str().unwrap_or_default();
            let samples: Vec<(Value, Value)> = match (kind, format) {
                ("integer", _) => vec![(json!("3"), json!(3)), (json!("three"), json!(3))],
                ("number", _) => vec![
                    (json!("3"), json!(3)),
                    (json!("$3"), json!(3)),
                    (json!("three"), json!(3)),
                ],
                ("string", "date") => vec![(json!("tomorrow"), json!("2025-03-06"))],
                _ => continue,
            };
            for (given, expected) in samples {
                let mut args = Value::Object(Map::from_iter([(name.clone(), given.clone())]));
                let result = validator.check_at(&mut args, ASKED);
                assert_eq!(args[name], expected, "{}.{name} from {given}", tool.name);
                if let Err(error) = result {
                    assert!(
                        !error.fields.iter().any(|f| &f.field == name),
                        "{}.{name} from {given}: {error}",
                        tool.name
                    );
                }
                if format == "date" {
                    dates += 1;
                } else {
                    numbers += 1;
                }
            }
        }
    }
    assert!(required_checked >= 20, "tools with required fields: {required_checked}");
    assert!(
        numbers >= 10 && dates >= 3,
        "coercions exercised: {numbers} numbers, {dates} dates"
    );
}
