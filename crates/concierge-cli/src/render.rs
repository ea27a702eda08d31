//! Printing runs, messages and tools for people.

use concierge::{Message, RunOutput, RunStatus, ToolOutcome, ToolSpec};

/// A run in one line (for logs).
pub fn one_line(output: &RunOutput) -> String {
    match output.status {
        RunStatus::Completed | RunStatus::NeedsInput => output.reply.clone().unwrap_or_default(),
        RunStatus::AwaitingConfirmation => "waiting for a confirmation".into(),
        RunStatus::Failed => format!("failed: {}", output.error.clone().unwrap_or_default()),
        RunStatus::Cancelled => "cancelled".into(),
    }
}

/// How to answer a parked run from the command line.
pub fn confirmation_help(output: &RunOutput) -> String {
    let Some(p) = &output.pending_confirmation else {
        return String::new();
    };
    format!(
        "The agent wants to run {} with {}.\n  approve: concierge confirm --session {} --call {} --fingerprint {}\n  decline: concierge confirm --session {} --call {} --fingerprint {} --deny",
        p.tool, p.arguments, output.session_id, p.call_id, p.fingerprint, output.session_id, p.call_id, p.fingerprint
    )
}

/// Prints a run's result; returns whether it succeeded.
pub fn print_output(output: &RunOutput, json: bool) -> bool {
    if json {
        match serde_json::to_string_pretty(output) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("error: cannot print the output: {e}"),
        }
        return !matches!(output.status, RunStatus::Failed | RunStatus::Cancelled);
    }
    match output.status {
        RunStatus::Completed | RunStatus::NeedsInput => {
            println!("{}", output.reply.clone().unwrap_or_default());
            true
        }
        RunStatus::AwaitingConfirmation => {
            println!("{}", confirmation_help(output));
            true
        }
        RunStatus::Failed => {
            eprintln!("error: the run failed: {}", output.error.clone().unwrap_or_default());
            false
        }
        RunStatus::Cancelled => {
            eprintln!("the run was cancelled");
            false
        }
    }
}

/// A history message for people.
pub fn message(m: &Message) -> String {
    match m {
        Message::System { content } => format!("system: {content}"),
        Message::User { content } => format!("user: {content}"),
        Message::Assistant {
            agent,
            content,
            tool_calls,
        } => {
            let mut lines = Vec::new();
            if !content.is_empty() {
                lines.push(format!("{agent}: {content}"));
            }
            for call in tool_calls {
                lines.push(format!("{agent} -> {}({})", call.name, call.arguments));
            }
            lines.join("\n")
        }
        Message::Tool { tool, outcome, .. } => match outcome {
            ToolOutcome::Ok(value) => format!("  {tool} <- {value}"),
            ToolOutcome::Error(error) => format!("  {tool} <- error: {error}"),
        },
    }
}

/// A tool's flags, e.g. `read_only, cacheable`.
pub fn annotations(spec: &ToolSpec) -> String {
    let a = &spec.annotations;
    let flags = [
        (a.read_only, "read_only"),
        (a.destructive, "destructive"),
        (a.idempotent, "idempotent"),
        (a.requires_confirmation, "requires_confirmation"),
        (a.cacheable, "cacheable"),
    ];
    flags
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}
