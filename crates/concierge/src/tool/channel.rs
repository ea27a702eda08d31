//! What a running call may ask of the session it serves while it runs: the
//! person (a question the run waits on, MCP elicitation), the model (on
//! the call's behalf, MCP sampling), and the journal (where the call
//! stands, what it is doing: [`CallReport`]). The engine that issued the call gives
//! it a [`CallChannel`] in its [`ToolContext`](super::ToolContext); a call
//! without one (an engine that cannot ask mid-call) is told so.

use concierge_core::{CallReport, Elicitation, ElicitationAnswer, ModelReply, ModelRequest};
use futures::future::BoxFuture;

/// Why a running call's question or model request got no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// The engine that runs the call cannot ask the person mid-call.
    #[error("this engine cannot put a running call's question to the person")]
    Unsupported,
    /// The run ended (cancelled, or the session ended) before the answer came.
    #[error("the run ended before the person answered")]
    RunEnded,
    /// The question could not be recorded or shown.
    #[error("the question could not be put to the person: {0}")]
    Failed(String),
    /// The model could not answer the request.
    #[error("the model could not answer: {0}")]
    Model(String),
    /// The call stops at this question: the engine asks the person, then
    /// makes the call again, and the same question then gets the answer at
    /// once (the Temporal engine, whose calls cannot wait mid-call).
    #[error("the call stops here until the person answers, then it is made again")]
    Parked,
}

/// A running call's way back to its session.
pub trait CallChannel: Send + Sync + 'static {
    /// Asks the person `question` and resolves with their answer. The same
    /// question asked again by the same call after a crash resolves with
    /// the answer already given, without asking again.
    fn ask(&self, question: Elicitation) -> BoxFuture<'static, Result<ElicitationAnswer, ChannelError>>;

    /// Asks the session's model `request` on the call's behalf; the usage
    /// and cost count in the session's totals.
    fn sample(&self, request: ModelRequest) -> BoxFuture<'static, Result<ModelReply, ChannelError>>;

    /// Records `report`: resolves once it is durable, so a checkpoint is
    /// given to the call's next attempt whatever happens after. Its words
    /// are shown in the session's stream and its tokens count in the run's
    /// totals (where the engine can show them; see the engine's docs).
    fn report(&self, report: CallReport) -> BoxFuture<'static, Result<(), ChannelError>>;
}
