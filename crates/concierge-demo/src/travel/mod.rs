//! The assistant's travel goals (`examples/assistant/`): what is on in a city (events), football
//! fixtures, flights and trains between cities, and invoices for a booking
//! (the event → flight → invoice and fixture → train → invoice flows). The
//! goals are files in `examples/assistant/agents/` (`travel_events.toml`,
//! `travel_fixtures.toml`).
//!
//! The tools open the database named by `CONCIERGE_TRAVEL_DB` (default
//! `travel.db` in the working directory), created on first use and seeded
//! with fictional, deterministic events, timetables, clubs and fixtures.
//! Invoices are real rows, created once per call (idempotency key).

mod seed;
pub mod store;
pub mod tools;
mod when;

use std::sync::Arc;

use concierge::Toolset;

pub use store::TravelStore;

/// The toolset's name (agents may name it in `toolsets`).
pub const TOOLSET: &str = "travel";

/// The `travel` toolset over the database the environment names.
pub fn toolset() -> Toolset {
    toolset_with(TravelStore::from_env())
}

/// The `travel` toolset over a given database (tests, embedding).
pub fn toolset_with(store: TravelStore) -> Toolset {
    let store = Arc::new(store);
    Toolset::new(TOOLSET)
        .tool(tools::FindEvents::new(Arc::clone(&store)))
        .tool(tools::SearchFlights::new(Arc::clone(&store)))
        .tool(tools::SearchTrains::new(Arc::clone(&store)))
        .tool(tools::SearchFixtures::new(Arc::clone(&store)))
        .tool(tools::CreateInvoice::new(store))
}
