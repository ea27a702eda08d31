//! Words in a message: how the hub, the rules planner and choices split
//! text into lowercase words, drop the little words that say nothing, and
//! read an ordinal ("the second one", "2", "last"); and what counts as blank.

/// A JSON Schema `pattern` a text matches when it is not blank by
/// [`trim_blank`]: one character that is whitespace to none of Rust,
/// ECMAScript and Python (their `\s` differ on U+0085, U+001C to U+001F and
/// U+FEFF), so a client that checks the schema and the server agree.
pub const NOT_BLANK_PATTERN: &str = "[^\\s\\u0085\\u001c-\\u001f\\ufeff]";

/// Whether `c` counts as blank: Unicode whitespace, the information
/// separators U+001C to U+001F and the byte-order mark U+FEFF.
fn is_blank_char(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1c}'..='\u{1f}' | '\u{feff}')
}

/// `text` without the blank characters (see [`NOT_BLANK_PATTERN`]) at its
/// ends: empty for a text a person would call empty.
pub fn trim_blank(text: &str) -> &str {
    text.trim_matches(is_blank_char)
}

/// Where each word of [`tokens`] starts and ends in `text` (byte offsets).
pub(crate) fn token_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, text.len()));
    }
    spans
}

/// Lowercase words (letters and digits).
pub(crate) fn tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "i", "me", "my", "to", "for", "of", "and", "or", "is", "are", "do", "does", "can", "you",
    "please", "want", "need", "would", "like", "some", "it", "in", "on", "with", "what", "how", "be", "this", "that",
    "have",
];

/// `words` without the little words that say nothing about a goal.
pub(crate) fn content_words(words: &[String]) -> Vec<String> {
    words
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .cloned()
        .collect()
}

/// An ordinal ("the second", "2", "last") among `n` choices, as an index.
pub(crate) fn ordinal(words: &[String], n: usize) -> Option<usize> {
    const WORDS: &[&str] = &[
        "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
    ];
    if words.len() > 6 {
        return None;
    }
    for word in words {
        if let Ok(number) = word.parse::<usize>() {
            if (1..=n).contains(&number) {
                return Some(number - 1);
            }
        }
        if let Some(index) = WORDS.iter().position(|w| w == word) {
            if index < n {
                return Some(index);
            }
        }
        if (word == "last" || word == "latter") && n > 0 {
            return Some(n - 1);
        }
        if word == "former" && n > 0 {
            return Some(0);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_spans_match_tokens() {
        let text = "I'd like PTO, née Zoë!";
        let spans = token_spans(text);
        let words: Vec<String> = spans.iter().map(|&(s, e)| text[s..e].to_lowercase()).collect();
        assert_eq!(words, tokens(text));
    }

    #[test]
    fn blank_is_what_no_client_would_call_text() {
        for blank in ["", " ", "\u{85}", "\u{1c}\u{1f}", "\u{feff}\t\u{3000}"] {
            assert_eq!(trim_blank(blank), "", "{blank:?}");
        }
        assert_eq!(trim_blank("\u{85} hi\u{a0}"), "hi");
        let pattern = regex::Regex::new(NOT_BLANK_PATTERN).unwrap();
        for c in ['\u{85}', '\u{1c}', '\u{feff}', ' ', '\u{2028}'] {
            assert!(
                !pattern.is_match(&c.to_string()),
                "{c:?} matches the pattern but is blank"
            );
        }
        assert!(pattern.is_match("\u{85}a"));
    }
}
