//! What a remote task says, in our terms: its words, a finished task's
//! result, and the tokens it reports.

use a2a::{Part, PartContent, Task, TaskStatus};
use concierge_core::Usage;
use serde_json::{Value, json};

/// The text of `parts`, one paragraph each (data parts as JSON).
pub(super) fn words(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Text(text) => Some(text.clone()),
            PartContent::Data(data) => Some(data.to_string()),
            PartContent::Url(url) => Some(url.clone()),
            PartContent::Raw(_) => None,
        })
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

pub(super) fn status_words(status: &TaskStatus) -> Option<String> {
    let message = status.message.as_ref()?;
    let text = message
        .parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (!text.trim().is_empty()).then_some(text)
}

/// A finished task's result: its artifacts' text (and data), else its
/// status's words.
pub(super) fn result(task: &Task) -> Value {
    let parts: Vec<Part> = task
        .artifacts
        .iter()
        .flatten()
        .flat_map(|a| a.parts.iter().cloned())
        .collect();
    let data: Vec<Value> = parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Data(data) => Some(data.clone()),
            _ => None,
        })
        .collect();
    let text: Vec<Part> = parts
        .into_iter()
        .filter(|p| !matches!(p.content, PartContent::Data(_)))
        .collect();
    let reply = if text.is_empty() {
        status_words(&task.status).unwrap_or_default()
    } else {
        words(&text)
    };
    if data.is_empty() {
        Value::String(reply)
    } else {
        json!({"reply": reply, "data": data})
    }
}

/// Tokens the remote reports in the task's metadata (`usage`, with
/// `inputTokens`/`input_tokens`, `outputTokens`/`output_tokens` and
/// optionally `costUsd`/`cost_usd`).
pub(super) fn task_usage(task: &Task) -> Option<Usage> {
    let usage = task.metadata.as_ref()?.get("usage")?;
    // Counts may come as floats (a protobuf Struct's numbers are doubles).
    let number = |names: [&str; 2]| {
        names.iter().find_map(|n| usage.get(*n)).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_f64().filter(|f| f.is_finite() && *f >= 0.0).map(whole))
        })
    };
    let input = number(["inputTokens", "input_tokens"]).unwrap_or(0);
    let output = number(["outputTokens", "output_tokens"]).unwrap_or(0);
    let cost = ["costUsd", "cost_usd"]
        .iter()
        .find_map(|n| usage.get(*n))
        .and_then(Value::as_f64);
    (input > 0 || output > 0).then_some(Usage {
        input_tokens: input,
        output_tokens: output,
        cost_usd: cost,
    })
}

/// A count written as a float, as a whole number.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn whole(count: f64) -> u64 {
    count.round() as u64
}
#[cfg(test)]
pub(super) mod tests {
    use a2a::{Message, Role, TaskState};

    use super::*;

    /// A task in `state` with a status message, these artifact parts and metadata.
    pub(in crate::a2a) fn task(state: TaskState, artifacts: Vec<Part>, metadata: Option<Value>) -> Task {
        Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state,
                message: Some(Message::new(Role::Agent, vec![Part::text("status words")])),
                timestamp: None,
            },
            artifacts: (!artifacts.is_empty()).then(|| {
                vec![a2a::Artifact {
                    artifact_id: "a1".into(),
                    name: None,
                    description: None,
                    parts: artifacts,
                    metadata: None,
                    extensions: None,
                }]
            }),
            history: None,
            metadata: metadata.map(|m| serde_json::from_value(m).unwrap_or_default()),
        }
    }

    #[test]
    fn a_finished_tasks_result_is_its_artifacts_text_else_its_status() {
        let done = task(TaskState::Completed, vec![Part::text("Booked: 9:40 to Oslo.")], None);
        assert_eq!(result(&done), json!("Booked: 9:40 to Oslo."));
        let bare = task(TaskState::Completed, Vec::new(), None);
        assert_eq!(result(&bare), json!("status words"));
        let with_data = task(
            TaskState::Completed,
            vec![Part::text("Booked."), Part::data(json!({"seat": "12A"}))],
            None,
        );
        assert_eq!(
            result(&with_data),
            json!({"reply": "Booked.", "data": [{"seat": "12A"}]})
        );
    }

    #[test]
    fn the_remotes_usage_is_read_from_the_tasks_metadata_in_either_spelling() {
        let camel = task(
            TaskState::Completed,
            Vec::new(),
            Some(json!({"usage": {"inputTokens": 40, "outputTokens": 9, "costUsd": 0.002}})),
        );
        assert_eq!(
            task_usage(&camel),
            Some(Usage {
                input_tokens: 40,
                output_tokens: 9,
                cost_usd: Some(0.002)
            })
        );
        let snake = task(
            TaskState::Completed,
            Vec::new(),
            Some(json!({"usage": {"input_tokens": 3.0, "output_tokens": 1}})),
        );
        assert_eq!(task_usage(&snake).map(|u| u.input_tokens), Some(3));
        assert_eq!(task_usage(&task(TaskState::Completed, Vec::new(), None)), None);
    }
}
