//! concierge: durable, goal-driven, multi-agent AI assistants.
//!
//! Agents ([`AgentSpec`]) plan with a model (or with rules), call tools
//! (typed Rust functions written with [`#[tool]`](tool)), hand the
//! conversation to each other, ask before side effects, and survive a crash:
//! the embedded engine journals every input to SQLite before its effects run
//! and resumes unfinished runs when the database is opened again.
//!
//! The smallest working example, with a scripted model standing in for a
//! real provider:
//!
//! ```
//! use concierge::model::ScriptedModel;
//! use concierge::{AgentSpec, ModelReply, RunOptions, Runtime, tool};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     a: i64,
//!     b: i64,
//! }
//!
//! /// Adds two integers.
//! #[tool(read_only)]
//! async fn add(args: AddArgs) -> Result<i64, String> {
//!     Ok(args.a + args.b)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> concierge::Result<()> {
//! let model = ScriptedModel::new()
//!     .reply(ModelReply::tool_call("add", r#"{"a": 2, "b": "40"}"#))
//!     .reply(ModelReply::text("2 + 40 = 42"));
//! let rt = Runtime::builder()
//!     .tool(Add)
//!     .agent(AgentSpec::new("adder").instructions("Add numbers.").tool("add"))
//!     .model(model)
//!     .in_memory()
//!     .build()
//!     .await?;
//! let out = rt.client("adder")?.run("what is 2 + 40?", RunOptions::new().session_id("s1")).await?;
//! assert_eq!(out.reply.as_deref(), Some("2 + 40 = 42"));
//! assert_eq!(out.tool_executions[0].outcome, concierge::ToolOutcome::Ok(42.into()));
//! # Ok(()) }
//! ```

extern crate self as concierge;

#[cfg(feature = "a2a")]
pub mod a2a;
mod agent_files;
mod clock;
pub mod config;
pub mod dates;
pub mod engine;
pub mod error;
pub mod fuzzy;
pub mod guardrail;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "sqlite")]
pub mod memory;
pub mod model;
pub mod options;
mod rebase;
pub mod runtime;
#[cfg(feature = "sqlite")]
pub mod schedule;
#[cfg(feature = "sqlite")]
mod side_db;
pub mod tls;
pub mod tool;
#[cfg(feature = "sqlite")]
pub mod webhook;

pub use concierge_core as core;
pub use concierge_core::{
    AgentId, AgentSpec, AgentTool, CallId, Cap, Catalog, Choice, ChoiceOption, ConfirmationPolicy, Decision,
    Elicitation, ElicitationAction, ElicitationAnswer, ElicitationMode, Event, EventId, EventKind, HUB_AGENT,
    HistoryPolicy, IdempotencyKey, Intents, Message, Mode, ModelReply, ModelRequest, Multitask, PendingChoice,
    PendingConfirmation, PendingElicitation, Phase, PlannerMode, PolicyDelta, Route, RouteSource, Rules, RunId,
    RunOutput, RunPolicy, RunStatus, Session, SessionId, StepError, SummaryMode, Timestamp, ToolAnnotations, ToolCall,
    ToolError, ToolErrorKind, ToolExecution, ToolId, ToolOutcome, ToolSpec, ToolsState, Usage, trim_blank,
};
pub use concierge_macros::tool;
pub use engine::{
    Embedded, Engine, JournalStats, SessionFacts, SessionPage, SessionQuery, SessionSummary, TenantScope,
};
pub use error::{Error, Result};
pub use guardrail::{Guard, GuardDecision, GuardStage, Guardrail, GuardrailTrip, Guardrails};
pub use model::{Model, ModelError};
pub use options::RunOptions;
pub use runtime::{AgentClient, IntoMessages, RunHandle};
pub use runtime::{InvalidCursor, Readiness, Runtime, RuntimeBuilder, StreamCursor, check_answer};
pub use tool::{DynTool, Reply, Tool, ToolContext, Toolset};

#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde_json;
}
