//! The HTTP client of a streamable-HTTP MCP server: rmcp's reqwest client,
//! except for an answer over the message size limit. rmcp stops reading such
//! an answer and closes its stream without answering the request, so the
//! call would fail with a vague error or wait for its timeout although the
//! tool ran; here it becomes an error answer to the same request, which the
//! call reports as a result too large (as [`super::framing`] does over stdio).
//! It also notices when rmcp starts a new session on the same connection
//! (the server forgot the old one and rmcp initialized again), so the
//! client can subscribe the new session to its resources again.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use serde_json::Value;
use sse_stream::Sse;
use tokio::sync::mpsc;

use super::framing::too_large_answer;

/// Redirects followed for one request, at most.
const MAX_REDIRECTS: usize = 10;

/// The events of one SSE response.
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// rmcp's reqwest client for one server, with answers over `limit` bytes
/// turned into error answers.
#[derive(Clone, Debug)]
pub(crate) struct GuardedHttp {
    client: reqwest::Client,
    server: Arc<str>,
    limit: usize,
    /// The server's OAuth token, when it is configured with `oauth`.
    #[cfg(feature = "mcp-oauth")]
    oauth: Option<Arc<super::oauth::OAuthToken>>,
    /// How many sessions rmcp initialized through this client: after the
    /// first, each is a new session after the server forgot the old one.
    sessions: Arc<AtomicUsize>,
    /// Told of each such new session (its subscriptions are made again).
    renewed: mpsc::UnboundedSender<()>,
}

impl GuardedHttp {
    /// A client for the server `server`, reading messages of at most `limit`
    /// bytes. Like rmcp's own: no idle connections kept (a half-read answer
    /// would stall the next request), and only redirects to the same origin
    /// that keep the request's method and body are followed.
    pub(crate) fn new(server: &str, limit: usize, renewed: mpsc::UnboundedSender<()>) -> Result<Self, reqwest::Error> {
        crate::tls::install_crypto_provider();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let keeps_body = matches!(
                    attempt.status(),
                    reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
                );
                let same_origin = attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.origin() == attempt.url().origin());
                if !(keeps_body && same_origin) {
                    attempt.stop()
                } else if attempt.previous().len() > MAX_REDIRECTS {
                    attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
                } else {
                    attempt.follow()
                }
            }))
            .build()?;
        Ok(Self {
            client,
            server: server.into(),
            limit,
            #[cfg(feature = "mcp-oauth")]
            oauth: None,
            sessions: Arc::default(),
            renewed,
        })
    }

    /// Authorizes every request with `token` (renewed once when the server
    /// refuses it).
    #[cfg(feature = "mcp-oauth")]
    pub(crate) fn oauth(mut self, token: Arc<super::oauth::OAuthToken>) -> Self {
        self.oauth = Some(token);
        self
    }

    /// `call` with the bearer token: the one rmcp gives, else the OAuth
    /// token when the server has one; a request the server refuses (401)
    /// is sent once more with a renewed token.
    async fn authorized<T, F, Fut>(
        &self,
        given: Option<String>,
        call: F,
    ) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        #[cfg(feature = "mcp-oauth")]
        if let Some(oauth) = &self.oauth {
            let token = match given {
                Some(token) => token,
                None => oauth.token().await?,
            };
            return match call(Some(token)).await {
                Err(StreamableHttpError::AuthRequired(_)) => call(Some(oauth.renew().await?)).await,
                other => other,
            };
        }
        call(given).await
    }

    /// Passes `events` on, an event over the limit replaced by an error
    /// answer to request `id` (the stream ends there: rmcp stops reading it).
    fn guard(&self, events: Events, id: Value, limit: usize) -> Events {
        let server = self.server.clone();
        events
            .map(move |event| match event {
                Err(error) if is_event_too_large(&error) => {
                    tracing::warn!(server = %server, limit, "MCP answer too large; the call fails");
                    Ok(Sse {
                        data: Some(too_large_answer(&id, None, limit).to_string()),
                        ..Sse::default()
                    })
                }
                other => other,
            })
            .boxed()
    }

    /// The error answer to request `id` for an answer of `bytes` bytes (when
    /// counted) over `limit`.
    fn too_large(&self, id: &Value, bytes: Option<usize>, limit: usize) -> Option<ServerJsonRpcMessage> {
        tracing::warn!(server = %self.server, bytes, limit, "MCP answer too large; the call fails");
        serde_json::from_value(too_large_answer(id, bytes, limit)).ok()
    }
}

/// Whether `error` is rmcp's report of an event over its size limit (its
/// wording; the MCP tests hold it to it).
fn is_event_too_large(error: &SseError) -> bool {
    matches!(error, SseError::Body(inner) if inner.to_string().contains("exceeded the maximum size"))
}

/// The serialized size of `message`, counted without writing it out (a
/// message that cannot be serialized counts as empty).
fn serialized_size(message: &ServerJsonRpcMessage) -> usize {
    concierge_core::json_size(message).unwrap_or(0)
}

impl StreamableHttpClient for GuardedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_max_sse_event_size(uri, message, session_id, auth_header, custom_headers, self.limit)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let id = match &message {
            ClientJsonRpcMessage::Request(request) => serde_json::to_value(&request.id).ok(),
            _ => None,
        };
        let initialized = matches!(
            &message,
            ClientJsonRpcMessage::Notification(n) if matches!(n.notification, ClientNotification::InitializedNotification(_))
        );
        let limit = max_sse_event_size.min(self.limit);
        let response = self
            .authorized(auth_header, |token| {
                self.client.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                    limit,
                )
            })
            .await;
        if initialized && response.is_ok() && self.sessions.fetch_add(1, Ordering::SeqCst) > 0 {
            tracing::info!(server = %self.server, "the MCP server started a new session; subscribing again");
            let _ = self.renewed.send(());
        }
        // Only an answer to a request can stand in for what was too large.
        let Some(id) = id else { return response };
        match response {
            Ok(StreamableHttpPostResponse::Sse(events, session)) => {
                Ok(StreamableHttpPostResponse::Sse(self.guard(events, id, limit), session))
            }
            Ok(StreamableHttpPostResponse::Json(answer, session)) => {
                let bytes = serialized_size(&answer);
                match (bytes > limit)
                    .then(|| self.too_large(&id, Some(bytes), limit))
                    .flatten()
                {
                    Some(error) => Ok(StreamableHttpPostResponse::Json(error, session)),
                    None => Ok(StreamableHttpPostResponse::Json(answer, session)),
                }
            }
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => match self.too_large(&id, None, max_size) {
                Some(error) => Ok(StreamableHttpPostResponse::Json(error, None)),
                None => Err(StreamableHttpError::ResponseBodyTooLarge { max_size }),
            },
            other => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.authorized(auth_header, |token| {
            self.client
                .delete_session(uri.clone(), session_id.clone(), token, custom_headers.clone())
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        self.get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth_header, custom_headers, self.limit)
            .await
    }

    // A stream opened with GET (the server's own, or a request's resumed
    // after a break) is not guarded: an event over the limit ends it, and a
    // request whose resumed stream it was fails as closed before its answer.
    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        self.authorized(auth_header, |token| {
            self.client.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size.min(self.limit),
            )
        })
        .await
    }
}
