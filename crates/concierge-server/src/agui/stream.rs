//! One AG-UI run as a stream of events: `RUN_STARTED`, the blackboard's
//! `STATE_SNAPSHOT`, the run's events translated as they happen (with a
//! `STATE_DELTA` after each of its tool calls), then at its end the last
//! `STATE_DELTA`, a `MESSAGES_SNAPSHOT` and `RUN_FINISHED` (completed,
//! cancelled, or paused on an interrupt) or `RUN_ERROR`.

use std::convert::Infallible;

use axum::response::sse::Event as SseEvent;
use concierge::core::Decision;
use concierge::{CallId, Event, EventKind, RunStatus, Runtime, SessionId, StreamCursor};
use futures::channel::mpsc;
use futures::stream::BoxStream;
use futures::{SinkExt, Stream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::events::{AguiEvent, ErrorCode, Interrupt, RunOutcome, TokenUsage};
use super::interrupts::{Interrupts, Parked, Refusal};
use super::messages::{snapshot, tool_call_id};
use super::translate::Translator;
use crate::ground::scope::Relabel;

/// How many events wait for a slow client before the run's stream waits for it.
const BUFFER: usize = 64;

/// What the run follows.
pub enum Follow {
    /// A run started by a message, subscribed to before it started (so its
    /// live model deltas are not missed); its first event is `first_seq`.
    Started {
        /// The session's events from before the run on.
        events: BoxStream<'static, concierge::Result<Event>>,
        /// The run's first event.
        first_seq: u64,
    },
    /// A running call's question answered: the call goes on with it.
    Answer {
        /// The stream's place before the answer.
        after: StreamCursor,
        /// The call that asks.
        call_id: CallId,
        /// Which of its questions.
        question: u32,
        /// The answer.
        answer: concierge::ElicitationAnswer,
    },
    /// A parked call answered: the run resumes when the answer is given.
    Confirm {
        /// The stream's place before the answer (children asking included).
        after: StreamCursor,
        /// The parked call.
        call_id: CallId,
        /// Its arguments' fingerprint.
        fingerprint: String,
        /// The answer.
        decision: Decision,
    },
}

/// One run to stream.
pub struct RunStream {
    /// The run's place under its tenant's cap, held while the stream
    /// follows the run (for a run resumed here).
    pub permit: Option<crate::ground::RunPermit>,
    /// The runtime.
    pub rt: Runtime,
    /// The interrupt ledger.
    pub interrupts: Interrupts,
    /// The thread (the session).
    pub thread: SessionId,
    /// The thread's id, as the client named it.
    pub thread_id: String,
    /// The run's id, as the client named it.
    pub run_id: String,
    /// The blackboard at the run's start.
    pub state: Value,
    /// How many messages the session had at the run's start.
    pub messages: usize,
    /// The client's user messages as (id, text), whose ids the messages snapshot keeps.
    pub client_messages: Vec<(String, String)>,
    /// Turns true when the server shuts down.
    pub stopping: watch::Receiver<bool>,
}

/// The events of a refused input: `RUN_ERROR` alone, nothing runs.
pub fn refused(refusal: Refusal) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    single(AguiEvent::error(refusal.code, refusal.message))
}

/// One event as the whole stream.
pub fn single(event: AguiEvent) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    futures::stream::once(async move { Ok(sse(&event)) })
}

fn sse(event: &AguiEvent) -> SseEvent {
    SseEvent::default().data(event.to_json())
}

impl RunStream {
    /// The run's events as Server-Sent Events (the run is followed by a task
    /// of its own; a client that goes away stops the following, not the run).
    pub fn into_sse(self, follow: Follow) -> impl Stream<Item = Result<SseEvent, Infallible>> {
        let (tx, rx) = mpsc::channel::<AguiEvent>(BUFFER);
        tokio::spawn(self.drive(follow, tx));
        rx.map(|event| Ok(sse(&event)))
    }

    async fn drive(self, follow: Follow, mut tx: mpsc::Sender<AguiEvent>) {
        let mut out = vec![
            AguiEvent::RunStarted {
                thread_id: self.thread_id.clone(),
                run_id: self.run_id.clone(),
                protocol_version: super::events::PROTOCOL_VERSION,
            },
            AguiEvent::StateSnapshot {
                snapshot: self.state.clone(),
            },
        ];
        if !send(&mut tx, &mut out).await {
            return;
        }
        let end = self.follow_run(follow, &mut tx).await;
        let Some(end) = end else { return };
        let mut out = self.finish(end).await;
        send(&mut tx, &mut out).await;
    }

    /// Follows the run to its end; `None` if the client went away.
    async fn follow_run(&self, follow: Follow, tx: &mut mpsc::Sender<AguiEvent>) -> Option<End> {
        let mut translator =
            Translator::new(self.thread.clone(), self.messages, self.interrupts.clone()).named(self.thread_id.as_str());
        let mut last_state = self.state.clone();
        let (mut events, first_seq, confirm) = match follow {
            Follow::Started { events, first_seq } => (events, first_seq, None),
            Follow::Confirm {
                after,
                call_id,
                fingerprint,
                decision,
            } => {
                // Subscribed before the answer is given: nothing is missed.
                let first_seq = after.root.seq + 1;
                let events = self
                    .rt
                    .follow(self.thread.clone(), after)
                    .map(|item| item.map(|(event, _)| event))
                    .boxed();
                let rt = self.rt.clone();
                let thread = self.thread.clone();
                let task = tokio::spawn(async move { rt.confirm(thread, call_id, fingerprint, decision).await });
                (events, first_seq, Some(task))
            }
            Follow::Answer {
                after,
                call_id,
                question,
                answer,
            } => {
                let first_seq = after.root.seq + 1;
                let events = self
                    .rt
                    .follow(self.thread.clone(), after)
                    .map(|item| item.map(|(event, _)| event))
                    .boxed();
                let rt = self.rt.clone();
                let thread = self.thread.clone();
                let task = tokio::spawn(async move { rt.answer_question(thread, call_id, question, answer).await });
                (events, first_seq, Some(task))
            }
        };
        let mut confirming = confirm.is_some();
        let confirm = async move {
            match confirm {
                Some(task) => task.await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(confirm);
        let mut stopping = self.stopping.clone();
        let stop = async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        };
        tokio::pin!(stop);
        let mut out = Vec::new();
        loop {
            tokio::select! {
                item = events.next() => {
                    let event = match item {
                        Some(Ok(event)) => event,
                        Some(Err(error)) => {
                            return Some(End::Error(ErrorCode::StreamFailed, format!("the run's events could not be read: {error}")));
                        }
                        None => {
                            return Some(End::Error(ErrorCode::StreamFailed, "the run's events ended before the run did".to_string()));
                        }
                    };
                    if event.session == self.thread && event.seq < first_seq {
                        continue;
                    }
                    if translator.ends_root(&event) {
                        translator.close(&mut out);
                        let _ = send(tx, &mut out).await;
                        return Some(End::Root {
                            event: Box::new(event),
                            usage: *translator.usage(),
                            error: translator.error().map(str::to_string),
                            last_state,
                        });
                    }
                    if event.session != self.thread && !translator.knows_child(&event.session) {
                        self.adopt(&mut translator, &event.session, &mut out).await;
                    }
                    translator.event(&event, &mut out);
                    if event.session == self.thread && matches!(event.kind, EventKind::ToolFinished { .. }) {
                        self.state_delta(&mut last_state, &mut out).await;
                    }
                    if !send(tx, &mut out).await {
                        return None;
                    }
                }
                answered = &mut confirm, if confirming => {
                    confirming = false;
                    let error = match answered {
                        Ok(Ok(_)) => continue,
                        Ok(Err(error)) => error.to_string(),
                        Err(error) => format!("the answer could not be given: {error}"),
                    };
                    return Some(End::Error(
                        ErrorCode::AnswerRefused,
                        format!("{error}; the call still waits: send the thread's next input without a resume to be asked again"),
                    ));
                }
                () = &mut stop => {
                    return Some(End::Error(
                        ErrorCode::StreamFailed,
                        "the server is shutting down; the run goes on, and its outcome is in the session".to_string(),
                    ));
                }
            }
        }
    }

    /// Opens a child run that this stream meets without its start (the run
    /// resumed while the child was parked).
    async fn adopt(&self, translator: &mut Translator, child: &SessionId, out: &mut Vec<AguiEvent>) {
        let (agent, messages) = match self.rt.session(child.clone()).await {
            Ok(session) => (session.agent().to_string(), session.history().len()),
            Err(_) => ("agent".to_string(), 0),
        };
        translator.adopt_child(child, &agent, messages, out);
    }

    /// A `STATE_DELTA` from `last` to the blackboard now, if it changed.
    async fn state_delta(&self, last: &mut Value, out: &mut Vec<AguiEvent>) {
        let Ok(session) = self.rt.session(self.thread.clone()).await else {
            return;
        };
        let now = serde_json::to_value(session.blackboard()).unwrap_or(Value::Null);
        let delta = json_patch::diff(last, &now);
        if !delta.0.is_empty() {
            out.push(AguiEvent::StateDelta { delta });
            *last = now;
        }
    }

    /// The run's last events: the state's last change, the messages, and
    /// how the run ended.
    async fn finish(&self, end: End) -> Vec<AguiEvent> {
        let mut out = Vec::new();
        let (event, usage, error, last_state) = match end {
            End::Error(code, message) => return vec![AguiEvent::error(code, message)],
            End::Root {
                event,
                usage,
                error,
                last_state,
            } => (event, usage, error, last_state),
        };
        match self.rt.session(self.thread.clone()).await {
            Ok(session) => {
                // The client applied the run's earlier deltas: this one
                // carries what changed after the last of them.
                let now = serde_json::to_value(session.blackboard()).unwrap_or(Value::Null);
                let delta = json_patch::diff(&last_state, &now);
                if !delta.0.is_empty() {
                    out.push(AguiEvent::StateDelta { delta });
                }
                out.push(AguiEvent::MessagesSnapshot {
                    messages: snapshot(
                        &SessionId::new(&self.thread_id),
                        session.history(),
                        &self.client_messages,
                    ),
                });
            }
            Err(error) => {
                return vec![AguiEvent::error(
                    ErrorCode::StreamFailed,
                    format!("the session could not be read at the run's end: {error}"),
                )];
            }
        }
        let usage = if usage.input_tokens + usage.output_tokens > 0 {
            vec![TokenUsage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                total_tokens: usage.input_tokens + usage.output_tokens,
            }]
        } else {
            Vec::new()
        };
        let finished = |outcome: RunOutcome, result: Option<Value>, usage: Vec<TokenUsage>| AguiEvent::RunFinished {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            result,
            outcome,
            usage,
        };
        let parked = match &event.kind {
            EventKind::AwaitingConfirmation { pending } => Some(Parked::Confirmation(pending.clone())),
            EventKind::ChoiceRequested { pending } => Some(Parked::Choice(pending.clone())),
            EventKind::ElicitationRequested { pending } => Some(Parked::Question(pending.clone())),
            _ => None,
        };
        if let Some(parked) = parked {
            let interrupt = self.raise(&parked);
            out.push(finished(
                RunOutcome::Interrupt {
                    interrupts: vec![interrupt],
                },
                None,
                usage,
            ));
            return out;
        }
        let EventKind::RunFinished { status, reply } = &event.kind else {
            return out;
        };
        let result = reply.as_ref().map(|r| json!(r));
        out.push(match status {
            // A guardrail's stop is an answer (the sentence), told apart by
            // the `guardrail_tripped` custom event before it.
            RunStatus::Completed | RunStatus::NeedsInput | RunStatus::Blocked => {
                finished(RunOutcome::Success, result, usage)
            }
            RunStatus::Cancelled => finished(RunOutcome::Cancelled, None, usage),
            RunStatus::Failed => AguiEvent::error(
                ErrorCode::RunFailed,
                error
                    .or_else(|| reply.clone())
                    .unwrap_or_else(|| "the run failed".to_string()),
            ),
            // A park reported as a finish: the session says on what.
            RunStatus::AwaitingConfirmation | RunStatus::AwaitingChoice | RunStatus::AwaitingInput => {
                match self
                    .rt
                    .session(self.thread.clone())
                    .await
                    .ok()
                    .as_ref()
                    .and_then(Parked::of)
                {
                    Some(parked) => finished(
                        RunOutcome::Interrupt {
                            interrupts: vec![self.raise(&parked)],
                        },
                        None,
                        usage,
                    ),
                    None => finished(RunOutcome::Success, result, usage),
                }
            }
        });
        out
    }

    /// The interrupt for the call the thread is parked on.
    fn raise(&self, parked: &Parked) -> Interrupt {
        raise(&self.interrupts, &self.thread, &self.thread_id, parked)
    }
}

/// The interrupt for `parked` in `thread`, which the client calls
/// `thread_id` (its call's AG-UI id, and the child run it is parked in, if one).
pub fn raise(interrupts: &Interrupts, thread: &SessionId, thread_id: &str, parked: &Parked) -> Interrupt {
    let session = parked.child().cloned().unwrap_or_else(|| thread.clone());
    let relabel = Relabel::new(thread.clone(), thread_id);
    let call = tool_call_id(
        &relabel.session(thread),
        &relabel.session(&session),
        parked.call_id().as_str(),
    );
    let subagent = parked.child().map(|child| relabel.session(child).to_string());
    interrupts.raise(thread, parked, call, subagent)
}

/// How the followed run ended.
enum End {
    /// The root run reached its end.
    Root {
        /// The root's last event (its finish, or its park).
        event: Box<Event>,
        /// The tokens the run used.
        usage: concierge::Usage,
        /// The last error the run reported.
        error: Option<String>,
        /// The state as the client has it (the snapshot and the deltas sent).
        last_state: Value,
    },
    /// The run could not be followed to its end.
    Error(ErrorCode, String),
}

/// Sends `out` (emptied); false if the client went away.
async fn send(tx: &mut mpsc::Sender<AguiEvent>, out: &mut Vec<AguiEvent>) -> bool {
    for event in out.drain(..) {
        if tx.send(event).await.is_err() {
            return false;
        }
    }
    true
}
