//! What the demos' database-backed tools share: descriptions from doc
//! comments, blocking SQLite work off the async threads, and argument errors.

use concierge::ToolError;
use serde_json::Value;

/// Joins doc-comment lines the way `#[tool]` does: lines of a paragraph with
/// spaces, paragraphs with a blank line.
pub(crate) fn description(lines: &[&str]) -> String {
    let mut text = String::new();
    for line in lines.iter().map(|l| l.trim()) {
        if line.is_empty() {
            if !text.is_empty() && !text.ends_with("\n\n") {
                text.push_str("\n\n");
            }
        } else {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push(' ');
            }
            text.push_str(line);
        }
    }
    text.trim().to_string()
}

/// Runs blocking SQLite work off the async threads; `what` names the
/// database in the error if the work stops ("the task database").
pub(crate) async fn blocking<F>(what: &'static str, work: F) -> Result<Value, ToolError>
where
    F: FnOnce() -> Result<Value, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::failed(format!("{what} work stopped unexpectedly: {e}")))?
}

/// An argument the tool cannot use, with what is wrong in a sentence.
pub(crate) fn invalid(field: &str, problem: impl Into<String>) -> ToolError {
    let problem = problem.into();
    ToolError::invalid_arguments(
        problem.clone(),
        vec![concierge::core::FieldError {
            field: field.to_string(),
            problem,
        }],
    )
}

/// Annotations of a tool that only reads (and so may be called again freely).
pub(crate) fn read_only() -> concierge::ToolAnnotations {
    concierge::ToolAnnotations {
        read_only: true,
        idempotent: true,
        ..concierge::ToolAnnotations::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_join_lines_and_keep_paragraphs() {
        assert_eq!(
            description(&[" Lists tasks,", " done ones too.", "", " Second."]),
            "Lists tasks, done ones too.\n\nSecond."
        );
    }
}
