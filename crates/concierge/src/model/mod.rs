//! Models: the [`Model`] trait, providers and the retry policy.

mod anthropic;
pub(crate) mod http;
mod openai;
mod price;
mod retry;
mod scripted;
mod set;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use concierge_core::{ModelReply, ModelRequest};
use futures::future::BoxFuture;

pub use anthropic::Anthropic;
pub use openai::OpenAiCompatible;
pub use price::Price;
pub use retry::{RetryPolicy, complete_with_retry};
pub use scripted::ScriptedModel;
pub use set::Models;

/// Receives streamed text as it arrives.
pub type DeltaSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Per-call context: where streamed text goes, if anywhere.
#[derive(Clone, Default)]
pub struct ModelContext {
    /// Called with each text delta when the provider streams.
    pub on_delta: Option<DeltaSink>,
}

impl fmt::Debug for ModelContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelContext")
            .field("streaming", &self.on_delta.is_some())
            .finish()
    }
}

/// A chat model.
pub trait Model: Send + Sync + 'static {
    /// The model's reference, `provider:name`, e.g. `openai:gpt-4o-mini`
    /// (the provider part is reported as `gen_ai.system` in traces).
    fn name(&self) -> String;

    /// Answers one request.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>>;
}

/// A model call that failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("model {model}: {message}")]
pub struct ModelError {
    /// The class of failure (decides whether to retry).
    pub kind: ModelErrorKind,
    /// The model that failed.
    pub model: String,
    /// What happened.
    pub message: String,
}

impl ModelError {
    /// An error of `kind`.
    pub fn new(kind: ModelErrorKind, model: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind,
            model: model.into(),
            message: message.into(),
        }
    }

    /// Whether trying again may help (connect errors, timeouts, 429, 5xx,
    /// streams cut short); never for 400/401/403 or unreadable answers.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ModelErrorKind::Connect
                | ModelErrorKind::Timeout
                | ModelErrorKind::RateLimited { .. }
                | ModelErrorKind::Server { .. }
                | ModelErrorKind::Interrupted
        )
    }
}

/// The class of a model failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// The server could not be reached.
    Connect,
    /// The call took longer than its timeout.
    Timeout,
    /// HTTP 429; the server may say when to come back.
    RateLimited {
        /// The server's `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx.
    Server {
        /// The status.
        status: u16,
    },
    /// HTTP 401 or 403: the key is missing, wrong or not allowed.
    Auth {
        /// The status.
        status: u16,
    },
    /// Another 4xx: the request was refused.
    BadRequest {
        /// The status.
        status: u16,
    },
    /// The answer could not be understood.
    Protocol,
    /// A streamed answer stopped before the model finished.
    Interrupted,
    /// No model is configured for this agent.
    NotConfigured,
}
