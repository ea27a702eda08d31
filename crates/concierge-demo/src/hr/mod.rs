//! The assistant's HR goal (`examples/assistant/`): employees' paid time off and paychecks in a SQLite
//! file, tools to show the PTO balance now and on a future date, book PTO
//! and check whether a paycheck reached the bank. The agent is
//! `examples/assistant/agents/hr.toml`.
//!
//! The tools open the database named by `CONCIERGE_HR_DB` (default `hr.db`
//! in the working directory), created and seeded with fictional employees
//! on first use. They act for the run's user (an employee number, email or
//! name), or for Jordan Avery when none is given.

pub mod store;
pub mod tools;

use std::sync::Arc;

use concierge::Toolset;

pub use store::HrStore;

/// The toolset's name (agents may name it in `toolsets`).
pub const TOOLSET: &str = "hr";

/// The `hr` toolset over the database the environment names.
pub fn toolset() -> Toolset {
    toolset_with(HrStore::from_env())
}

/// The `hr` toolset over a given database (tests, embedding).
pub fn toolset_with(store: HrStore) -> Toolset {
    let store = Arc::new(store);
    Toolset::new(TOOLSET)
        .tool(tools::CurrentPto::new(Arc::clone(&store)))
        .tool(tools::FuturePtoBalance::new(Arc::clone(&store)))
        .tool(tools::BookPto::new(Arc::clone(&store)))
        .tool(tools::PaycheckDepositStatus::new(store))
}
