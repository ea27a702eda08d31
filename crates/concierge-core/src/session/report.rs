//! A running call's reports ([`CallReport`]): its checkpoint is kept on the
//! call's slot (an attempt after a crash starts from it), its words become a
//! `tool_progress` event, its tokens count in the run's totals.

use super::driver::{Driver, Fault, Flow, Next};
use crate::event::EventKind;
use crate::id::CallId;
use crate::report::CallReport;
use crate::run::Waiting;

impl Driver<'_> {
    /// The running call at `slot` reported `report`.
    pub(super) fn reported(&mut self, waiting: Waiting, slot: usize, call_id: CallId, report: CallReport) -> Flow {
        let Waiting::Tools { mut batch } = waiting else {
            return Err(Fault::mismatch(waiting));
        };
        let CallReport {
            checkpoint,
            progress,
            usage,
        } = report;
        if let Some(checkpoint) = checkpoint {
            batch.checkpoint(slot, checkpoint);
        }
        if let Some(message) = progress.filter(|m| !m.trim().is_empty()) {
            let tool = batch
                .batch()
                .slot(slot)
                .map(|s| s.call.name.clone())
                .ok_or_else(|| Fault::new("the call that reports is not in the batch"))?;
            self.emit(EventKind::ToolProgress { call_id, tool, message });
        }
        self.add_child_usage(usage);
        Ok(Next::Wait(Waiting::Tools { batch }))
    }
}
