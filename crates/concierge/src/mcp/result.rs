//! A `tools/call` result as the model sees it, within the result size limit.

use concierge_core::ToolError;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

/// The most a tool result may take in the conversation, serialized: larger
/// base64 payloads (images, audio, blobs) are described instead, larger
/// `structuredContent` gives way to the text items, and a larger mapped
/// result is cut to this size with a note saying so.
pub const MAX_RESULT_BYTES: usize = 16 * 1024;

/// A tool result as the model sees it: structured content if the server
/// gave some (and it fits), else the text (one item) or the list of items;
/// `isError` results become tool errors. Never larger than
/// [`MAX_RESULT_BYTES`] serialized.
pub(crate) fn outcome(result: CallToolResult) -> Result<Value, ToolError> {
    let items: Vec<Value> = result.content.iter().map(content).collect();
    if result.is_error == Some(true) {
        // Another concierge (or any server that answers in our shape) sends
        // `{"error": ToolError}`: keep its kind and fields for the model.
        if let Some(error) = structured_error(&result) {
            return Err(error);
        }
        let text: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        let message = if text.is_empty() {
            Value::Array(items).to_string()
        } else {
            text.join("\n")
        };
        return Err(ToolError::failed(cut(&message, MAX_RESULT_BYTES)));
    }
    if let Some(structured) = result.structured_content {
        let size = serialized_len(&structured);
        if size <= MAX_RESULT_BYTES {
            return Ok(structured);
        }
        if items.is_empty() {
            return Ok(too_large(&structured.to_string(), size));
        }
        tracing::debug!(
            bytes = size,
            "structuredContent over the result limit; using the text items"
        );
    }
    let value = match items.len() {
        0 => Value::Null,
        1 => items.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(items),
    };
    let size = serialized_len(&value);
    if size <= MAX_RESULT_BYTES {
        return Ok(value);
    }
    let text = match &value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    Ok(too_large(&text, size))
}

fn serialized_len(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len())
}

/// The first part of a result too large to include, with a note.
fn too_large(text: &str, size: usize) -> Value {
    // Leave room for the note and the JSON escaping of the part kept.
    let kept = cut(text, MAX_RESULT_BYTES / 2);
    json!({
        "truncated": true,
        "note": format!(
            "the result was {size} bytes, over the {} KiB limit; only its beginning is included",
            MAX_RESULT_BYTES / 1024
        ),
        "bytes": size,
        "beginning": kept,
    })
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn structured_error(result: &CallToolResult) -> Option<ToolError> {
    #[derive(serde::Deserialize)]
    struct Body {
        error: ToolError,
    }
    let parsed = match (&result.structured_content, result.content.as_slice()) {
        (Some(value), _) => serde::Deserialize::deserialize(value).ok(),
        (None, [only]) => only.as_text().and_then(|t| serde_json::from_str::<Body>(&t.text).ok()),
        _ => None,
    };
    parsed.map(|body| body.error)
}

fn inline(kind: &str, mime_type: &str, data: &str) -> Value {
    if data.len() <= MAX_RESULT_BYTES {
        json!({"type": kind, "mime_type": mime_type, "data": data})
    } else {
        json!({"type": kind, "mime_type": mime_type, "base64_bytes": data.len(), "note": "too large to include"})
    }
}

fn content(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text(text) => Value::String(text.text.clone()),
        ContentBlock::Image(image) => inline("image", &image.mime_type, &image.data),
        ContentBlock::Audio(audio) => inline("audio", &audio.mime_type, &audio.data),
        ContentBlock::Resource(resource) => match &resource.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                json!({"type": "resource", "uri": uri, "text": text})
            }
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => {
                let mut value = inline(
                    "resource",
                    mime_type.as_deref().unwrap_or("application/octet-stream"),
                    blob,
                );
                value["uri"] = json!(uri);
                value
            }
            _ => json!({"type": "resource"}),
        },
        ContentBlock::ResourceLink(link) => json!({"type": "resource_link", "uri": link.uri, "name": link.name}),
        _ => json!({"type": "unknown"}),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use concierge_core::ToolErrorKind;

    use super::*;

    #[test]
    fn a_structured_error_keeps_its_kind_and_fields() {
        let error = ToolError::invalid_arguments(
            "bad",
            vec![concierge_core::FieldError {
                field: "a".into(),
                problem: "is required".into(),
            }],
        );
        let result = CallToolResult::error(vec![ContentBlock::text(json!({"error": error}).to_string())]);
        assert_eq!(outcome(result).unwrap_err(), error);
    }

    #[test]
    fn a_plain_error_is_a_failure_with_its_text() {
        let result = CallToolResult::error(vec![ContentBlock::text("disk full")]);
        let error = outcome(result).unwrap_err();
        assert_eq!(error.kind, ToolErrorKind::Failed);
        assert_eq!(error.message, "disk full");
        let result = CallToolResult::error(vec![ContentBlock::text(r#"{"error": "not ours"}"#)]);
        assert_eq!(outcome(result).unwrap_err().kind, ToolErrorKind::Failed);
    }

    #[test]
    fn structured_content_wins_and_single_items_unwrap() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("42")]);
        assert_eq!(outcome(result.clone()).unwrap(), json!("42"));
        result.structured_content = Some(json!({"value": 42}));
        assert_eq!(outcome(result).unwrap(), json!({"value": 42}));
        let result = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(outcome(result).unwrap(), json!(["a", "b"]));
    }

    #[test]
    fn structured_content_over_the_limit_gives_way_to_a_short_text() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("a summary")]);
        result.structured_content = Some(json!({"rows": "x".repeat(MAX_RESULT_BYTES)}));
        assert_eq!(outcome(result).unwrap(), json!("a summary"));
    }

    #[test]
    fn no_result_is_larger_than_the_limit() {
        let big = "é".repeat(MAX_RESULT_BYTES);
        let mut structured = CallToolResult::success(vec![]);
        structured.structured_content = Some(json!({"rows": big}));
        let texts = CallToolResult::success(vec![ContentBlock::text(big.clone()), ContentBlock::text("b")]);
        let error = CallToolResult::error(vec![ContentBlock::text(big.clone())]);
        for result in [structured, texts] {
            let value = outcome(result).unwrap();
            assert!(serialized_len(&value) <= MAX_RESULT_BYTES, "{}", serialized_len(&value));
            assert_eq!(value["truncated"], true);
            assert!(value["note"].as_str().unwrap().contains("over the 16 KiB limit"));
            assert!(value["beginning"].as_str().unwrap().contains("éé"));
        }
        assert!(outcome(error).unwrap_err().message.len() <= MAX_RESULT_BYTES + 3);
    }
}
