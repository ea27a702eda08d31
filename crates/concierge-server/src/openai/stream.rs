//! A run's answer streamed as OpenAI's `chat.completion.chunk` Server-Sent
//! Events: a first chunk with the assistant's role, the text as it comes,
//! a last chunk with `finish_reason`, a usage chunk when
//! `stream_options.include_usage` asks for one, then `data: [DONE]`.
//!
//! The text comes from the run's events (followed from the run's first
//! event, so nothing is missed): the model's deltas as it streams them. The
//! run's tool calls are concierge's own and are not sent. When the run
//! stops, what it says to the person (see [`answer_text`]) is compared with
//! what was streamed: with a rules agent, or a stop on a confirmation or a
//! choice, nothing was streamed and the whole text is one chunk; when the
//! last model call streamed the start of it, the rest is sent; when what was
//! streamed is not the start of it (text a model said before calling a
//! tool), the text follows after a blank line.

use std::convert::Infallible;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use concierge::{Event, EventKind, RunHandle, SessionId};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use serde::Serialize;
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::completion::{AssistantRole, CompletionUsage, FinishReason, answer_text, completion_id};

/// One streamed chunk.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatCompletionChunk {
    /// The completion's id, the same in every chunk of a stream.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: ChunkObject,
    /// Unix seconds.
    pub created: u64,
    /// The model as the request named it.
    pub model: String,
    /// One choice (none in the usage chunk).
    pub choices: Vec<ChunkChoice>,
    /// The run's tokens, in the usage chunk only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<CompletionUsage>,
}

/// The `object` of a chunk.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
pub enum ChunkObject {
    /// A chunk.
    #[serde(rename = "chat.completion.chunk")]
    ChatCompletionChunk,
}

/// The one choice of a chunk.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChunkChoice {
    /// Always 0.
    pub index: u32,
    /// What this chunk adds.
    pub delta: ChunkDelta,
    /// Why the answer ends, in the last chunk; null before.
    pub finish_reason: Option<FinishReason>,
}

/// What a chunk adds to the assistant's message.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct ChunkDelta {
    /// `assistant`, in the first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<AssistantRole>,
    /// More text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// What a stream needs to know besides the run.
#[derive(Clone, Debug)]
pub struct StreamSetup {
    /// The session as the client names it.
    pub session: String,
    /// The model as the request named it.
    pub model: String,
    /// Unix seconds.
    pub created: u64,
    /// Whether to send the usage chunk.
    pub include_usage: bool,
}

/// The chunks of `handle`'s run as Server-Sent Events; the stream ends
/// when the run stops or `stopping` resolves (the server shuts down).
///
/// `listening` is a subscription to the session taken before the run
/// started (so that the engine streams the model's deltas); it is held
/// until the run stops.
pub fn respond(
    handle: RunHandle,
    setup: StreamSetup,
    listening: Option<BoxStream<'static, concierge::Result<Event>>>,
    stopping: impl std::future::Future<Output = ()> + Send + 'static,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let (tx, rx) = mpsc::channel::<SseEvent>(64);
    tokio::spawn(async move {
        pump(handle, setup, tx).await;
        drop(listening);
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|event| (Ok::<_, Infallible>(event), rx))
    })
    .take_until(stopping);
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// Writes the run's chunks to `tx` until the run stops (or the client goes).
async fn pump(handle: RunHandle, setup: StreamSetup, tx: mpsc::Sender<SseEvent>) {
    let root: SessionId = handle.session_id().clone();
    let id = completion_id(&setup.session, handle.run_id().as_str());
    let chunk = |delta: ChunkDelta, finish: Option<FinishReason>| ChatCompletionChunk {
        id: id.clone(),
        object: ChunkObject::ChatCompletionChunk,
        created: setup.created,
        model: setup.model.clone(),
        choices: vec![ChunkChoice {
            index: 0,
            delta,
            finish_reason: finish,
        }],
        usage: None,
    };
    let first = ChunkDelta {
        role: Some(AssistantRole::Assistant),
        content: Some(String::new()),
    };
    if !send(&tx, &chunk(first, None)).await {
        return;
    }
    let mut events = handle.events();
    let mut streamed = false;
    let mut current = String::new();
    while let Some(item) = events.next().await {
        let Ok(event) = item else { break };
        if event.session != root {
            // A child run's (an agent called as a tool): its text is not the answer.
            continue;
        }
        match event.kind {
            EventKind::ModelRequested { .. } => current.clear(),
            EventKind::ModelDelta { text } => {
                current.push_str(&text);
                streamed = true;
                let delta = ChunkDelta {
                    role: None,
                    content: Some(text),
                };
                if !send(&tx, &chunk(delta, None)).await {
                    return;
                }
            }
            // The run stops: it finished, or parked on the person's answer.
            EventKind::RunFinished { .. }
            | EventKind::AwaitingConfirmation { .. }
            | EventKind::ChoiceRequested { .. }
            | EventKind::ElicitationRequested { .. } => break,
            _ => {}
        }
    }
    drop(events);
    let output = handle.wait().await;
    let (text, usage, finish) = match &output {
        Ok(output) => (
            answer_text(output),
            CompletionUsage::from(output.usage),
            FinishReason::of(output),
        ),
        Err(error) => (
            format!("Something went wrong: {error}"),
            CompletionUsage::from(concierge::core::Usage::default()),
            FinishReason::Stop,
        ),
    };
    let rest = remainder(streamed, &current, &text);
    if !rest.is_empty() {
        let delta = ChunkDelta {
            role: None,
            content: Some(rest),
        };
        if !send(&tx, &chunk(delta, None)).await {
            return;
        }
    }
    if !send(&tx, &chunk(ChunkDelta::default(), Some(finish))).await {
        return;
    }
    if setup.include_usage {
        let mut last = chunk(ChunkDelta::default(), None);
        last.choices.clear();
        last.usage = Some(usage);
        if !send(&tx, &last).await {
            return;
        }
    }
    let _ = tx.send(SseEvent::default().data("[DONE]")).await;
}

/// What is left to send of `text` after the deltas (`current` being the
/// last model call's).
fn remainder(streamed: bool, current: &str, text: &str) -> String {
    if !streamed {
        text.to_string()
    } else if let Some(rest) = text.strip_prefix(current) {
        rest.to_string()
    } else {
        format!("\n\n{text}")
    }
}

/// Sends one chunk; false when the client has gone.
async fn send(tx: &mpsc::Sender<SseEvent>, chunk: &ChatCompletionChunk) -> bool {
    let Ok(json) = serde_json::to_string(chunk) else {
        return false;
    };
    tx.send(SseEvent::default().data(json)).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_sent_once_whatever_was_streamed() {
        assert_eq!(remainder(false, "", "Proceed?"), "Proceed?");
        assert_eq!(remainder(true, "Hello", "Hello"), "");
        assert_eq!(remainder(true, "Hel", "Hello"), "lo");
        assert_eq!(remainder(true, "Let me look.", "Found it."), "\n\nFound it.");
    }
}
