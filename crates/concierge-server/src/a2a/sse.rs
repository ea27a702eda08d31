//! A task's stream as Server-Sent Events: each update's `data` is the
//! `StreamResponse` (wrapped in a JSON-RPC response for that binding), its
//! `id` the session stream's place to re-attach from.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::channel::mpsc;
use serde_json::{Value, json};

use super::stream::Item;

/// The stream `items` as SSE; `jsonrpc` is the request's id for the
/// JSON-RPC binding (`None` for REST).
pub fn respond(items: mpsc::Receiver<Item>, jsonrpc: Option<Value>) -> Response {
    let events = items.map(move |item| {
        let (data, place) = match item {
            Item::Update(update, place) => {
                let value = serde_json::to_value(&*update).unwrap_or(Value::Null);
                let data = match &jsonrpc {
                    Some(id) => json!({"jsonrpc": "2.0", "id": id, "result": value}),
                    None => value,
                };
                (data, place)
            }
            Item::Failed(error) => {
                let data = match &jsonrpc {
                    Some(id) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_jsonrpc()}),
                    None => error.to_rest(),
                };
                (data, None)
            }
        };
        let mut event = Event::default().data(data.to_string());
        if let Some(place) = place {
            event = event.id(place);
        }
        Ok::<_, Infallible>(event)
    });
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}
