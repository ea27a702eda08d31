//! What an MCP server sends a client unasked: list changes, progress,
//! questions for the person (elicitation) and model requests (sampling).

// MCP sampling is deprecated by SEP-2577, but it is still what servers send.
#![expect(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, ProgressNotificationParam, ProgressToken, ResourceUpdatedNotificationParam,
    SamplingCapability,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};

use super::SamplingPolicy;
use super::changes::McpChange;
use super::elicitation::{self, LiveCalls};
use super::sampling::{self, Sampling};

/// A server's report on a call under way (`notifications/progress`).
#[derive(Clone, Debug, PartialEq)]
pub struct McpProgress {
    /// The server's name.
    pub server: String,
    /// The tool being called (its name on the server).
    pub tool: String,
    /// How far it got (increases with every report).
    pub progress: f64,
    /// Where it is going, when the server knows.
    pub total: Option<f64>,
    /// What it is doing, in the server's words.
    pub message: Option<String>,
}

impl std::fmt::Display for McpProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}: {}", self.server, self.tool, self.progress)?;
        if let Some(total) = self.total {
            write!(f, " of {total}")?;
        }
        if let Some(message) = &self.message {
            write!(f, " ({message})")?;
        }
        Ok(())
    }
}

/// Which tool each progress token of a call under way belongs to.
pub(super) type Calls = Arc<Mutex<HashMap<ProgressToken, String>>>;

/// Receives the server's notifications.
#[derive(Clone)]
pub(super) struct Handler {
    pub(super) server: String,
    pub(super) stale: Arc<AtomicBool>,
    pub(super) progress: tokio::sync::broadcast::Sender<McpProgress>,
    pub(super) calls: Calls,
    /// The calls in flight, whose questions and model requests the server sends.
    pub(super) live: LiveCalls,
    pub(super) sampling: Sampling,
    pub(super) changes: tokio::sync::broadcast::Sender<McpChange>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::Relaxed);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(McpChange::ResourceListChanged);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.changes.send(McpChange::ResourceUpdated { uri: params.uri });
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(McpChange::PromptListChanged);
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.live.progressed(&params.progress_token);
        let tool = self
            .calls
            .lock()
            .ok()
            .and_then(|calls| calls.get(&params.progress_token).cloned())
            .unwrap_or_else(|| "(a call)".into());
        let report = McpProgress {
            server: self.server.clone(),
            tool,
            progress: params.progress,
            total: params.total,
            message: params.message,
        };
        tracing::info!(
            server = %report.server,
            tool = %report.tool,
            progress = report.progress,
            total = ?report.total,
            message = report.message.as_deref().unwrap_or(""),
            "MCP progress"
        );
        let _ = self.progress.send(report);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(elicitation::elicit(&self.server, &self.live, request).await)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        sampling::sample(&self.server, &self.sampling, &self.live, params).await
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation::capability());
        if self.sampling.policy != SamplingPolicy::Deny {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("concierge", env!("CARGO_PKG_VERSION")),
        )
    }
}
