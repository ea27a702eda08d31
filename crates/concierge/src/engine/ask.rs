//! What every engine does with a step before it asks the person anything:
//! a call parked for confirmation whose arguments do not fit its tool is
//! answered `Invalid` at once (the model then hears what is wrong), so
//! nobody is asked to approve a call that cannot run.

use concierge_core::{Confirmation, Decision, Effect, Input, Step, Timestamp, ToolCall};

use crate::tool::ToolRegistry;

/// The input that refuses the call `step` parks for the person's
/// confirmation, when its arguments do not fit its tool; `None` when the
/// step asks nothing, or asks about a call that can run. A call parked in a
/// child run (asked through this session) was checked in the child.
///
/// An engine that gets `Some` journals it right after the step, and shows
/// neither the step's `awaiting_confirmation` event nor its stop.
pub fn refuse_invalid_ask(step: &Step, tools: &ToolRegistry, at: Timestamp) -> Option<Input> {
    step.effects.iter().find_map(|effect| {
        let Effect::AwaitUser(output) = effect else {
            return None;
        };
        let pending = output.pending_confirmation.as_ref().filter(|p| p.session.is_none())?;
        let call = ToolCall {
            id: pending.call_id.clone(),
            name: pending.tool.clone(),
            arguments: pending.arguments.clone(),
        };
        let error = tools.check_arguments(&call).err()?;
        Some(Input::Confirm(Confirmation {
            run_id: pending.run_id.clone(),
            call_id: pending.call_id.clone(),
            fingerprint: pending.fingerprint.clone(),
            decision: Decision::Invalid { error },
            at,
        }))
    })
}
