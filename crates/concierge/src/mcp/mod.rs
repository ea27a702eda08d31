//! MCP client: servers as toolsets with run-time discovery. (concierge as
//! an MCP server lives in the `concierge-server` crate.)
//!
//! A server is declared as `[mcp_servers.NAME]` (stdio `command` or HTTP
//! `url`); an agent uses it as a toolset (`toolsets = ["NAME"]`). Its tools
//! are listed when a run of such an agent starts, cached, and listed again
//! when the server says they changed; each becomes a [`ToolSpec`] whose
//! arguments are validated and coerced like a Rust tool's.
//!
//! [`ToolSpec`]: concierge_core::ToolSpec

mod client;
mod config;
mod framing;
mod http;
mod result;
mod tool;

pub use client::{MAX_CALL_TIMEOUTS, McpClient, McpError, McpProgress, supported_protocol_versions};
pub use config::McpServerConfig;
pub use framing::MAX_MESSAGE_BYTES;
pub use result::MAX_RESULT_BYTES;
pub use tool::{McpTool, RemoteTool, remote_tools};
