//! Erasing a person: their conversations' stored text, what is remembered
//! about them and their schedules, at their request.

use concierge_core::SessionId;
use serde_json::Value;

use super::Runtime;
use crate::engine::SessionQuery;
use crate::error::Result;
use crate::memory::MemoryOwner;

/// The blackboard key a run's user is kept under (`StartRun::user`).
const USER_KEY: &str = "user_id";

/// What [`Runtime::erase_person`] erased.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Erased {
    /// Conversations erased (with the child sessions of agents they called).
    pub sessions: usize,
    /// Memories forgotten.
    pub memories: usize,
    /// Schedules deleted.
    pub schedules: usize,
}

impl Runtime {
    /// Erases a session and the child sessions of the agents it called:
    /// their journals, snapshots and events, for good (a run in progress is
    /// ended first). `false` if there is no such session.
    pub async fn erase_session(&self, session: impl Into<SessionId>) -> Result<bool> {
        let session = session.into();
        let engine = self.engine_or_err()?.clone();
        for summary in engine.sessions_of(SessionQuery::new().below(session.clone())).await? {
            let below = engine.session(summary.id.clone()).await?;
            if below.is_some_and(|child| super::is_below(&child, &session)) {
                engine.erase(summary.id).await?;
            }
        }
        #[cfg(feature = "sqlite")]
        self.forget_webhooks_of(&session).await?;
        engine.erase(session).await
    }

    /// Erases everything stored of one person (`owner`: a user of a tenant):
    /// every conversation their runs were in (the sessions of that tenant
    /// whose runs name the user), what is remembered about them and their
    /// schedules. Sessions of no user are the deployment's one person's:
    /// an empty user erases those.
    pub async fn erase_person(&self, owner: &MemoryOwner) -> Result<Erased> {
        let engine = self.engine_or_err()?.clone();
        let mut erased = Erased::default();
        // The tenant's sessions only: no other tenant's session is read.
        // Children are listed too, and told apart by what the session says
        // (its parent), not by its id: a caller may name a conversation
        // with a ':' in it. A child's session is erased with its parent's.
        let query = SessionQuery::new().tenant(owner.tenant.as_deref()).with_children();
        for summary in engine.sessions_of(query).await? {
            let Some(session) = engine.session(summary.id.clone()).await? else {
                continue;
            };
            if session.parent().is_some() {
                continue;
            }
            let user = session.blackboard().available.get(USER_KEY).and_then(Value::as_str);
            if user.unwrap_or_default() == owner.user && self.erase_session(summary.id).await? {
                erased.sessions += 1;
            }
        }
        erased.memories = self.memories().forget_all(owner).await?;
        erased.schedules = self.schedules().delete_all(owner).await?;
        Ok(erased)
    }
}
