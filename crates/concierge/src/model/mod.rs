//! Models: the [`Model`] trait, providers and the retry policy.

mod anthropic;
mod cassette;
pub(crate) mod http;
mod openai;
mod price;
mod retry;
mod scripted;
mod set;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use concierge_core::{Event, EventKind, ModelReply, ModelRequest, RunId, SessionId};
use futures::future::BoxFuture;

pub use anthropic::Anthropic;
pub use cassette::{Cassette, CassetteError, CassetteMode, request_key};
pub use http::{DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_TOTAL_TIMEOUT};
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

impl ModelContext {
    /// A context whose streamed text becomes the `model_delta` events of
    /// `session`'s run `run`, numbered after event `after` (1, 2, ...), each
    /// handed to `publish` (an engine's live subscribers).
    pub fn publishing_deltas(
        session: SessionId,
        run: RunId,
        after: u64,
        publish: impl Fn(Event) + Send + Sync + 'static,
    ) -> Self {
        let counter = AtomicU32::new(0);
        Self {
            on_delta: Some(Arc::new(move |text: &str| {
                publish(Event {
                    seq: after,
                    delta: counter.fetch_add(1, Ordering::Relaxed) + 1,
                    at: crate::clock::now(),
                    session: session.clone(),
                    run: Some(run.clone()),
                    kind: EventKind::ModelDelta { text: text.to_string() },
                });
            })),
        }
    }
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

    /// How long one call may take across all its attempts and the waits
    /// between them, if the model sets a budget ([`complete_with_retry`]
    /// stops there). The HTTP providers do (300 s by default).
    fn call_budget(&self) -> Option<Duration> {
        None
    }
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

    /// Whether the model could not be reached or used at all (no model
    /// configured, a connection that failed or timed out, the server busy or
    /// down), as opposed to a model that answered something unusable. A run
    /// resumed after a crash waits for a process that can reach its model
    /// rather than failing for this.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self.kind,
            ModelErrorKind::Connect
                | ModelErrorKind::ConnectionRefused
                | ModelErrorKind::Dns
                | ModelErrorKind::Tls
                | ModelErrorKind::ConnectTimeout
                | ModelErrorKind::Timeout
                | ModelErrorKind::RateLimited { .. }
                | ModelErrorKind::Server { .. }
                | ModelErrorKind::NotConfigured
        )
    }

    /// Whether trying again may help: timeouts, refused or dropped
    /// connections, 429, 5xx, streams cut short and empty answers. Never for
    /// an unknown host, a TLS failure, 400/401/403, an unreadable answer or a
    /// request over the size limit: those fail the same way again.
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            ModelErrorKind::Connect
            | ModelErrorKind::ConnectionRefused
            | ModelErrorKind::ConnectTimeout
            | ModelErrorKind::Timeout
            | ModelErrorKind::RateLimited { .. }
            | ModelErrorKind::Server { .. }
            | ModelErrorKind::Interrupted
            | ModelErrorKind::EmptyReply => true,
            ModelErrorKind::Dns
            | ModelErrorKind::Tls
            | ModelErrorKind::Auth { .. }
            | ModelErrorKind::BadRequest { .. }
            | ModelErrorKind::Protocol
            | ModelErrorKind::RequestTooLarge { .. }
            | ModelErrorKind::NotConfigured => false,
        }
    }

    /// Whether the call ran out of time (connecting, answering, or the
    /// whole call's budget).
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, ModelErrorKind::Timeout | ModelErrorKind::ConnectTimeout)
    }
}

/// The class of a model failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// The connection failed for another reason (reset, closed before the
    /// answer).
    Connect,
    /// Nothing listens at the address (retried briefly: a local server may
    /// be starting).
    ConnectionRefused,
    /// The host name does not resolve (not retried).
    Dns,
    /// The TLS handshake failed (not retried).
    Tls,
    /// No connection within the connect timeout.
    ConnectTimeout,
    /// No answer within the attempt's timeout, or the call's budget ran out.
    Timeout,
    /// HTTP 429; the server may say when to come back.
    RateLimited {
        /// The server's `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx.
    Server {
        /// The HTTP status code (500–599).
        status: u16,
    },
    /// HTTP 401 or 403: the key is missing, wrong or not allowed.
    Auth {
        /// The HTTP status code (401 or 403).
        status: u16,
    },
    /// Another 4xx: the request was refused.
    BadRequest {
        /// The HTTP status code (400–499, other than 401, 403 and 429).
        status: u16,
    },
    /// The answer could not be understood.
    Protocol,
    /// A streamed answer stopped before the model finished.
    Interrupted,
    /// The model answered with neither text nor a tool call.
    EmptyReply,
    /// The request body is over the size limit; it was not sent.
    RequestTooLarge {
        /// The body's size in bytes.
        bytes: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// No model is configured for this agent.
    NotConfigured,
}

/// A duration for people: "120 s", "1.5 s", "200 ms".
pub(crate) fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms % 1000 == 0 || ms >= 10_000 {
        format!("{} s", (ms + 500) / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// A size for people: "8 MiB", "1.5 MiB", "12 KiB", "300 bytes".
pub(crate) fn human_bytes(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    let scaled = |unit: usize, name: &str| {
        if n % unit == 0 {
            format!("{} {name}", n / unit)
        } else {
            format!("{:.1} {name}", n as f64 / unit as f64)
        }
    };
    if n >= MIB {
        scaled(MIB, "MiB")
    } else if n >= KIB {
        scaled(KIB, "KiB")
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_read_well() {
        assert_eq!(human_duration(Duration::from_secs(120)), "120 s");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human_duration(Duration::from_millis(200)), "200 ms");
        assert_eq!(human_bytes(8 * 1024 * 1024), "8 MiB");
        assert_eq!(human_bytes(1024 * 1024 * 3 / 2), "1.5 MiB");
        assert_eq!(human_bytes(300), "300 bytes");
    }

    #[test]
    fn the_documented_defaults_are_the_code_s() {
        let doc = include_str!("../../../../docs/models.md");
        for line in [
            "| connect | 10 s |",
            "| attempt | 120 s |",
            "| total | 300 s |",
            "| request size | 8 MiB |",
        ] {
            assert!(doc.contains(line), "docs/models.md lacks {line:?}");
        }
        assert_eq!(DEFAULT_CONNECT_TIMEOUT, Duration::from_secs(10));
        assert_eq!(DEFAULT_ATTEMPT_TIMEOUT, Duration::from_secs(120));
        assert_eq!(DEFAULT_TOTAL_TIMEOUT, Duration::from_secs(300));
        assert_eq!(human_bytes(DEFAULT_MAX_REQUEST_BYTES), "8 MiB");
    }
}
