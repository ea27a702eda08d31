//! Model calls and tool calls as Temporal activities.
//!
//! Each activity answers with the core [`Input`] that its effect waits for,
//! made by the runtime's [`Executor`] exactly as the embedded engine makes
//! it: a model's or a tool's failure is data in that input (`ModelFailed`,
//! `ToolFinished` with an error), never an activity failure, so Temporal
//! retries only what broke underneath (a lost worker, a timeout). While an
//! activity works it heartbeats, so a worker that dies is noticed within the
//! heartbeat timeout.

// The `#[activities]` macro's expansion unwraps internally and makes public
// marker items; neither is ours to change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use concierge::engine::{Executor, now};
use concierge::model::ModelContext;
use concierge::tool::ToolContext;
use concierge_core::{
    AgentId, Asked, IdempotencyKey, Input, ModelRequest, Question, RunId, SessionId, Timestamp, ToolCall,
};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

use crate::channel::{ActivityChannel, Sampler};
use crate::deltas::Deltas;
use crate::payload;

/// How often a working activity heartbeats when its timeout is not known.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);

/// A model call's input.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelCallInput {
    pub session: SessionId,
    pub run_id: RunId,
    pub call: u32,
    /// The request, when it is small enough to travel here
    /// ([`TemporalConfig::inline_request_bytes`](crate::TemporalConfig::inline_request_bytes));
    /// otherwise the activity asks the session's workflow for it, so the
    /// workflow's history does not carry the conversation at every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ModelRequest>,
    /// The session's last event when the call was made: its model deltas
    /// are numbered after it.
    #[serde(default)]
    pub after: u64,
    /// The agent's output guardrails (the reply is checked with them here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guardrails: Vec<concierge_core::Guardrail>,
}

/// A tool call's input.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolCallInput {
    pub session: SessionId,
    pub run_id: RunId,
    pub agent: AgentId,
    pub call: ToolCall,
    pub key: IdempotencyKey,
    pub user: Option<String>,
    /// The session's tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub blackboard: BTreeMap<String, Value>,
    pub asked_at: Timestamp,
    /// The questions the call asked the person in its earlier attempts, and
    /// their answers: asked again, they are answered from here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<Asked>,
    /// Where the call stood when it stopped at its last question (a retry
    /// after a lost worker starts from its heartbeat details instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Value>,
    /// The agent's tool guardrails (the arguments and result are checked here).
    #[serde(default, skip_serializing_if = "concierge_core::Guardrails::is_empty")]
    pub guardrails: concierge_core::Guardrails,
}

/// Runs `work`, heartbeating meanwhile.
async fn heartbeating<T>(ctx: &ActivityContext, work: impl std::future::Future<Output = T>) -> T {
    heartbeating_with(ctx, None, work).await
}

/// Runs `work`, heartbeating meanwhile with the checkpoint `channel` holds
/// (at once when it changes), so a retry of the activity starts from it.
async fn heartbeating_with<T>(
    ctx: &ActivityContext,
    channel: Option<&ActivityChannel>,
    work: impl std::future::Future<Output = T>,
) -> T {
    let every = ctx
        .info()
        .heartbeat_timeout
        .map_or(HEARTBEAT_EVERY, |timeout| (timeout / 3).max(Duration::from_millis(100)));
    let beats = async {
        loop {
            match channel {
                Some(channel) => {
                    tokio::select! {
                        () = tokio::time::sleep(every) => {}
                        () = channel.changed.notified() => {}
                    }
                }
                None => tokio::time::sleep(every).await,
            }
            let details = channel.and_then(ActivityChannel::checkpoint);
            if ctx.record_heartbeat(details).await.is_err() {
                tracing::debug!("a heartbeat could not be recorded");
            }
        }
    };
    tokio::select! {
        out = work => out,
        never = beats => never,
    }
}

/// Where a model call's request is read when it did not travel in the
/// activity's input: the session's workflow keeps it (the engine asks it
/// with a query).
pub(crate) trait ModelRequests: Send + Sync {
    /// The request session `session`'s workflow keeps for model call `call`
    /// of run `run_id` (`None` once it no longer waits for it).
    fn model_request<'a>(
        &'a self,
        session: &'a SessionId,
        run_id: &'a RunId,
        call: u32,
    ) -> BoxFuture<'a, concierge::Result<Option<ModelRequest>>>;
}

/// What the model calls run in a process share with its engine: where
/// their deltas go (the process's subscribers), and where a kept request
/// is read (while the engine is open).
#[derive(Clone)]
pub(crate) struct EngineLink {
    /// The deltas of the sessions followed in this process.
    pub(crate) deltas: Arc<Deltas>,
    /// The engine, as the reader of kept requests.
    pub(crate) requests: Weak<dyn ModelRequests>,
}

/// Model calls (the models queue).
pub struct ModelActivities {
    pub(crate) executor: Arc<Executor>,
    pub(crate) engine: EngineLink,
    /// The largest answer handed back to Temporal, in bytes.
    pub(crate) max_payload_bytes: usize,
}

impl ModelActivities {
    /// A context whose deltas go to this process's subscribers of the
    /// session, numbered after the call's event, when it has any.
    fn delta_context(&self, input: &ModelCallInput) -> ModelContext {
        let Some(live) = self.engine.deltas.sender(&input.session) else {
            return ModelContext::default();
        };
        ModelContext::publishing_deltas(input.session.clone(), input.run_id.clone(), input.after, move |event| {
            let _ = live.send(event);
        })
    }
}

/// A failure Temporal retries (the workflow turns the last one into the
/// core's input).
fn retryable(message: String) -> ActivityError {
    ActivityError::from(std::io::Error::other(message))
}

impl ModelActivities {
    /// The engine of this worker, while it is open.
    fn engine(&self) -> Result<Arc<dyn ModelRequests>, ActivityError> {
        self.engine
            .requests
            .upgrade()
            .ok_or_else(|| retryable("the engine of this worker is closing; another worker answers".into()))
    }

    /// The request of `input`: its own, or the one the session's workflow
    /// keeps for this call.
    async fn request(&self, input: &ModelCallInput) -> Result<ModelRequest, ActivityError> {
        if let Some(request) = &input.request {
            return Ok(request.clone());
        }
        let engine = self.engine()?;
        match engine.model_request(&input.session, &input.run_id, input.call).await {
            Ok(Some(request)) => Ok(request),
            Ok(None) => Err(ActivityError::application(
                temporalio_common::error::ApplicationFailure::non_retryable(std::io::Error::other(format!(
                    "session {} no longer waits for model call {} of run {}",
                    input.session, input.call, input.run_id
                ))),
            )),
            Err(error) => Err(retryable(format!("the model request could not be read: {error}"))),
        }
    }
}

#[activities]
impl ModelActivities {
    #[activity(name = "concierge.call_model")]
    pub async fn call_model(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ModelCallInput,
    ) -> Result<Input, ActivityError> {
        let request = self.request(&input).await?;
        let cx = self.delta_context(&input);
        let call = self.executor.call_model(
            &input.session,
            input.run_id,
            input.call,
            &request,
            &cx,
            &input.guardrails,
        );
        let (answer, _) = heartbeating(&ctx, call).await;
        let model = self
            .executor
            .models()
            .for_request(&request)
            .map_or_else(|| format!("of agent {}", request.agent), |m| format!("`{}`", m.name()));
        Ok(payload::bounded_reply(answer, self.max_payload_bytes, &model))
    }
}

/// One agent's tool calls (its tools queue).
pub struct ToolActivities {
    pub(crate) executor: Arc<Executor>,
    pub(crate) agent: AgentId,
    /// The largest result handed back to Temporal, in bytes.
    pub(crate) max_payload_bytes: usize,
}

#[activities]
impl ToolActivities {
    #[activity(name = "concierge.call_tool")]
    pub async fn call_tool(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ToolCallInput,
    ) -> Result<Input, ActivityError> {
        if input.agent != self.agent {
            let refusal = format!(
                "this worker runs the tools of agent {}, not of agent {}",
                self.agent, input.agent
            );
            return Err(ActivityError::application(
                temporalio_common::error::ApplicationFailure::non_retryable(std::io::Error::other(refusal)),
            ));
        }
        let (run_id, call_id) = (input.run_id.clone(), input.call.id.clone());
        let what = format!("the result of tool `{}`", input.call.name);
        // A retry (the worker was lost) starts from the call's last
        // checkpoint; a call made again once the person answered, from where
        // it stopped.
        let checkpoint = ctx
            .heartbeat_details()
            .deserialize::<Option<Value>>()
            .ok()
            .flatten()
            .flatten()
            .or(input.checkpoint);
        let sampler = Sampler {
            executor: self.executor.clone(),
            session: input.session.clone(),
            run_id: input.run_id.clone(),
        };
        let channel = ActivityChannel::new(input.asked, Some(sampler));
        if let Some(checkpoint) = &checkpoint {
            channel
                .reported
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .checkpoint = Some(checkpoint.clone());
        }
        let cx = ToolContext {
            asked_at: input.asked_at,
            session_id: input.session,
            run_id: input.run_id,
            call_id: input.call.id.clone(),
            agent: input.agent,
            idempotency_key: input.key,
            user: input.user,
            tenant: input.tenant,
            blackboard: Arc::new(input.blackboard),
            channel: Some(concierge::tool::Channel(Arc::new(channel.clone()))),
            checkpoint,
        };
        // The call ends at a new question: the person is asked, and the
        // call made again with the answer.
        let call = self.executor.call_tool(cx, &input.call, &input.guardrails);
        let parked = channel.parked.clone();
        let work = async move {
            tokio::select! {
                biased;
                () = parked.notified() => None,
                answer = call => Some(answer),
            }
        };
        let answer = heartbeating_with(&ctx, Some(&channel), work).await;
        if let Some(elicitation) = channel.take_parked() {
            return Ok(Input::ToolAsked {
                run_id,
                call_id,
                question: Question::Elicitation { elicitation },
                usage: channel.usage(),
                checkpoint: channel.checkpoint(),
                at: now(),
            });
        }
        let Some(mut answer) = answer else {
            return Err(retryable("the call stopped at a question it no longer asks".into()));
        };
        if let (Input::ToolFinished { usage, .. }, Some(spent)) = (&mut answer, channel.usage()) {
            usage.get_or_insert_with(concierge_core::Usage::default).add(spent);
        }
        Ok(payload::bounded_call(
            answer,
            self.max_payload_bytes,
            run_id,
            call_id,
            &what,
        ))
    }
}
