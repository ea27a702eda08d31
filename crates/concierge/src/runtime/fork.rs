//! Forks and replays: a new session from another's conversation up to one
//! of its events, and a past run run again against another model or
//! planner with its tools answered from what the run recorded.

use concierge_core::{
    Fork, ForkOrigin, OpenSession, PlannerMode, REPLAY_REFUSAL, RunId, RunOutput, RunRecord, Session, SessionId,
    ToolOutcome,
};
use futures::StreamExt;

use super::Runtime;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::options::RunOptions;

/// A new session forked from another: [`Runtime::fork`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forked {
    /// The new session.
    pub session: SessionId,
    /// Where it came from, and what that means for actions already done (in words).
    pub origin: ForkOrigin,
}

/// How to replay a run: [`Runtime::replay`].
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    model: Option<String>,
    planner: Option<PlannerMode>,
    session_id: Option<SessionId>,
    run_id: Option<RunId>,
    tenant: Option<String>,
    user: Option<String>,
}

impl ReplayOptions {
    /// The run's own model and planners (a session id must still be set).
    pub fn new() -> Self {
        Self::default()
    }

    /// Model calls name this model instead of their agents' (it must be
    /// configured: an agent's model, or one of the runtime's named models).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Every agent plans this way (the model, its rules, or its custom planner).
    pub fn planner(mut self, planner: PlannerMode) -> Self {
        self.planner = Some(planner);
        self
    }

    /// The id of the session the replay runs in (required, new).
    pub fn session_id(mut self, id: impl Into<SessionId>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// The replay run's id (the session numbers it when unset).
    pub fn run_id(mut self, id: impl Into<RunId>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// The tenant the caller acts for: the session replayed must be its own.
    pub fn tenant(mut self, tenant: Option<String>) -> Self {
        self.tenant = tenant;
        self
    }

    /// Who asks for the replay (the run's `user_id`).
    pub fn user(mut self, user: Option<String>) -> Self {
        self.user = user;
        self
    }
}

/// A run replayed: what it answered then and what it answers now.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The session the replay ran in (a fork of the original just before the run).
    pub session: SessionId,
    /// The run as it happened.
    pub original: RunRecord,
    /// The replay's output.
    pub replayed: RunOutput,
    /// The replay's calls answered from the original run's.
    pub answered: usize,
    /// The replay's calls refused because the original made no such call.
    pub refused: usize,
}

impl Runtime {
    /// The session's durable events, from its first to its last now (no
    /// model deltas, no child runs' events): what forks and replays read.
    pub async fn events(&self, session: impl Into<SessionId>) -> Result<Vec<concierge_core::Event>> {
        let session = session.into();
        let engine = self.engine_or_err()?;
        let last = self.session(session.clone()).await?.last_seq();
        events_to(engine.as_ref(), &session, last).await
    }

    /// Forks `from` at its event `at` (the latest when `None`) into a new
    /// session: `options` gives its id (required, new) and the caller's
    /// tenant, which must be `from`'s. The fork has the conversation up to
    /// there and its agent; the original is untouched. A change made before
    /// the fork point is not made again in the fork (the same call is
    /// answered with the original's result), and the fork's `session_opened`
    /// event says so in words.
    pub async fn fork(&self, from: impl Into<SessionId>, at: Option<u64>, options: RunOptions) -> Result<Forked> {
        let from = from.into();
        let into = options.session_id.clone().ok_or(Error::MissingSessionId)?;
        SessionId::check_new(into.as_str()).map_err(Error::InvalidSessionId)?;
        let engine = self.engine_or_err()?.clone();
        let state = own_session(engine.as_ref(), &from, options.tenant.as_deref()).await?;
        let at = at.unwrap_or_else(|| state.last_seq());
        let events = events_to(engine.as_ref(), &from, state.last_seq()).await?;
        let fork = Fork::from_events(&from, &events, at)?;
        let origin = fork.origin.clone();
        let open = OpenSession {
            agent: fork.agent.clone(),
            named: state.is_pinned(),
            tenant: options.tenant.clone(),
            fork: Some(Box::new(fork)),
            at: crate::engine::now(),
        };
        engine.open(into.clone(), open, options.engine).await?;
        Ok(Forked { session: into, origin })
    }

    /// Runs `run` of `session` again, in a fork of the session just before
    /// it, with the same message, against another model or planner: its
    /// tools are not called (a call the original run made, with the same
    /// arguments, is answered with the recorded result; any other is
    /// refused), so a replay has no side effects. The original is untouched.
    pub async fn replay(&self, session: impl Into<SessionId>, run: RunId, options: ReplayOptions) -> Result<Replay> {
        let session = session.into();
        let engine = self.engine_or_err()?.clone();
        if let Some(model) = &options.model {
            let models = self.inner.executor.models();
            if !models.knows(model) {
                return Err(Error::ModelNotConfigured(model.clone()));
            }
        }
        let state = own_session(engine.as_ref(), &session, options.tenant.as_deref()).await?;
        let events = events_to(engine.as_ref(), &session, state.last_seq()).await?;
        let original = RunRecord::from_events(&events, &run)?;
        let into = options.session_id.clone().ok_or(Error::MissingSessionId)?;
        SessionId::check_new(into.as_str()).map_err(Error::InvalidSessionId)?;
        let fork = match original.started_seq {
            0 | 1 => None,
            seq => Some(Box::new(Fork::from_events(&session, &events, seq - 1)?)),
        };
        let open = OpenSession {
            agent: fork
                .as_ref()
                .map_or_else(|| original.agent.clone(), |f| f.agent.clone()),
            named: state.is_pinned(),
            tenant: options.tenant.clone(),
            fork,
            at: crate::engine::now(),
        };
        engine.open(into.clone(), open, Default::default()).await?;
        let mut run_options = RunOptions::new().session_id(into.clone());
        run_options.run_id = options.run_id.clone();
        run_options.tenant = options.tenant.clone();
        run_options.user = options.user.clone();
        let mut prepared = self.prepare_run(None, original.messages.clone(), run_options).await?;
        prepared.start.model = options.model.clone();
        prepared.start.replay = Some(original.calls.clone());
        if let Some(planner) = options.planner {
            prepared.setup = prepared.setup.every_planner(planner);
        }
        let replayed = prepared
            .engine
            .run(prepared.session.clone(), prepared.start, prepared.setup)
            .await?;
        let (answered, refused) = replay_counts(&replayed);
        Ok(Replay {
            session: into,
            original,
            replayed,
            answered,
            refused,
        })
    }
}

/// `session` if it is the caller's (its tenant is `tenant`) and not a
/// child run's; otherwise not found, as for a session that does not exist.
async fn own_session(engine: &dyn Engine, session: &SessionId, tenant: Option<&str>) -> Result<Session> {
    let state = engine
        .session(session.clone())
        .await?
        .filter(|s| s.tenant() == tenant)
        .ok_or_else(|| Error::SessionNotFound(session.clone()))?;
    if state.parent().is_some() {
        return Err(Error::RunStartFailed(
            "this is the conversation of an agent another agent called; fork or replay the conversation that called it"
                .into(),
        ));
    }
    Ok(state)
}

/// The session's durable events from the first through `last`.
async fn events_to(engine: &dyn Engine, session: &SessionId, last: u64) -> Result<Vec<concierge_core::Event>> {
    let mut events = Vec::new();
    if last == 0 {
        return Ok(events);
    }
    let mut stream = engine.subscribe(session.clone(), concierge_core::EventId::default());
    while let Some(event) = stream.next().await {
        let event = event?;
        if event.delta != 0 || &event.session != session {
            continue;
        }
        let seq = event.seq;
        events.push(event);
        if seq >= last {
            break;
        }
    }
    Ok(events)
}

/// How many of the replay's calls were answered from the original run, and
/// how many were refused because the original made no such call (read
/// from the run's own executions: no second read of its events).
fn replay_counts(replayed: &RunOutput) -> (usize, usize) {
    let calls = &replayed.tool_executions;
    let answered = calls.iter().filter(|c| c.reused_from.is_some()).count();
    let refused = calls
        .iter()
        .filter(|c| matches!(&c.outcome, ToolOutcome::Error(e) if e.message.starts_with(REPLAY_REFUSAL)))
        .count();
    (answered, refused)
}
