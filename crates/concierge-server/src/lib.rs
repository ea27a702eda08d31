//! concierge's front doors: the runtime's tools and agents served to other
//! programs. The HTTP API ([`http::HttpApi`]: sessions, runs, confirmations,
//! choices, resumable Server-Sent Events, the catalogue and an OpenAPI
//! document), and the MCP server ([`mcp::ConciergeMcp`]: each Rust tool, and
//! each agent as an `ask_<agent>` tool, over stdio or streamable HTTP).

pub mod http;
pub mod mcp;
pub mod metrics;

pub use http::{BindError, HttpApi, check_unauthenticated_addr};
pub use mcp::{AGENT_TOOL_PREFIX, ConciergeMcp, ServeError};
