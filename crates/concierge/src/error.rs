//! The runtime's typed errors.

use concierge_core::{AgentId, CatalogError, SessionId, StepError};

use crate::model::ModelError;

/// Everything the runtime API can fail with. Each message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The agent is not in the catalog.
    #[error("agent \"{agent}\" not found; agents: {known}")]
    AgentNotFound {
        /// The agent asked for.
        agent: AgentId,
        /// The agents that exist, comma-separated.
        known: String,
    },
    /// The runtime was built without an engine (a caller-only process).
    #[error("no engine is configured: build the runtime with an engine (the embedded one is the default)")]
    EngineNotConfigured,
    /// The configuration is not usable.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A catalog could not be built.
    #[error("invalid catalog: {0}")]
    Catalog(#[from] CatalogError),
    /// `RunOptions` carried no session id.
    #[error("a session id is required: set RunOptions::session_id")]
    MissingSessionId,
    /// A new session cannot have the id given (it reads as a child run's);
    /// the text says why and what to choose instead.
    #[error("{0}")]
    InvalidSessionId(String),
    /// The session does not exist (and the call cannot create it).
    #[error("session {0} not found")]
    SessionNotFound(SessionId),
    /// The run could not start, or the input was refused (a run already in
    /// progress, a wrong confirmation...).
    #[error("{0}")]
    Rejected(#[from] StepError),
    /// A stream position names a child run that is not the session's own
    /// (a call of it, or of its children, never started one by that name).
    #[error("the session has no child run {0}: resume with a position its own event stream gave")]
    NoSuchChildRun(String),
    /// The run could not be started for another reason.
    #[error("the run could not start: {0}")]
    RunStartFailed(String),
    /// The engine stopped before the run finished (a process that can run
    /// it resumes it: this one later, or the next to open the database).
    #[error("the run was interrupted before it finished; it resumes when a process that can run it opens the database")]
    RunInterrupted,
    /// The durable store failed.
    #[error("storage error: {0}")]
    Storage(String),
    /// What is remembered about a person could not be read or written.
    #[cfg(feature = "sqlite")]
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
    /// A schedule could not be added, read or changed.
    #[cfg(feature = "sqlite")]
    #[error(transparent)]
    Schedule(#[from] crate::schedule::ScheduleError),
    /// A webhook could not be added, read or changed.
    #[cfg(feature = "sqlite")]
    #[error(transparent)]
    Webhook(#[from] crate::webhook::WebhookError),
    /// The engine stopped working by itself (on Temporal: this process's
    /// workers ended on an error they cannot retry). Runs in progress wait,
    /// nothing is lost; another process, or this one restarted, goes on.
    #[error("{0}; restart this process once that is fixed (runs in progress wait for it, nothing is lost)")]
    EngineHalted(String),
    /// The engine's server does not answer (on Temporal: the Temporal
    /// server is down, or the network to it). Nothing was lost: the same
    /// call can be made again once the server is back.
    #[error(
        "the {server} server at {address} cannot be reached: it does not answer. Start it or check its address, \
         then try again (runs in progress wait for it; nothing is lost)"
    )]
    EngineUnavailable {
        /// The kind of server (`Temporal`).
        server: String,
        /// Its address, as configured.
        address: String,
    },
    /// A worker on the engine's task queue serves another catalog than
    /// this process (another project, or another version of this one,
    /// shares the queues), so the session was not started.
    #[error(
        "the worker that took this session on task queue {queue} serves other agents ({theirs}) and has no {missing}: \
         another project (or another version of this one) uses the same task queues. Give each project its own \
         `task_queue_prefix` in the [temporal] section of concierge.toml, run this project's workers, then send \
         the message again (this session was not started)"
    )]
    WorkerCatalogMismatch {
        /// The task queue the worker polls.
        queue: String,
        /// This process's agents the worker does not have, comma-separated.
        missing: String,
        /// The worker's agents, comma-separated.
        theirs: String,
    },
    /// The database file belongs to another program (or is not a database).
    #[error("{path} is not a concierge database ({found}); nothing was written to it: choose another file (--db PATH)")]
    ForeignDatabase {
        /// The database file's path.
        path: String,
        /// What was found in it.
        found: String,
    },
    /// Another live process drives the session and did not let it go in time.
    #[error("session {session} is in use by {owner}; try again when it is done, or end that process")]
    SessionBusy {
        /// The busy session.
        session: SessionId,
        /// The process that drives it, as recorded in the database.
        owner: String,
    },
    /// The runtime was opened read-only (it inspects sessions, it runs nothing).
    #[error("this runtime was opened read-only: it can show sessions but not run, confirm or end them")]
    ReadOnly,
    /// A session's journal cannot be replayed in this process.
    #[error("session {session} cannot be loaded here: input {index} ({input}) {reason}")]
    Replay {
        /// The session that cannot be loaded.
        session: SessionId,
        /// The input's position in the session.
        index: u64,
        /// The input's kind.
        input: &'static str,
        /// Why it cannot be replayed, and what to do.
        reason: String,
    },
    /// A fork or a replay names an event or a run the session does not have.
    #[error(transparent)]
    Fork(#[from] concierge_core::ForkError),
    /// A run names a model this runtime has not configured.
    #[error(
        "no model {0} is configured here: name the default model, one an agent names, or one listed in `models` in concierge.toml"
    )]
    ModelNotConfigured(String),
    /// A message is larger than the runtime accepts
    /// ([`RuntimeBuilder::max_message_bytes`](crate::RuntimeBuilder::max_message_bytes)).
    #[error("the message is {size} bytes, over the limit of {limit} bytes; send it in smaller parts")]
    MessageTooLarge {
        /// The message's size in bytes.
        size: usize,
        /// The largest message accepted, in bytes.
        limit: usize,
    },
    /// A run needs the tools of an MCP server that could not start (or be
    /// listed): the run is not started.
    #[error("the {server} tools could not start: {reason}")]
    ToolsUnavailable {
        /// The server's name.
        server: String,
        /// Why, with the tail of its stderr when it has one.
        reason: String,
    },
    /// An MCP resource the agent is given as context (its `resources`)
    /// could not be read: the run is not started.
    #[error(
        "the resource {resource} that agent {agent} is given as context could not be read: {reason}; \
         check that the MCP server offers it, or take it out of the agent's resources"
    )]
    ResourceUnavailable {
        /// The agent.
        agent: String,
        /// The resource, `server:uri`.
        resource: String,
        /// Why.
        reason: String,
    },
    /// A model provider failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An MCP server could not be started, reached or listed.
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(#[from] McpError),
}

/// Why an MCP server could not be used (the `mcp` module's error, kept
/// here so that every error of the crate sits below what returns it).
#[cfg(feature = "mcp")]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MCP server {server}: {message}")]
pub struct McpError {
    /// The server's name.
    pub server: String,
    /// What went wrong, with the tail of its stderr when it has one.
    pub message: String,
}

#[cfg(feature = "sqlite")]
impl From<rusqlite::Error> for Error {
    fn from(value: rusqlite::Error) -> Self {
        Error::Storage(value.to_string())
    }
}

/// The runtime's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
