//! A session's events as Server-Sent Events, resumable from `Last-Event-ID`.
//!
//! Each of the session's own events is sent with its [`EventId`] as the SSE
//! `id` (`12`, or `12.3` for the third model delta after event 12) and its
//! kind as the SSE `event` name; the data is the event as JSON. A client that
//! reconnects with the last id it saw gets every later event exactly once.
//!
//! Events of child runs (agents called as tools) are in the stream too,
//! marked by their `session` field, and are sent **without an `id`**: a
//! browser keeps the parent's last id through them, so a reconnect resumes
//! the parent's stream where it was. (A child's own events after a
//! reconnect are followed again from the next `child_started` event; the
//! parent's events carry each child's outcome either way.)

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use concierge::{Event, EventId, SessionId};
use futures::{Stream, StreamExt};

use super::ApiState;
use super::error::{ApiError, ErrorBody};
use super::sessions::view;
use super::types::SseMessage;

/// The header a reconnecting client sends.
pub const LAST_EVENT_ID: &str = "last-event-id";

/// Streams the session's events after `Last-Event-ID` (from its first event
/// without one): stored events first, then live ones, model deltas included.
#[utoipa::path(
    get, path = "/api/v1/sessions/{id}/events", tag = "sessions",
    params(
        ("id" = String, Path, description = "The session's id"),
        ("Last-Event-ID" = Option<String>, Header, nullable = false, pattern = "^[0-9]{1,19}(\\.[0-9]{1,9})?$", description = "The id of the last event seen (`12` or `12.3`); the stream resumes after it"),
    ),
    responses(
        (status = 200, description = "Server-Sent Events: `id` is the event id (absent for a child run's events), `event` the kind, `data` the event as JSON", content_type = "text/event-stream", body = SseMessage),
        (status = 400, description = "Last-Event-ID is not an event id", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
    )
)]
pub async fn events(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let after = match headers.get(LAST_EVENT_ID) {
        None => EventId::default(),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| text.parse::<EventId>().ok())
            .ok_or_else(|| {
                ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "Last-Event-ID",
                    "Last-Event-ID is not an event id: send the id of the last event seen, such as 12 or 12.3",
                )
            })?,
    };
    view(&state, &id).await?;
    let root = SessionId::new(id.as_str());
    let stopping = state.stopping();
    let stream = state
        .rt
        .subscribe_after(root.clone(), after)
        .map(move |item| {
            Ok(match item {
                Ok(event) => to_sse(&root, &event),
                Err(error) => SseEvent::default().event("stream_error").data(error.to_string()),
            })
        })
        .take_until(async move {
            let mut stopping = stopping;
            let _ = stopping.wait_for(|stop| *stop).await;
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// One event as SSE: with its id when it is the session's own.
fn to_sse(root: &SessionId, event: &Event) -> SseEvent {
    let sse = SseEvent::default().event(event.kind.name());
    let sse = if &event.session == root {
        sse.id(event.id().to_string())
    } else {
        sse
    };
    match serde_json::to_string(event) {
        Ok(json) => sse.data(json),
        Err(error) => sse
            .event("stream_error")
            .data(format!("the event could not be written: {error}")),
    }
}
