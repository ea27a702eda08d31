//! A server's questions to the person during a tool call (MCP
//! elicitation, `elicitation/create`), and the calls in flight they belong
//! to.
//!
//! MCP does not say which call a server's request serves (over stdio there
//! is nothing to tell it by), so the client keeps the calls it has in
//! flight on each server: a request while one call is in flight (or only
//! calls of one session) belongs to it; a request while calls of several
//! sessions are in flight is declined, never shown to the wrong person.
//! While a call waits for the person its timeout is paused
//! ([`await_response`]): the server is waiting for us, not hung.
//! See `docs/mcp.md`, "Elicitation".

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use concierge_core::{Elicitation, ElicitationAction, ElicitationMode, SessionId};
use rmcp::RoleClient;
use rmcp::ServiceError;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientNotification, ElicitRequestParams, ElicitResult,
    ElicitationAction as WireAction, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{Peer, RequestHandle};
use tokio::sync::Notify;

use crate::tool::{ChannelError, ToolContext};

/// A call in flight on one server.
#[derive(Clone)]
pub(crate) struct LiveCall {
    /// The call's key here.
    id: u64,
    /// The call's progress token, once its request was sent.
    token: Arc<Mutex<Option<ProgressToken>>>,
    /// The session the call serves.
    pub(crate) session: Option<SessionId>,
    /// The call's context (its way back to the session, if any).
    pub(crate) cx: Option<ToolContext>,
    /// The tool's name on the server.
    pub(crate) tool: String,
    /// How many of the server's requests for this call wait on us now.
    waiting: Arc<AtomicUsize>,
    /// Rings on every sign of life (progress, the end of a wait).
    life: Arc<Notify>,
}

impl LiveCall {
    /// The call's request was sent with progress token `token`.
    pub(crate) fn sent_as(&self, token: ProgressToken) {
        if let Ok(mut held) = self.token.lock() {
            *held = Some(token);
        }
    }

    fn is(&self, token: &ProgressToken) -> bool {
        self.token.lock().is_ok_and(|held| held.as_ref() == Some(token))
    }

    /// Marks a request of the server as waiting on us until the guard drops.
    pub(crate) fn hold(&self) -> Hold {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        self.life.notify_one();
        Hold(self.clone())
    }
}

/// A server request under way for a call (its timeout is paused meanwhile).
pub(crate) struct Hold(LiveCall);

impl Drop for Hold {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
        self.0.life.notify_one();
    }
}

/// The calls in flight on one server.
#[derive(Clone, Default)]
pub(crate) struct LiveCalls(Arc<Mutex<Vec<LiveCall>>>, Arc<AtomicU64>);

impl LiveCalls {
    /// Records a call about to be sent (before its request goes: the
    /// server may ask as soon as it has it); it is forgotten when the guard
    /// drops. Its progress token is given once known ([`LiveCall::sent_as`]).
    pub(crate) fn enter(&self, tool: &str, cx: Option<&ToolContext>) -> (LiveCall, Leave) {
        let id = self.1.fetch_add(1, Ordering::Relaxed);
        let call = LiveCall {
            id,
            token: Arc::default(),
            session: cx.map(|cx| cx.session_id.clone()),
            cx: cx.cloned(),
            tool: tool.to_string(),
            waiting: Arc::default(),
            life: Arc::default(),
        };
        if let Ok(mut calls) = self.0.lock() {
            calls.push(call.clone());
        }
        (
            call,
            Leave {
                calls: self.clone(),
                id,
            },
        )
    }

    /// A progress report for `token`: a sign of life for its call.
    pub(crate) fn progressed(&self, token: &ProgressToken) {
        if let Ok(calls) = self.0.lock() {
            if let Some(call) = calls.iter().find(|c| c.is(token)) {
                call.life.notify_one();
            }
        }
    }

    /// The call a server request belongs to: the only one in flight, or the
    /// first of several that all serve one session. `Err` says why none.
    pub(crate) fn owner(&self) -> Result<LiveCall, &'static str> {
        let calls = self.0.lock().map_err(|_| "the client's list of calls is unreadable")?;
        let first = calls.first().ok_or("no tool call is in flight on this server")?;
        if calls.iter().any(|c| c.session != first.session) {
            return Err("calls of several conversations are in flight on this server, so it cannot be told whose");
        }
        Ok(first.clone())
    }
}

/// Forgets a call when it ends.
pub(crate) struct Leave {
    calls: LiveCalls,
    id: u64,
}

impl Drop for Leave {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.calls.0.lock() {
            calls.retain(|c| c.id != self.id);
        }
    }
}

/// The server's question in our terms (`None` for a kind this client does not know).
pub(crate) fn question(server: &str, params: &ElicitRequestParams) -> Option<Elicitation> {
    Some(match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => Elicitation {
            server: server.to_string(),
            message: message.clone(),
            mode: ElicitationMode::Form {
                schema: serde_json::to_value(requested_schema).unwrap_or_default(),
            },
        },
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => Elicitation {
            server: server.to_string(),
            message: message.clone(),
            mode: ElicitationMode::Url { url: url.clone() },
        },
        _ => return None,
    })
}

/// Answers the server's `elicitation/create` for the call it belongs to:
/// the person is asked through the call's session (once, however often the
/// call is issued again). A request no person can be asked for is declined,
/// with a log line saying why.
pub(crate) async fn elicit(server: &str, live: &LiveCalls, params: ElicitRequestParams) -> ElicitResult {
    let Some(question) = question(server, &params) else {
        tracing::warn!(server, "declined an elicitation of a kind concierge does not know");
        return ElicitResult::new(WireAction::Decline);
    };
    let call = match live.owner() {
        Ok(call) => call,
        Err(why) => {
            tracing::warn!(server, message = %question.message, "declined an elicitation: {why}");
            return ElicitResult::new(WireAction::Decline);
        }
    };
    let Some(channel) = call.cx.as_ref().and_then(|cx| cx.channel.clone()) else {
        tracing::warn!(
            server,
            tool = %call.tool,
            message = %question.message,
            "declined an elicitation: {}",
            ChannelError::Unsupported
        );
        return ElicitResult::new(WireAction::Decline);
    };
    let _hold = call.hold();
    let question_text = question.message.clone();
    match channel.0.ask(question).await {
        Ok(answer) => {
            let action = match answer.action {
                ElicitationAction::Accept => WireAction::Accept,
                ElicitationAction::Decline => WireAction::Decline,
                ElicitationAction::Cancel => WireAction::Cancel,
            };
            let mut result = ElicitResult::new(action);
            if answer.action == ElicitationAction::Accept {
                if let Some(content) = answer.content {
                    result = result.with_content(content);
                }
            }
            result
        }
        Err(ChannelError::Unsupported) => {
            tracing::warn!(server, tool = %call.tool, message = %question_text, "declined an elicitation: {}", ChannelError::Unsupported);
            ElicitResult::new(WireAction::Decline)
        }
        // This attempt of the call ends at its question; the next one gets the answer.
        Err(ChannelError::Parked) => {
            tracing::debug!(server, tool = %call.tool, "cancelled an elicitation: {}", ChannelError::Parked);
            ElicitResult::new(WireAction::Cancel)
        }
        Err(error) => {
            tracing::warn!(server, tool = %call.tool, %error, "cancelled an elicitation");
            ElicitResult::new(WireAction::Cancel)
        }
    }
}

/// The capability concierge announces: forms (checked against their
/// schema) and URLs.
pub(crate) fn capability() -> rmcp::model::ElicitationCapability {
    rmcp::model::ElicitationCapability::new()
        .with_form(rmcp::model::FormElicitationCapability::new().with_schema_validation(true))
        .with_url(rmcp::model::UrlElicitationCapability::new())
}

/// Waits for a call's answer with its timeouts: `idle` between signs of
/// life (progress reports), `cap` in all. Neither runs while the server
/// waits on us (a question to the person, a model request): that time is
/// the person's or the model's, not the server's. On a timeout the server
/// is sent `notifications/cancelled`.
pub(crate) async fn await_response(
    handle: RequestHandle<RoleClient>,
    call: &LiveCall,
    idle: Duration,
    cap: Duration,
) -> Result<ServerResult, ServiceError> {
    let RequestHandle { mut rx, peer, id, .. } = handle;
    let mut used = Duration::ZERO;
    loop {
        let waiting = call.waiting.load(Ordering::SeqCst) > 0;
        let started = tokio::time::Instant::now();
        let limit = idle.min(cap.saturating_sub(used));
        tokio::select! {
            biased;
            answer = &mut rx => {
                return answer.map_err(|_| ServiceError::TransportClosed)?;
            }
            () = call.life.notified() => {
                if !waiting {
                    used += started.elapsed();
                }
            }
            () = tokio::time::sleep(limit), if !waiting => {
                used += started.elapsed();
                let timeout = if used >= cap { cap } else { idle };
                cancel(&peer, id, "request timeout").await;
                return Err(ServiceError::Timeout { timeout });
            }
        }
    }
}

async fn cancel(peer: &Peer<RoleClient>, id: RequestId, reason: &str) {
    let notification = CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason.into())));
    let _ = peer
        .send_notification(ClientNotification::CancelledNotification(notification))
        .await;
}
