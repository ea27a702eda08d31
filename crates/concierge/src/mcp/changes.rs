//! What an MCP server says changed on its side, besides its tools:
//! `notifications/resources/list_changed`, `notifications/resources/updated`
//! (for a subscribed resource) and `notifications/prompts/list_changed`.

/// A change a server announced (see [`McpClient::changes`](super::McpClient::changes)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpChange {
    /// Its list of resources changed: list them again.
    ResourceListChanged,
    /// A resource the client subscribed to changed: read it again.
    ResourceUpdated {
        /// The resource's URI.
        uri: String,
    },
    /// Its list of prompts changed: list them again.
    PromptListChanged,
}
