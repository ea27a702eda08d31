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
use std::sync::{Arc, Mutex, PoisonError};

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

/// How many of the latest turns an agent sends in full unless its
/// `[history]` says otherwise ([`HistoryPolicy::default`]).
pub const DEFAULT_LAST_TURNS: usize = 10;

/// Per agent, how much of the conversation a model request carries.
///
/// By default the last [`DEFAULT_LAST_TURNS`] turns are sent in full and the
/// older ones as a summary written from the log, so a request stops growing
/// with the conversation (what it costs to build and what the model reads).
/// `last_turns = 0` with no `max_request_bytes` sends every message
/// ([`HistoryPolicy::everything`]). In an agent file:
///
/// ```toml
/// [history]
/// last_turns = 20
/// max_request_bytes = 200000
/// summary = "model"   # or "log" (the default), or "off"
/// ```
///
/// A field left out of a `[history]` table takes its default value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryPolicy {
    /// How many of the latest turns are sent in full (every turn when 0 or
    /// unset).
    pub last_turns: Option<usize>,
    /// The most bytes a serialized model request may take; older turns go
    /// first. The latest turn is always sent, even when it alone is larger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_request_bytes: Option<usize>,
    /// How the turns left out are summarized.
    #[serde(skip_serializing_if = "is_default_mode")]
    pub summary: SummaryMode,
}

impl Default for HistoryPolicy {
    /// The last [`DEFAULT_LAST_TURNS`] turns in full, the rest summarized from the log.
    fn default() -> Self {
        Self {
            last_turns: Some(DEFAULT_LAST_TURNS),
            max_request_bytes: None,
            summary: SummaryMode::default(),
        }
    }
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
    /// A policy that sends every message, however long the conversation.
    pub fn everything() -> Self {
        Self {
            last_turns: None,
            max_request_bytes: None,
            summary: SummaryMode::default(),
        }
    }

    /// Whether this is the default policy (an agent file without `[history]`).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The number of latest turns sent in full, if bounded.
    fn turn_bound(&self) -> Option<usize> {
        self.last_turns.filter(|&n| n > 0)
    }

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

    /// Whether the model is ever asked for the running summary (the model
    /// mode, with the policy on).
    pub fn asks_model_for_summary(&self) -> bool {
        !self.is_off() && self.summary == SummaryMode::Model
    }

    /// Whether the policy leaves the history alone (every message is sent).
    pub fn is_off(&self) -> bool {
        self.turn_bound().is_none() && self.max_request_bytes.is_none()
    }

    /// The first turn sent, by turn count and size alone (no model summary
    /// considered); `fixed` is the request's size without messages. Only the
    /// turns that may be sent are measured, from the newest back.
    fn base_start(&self, sizes: &mut TurnSizes<'_>, fixed: usize) -> usize {
        let total = sizes.len();
        let start = self.turn_bound().map_or(0, |n| total.saturating_sub(n));
        let Some(max) = self.max_request_bytes.filter(|_| total > 0) else {
            return start;
        };
        let reserve = match self.summary {
            SummaryMode::Off => 0,
            SummaryMode::Log => MAX_LOG_SUMMARY_BYTES + 256,
            SummaryMode::Model => SUMMARY_RESERVE,
        };
        // The latest turn is always sent; older ones while they fit.
        let mut first = total - 1;
        let mut tail = sizes.of(first);
        while first > start && fixed + reserve + tail + sizes.of(first - 1) <= max {
            first -= 1;
            tail += sizes.of(first);
        }
        first
    }

    /// How many turns the window moves before the model is asked for a new summary.
    fn batch(&self, total: usize, base: usize) -> usize {
        let kept = self.turn_bound().unwrap_or(total - base);
        (kept / 2).max(1)
    }

    /// The messages a request carries of `history`, given the request's size
    /// without messages (`fixed`) and the model's running summary, if any.
    pub fn window(&self, history: &[Message], running: Option<&RunningSummary>, fixed: usize) -> Window {
        self.window_in(history, &turns(history), running, fixed)
    }

    /// [`HistoryPolicy::window`] of a history whose `turns` are known
    /// ([`TurnIndex::ranges`]), so the history is not read to find them.
    pub fn window_in(
        &self,
        history: &[Message],
        turns: &[Range<usize>],
        running: Option<&RunningSummary>,
        fixed: usize,
    ) -> Window {
        self.window_with(history, turns, running, fixed, |of| log_summary(history, &turns[of]))
    }

    /// [`HistoryPolicy::window`] of a history `index` keeps up with: its
    /// turns are not searched for, and the summary of the turns left out is
    /// written once for all the requests that leave out the same turns.
    pub fn window_indexed(
        &self,
        history: &[Message],
        index: &TurnIndex,
        running: Option<&RunningSummary>,
        fixed: usize,
    ) -> Window {
        let turns = index.ranges();
        self.window_with(history, turns, running, fixed, |of| index.log_summary(history, of))
    }

    /// The window, with `summarize` writing the log's summary of a range of turns.
    fn window_with(
        &self,
        history: &[Message],
        turns: &[Range<usize>],
        running: Option<&RunningSummary>,
        fixed: usize,
        summarize: impl Fn(Range<usize>) -> Option<String>,
    ) -> Window {
        if self.is_off() {
            return Window {
                messages: history.to_vec(),
                left_out: 0,
            };
        }
        let mut sizes = TurnSizes::new(history, turns);
        let total = turns.len();
        let base = self.base_start(&mut sizes, fixed);
        // The model's summary counts only under the model mode, and only
        // while it covers no turn the window still sends.
        let running = running.filter(|s| self.summary == SummaryMode::Model && s.turns <= base);
        let covered = running.map_or(0, |s| s.turns);
        // A fresh model summary: the window reaches back to it, so no turn
        // is summarized from the log meanwhile (the window is then up to
        // half as long again as `last_turns`).
        let mut fits = |start: usize| {
            self.max_request_bytes
                .is_none_or(|max| fixed + SUMMARY_RESERVE + sizes.tail(start) <= max)
        };
        let start = if running.is_some() && base - covered < self.batch(total, base) && fits(covered) {
            covered
        } else {
            base
        };
        let mut messages = Vec::new();
        let summary = match self.summary {
            SummaryMode::Off => None,
            SummaryMode::Log => summarize(0..start),
            SummaryMode::Model => {
                let from_log = summarize(covered..start);
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
        self.summary_due_in(history, &turns(history), running, fixed)
    }

    /// [`HistoryPolicy::summary_due`] of a history whose `turns` are known.
    pub fn summary_due_in(
        &self,
        history: &[Message],
        turns: &[Range<usize>],
        running: Option<&RunningSummary>,
        fixed: usize,
    ) -> Option<usize> {
        if !self.asks_model_for_summary() {
            return None;
        }
        let base = self.base_start(&mut TurnSizes::new(history, turns), fixed);
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
    TurnIndex::of(history).ranges
}

/// Where each turn of a growing history begins, kept as messages are
/// appended, so that a window finds its turns without reading the whole
/// history again; and the last summary from the log a window asked for. A
/// cache: never serialized, and equal to any other.
#[derive(Debug, Default)]
pub struct TurnIndex {
    ranges: Vec<Range<usize>>,
    seen: usize,
    summary: Mutex<Option<LogSummary>>,
}

/// A summary from the log of a range of turns, kept while the window leaves
/// out the same turns (a turn's requests all do, until the next question).
#[derive(Clone, Debug)]
struct LogSummary {
    turns: Range<usize>,
    /// Where the last turn summarized ends in the history.
    end: usize,
    text: Option<String>,
}

impl Clone for TurnIndex {
    fn clone(&self) -> Self {
        Self {
            ranges: self.ranges.clone(),
            seen: self.seen,
            summary: Mutex::new(self.cached_summary().clone()),
        }
    }
}

impl TurnIndex {
    /// The index of `history`.
    pub fn of(history: &[Message]) -> Self {
        let mut index = Self::default();
        index.catch_up(history);
        index
    }

    /// Takes in the messages appended to `history` since the last call
    /// (all of them again if it is shorter than it was).
    pub fn catch_up(&mut self, history: &[Message]) {
        if self.seen > history.len() {
            *self = Self::default();
        }
        for (i, message) in history.iter().enumerate().skip(self.seen) {
            match self.ranges.last_mut() {
                Some(last) if !matches!(message, Message::User { .. }) => last.end = i + 1,
                _ => self.ranges.push(i..i + 1),
            }
        }
        self.seen = history.len();
    }

    /// Whether it indexes `history` as it is now.
    pub fn covers(&self, history: &[Message]) -> bool {
        self.seen == history.len()
    }

    /// The turns: ranges of the history, each from a message of the
    /// person's (or the first message) to the next.
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// [`log_summary`] of the turns `of` of `history` (which this index
    /// covers), written again only when they are not the turns last asked
    /// for. `None` for turns it does not have.
    pub fn log_summary(&self, history: &[Message], of: Range<usize>) -> Option<String> {
        let turns = self.ranges.get(of.clone())?;
        let end = turns.last().map_or(0, |t| t.end);
        if end > history.len() {
            return None;
        }
        let mut cached = self.cached_summary();
        if let Some(hit) = cached.as_ref().filter(|c| c.turns == of && c.end == end) {
            return hit.text.clone();
        }
        let text = log_summary(history, turns);
        *cached = Some(LogSummary {
            turns: of,
            end,
            text: text.clone(),
        });
        text
    }

    fn cached_summary(&self) -> std::sync::MutexGuard<'_, Option<LogSummary>> {
        self.summary.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl PartialEq for TurnIndex {
    /// A cache of what the history says: it never makes two sessions differ.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The serialized size of `messages`, with a separator each.
pub fn bytes_of(messages: &[Message]) -> usize {
    messages.iter().map(|m| json_size(m).unwrap_or(0) + 1).sum()
}

/// The size of `value` serialized as JSON, counted without writing it out.
pub fn json_size<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<usize> {
    let mut count = ByteCount(0);
    serde_json::to_writer(&mut count, value)?;
    Ok(count.0)
}

/// Counts the bytes written to it (a size without the buffer).
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The serialized sizes of a history's turns, each measured when first
/// asked for: a window measures the turns it may send, not the whole history.
struct TurnSizes<'a> {
    history: &'a [Message],
    turns: &'a [Range<usize>],
    sizes: Vec<Option<usize>>,
}

impl<'a> TurnSizes<'a> {
    fn new(history: &'a [Message], turns: &'a [Range<usize>]) -> Self {
        Self {
            history,
            turns,
            sizes: vec![None; turns.len()],
        }
    }

    fn len(&self) -> usize {
        self.turns.len()
    }

    /// The size of turn `i`, in bytes.
    fn of(&mut self, i: usize) -> usize {
        let (history, turns) = (self.history, self.turns);
        *self.sizes[i].get_or_insert_with(|| bytes_of(&history[turns[i].clone()]))
    }

    /// The size of the turns from `start` on.
    fn tail(&mut self, start: usize) -> usize {
        (start..self.len()).map(|i| self.of(i)).sum()
    }
}

/// How many of the latest turns left out a summary from the log reads in
/// full (their questions, answers and tool runs): of older turns it counts
/// them and quotes the first questions, so it costs the same however long
/// the conversation.
pub const LOG_SUMMARY_TURNS: usize = 50;

/// A compact, bounded summary of `turns` of `history` from the log: what
/// the person asked, the last answers, the tools that ran (of the latest
/// [`LOG_SUMMARY_TURNS`] turns). `None` for no turns.
pub fn log_summary(history: &[Message], turns: &[Range<usize>]) -> Option<String> {
    let question = |turn: &Range<usize>| match &history[turn.start] {
        Message::User { content } => Some(content.as_str()),
        _ => None,
    };
    let read = &turns[turns.len().saturating_sub(LOG_SUMMARY_TURNS)..];
    let older = &turns[..turns.len() - read.len()];
    // Only the messages quoted are copied: a summary of a thousand turns
    // quotes five questions and two answers.
    let first: Vec<&str> = older.iter().filter_map(question).take(2).collect();
    let mut asked: Vec<&str> = Vec::new();
    let mut answers: Vec<&str> = Vec::new();
    let mut tools: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for message in &history[read.first()?.start..read.last()?.end] {
        match message {
            Message::User { content } => asked.push(content),
            Message::Assistant { content, .. } if !content.trim().is_empty() => answers.push(content),
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
    // Every turn begins with a question but perhaps the first (instructions
    // said before anything was asked): counted without reading the turns.
    let asked_before = older.len() - usize::from(older.first().is_some_and(|t| question(t).is_none()));
    if asked_before > 0 {
        // The first questions, then the latest turns in full.
        let mut quoted: Vec<String> = first.iter().map(|t| quote(t)).collect();
        if asked_before > first.len() {
            quoted.push(format!("({} more)", asked_before - first.len()));
        }
        text.push_str(" the person first asked ");
        text.push_str(&quoted.join(", "));
        text.push(';');
        let _ = write!(text, " in the latest {} turns", read.len());
        if !asked.is_empty() {
            text.push_str(" the person asked ");
            text.push_str(&elide(&asked, 0, 3));
        }
        text.push(';');
    } else if !asked.is_empty() {
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

/// The first `head` and last `tail` texts, quoted, with how many were left
/// out between.
fn elide(items: &[&str], head: usize, tail: usize) -> String {
    if items.len() <= head + tail {
        return items.iter().map(|t| quote(t)).collect::<Vec<_>>().join(", ");
    }
    let mut parts: Vec<String> = items[..head].iter().map(|t| quote(t)).collect();
    parts.push(format!("({} more)", items.len() - head - tail));
    parts.extend(items[items.len() - tail..].iter().map(|t| quote(t)));
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
