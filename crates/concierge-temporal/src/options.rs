//! [`WorkflowOptions`]: a caller's Temporal options for the run that
//! creates a session's workflow.

use std::collections::BTreeMap;

use serde_json::Value;
use temporalio_common::search_attributes::{SearchAttributeUpdate, SearchAttributes};

/// Temporal options for the workflow of a new session, applied last (over
/// concierge's own): the task queue the session's workflow runs on, extra
/// memo fields and extra search attributes. Pass them with the run that
/// creates the session:
///
/// ```
/// use concierge::RunOptions;
/// use concierge_temporal::{SearchAttributeKey, WorkflowOptions};
///
/// const REGION: SearchAttributeKey<String> = SearchAttributeKey::keyword("Region");
/// let options = RunOptions::new().session_id("s1").tenant("acme").engine_option(
///     WorkflowOptions::new()
///         .task_queue("acme-sessions")
///         .memo("ticket", "T-42")
///         .search_attribute(REGION.value_set("eu".into())),
/// );
/// ```
///
/// A run of a session whose workflow exists already (an earlier run, or
/// [`Runtime::open`](concierge::Runtime::open)) ignores them (a
/// workflow keeps its queue; continuing as new keeps its memo and search
/// attributes). Some worker must poll a queue named here
/// ([`Workers::sessions_on`](crate::Workers::sessions_on)), and every
/// search attribute named must be registered in the namespace. The engine's
/// defaults: queue `<prefix>-sessions`; search attributes `ConciergeTenant`
/// (when the session has a tenant) and `ConciergeAgent`; memo `agent`,
/// `tenant` and `labels` (the first run's).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkflowOptions {
    pub(crate) task_queue: Option<String>,
    pub(crate) memo: BTreeMap<String, Value>,
    pub(crate) search_attributes: SearchAttributes,
}

impl WorkflowOptions {
    /// No options: the engine's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs the session's workflow on `queue` instead of `<prefix>-sessions`.
    pub fn task_queue(mut self, queue: impl Into<String>) -> Self {
        self.task_queue = Some(queue.into());
        self
    }

    /// Adds a memo field (replacing concierge's field of that name, if any).
    pub fn memo(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.memo.insert(key.into(), value.into());
        self
    }

    /// Sets a search attribute (replacing concierge's value of that name,
    /// if any), made with a [`SearchAttributeKey`](crate::SearchAttributeKey).
    pub fn search_attribute(mut self, update: SearchAttributeUpdate) -> Self {
        self.search_attributes.apply(update);
        self
    }

    /// Whether a task queue, a memo field or a search attribute is set.
    pub fn is_empty(&self) -> bool {
        self.task_queue.is_none() && self.memo.is_empty() && self.search_attributes.is_empty()
    }
}
