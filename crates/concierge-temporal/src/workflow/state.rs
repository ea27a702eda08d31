//! What the session workflow knows of its session, and what of it a
//! continued run carries over.

use std::collections::{BTreeMap, VecDeque};

use concierge::engine::Catalogs;
use concierge_core::{AgentId, Effect, Event, ModelRequest, RunId, RunOutput, Session, SessionId, Timestamp};

use crate::config::ModelCalls;
use crate::wire::{Carried, ChildReport, Plan, Refusal, ReportTo};

/// The last stops kept for late waiters.
pub(super) const STOPS_KEPT: usize = 16;

/// The events a workflow carries into its next run when it continues as new
/// (older ones are no longer served to subscribers).
const EVENTS_CARRIED: usize = 2048;

/// At most this many children's reports wait for their agent call (a
/// report for a call that is no longer waited on is dropped).
pub(super) const REPORTS_KEPT: usize = 64;

/// What the workflow knows of its session.
#[derive(Default)]
pub(super) struct State {
    /// The session's id (from the workflow's input or its first update).
    pub(super) id: Option<SessionId>,
    /// The session, once opened or started.
    pub(super) session: Option<Session>,
    /// Its events (a bounded tail across continue-as-new).
    pub(super) events: Vec<Event>,
    /// Effects stepped but not yet performed.
    pub(super) queued: Vec<Effect>,
    /// How many times a run stopped (finished or parked for the person).
    pub(super) stops: u64,
    /// The last stops' outputs, by number.
    pub(super) outputs: VecDeque<(u64, RunOutput)>,
    /// When its last input was accepted.
    pub(super) updated_at: Timestamp,
    /// Whether the session has ended.
    pub(super) ended: bool,
    /// How many times the workflow continued as new.
    pub(super) continued: u32,
    /// Whether the run has begun (its carried state restored).
    pub(super) begun: bool,
    /// The requests of model calls in flight that the activity fetches
    /// (too large to travel in its input), by run and call.
    pub(super) requests: Vec<((RunId, u32), ModelRequest)>,
    /// The agent the workflow's search attributes and memo name (set once
    /// the session exists; a handoff upserts them).
    pub(super) agent_shown: Option<AgentId>,
    /// Per agent, how its runs plan (from the last run's start).
    pub(super) plans: BTreeMap<AgentId, Plan>,
    /// For a child session: the parent workflow its next stop is reported
    /// to (set by the parent's start or forwarded answer, taken at the stop).
    pub(super) report_to: Option<ReportTo>,
    /// Reports of stops to send to a parent (by its workflow id).
    pub(super) outgoing: Vec<(String, ChildReport)>,
    /// Reports received from children, until their agent call takes them.
    pub(super) reports: Vec<ChildReport>,
    /// How the session calls its model (from its start).
    pub(super) model_calls: ModelCalls,
    /// Why this worker refuses the session: it serves another catalog than
    /// the client that created it (another project on the same queues).
    /// The workflow then answers its inputs with this and fails.
    pub(super) foreign: Option<Refusal>,
}

impl State {
    /// Takes over what the run before carried (it continued as new).
    pub(super) fn restore(&mut self, carried: Carried) {
        self.session = carried.session;
        self.events = carried.events;
        self.stops = carried.stops;
        self.outputs = carried.outputs.into_iter().collect();
        self.updated_at = carried.updated_at;
        self.ended = self.session.as_ref().is_some_and(Session::is_ended);
        self.continued = carried.continued;
        self.plans = carried.plans;
    }

    /// What the next run carries over when the workflow continues as new
    /// (the events' tail, and what rebuilds the session's catalog version).
    pub(super) fn carry(&self, catalogs: &Catalogs) -> Carried {
        let from = self.events.len().saturating_sub(EVENTS_CARRIED);
        let version = self.session.as_ref().and_then(Session::catalog_version);
        Carried {
            session: self.session.clone(),
            events: self.events[from..].to_vec(),
            stops: self.stops,
            outputs: self.outputs.iter().cloned().collect(),
            updated_at: self.updated_at,
            continued: self.continued + 1,
            catalog: version.and_then(|v| catalogs.record(v).map(|recorded| (v.to_string(), recorded))),
            plans: self.plans.clone(),
        }
    }

    /// No effect waits and no run is under way (one parked for the person
    /// waits in the session itself).
    pub(super) fn idle(&self) -> bool {
        self.queued.is_empty()
            && self.outgoing.is_empty()
            && self.report_to.is_none()
            && self
                .session
                .as_ref()
                .is_none_or(|s| s.active_run().is_none() || super::parked(s))
    }

    /// The output of stop number `stop` (or the session's last output, when
    /// that stop is no longer kept or the session ended before it).
    pub(super) fn output_of(&self, stop: u64) -> Option<RunOutput> {
        self.outputs
            .iter()
            .find(|(n, _)| *n == stop)
            .map(|(_, o)| o.clone())
            .or_else(|| self.session.as_ref().and_then(Session::last_output).cloned())
    }
}
