//! Options for one run.

use std::collections::BTreeMap;

use concierge_core::{Multitask, PolicyDelta, RunId, SessionId, TurnId};
use serde_json::Value;

use crate::engine::EngineOptions;

/// How to run a turn: which session (required), and optional ids, labels,
/// metadata, blackboard context and policy tweaks.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub(crate) session_id: Option<SessionId>,
    pub(crate) run_id: Option<RunId>,
    pub(crate) turn_id: Option<TurnId>,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) metadata: BTreeMap<String, Value>,
    pub(crate) context: BTreeMap<String, Value>,
    pub(crate) policy: Option<PolicyDelta>,
    pub(crate) user: Option<String>,
    pub(crate) tenant: Option<String>,
    pub(crate) asked_at: Option<concierge_core::Timestamp>,
    pub(crate) engine: EngineOptions,
    pub(crate) multitask: Option<Multitask>,
    pub(crate) waits: bool,
}

impl RunOptions {
    /// Empty options (a session id must still be set).
    pub fn new() -> Self {
        Self::default()
    }

    /// The session to run in (required). A new id starts a new session.
    pub fn session_id(mut self, id: impl Into<SessionId>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// What the message does if a run of the session is still working:
    /// refused, queued after it, or the run cancelled first. Unset: the
    /// agent's `multitask`, else queued for a caller that waits for the
    /// answer ([`Runtime::send`](crate::Runtime::send), `run`) and refused
    /// for one that does not ([`Runtime::start`](crate::Runtime::start)).
    pub fn multitask(mut self, policy: Multitask) -> Self {
        self.multitask = Some(policy);
        self
    }

    /// The caller waits for the run's answer (follows its events to the
    /// end, say) even though it starts it with
    /// [`Runtime::start`](crate::Runtime::start): a message that finds a run
    /// in progress is then queued by default, as for
    /// [`Runtime::send`](crate::Runtime::send).
    pub fn caller_waits(mut self) -> Self {
        self.waits = true;
        self
    }

    /// The run's id (generated when absent).
    pub fn run_id(mut self, id: impl Into<RunId>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// A caller-side turn id, echoed in the run's start event.
    pub fn turn_id(mut self, id: impl Into<TurnId>) -> Self {
        self.turn_id = Some(id.into());
        self
    }

    /// Adds a label (e.g. tenant), echoed in the run's start event.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Sets all labels.
    pub fn labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = labels;
        self
    }

    /// Adds metadata, echoed in the run's start event.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Puts information on the blackboard before planning (e.g. `user_id`).
    pub fn context(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.context.insert(key.into(), value.into());
        self
    }

    /// Who is asking (a user id). Tools read it from their context, it is on
    /// the blackboard as `user_id` (so a tool that requires `user_id` gets it
    /// without the model passing it), and it is recorded with the run.
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// The tenant the caller acts for (e.g. from its API token). A new
    /// session belongs to it; a session of another tenant is not found.
    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// When the person wrote the message, if not now (a message relayed
    /// later from another channel, a test with a fixed clock): tools count
    /// "tomorrow" or "next Friday" in it from this time
    /// ([`ToolContext::asked_at`](crate::ToolContext::asked_at)).
    pub fn asked_at(mut self, at: concierge_core::Timestamp) -> Self {
        self.asked_at = Some(at);
        self
    }

    /// Tweaks the policy for this run only.
    pub fn policy(mut self, delta: PolicyDelta) -> Self {
        self.policy = Some(delta);
        self
    }

    /// An option for the engine that starts the run, applied over the
    /// engine's own defaults when the run creates the session (the Temporal
    /// engine reads its `concierge_temporal::WorkflowOptions`: task queue,
    /// memo and search attributes of the session's workflow). One value per
    /// type; an engine ignores the types it does not know. A session opened
    /// before its first message ([`Runtime::open`](crate::Runtime::open))
    /// was created with the engine's defaults.
    pub fn engine_option<T>(mut self, value: T) -> Self
    where
        T: std::any::Any + Send + Sync + Clone + PartialEq + std::fmt::Debug,
    {
        self.engine.insert(value);
        self
    }
}
