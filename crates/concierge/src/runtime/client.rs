//! Per-agent clients (an agent's own front door: run it, stream it) and run handles.

use concierge_core::{AgentId, Event, Message, RunId, RunOutput, SessionId};
use futures::stream::BoxStream;

use super::Runtime;
use crate::engine::RunStop;
use crate::error::Result;
use crate::options::RunOptions;

/// Things that can start a run: text, a message, or several messages.
pub trait IntoMessages {
    /// The messages.
    fn into_messages(self) -> Vec<Message>;
}

impl IntoMessages for &str {
    fn into_messages(self) -> Vec<Message> {
        vec![Message::user(self)]
    }
}

impl IntoMessages for String {
    fn into_messages(self) -> Vec<Message> {
        vec![Message::user(self)]
    }
}

impl IntoMessages for Message {
    fn into_messages(self) -> Vec<Message> {
        vec![self]
    }
}

impl IntoMessages for Vec<Message> {
    fn into_messages(self) -> Vec<Message> {
        self
    }
}

/// Runs one agent. Get one with [`Runtime::client`].
#[derive(Clone, Debug)]
pub struct AgentClient {
    runtime: Runtime,
    agent: AgentId,
}

impl AgentClient {
    pub(crate) fn new(runtime: Runtime, agent: AgentId) -> Self {
        Self { runtime, agent }
    }

    /// The agent this client starts runs with.
    pub fn agent(&self) -> &AgentId {
        &self.agent
    }

    /// Runs a turn and waits until it finishes (or parks for a confirmation).
    pub async fn run(&self, messages: impl IntoMessages, options: RunOptions) -> Result<RunOutput> {
        self.runtime
            .run_to_stop(Some(self.agent.clone()), messages.into_messages(), options)
            .await
    }

    /// Starts a turn; the handle waits for it or streams its events.
    pub async fn start(&self, messages: impl IntoMessages, options: RunOptions) -> Result<RunHandle> {
        self.runtime
            .start_run(Some(self.agent.clone()), messages.into_messages(), options)
            .await
    }
}

/// A started run.
pub struct RunHandle {
    runtime: Runtime,
    session_id: SessionId,
    run_id: RunId,
    stop: RunStop,
    first_seq: u64,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle")
            .field("session_id", &self.session_id)
            .field("run_id", &self.run_id)
            .finish()
    }
}

impl RunHandle {
    pub(crate) fn new(runtime: Runtime, session_id: SessionId, run_id: RunId, stop: RunStop, first_seq: u64) -> Self {
        Self {
            runtime,
            session_id,
            run_id,
            stop,
            first_seq,
        }
    }

    /// The id of the started run.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The session the run belongs to.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// The seq of the run's first event.
    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// The run's events, from its first one, ending with `run_finished`.
    pub fn events(&self) -> BoxStream<'static, Result<Event>> {
        self.runtime
            .subscribe_run(self.session_id.clone(), self.run_id.clone(), self.first_seq)
    }

    /// Waits until the run finishes or parks for a confirmation.
    pub async fn wait(self) -> Result<RunOutput> {
        self.stop.output().await
    }
}
