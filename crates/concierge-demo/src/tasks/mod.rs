//! The task manager of the `examples/tasks/` demo: tasks in a SQLite file, tools to create, change,
//! complete, delete, list and rank them, and a help file for the QA agent.
//! The agents themselves are files in `examples/tasks/agents/`.
//!
//! The tools open the database named by `CONCIERGE_TASKS_DB` (default
//! `tasks.db` in the working directory) and the help file named by
//! `CONCIERGE_TASKS_KNOWLEDGE` (default `knowledge.md`); the database is
//! created and seeded with fictional tasks on first use. The CLI names them
//! as [`crate::DemoPaths`] says: the help file is the one
//! `examples/tasks/agents/qa.toml` names in its `[paths]` table, the
//! database lies next to `concierge.db`.

pub mod knowledge;
pub mod store;
pub mod tools;

use std::sync::Arc;

use concierge::Toolset;

pub use crate::dates;
pub use knowledge::Knowledge;
pub use store::TaskStore;

/// The toolset's name (agents may name it in `toolsets`).
pub const TOOLSET: &str = "tasks";

/// The `tasks` toolset over the database and help file the environment names.
pub fn toolset() -> Toolset {
    toolset_with(TaskStore::from_env(), Knowledge::from_env())
}

/// The `tasks` toolset over a given database and help file (tests, embedding).
pub fn toolset_with(store: TaskStore, knowledge: Knowledge) -> Toolset {
    let store = Arc::new(store);
    Toolset::new(TOOLSET)
        .tool(tools::CreateTask::new(Arc::clone(&store)))
        .tool(tools::UpdateTask::new(Arc::clone(&store)))
        .tool(tools::CompleteTask::new(Arc::clone(&store)))
        .tool(tools::DeleteTask::new(Arc::clone(&store)))
        .tool(tools::ListTasks::new(Arc::clone(&store)))
        .tool(tools::SearchTasks::new(Arc::clone(&store)))
        .tool(tools::StaleTasks::new(Arc::clone(&store)))
        .tool(tools::TaskStats::new(Arc::clone(&store)))
        .tool(tools::RecommendTask::new(store))
        .tool(tools::SearchKnowledge::new(Arc::new(knowledge)))
}
