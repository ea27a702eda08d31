//! A session's events as Server-Sent Events, resumable from `Last-Event-ID`.
//!
//! Each of the session's own events is sent with its [`EventId`] as the SSE
//! `id` (`12`, or `12.3` for the third model delta after event 12) and its
//! kind as the SSE `event` name; the data is the event as JSON. A client that
//! reconnects with the last id it saw gets every later event exactly once.
//!
//! A client that cannot set the header on its first request (a browser's
//! `EventSource` sends it only on its own reconnects, so a reloaded page
//! cannot) passes the same id as `?after=12.3`; the header, when present,
//! takes precedence (a reconnect knows a later id than the URL).
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
use concierge::{Event, StreamCursor};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::ground::body::QueryParams;
use crate::ground::scope::Relabel;
use crate::ground::sse::SseMessage;
use crate::ground::{ApiError, ApiState, Caller, ErrorBody};

/// The header a reconnecting client sends.
pub const LAST_EVENT_ID: &str = "last-event-id";

/// Where to resume when no header says: `?after=<id>` (a page that reloads
/// opens a new `EventSource`, which sends no `Last-Event-ID` of its own).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// The id of the last event seen; `Last-Event-ID` wins when both are sent.
    #[param(
        nullable = false,
        pattern = "^[0-9]{1,18}(\\.[0-9]{1,9})?(;[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*=[0-9]{1,18}(\\.[0-9]{1,9})?/[0-9]{1,9}){0,16}$"
    )]
    pub after: Option<String>,
}

/// Streams the session's events after `Last-Event-ID` (or `?after=`; from
/// its first event without either): stored events first, then live ones,
/// model deltas and child runs' events included.
#[utoipa::path(
    get, path = "/api/v1/sessions/{id}/events", tag = "sessions",
    params(
        ("id" = String, Path, description = "The session's id"),
        ("Last-Event-ID" = Option<String>, Header, nullable = false, pattern = "^[0-9]{1,18}(\\.[0-9]{1,9})?(;[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*=[0-9]{1,18}(\\.[0-9]{1,9})?/[0-9]{1,9}){0,16}$", description = "The id of the last event seen (`12`, `12.3`, `14;call_1=5/0`); the stream resumes after it"),
        EventsQuery,
    ),
    responses(
        (status = 200, description = "Server-Sent Events: `id` is the place in the stream, `event` the kind, `data` the event as JSON", content_type = "text/event-stream", body = SseMessage),
        (status = 400, description = "Last-Event-ID (or after) is not an event id", body = ErrorBody),
        (status = 404, description = "No such session, or the position names a child run the session does not have", body = ErrorBody),
    )
)]
pub async fn events(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<EventsQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    // Both are checked, whichever wins: a malformed one is an error either way.
    let header = match headers.get(LAST_EVENT_ID) {
        Some(value) => Some(cursor_in("Last-Event-ID", value.to_str().unwrap_or("\u{fffd}"))?),
        None => None,
    };
    let query = match &query.after {
        Some(text) => Some(cursor_in("after", text)?),
        None => None,
    };
    let cursor = header.or(query).unwrap_or_default();
    let session = state.session_of(&caller, &id).await?;
    let root = session.id().clone();
    // The child runs a cursor names must be this session's own: one it
    // does not have is not found, as another tenant's session is not.
    if let Err(error) = state.rt.check_cursor(&session, &cursor).await {
        let field = if headers.contains_key(LAST_EVENT_ID) {
            "Last-Event-ID"
        } else {
            "after"
        };
        return Err(ApiError::field(
            StatusCode::NOT_FOUND,
            field,
            format!("{field}: {error}"),
        ));
    }
    let relabel = Relabel::new(root.clone(), id.as_str());
    let stopping = state.stopping();
    let stream = state
        .rt
        .follow(root, cursor)
        .map(move |item| {
            Ok(match item {
                Ok((event, cursor)) => to_sse(&relabel.event(event), &cursor),
                Err(error) => SseEvent::default().event("stream_error").data(error.to_string()),
            })
        })
        .take_until(async move {
            let mut stopping = stopping;
            let _ = stopping.wait_for(|stop| *stop).await;
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The stream place `text` names, or a 400 naming `field`.
fn cursor_in(field: &str, text: &str) -> Result<StreamCursor, ApiError> {
    text.parse::<StreamCursor>()
        .map_err(|error| ApiError::field(StatusCode::BAD_REQUEST, field, format!("{field}: {error}")))
}

/// One event as SSE, with the cursor after it as its id.
fn to_sse(event: &Event, cursor: &StreamCursor) -> SseEvent {
    let sse = SseEvent::default().event(event.kind.name()).id(cursor.to_string());
    match serde_json::to_string(event) {
        Ok(json) => sse.data(json),
        Err(error) => sse
            .event("stream_error")
            .data(format!("the event could not be written: {error}")),
    }
}
