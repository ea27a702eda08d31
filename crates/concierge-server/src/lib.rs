//! concierge's front doors: the runtime's tools and agents served to other
//! programs. The HTTP API ([`http::HttpApi`]: sessions, runs, confirmations,
//! choices, resumable Server-Sent Events, the catalogue and an OpenAPI
//! document), the AG-UI endpoint on it ([`agui`]: AG-UI clients run agents
//! and answer their confirmations and choices as interrupts), the
//! OpenAI-compatible chat endpoint ([`openai`]: `/v1/chat/completions` and
//! `/v1/models`, agents as models, sessions named by a header), the web chat
//! it serves at `/` ([`web`]: a page embedded in the binary that talks only
//! to that API), and the MCP server ([`mcp::ConciergeMcp`]: each Rust tool,
//! and each agent as an `ask_<agent>` tool, over stdio or streamable HTTP).

pub mod agui;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod openai;
pub mod web;

pub use http::{BindError, Caller, HttpApi, TokenError, Tokens, check_unauthenticated_addr};
pub use mcp::{AGENT_TOOL_PREFIX, ConciergeMcp, ServeError};
