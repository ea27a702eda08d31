//! What a running call reports while it works ([`CallReport`]): where it
//! stands, so an attempt issued after a crash goes on from there instead of
//! starting again (a remote agent's task id, say); what it is doing, in
//! words, for the person; and tokens it spent elsewhere, for the run's
//! totals.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Usage;

/// A running call's report (journaled as
/// [`Input::ToolReported`](crate::Input::ToolReported)).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallReport {
    /// Where the call stands, in the tool's own terms. The last one is
    /// given to the next attempt of the call (the tool's context's
    /// `checkpoint`); a call that finishes forgets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Value>,
    /// What the call is doing, in words for the person (a `tool_progress` event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// Tokens and cost spent for the call elsewhere (a remote agent's model):
    /// they count in the run's and the session's totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl CallReport {
    /// A report of where the call stands.
    pub fn checkpoint(checkpoint: Value) -> Self {
        Self {
            checkpoint: Some(checkpoint),
            ..Self::default()
        }
    }

    /// A report of what the call is doing, in words.
    pub fn progress(message: impl Into<String>) -> Self {
        Self {
            progress: Some(message.into()),
            ..Self::default()
        }
    }

    /// A report of tokens spent elsewhere.
    pub fn usage(usage: Usage) -> Self {
        Self {
            usage: Some(usage),
            ..Self::default()
        }
    }

    /// Whether it says nothing.
    pub fn is_empty(&self) -> bool {
        self.checkpoint.is_none() && self.progress.is_none() && self.usage.is_none()
    }
}
