//! Temporal's limit on one payload: what concierge hands it (an activity's
//! input or result) is measured first, and one over
//! [`TemporalConfig::max_payload_bytes`](crate::TemporalConfig::max_payload_bytes)
//! fails at once with a sentence naming the tool or model, as the core's
//! input (the tool's error, the model's failure), never as a failed
//! workflow task.

use concierge_core::{CallId, Input, RunId, Timestamp, ToolError, ToolOutcome};
use serde::Serialize;

/// The size of `value` as the payload converter writes it (JSON), in bytes.
pub(crate) fn size_of<T: Serialize>(value: &T) -> usize {
    // Not serializable: Temporal would refuse it anyway, as too large.
    concierge_core::json_size(value).unwrap_or(usize::MAX)
}

/// A size in words (`3.1 MB`, `12.0 kB`, `300 bytes`).
pub(crate) fn human(bytes: usize) -> String {
    // Precision is not the point: a person reads one decimal.
    #[allow(clippy::cast_precision_loss)]
    let value = bytes as f64;
    if bytes >= 1_000_000 {
        format!("{:.1} MB", value / 1e6)
    } else if bytes >= 1_000 {
        format!("{:.1} kB", value / 1e3)
    } else {
        format!("{bytes} bytes")
    }
}

/// `what` (`the result of tool `x``) is `bytes` long, over `limit`.
pub(crate) fn over(what: &str, verb: &str, bytes: usize, limit: usize) -> String {
    format!(
        "{what} {verb} {}, over the {} Temporal allows per payload (TemporalConfig::max_payload_bytes)",
        human(bytes),
        human(limit)
    )
}

/// `answer` (a tool's or an agent's answer to call `call_id`), or, when it
/// is over `limit`, the call's error saying so: the model reads it as the
/// tool's error.
pub(crate) fn bounded_call(answer: Input, limit: usize, run_id: RunId, call_id: CallId, what: &str) -> Input {
    let bytes = size_of(&answer);
    if bytes <= limit {
        return answer;
    }
    let duration_ms = match &answer {
        Input::ToolFinished { duration_ms, .. } => *duration_ms,
        _ => 0,
    };
    let message = format!(
        "{}; have it return less (a page, a summary, an id to look up)",
        over(what, "is", bytes, limit)
    );
    Input::ToolFinished {
        run_id,
        call_id,
        outcome: ToolOutcome::Error(ToolError::failed(message)),
        duration_ms,
        usage: None,
        at: answer.at(),
    }
}

/// A model call's `answer`, or, when it is over `limit`, the model's failure
/// saying so (`model` names it).
pub(crate) fn bounded_reply(answer: Input, limit: usize, model: &str) -> Input {
    let bytes = size_of(&answer);
    if bytes <= limit {
        return answer;
    }
    match answer {
        Input::ModelReplied { run_id, call, at, .. } => Input::ModelFailed {
            run_id,
            call,
            error: over(&format!("the reply of model {model}"), "is", bytes, limit),
            at,
        },
        Input::ModelFailed {
            run_id,
            call,
            error,
            at,
        } => Input::ModelFailed {
            run_id,
            call,
            // A failure this long is cut: its start says what failed.
            error: error.chars().take(4_000).collect(),
            at,
        },
        other => other,
    }
}

/// A model call that fails at once: its request is over `limit`.
pub(crate) fn request_too_large(
    run_id: RunId,
    call: u32,
    agent: &str,
    bytes: usize,
    limit: usize,
    at: Timestamp,
) -> Input {
    Input::ModelFailed {
        run_id,
        call,
        error: format!(
            "{}; bound what the agent sends with its [history] policy (last_turns, max_request_bytes)",
            over(
                &format!("the request to the model of agent {agent}"),
                "is",
                bytes,
                limit
            )
        ),
        at,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use concierge_core::ModelReply;

    use super::*;

    #[test]
    fn an_answer_over_the_limit_becomes_an_error_naming_the_tool_or_model() {
        assert_eq!(human(3_100_000), "3.1 MB");
        assert_eq!(human(12_000), "12.0 kB");
        assert_eq!(human(300), "300 bytes");

        let big = Input::ToolFinished {
            run_id: RunId::new("r1"),
            call_id: CallId::new("c1"),
            outcome: ToolOutcome::Ok(serde_json::Value::String("x".repeat(5_000))),
            duration_ms: 7,
            usage: None,
            at: Timestamp(1),
        };
        let kept = bounded_call(big.clone(), 10_000, RunId::new("r1"), CallId::new("c1"), "x");
        assert_eq!(kept, big);
        let cut = bounded_call(
            big,
            1_000,
            RunId::new("r1"),
            CallId::new("c1"),
            "the result of tool `search_flights`",
        );
        let Input::ToolFinished {
            outcome: ToolOutcome::Error(error),
            duration_ms: 7,
            ..
        } = cut
        else {
            panic!("{cut:?}");
        };
        assert!(
            error
                .message
                .starts_with("the result of tool `search_flights` is 5.1 kB, over the 1.0 kB"),
            "{}",
            error.message
        );

        let reply = Input::ModelReplied {
            run_id: RunId::new("r1"),
            call: 2,
            reply: ModelReply::text("y".repeat(5_000)),
            at: Timestamp(1),
        };
        let failed = bounded_reply(reply, 1_000, "`scripted`");
        let Input::ModelFailed { call: 2, error, .. } = failed else {
            panic!("{failed:?}");
        };
        assert!(error.starts_with("the reply of model `scripted` is 5.1 kB"), "{error}");
    }
}
