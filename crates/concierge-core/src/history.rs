//! What of a long conversation the model sees: the agent's
//! [`HistoryPolicy`].
//!
//! A *turn* is a user message and everything after it until the next user
//! message (messages before the first user message form a turn of their
//! own). With the policy on, a model request carries the system prompt, a
//! summary of the turns left out (if any), then the latest turns in full. A
//! turn is kept or left out whole, so a tool call never travels without its
//! result (providers reject that). When the request would still exceed
//! `max_request_bytes`, more of the oldest turns go; the latest turn is
//! always sent.
//!
//! The summary is written deterministically from the log ([`SummaryMode::Log`])
//! or by the model ([`SummaryMode::Model`]): then, when the window has moved by
//! half its size since the last summary, a run planning with the model first
//! asks the model to update the running summary, which the conversation
//! keeps ([`RunningSummary`]). Everything here is a pure function of the
//! history, so a replay gives the same requests.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::model::{ModelRequest, ToolChoice};
use crate::tool::ToolOutcome;

/// Largest running summary the model may write (longer replies are cut), in bytes.
pub const MAX_MODEL_SUMMARY_BYTES: usize = 4_000;
/// Room kept for the summary message when trimming a request to its size
/// bound: the model's summary and the summary from the log together stay under it.
const SUMMARY_RESERVE: usize = MAX_MODEL_SUMMARY_BYTES + MAX_LOG_SUMMARY_BYTES + 256;
/// Largest summary written from the log, in bytes.
const MAX_LOG_SUMMARY_BYTES: usize = 2_000;
/// Largest transcript sent to the model to summarize when no size bound is set.
const MAX_TRANSCRIPT_BYTES: usize = 100_000;
/// What the model is told when asked to update the running summary.
const SUMMARIZE_INSTRUCTIONS: &str = "You keep the running summary of a conversation between a person and an \
     assistant. Write the updated summary of everything below in at most 200 words: what the person wants, the \
     facts, names, numbers and decisions so far, what was done (tools that ran and what they returned) and what \
     is still open. Reply with the summary only.";
/// Longest quote of one message in a summary or transcript, in characters.
const QUOTE_CHARS: usize = 100;
const TRANSCRIPT_LINE_CHARS: usize = 600;

/// How the turns left out of a model request are summarized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryMode {
    /// Written by the model, in runs that plan with the model (rules runs
    /// never ask); refreshed when the window has moved by half its size.
    Model,
    /// Written from the log, deterministically: what the person asked, what
    /// the agent answered, which tools ran.
    #[default]
    Log,
    /// No summary: the turns left out are simply not sent.
    Off,
}

/// Per agent, how much of the conversation a model request carries.
///
/// Off by default (every message is sent, as before the policy existed); it
/// is on once `last_turns` or `max_request_bytes` is set. In an agent file:
///
/// ```toml
/// [history]
/// last_turns = 20
/// max_request_bytes = 200000
/// summary = "model"   # or "log" (the default), or "off"
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryPolicy {
    /// How many of the latest turns are sent in full (all when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turns: Option<usize>,
    /// The most bytes a serialized model request may take; older turns go
    /// first. The latest turn is always sent, even when it alone is larger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_request_bytes: Option<usize>,
    /// How the turns left out are summarized.
    #[serde(default, skip_serializing_if = "is_default_mode")]
    pub summary: SummaryMode,
}

fn is_default_mode(mode: &SummaryMode) -> bool {
    *mode == SummaryMode::default()
}

/// The summary the model wrote of the conversation's first `turns` turns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningSummary {
    /// How many turns, from the first, it covers.
    pub turns: usize,
    /// The summary's text.
    pub text: String,
}

/// What a model request carries of the history.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// The messages to send: the summary (a system message) first, if any,
    /// then the latest turns.
    pub messages: Vec<Message>,
    /// How many turns were left out.
    pub left_out: usize,
}

impl HistoryPolicy {
    /// A policy that sends the last `turns` turns in full.
    pub fn last_turns(turns: usize) -> Self {
        Self {
            last_turns: Some(turns),
            ..Self::default()
        }
    }

    /// Bounds the serialized request to `bytes`.
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = Some(bytes);
        self
    }

    /// Sets how the turns left out are summarized.
    pub fn summary(mut self, mode: SummaryMode) -> Self {
        self.summary = mode;
        self
    }

    /// Whether the policy leaves the history alone (every message is sent).
    pub fn is_off(&self) -> bool {
        self.last_turns.is_none() && self.max_request_bytes.is_none()
    }

    /// The first turn sent, by turn count and size alone (no model summary
    /// considered). `sizes` are the turns' sizes in bytes; `fixed` is the
    /// request's size without messages.
    fn base_start(&self, sizes: &[usize], fixed: usize) -> usize {
        let total = sizes.len();
        let mut start = self.last_turns.map_or(0, |n| total.saturating_sub(n.max(1)));
        if let Some(max) = self.max_request_bytes {
            let reserve = match self.summary {
                SummaryMode::Off => 0,
                SummaryMode::Log => MAX_LOG_SUMMARY_BYTES + 256,
                SummaryMode::Model => SUMMARY_RESERVE,
            };
            let mut tail: usize = sizes[start..].iter().sum();
            while start + 1 < total && fixed + reserve + tail > max {
                tail -= sizes[start];
                start += 1;
            }
        }
        start
    }

    /// How many turns the window moves before the model is asked for a new summary.
    fn batch(&self, total: usize, base: usize) -> usize {
        let kept = self.last_turns.unwrap_or(total - base);
        (kept / 2).max(1)
    }

    /// The messages a request carries of `history`, given the request's size
    /// without messages (`fixed`) and the model's running summary, if any.
    pub fn window(&self, history: &[Message], running: Option<&RunningSummary>, fixed: usize) -> Window {
        if self.is_off() {
            return Window {
                messages: history.to_vec(),
                left_out: 0,
            };
        }
        let turns = turns(history);
        let sizes: Vec<usize> = turns.iter().map(|t| bytes_of(&history[t.clone()])).collect();
        let total = turns.len();
        let base = self.base_start(&sizes, fixed);
        // The model's summary counts only under the model mode, and only
        // while it covers no turn the window still sends.
        let running = running.filter(|s| self.summary == SummaryMode::Model && s.turns <= base);
        let covered = running.map_or(0, |s| s.turns);
        // A fresh model summary: the window reaches back to it, so no turn
        // is summarized from the log meanwhile (the window is then up to
        // half as long again as `last_turns`).
        let fits = |start: usize| {
            self.max_request_bytes
                .is_none_or(|max| fixed + SUMMARY_RESERVE + sizes[start..].iter().sum::<usize>() <= max)
        };
        let start = if running.is_some() && base - covered < self.batch(total, base) && fits(covered) {
            covered
        } else {
            base
        };
        let mut messages = Vec::new();
        let summary = match self.summary {
            SummaryMode::Off => None,
            SummaryMode::Log => log_summary(history, &turns[..start]),
            SummaryMode::Model => {
                let from_log = log_summary(history, &turns[covered..start]);
                match (running, from_log) {
                    (None, from_log) => from_log,
                    (Some(s), None) => Some(model_summary_text(s)),
                    (Some(s), Some(log)) => Some(format!("{}\n\n{log}", model_summary_text(s))),
                }
            }
        };
        if let Some(summary) = summary {
            messages.push(Message::system(summary));
        }
        let from = turns.get(start).map_or(history.len(), |t| t.start);
        messages.extend_from_slice(&history[from..]);
        Window {
            messages,
            left_out: start,
        }
    }

    /// When the model should update the running summary: the number of
    /// turns the new summary covers, once the turns left out and not yet
    /// summarized reach half the window. `None` outside the model mode.
    pub fn summary_due(&self, history: &[Message], running: Option<&RunningSummary>, fixed: usize) -> Option<usize> {
        if self.is_off() || self.summary != SummaryMode::Model {
            return None;
        }
        let turns = turns(history);
        let sizes: Vec<usize> = turns.iter().map(|t| bytes_of(&history[t.clone()])).collect();
        let base = self.base_start(&sizes, fixed);
        let covered = running.map_or(0, |s| s.turns).min(base);
        (base > covered && base - covered >= self.batch(turns.len(), base)).then_some(base)
    }

    /// The request that asks the model to update the running summary with
    /// the turns up to `upto` (see [`HistoryPolicy::summary_due`]).
    pub fn summary_request(
        &self,
        base: &ModelRequest,
        history: &[Message],
        running: Option<&RunningSummary>,
        upto: usize,
    ) -> ModelRequest {
        let turns = turns(history);
        let covered = running.map_or(0, |s| s.turns).min(upto);
        let upto = upto.min(turns.len());
        let mut prompt = String::new();
        if let Some(s) = running.filter(|s| s.turns > 0) {
            let _ = write!(prompt, "The summary so far ({} turns):\n{}\n\n", s.turns, s.text);
        }
        let limit = self.max_request_bytes.map_or(MAX_TRANSCRIPT_BYTES, |max| {
            max.saturating_sub(prompt.len() + 2_000).max(1_000)
        });
        let range = turns[covered..upto].first().map_or(0, |t| t.start)..turns[..upto].last().map_or(0, |t| t.end);
        prompt.push_str("The turns to add:\n");
        prompt.push_str(&transcript(&history[range], limit));
        ModelRequest {
            agent: base.agent.clone(),
            model: base.model.clone(),
            system: SUMMARIZE_INSTRUCTIONS.to_string(),
            messages: vec![Message::user(prompt)],
            tools: Arc::from(Vec::new()),
            tool_choice: ToolChoice::None,
            temperature: base.temperature,
            max_tokens: None,
        }
    }
}

/// The model's summary as stored: cut to [`MAX_MODEL_SUMMARY_BYTES`].
pub fn running_summary(turns: usize, text: &str) -> RunningSummary {
    RunningSummary {
        turns,
        text: cut(text.trim(), MAX_MODEL_SUMMARY_BYTES),
    }
}

/// The summary the model stores when it could not be asked: the same
/// summary from the log a request would carry.
pub fn fallback_summary(history: &[Message], running: Option<&RunningSummary>, upto: usize) -> RunningSummary {
    let turns = turns(history);
    let upto = upto.min(turns.len());
    let covered = running.map_or(0, |s| s.turns).min(upto);
    let from_log = log_summary(history, &turns[covered..upto]).unwrap_or_default();
    let text = match running {
        Some(s) if covered > 0 => format!("{}\n\n{from_log}", s.text),
        _ => from_log,
    };
    running_summary(upto, &text)
}

fn model_summary_text(summary: &RunningSummary) -> String {
    format!(
        "Summary of the first {} turns of this conversation (not shown):\n{}",
        summary.turns, summary.text
    )
}

/// The turns of `history`, as ranges of message indexes.
pub fn turns(history: &[Message]) -> Vec<Range<usize>> {
    let mut turns: Vec<Range<usize>> = Vec::new();
    for (i, message) in history.iter().enumerate() {
        match turns.last_mut() {
            Some(turn) if !matches!(message, Message::User { .. }) => turn.end = i + 1,
            _ => turns.push(i..i + 1),
        }
    }
    turns
}

/// The serialized size of `messages`, with a separator each.
pub fn bytes_of(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| serde_json::to_vec(m).map_or(0, |v| v.len()) + 1)
        .sum()
}

/// A compact, bounded summary of `turns` of `history` from the log: what
/// the person asked, the last answers, the tools that ran. `None` for no turns.
pub fn log_summary(history: &[Message], turns: &[Range<usize>]) -> Option<String> {
    let first = turns.first()?.start;
    let last = turns.last()?.end;
    let messages = &history[first..last];
    let mut asked = Vec::new();
    let mut answers = Vec::new();
    let mut tools: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for message in messages {
        match message {
            Message::User { content } => asked.push(quote(content)),
            Message::Assistant { content, .. } if !content.trim().is_empty() => answers.push(quote(content)),
            Message::Tool { tool, outcome, .. } => {
                let counts = tools.entry(tool.as_str()).or_default();
                match outcome {
                    ToolOutcome::Ok(_) => counts.0 += 1,
                    ToolOutcome::Error(_) => counts.1 += 1,
                }
            }
            _ => {}
        }
    }
    let mut text = format!("Earlier in this conversation ({} turns, not shown):", turns.len());
    if !asked.is_empty() {
        text.push_str(" the person asked ");
        text.push_str(&elide(&asked, 2, 3));
        text.push(';');
    }
    if !answers.is_empty() {
        text.push_str(" you answered ");
        text.push_str(&elide(&answers, 0, 2));
        text.push(';');
    }
    if !tools.is_empty() {
        text.push_str(" tools ran: ");
        let mut listed: Vec<String> = tools
            .iter()
            .take(10)
            .map(|(name, (ok, failed))| match (ok, failed) {
                (ok, 0) => format!("{name} ({ok} ok)"),
                (0, failed) => format!("{name} ({failed} failed)"),
                (ok, failed) => format!("{name} ({ok} ok, {failed} failed)"),
            })
            .collect();
        if tools.len() > 10 {
            listed.push(format!("{} other tools", tools.len() - 10));
        }
        text.push_str(&listed.join(", "));
        text.push(';');
    }
    if text.ends_with(';') {
        text.pop();
    }
    text.push('.');
    Some(cut(&text, MAX_LOG_SUMMARY_BYTES))
}

/// The first `head` and last `tail` items, with how many were left out between.
fn elide(items: &[String], head: usize, tail: usize) -> String {
    if items.len() <= head + tail {
        return items.join(", ");
    }
    let mut parts: Vec<String> = items[..head].to_vec();
    parts.push(format!("({} more)", items.len() - head - tail));
    parts.extend_from_slice(&items[items.len() - tail..]);
    parts.join(", ")
}

fn quote(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("\"{}\"", cut_chars(&flat, QUOTE_CHARS))
}

fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `text` cut to at most `max` bytes (on a character boundary).
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `messages` as lines of text for the model to summarize, the newest kept
/// when they exceed `limit` bytes.
fn transcript(messages: &[Message], limit: usize) -> String {
    let lines: Vec<String> = messages
        .iter()
        .filter_map(|m| {
            let line = match m {
                Message::User { content } => format!("person: {content}"),
                Message::System { content } => format!("instructions: {content}"),
                Message::Assistant {
                    content, tool_calls, ..
                } => {
                    let calls: Vec<String> = tool_calls
                        .iter()
                        .map(|c| format!("{}({})", c.name, c.arguments))
                        .collect();
                    match (content.trim().is_empty(), calls.is_empty()) {
                        (true, true) => return None,
                        (false, true) => format!("you: {content}"),
                        (true, false) => format!("you called {}", calls.join(", ")),
                        (false, false) => format!("you: {content} (calling {})", calls.join(", ")),
                    }
                }
                Message::Tool { tool, outcome, .. } => {
                    let status = if outcome.is_ok() { "ok" } else { "failed" };
                    format!("{tool} ({status}): {}", outcome.to_model_text())
                }
            };
            Some(cut_chars(&line, TRANSCRIPT_LINE_CHARS))
        })
        .collect();
    let mut kept = Vec::new();
    let mut size = 0;
    for line in lines.iter().rev() {
        if size + line.len() + 1 > limit && !kept.is_empty() {
            break;
        }
        size += line.len() + 1;
        kept.push(line.as_str());
    }
    let mut text = String::new();
    if kept.len() < lines.len() {
        let _ = writeln!(text, "({} earlier messages left out)", lines.len() - kept.len());
    }
    for line in kept.iter().rev() {
        text.push_str(line);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests;
