//! Guardrails: checks an agent's text and tool calls pass before anyone
//! sees them (`[guardrails]` in an agent file, or [`AgentSpec::guardrail`]).
//!
//! ```
//! use concierge::{AgentSpec, GuardStage, Guardrail};
//!
//! let agent = AgentSpec::new("support")
//!     .guardrail(GuardStage::Input, Guardrail::deny(["(?i)ignore (all )?previous instructions"]))
//!     .guardrail(GuardStage::Output, Guardrail::redact_pii())
//!     .guardrail(GuardStage::ToolOutput, Guardrail::max_length(20_000));
//! # let _ = agent;
//! ```
//!
//! The checks run where the text enters: the runtime checks the person's
//! message before it is journaled, the executor the model's reply and a
//! tool call's arguments and result before the input that carries them is
//! journaled — so redacted text never reaches the database, and a trip is
//! recorded with the text it stopped (a replay never asks a classifier
//! again). See docs/guardrails.md.
//!
//! [`AgentSpec::guardrail`]: concierge_core::AgentSpec::guardrail

use std::collections::HashMap;
use std::sync::Arc;

use concierge_core::{AgentId, Catalog};

pub use concierge_core::{GuardCheck, GuardStage, Guardrail, GuardrailTrip, Guardrails, PiiAction, PiiKind};

/// A check written in Rust, registered on the runtime by name
/// ([`RuntimeBuilder::guard`](crate::RuntimeBuilder::guard)) and named by
/// an agent's `{ kind = "custom", guard = "<name>" }`.
///
/// It runs where the text enters (on the engine's task, or a Temporal
/// activity): keep it quick, and leave judgements that need a model to a
/// `classifier` check.
pub trait Guard: Send + Sync + 'static {
    /// What the check says of `text` at `stage` (for a tool call's
    /// arguments or result, `text` is its JSON).
    fn check(&self, stage: GuardStage, text: &str) -> GuardDecision;
}

impl<F> Guard for F
where
    F: Fn(GuardStage, &str) -> GuardDecision + Send + Sync + 'static,
{
    fn check(&self, stage: GuardStage, text: &str) -> GuardDecision {
        self(stage, text)
    }
}

/// What a [`Guard`] decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardDecision {
    /// The text may pass.
    Pass,
    /// The text passes as this instead (redacted); for a tool call's
    /// arguments or result it must stay JSON of the same shape.
    Replace(String),
    /// The run ends, for this reason (a clause the person reads: "it
    /// names a competitor").
    Trip(String),
}

/// The custom checks a runtime knows, by name.
#[derive(Clone, Default)]
pub struct Guards {
    custom: HashMap<String, Arc<dyn Guard>>,
}

impl std::fmt::Debug for Guards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.custom.keys().collect();
        names.sort();
        f.debug_struct("Guards").field("custom", &names).finish()
    }
}

impl Guards {
    /// Registers `guard` under `name`.
    pub fn insert(&mut self, name: impl Into<String>, guard: Arc<dyn Guard>) {
        self.custom.insert(name.into(), guard);
    }

    /// The custom check named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Guard>> {
        self.custom.get(name)
    }

    /// Whether a check named `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.custom.contains_key(name)
    }
}

/// The input guardrails for a message `agent` takes: its own; when the hub
/// (or no known agent) takes it, every agent's, since the message may go to
/// any of them.
pub(crate) fn input_guardrails(catalog: &Catalog, agent: Option<&AgentId>) -> Vec<Guardrail> {
    if let Some(resolved) = agent.filter(|a| !catalog.is_hub(a)).and_then(|a| catalog.agent(a)) {
        return resolved.spec.guardrails.input.clone();
    }
    let mut all: Vec<Guardrail> = Vec::new();
    for resolved in catalog.agents() {
        for guardrail in &resolved.spec.guardrails.input {
            if !all.contains(guardrail) {
                all.push(guardrail.clone());
            }
        }
    }
    all
}
