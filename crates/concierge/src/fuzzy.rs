//! Fuzzy entity matching: which of a few named things did the person mean
//! by "the login bug" (task #1, 'Fix login bug')?
//!
//! Scores run from 0 to 100. Matching ignores case and punctuation and works
//! on words, so a query that is part of a label ("login bug" for "Fix login
//! bug") scores high. [`classify`] sorts the candidates into three bands:
//!
//! - at or above [`Thresholds::high`], one clear winner: [`Match::Found`]
//!   (shown as `'Fix login bug' (95% match)`);
//! - otherwise, candidates at or above [`Thresholds::low`] (or several above
//!   `high` within [`Thresholds::margin`] of each other): [`Match::Choice`];
//! - nothing at or above `low`: [`Match::NotFound`] with the closest
//!   suggestions.
//!
//! ```
//! use concierge::fuzzy::{Candidate, Match, Thresholds, classify};
//!
//! let tasks = [Candidate::new("1", "Fix login bug"), Candidate::new("2", "Plan the offsite")];
//! match classify("the login bug", tasks, &Thresholds::default()) {
//!     Match::Found(found) => assert_eq!(found.to_string(), "'Fix login bug' (95% match)"),
//!     other => unreachable!("{other:?}"),
//! }
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// Something a person may mean: an id and the label they would call it by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The thing's id (returned untouched).
    pub id: String,
    /// What it is called, e.g. a task's title.
    pub label: String,
}

impl Candidate {
    /// A candidate with an id and a label.
    pub fn new(id: impl Into<String>, label: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            label: label.into(),
        }
    }
}

/// A candidate with how well it matches the query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scored {
    /// The candidate's id.
    pub id: String,
    /// The candidate's label.
    pub label: String,
    /// 0 (nothing in common) to 100 (the same words).
    pub score: u8,
}

impl fmt::Display for Scored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' ({}% match)", self.label, self.score)
    }
}

/// Where the bands of [`classify`] start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A score at or above this is a match (default 80).
    pub high: u8,
    /// A score at or above this is worth offering as a choice (default 50).
    pub low: u8,
    /// Two candidates at or above `high` closer than this are a choice, not a match (default 10).
    pub margin: u8,
    /// How many candidates a choice or a "not found" offers at most (default 3).
    pub suggestions: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            high: 80,
            low: 50,
            margin: 10,
            suggestions: 3,
        }
    }
}

/// What a query came to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Match {
    /// One candidate clearly matches.
    Found(Scored),
    /// Several candidates could be meant; best first.
    Choice {
        /// The candidates to choose from.
        candidates: Vec<Scored>,
    },
    /// Nothing is close enough; the closest candidates, best first (may be empty).
    NotFound {
        /// The closest candidates.
        suggestions: Vec<Scored>,
    },
}

/// Words that say nothing about which thing is meant.
const STOPWORDS: &[&str] = &["the", "a", "an", "my", "our", "this", "that", "task", "one"];

/// Lower case, punctuation to spaces, words split on whitespace.
fn words(text: &str) -> Vec<String> {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .to_lowercase();
    cleaned.split_whitespace().map(str::to_string).collect()
}

/// The words that carry meaning; all words if every one is a stopword.
fn content_words(text: &str) -> Vec<String> {
    let all = words(text);
    let content: Vec<String> = all
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    if content.is_empty() { all } else { content }
}

/// How alike two words are, 0.0 to 1.0 (weak resemblances count as none).
fn word_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let similarity = strsim::normalized_damerau_levenshtein(a, b);
    // A word that starts another ("cert" for "certificate", "bug" for
    // "bugs") is a strong hint.
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let prefix = if short.chars().count() >= 3 && long.starts_with(short) {
        0.85
    } else {
        0.0
    };
    let best = similarity.max(prefix);
    if best < 0.6 { 0.0 } else { best }
}

/// The share of `from`'s words found in `to`, each weighed by its best resemblance.
fn coverage(from: &[String], to: &[String]) -> f64 {
    if from.is_empty() {
        return 0.0;
    }
    let total: f64 = from
        .iter()
        .map(|w| to.iter().map(|t| word_similarity(w, t)).fold(0.0, f64::max))
        .sum();
    total / from.len() as f64
}

/// How well `label` matches `query`, 0 to 100: mostly how much of the query
/// the label covers, a little how much of the label the query covers, or the
/// resemblance of the whole strings when that is higher (typos across words).
pub fn score(query: &str, label: &str) -> u8 {
    let (q, l) = (content_words(query), content_words(label));
    if q.is_empty() || l.is_empty() {
        return 0;
    }
    if q == l {
        return 100;
    }
    let by_words = 0.85 * coverage(&q, &l) + 0.15 * coverage(&l, &q);
    let whole = strsim::normalized_damerau_levenshtein(&q.join(" "), &l.join(" "));
    let best = by_words.max(whole).clamp(0.0, 1.0);
    // Only identical word lists reach 100.
    ((best * 100.0).round() as u8).min(99)
}

/// Every candidate with its score, best first (ties keep the given order).
pub fn rank(query: &str, candidates: impl IntoIterator<Item = Candidate>) -> Vec<Scored> {
    let mut scored: Vec<Scored> = candidates
        .into_iter()
        .map(|c| Scored {
            score: score(query, &c.label),
            id: c.id,
            label: c.label,
        })
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse(s.score));
    scored
}

/// Ranks the candidates and sorts the result into a match, a choice or
/// "not found" (see the module docs).
pub fn classify(query: &str, candidates: impl IntoIterator<Item = Candidate>, thresholds: &Thresholds) -> Match {
    let ranked = rank(query, candidates);
    let Some(best) = ranked.first() else {
        return Match::NotFound {
            suggestions: Vec::new(),
        };
    };
    if best.score < thresholds.low {
        let suggestions = ranked
            .into_iter()
            .filter(|s| s.score > 0)
            .take(thresholds.suggestions)
            .collect();
        return Match::NotFound { suggestions };
    }
    if best.score >= thresholds.high {
        let rival = ranked
            .get(1)
            .is_some_and(|second| second.score >= thresholds.high && best.score - second.score < thresholds.margin);
        if !rival {
            return Match::Found(best.clone());
        }
        let floor = best.score.saturating_sub(thresholds.margin).max(thresholds.high);
        let candidates = ranked
            .into_iter()
            .filter(|s| s.score >= floor)
            .take(thresholds.suggestions.max(2))
            .collect();
        return Match::Choice { candidates };
    }
    let candidates = ranked
        .into_iter()
        .filter(|s| s.score >= thresholds.low)
        .take(thresholds.suggestions.max(1))
        .collect();
    Match::Choice { candidates }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks() -> Vec<Candidate> {
        [
            "Fix login bug",
            "Review cloud code for Yury",
            "Write release notes for 2.4",
            "Fix logout button alignment",
            "Renew the TLS certificate",
            "Plan the team offsite",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| Candidate::new((i + 1).to_string(), *t))
        .collect()
    }

    #[test]
    fn case_punctuation_and_stopwords_do_not_matter() {
        assert_eq!(score("fix LOGIN-bug!", "Fix login bug"), 100);
        assert_eq!(score("the fix login bug", "Fix login bug"), 100);
        assert_eq!(score("", "Fix login bug"), 0);
        assert_eq!(score("login", ""), 0);
    }

    #[test]
    fn part_of_a_label_scores_high_and_unrelated_words_low() {
        let part = score("login bug", "Fix login bug");
        assert!(part >= 90, "{part}");
        let typo = score("loign bug", "Fix login bug");
        assert!(typo >= 70, "{typo}");
        let unrelated = score("login bug", "Plan the team offsite");
        assert!(unrelated < 30, "{unrelated}");
    }

    #[test]
    fn above_the_high_threshold_one_candidate_is_a_match() {
        let found = classify("the login bug", tasks(), &Thresholds::default());
        let Match::Found(found) = found else {
            panic!("expected a match, got {found:?}");
        };
        assert_eq!(found.id, "1");
        assert_eq!(found.to_string(), format!("'Fix login bug' ({}% match)", found.score));
        let cert = classify("tls cert", tasks(), &Thresholds::default());
        assert!(matches!(&cert, Match::Found(s) if s.id == "5"), "{cert:?}");
    }

    #[test]
    fn between_the_thresholds_it_is_a_choice() {
        // "fix" is shared by two titles; neither is clearly meant.
        let choice = classify("fix the button bug", tasks(), &Thresholds::default());
        let Match::Choice { candidates } = choice else {
            panic!("expected a choice, got {choice:?}");
        };
        let ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
        assert!(ids.contains(&"1") && ids.contains(&"4"), "{candidates:?}");
        assert!(candidates.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(candidates.iter().all(|c| c.score >= 50 && c.score < 100));
    }

    #[test]
    fn two_close_strong_candidates_are_a_choice() {
        let both = vec![
            Candidate::new("a", "Fix login bug"),
            Candidate::new("b", "Fix login bugs"),
        ];
        let choice = classify("login bug", both, &Thresholds::default());
        assert!(
            matches!(&choice, Match::Choice { candidates } if candidates.len() == 2),
            "{choice:?}"
        );
    }

    #[test]
    fn below_the_low_threshold_it_is_not_found_with_suggestions() {
        let none = classify("quarterly taxes", tasks(), &Thresholds::default());
        let Match::NotFound { suggestions } = none else {
            panic!("expected not found, got {none:?}");
        };
        assert!(suggestions.len() <= 3);
        let some = classify(
            "review the code",
            tasks(),
            &Thresholds {
                high: 99,
                low: 95,
                ..Thresholds::default()
            },
        );
        let Match::NotFound { suggestions } = some else {
            panic!("expected not found, got {some:?}");
        };
        assert_eq!(suggestions[0].id, "2", "{suggestions:?}");
        assert_eq!(
            classify("anything", Vec::new(), &Thresholds::default()),
            Match::NotFound {
                suggestions: Vec::new()
            }
        );
    }

    #[test]
    fn rank_sorts_best_first() {
        let ranked = rank("release notes", tasks());
        assert_eq!(ranked[0].id, "3");
        assert!(ranked.windows(2).all(|w| w[0].score >= w[1].score));
        assert_eq!(ranked.len(), 6);
    }
}
