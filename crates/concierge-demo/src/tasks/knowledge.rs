//! The QA agent's knowledge: a Markdown file of `## question` sections,
//! searched with the fuzzy matcher.

use std::path::{Path, PathBuf};

use concierge::fuzzy;
use serde::Serialize;

/// The environment variable naming the knowledge file.
pub const KNOWLEDGE_ENV: &str = "CONCIERGE_TASKS_KNOWLEDGE";
/// The knowledge file when neither [`KNOWLEDGE_ENV`] nor a `[paths]` table
/// (`tasks_knowledge`) names one (in the working directory, or the directory
/// of the CLI's database: see `DemoPaths`).
pub const DEFAULT_KNOWLEDGE: &str = "knowledge.md";

/// The lowest score at which a section answers a question.
const ANSWER_SCORE: u8 = 60;

/// Words of a question that say nothing about its topic.
const QUESTION_WORDS: &[&str] = &[
    "how",
    "do",
    "i",
    "can",
    "could",
    "what",
    "is",
    "are",
    "does",
    "to",
    "you",
    "me",
    "a",
    "an",
    "the",
    "my",
    "with",
    "in",
    "of",
    "it",
    "should",
    "please",
    "tell",
    "about",
    "there",
    "way",
    "for",
    "something",
    "anything",
    "thing",
    "things",
];

/// Why the knowledge file could not answer.
#[derive(Debug, thiserror::Error)]
#[error(
    "The help file {path} could not be read ({message}). Name it in the agent file's [paths] table (tasks_knowledge = \"knowledge.md\", relative to that file), or set {KNOWLEDGE_ENV} to the file."
)]
pub struct KnowledgeError {
    /// The path of the help file.
    pub path: String,
    /// What went wrong.
    pub message: String,
}

/// One section of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The `##` heading, e.g. "How do I create a task?".
    pub heading: String,
    /// The text under it.
    pub body: String,
}

/// The answer to a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KnowledgeAnswer {
    /// Whether a section answered it.
    pub found: bool,
    /// The section's heading.
    pub topic: Option<String>,
    /// How well it matched (0–100).
    pub score: u8,
    /// The headings of the next-best sections.
    pub related: Vec<String>,
    /// The answer for people (the section's text, or what the file covers).
    pub message: String,
}

/// A knowledge file, read at each question (edits show up at once).
#[derive(Clone, Debug)]
pub struct Knowledge {
    path: PathBuf,
}

impl Knowledge {
    /// The file at `path`.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file named by `CONCIERGE_TASKS_KNOWLEDGE`, else `knowledge.md` in the working directory.
    pub fn from_env() -> Self {
        Self::open(crate::domain_db::path_from_env(KNOWLEDGE_ENV, DEFAULT_KNOWLEDGE))
    }

    /// The path of the help file the sections came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's sections.
    pub fn sections(&self) -> Result<Vec<Section>, KnowledgeError> {
        let text = std::fs::read_to_string(&self.path).map_err(|e| KnowledgeError {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(parse_sections(&text))
    }

    /// The section that best answers `question`, or what the file covers.
    pub fn answer(&self, question: &str) -> Result<KnowledgeAnswer, KnowledgeError> {
        Ok(answer_from(&self.sections()?, question))
    }
}

/// Splits Markdown into `##` sections (text before the first is ignored).
pub fn parse_sections(text: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            sections.push(Section {
                heading: heading.trim().to_string(),
                body: String::new(),
            });
        } else if let Some(section) = sections.last_mut() {
            section.body.push_str(line);
            section.body.push('\n');
        }
    }
    for section in &mut sections {
        section.body = reflow(&section.body);
    }
    sections
}

/// Joins the lines of each paragraph with spaces (Markdown wraps lines; a
/// reply should not), paragraphs separated by a blank line.
fn reflow(text: &str) -> String {
    text.split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn topic_words(question: &str) -> String {
    question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !QUESTION_WORDS.contains(&w.to_lowercase().as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Scores every section against the question's topic words (heading and
/// text together, the heading breaking ties) and answers with the best.
pub fn answer_from(sections: &[Section], question: &str) -> KnowledgeAnswer {
    let topic = topic_words(question);
    let mut scored: Vec<(u8, u8, &Section)> = sections
        .iter()
        .map(|s| {
            let all = fuzzy::score(&topic, &format!("{} {}", s.heading, s.body));
            let heading = fuzzy::score(&topic, &s.heading);
            (all.max(heading), heading, s)
        })
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse((s.0, s.1)));
    let topics = || {
        sections
            .iter()
            .map(|s| format!("- {}", s.heading))
            .collect::<Vec<_>>()
            .join("\n")
    };
    match scored.first() {
        Some((score, _, best)) if !topic.is_empty() && *score >= ANSWER_SCORE => {
            let related: Vec<String> = scored
                .iter()
                .skip(1)
                .filter(|(s, _, _)| *s >= ANSWER_SCORE)
                .take(2)
                .map(|(_, _, s)| s.heading.clone())
                .collect();
            KnowledgeAnswer {
                found: true,
                topic: Some(best.heading.clone()),
                score: *score,
                related,
                message: best.body.clone(),
            }
        }
        _ => KnowledgeAnswer {
            found: false,
            topic: None,
            score: scored.first().map_or(0, |s| s.0),
            related: Vec::new(),
            message: format!("I have no help on that yet. I can explain:\n{}", topics()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# Help\nintro\n## How do I create a task?\nSay \"create a task to ...\".\n\n\
                        ## How do I mark a task as done?\nSay \"mark the login bug\nas done\".\n\
                        ## What makes a task stale?\nNo change in 7 days.\n";

    #[test]
    fn sections_split_on_level_two_headings() {
        let sections = parse_sections(TEXT);
        assert_eq!(sections.len(), 3);
        assert_eq!(sections[0].heading, "How do I create a task?");
        assert_eq!(sections[0].body, "Say \"create a task to ...\".");
        assert_eq!(
            sections[1].body, "Say \"mark the login bug as done\".",
            "wrapped lines are joined"
        );
    }

    #[test]
    fn questions_find_their_section_and_others_list_the_topics() {
        let sections = parse_sections(TEXT);
        let done = answer_from(&sections, "how can I mark something done?");
        assert!(done.found, "{done:?}");
        assert_eq!(done.topic.as_deref(), Some("How do I mark a task as done?"));
        let stale = answer_from(&sections, "what is a stale task");
        assert_eq!(stale.topic.as_deref(), Some("What makes a task stale?"));
        let none = answer_from(&sections, "how do I bake bread?");
        assert!(!none.found);
        assert!(none.message.contains("- How do I create a task?"), "{}", none.message);
    }
}
