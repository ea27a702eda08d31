//! Performing the core's effects: model calls and tool calls as
//! activities, an agent call as a child session's workflow (or a signal
//! passing the person's answer on), a wake-up as a timer. Each answers with
//! the core's input, a failure included.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use concierge::engine::child_answer;
use concierge_core::{AgentId, CallId, Effect, Input, RunId, Session, SessionId, ToolError, ToolOutcome};
use temporalio_common::RetryPolicy;
use temporalio_sdk::{
    ActivityOptions, ChildWorkflowOptions, LocalActivityOptions, ParentClosePolicy, SignalWorkflowOptions,
    WorkflowContext,
};

use super::children::{child_begin, child_stopped};
use super::{SessionWorkflow, at};
use crate::activities::{ModelActivities, ModelCallInput, ToolActivities, ToolCallInput};
use crate::config::ModelCalls;
use crate::payload;
use crate::visibility::{AGENT, start_attributes};
use crate::wire::{ForwardRequest, ReportTo};

/// How long one attempt of a model call may take.
const MODEL_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// What performing an effect answers: the core's input.
pub(super) type Answer = Pin<Box<dyn Future<Output = Input>>>;

/// Retries for calls that may run again safely; one attempt for the others.
fn retries(safe: bool) -> RetryPolicy {
    let builder = RetryPolicy::builder()
        .initial_interval(Duration::from_millis(500))
        .backoff_coefficient(2.0)
        .maximum_interval(Duration::from_secs(10));
    match safe {
        true => builder.maximum_attempts(5).build(),
        false => builder.maximum_attempts(1).build(),
    }
}

/// A tool's (or an agent's) call that did not complete, as the core's input.
fn call_failed(ctx: &WorkflowContext<SessionWorkflow>, run_id: RunId, call_id: CallId, why: String) -> Input {
    Input::ToolFinished {
        run_id,
        call_id,
        outcome: ToolOutcome::Error(ToolError::failed(why)),
        duration_ms: 0,
        usage: None,
        at: at(ctx.workflow_time()),
    }
}

/// Starts performing `effect`; the future answers with the input for the core.
pub(super) fn perform(ctx: &WorkflowContext<SessionWorkflow>, effect: Effect) -> Option<Answer> {
    let c = ctx.clone();
    let (session, agent, catalog, config) = ctx.state(|w| {
        let session = w.st.id.clone().unwrap_or_else(|| SessionId::new("unknown"));
        let agent =
            w.st.session
                .as_ref()
                .map(|s| s.agent().clone())
                .unwrap_or_else(|| AgentId::new("unknown"));
        let catalog = w.catalog(w.st.session.as_ref().and_then(Session::catalog_version));
        (session, agent, catalog, w.config.clone())
    });
    match effect {
        Effect::CallModel {
            run_id,
            call,
            request,
            guardrails,
        } => {
            let bytes = payload::size_of(&request);
            if bytes > config.max_payload_bytes {
                let failed = payload::request_too_large(
                    run_id,
                    call,
                    request.agent.as_str(),
                    bytes,
                    config.max_payload_bytes,
                    at(ctx.workflow_time()),
                );
                return Some(Box::pin(async move { failed }));
            }
            // A large request stays here: the activity asks for it, so the
            // history does not carry the conversation at every call. A local
            // activity's input never reaches the history (nor could it be
            // asked for: queries wait while the local activity runs).
            let local = ctx.state(|w| w.st.model_calls) == ModelCalls::Local;
            let kept = (!local && bytes > config.inline_request_bytes).then(|| (run_id.clone(), call));
            let request = match &kept {
                Some(key) => {
                    ctx.state_mut(|w| w.st.requests.push((key.clone(), request)));
                    None
                }
                None => Some(request),
            };
            let input = ModelCallInput {
                session,
                run_id: run_id.clone(),
                call,
                request,
                after: ctx.state(|w| w.st.session.as_ref().map_or(0, Session::last_seq)),
                guardrails,
            };
            let activity_id = format!("{}/{run_id}/model-{call}", input.session);
            let models_queue = config.models_queue();
            Some(Box::pin(async move {
                let called = if local {
                    let options = LocalActivityOptions::builder()
                        .activity_id(activity_id)
                        .start_to_close_timeout(MODEL_CALL_TIMEOUT)
                        .retry_policy(retries(true))
                        .build();
                    c.execute_local_activity(ModelActivities::call_model, input, options)
                        .await
                } else {
                    let options = ActivityOptions::with_start_to_close_timeout(MODEL_CALL_TIMEOUT)
                        .task_queue(models_queue)
                        .activity_id(activity_id)
                        .heartbeat_timeout(config.model_heartbeat_timeout)
                        .retry_policy(retries(true))
                        .build();
                    c.execute_activity(ModelActivities::call_model, input, options).await
                };
                let answer = match called {
                    Ok(answer) => answer,
                    // The error as data: the run goes on (or fails) as the core decides.
                    Err(error) => Input::ModelFailed {
                        run_id,
                        call,
                        error: format!("the model call did not complete: {error}"),
                        at: at(c.workflow_time()),
                    },
                };
                if let Some(key) = kept {
                    c.state_mut(|w| w.st.requests.retain(|(k, _)| *k != key));
                }
                answer
            }))
        }
        Effect::CallTool {
            run_id,
            call,
            key,
            user,
            blackboard,
            asked_at,
            // On Temporal a call's checkpoint is its activity's heartbeat
            // details (see `channel.rs`); the session has one only where the
            // call stopped at a question.
            checkpoint,
            guardrails,
        } => {
            // Tools that change nothing, or change it once whatever the
            // number of calls, run again after a lost worker; others do not.
            let safe = catalog
                .tool(&call.name)
                .is_some_and(|spec| spec.annotations.read_only || spec.annotations.idempotent);
            // A call made again once the person answered its question is a
            // new activity, carrying the questions and answers so far.
            let asked = ctx.state(|w| {
                w.st.session
                    .as_ref()
                    .map(|s| s.asked(&call.id).to_vec())
                    .unwrap_or_default()
            });
            let tenant = ctx.state(|w| w.st.session.as_ref().and_then(|s| s.tenant()).map(str::to_owned));
            let activity_id = match asked.len() {
                0 => key.to_string(),
                n => format!("{key}/answered-{n}"),
            };
            let options = ActivityOptions::with_start_to_close_timeout(Duration::from_secs(600))
                .task_queue(config.tools_queue(&agent))
                .activity_id(activity_id)
                .heartbeat_timeout(config.tool_heartbeat_timeout)
                .retry_policy(retries(safe))
                .build();
            let (failed_run, failed_call, tool) = (run_id.clone(), call.id.clone(), call.name.clone());
            let input = ToolCallInput {
                session,
                run_id,
                agent,
                call,
                key,
                user,
                tenant,
                blackboard,
                asked_at,
                asked,
                checkpoint,
                guardrails,
            };
            let bytes = payload::size_of(&input);
            if bytes > config.max_payload_bytes {
                let why = payload::over(
                    &format!("the input of tool `{tool}` (its arguments and the blackboard)"),
                    "is",
                    bytes,
                    config.max_payload_bytes,
                );
                let failed = call_failed(ctx, failed_run, failed_call, why);
                return Some(Box::pin(async move { failed }));
            }
            Some(Box::pin(async move {
                match c.execute_activity(ToolActivities::call_tool, input, options).await {
                    Ok(answer) => answer,
                    Err(error) => call_failed(
                        &c,
                        failed_run,
                        failed_call,
                        format!("the tool {tool} did not complete: {error}"),
                    ),
                }
            }))
        }
        Effect::CallAgent(call) => {
            // The child session is a child workflow: started here for the
            // call's first attempt, passed the person's answer by signal
            // after, and reporting each stop by signal.
            let call = ctx.state(|w| w.executor.agent_call(*call));
            let report_to = ReportTo {
                workflow_id: ctx.workflow_id().to_string(),
                key: call.key.to_string(),
            };
            let child = config.workflow_id(&call.session);
            let since = at(ctx.workflow_time());
            match call.answer.clone() {
                None => {
                    let begin = ctx.state(|w| child_begin(w, &call, report_to, since));
                    // Search attributes as the parent's, when it has them.
                    let shown = ctx.search_attributes().get(&AGENT).is_some();
                    let attributes = shown
                        .then(|| start_attributes(&config, call.tenant.as_deref(), Some(&call.agent), None))
                        .flatten();
                    let options = ChildWorkflowOptions::builder()
                        .workflow_id(child)
                        .parent_close_policy(ParentClosePolicy::Abandon)
                        .maybe_search_attributes(attributes)
                        .build();
                    Some(Box::pin(async move {
                        if let Err(error) = c.start_child_workflow(SessionWorkflow::run, begin, options).await {
                            let why = format!("its session could not start: {error}");
                            return child_answer(&call, Err(&why), 0, at(c.workflow_time()));
                        }
                        child_stopped(&c, &call, since).await
                    }))
                }
                Some(forward) => {
                    let request = ForwardRequest {
                        report_to,
                        forward,
                        user: call.user.clone(),
                        tenant: call.tenant.clone(),
                    };
                    Some(Box::pin(async move {
                        let sent = c
                            .external_workflow(child, None)
                            .signal(SessionWorkflow::forward, request, SignalWorkflowOptions::default())
                            .await;
                        if let Err(error) = sent {
                            let why = format!("the answer could not be passed on: {error}");
                            return child_answer(&call, Err(&why), 0, at(c.workflow_time()));
                        }
                        child_stopped(&c, &call, since).await
                    }))
                }
            }
        }
        Effect::WakeAt { at: wake, .. } => {
            let now = at(ctx.workflow_time());
            let delay = Duration::from_millis(wake.0.saturating_sub(now.0).max(1));
            Some(Box::pin(async move {
                let _ = c.timer(delay).await;
                Input::Tick {
                    at: at(c.workflow_time()),
                }
            }))
        }
        // The call stopped at its question (see `channel.rs`): it is made
        // again, and gets the answer when it asks the same.
        Effect::AnswerElicitation { call_id, .. } => {
            let again = ctx.state(|w| {
                let session = w.st.session.as_ref()?;
                let catalog = w.catalog(session.catalog_version());
                session
                    .pending_effects(&catalog)
                    .into_iter()
                    .find(|e| matches!(e, Effect::CallTool { call, .. } if call.id == call_id))
            });
            again.and_then(|effect| perform(ctx, effect))
        }
        Effect::AwaitUser(_) | Effect::Finish(_) => None,
    }
}
