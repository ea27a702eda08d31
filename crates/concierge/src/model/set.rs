//! The models a runtime can call, by reference.

use std::collections::HashMap;
use std::sync::Arc;

use concierge_core::{AgentSpec, ModelRequest};

use super::{Model, Price};

/// The models of a runtime: a default, the ones agents name, and their prices.
#[derive(Clone, Default)]
pub struct Models {
    default: Option<Arc<dyn Model>>,
    named: HashMap<String, Arc<dyn Model>>,
    prices: HashMap<String, Price>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut named: Vec<&String> = self.named.keys().collect();
        named.sort();
        f.debug_struct("Models")
            .field("default", &self.default.as_ref().map(|m| m.name()))
            .field("named", &named)
            .finish()
    }
}

impl Models {
    /// No model at all (agents run on their rules).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the default model.
    pub fn set_default(&mut self, model: Arc<dyn Model>) {
        self.default = Some(model);
    }

    /// Adds a model agents can name (`AgentSpec::model`).
    pub fn insert(&mut self, name: impl Into<String>, model: Arc<dyn Model>) {
        self.named.insert(name.into(), model);
    }

    /// Sets a model's price (by its reference, `provider:name`).
    pub fn set_price(&mut self, model: impl Into<String>, price: Price) {
        self.prices.insert(model.into(), price);
    }

    /// Whether a model by that name is configured.
    pub fn contains(&self, name: &str) -> bool {
        self.named.contains_key(name)
    }

    /// Whether a run may name the model `name`: a named one, or the default's own name.
    pub fn knows(&self, name: &str) -> bool {
        self.named.contains_key(name) || self.default.as_ref().is_some_and(|m| m.name() == name)
    }

    /// The models a run may name (see [`Models::knows`]), sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.named.keys().cloned().collect();
        names.extend(self.default.as_ref().map(|m| m.name()));
        names.sort();
        names.dedup();
        names
    }

    /// Whether a default model is configured.
    pub fn has_default(&self) -> bool {
        self.default.is_some()
    }

    /// The model for a request: the agent's named model, else the default.
    pub fn for_request(&self, request: &ModelRequest) -> Option<Arc<dyn Model>> {
        request
            .model
            .as_ref()
            .and_then(|name| self.named.get(name).cloned())
            .or_else(|| self.default.clone())
    }

    /// Whether runs of `agent` can plan with a model here.
    pub fn available_for(&self, agent: &AgentSpec) -> bool {
        self.default.is_some() || agent.model.as_ref().is_some_and(|m| self.named.contains_key(m))
    }

    /// What a call cost, if the model has a price.
    pub fn cost(&self, model: &str, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        self.prices.get(model).map(|p| p.cost(input_tokens, output_tokens))
    }
}
