//! How a run is set up: its planner and its policy, decided from data before
//! the core steps the run's first input (and recorded in that input).

use std::collections::HashMap;

use concierge_core::{AgentId, PlannerMode, RunPolicy, StartRun};

use super::EngineOptions;

/// Per agent, the planner a run uses and the policy it runs under. Pure data
/// computed by the runtime (from the catalog, the configured models and the
/// policy overrides); an engine applies it to a [`StartRun`] once it knows
/// which agent takes the run (the session's current one, unless the start
/// names another). What it decides is recorded in the journaled input, so a
/// replay never consults it again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSetup {
    planners: HashMap<AgentId, PlannerMode>,
    policies: HashMap<AgentId, RunPolicy>,
    first_agent: Option<AgentId>,
    engine_options: EngineOptions,
}

impl RunSetup {
    /// No entries: every run plans with the model under its agent's own policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs of `agent` plan with `planner`.
    pub fn planner(mut self, agent: impl Into<AgentId>, planner: PlannerMode) -> Self {
        self.planners.insert(agent.into(), planner);
        self
    }

    /// Every agent this setup has an entry for plans with `planner`.
    pub fn every_planner(mut self, planner: PlannerMode) -> Self {
        for mode in self.planners.values_mut() {
            *mode = planner;
        }
        self
    }

    /// Runs of `agent` use `policy` instead of the agent's own.
    pub fn policy(mut self, agent: impl Into<AgentId>, policy: RunPolicy) -> Self {
        self.policies.insert(agent.into(), policy);
        self
    }

    /// A new session whose first run names no agent starts with `agent`
    /// (the hub, in multi mode).
    pub fn first_agent(mut self, agent: Option<AgentId>) -> Self {
        self.first_agent = agent;
        self
    }

    /// The agent a new session starts with when its first run names none.
    pub fn first_agent_of(&self) -> Option<&AgentId> {
        self.first_agent.as_ref()
    }

    /// The caller's options for the engine
    /// ([`RunOptions::engine_option`](crate::RunOptions::engine_option)).
    pub fn engine_options(mut self, options: EngineOptions) -> Self {
        self.engine_options = options;
        self
    }

    /// The caller's engine option of type `T`, if it set one (the engine
    /// that understands `T` applies it over its own defaults).
    pub fn engine_option<T: std::any::Any>(&self) -> Option<&T> {
        self.engine_options.get::<T>()
    }

    /// Fills the start's planner and policy for the agent that takes it:
    /// `start.agent`, or `current` (the session's agent) when it names none.
    pub fn apply(&self, start: &mut StartRun, current: &AgentId) {
        let agent = start.agent.as_ref().unwrap_or(current);
        if let Some(planner) = self.planners.get(agent) {
            start.planner = *planner;
        }
        if let Some(policy) = self.policies.get(agent) {
            start.policy = Some(policy.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use concierge_core::Timestamp;

    use super::*;

    #[test]
    fn the_agent_that_takes_the_run_decides() {
        let strict = RunPolicy {
            max_iterations: 2,
            ..RunPolicy::default()
        };
        let setup = RunSetup::new()
            .planner("calc", PlannerMode::Rules)
            .policy("calc", strict.clone());
        let mut start = StartRun::new("2 + 2", PlannerMode::Model, Timestamp(0));
        setup.apply(&mut start, &AgentId::new("calc"));
        assert_eq!(start.planner, PlannerMode::Rules);
        assert_eq!(start.policy, Some(strict));

        let mut named = StartRun::new("hi", PlannerMode::Model, Timestamp(0)).agent("other");
        setup.apply(&mut named, &AgentId::new("calc"));
        assert_eq!(named.planner, PlannerMode::Model, "the named agent has no entry");
        assert_eq!(named.policy, None);
    }
}
