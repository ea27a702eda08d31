//! The assistant's finance goal (`examples/assistant/`): a bank's customers, accounts and balances in a
//! SQLite file, tools to check an account, show balances, move money and
//! apply for a loan. The agent is `examples/assistant/agents/finance.toml`.
//!
//! The tools open the database named by `CONCIERGE_FINANCE_DB` (default
//! `finance.db` in the working directory), created and seeded with
//! fictional customers on first use. They act for the run's user (a
//! customer number, email or name), or for Jordan Avery when none is given.

pub mod store;
pub mod tools;

use std::sync::Arc;

use concierge::Toolset;

pub use store::FinanceStore;

/// The toolset's name (agents may name it in `toolsets`).
pub const TOOLSET: &str = "finance";

/// The `finance` toolset over the database the environment names.
pub fn toolset() -> Toolset {
    toolset_with(FinanceStore::from_env())
}

/// The `finance` toolset over a given database (tests, embedding).
pub fn toolset_with(store: FinanceStore) -> Toolset {
    let store = Arc::new(store);
    Toolset::new(TOOLSET)
        .tool(tools::CheckAccountValid::new(Arc::clone(&store)))
        .tool(tools::GetAccountBalances::new(Arc::clone(&store)))
        .tool(tools::MoveMoney::new(Arc::clone(&store)))
        .tool(tools::SubmitLoanApplication::new(store))
}
