//! The model reading the person's answer to a parked call (see the
//! `reading` module): the run stays parked while the model reads, then the
//! reading (or the rules', when it settles nothing) answers the call.

use super::driver::{Driver, Flow, Next};
use crate::batch::Parked;
use crate::input::Confirmation;
use crate::model::{ModelReply, ModelRequest};
use crate::pending::Decision;
use crate::reading::{Verdict, read};
use crate::run::Waiting;
use crate::time::Timestamp;

/// What the session says when a message does not answer the parked call.
pub(super) const ANSWER_PLEASE: &str =
    "Before anything else, please answer the question below with yes or no (or say what to change).";

impl Driver<'_> {
    /// Asks the model what the person's answer means for the parked call.
    pub(super) fn read_answer(
        &mut self,
        parked: Parked,
        request: ModelRequest,
        rules_approve: bool,
        text: String,
        at: Timestamp,
    ) -> Flow {
        let call = self.call_model(request);
        Ok(Next::Wait(Waiting::Reading {
            call,
            parked,
            rules_approve,
            text,
            at,
        }))
    }

    /// The model read the answer (`Ok`), or its call failed (`Err`, in
    /// words): the parked call is answered so, or as the rules read it.
    pub(super) fn answer_read(
        &mut self,
        parked: Parked,
        rules_approve: bool,
        reply: Result<ModelReply, String>,
        at: Timestamp,
    ) -> Flow {
        let decision = match &reply {
            Ok(reply) => {
                self.count_usage(reply);
                let pending = parked.pending(self.run.id());
                let spec = self.catalog.tool(&parked.call().name);
                match (pending, spec) {
                    (Some(pending), Some(spec)) => match read(reply, spec, &pending) {
                        Verdict::Decide(decision) => Some(decision),
                        Verdict::Unclear(_) => None,
                    },
                    _ => None,
                }
            }
            Err(_) => None,
        };
        // A change the model read was checked against the tool's schema;
        // the rules' fallback is a plain yes.
        let fallback = rules_approve.then_some(Decision::Approve);
        let Some(decision) = decision.or(fallback) else {
            return self.remind(parked, ANSWER_PLEASE.to_string());
        };
        let confirmation = Confirmation {
            run_id: self.run.id().clone(),
            call_id: parked.call().id.clone(),
            fingerprint: parked.fingerprint().to_string(),
            decision,
            at,
        };
        self.confirmed(parked, confirmation)
    }
}
