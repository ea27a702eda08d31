//! The OpenAI-compatible chat endpoint: `GET /v1/models` lists the agents
//! as models (and `concierge`, the default agent: the hub), and
//! `POST /v1/chat/completions` sends a message to one, answered whole or
//! streamed as `chat.completion.chunk` events. Any OpenAI client or chat UI
//! can talk to concierge's agents this way.
//!
//! The conversation is a concierge session named by the
//! **`X-Concierge-Session`** request header; without it a new session
//! starts, and every response names its session in the same header. The
//! session holds the history, so only the last (user) message of `messages`
//! is new. A run that waits for the person answers with its question
//! ("I'll ... Proceed?", or numbered options) and the next message of the
//! session ("yes", "2") answers it. Errors are in OpenAI's shape
//! (`{"error": {"message", "type", "param", "code"}}`).
//!
//! ```sh
//! curl -si localhost:8080/v1/chat/completions -H 'content-type: application/json' \
//!   -d '{"model": "concierge", "messages": [{"role": "user", "content": "calculate 2 + 2"}]}'
//! ```

pub mod chat;
pub mod completion;
pub mod error;
pub mod models;
pub mod request;
pub mod session;
pub mod stream;

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};

use crate::ground::ApiState;

pub use error::{OpenAiError, OpenAiErrorBody};
pub use session::SESSION_HEADER;

/// The routes `/v1/models` and `/v1/chat/completions`, for the server's router.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    ApiState: FromRef<S>,
{
    Router::new()
        .route("/v1/models", get(models::list))
        .route("/v1/chat/completions", post(chat::completions))
}

/// Now, in Unix seconds (OpenAI's `created`).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}
