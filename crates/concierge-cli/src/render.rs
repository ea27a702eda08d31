//! Printing runs, messages and tools for people. Text that came from a
//! model, a tool, a file or the database goes through [`clean`] before it
//! reaches the terminal.

use std::iter::Peekable;
use std::str::Chars;

use concierge::{Message, RunOutput, RunStatus, ToolError, ToolOutcome, ToolSpec};

/// Text safe to print on a terminal: escape sequences (CSI such as
/// `ESC [2J`, OSC such as `ESC ]0;title BEL`, DCS and the like, in their 7-
/// and 8-bit forms) and control characters are removed; newlines and tabs
/// stay. Stored text cannot clear the screen, retitle the window or forge
/// output this way.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Unicode's bidirectional controls (embeddings, overrides, isolates and
/// marks): printed, they reorder what follows them, so that a line reads
/// other than it is ("Trojan Source").
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// After ESC: a CSI, a string command (OSC, DCS, SOS, PM, APC), or a short
/// sequence of intermediates and one final character.
fn skip_escape(chars: &mut Peekable<Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars);
        }
        _ => {
            while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
            chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
        }
    }
}

/// A CSI's parameters and intermediates, then its final character.
fn skip_csi(chars: &mut Peekable<Chars<'_>>) {
    while chars.next_if(|c| ('\u{20}'..='\u{3f}').contains(c)).is_some() {}
    chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
}

/// A string command's body, up to BEL, ESC \\ or ST. When it is never
/// terminated only the introducer is dropped: the rest stays visible.
fn skip_string(chars: &mut Peekable<Chars<'_>>) {
    let mut ahead = chars.clone();
    while let Some(c) = ahead.next() {
        match c {
            '\u{7}' | '\u{9c}' => {
                *chars = ahead;
                return;
            }
            '\u{1b}' if ahead.peek() == Some(&'\\') => {
                ahead.next();
                *chars = ahead;
                return;
            }
            _ => {}
        }
    }
}

/// A run in one line (for logs).
pub fn one_line(output: &RunOutput) -> String {
    match output.status {
        RunStatus::Completed | RunStatus::NeedsInput => clean(output.reply.as_deref().unwrap_or_default()),
        RunStatus::AwaitingConfirmation => "waiting for a confirmation".into(),
        RunStatus::AwaitingChoice => "waiting for a choice".into(),
        RunStatus::AwaitingInput => "waiting for an answer to a tool's question".into(),
        RunStatus::Failed => format!("failed: {}", clean(output.error.as_deref().unwrap_or_default())),
        RunStatus::Cancelled => "cancelled".into(),
        RunStatus::Blocked => format!("blocked: {}", clean(output.reply.as_deref().unwrap_or_default())),
    }
}

/// What a parked run asks, in words (with what the agent said before it,
/// such as the changes it made), for chat.
pub fn confirmation_question(output: &RunOutput) -> String {
    let Some(p) = &output.pending_confirmation else {
        return String::new();
    };
    let question = if p.message.is_empty() {
        format!("Run *{}*? (yes/no)", p.tool)
    } else {
        p.message.clone()
    };
    match output.reply.as_deref().filter(|r| !r.is_empty()) {
        Some(reply) => clean(&format!("{reply}\n{question}")),
        None => clean(&question),
    }
}

/// A parked run's question and how to answer it from the command line.
pub fn confirmation_help(output: &RunOutput) -> String {
    if output.pending_confirmation.is_none() {
        return String::new();
    }
    format!(
        "{}\n  answer: concierge run --session {} yes   (or no, or say what to change)",
        confirmation_question(output),
        clean(output.session_id.as_str())
    )
}

/// Prints a run's result; returns whether it succeeded.
pub fn print_output(output: &RunOutput, json: bool) -> bool {
    if json {
        match serde_json::to_string_pretty(output) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("error: cannot print the output: {e}"),
        }
        return !matches!(
            output.status,
            RunStatus::Failed | RunStatus::Cancelled | RunStatus::Blocked
        );
    }
    match output.status {
        // The sentence on stdout like any reply; the exit status says a
        // guardrail stopped the run.
        RunStatus::Blocked => {
            println!("{}", clean(output.reply.as_deref().unwrap_or_default()));
            false
        }
        RunStatus::Completed | RunStatus::NeedsInput => {
            println!("{}", clean(output.reply.as_deref().unwrap_or_default()));
            true
        }
        RunStatus::AwaitingConfirmation => {
            println!("{}", confirmation_help(output));
            true
        }
        RunStatus::AwaitingInput => {
            println!(
                "{}\n  answer: concierge run --session {} \"decline\"   (or the value; `field: value` lines for a form)",
                clean(output.reply.as_deref().unwrap_or_default()),
                clean(output.session_id.as_str())
            );
            true
        }
        RunStatus::AwaitingChoice => {
            println!(
                "{}\n  answer: concierge run --session {} 2   (a number, or the option's name)",
                clean(output.reply.as_deref().unwrap_or_default()),
                clean(output.session_id.as_str())
            );
            true
        }
        RunStatus::Failed => {
            eprintln!(
                "error: the run failed: {}",
                clean(output.error.as_deref().unwrap_or_default())
            );
            false
        }
        RunStatus::Cancelled => {
            eprintln!("the run was cancelled");
            false
        }
    }
}

/// A `tools_status` event (an MCP server a run waits for) as a line:
/// "(starting the orders tools…)".
pub fn tools_status(message: &str) -> String {
    format!("({})", clean(message))
}

/// A history message for people (cleaned for the terminal).
pub fn message(m: &Message) -> String {
    clean(&message_text(m))
}

fn message_text(m: &Message) -> String {
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
            ToolOutcome::Error(error) => format!("  {tool} <- {}", tool_error(error)),
        },
    }
}

/// A tool failure for people: its class in words, the message, and each
/// wrong field (`failed: Cannot divide by zero.`, `invalid arguments: …; a:
/// expected a number`), cleaned for the terminal.
pub fn tool_error(error: &ToolError) -> String {
    let mut text = format!("{}: {}", error.kind.as_str().replace('_', " "), error.message);
    for field in &error.fields {
        let name = if field.field.is_empty() {
            "arguments"
        } else {
            &field.field
        };
        text.push_str(&format!("; {name}: {}", field.problem));
    }
    clean(&text)
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

/// A runtime error in the CLI's words: where the library names its Rust API,
/// the CLI names its flags and commands. Cleaned for the terminal.
pub fn explain(error: &concierge::Error) -> String {
    use concierge::Error;
    let text = match error {
        Error::MissingSessionId => "a session is required: pass --session NAME".to_string(),
        Error::SessionNotFound(id) => format!(
            "session {id} not found: `concierge sessions` lists the sessions; \
             `concierge run --agent AGENT --session {id} MESSAGE` starts it"
        ),
        Error::AgentNotFound { agent, known } => {
            format!("agent \"{agent}\" not found; agents: {known} (`concierge agents` describes them)")
        }
        Error::EngineNotConfigured => {
            "the runtime could not open its engine; check --db and concierge.toml".to_string()
        }
        other => other.to_string(),
    };
    clean(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        assert_eq!(clean("a\u{1b}[2Jb\u{1b}]0;pwned\u{7}c"), "abc");
        assert_eq!(clean("red \u{1b}[1;31mtext\u{1b}[0m"), "red text");
        assert_eq!(clean("x\u{1b}]8;;http://e\u{1b}\\link\u{1b}]8;;\u{1b}\\y"), "xlinky");
        assert_eq!(
            clean("8-bit \u{9b}2J csi and \u{9d}0;t\u{9c} osc"),
            "8-bit  csi and  osc"
        );
        assert_eq!(clean("keep\nlines\tand tabs\r\u{8}\u{7f}"), "keep\nlines\tand tabs");
        assert_eq!(clean("reset\u{1b}c charset\u{1b}(B"), "reset charset");
        assert_eq!(clean("unterminated \u{1b}]0;title"), "unterminated 0;title");
        assert_eq!(clean("dangling \u{1b}"), "dangling ");
        assert_eq!(clean("héllo — ✓"), "héllo — ✓");
        assert_eq!(
            clean("pay \u{202e}00.001$\u{202c} now \u{2067}x\u{2069}\u{200f}"),
            "pay 00.001$ now x"
        );
    }
}
