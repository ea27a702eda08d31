//! MCP: servers as toolsets with run-time discovery, and concierge as an MCP server.
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
mod serve;
mod tool;

pub use client::{McpClient, McpError};
pub use config::McpServerConfig;
pub use serve::ConciergeMcp;
pub use tool::{McpTool, RemoteTool, remote_tools};
