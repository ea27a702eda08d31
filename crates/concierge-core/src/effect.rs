//! What the core asks its engine to do.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::delegate::AgentCall;
use crate::event::Event;
use crate::guardrail::{Guardrail, Guardrails};
use crate::id::{IdempotencyKey, RunId};
use crate::message::ToolCall;
use crate::model::ModelRequest;
use crate::output::RunOutput;
use crate::time::Timestamp;

/// An effect of a step: something the engine must do. The engine performs
/// them in order, after the input that produced them is durable (and after
/// publishing the step's events).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Ask the model; answer with [`Input::ModelReplied`](crate::Input::ModelReplied)
    /// or [`Input::ModelFailed`](crate::Input::ModelFailed) quoting `call`.
    CallModel {
        /// The run that asks.
        run_id: RunId,
        /// The model call number within the run.
        call: u32,
        /// The system prompt, history and tools to send to the model.
        request: ModelRequest,
        /// The agent's output guardrails: the engine checks the reply with
        /// them before it answers the core (see [`ModelReply::guardrail`](crate::ModelReply::guardrail)).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        guardrails: Vec<Guardrail>,
    },
    /// Run a tool; answer with [`Input::ToolFinished`](crate::Input::ToolFinished).
    CallTool {
        /// The run that makes the call.
        run_id: RunId,
        /// The call to run: its id, tool and arguments.
        call: ToolCall,
        /// Deduplication key for side-effecting tools.
        key: IdempotencyKey,
        /// Who asked for the run, if the caller said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<String>,
        /// The information on the session's blackboard when the call was
        /// made (what the tool's context lets it read).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        blackboard: BTreeMap<String, Value>,
        /// When the person's message that started the run was accepted
        /// (what "yesterday" or "next Tuesday" in it are relative to).
        asked_at: Timestamp,
        /// Where an earlier attempt of the call said it stood (see
        /// [`CallReport::checkpoint`](crate::CallReport::checkpoint)).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<Value>,
        /// The agent's tool guardrails (`tool_input` and `tool_output`): the
        /// engine checks the arguments before the call runs and the result
        /// before it answers the core.
        #[serde(default, skip_serializing_if = "Guardrails::is_empty")]
        guardrails: Guardrails,
    },
    /// Run an agent tool's call as a child run (see [`AgentCall`]); answer
    /// with [`Input::ToolFinished`](crate::Input::ToolFinished) (the child's
    /// reply) or [`Input::ToolAsked`](crate::Input::ToolAsked) (the child
    /// waits for the person).
    CallAgent(Box<AgentCall>),
    /// The run is parked until the person answers the pending confirmation,
    /// choice or question.
    AwaitUser(RunOutput),
    /// Give the person's answer to the running call that asked (its live
    /// request, if this process has it; a call issued again after a crash
    /// finds the answer in the session instead).
    AnswerElicitation {
        /// The run whose call asked.
        run_id: RunId,
        /// The call.
        call_id: crate::id::CallId,
        /// Which of its questions (from 0).
        question: u32,
        /// The answer.
        answer: crate::elicitation::ElicitationAnswer,
    },
    /// The run is over.
    Finish(RunOutput),
    /// Send an [`Input::Tick`](crate::Input::Tick) at this time (a time budget ends then).
    WakeAt {
        /// The run whose time budget ends.
        run_id: RunId,
        /// When to send the tick, in milliseconds since the Unix epoch.
        at: Timestamp,
    },
}

/// What one [`Session::step`](crate::Session::step) produced: the events to
/// publish (in order, numbered) and the effects to perform. The two are
/// separate, as a workflow needs them: events are data for subscribers,
/// effects are commands for the engine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The events, in order.
    pub events: Vec<Event>,
    /// The effects, in order.
    pub effects: Vec<Effect>,
}

impl Step {
    /// The run the step started or went on with: a message that answers a
    /// parked confirmation goes on with the parked run instead of starting one.
    pub fn run(&self) -> Option<&RunId> {
        self.run_started()
            .or_else(|| self.events.iter().find_map(|e| e.run.as_ref()))
    }

    /// The run the step started, if it started one.
    pub fn run_started(&self) -> Option<&RunId> {
        self.events
            .iter()
            .find(|e| matches!(e.kind, crate::event::EventKind::RunStarted { .. }))
            .and_then(|e| e.run.as_ref())
    }

    /// Whether the step asked for nothing and said nothing.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.effects.is_empty()
    }
}
