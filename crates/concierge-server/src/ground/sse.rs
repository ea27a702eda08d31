//! What the front doors' event streams look like in the OpenAPI document.

use serde::Serialize;
use utoipa::ToSchema;

/// One Server-Sent Event, as a client's SSE parser reads it (OpenAPI 3.1
/// describes an event stream event by event): of a session's stream, of an
/// AG-UI run, or of a streamed chat completion.
#[derive(Debug, Serialize, ToSchema)]
pub struct SseMessage {
    /// The event's name: a session event's kind (`run_started`,
    /// `model_delta`...; `stream_error` when the stream cannot go on), or
    /// `message` for AG-UI events and completion chunks, which carry none.
    pub event: String,
    /// A session event's place in the stream (`12`, `12.3`,
    /// `14;call_1=5/0`), to send back as `Last-Event-ID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The event as JSON (for `stream_error`, a sentence; `[DONE]` ends a
    /// streamed chat completion).
    pub data: String,
}
