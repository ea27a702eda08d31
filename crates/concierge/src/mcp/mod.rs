//! MCP client: servers as toolsets with run-time discovery. (concierge as
//! an MCP server lives in the `concierge-server` crate.)
//!
//! A server is declared as `[mcp_servers.NAME]` (stdio `command` or HTTP
//! `url`); an agent uses it as a toolset (`toolsets = ["NAME"]`). A runtime
//! starts its servers in the background (one whose tools an earlier process
//! remembered starts only when a run calls it), lists their tools, lists
//! them again when a server says they changed, and restarts a server that
//! fails or crashes, with backoff; each tool becomes a [`ToolSpec`] whose
//! arguments are validated and coerced like a Rust tool's.
//!
//! [`ToolSpec`]: concierge_core::ToolSpec

mod changes;
mod client;
mod config;
#[cfg(feature = "mcp-oauth")]
mod credentials;
mod elicitation;
mod framing;
mod handler;
mod http;
#[cfg(feature = "mcp-oauth")]
mod login;
#[cfg(feature = "mcp-oauth")]
mod oauth;
mod prompts;
mod request;
mod resource_tools;
mod resources;
mod result;
mod sampling;
mod tool;

pub use crate::error::McpError;
pub use changes::McpChange;
pub(crate) use client::Probe;
pub use client::{MAX_CALL_TIMEOUTS, McpClient, McpProgress, supported_protocol_versions};
pub use config::{McpOAuth, McpServerConfig, OAuthGrant, default_credentials_file};
pub use framing::MAX_MESSAGE_BYTES;
#[cfg(feature = "mcp-oauth")]
pub use login::{LoginError, login, logout};
pub use prompts::{FilledPrompt, McpPrompt, McpPromptArgument, PromptMessage, PromptRole};
pub use resource_tools::RESOURCE_TOOLSET;
pub(crate) use resource_tools::resource_tools;
pub use resources::{MAX_RESOURCE_BYTES, McpResource, McpResourceTemplate, ResourceRef, ResourceText};
pub use result::MAX_RESULT_BYTES;
pub use sampling::{DEFAULT_SAMPLING_MAX_TOKENS, SamplingPolicy};
pub use tool::{McpTool, RemoteTool, remote_tools};
