//! An eval dataset: cases, each a conversation of turns and what each turn
//! is expected to do. A TOML file (`[[case]]` tables with `[[case.turn]]`)
//! or JSON Lines (one case per line).

use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A file of cases.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    /// The day the cases take for today (`YYYY-MM-DD`), unless a case says.
    #[serde(default)]
    pub today: Option<NaiveDate>,
    /// The cases.
    #[serde(default, rename = "case")]
    pub cases: Vec<Case>,
}

/// One conversation.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// What the case is called in the report.
    pub name: String,
    /// The agent that takes the conversation (the default one, the hub in
    /// multi mode, otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The day the domain data takes for today (`YYYY-MM-DD`): seeded rows
    /// and relative dates ("next Friday") read the same on any day, so a
    /// cassette recorded today replays tomorrow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub today: Option<NaiveDate>,
    /// Who is asking (what `--user` says: "my" contacts are theirs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The person's turns, in order.
    #[serde(rename = "turn")]
    pub turns: Vec<Turn>,
}

/// One message of the person, and what the assistant should do with it.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// What the person writes (an answer to a confirmation or a choice
    /// included: "yes", "2").
    pub user: String,
    /// What is expected.
    #[serde(default)]
    pub expect: Expect,
}

/// What a turn is expected to do; every field is optional.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The agent that answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// How the run stops: `completed`, `needs_input`,
    /// `awaiting_confirmation`, `awaiting_choice`, `blocked`, `failed`...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// What the assistant asks the person: `confirmation`, `choice`,
    /// `question`, or `nothing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asks: Option<Asks>,
    /// Tools called (by name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Tools called with at least these arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_args: Vec<ToolArgs>,
    /// Tools NOT called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_tools: Vec<String>,
    /// Text the reply contains (any case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reply_contains: Vec<String>,
    /// Text the reply does not contain (any case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reply_not_contains: Vec<String>,
    /// A regular expression the reply matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_matches: Option<String>,
    /// Criteria in words, for a model to judge the reply by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
}

/// What the assistant asks the person at the end of a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Asks {
    /// To approve a call.
    Confirmation,
    /// To pick an option.
    Choice,
    /// A question in words (the agent needs more to go on).
    Question,
    /// Nothing: the turn is answered.
    Nothing,
}

/// A tool called with (at least) these arguments.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolArgs {
    /// The tool.
    pub tool: String,
    /// Arguments it must have been given (others may be there too).
    pub args: Value,
}

/// A dataset that could not be read, in words.
pub fn load(path: &Path) -> Result<Vec<Case>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("the dataset {} cannot be read: {e}", path.display()))?;
    let cases = if path.extension().is_some_and(|e| e == "jsonl") {
        let mut cases = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let case: Case = serde_json::from_str(line)
                .map_err(|e| format!("{} line {}: not a case: {e}", path.display(), n + 1))?;
            cases.push(case);
        }
        cases
    } else {
        let dataset: Dataset = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut cases = dataset.cases;
        for case in &mut cases {
            case.today = case.today.or(dataset.today);
        }
        cases
    };
    if cases.is_empty() {
        return Err(format!("the dataset {} has no cases ([[case]] tables)", path.display()));
    }
    for case in &cases {
        if case.turns.is_empty() {
            return Err(format!(
                "{}: case {:?} has no turns ([[case.turn]])",
                path.display(),
                case.name
            ));
        }
        for turn in &case.turns {
            if let Some(pattern) = &turn.expect.reply_matches {
                regex::Regex::new(pattern).map_err(|e| {
                    format!(
                        "{}: case {:?}: reply_matches {pattern:?} does not compile: {e}",
                        path.display(),
                        case.name
                    )
                })?;
            }
        }
    }
    Ok(cases)
}

/// The cases of every file, each named after its file when several are given.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Case>, String> {
    let mut all = Vec::new();
    for path in paths {
        let mut cases = load(path)?;
        if paths.len() > 1 {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            for case in &mut cases {
                case.name = format!("{stem}: {}", case.name);
            }
        }
        all.extend(cases);
    }
    let mut names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("two cases are named {:?}: rename one", twice[0]));
    }
    Ok(all)
}
