//! The assistant's hint game (`examples/assistant/`): the assistant thinks of a place, gives hints one
//! at a time, and the person guesses it. The place is chosen from the
//! session's id (no randomness: the same session always plays the same
//! game), and the game's state (hints given, guesses) is kept in SQLite, so
//! it survives a restart. The goal is `examples/assistant/agents/hint_game.toml`;
//! it finishes when the place is guessed.
//!
//! The tools open the database named by `CONCIERGE_HINT_GAME_DB` (default
//! `hint_game.db` in the working directory), created on first use.

pub mod store;
pub mod tools;

use std::sync::Arc;

use concierge::Toolset;

pub use store::GameStore;

/// The toolset's name (agents may name it in `toolsets`).
pub const TOOLSET: &str = "hint_game";

/// The `hint_game` toolset over the database the environment names.
pub fn toolset() -> Toolset {
    toolset_with(GameStore::from_env())
}

/// The `hint_game` toolset over a given database (tests, embedding).
pub fn toolset_with(store: GameStore) -> Toolset {
    let store = Arc::new(store);
    Toolset::new(TOOLSET)
        .tool(tools::GiveHint::new(Arc::clone(&store)))
        .tool(tools::GuessLocation::new(store))
}
