//! The inputs from outside, stepped as the workflow's handlers receive
//! them: a run's start (creating the session when new), the person's
//! confirmation, the end, the opening, and an answer a parent passes on.
//! Each answers with a [`Reply`]: done, or refused with the session
//! unchanged.

use std::collections::BTreeMap;

use concierge_core::{
    Confirmation, ForwardedAnswer, Input, PlannerMode, RunOutput, Session, StartRun, StepError, Timestamp,
};

use super::{SessionWorkflow, parked};
use crate::wire::{
    AnswerRequest, ChildOutcome, ConfirmRequest, EndRequest, ForwardRequest, OpenRequest, Refusal, Reply, StartReply,
    StartRequest,
};

impl SessionWorkflow {
    /// Steps a run's start (creating the session if new).
    pub(super) fn take_start(&mut self, now: Timestamp, request: StartRequest) -> Reply<StartReply> {
        if let Some(refusal) = &self.st.foreign {
            return Reply::Refused(refusal.clone());
        }
        let StartRequest {
            session,
            mut start,
            first_agent,
            plans,
            catalog,
            wait: _,
        } = request;
        if let (Some(version), Some(recorded)) = (start.catalog_version.as_deref(), catalog.as_deref()) {
            self.know_catalog(version, recorded);
        }
        // A start without plans (a child's later run) plans as the last did.
        if !plans.is_empty() {
            self.st.plans = plans;
        }
        self.st.id.get_or_insert(session);
        let created = self.st.session.is_none();
        if created {
            let Some(agent) = start.agent.clone().or(first_agent) else {
                return Reply::Refused(self.refusal());
            };
            let Some(id) = self.st.id.clone() else {
                return Reply::Refused(self.refusal());
            };
            start.agent = Some(agent.clone());
            self.st.session = Some(Session::new(id, agent));
        }
        let (current, first_seq) = match &self.st.session {
            Some(s) => (s.agent().clone(), s.last_seq() + 1),
            None => return Reply::Refused(self.refusal()),
        };
        let taker = start.agent.clone().unwrap_or(current);
        if let Some(plan) = self.st.plans.get(&taker) {
            start.planner = plan.planner;
            if plan.policy.is_some() {
                start.policy = plan.policy.clone();
            }
        }
        if start.at == Timestamp(0) {
            start.at = now;
        }
        let stop = self.st.stops + 1;
        let events_before = self.st.events.len();
        match self.apply(Input::StartRun(start)) {
            Ok(()) => {
                let run_id = self.st.events[events_before..]
                    .iter()
                    .find_map(|e| e.run.clone())
                    .or_else(|| self.st.session.as_ref().and_then(|s| s.active_run().cloned()));
                match run_id {
                    Some(run_id) => Reply::Done(StartReply {
                        run_id,
                        first_seq,
                        stop,
                        output: None,
                    }),
                    None => Reply::Refused(Refusal::Other {
                        message: "the run started without an id".into(),
                    }),
                }
            }
            Err(error) => {
                if created && self.st.events.is_empty() {
                    self.st.session = None;
                }
                Reply::Refused(error.into())
            }
        }
    }

    /// Steps the person's answer to the parked call.
    pub(super) fn take_confirm(&mut self, request: ConfirmRequest) -> Reply<u64> {
        let Some(session) = &self.st.session else {
            return Reply::Refused(self.refusal());
        };
        let Some(run_id) = session.active_run().cloned() else {
            return Reply::Refused(StepError::NotAwaitingConfirmation.into());
        };
        let stop = self.st.stops + 1;
        let input = Input::Confirm(Confirmation {
            run_id,
            call_id: request.call_id,
            fingerprint: request.fingerprint,
            decision: request.decision,
            at: request.at,
        });
        match self.apply(input) {
            Ok(()) => Reply::Done(stop),
            Err(error) => Reply::Refused(error.into()),
        }
    }

    /// Steps the person's answer to a question a running call asked (the
    /// call is then made again, and gets it).
    pub(super) fn take_answer(&mut self, request: AnswerRequest) -> Reply<u64> {
        let Some(session) = &self.st.session else {
            return Reply::Refused(self.refusal());
        };
        let Some(run_id) = session.active_run().cloned() else {
            return Reply::Refused(
                StepError::NoSuchQuestion {
                    call_id: request.call_id,
                }
                .into(),
            );
        };
        let stop = self.st.stops + 1;
        let input = Input::ElicitationAnswered {
            run_id,
            call_id: request.call_id,
            question: request.question,
            answer: request.answer,
            at: request.at,
        };
        match self.apply(input) {
            Ok(()) => Reply::Done(stop),
            Err(error) => Reply::Refused(error.into()),
        }
    }

    /// Steps the session's end.
    pub(super) fn take_end(&mut self, request: EndRequest) -> Reply<Option<RunOutput>> {
        let Some(session) = &self.st.session else {
            return Reply::Refused(self.refusal());
        };
        let active = session.active_run().cloned();
        if request.run_only {
            if active.is_none() {
                return Reply::Done(None);
            }
            if let Err(error) = self.apply(Input::CancelRun {
                reason: request.reason,
                at: request.at,
            }) {
                return Reply::Refused(error.into());
            }
        } else {
            if let Err(error) = self.apply(Input::End {
                reason: request.reason,
                at: request.at,
            }) {
                return Reply::Refused(error.into());
            }
            self.st.ended = true;
        }
        let last = self.st.session.as_ref().and_then(Session::last_output);
        Reply::Done(match (active, last) {
            (Some(run), Some(output)) if output.run_id == run => Some(output.clone()),
            _ => None,
        })
    }

    /// Takes the person's answer a parent passes on: stepped while this
    /// child still waits on the call it is about; otherwise the parent gets
    /// the run's next stop (one under way) or its last output.
    pub(super) fn take_forward(&mut self, now: Timestamp, request: ForwardRequest) {
        let ForwardRequest {
            report_to,
            forward,
            user,
            tenant,
        } = request;
        let Some(session) = &self.st.session else {
            let why = format!("{}", concierge::Error::from(self.refusal()));
            self.report(report_to, ChildOutcome::Failed(why));
            return;
        };
        let waits_on = session
            .pending_confirmation()
            .map(|p| p.call_id)
            .or_else(|| session.pending_choice().map(|p| p.call_id))
            .or_else(|| session.pending_elicitation().map(|p| p.call_id));
        if waits_on.as_ref() != Some(&forward.call_id) {
            if session.active_run().is_some() && !parked(session) {
                // Reported at the run's next stop.
                self.st.report_to = Some(report_to);
            } else {
                let outcome = match session.last_output() {
                    Some(output) => ChildOutcome::Stopped(Box::new(output.clone())),
                    None => ChildOutcome::Failed("it stopped without an answer".into()),
                };
                self.report(report_to, outcome);
            }
            return;
        }
        let id = session.id().clone();
        self.st.report_to = Some(report_to);
        let refused = match forward.answer {
            ForwardedAnswer::Text { text } => {
                let mut start = StartRun::new(text, PlannerMode::Model, now);
                start.user = user;
                start.tenant = tenant;
                let request = StartRequest {
                    session: id,
                    start,
                    first_agent: None,
                    plans: BTreeMap::new(),
                    catalog: None,
                    wait: false,
                };
                match self.take_start(now, request) {
                    Reply::Done(_) => None,
                    Reply::Refused(refusal) => Some(refusal),
                }
            }
            ForwardedAnswer::Elicitation { question, answer } => {
                let request = AnswerRequest {
                    call_id: forward.call_id,
                    question,
                    answer,
                    at: now,
                };
                match self.take_answer(request) {
                    Reply::Done(_) => None,
                    Reply::Refused(refusal) => Some(refusal),
                }
            }
            ForwardedAnswer::Decision { fingerprint, decision } => {
                let request = ConfirmRequest {
                    call_id: forward.call_id,
                    fingerprint,
                    decision,
                    at: now,
                };
                match self.take_confirm(request) {
                    Reply::Done(_) => None,
                    Reply::Refused(refusal) => Some(refusal),
                }
            }
        };
        if let Some(refusal) = refused {
            self.report_refusal(refusal);
        }
    }

    /// Opens the session before its first message.
    pub(super) fn take_open(&mut self, request: OpenRequest) -> Reply<()> {
        if let Some(refusal) = &self.st.foreign {
            return Reply::Refused(refusal.clone());
        }
        if self.st.session.is_some() {
            return Reply::Refused(StepError::AlreadyOpen.into());
        }
        self.st.id.get_or_insert(request.session);
        let Some(id) = self.st.id.clone() else {
            return Reply::Refused(self.refusal());
        };
        self.st.session = Some(Session::new(id, request.open.agent.clone()));
        match self.apply(Input::Open(request.open)) {
            Ok(()) => Reply::Done(()),
            Err(error) => {
                self.st.session = None;
                Reply::Refused(error.into())
            }
        }
    }
}
