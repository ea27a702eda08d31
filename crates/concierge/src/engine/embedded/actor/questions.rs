//! A running call's questions to the person, requests to the model (MCP
//! elicitation and sampling) and reports, as the session's actor handles
//! them.
//!
//! A call's question is journaled once ([`Input::ToolAsked`]) and the live
//! request waits here for the answer. After a crash the call is issued
//! again; when its server asks the same question again (the same call, the
//! same n-th question, the same server, message and form), the answer the
//! session recorded is given at once, or, when the person has not answered
//! yet, the live request waits for that answer: the person answers once.

use std::sync::Arc;

use concierge_core::{
    Asked, CallId, CallReport, Elicitation, ElicitationAnswer, Input, ModelReply, ModelRequest, Question, RunId,
    SessionId, StepError,
};
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::command::AnswerTx;
use super::{Actor, Command, stop_from};
use crate::engine::{Executor, RunStop, now};
use crate::error::{Error, Result};
use crate::model::ModelContext;
use crate::tool::{CallChannel, Channel, ChannelError};

/// The channel a call the actor issued uses to reach its session.
pub(super) struct SessionChannel {
    pub(super) tx: mpsc::Sender<Command>,
    pub(super) executor: Arc<Executor>,
    pub(super) session: SessionId,
    pub(super) run_id: RunId,
    pub(super) call_id: CallId,
}

impl SessionChannel {
    pub(super) fn into_channel(self) -> Channel {
        Channel(Arc::new(self))
    }
}

impl CallChannel for SessionChannel {
    fn ask(&self, question: Elicitation) -> BoxFuture<'static, std::result::Result<ElicitationAnswer, ChannelError>> {
        let tx = self.tx.clone();
        let (run_id, call_id) = (self.run_id.clone(), self.call_id.clone());
        Box::pin(async move {
            let (reply, rx) = oneshot::channel();
            tx.send(Command::Ask {
                run_id,
                call_id,
                question: Box::new(question),
                reply,
            })
            .await
            .map_err(|_| ChannelError::RunEnded)?;
            rx.await.map_err(|_| ChannelError::RunEnded)?
        })
    }

    fn sample(&self, request: ModelRequest) -> BoxFuture<'static, std::result::Result<ModelReply, ChannelError>> {
        let tx = self.tx.clone();
        let executor = self.executor.clone();
        let (session, run_id, call_id) = (self.session.clone(), self.run_id.clone(), self.call_id.clone());
        Box::pin(async move {
            let (input, _) = executor
                .call_model(&session, run_id.clone(), 0, &request, &ModelContext::default(), &[])
                .await;
            match input {
                Input::ModelReplied { reply, at, .. } => {
                    if let Some(usage) = reply.usage {
                        let input = Input::Sampled {
                            run_id,
                            call_id,
                            usage,
                            at,
                        };
                        let _ = tx.send(Command::Input(Box::new(input))).await;
                    }
                    Ok(reply)
                }
                Input::ModelFailed { error, .. } => Err(ChannelError::Model(error)),
                _ => Err(ChannelError::Model("the model gave no reply".into())),
            }
        })
    }

    fn report(&self, report: CallReport) -> BoxFuture<'static, std::result::Result<(), ChannelError>> {
        let tx = self.tx.clone();
        let (run_id, call_id) = (self.run_id.clone(), self.call_id.clone());
        Box::pin(async move {
            let (reply, rx) = oneshot::channel();
            tx.send(Command::Report {
                run_id,
                call_id,
                report: Box::new(report),
                reply,
            })
            .await
            .map_err(|_| ChannelError::RunEnded)?;
            rx.await.map_err(|_| ChannelError::RunEnded)?
        })
    }
}

impl Actor {
    /// The channel for the call `call_id` of `run_id`, whose attempt starts now.
    pub(super) fn channel_for(&mut self, run_id: &RunId, call_id: &CallId) -> Channel {
        self.asks.remove(call_id);
        SessionChannel {
            tx: self.tx.clone(),
            executor: self.shared.parts.executor.clone(),
            session: self.id.clone(),
            run_id: run_id.clone(),
            call_id: call_id.clone(),
        }
        .into_channel()
    }

    /// A live call asks the person `question`.
    pub(super) async fn ask(&mut self, run_id: RunId, call_id: CallId, question: Elicitation, reply: AnswerTx) {
        let Some(session) = &self.session else {
            let _ = reply.send(Err(ChannelError::RunEnded));
            return;
        };
        if !self.owned || session.active_run() != Some(&run_id) {
            let _ = reply.send(Err(ChannelError::RunEnded));
            return;
        }
        let next = self.asks.get(&call_id).copied().unwrap_or(0);
        let earlier = Asked::again(session.asked(&call_id), next, &question).map(|(n, a)| (n, a.answer.clone()));
        if let Some((number, answer)) = earlier {
            // Asked before (this call's earlier attempt): no new question.
            self.asks.insert(call_id.clone(), number + 1);
            match answer {
                Some(answer) => {
                    let _ = reply.send(Ok(answer));
                }
                None => {
                    let key = (call_id, u32::try_from(number).unwrap_or(u32::MAX));
                    self.open.entry(key).or_default().push(reply);
                    self.show_open_question(&run_id);
                }
            }
            return;
        }
        let input = Input::ToolAsked {
            run_id,
            call_id: call_id.clone(),
            question: Question::Elicitation { elicitation: question },
            usage: None,
            checkpoint: None,
            at: now(),
        };
        if let Err(error) = self.apply(input).await {
            tracing::warn!(session = %self.id, %error, "a call's question could not be recorded");
            let _ = reply.send(Err(ChannelError::Failed(error.to_string())));
            return;
        }
        let asked = self.session.as_ref().map_or(0, |s| s.asked(&call_id).len());
        let Some(index) = asked.checked_sub(1) else {
            let _ = reply.send(Err(ChannelError::RunEnded));
            return;
        };
        self.asks.insert(call_id.clone(), index + 1);
        let key = (call_id, u32::try_from(index).unwrap_or(u32::MAX));
        self.open.entry(key).or_default().push(reply);
    }

    /// A live call reports `report`: journaled, then acknowledged.
    pub(super) async fn report(
        &mut self,
        run_id: RunId,
        call_id: CallId,
        report: CallReport,
    ) -> std::result::Result<(), ChannelError> {
        if !self.owned || self.session.as_ref().and_then(|s| s.active_run()) != Some(&run_id) {
            return Err(ChannelError::RunEnded);
        }
        let input = Input::ToolReported {
            run_id,
            call_id,
            report,
            at: now(),
        };
        self.apply(input).await.map(|_| ()).map_err(|error| match error {
            Error::Rejected(_) => ChannelError::RunEnded,
            other => ChannelError::Failed(other.to_string()),
        })
    }

    /// Those waiting for the run's stop learn that it waits for the person.
    fn show_open_question(&mut self, run_id: &RunId) {
        let output = self
            .session
            .as_ref()
            .filter(|s| s.pending_elicitation().is_some())
            .and_then(|s| s.last_output().cloned())
            .filter(|o| &o.run_id == run_id);
        if let (Some(output), Some(waiters)) = (output, self.waiters.remove(run_id)) {
            for waiter in waiters {
                let _ = waiter.send(output.clone());
            }
        }
    }

    /// Gives the answer to the live request waiting for it, if any (a call
    /// issued again after a crash finds it in the session instead).
    pub(super) fn deliver(&mut self, call_id: CallId, question: u32, answer: &ElicitationAnswer) {
        if let Some(waiting) = self.open.remove(&(call_id, question)) {
            for reply in waiting {
                let _ = reply.send(Ok(answer.clone()));
            }
        }
    }

    /// The run ended: the live requests still waiting are told so.
    pub(super) fn forget_questions(&mut self) {
        self.open.clear();
        self.asks.clear();
    }

    /// The person answered question `question` of the running call `call_id`.
    pub(super) async fn answer(
        &mut self,
        call_id: CallId,
        question: u32,
        answer: ElicitationAnswer,
    ) -> Result<RunStop> {
        self.own(&"unknown".into()).await?;
        self.resume_if_loaded_idle();
        let Some(session) = &self.session else {
            return Err(Error::SessionNotFound(self.id.clone()));
        };
        let Some(run_id) = session.active_run().cloned() else {
            return Err(Error::Rejected(StepError::NoSuchQuestion { call_id }));
        };
        let input = Input::ElicitationAnswered {
            run_id: run_id.clone(),
            call_id,
            question,
            answer,
            at: now(),
        };
        let step = self.journal(input).await?;
        let (tx, rx) = oneshot::channel();
        self.waiters.entry(run_id).or_default().push(tx);
        self.act(step).await?;
        Ok(stop_from(rx))
    }
}
