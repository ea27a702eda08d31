//! The CRM of the `examples/crm/` demo: contacts, companies, interactions, notes, reminders and
//! the team in a SQLite file, and the tools its router and its Interaction,
//! Reminder, Update and Query specialists use. The agents themselves are
//! files in `examples/crm/agents/`.
//!
//! The tools open the database named by `CONCIERGE_CRM_DB` (default
//! `crm.db` in the working directory; the CLI puts it next to the engine's
//! `concierge.db`, see [`crate::DemoPaths`]); it is created and seeded with
//! fictional people on first use. "My" means the run's user (`--user maya`).

pub mod find;
mod seed;
pub mod store;
pub mod tools;

use std::sync::Arc;

use concierge::Toolset;

pub use store::CrmStore;

/// The toolset's name (agents may name it in `toolsets`).
pub const TOOLSET: &str = "crm";

/// The `crm` toolset over the database the environment names.
pub fn toolset() -> Toolset {
    toolset_with(CrmStore::from_env())
}

/// The `crm` toolset over a given database (tests, embedding).
pub fn toolset_with(store: CrmStore) -> Toolset {
    let store = Arc::new(store);
    Toolset::new(TOOLSET)
        .tool(tools::SearchContacts::new(Arc::clone(&store)))
        .tool(tools::SearchCompanies::new(Arc::clone(&store)))
        .tool(tools::AddInteraction::new(Arc::clone(&store)))
        .tool(tools::AddNote::new(Arc::clone(&store)))
        .tool(tools::SetNextReminder::new(Arc::clone(&store)))
        .tool(tools::UpdateContact::new(Arc::clone(&store)))
        .tool(tools::GetDashboardStats::new(Arc::clone(&store)))
        .tool(tools::GetContactTimeline::new(Arc::clone(&store)))
        .tool(tools::GetLabels::new(Arc::clone(&store)))
        .tool(tools::CalculateDateRange::new(store))
}
