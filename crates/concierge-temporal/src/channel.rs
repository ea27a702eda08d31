//! A tool call's way back while it runs as an activity ([`ActivityChannel`]).
//!
//! An activity cannot wait for the person mid-call, so a call that asks
//! (an MCP server's elicitation, a remote A2A agent's question, leave to use
//! the model) stops at its question: the activity answers with the question
//! ([`Input::ToolAsked`](concierge_core::Input::ToolAsked), with the call's
//! checkpoint), the workflow asks the person, and once they answered it makes
//! the call again as a new activity that carries every question the call
//! asked and its answer ([`Asked`]). The same question asked again is
//! answered from those at once: the person answers once.
//!
//! What the call reports is kept where Temporal keeps an activity's
//! progress: its checkpoint travels in the activity's heartbeat details (a
//! retry after a lost worker starts from it), its tokens (a server's model
//! requests included) are added to the call's result, and its words are
//! logged.

use std::sync::{Arc, Mutex, PoisonError};

use concierge::engine::Executor;
use concierge::model::ModelContext;
use concierge::tool::{CallChannel, ChannelError};
use concierge_core::{
    Asked, CallReport, Elicitation, ElicitationAnswer, Input, ModelReply, ModelRequest, RunId, SessionId, Usage,
};
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
    /// How many of the questions asked before this attempt were asked again.
    next: usize,
    /// The new question the call stopped at.
    parked: Option<Elicitation>,
}

/// Where a server's model request runs: the session's executor, as the
/// call's run.
pub(crate) struct Sampler {
    pub(crate) executor: Arc<Executor>,
    pub(crate) session: SessionId,
    pub(crate) run_id: RunId,
}

/// The channel a tool call's activity hands the tool.
#[derive(Clone, Default)]
pub(crate) struct ActivityChannel {
    pub(crate) reported: Arc<Mutex<Reported>>,
    /// Rings when a new checkpoint should be heartbeated at once.
    pub(crate) changed: Arc<Notify>,
    /// Rings when the call stops at a new question.
    pub(crate) parked: Arc<Notify>,
    /// The questions the call asked in its earlier attempts, and the answers.
    asked: Arc<[Asked]>,
    /// Where a server's model request runs (none: it is refused).
    sampler: Option<Arc<Sampler>>,
}

impl ActivityChannel {
    /// A channel for an attempt of a call that asked `asked` before.
    pub(crate) fn new(asked: Vec<Asked>, sampler: Option<Sampler>) -> Self {
        Self {
            asked: asked.into(),
            sampler: sampler.map(Arc::new),
            ..Self::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reported> {
        self.reported.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The last checkpoint.
    pub(crate) fn checkpoint(&self) -> Option<Value> {
        self.lock().checkpoint.clone()
    }

    /// The tokens reported, in all.
    pub(crate) fn usage(&self) -> Option<Usage> {
        self.lock().usage
    }

    /// The new question the call stopped at, if it did.
    pub(crate) fn take_parked(&self) -> Option<Elicitation> {
        self.lock().parked.take()
    }

    fn add_usage(&self, usage: Usage) {
        self.lock().usage.get_or_insert_with(Usage::default).add(usage);
    }
}

impl CallChannel for ActivityChannel {
    fn ask(&self, question: Elicitation) -> BoxFuture<'static, Result<ElicitationAnswer, ChannelError>> {
        let answered = {
            let mut reported = self.lock();
            let earlier = Asked::again(&self.asked, reported.next, &question)
                .and_then(|(n, a)| a.answer.clone().map(|answer| (n, answer)));
            match earlier {
                Some((n, answer)) if reported.parked.is_none() => {
                    reported.next = n + 1;
                    Ok(answer)
                }
                _ => {
                    reported.parked.get_or_insert(question);
                    Err(ChannelError::Parked)
                }
            }
        };
        if answered.is_err() {
            self.parked.notify_one();
        }
        Box::pin(async move { answered })
    }

    fn sample(&self, request: ModelRequest) -> BoxFuture<'static, Result<ModelReply, ChannelError>> {
        let (sampler, channel) = (self.sampler.clone(), self.clone());
        Box::pin(async move {
            let Some(sampler) = sampler else {
                return Err(ChannelError::Unsupported);
            };
            let (input, _) = sampler
                .executor
                .call_model(
                    &sampler.session,
                    sampler.run_id.clone(),
                    0,
                    &request,
                    &ModelContext::default(),
                    &[],
                )
                .await;
            match input {
                Input::ModelReplied { reply, .. } => {
                    if let Some(usage) = reply.usage {
                        channel.add_usage(usage);
                    }
                    Ok(reply)
                }
                Input::ModelFailed { error, .. } => Err(ChannelError::Model(error)),
                _ => Err(ChannelError::Model("the model gave no reply".into())),
            }
        })
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
            let mut reported = self.lock();
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
