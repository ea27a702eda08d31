//! Child runs: how an engine performs an agent tool's call
//! ([`Effect::CallAgent`](concierge_core::Effect::CallAgent)) with nothing but
//! its own [`Engine`] methods, so every engine runs children the same way.
//!
//! The call is idempotent, as a tool call must be when it is issued again
//! after a crash: the child session's id comes from the parent's call id, so
//! a second attempt finds the child instead of starting another. A child
//! that finished answers with its last output; one still running is waited
//! for; one that waits for the person answers with its question, and the
//! person's answer reaches it through the parent (passed on only while the
//! child still waits on that very question).

use std::time::Instant;

use concierge_core::{
    AgentCall, ForwardedAnswer, Input, PlannerMode, Question, RunOutput, RunStatus, StartRun, Timestamp, ToolError,
    ToolOutcome,
};

use super::{Engine, RunSetup, now};
use crate::error::Error;

/// Runs `call`'s child (starting it, passing on the person's answer, or
/// waiting for it) and returns the input that answers the parent's call:
/// `ToolFinished` with the child's reply (and the tokens it spent), or
/// `ToolAsked` with the question the child waits on.
pub async fn call_agent(engine: &dyn Engine, setup: &RunSetup, call: &AgentCall) -> Input {
    let started = Instant::now();
    let result = drive(engine, setup, call).await.map_err(|error| error.to_string());
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    child_answer(call, result.as_ref().map_err(String::as_str), duration_ms, now())
}

/// The input that answers the parent's `call` once its child stopped with
/// `result` (its output, or why it could not run): `ToolFinished` with the
/// child's reply and the tokens it spent, or `ToolAsked` with the question
/// the child waits on. For engines that drive children their own way (the
/// Temporal engine's child workflows).
pub fn child_answer(call: &AgentCall, result: Result<&RunOutput, &str>, duration_ms: u64, at: Timestamp) -> Input {
    let (outcome, usage) = match result {
        Ok(output) => match answer(call, output) {
            Answer::Asked(question) => {
                return Input::ToolAsked {
                    run_id: call.run_id.clone(),
                    call_id: call.call.id.clone(),
                    question,
                    usage: None,
                    checkpoint: None,
                    at,
                };
            }
            Answer::Done(outcome) => (outcome, Some(output.usage)),
        },
        Err(error) => (
            ToolOutcome::Error(ToolError::failed(format!(
                "the {} agent could not answer: {error}",
                call.agent
            ))),
            None,
        ),
    };
    Input::ToolFinished {
        run_id: call.run_id.clone(),
        call_id: call.call.id.clone(),
        outcome,
        duration_ms,
        usage,
        at,
    }
}

/// What the child's output comes to for the parent.
enum Answer {
    Done(ToolOutcome),
    Asked(Question),
}

fn answer(call: &AgentCall, output: &RunOutput) -> Answer {
    match output.status {
        RunStatus::AwaitingConfirmation => match &output.pending_confirmation {
            Some(pending) => Answer::Asked(Question::ChildConfirmation {
                pending: pending.clone(),
                session: call.session.clone(),
            }),
            None => Answer::Done(ToolOutcome::Error(ToolError::failed(format!(
                "the {} agent stopped for a confirmation it did not describe",
                call.agent
            )))),
        },
        RunStatus::AwaitingChoice => match &output.pending_choice {
            Some(pending) => Answer::Asked(Question::ChildChoice {
                pending: pending.clone(),
                session: call.session.clone(),
            }),
            None => Answer::Done(ToolOutcome::Error(ToolError::failed(format!(
                "the {} agent stopped for a choice it did not describe",
                call.agent
            )))),
        },
        // A question the child's running call asks (MCP elicitation, a
        // remote agent's) is passed up: the person answers it here.
        RunStatus::AwaitingInput => match &output.pending_elicitation {
            Some(pending) => Answer::Asked(Question::ChildElicitation {
                pending: pending.clone(),
                session: call.session.clone(),
            }),
            None => Answer::Done(ToolOutcome::Error(ToolError::failed(format!(
                "the {} agent stopped for a question it did not describe",
                call.agent
            )))),
        },
        RunStatus::Completed | RunStatus::NeedsInput => Answer::Done(ToolOutcome::Ok(serde_json::Value::String(
            output.reply.clone().unwrap_or_default(),
        ))),
        // The child's guardrail stopped the child, not the parent: its
        // model reads why, as a call that could not be made.
        RunStatus::Blocked => Answer::Done(ToolOutcome::Error(ToolError::new(
            concierge_core::ToolErrorKind::Blocked,
            format!(
                "the {} agent was stopped by a guardrail: {}",
                call.agent,
                output.reply.clone().unwrap_or_default()
            ),
        ))),
        RunStatus::Failed | RunStatus::Cancelled => {
            let why = output
                .error
                .clone()
                .unwrap_or_else(|| "it stopped without an answer".to_string());
            Answer::Done(ToolOutcome::Error(ToolError::failed(format!(
                "the {} agent could not finish: {why}",
                call.agent
            ))))
        }
    }
}

/// Where the child is, brought to its next stop.
async fn drive(engine: &dyn Engine, setup: &RunSetup, call: &AgentCall) -> crate::error::Result<RunOutput> {
    let child = call.session.clone();
    let Some(session) = engine.session(child.clone()).await? else {
        let mut start = StartRun::new(call.prompt.clone(), PlannerMode::Model, now()).agent(call.agent.clone());
        start.user = call.user.clone();
        start.tenant = call.tenant.clone();
        start.asked_at = Some(call.asked_at);
        start.parent = Some(call.parent.clone());
        let started = engine.start(child, start, setup.clone()).await?;
        return started.stop.output().await;
    };
    // Only the child this very call started answers it: a session by the
    // child's name that another call (or anyone else) made is not it.
    let linked = session
        .parent()
        .is_some_and(|p| p.session == call.parent.session && p.call_id == call.parent.call_id)
        && session.tenant() == call.tenant.as_deref();
    if !linked {
        return Err(Error::RunStartFailed(format!(
            "session {child} is not the child run of this call; it was not started by it"
        )));
    }
    if let Some(forward) = &call.answer {
        let waits_on = session
            .pending_confirmation()
            .map(|p| p.call_id)
            .or_else(|| session.pending_choice().map(|p| p.call_id))
            .or_else(|| session.pending_elicitation().map(|p| p.call_id));
        if waits_on.as_ref() == Some(&forward.call_id) {
            return match &forward.answer {
                ForwardedAnswer::Text { text } => {
                    let mut start = StartRun::new(text.clone(), PlannerMode::Model, now());
                    start.user = call.user.clone();
                    start.tenant = call.tenant.clone();
                    engine.start(child, start, setup.clone()).await?.stop.output().await
                }
                ForwardedAnswer::Decision { fingerprint, decision } => {
                    engine
                        .confirm(child, forward.call_id.clone(), fingerprint.clone(), decision.clone())
                        .await?
                        .output()
                        .await
                }
                ForwardedAnswer::Elicitation { question, answer } => {
                    engine
                        .answer_question(child, forward.call_id.clone(), *question, answer.clone())
                        .await?
                        .output()
                        .await
                }
            };
        }
    }
    // A run that waits for nobody goes on to its next stop; one that waits
    // for the person (to approve, or to answer its running call) has
    // stopped, and its last output says for what.
    if session.active_run().is_some() && !session.waits_for_person() && session.pending_elicitation().is_none() {
        if let Some(stop) = engine.wait(child.clone()).await? {
            return stop.output().await;
        }
        // It stopped in between: its last output says how.
        if let Some(now) = engine.session(child.clone()).await? {
            return now.last_output().cloned().ok_or(Error::RunInterrupted);
        }
    }
    session.last_output().cloned().ok_or(Error::RunInterrupted)
}
