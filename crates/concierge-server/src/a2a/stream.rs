//! A task's updates, live: the task first, then what its runs do — the
//! reply streamed as artifact chunks, a status update per tool call, and
//! the status when a run stops. The stream ends when the task ends or
//! waits for the person (A2A closes it on an interrupted state).
//!
//! Each update carries the session stream's place after it (the SSE `id`):
//! a client that lost the connection re-attaches with SubscribeToTask and
//! that place as `Last-Event-ID`, and the stream goes on from there (the
//! session's own event stream, replayed from its log then live), not from
//! a snapshot.

use std::collections::HashMap;

use a2a::{Artifact, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent};
use concierge::core::EventKind;
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};

use super::card::Door;
use super::error::A2aError;
use super::ops::{self, Begun, Ctx};
use super::record::TASK_LABEL;
use super::task::reply_artifact;
use crate::ground::{ApiState, Caller};

/// One item of a task's stream.
#[derive(Debug)]
pub enum Item {
    /// An update, with the session stream's place after it (`None` for the first snapshot).
    Update(Box<StreamResponse>, Option<String>),
    /// The stream cannot go on.
    Failed(A2aError),
}

/// What the stream follows: who asks, and the turn under way.
pub struct Follow {
    /// The server's state.
    pub state: ApiState,
    /// The caller.
    pub caller: Caller,
    /// The door.
    pub door: Door,
    /// The task as it stood when the stream began (sent first).
    pub first: Task,
    /// The task, its session and where to follow from.
    pub begun: Begun,
    /// How much history the tasks sent carry.
    pub history: Option<usize>,
}

/// Follows the task in a task of its own; the receiver ends with the stream.
pub fn spawn(follow: Follow) -> mpsc::Receiver<Item> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(run(follow, tx));
    rx
}

async fn run(follow: Follow, mut tx: mpsc::Sender<Item>) {
    let Follow {
        state,
        caller,
        door,
        first,
        begun,
        history,
    } = follow;
    let ctx = Ctx {
        state: &state,
        caller: &caller,
        door: &door,
    };
    let task_id = begun.task.id();
    let context = begun.task.context.clone();
    let done = first.status.state.is_terminal() || first.status.state == a2a::TaskState::InputRequired;
    if tx
        .send(Item::Update(Box::new(StreamResponse::Task(first)), None))
        .await
        .is_err()
        || done
    {
        return;
    }
    let mut runs = begun.runs.clone();
    let mut streamed: HashMap<String, String> = HashMap::new();
    let mut events = state.runtime().follow(begun.session.clone(), begun.place.clone());
    let mut stopping = state.stopping();
    let status_update = |status: TaskStatus| {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task_id.clone(),
            context_id: context.clone(),
            status,
            metadata: None,
        })
    };
    let artifact_update = |run: &str, text: String, append: bool, last: bool| {
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: task_id.clone(),
            context_id: context.clone(),
            artifact: Artifact {
                artifact_id: reply_artifact(run),
                name: Some("reply".to_string()),
                description: None,
                parts: vec![Part::text(text)],
                metadata: None,
                extensions: None,
            },
            append: Some(append),
            last_chunk: Some(last),
            metadata: None,
        })
    };
    loop {
        let item = tokio::select! {
            item = events.next() => item,
            _ = stopping.wait_for(|stop| *stop) => None,
        };
        let (event, cursor) = match item {
            None => return,
            Some(Ok(pair)) => pair,
            Some(Err(error)) => {
                let _ = tx.send(Item::Failed(error.into())).await;
                return;
            }
        };
        if event.session != begun.session {
            continue;
        }
        let Some(run) = event.run.as_ref().map(ToString::to_string) else {
            continue;
        };
        let place = Some(cursor.to_string());
        let mut updates = Vec::new();
        let mut last = false;
        match &event.kind {
            EventKind::RunStarted { labels, .. } => {
                if labels.get(TASK_LABEL) == Some(&begun.task.run) && !runs.contains(&run) {
                    runs.push(run.clone());
                }
                if runs.contains(&run) {
                    updates.push(status_update(working(None)));
                }
            }
            _ if !runs.contains(&run) => {}
            EventKind::ModelDelta { text } => {
                let so_far = streamed.entry(run.clone()).or_default();
                let append = !so_far.is_empty();
                so_far.push_str(text);
                updates.push(artifact_update(&run, text.clone(), append, false));
            }
            EventKind::ToolRequested { tool, .. } => {
                updates.push(status_update(working(Some(format!("Calling {tool}.")))));
            }
            // A run stops: it finished, or parked on a question (no
            // `run_finished` for a park).
            EventKind::RunFinished { .. }
            | EventKind::AwaitingConfirmation { .. }
            | EventKind::ChoiceRequested { .. }
            | EventKind::ElicitationRequested { .. } => {
                let found = match ops::find(ctx, &task_id).await {
                    Ok(found) => found,
                    Err(error) => {
                        let _ = tx.send(Item::Failed(error)).await;
                        return;
                    }
                };
                let Ok(view) = found.view() else {
                    return;
                };
                let task = view.to_task(history, true);
                let state_now = task.status.state.clone();
                if state_now == a2a::TaskState::Completed {
                    if let Some(reply) = view.last().reply.clone().filter(|r| !r.is_empty()) {
                        let sent = streamed.remove(&view.last().run).unwrap_or_default();
                        match reply.strip_prefix(sent.as_str()) {
                            Some(rest) if !sent.is_empty() => {
                                updates.push(artifact_update(&view.last().run, rest.to_string(), true, true));
                            }
                            _ => updates.push(artifact_update(&view.last().run, reply, false, true)),
                        }
                    }
                }
                last = state_now.is_terminal() || state_now == a2a::TaskState::InputRequired;
                updates.push(status_update(task.status));
            }
            _ => {}
        }
        for update in updates {
            if tx.send(Item::Update(Box::new(update), place.clone())).await.is_err() {
                return;
            }
        }
        if last {
            return;
        }
    }
}

/// A working status, with what the task does in words if there is something to say.
fn working(words: Option<String>) -> TaskStatus {
    TaskStatus {
        state: a2a::TaskState::Working,
        message: words.map(|text| a2a::Message {
            message_id: format!("status-{}", chrono::Utc::now().timestamp_micros()),
            context_id: None,
            task_id: None,
            role: a2a::Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        }),
        timestamp: Some(chrono::Utc::now()),
    }
}
