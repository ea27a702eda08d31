//! The seed domains as ready-made agents, for the CLI, the examples and the tests.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> concierge::Result<()> {
//! let rt = concierge_demo::install(concierge::Runtime::builder()).in_memory().build().await?;
//! let out = rt
//!     .client("calculator")?
//!     .run("calculate 5 + 3", concierge::RunOptions::new().session_id("s1"))
//!     .await?;
//! assert_eq!(out.reply.as_deref(), Some("5 + 3 = 8"));
//! # Ok(()) }
//! ```

pub mod calculator;
pub mod crm;
pub mod dates;
pub mod domain_db;
pub mod finance;
pub mod food;
pub mod hint_game;
pub mod hr;
pub mod money;
pub mod tasks;
mod toolkit;
pub mod travel;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use concierge::{AgentSpec, RuntimeBuilder, Toolset};

use crate::domain_db::{Domain, Store, noon};

/// Every demo toolset: the calculator's, the task manager's, the CRM's and
/// the assistant's domains' (their agents are files in `examples/tasks/agents/`,
/// `examples/crm/agents/` and `examples/assistant/agents/`), on the files
/// the environment names, else in the working directory
/// (`DemoPaths::default()`).
pub fn toolsets() -> Vec<Toolset> {
    toolsets_with(&DemoPaths::default())
}

/// Every demo toolset, on the files `paths` says.
pub fn toolsets_with(paths: &DemoPaths) -> Vec<Toolset> {
    fn open<D: Domain>(paths: &DemoPaths, key: &str) -> Store<D> {
        let store = Store::open(paths.file(key));
        match paths.today {
            Some(day) => store.at(noon(day)),
            None => store,
        }
    }
    vec![
        calculator::toolset(),
        tasks::toolset_with(
            open(paths, "tasks_db"),
            tasks::Knowledge::open(paths.file("tasks_knowledge")),
        ),
        crm::toolset_with(open(paths, "crm_db")),
        travel::toolset_with(open(paths, "travel_db")),
        hint_game::toolset_with(open(paths, "hint_game_db")),
        finance::toolset_with(open(paths, "finance_db")),
        hr::toolset_with(open(paths, "hr_db")),
        food::toolset_with(open(paths, "food_db")),
    ]
}

/// The files the demo toolsets use, by the name a `[paths]` table gives
/// them, with the environment variable that overrides it and the file's
/// name when neither names it.
pub const PATHS: &[(&str, &str, &str)] = &[
    ("tasks_db", tasks::store::DB_ENV, tasks::store::DEFAULT_DB),
    (
        "tasks_knowledge",
        tasks::knowledge::KNOWLEDGE_ENV,
        tasks::knowledge::DEFAULT_KNOWLEDGE,
    ),
    ("crm_db", crm::store::DB_ENV, crm::store::DEFAULT_DB),
    ("travel_db", travel::store::DB_ENV, travel::store::DEFAULT_DB),
    ("hint_game_db", hint_game::store::DB_ENV, hint_game::store::DEFAULT_DB),
    ("finance_db", finance::store::DB_ENV, finance::store::DEFAULT_DB),
    ("hr_db", hr::store::DB_ENV, hr::store::DEFAULT_DB),
    ("food_db", food::store::DB_ENV, food::store::DEFAULT_DB),
];

/// Where the demo toolsets' files are. Each file (see [`PATHS`]) is, first
/// to last: the one its environment variable names (`CONCIERGE_TASKS_DB`,
/// `CONCIERGE_TASKS_KNOWLEDGE`, ...); the one `named` gives (the `[paths]`
/// of `concierge.toml` and of agent files, already relative to the file
/// that names it: `tasks_knowledge = "../knowledge.md"` in
/// `examples/tasks/agents/qa.toml`); its usual name in `dir` (the
/// directory of the engine's database for the CLI, so each domain's
/// database lies next to `concierge.db`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DemoPaths {
    /// Where files no one names are (the working directory when empty).
    pub dir: PathBuf,
    /// Files named in `[paths]` tables, by name.
    pub named: BTreeMap<String, PathBuf>,
    /// The environment's variables ([`PATHS`]) are not read: only `named`
    /// and `dir` say where files are (an eval's sandbox).
    pub isolated: bool,
    /// The day every domain takes for today (at noon), whatever the
    /// clock says: seeded rows and relative dates ("next Friday") come out
    /// the same on any day (an eval replayed from a cassette).
    pub today: Option<NaiveDate>,
}

impl DemoPaths {
    /// Files in `dir` unless named otherwise.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            named: BTreeMap::new(),
            isolated: false,
            today: None,
        }
    }

    /// Takes `day` for today in every domain (see [`DemoPaths::today`]).
    pub fn on(mut self, day: NaiveDate) -> Self {
        self.today = Some(day);
        self
    }

    /// Reads no environment variable for files (see [`DemoPaths::isolated`]).
    pub fn isolated(mut self) -> Self {
        self.isolated = true;
        self
    }

    /// Adds files named in a `[paths]` table.
    pub fn named(mut self, paths: impl IntoIterator<Item = (String, PathBuf)>) -> Self {
        self.named.extend(paths);
        self
    }

    /// Checks that every name in `named` is one the demo toolsets read, so
    /// that a misspelt name is an error rather than a file silently unused.
    pub fn check(&self) -> Result<(), String> {
        match self
            .named
            .keys()
            .find(|name| !PATHS.iter().any(|(known, _, _)| known == name))
        {
            None => Ok(()),
            Some(unknown) => {
                let known: Vec<&str> = PATHS.iter().map(|(name, _, _)| *name).collect();
                Err(format!(
                    "[paths] names {unknown}, which no tool reads; the names are {}",
                    known.join(", ")
                ))
            }
        }
    }

    /// The file called `key` in [`PATHS`] (`dir` itself for a name not there).
    pub fn file(&self, key: &str) -> PathBuf {
        if self.isolated {
            return self.file_from(key, |_| None);
        }
        self.file_from(key, |name| std::env::var_os(name))
    }

    /// [`DemoPaths::file`] over any source of environment variables (tests).
    pub fn file_from(&self, key: &str, var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
        let Some((_, env, default)) = PATHS.iter().find(|(name, _, _)| *name == key) else {
            return self.dir.clone();
        };
        if let Some(path) = var(env).filter(|p| !p.is_empty()) {
            return PathBuf::from(path);
        }
        if let Some(path) = self.named.get(key) {
            return path.clone();
        }
        join(&self.dir, default)
    }
}

/// `name` in `dir`, or `name` alone when `dir` is empty (the working directory).
fn join(dir: &Path, name: &str) -> PathBuf {
    if dir.as_os_str().is_empty() {
        PathBuf::from(name)
    } else {
        dir.join(name)
    }
}

/// Every demo agent.
pub fn agents() -> Vec<AgentSpec> {
    vec![calculator::agent()]
}

/// Adds every demo toolset and agent to a runtime builder.
pub fn install(mut builder: RuntimeBuilder) -> RuntimeBuilder {
    for set in toolsets() {
        builder = builder.toolset(set);
    }
    builder.agents(agents())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_the_environments_then_the_named_one_then_in_the_directory() {
        let none = |_: &str| None;
        let paths =
            DemoPaths::in_dir("data").named([("tasks_knowledge".to_string(), PathBuf::from("ex/knowledge.md"))]);
        assert_eq!(
            paths.file_from("tasks_knowledge", none),
            PathBuf::from("ex/knowledge.md")
        );
        assert_eq!(paths.file_from("tasks_db", none), Path::new("data").join("tasks.db"));
        let env = |name: &str| (name == "CONCIERGE_TASKS_KNOWLEDGE").then(|| "mine.md".into());
        assert_eq!(paths.file_from("tasks_knowledge", env), PathBuf::from("mine.md"));
        assert_eq!(DemoPaths::default().file_from("hr_db", none), PathBuf::from("hr.db"));
        assert!(paths.check().is_ok());
        let typo = DemoPaths::default().named([("task_db".to_string(), PathBuf::from("x.db"))]);
        let error = typo.check().unwrap_err();
        assert!(error.contains("task_db") && error.contains("tasks_db"), "{error}");
    }
}
