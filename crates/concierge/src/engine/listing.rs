//! Listing sessions: what a list shows of each one, and a page of one
//! tenant's sessions, the most recently active first.

use concierge_core::{AgentId, Session, SessionId, Timestamp};
use serde::Serialize;

use crate::error::{Error, Result};

/// What a front door checks of a session before it acts on it (whose it
/// is, whether it is a child run's, whether it has begun), read without
/// copying its history: [`Engine::facts`](super::Engine::facts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionFacts {
    /// The agent that has the conversation now.
    pub agent: AgentId,
    /// The tenant it belongs to, if its first input named one.
    pub tenant: Option<String>,
    /// Whether it is a child run's session (an agent called as a tool).
    pub child: bool,
    /// How many messages its history holds.
    pub messages: usize,
}

impl SessionFacts {
    /// The facts of `session`.
    pub fn of(session: &Session) -> Self {
        Self {
            agent: session.agent().clone(),
            tenant: session.tenant().map(str::to_string),
            child: session.parent().is_some(),
            messages: session.history().len(),
        }
    }
}

/// A session as listed by [`Engine::sessions`](super::Engine::sessions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// The session's id.
    pub id: SessionId,
    /// The agent that has the conversation now.
    pub agent: AgentId,
    /// Whether it has a run under way (in this process or another).
    pub live: bool,
    /// When its last input was accepted, in milliseconds since the Unix epoch.
    pub updated_at: Timestamp,
    /// The tenant it belongs to, if its first input named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// Whose sessions a list holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TenantScope {
    /// Everyone's (an operator's view).
    #[default]
    Any,
    /// One tenant's, or (`None`) those of no tenant.
    Only(Option<String>),
}

impl TenantScope {
    /// Whether a session of `tenant` is in scope.
    pub fn holds(&self, tenant: Option<&str>) -> bool {
        match self {
            TenantScope::Any => true,
            TenantScope::Only(only) => only.as_deref() == tenant,
        }
    }
}

/// Which sessions to list, a page at a time: the most recently active
/// first (then by id), after the last one of the previous page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionQuery {
    /// Whose sessions.
    pub tenant: TenantScope,
    /// The sessions of child runs too (by default only conversations: a
    /// child's is reached through its parent's).
    pub children: bool,
    /// Only the sessions of child runs below this one (their ids start
    /// with its id and `:`): what ending or erasing a conversation reaches.
    pub below: Option<SessionId>,
    /// The last session of the previous page; `None` for the first page.
    pub after: Option<SessionId>,
    /// At most this many sessions.
    pub limit: usize,
}

impl SessionQuery {
    /// The largest page an engine hands out.
    pub const MAX_LIMIT: usize = 1000;

    /// The first page (of [`SessionQuery::MAX_LIMIT`]) of everyone's conversations.
    pub fn new() -> Self {
        Self {
            tenant: TenantScope::Any,
            children: false,
            below: None,
            after: None,
            limit: Self::MAX_LIMIT,
        }
    }

    /// Only the sessions of `tenant` (`None`: of no tenant).
    pub fn tenant(mut self, tenant: Option<&str>) -> Self {
        self.tenant = TenantScope::Only(tenant.map(str::to_string));
        self
    }

    /// The page after `session` (the last one of the previous page).
    pub fn after(mut self, session: impl Into<SessionId>) -> Self {
        self.after = Some(session.into());
        self
    }

    /// At most `limit` sessions (1 to [`SessionQuery::MAX_LIMIT`]).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit.clamp(1, Self::MAX_LIMIT);
        self
    }

    /// Child runs' sessions too.
    pub fn with_children(mut self) -> Self {
        self.children = true;
        self
    }

    /// Only the child runs' sessions below `root` (an index finds them by
    /// id, whatever else is stored).
    pub fn below(mut self, root: impl Into<SessionId>) -> Self {
        self.below = Some(root.into());
        self.children = true;
        self
    }

    /// Whether `summary` is one this query lists (its cursor aside).
    pub fn holds(&self, summary: &SessionSummary) -> bool {
        self.tenant.holds(summary.tenant.as_deref()) && self.may_hold(&summary.id)
    }

    /// Whether a session of id `id` may be one this query lists, as far as
    /// its id tells (its tenant aside): what an engine can check before it
    /// reads the session.
    pub fn may_hold(&self, id: &SessionId) -> bool {
        (self.children || id.parent_and_call().is_none()) && self.below.as_ref().is_none_or(|root| id.reads_below(root))
    }

    /// The sessions of `all` (in any order) this query holds, its cursor
    /// and limit aside, the most recently active first: how an engine
    /// without an index lists.
    pub fn list_of(&self, mut all: Vec<SessionSummary>) -> Vec<SessionSummary> {
        all.retain(|s| self.holds(s));
        all.sort_by(newest_first);
        all
    }

    /// The page of `listed` (what [`SessionQuery::list_of`] keeps, in its
    /// order) this query asks for. An `after` that names no session there
    /// is [`Error::SessionNotFound`].
    pub fn page_of(&self, listed: Vec<SessionSummary>) -> Result<SessionPage> {
        let start = match &self.after {
            None => 0,
            Some(after) => match listed.iter().position(|s| &s.id == after) {
                Some(at) => at + 1,
                None => return Err(Error::SessionNotFound(after.clone())),
            },
        };
        let mut sessions: Vec<SessionSummary> = listed.into_iter().skip(start).take(self.limit + 1).collect();
        let more = sessions.len() > self.limit;
        sessions.truncate(self.limit);
        Ok(SessionPage { sessions, more })
    }
}

impl Default for SessionQuery {
    fn default() -> Self {
        Self::new()
    }
}

/// The order of a list: the most recently active first, then by id.
pub fn newest_first(a: &SessionSummary, b: &SessionSummary) -> std::cmp::Ordering {
    list_place(a.updated_at, &a.id).cmp(&list_place(b.updated_at, &b.id))
}

/// Where a session that last changed `at`, of id `id`, stands in a list:
/// places sort in the list's order ([`newest_first`]).
pub(crate) fn list_place(at: Timestamp, id: &SessionId) -> (std::cmp::Reverse<Timestamp>, &SessionId) {
    (std::cmp::Reverse(at), id)
}

/// A page of sessions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SessionPage {
    /// The sessions, the most recently active first.
    pub sessions: Vec<SessionSummary>,
    /// Whether more follow (ask again `after` the last one).
    pub more: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn summary(id: &str, tenant: Option<&str>, at: u64) -> SessionSummary {
        SessionSummary {
            id: SessionId::new(id),
            agent: AgentId::new("a"),
            live: false,
            updated_at: Timestamp(at),
            tenant: tenant.map(str::to_string),
        }
    }

    #[test]
    fn pages_hold_one_tenants_conversations_newest_first_and_follow_on() {
        let all = vec![
            summary("t/a", Some("t"), 1),
            summary("t/b", Some("t"), 3),
            summary("t/b:call_1", Some("t"), 4),
            summary("u/c", Some("u"), 5),
            summary("t/d", Some("t"), 3),
            summary("e", None, 9),
        ];
        let query = SessionQuery::new().tenant(Some("t")).limit(2);
        let first = query.page_of(query.list_of(all.clone())).unwrap();
        let ids: Vec<&str> = first.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["t/b", "t/d"]);
        assert!(first.more);
        let second = query.clone().after("t/d").page_of(query.list_of(all.clone())).unwrap();
        let ids: Vec<&str> = second.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["t/a"]);
        assert!(!second.more);
        // Another tenant's session is no cursor of this one's.
        assert!(matches!(
            query.clone().after("u/c").page_of(query.list_of(all.clone())),
            Err(Error::SessionNotFound(_))
        ));
        let untenanted = SessionQuery::new().tenant(None);
        let page = untenanted.page_of(untenanted.list_of(all.clone())).unwrap();
        assert_eq!(page.sessions.len(), 1);
        let everyone = SessionQuery::new().with_children();
        assert_eq!(
            everyone.page_of(everyone.list_of(all.clone())).unwrap().sessions.len(),
            6
        );
        // Below a conversation: its child runs only, whatever is named like it.
        let mut more = all;
        more.push(summary("t/b-2", Some("t"), 2));
        more.push(summary("t/b:call_1:call_4", Some("t"), 2));
        let below = SessionQuery::new().below("t/b");
        let mut ids: Vec<String> = below.list_of(more).into_iter().map(|s| s.id.to_string()).collect();
        ids.sort();
        assert_eq!(ids, ["t/b:call_1", "t/b:call_1:call_4"]);
    }
}
