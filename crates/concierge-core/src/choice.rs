//! Structured choices (disambiguation): a tool that cannot tell
//! which record the person means answers with a question and numbered
//! options instead of a result. The run parks; the person's next message
//! ("2", "the second one", a label or part of one) is resolved here, without
//! a model, and the chosen option's id is filled into the call's arguments
//! before the call runs again.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text::{ordinal, tokens};

/// A question with numbered options, asked instead of a tool result.
///
/// ```
/// use concierge_core::Choice;
/// use serde_json::json;
///
/// let choice = Choice::new("Which John do you mean?", "contact_id")
///     .option(json!(4), "John Smith (Acme, john@acme.com)")
///     .option(json!(9), "John Park (Globex, jpark@globex.com)");
/// assert_eq!(choice.resolve("the second one"), Some(1));
/// assert_eq!(choice.resolve("john park"), Some(1));
/// assert_eq!(choice.resolve("neither"), None);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The question, e.g. "Which John do you mean?".
    pub question: String,
    /// The call argument the chosen option's id is written to (e.g. `contact_id`).
    pub argument: String,
    /// The options, in the order they are numbered (from 1).
    pub options: Vec<ChoiceOption>,
}

/// One option of a [`Choice`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChoiceOption {
    /// What is written to the call's argument when this option is chosen.
    pub id: Value,
    /// What the person reads; labels should tell the options apart
    /// ("John Smith (Acme, john@acme.com)").
    pub label: String,
}

/// The key under which a tool's JSON result carries a choice (see
/// [`Choice::to_value`]).
pub const CHOICE_KEY: &str = "$choice";

impl Choice {
    /// A question whose answer is written to the call's `argument`.
    pub fn new(question: impl Into<String>, argument: impl Into<String>) -> Self {
        Self {
            question: question.into(),
            argument: argument.into(),
            options: Vec::new(),
        }
    }

    /// Adds an option.
    pub fn option(mut self, id: impl Into<Value>, label: impl Into<String>) -> Self {
        self.options.push(ChoiceOption {
            id: id.into(),
            label: label.into(),
        });
        self
    }

    /// The choice as a tool result (`{"$choice": {...}}`): how a tool that
    /// returns JSON asks it; engines turn such a result back into a choice.
    pub fn to_value(&self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert(CHOICE_KEY.into(), serde_json::to_value(self).unwrap_or(Value::Null));
        Value::Object(map)
    }

    /// The choice a tool result carries, if it is one (see [`Choice::to_value`]).
    pub fn from_value(value: &Value) -> Option<Self> {
        let map = value.as_object()?;
        if map.len() != 1 {
            return None;
        }
        let choice: Choice = serde_json::from_value(map.get(CHOICE_KEY)?.clone()).ok()?;
        (!choice.options.is_empty()).then_some(choice)
    }

    /// The question and the numbered options, as the person reads them.
    pub fn text(&self) -> String {
        let mut text = self.question.trim().to_string();
        for (i, option) in self.options.iter().enumerate() {
            text.push_str(&format!("\n{}. {}", i + 1, option.label));
        }
        text
    }

    /// Which option `answer` picks, by number ("2", "the second one",
    /// "last"), by label, or by the words of one label only; `None` when it
    /// picks none or could mean several.
    pub fn resolve(&self, answer: &str) -> Option<usize> {
        let n = self.options.len();
        let words = tokens(answer);
        if words.is_empty() {
            return None;
        }
        if let Some(index) = ordinal(&words, n) {
            return Some(index);
        }
        let wanted = answer.trim().to_lowercase();
        if let Some(index) = self
            .options
            .iter()
            .position(|o| o.label.trim().to_lowercase() == wanted)
        {
            return Some(index);
        }
        // The options whose labels hold the most of the answer's words; one
        // clear best wins.
        let scores: Vec<usize> = self
            .options
            .iter()
            .map(|o| {
                let label = tokens(&o.label);
                words
                    .iter()
                    .filter(|w| w.len() > 1 && !FILLER.contains(&w.as_str()))
                    .filter(|w| {
                        label
                            .iter()
                            .any(|l| l == *w || (w.len() >= 4 && l.starts_with(w.as_str())))
                    })
                    .count()
            })
            .collect();
        let best = scores.iter().copied().max().unwrap_or(0);
        if best == 0 {
            return None;
        }
        let mut winners = scores.iter().enumerate().filter(|(_, s)| **s == best);
        let first = winners.next().map(|(i, _)| i);
        if winners.next().is_some() { None } else { first }
    }
}

/// Words that say nothing about which option is meant.
const FILLER: &[&str] = &[
    "the", "one", "that", "this", "i", "mean", "meant", "at", "from", "of", "with", "please", "him", "her", "them",
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn johns() -> Choice {
        Choice::new("Which John do you mean?", "contact_id")
            .option(json!(4), "John Smith (Acme, john@acme.com)")
            .option(json!(9), "John Park (Globex, jpark@globex.com)")
    }

    #[test]
    fn answers_resolve_by_number_ordinal_label_and_words() {
        let choice = johns();
        for (answer, expected) in [
            ("2", Some(1)),
            ("#1", Some(0)),
            ("the second one", Some(1)),
            ("first", Some(0)),
            ("the last one", Some(1)),
            ("John Smith (Acme, john@acme.com)", Some(0)),
            ("john park", Some(1)),
            ("the one at Globex", Some(1)),
            ("acme", Some(0)),
            ("John", None),
            ("3", None),
            ("neither of them, I meant Jon Stewart", None),
            ("", None),
        ] {
            assert_eq!(choice.resolve(answer), expected, "{answer:?}");
        }
    }

    #[test]
    fn a_choice_travels_as_a_tool_result() {
        let choice = johns();
        let value = choice.to_value();
        assert_eq!(Choice::from_value(&value), Some(choice.clone()));
        assert_eq!(Choice::from_value(&json!({"contact_id": 4})), None);
        assert_eq!(
            Choice::from_value(&json!({"$choice": {"question": "?", "argument": "a", "options": []}})),
            None
        );
        assert_eq!(
            choice.text(),
            "Which John do you mean?\n1. John Smith (Acme, john@acme.com)\n2. John Park (Globex, jpark@globex.com)"
        );
    }
}
