//! Guardrails: checks on what comes in and goes out of an agent.
//!
//! An agent's [`Guardrails`] name checks per [`GuardStage`]: the person's
//! message before the model sees it, the model's reply before the person
//! sees it, a tool call's arguments before it runs (after the person
//! approved) and its result before the model sees it. A check either passes
//! the text, redacts it (PII), or trips: the run ends with a sentence and a
//! `guardrail_tripped` event.
//!
//! The checks on text (deny patterns, PII, length) are pure functions here.
//! The runtime applies them, with the checks it owns (a JSON schema, a
//! custom check, a model classifier), *before* the text is journaled: the
//! input that reaches the core carries the redacted text and, when a check
//! tripped, the [`GuardrailTrip`] — so a replay sees the same verdict and
//! never asks a classifier again.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::ToolId;

/// Where a guardrail checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardStage {
    /// The person's message, before the model sees it.
    Input,
    /// The model's reply, before the person sees it.
    Output,
    /// A tool call's arguments, before it runs (after the person approved).
    ToolInput,
    /// A tool's result, before the model sees it.
    ToolOutput,
}

impl GuardStage {
    /// The snake_case name (as in agent files and events).
    pub fn as_str(self) -> &'static str {
        match self {
            GuardStage::Input => "input",
            GuardStage::Output => "output",
            GuardStage::ToolInput => "tool_input",
            GuardStage::ToolOutput => "tool_output",
        }
    }
}

impl fmt::Display for GuardStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An agent's guardrails, per stage (`[guardrails]` in an agent file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guardrails {
    /// Checks on the person's message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input: Vec<Guardrail>,
    /// Checks on the model's replies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<Guardrail>,
    /// Checks on a tool call's arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_input: Vec<Guardrail>,
    /// Checks on a tool's results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_output: Vec<Guardrail>,
}

impl Guardrails {
    /// Whether no stage has a check.
    pub fn is_empty(&self) -> bool {
        self.input.is_empty() && self.output.is_empty() && self.tool_input.is_empty() && self.tool_output.is_empty()
    }

    /// The checks of `stage`.
    pub fn stage(&self, stage: GuardStage) -> &[Guardrail] {
        match stage {
            GuardStage::Input => &self.input,
            GuardStage::Output => &self.output,
            GuardStage::ToolInput => &self.tool_input,
            GuardStage::ToolOutput => &self.tool_output,
        }
    }

    /// Adds a check to `stage`.
    pub fn add(&mut self, stage: GuardStage, guardrail: Guardrail) {
        match stage {
            GuardStage::Input => self.input.push(guardrail),
            GuardStage::Output => self.output.push(guardrail),
            GuardStage::ToolInput => self.tool_input.push(guardrail),
            GuardStage::ToolOutput => self.tool_output.push(guardrail),
        }
    }

    /// These checks, then `more`'s, stage by stage.
    pub fn with(&self, more: &Guardrails) -> Guardrails {
        let join = |a: &[Guardrail], b: &[Guardrail]| a.iter().chain(b).cloned().collect();
        Guardrails {
            input: join(&self.input, &more.input),
            output: join(&self.output, &more.output),
            tool_input: join(&self.tool_input, &more.tool_input),
            tool_output: join(&self.tool_output, &more.tool_output),
        }
    }

    /// Every check, with its stage, stage by stage.
    pub fn iter(&self) -> impl Iterator<Item = (GuardStage, &Guardrail)> {
        [
            GuardStage::Input,
            GuardStage::Output,
            GuardStage::ToolInput,
            GuardStage::ToolOutput,
        ]
        .into_iter()
        .flat_map(move |stage| self.stage(stage).iter().map(move |g| (stage, g)))
    }

    /// Checks that every check is well formed (its patterns compile): the
    /// first fault, in words.
    pub fn validate(&self) -> Result<(), String> {
        for (stage, guardrail) in self.iter() {
            guardrail
                .validate()
                .map_err(|e| format!("guardrail '{}' ({stage}): {e}", guardrail.name()))?;
        }
        Ok(())
    }
}

/// One check, with an optional name (the kind's name otherwise).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Guardrail {
    /// What the check is called in events and metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it checks.
    #[serde(flatten)]
    pub check: GuardCheck,
}

impl Guardrail {
    /// A check named after its kind.
    pub fn new(check: GuardCheck) -> Self {
        Self { name: None, check }
    }

    /// Names the check.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Trips on text matching any of `patterns` (regular expressions).
    pub fn deny(patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::new(GuardCheck::Deny {
            patterns: patterns.into_iter().map(Into::into).collect(),
            reason: None,
        })
    }

    /// Redacts every kind of PII.
    pub fn redact_pii() -> Self {
        Self::new(GuardCheck::Pii {
            kinds: PiiKind::ALL.to_vec(),
            action: PiiAction::Redact,
        })
    }

    /// Trips on text longer than `chars` characters.
    pub fn max_length(chars: usize) -> Self {
        Self::new(GuardCheck::MaxLength { chars })
    }

    /// The check's name: its own, or its kind's.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(self.check.kind())
    }

    fn validate(&self) -> Result<(), String> {
        match &self.check {
            GuardCheck::Deny { patterns, .. } => {
                if patterns.is_empty() {
                    return Err("a deny check needs at least one pattern".into());
                }
                for pattern in patterns {
                    Regex::new(pattern).map_err(|e| format!("the pattern '{pattern}' does not compile: {e}"))?;
                }
                Ok(())
            }
            GuardCheck::Pii { kinds, .. } if kinds.is_empty() => Err("a pii check needs at least one kind".into()),
            GuardCheck::MaxLength { chars: 0 } => Err("a max_length check needs chars above 0".into()),
            GuardCheck::Classifier { instructions, .. } if instructions.trim().is_empty() => {
                Err("a classifier needs instructions: what it must not let through".into())
            }
            GuardCheck::Custom { guard } if guard.trim().is_empty() => Err("a custom check needs a guard name".into()),
            _ => Ok(()),
        }
    }

    /// Checks `text` with a check the core can run (deny, PII, length):
    /// `None` for one the runtime runs (a schema, a custom check, a classifier).
    pub fn check_text(&self, text: &str) -> Option<TextVerdict> {
        let trip = |reason: String| Some(TextVerdict::Trip(reason));
        match &self.check {
            GuardCheck::Deny { patterns, reason } => {
                let hit = patterns.iter().any(|p| matches(p, text));
                if hit {
                    trip(
                        reason
                            .clone()
                            .unwrap_or_else(|| "it asks for something this assistant does not do".into()),
                    )
                } else {
                    Some(TextVerdict::Pass)
                }
            }
            GuardCheck::Pii { kinds, action } => {
                let found = find_pii(text, kinds);
                if found.is_empty() {
                    return Some(TextVerdict::Pass);
                }
                match action {
                    PiiAction::Block => {
                        let mut named: Vec<&str> = found.iter().map(|f| f.kind.words()).collect();
                        named.dedup();
                        trip(format!("it contains {}", join_words(&named)))
                    }
                    PiiAction::Redact => Some(TextVerdict::Redacted {
                        text: redact(text, &found),
                        kinds: found.iter().map(|f| f.kind).collect(),
                    }),
                }
            }
            GuardCheck::MaxLength { chars } => {
                let n = text.chars().count();
                if n > *chars {
                    trip(format!("it is {n} characters long, and at most {chars} are allowed"))
                } else {
                    Some(TextVerdict::Pass)
                }
            }
            GuardCheck::JsonSchema { .. } | GuardCheck::Classifier { .. } | GuardCheck::Custom { .. } => None,
        }
    }
}

/// What a check looks at and does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum GuardCheck {
    /// Trips on text matching any of the patterns (regular expressions;
    /// `(?i)` for any case).
    Deny {
        /// The patterns.
        patterns: Vec<String>,
        /// Why, in words the person reads ("it asks for a competitor's prices").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Finds emails, card numbers (with a Luhn check) and phone numbers:
    /// redacts them (the default) or trips.
    Pii {
        /// Which kinds (all by default).
        #[serde(default = "all_pii")]
        kinds: Vec<PiiKind>,
        /// Redact or block.
        #[serde(default)]
        action: PiiAction,
    },
    /// Trips on text longer than this many characters.
    MaxLength {
        /// The limit.
        chars: usize,
    },
    /// Trips unless the text (a reply, a tool's result) is JSON valid
    /// against the schema.
    JsonSchema {
        /// The JSON schema.
        schema: Value,
    },
    /// A model decides, from these instructions, whether the text may pass.
    Classifier {
        /// What the classifier must not let through, in words.
        instructions: String,
        /// The model to ask (the runtime's default otherwise).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// A check written in Rust, registered on the runtime under this name.
    Custom {
        /// The name it was registered under.
        guard: String,
    },
}

impl GuardCheck {
    /// The kind's snake_case name.
    pub fn kind(&self) -> &'static str {
        match self {
            GuardCheck::Deny { .. } => "deny",
            GuardCheck::Pii { .. } => "pii",
            GuardCheck::MaxLength { .. } => "max_length",
            GuardCheck::JsonSchema { .. } => "json_schema",
            GuardCheck::Classifier { .. } => "classifier",
            GuardCheck::Custom { .. } => "custom",
        }
    }
}

fn all_pii() -> Vec<PiiKind> {
    PiiKind::ALL.to_vec()
}

/// A kind of personal information a [`GuardCheck::Pii`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiKind {
    /// An email address.
    Email,
    /// A payment card number (13 to 19 digits passing the Luhn check).
    Card,
    /// A phone number (7 to 15 digits, international or local).
    Phone,
}

impl PiiKind {
    /// Every kind.
    pub const ALL: [PiiKind; 3] = [PiiKind::Email, PiiKind::Card, PiiKind::Phone];

    /// What replaces it in redacted text.
    pub fn placeholder(self) -> &'static str {
        match self {
            PiiKind::Email => "[email redacted]",
            PiiKind::Card => "[card number redacted]",
            PiiKind::Phone => "[phone number redacted]",
        }
    }

    fn words(self) -> &'static str {
        match self {
            PiiKind::Email => "an email address",
            PiiKind::Card => "a card number",
            PiiKind::Phone => "a phone number",
        }
    }
}

/// What a PII check does with what it finds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiAction {
    /// Replace it with a placeholder; the run goes on.
    #[default]
    Redact,
    /// Trip: the run ends.
    Block,
}

/// What a check the core runs says of a text.
#[derive(Clone, Debug, PartialEq)]
pub enum TextVerdict {
    /// Nothing to object to.
    Pass,
    /// PII was replaced: the text to use instead.
    Redacted {
        /// The redacted text.
        text: String,
        /// What was found, one entry per finding.
        kinds: Vec<PiiKind>,
    },
    /// The check trips, for this reason (a clause: "it contains a card number").
    Trip(String),
}

/// A guardrail that ended a run: which, where and why. Recorded in the
/// input that carries the checked text, so a replay sees the same verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardrailTrip {
    /// Where it checked.
    pub stage: GuardStage,
    /// The check's name.
    pub guardrail: String,
    /// Why, as a clause the person reads ("it contains a card number").
    pub reason: String,
    /// The tool whose call or result it checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolId>,
}

impl GuardrailTrip {
    /// The sentence the person reads when the run ends.
    pub fn sentence(&self) -> String {
        let tool = self
            .tool
            .as_ref()
            .map_or_else(|| "a tool".to_string(), ToString::to_string);
        match self.stage {
            GuardStage::Input => format!("I can't take that message: {}.", self.reason),
            GuardStage::Output => format!("I can't give you that answer: {}.", self.reason),
            GuardStage::ToolInput => format!("I stopped before running {tool}: {}.", self.reason),
            GuardStage::ToolOutput => format!(
                "I stopped after running {tool}: its result was held back because {}.",
                self.reason
            ),
        }
    }
}

/// One piece of personal information found in a text.
#[derive(Clone, Debug, PartialEq)]
struct Found {
    kind: PiiKind,
    start: usize,
    end: usize,
}

fn email() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}").ok())
        .as_ref()
}

/// Whether `text` matches the deny pattern `pattern` (one that does not
/// compile matches nothing; the catalog refuses it). Each pattern is
/// compiled once per process, not on every message.
fn matches(pattern: &str, text: &str) -> bool {
    static COMPILED: OnceLock<Mutex<HashMap<String, Option<Regex>>>> = OnceLock::new();
    // A clone shares the compiled program: matching runs outside the lock.
    let regex = COMPILED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(pattern.to_owned())
        .or_insert_with(|| Regex::new(pattern).ok())
        .clone();
    regex.is_some_and(|re| re.is_match(text))
}

/// Runs of digits with the punctuation phone and card numbers have (their candidates).
fn digits() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\+?\(?\d[\d ().-]{5,}\d").ok()).as_ref()
}

/// The PII of `kinds` in `text`, in order, without overlaps.
fn find_pii(text: &str, kinds: &[PiiKind]) -> Vec<Found> {
    let mut found = Vec::new();
    if let Some(email) = email().filter(|_| kinds.contains(&PiiKind::Email)) {
        found.extend(email.find_iter(text).map(|m| Found {
            kind: PiiKind::Email,
            start: m.start(),
            end: m.end(),
        }));
    }
    let cards = kinds.contains(&PiiKind::Card);
    let phones = kinds.contains(&PiiKind::Phone);
    if let Some(digits) = digits().filter(|_| cards || phones) {
        for m in digits.find_iter(text) {
            if found.iter().any(|f: &Found| f.start < m.end() && m.start() < f.end) {
                continue;
            }
            let run = m.as_str();
            let n: Vec<u32> = run.chars().filter_map(|c| c.to_digit(10)).collect();
            let kind = if cards && (13..=19).contains(&n.len()) && luhn(&n) && card_shaped(run) {
                Some(PiiKind::Card)
            } else if phones && (7..=15).contains(&n.len()) && phone_shaped(run, n.len()) {
                Some(PiiKind::Phone)
            } else {
                None
            };
            if let Some(kind) = kind {
                found.push(Found {
                    kind,
                    start: m.start(),
                    end: m.end(),
                });
            }
        }
    }
    found.sort_by_key(|f| f.start);
    found
}

/// A card number is digits, with at most single spaces or dashes between groups.
fn card_shaped(run: &str) -> bool {
    run.chars().all(|c| c.is_ascii_digit() || c == ' ' || c == '-') && !run.contains("  ") && !run.contains("--")
}

/// A phone number: international (`+`), written with separators, or ten
/// digits or more — and not a date (`2026-12-01`) or a decimal number.
fn phone_shaped(run: &str, digits: usize) -> bool {
    let groups: Vec<&str> = run
        .split(|c: char| !c.is_ascii_digit())
        .filter(|g| !g.is_empty())
        .collect();
    let date = groups.len() == 3 && groups[0].len() == 4 && groups[1].len() == 2 && groups[2].len() == 2;
    let decimal = groups.len() == 2 && run.contains('.');
    let separated = run.contains([' ', '-', '.', '(', ')']);
    (run.starts_with('+') || separated || digits >= 10) && !date && !decimal
}

/// The Luhn checksum of `digits` is valid.
fn luhn(digits: &[u32]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                let twice = d * 2;
                if twice > 9 { twice - 9 } else { twice }
            } else {
                d
            }
        })
        .sum();
    sum % 10 == 0
}

fn redact(text: &str, found: &[Found]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        if f.start < at {
            continue;
        }
        out.push_str(&text[at..f.start]);
        out.push_str(f.kind.placeholder());
        at = f.end;
    }
    out.push_str(&text[at..]);
    out
}

fn join_words(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
#[path = "guardrail_tests.rs"]
mod tests;
