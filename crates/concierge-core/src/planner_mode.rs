//! Which planner a run uses: a setting of the run, recorded in its input
//! and its `run_started` event (the planners themselves are in `planner`).

use serde::{Deserialize, Serialize};

/// Which planner a run uses (fixed when the run starts, recorded in its input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlannerMode {
    /// Ask a model.
    Model,
    /// Use the agent's rules.
    Rules,
    /// Use the custom planner registered for the agent in the catalog.
    Custom,
}
