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
pub mod finance;
pub mod food;
pub mod hint_game;
pub mod hr;
pub mod seeded_db;
pub mod tasks;
mod toolkit;
pub mod travel;

use concierge::{AgentSpec, RuntimeBuilder, Toolset};

/// Every demo toolset: the calculator's, the task manager's, the CRM's and
/// the assistant's domains' (their agents are files in `examples/tasks/agents/`,
/// `examples/crm/agents/` and `examples/assistant/agents/`).
pub fn toolsets() -> Vec<Toolset> {
    vec![
        calculator::toolset(),
        tasks::toolset(),
        crm::toolset(),
        travel::toolset(),
        hint_game::toolset(),
        finance::toolset(),
        hr::toolset(),
        food::toolset(),
    ]
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
