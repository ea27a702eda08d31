//! concierge's front doors: the runtime's tools and agents served to other
//! programs. Today the MCP server ([`mcp::ConciergeMcp`]: each Rust tool,
//! and each agent as an `ask_<agent>` tool, over stdio or streamable HTTP);
//! the HTTP API will join it here.

pub mod mcp;

pub use mcp::{AGENT_TOOL_PREFIX, ConciergeMcp, ServeError};
