//! The sans-IO core of concierge.
//!
//! A [`Session`] is a deterministic state machine: [`Session::step`] takes an
//! [`Input`] (a user message, a model reply, a tool result, a confirmation,
//! the end of the session, or time passing) and returns a [`Step`]: the
//! events to publish and the [`Effect`]s an engine must perform (call the
//! model, call a tool, wait for the person, finish the run). The core does no I/O, reads no clock and draws
//! no random numbers, so the same inputs always give the same effects: engines
//! journal inputs and replay them after a crash, and every orchestration rule
//! is testable without a model or a network.
//!
//! ```
//! use concierge_core::{
//!     AgentSpec, Catalog, Effect, Input, PlannerMode, Route, Rules, Session, StartRun,
//!     Timestamp, ToolOutcome, ToolSpec,
//! };
//! use serde_json::json;
//!
//! let add = ToolSpec::new("add", "Adds two numbers.", json!({"type": "object"}));
//! let rules = Rules::new()
//!     .route(Route::tool("add", json!({"a": "{a}", "b": "{b}"})).pattern(r"(?P<a>\d+) plus (?P<b>\d+)"))
//!     .answer("The sum is {result}.");
//! let catalog = Catalog::builder()
//!     .tool(add)
//!     .agent(AgentSpec::new("adder").tool("add").rules(rules))
//!     .build()?;
//!
//! let mut session = Session::new("s1", "adder");
//! let step = session.step(
//!     Input::StartRun(StartRun::new("2 plus 3", PlannerMode::Rules, Timestamp(0))),
//!     &catalog,
//! )?;
//! // The engine runs the tool the core asked for...
//! let Some(Effect::CallTool { run_id, call, .. }) =
//!     step.effects.iter().find(|e| matches!(e, Effect::CallTool { .. }))
//! else { unreachable!() };
//! // ...and feeds the result back.
//! let step = session.step(
//!     Input::ToolFinished {
//!         run_id: run_id.clone(),
//!         call_id: call.id.clone(),
//!         outcome: ToolOutcome::Ok(json!(5)),
//!         duration_ms: 1,
//!         usage: None,
//!         at: Timestamp(1),
//!     },
//!     &catalog,
//! )?;
//! let Some(Effect::Finish(output)) = step.effects.last() else { unreachable!() };
//! assert_eq!(output.reply.as_deref(), Some("The sum is 5."));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod agent;
mod batch;
mod blackboard;
mod canonical;
mod catalog;
mod choice;
mod confirmation;
mod delegate;
mod effect;
mod elicitation;
mod error;
mod event;
mod fork;
mod gate;
mod guardrail;
mod handoff;
mod history;
mod hub;
mod id;
mod input;
mod message;
mod model;
mod multitask;
mod output;
mod pending;
mod phase;
mod planner;
mod planner_mode;
mod policy;
mod reading;
mod record;
mod report;
mod run;
mod session;
mod text;
mod time;
mod tool;

pub use agent::{AgentSpec, AgentTool, ExampleTurn, Intents, Route, RouteAction, Rules, Then};
pub use blackboard::{Blackboard, CACHE_WINDOW, Goal, ToolExecution};
pub use canonical::{canonical_json, fingerprint};
pub use catalog::{Catalog, CatalogBuilder, CatalogError, ResolvedAgent};
pub use choice::{CHOICE_KEY, Choice, ChoiceOption};
pub use confirmation::{Answer, check_arguments, confirmation_message, fill_template, interpret_answer};
pub use delegate::{AgentCall, Forward, ForwardedAnswer, Parent, Question, child_session};
pub use effect::{Effect, Step};
pub use elicitation::{
    Asked, Elicitation, ElicitationAction, ElicitationAnswer, ElicitationField, ElicitationMode, PendingElicitation,
};
pub use error::StepError;
pub use event::{Event, EventId, EventKind, InvalidEventId, ToolsState};
pub use fork::{DoneCall, Fork, ForkError, ForkOrigin, REPLAY_REFUSAL};
pub use guardrail::{GuardCheck, GuardStage, Guardrail, GuardrailTrip, Guardrails, PiiAction, PiiKind, TextVerdict};
pub use handoff::{HANDOFF_PREFIX, handoff_tool_name};
pub use history::{
    DEFAULT_LAST_TURNS, HistoryPolicy, LOG_SUMMARY_TURNS, MAX_MODEL_SUMMARY_BYTES, RunningSummary, SummaryMode,
    TurnIndex, Window, bytes_of, json_size, log_summary, turns,
};
pub use hub::{CHANGE_GOAL, GOAL_COMPLETE, HUB_AGENT, LIST_AGENTS, Mode, RouteSource};
pub use id::{AgentId, CallId, IdempotencyKey, RunId, SessionId, ToolId, TurnId, check_name};
pub use input::{Confirmation, Input, OpenSession, StartRun};
pub use message::{Message, ToolCall};
pub use model::{ModelReply, ModelRequest, ModelToolCall, ToolChoice, Usage};
pub use multitask::Multitask;
pub use output::{RunOutput, RunStatus};
pub use pending::{Decision, PendingChoice, PendingConfirmation};
pub use phase::{InvalidTransition, Phase};
pub use planner::{
    CompiledRules, LlmPlanner, Plan, PlanView, PlannedCall, Planner, RulesPlanner, parse_arguments, render_value,
    summarize_results,
};
pub use planner_mode::PlannerMode;
pub use policy::{Cap, ConfirmationPolicy, MemoryPolicy, PolicyDelta, RunPolicy};
pub use record::RunRecord;
pub use report::CallReport;
pub use session::Session;
pub use text::{NOT_BLANK_PATTERN, trim_blank};
pub use time::Timestamp;
pub use tool::{FieldError, ToolAnnotations, ToolDef, ToolError, ToolErrorKind, ToolOutcome, ToolSpec};

#[doc(hidden)]
/// Support for `concierge-macros`' generated code; not a public API.
pub mod __private {
    pub use serde;
}
