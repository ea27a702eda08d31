//! What the core asks its engine to do.

use crate::event::Event;
use crate::id::{IdempotencyKey, RunId};
use crate::message::ToolCall;
use crate::model::ModelRequest;
use crate::output::RunOutput;
use crate::time::Timestamp;

/// An effect of a step. The engine performs them in order, after the input
/// that produced them is durable.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Ask the model; answer with [`Input::ModelReplied`](crate::Input::ModelReplied)
    /// or [`Input::ModelFailed`](crate::Input::ModelFailed) quoting `call`.
    CallModel {
        /// The run.
        run_id: RunId,
        /// The model call number within the run.
        call: u32,
        /// The request.
        request: ModelRequest,
    },
    /// Run a tool; answer with [`Input::ToolFinished`](crate::Input::ToolFinished).
    CallTool {
        /// The run.
        run_id: RunId,
        /// The call.
        call: ToolCall,
        /// Deduplication key for side-effecting tools.
        key: IdempotencyKey,
    },
    /// Publish an event.
    Emit(Event),
    /// The run is parked until the person answers the pending confirmation.
    AwaitUser(RunOutput),
    /// The run is over.
    Finish(RunOutput),
    /// Send an [`Input::Tick`](crate::Input::Tick) at this time (a time budget ends then).
    WakeAt {
        /// The run.
        run_id: RunId,
        /// When.
        at: Timestamp,
    },
}
