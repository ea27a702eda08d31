//! A tool call's way back while it runs as an activity ([`ActivityChannel`]).
//!
//! An activity cannot wait for the person mid-call, so a server's question
//! is declined and its model request refused (as `docs/temporal.md` says).
//! What the call reports is kept where Temporal keeps an activity's
//! progress: its checkpoint travels in the activity's heartbeat details (a
//! retry after a lost worker starts from it), its tokens are added to the
//! call's result, and its words are logged.

use std::sync::{Arc, Mutex, PoisonError};

use concierge::tool::{CallChannel, ChannelError};
use concierge_core::{CallReport, Elicitation, ElicitationAnswer, ModelReply, ModelRequest, Usage};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::Notify;

/// What a running call reported so far.
#[derive(Default)]
pub(crate) struct Reported {
    /// The last checkpoint (sent with every heartbeat).
    pub(crate) checkpoint: Option<Value>,
    /// Tokens spent elsewhere, in all.
    pub(crate) usage: Option<Usage>,
}

/// The channel a tool call's activity hands the tool.
#[derive(Clone, Default)]
pub(crate) struct ActivityChannel {
    pub(crate) reported: Arc<Mutex<Reported>>,
    /// Rings when a new checkpoint should be heartbeated at once.
    pub(crate) changed: Arc<Notify>,
}

impl ActivityChannel {
    /// The last checkpoint.
    pub(crate) fn checkpoint(&self) -> Option<Value> {
        self.reported
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .checkpoint
            .clone()
    }

    /// The tokens reported, in all.
    pub(crate) fn usage(&self) -> Option<Usage> {
        self.reported.lock().unwrap_or_else(PoisonError::into_inner).usage
    }
}

impl CallChannel for ActivityChannel {
    fn ask(&self, _question: Elicitation) -> BoxFuture<'static, Result<ElicitationAnswer, ChannelError>> {
        Box::pin(async { Err(ChannelError::Unsupported) })
    }

    fn sample(&self, _request: ModelRequest) -> BoxFuture<'static, Result<ModelReply, ChannelError>> {
        Box::pin(async { Err(ChannelError::Unsupported) })
    }

    fn report(&self, report: CallReport) -> BoxFuture<'static, Result<(), ChannelError>> {
        let CallReport {
            checkpoint,
            progress,
            usage,
        } = report;
        if let Some(message) = progress {
            tracing::info!(%message, "a tool call's progress");
        }
        let fresh = checkpoint.is_some();
        {
            let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(checkpoint) = checkpoint {
                reported.checkpoint = Some(checkpoint);
            }
            if let Some(usage) = usage {
                reported.usage.get_or_insert_with(Usage::default).add(usage);
            }
        }
        if fresh {
            self.changed.notify_one();
        }
        Box::pin(async { Ok(()) })
    }
}
