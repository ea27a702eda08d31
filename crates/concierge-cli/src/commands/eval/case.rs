//! Running one case: its conversation on a runtime of its own (in memory,
//! its domain data a fresh copy in a directory of its own), each turn's
//! expectations checked against the events the turn produced.

use std::sync::Arc;
use std::time::Instant;

use concierge::{
    AgentId, Event, EventKind, Message, ModelRequest, RunOptions, RunOutput, RunStatus, Runtime, core::ToolChoice,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::dataset::{Asks, Case, Expect, Turn};

/// One expectation and whether it held.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Which turn (from 1).
    pub turn: usize,
    /// What was expected, in words ("calls book_pto").
    pub expected: String,
    /// Whether it held.
    pub passed: bool,
    /// What happened instead, or the judge's reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// What a case came to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// Whether every expectation held (and nothing failed to run).
    pub passed: bool,
    /// The expectations, turn by turn.
    pub checks: Vec<Check>,
    /// What stopped the case from running, if something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The replies, turn by turn.
    pub replies: Vec<String>,
    /// Model calls the conversation made (the judge's not counted).
    pub model_calls: u64,
    /// Tokens read and written by those calls.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
    /// What they cost, when the models have a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// How long the conversation took, in milliseconds.
    pub latency_ms: u64,
}

/// Runs `case` on `rt` (a runtime of its own).
pub async fn run(rt: &Runtime, case: &Case, judge: bool) -> CaseReport {
    let session = "eval";
    let options = || {
        let options = RunOptions::new().session_id(session);
        match &case.user {
            Some(user) => options.user(user.as_str()),
            None => options,
        }
    };
    let started = Instant::now();
    let mut report = CaseReport {
        name: case.name.clone(),
        passed: false,
        checks: Vec::new(),
        error: None,
        replies: Vec::new(),
        model_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
        latency_ms: 0,
    };
    if let Some(agent) = &case.agent {
        if let Err(e) = rt.open(Some(AgentId::new(agent.as_str())), options()).await {
            report.error = Some(format!("the case's agent {agent} could not take the conversation: {e}"));
            return report;
        }
    }
    let mut seen = 0;
    for (n, turn) in case.turns.iter().enumerate() {
        let output = match rt.send(turn.user.as_str(), options()).await {
            Ok(output) => output,
            Err(e) => {
                report.error = Some(format!("turn {} could not run: {e}", n + 1));
                break;
            }
        };
        let events = rt.events(session).await.unwrap_or_default();
        let new: Vec<Event> = events.into_iter().skip(seen).collect();
        seen += new.len();
        report.model_calls += new
            .iter()
            .filter(|e| matches!(e.kind, EventKind::ModelRequested { .. }))
            .count() as u64;
        report.input_tokens += output.usage.input_tokens;
        report.output_tokens += output.usage.output_tokens;
        if let Some(cost) = output.usage.cost_usd {
            *report.cost_usd.get_or_insert(0.0) += cost;
        }
        let reply = output.reply.clone().unwrap_or_default();
        // A run that failed fails its case, unless the case expects it to.
        if output.status == RunStatus::Failed && turn.expect.status.as_deref() != Some("failed") {
            let why = output.error.clone().unwrap_or_else(|| "it did not say why".into());
            report
                .error
                .get_or_insert(format!("turn {}: the run failed: {why}", n + 1));
        }
        report.checks.extend(check_turn(n + 1, &turn.expect, &output, &new));
        if judge {
            if let Some(criteria) = &turn.expect.judge {
                report.checks.push(judge_turn(rt, n + 1, turn, &reply, criteria).await);
            }
        }
        report.replies.push(reply);
    }
    report.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    report.passed = report.error.is_none() && report.checks.iter().all(|c| c.passed);
    report
}

/// The expectations of one turn, checked against its output and events.
fn check_turn(turn: usize, expect: &Expect, output: &RunOutput, events: &[Event]) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut check = |expected: String, passed: bool, detail: String| {
        checks.push(Check {
            turn,
            expected,
            passed,
            detail: if passed { String::new() } else { detail },
        });
    };
    // The calls that ran in this turn (a call parked for a confirmation
    // runs in the turn that approves it; a declined one never does), with
    // their arguments from the run's log.
    let null = Value::Null;
    let called: Vec<(&str, &Value)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolFinished {
                call_id, tool, outcome, ..
            } if ran(outcome) => {
                let arguments = output
                    .tool_executions
                    .iter()
                    .find(|x| &x.call_id == call_id)
                    .map_or(&null, |x| &x.arguments);
                Some((tool.as_str(), arguments))
            }
            _ => None,
        })
        .collect();
    let called_names = || {
        let names: Vec<&str> = called.iter().map(|(t, _)| *t).collect();
        if names.is_empty() {
            "no tool was called".to_string()
        } else {
            format!("called {}", names.join(", "))
        }
    };
    let reply = output.reply.clone().unwrap_or_default();
    let status = output.status.as_str();
    if let Some(agent) = &expect.agent {
        check(
            format!("{agent} answers"),
            output.agent.as_str() == agent,
            format!("{} answered", output.agent),
        );
    }
    if let Some(expected) = &expect.status {
        check(
            format!("the run stops as {expected}"),
            status == expected,
            format!("it stopped as {status}"),
        );
    }
    if let Some(asks) = expect.asks {
        let (what, held) = match asks {
            Asks::Confirmation => (
                "asks for a confirmation",
                output.status == RunStatus::AwaitingConfirmation,
            ),
            Asks::Choice => ("asks the person to choose", output.status == RunStatus::AwaitingChoice),
            Asks::Question => ("asks a question", output.status == RunStatus::NeedsInput),
            Asks::Nothing => ("asks nothing", output.status == RunStatus::Completed),
        };
        check(what.to_string(), held, format!("it stopped as {status}"));
    }
    for tool in &expect.tools {
        check(
            format!("calls {tool}"),
            called.iter().any(|(t, _)| t == tool),
            called_names(),
        );
    }
    for wanted in &expect.tool_args {
        let held = called
            .iter()
            .any(|(t, args)| *t == wanted.tool && includes(args, &wanted.args));
        let given: Vec<String> = called
            .iter()
            .filter(|(t, _)| *t == wanted.tool)
            .map(|(_, a)| a.to_string())
            .collect();
        let detail = if given.is_empty() {
            called_names()
        } else {
            format!("it was given {}", given.join(" then "))
        };
        check(format!("calls {} with {}", wanted.tool, wanted.args), held, detail);
    }
    for tool in &expect.not_tools {
        check(
            format!("does not call {tool}"),
            !called.iter().any(|(t, _)| t == tool),
            called_names(),
        );
    }
    let lower = reply.to_lowercase();
    for text in &expect.reply_contains {
        check(
            format!("the reply says {text:?}"),
            lower.contains(&text.to_lowercase()),
            format!("the reply was {reply:?}"),
        );
    }
    for text in &expect.reply_not_contains {
        check(
            format!("the reply does not say {text:?}"),
            !lower.contains(&text.to_lowercase()),
            format!("the reply was {reply:?}"),
        );
    }
    if let Some(pattern) = &expect.reply_matches {
        let held = regex::Regex::new(pattern).is_ok_and(|re| re.is_match(&reply));
        check(
            format!("the reply matches /{pattern}/"),
            held,
            format!("the reply was {reply:?}"),
        );
    }
    checks
}

/// Whether a finished call's tool ran (not declined, cancelled or refused).
fn ran(outcome: &concierge::ToolOutcome) -> bool {
    use concierge::ToolErrorKind as Kind;
    match outcome {
        concierge::ToolOutcome::Ok(_) => true,
        concierge::ToolOutcome::Error(e) => !matches!(
            e.kind,
            Kind::Declined | Kind::Cancelled | Kind::LimitReached | Kind::NotAllowed | Kind::UnknownTool
        ),
    }
}

/// Whether `actual` has everything `wanted` has: objects by their keys
/// (more keys allowed), numbers by value, anything else equal.
fn includes(actual: &Value, wanted: &Value) -> bool {
    match (actual, wanted) {
        (Value::Object(a), Value::Object(w)) => w.iter().all(|(k, v)| a.get(k).is_some_and(|x| includes(x, v))),
        (Value::Number(a), Value::Number(w)) => a.as_f64() == w.as_f64(),
        (Value::String(a), Value::String(w)) => a.eq_ignore_ascii_case(w),
        _ => actual == wanted,
    }
}

/// A model judges the reply by `criteria`: `PASS`, or `FAIL: reason`.
async fn judge_turn(rt: &Runtime, turn: usize, asked: &Turn, reply: &str, criteria: &str) -> Check {
    let request = ModelRequest {
        agent: AgentId::new("judge"),
        model: None,
        system: "You judge an assistant's reply against criteria. Answer with one line: \
                 PASS: <why>, or FAIL: <why>, the reason in a few words."
            .into(),
        messages: vec![Message::user(format!(
            "Criteria: {criteria}\n\nThe person wrote: {}\n\nThe assistant replied: {reply}",
            asked.user
        ))],
        tools: Arc::from([]),
        tool_choice: ToolChoice::None,
        temperature: Some(0.0),
        max_tokens: Some(150),
    };
    let expected = format!("a judge finds: {criteria}");
    match rt.complete(&request).await {
        Ok(answer) => {
            let line = answer.text.trim().trim_matches(|c: char| c == '*' || c == '"');
            let upper = line.to_ascii_uppercase();
            let reason = line
                .get(4..)
                .unwrap_or_default()
                .trim_start_matches([':', ' ', '-'])
                .trim()
                .to_string();
            let passed = upper.starts_with("PASS");
            let detail = if passed || upper.starts_with("FAIL") {
                reason
            } else {
                format!("the judge did not say PASS or FAIL: {line:?}")
            };
            Check {
                turn,
                expected,
                passed,
                detail,
            }
        }
        Err(e) => Check {
            turn,
            expected,
            passed: false,
            detail: format!("the judge could not be asked: {e}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn arguments_are_checked_as_a_subset() {
        let given = json!({"title": "Buy milk", "priority": 2, "tags": ["home"]});
        assert!(includes(&given, &json!({"title": "buy milk"})));
        assert!(includes(&given, &json!({"priority": 2.0})));
        assert!(!includes(&given, &json!({"priority": 3})));
        assert!(!includes(&given, &json!({"due": "today"})));
    }
}
