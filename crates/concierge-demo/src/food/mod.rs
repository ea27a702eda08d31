//! The assistant's food ordering goal (`examples/assistant/`): a restaurant's menu, carts and orders in a
//! SQLite file, tools to browse the menu, add to the cart, show it and check
//! out. The agent is `examples/assistant/agents/food.toml`.
//!
//! The tools open the database named by `CONCIERGE_FOOD_DB` (default
//! `food.db` in the working directory), created and seeded with a fictional
//! menu on first use. The cart belongs to the run's user when it names one,
//! else to the session.

pub mod store;
pub mod tools;

use std::sync::Arc;

use concierge::Toolset;

pub use store::FoodStore;

/// The toolset's name (agents may name it in `toolsets`).
pub const TOOLSET: &str = "food";

/// The `food` toolset over the database the environment names.
pub fn toolset() -> Toolset {
    toolset_with(FoodStore::from_env())
}

/// The `food` toolset over a given database (tests, embedding).
pub fn toolset_with(store: FoodStore) -> Toolset {
    let store = Arc::new(store);
    Toolset::new(TOOLSET)
        .tool(tools::BrowseMenu::new(Arc::clone(&store)))
        .tool(tools::AddToCart::new(Arc::clone(&store)))
        .tool(tools::ShowCart::new(Arc::clone(&store)))
        .tool(tools::Checkout::new(store))
}
