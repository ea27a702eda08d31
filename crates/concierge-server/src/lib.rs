//! concierge's front doors: the runtime's tools and agents served to other
//! programs. The HTTP API ([`http`]: sessions, runs, confirmations,
//! choices, resumable Server-Sent Events, the catalogue), the AG-UI endpoint
//! on it ([`agui`]: AG-UI clients run agents and answer their confirmations
//! and choices as interrupts), the OpenAI-compatible chat endpoint
//! ([`openai`]: `/v1/chat/completions` and `/v1/models`, agents as models,
//! sessions named by a header), the web chat it serves at `/` ([`web`]: a
//! page embedded in the binary that talks only to that API), and the MCP
//! server ([`mcp::ConciergeMcp`]: each Rust tool, and each agent as an
//! `ask_<agent>` tool, over stdio or streamable HTTP).
//!
//! The A2A endpoint ([`a2a`]: Agent2Agent 1.0, JSON-RPC and HTTP+JSON,
//! agent cards, tasks as runs and contexts as sessions) lets other agents
//! call concierge's as A2A peers.
//!
//! The front doors stand on [`ground`] (the state, errors, callers and
//! checks they share) and never import each other; [`app`] mounts them all
//! on one router, with the OpenAPI document, and serves it ([`HttpApi`]).

pub mod a2a;
pub mod agui;
pub mod app;
pub mod config;
pub mod ground;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod openai;
pub mod web;

pub use app::{BindError, HttpApi, check_unauthenticated_addr};
pub use config::{ServerConfig, TokenConfig};
pub use ground::{Caller, TokenError, Tokens};
pub use mcp::{AGENT_TOOL_PREFIX, ConciergeMcp, ServeError};
