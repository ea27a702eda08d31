//! concierge on [Temporal](https://temporal.io): an [`Engine`] whose sessions
//! are Temporal workflows, on the official Rust SDK.
//!
//! Use it as a runtime's engine:
//!
//! ```no_run
//! # async fn demo() -> concierge::Result<()> {
//! use concierge_temporal::{Temporal, TemporalConfig, Workers};
//!
//! let config = TemporalConfig::new("127.0.0.1:7233").namespace("concierge");
//! let rt = concierge_demo::install(concierge::Runtime::builder())
//!     .engine(Temporal::new(config).workers(Workers::all()))
//!     .build()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! # One workflow per session
//!
//! Each session is one workflow (type `concierge.session`, id
//! `<prefix>:session:<session id>`, queue `<prefix>-sessions`) that holds the
//! core's `Session` and steps it. Not one per run, because:
//!
//! * the session is the durable unit: its history, blackboard, agent and a
//!   parked confirmation live across runs, and a workflow per run would have
//!   to load the previous run's state from somewhere else;
//! * Temporal runs one workflow id one task at a time, so two inputs to a
//!   session (a message and an end racing) are ordered without a lock;
//! * a run parked on a confirmation costs nothing while it waits;
//! * reads (snapshot, events), waits and lists address one stable id.
//!
//! Inputs arrive as updates (`start_run` with update-with-start, so the
//! first message creates the workflow; `confirm`, `end`, `open`), which
//! step the core at once and answer with the refusal when the core refuses
//! (the session unchanged). A run started to be waited for
//! ([`Engine::run`](concierge::engine::Engine::run)) is answered by its
//! `start_run` update at the run's stop, with its output: one update per
//! turn; a run started to be followed answers once started, and its stop is
//! awaited with the `wait_stop` update. Effects become activities: model calls
//! (`concierge.call_model`) on `<prefix>-models`; tool calls
//! (`concierge.call_tool`) on `<prefix>-tools-<agent>`, with the call's
//! idempotency key as activity id. An agent called as a tool runs in a
//! child session, which is a **child workflow** of the caller's (its id
//! comes from the call, its parent-close policy is to abandon: a child
//! session outlives its parent's workflow run, which may continue as new);
//! the child reports each stop with the `child_stopped` signal, and the
//! person's answer to a question the child asked reaches it with the
//! `forward` signal. Read-only and idempotent tools are
//! retried after a lost worker or a timeout; other tools get one attempt
//! (their failure reaches the model as the tool's error). `WakeAt` is a
//! timer. A failed activity becomes the core's input (`ModelFailed`, a
//! `ToolFinished` with an error), never a failed workflow.
//!
//! # History within Temporal's limits
//!
//! A turn adds what it brings to the workflow's history, not the whole
//! conversation: a model request over
//! [`TemporalConfig::inline_request_bytes`] (8 KiB) stays in the workflow's
//! state and the model call's activity fetches it with the `model_request`
//! query, so only the reply enters the history (the calculator on a model:
//! 28 events and about 4.5 kB per turn, whatever the conversation's
//! length; inline, a turn's bytes grow by the conversation at every model
//! call). An activity input or result over
//! [`TemporalConfig::max_payload_bytes`] (2 MB) is not handed to Temporal:
//! it becomes the tool's error (which the model reads) or the model call's
//! failure, naming the tool or model, never a failed workflow task.
//!
//! At an idle point (no effect in flight, no run under way, every update
//! handled) after [`TemporalConfig::continue_after_events`] history events,
//! or when Temporal suggests it, the workflow continues as new, carrying the
//! session, its last 2,048 events and its last stops into the new run.
//! Updates wait until a run has restored that state; one that reaches a run
//! just closed is sent again.
//!
//! # Finding sessions: search attributes and memo
//!
//! Each session's workflow carries the search attributes `ConciergeTenant`
//! (its tenant, when it has one) and `ConciergeAgent` (the agent holding
//! it, upserted after a handoff), so `temporal workflow list --query
//! 'ConciergeTenant="acme"'` finds a tenant's sessions; and a memo with its
//! `agent`, `tenant` and first run's `labels`. The namespace must have both
//! attributes (Keyword): the engine checks when it opens and refuses to
//! start without them, naming the missing ones and one command per
//! attribute that registers it (`temporal operator search-attribute create
//! --namespace NS --address HOST:PORT --name ConciergeTenant --type
//! Keyword`; the CLI registers only the first of several `--name`s; a dev
//! server: `--search-attribute ConciergeTenant=Keyword --search-attribute
//! ConciergeAgent=Keyword`), unless [`TemporalConfig::search_attributes`]
//! is off (`search_attributes = false` in `[temporal]`). A caller's [`WorkflowOptions`] (task queue, memo, search
//! attributes), passed with
//! [`RunOptions::engine_option`](concierge::RunOptions::engine_option) on
//! the run that creates the session, apply over these.
//!
//! # Workers
//!
//! [`Workers`] says which workers the program runs besides its client: the
//! session workflows, the model calls, and which agents' tools; they run on
//! a thread of their own. A process can be a client only
//! ([`Workers::none`]), a tools worker for some agents, or everything.
//!
//! # Differences from the embedded engine
//!
//! * Subscribers poll the session's `events` query: a new event reaches
//!   them within [`TemporalConfig::poll_interval`] (250 ms by default).
//! * A session that continued as new serves its last 2,048 events to
//!   subscribers, not the older ones (its history has every message).
//! * Model deltas reach only the subscribers in the process that runs the
//!   model call (deltas are live only, never in the history): a program
//!   with its workers beside its subscribers streams them.
//! * `sessions()` lists from Temporal's visibility store, which may lag a
//!   moment behind a new session, and asks each session's workflow for its
//!   summary (one query per session).
//! * Remembered toolsets (`remember_toolset`) live in this process only: a
//!   new process lists its MCP servers before their tools are known. A
//!   run's catalog version travels with its start (and across
//!   continue-as-new), so a worker that has not seen it still replays the
//!   run with the tools it saw.
//! * Nothing is resumed by `recover`: Temporal resumes workflows itself.

mod activities;
mod channel;
mod config;
mod connection;
mod deltas;
mod engine;
mod history;
mod options;
mod payload;
mod reach;
mod scheduler;
mod visibility;
mod wire;
mod worker;
mod workflow;

use std::sync::Arc;

use concierge::Result;
use concierge::engine::{Engine, EngineParts, OpenEngine};
use futures::future::BoxFuture;

pub use config::{ModelCalls, TemporalConfig, TemporalSection};
pub use connection::connect;
pub use engine::TemporalEngine;
pub use history::{HistoryCost, history_cost};
pub use options::WorkflowOptions;
pub use temporalio_common::search_attributes::{SearchAttributeKey, SearchAttributeUpdate, SearchAttributes};
pub use visibility::{AGENT, TENANT};
pub use worker::Workers;

use worker::WorkerThread;

/// Opens a [`TemporalEngine`] as a runtime's engine
/// ([`RuntimeBuilder::engine`](concierge::RuntimeBuilder::engine)), with the
/// workers this program runs.
#[derive(Clone, Debug)]
pub struct Temporal {
    config: TemporalConfig,
    workers: Workers,
}

impl Temporal {
    /// The engine for the server `config` names; the program runs no
    /// workers unless [`Temporal::workers`] says which.
    pub fn new(config: TemporalConfig) -> Self {
        Self {
            config,
            workers: Workers::none(),
        }
    }

    /// Runs these workers in this program.
    pub fn workers(mut self, workers: Workers) -> Self {
        self.workers = workers;
        self
    }
}

impl OpenEngine for Temporal {
    fn open(self: Box<Self>, parts: EngineParts) -> BoxFuture<'static, Result<Arc<dyn Engine>>> {
        Box::pin(async move {
            let config = Arc::new(self.config);
            let client = connect(&config).await?;
            reach::check_namespace(&client, &config).await?;
            visibility::check(&client, &config).await?;
            let engine = TemporalEngine::new(client, config.clone(), parts.clone());
            if self.workers.any() {
                let thread = WorkerThread::spawn(config, parts, engine.link(), self.workers).await?;
                engine.keep_workers(thread);
            }
            Ok(engine as Arc<dyn Engine>)
        })
    }
}
