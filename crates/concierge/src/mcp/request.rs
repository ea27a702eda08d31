//! One request to a server besides `tools/call` (listing and reading
//! resources, prompts): bounded by the server's `timeout_secs`, with its
//! errors said in words.

use std::future::Future;

use rmcp::service::Peer;
use rmcp::{RoleClient, ServiceError};

use super::McpClient;
use crate::error::McpError;

impl McpClient {
    /// Sends what `send` sends over the live connection (starting the server
    /// if needed). A server that stops answering is restarted on next use.
    pub(super) async fn request<T, F, Fut>(&self, what: &str, send: F) -> Result<T, McpError>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let connection = self.connection().await?;
        let peer = connection.peer();
        let limit = self.config().call_timeout();
        match tokio::time::timeout(limit, send(peer)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(ServiceError::McpError(error))) => {
                let why = match error.code.0 {
                    -32601 => format!("does not support {what}"),
                    _ => format!("refused {what}: {} (MCP error {})", error.message, error.code.0),
                };
                Err(self.error(why))
            }
            Ok(Err(error)) => {
                self.discard(&connection).await;
                Err(self.error(format!(
                    "{what} failed ({error}); the server is restarted on next use{}",
                    self.stderr_tail()
                )))
            }
            Err(_) => {
                self.discard(&connection).await;
                Err(self.error(format!(
                    "{what} did not answer within {} s; the server is restarted on next use",
                    limit.as_secs()
                )))
            }
        }
    }

    /// What the server declared it offers, starting it if needed.
    pub(super) async fn server_capabilities(&self) -> Result<rmcp::model::ServerCapabilities, McpError> {
        let connection = self.connection().await?;
        Ok(connection.capabilities())
    }
}
