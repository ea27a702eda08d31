//! What the session list learns from this process of the sessions it holds:
//! whether a run is under way, and when each last changed (the store hears
//! it when they leave memory), kept in a list's order for each tenant so a
//! page finds the ones it holds without looking at every one.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Mutex;

use concierge_core::{AgentId, SessionId, Timestamp};

use super::lock;
use crate::engine::listing::list_place;
use crate::engine::{SessionQuery, SessionSummary, TenantScope};

/// What the session list shows of a session this process holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    /// Whether a run is under way.
    pub(crate) live: bool,
    /// When its last input was accepted here (0: none yet).
    pub(crate) changed_at: Timestamp,
    /// The tenant it belongs to (which lists hold it).
    pub(crate) tenant: Option<String>,
    /// The agent that has the conversation now.
    pub(crate) agent: AgentId,
}

impl Activity {
    /// `summary`, as read from the store, with what this process knows better.
    pub(crate) fn overlay(&self, summary: &mut SessionSummary) {
        summary.live = self.live;
        summary.updated_at = summary.updated_at.max(self.changed_at);
    }

    /// Whether it took an input here: the store has an older time for it
    /// until this process lets it go.
    pub(crate) fn changed_here(&self) -> bool {
        self.changed_at.0 > 0
    }

    /// Session `id` as a list shows it, from what this process knows (for
    /// one that took an input here, the store's time is older).
    fn summary(&self, id: &SessionId) -> SessionSummary {
        SessionSummary {
            id: id.clone(),
            agent: self.agent.clone(),
            live: self.live,
            updated_at: self.changed_at,
            tenant: self.tenant.clone(),
        }
    }
}

/// Where a session stands in a list: when it last changed, then its id.
pub(crate) type Place = (Timestamp, SessionId);

/// Where a session that changed `at`, of id `id`, stands in [`Activities`]'
/// lists: its place in a list ([`list_place`]), kept.
fn key(at: Timestamp, id: &SessionId) -> (Reverse<Timestamp>, SessionId) {
    let (at, id) = list_place(at, id);
    (at, id.clone())
}

/// The sessions this process holds, as the session list sees them.
#[derive(Default)]
pub struct Activities(Mutex<Index>);

#[derive(Default)]
struct Index {
    by_id: HashMap<SessionId, Activity>,
    /// Those that took an input here, in a list's order, by tenant.
    changed: HashMap<Option<String>, BTreeSet<(Reverse<Timestamp>, SessionId)>>,
}

impl Index {
    fn unlist(&mut self, id: &SessionId, old: &Activity) {
        if !old.changed_here() {
            return;
        }
        if let Some(listed) = self.changed.get_mut(&old.tenant) {
            listed.remove(&key(old.changed_at, id));
            if listed.is_empty() {
                self.changed.remove(&old.tenant);
            }
        }
    }
}

impl Activities {
    /// What `id` shows now.
    pub(crate) fn set(&self, id: &SessionId, activity: Activity) {
        let mut index = lock(&self.0);
        let listed = activity
            .changed_here()
            .then(|| (activity.tenant.clone(), key(activity.changed_at, id)));
        if let Some(old) = index.by_id.insert(id.clone(), activity) {
            index.unlist(id, &old);
        }
        if let Some((tenant, key)) = listed {
            index.changed.entry(tenant).or_default().insert(key);
        }
    }

    /// `id` left memory.
    pub(crate) fn remove(&self, id: &SessionId) {
        let mut index = lock(&self.0);
        if let Some(old) = index.by_id.remove(id) {
            index.unlist(id, &old);
        }
    }

    /// Whether this process holds `id` and it took an input here (the
    /// store has an older time for it).
    pub(crate) fn changed_here(&self, id: &SessionId) -> bool {
        lock(&self.0).by_id.get(id).is_some_and(Activity::changed_here)
    }

    /// `listed`, as read from the store, with what this process knows better.
    pub(crate) fn overlay(&self, listed: &mut [SessionSummary]) {
        let index = lock(&self.0);
        for summary in listed {
            if let Some(now) = index.by_id.get(&summary.id) {
                now.overlay(summary);
            }
        }
    }

    /// `id` as a list shows it, if it took an input here and `query` holds it.
    pub(crate) fn summary(&self, id: &SessionId, query: &SessionQuery) -> Option<SessionSummary> {
        let index = lock(&self.0);
        let activity = index.by_id.get(id).filter(|a| a.changed_here())?;
        let summary = activity.summary(id);
        query.holds(&summary).then_some(summary)
    }

    /// Up to `n` of the sessions that took an input here that `query`
    /// holds (one tenant's), as a list shows them, in its order, after `from`.
    pub(crate) fn changed_after(&self, query: &SessionQuery, from: Option<&Place>, n: usize) -> Vec<SessionSummary> {
        let TenantScope::Only(tenant) = &query.tenant else {
            return Vec::new();
        };
        let index = lock(&self.0);
        let Some(listed) = index.changed.get(tenant) else {
            return Vec::new();
        };
        let start = match from {
            Some((at, id)) => Bound::Excluded(key(*at, id)),
            None => Bound::Unbounded,
        };
        listed
            .range((start, Bound::Unbounded))
            .filter(|(_, id)| query.may_hold(id))
            .filter_map(|(_, id)| index.by_id.get(id).map(|a| a.summary(id)))
            .take(n)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity(at: u64, tenant: &str) -> Activity {
        Activity {
            live: false,
            changed_at: Timestamp(at),
            tenant: Some(tenant.into()),
            agent: AgentId::new("desk"),
        }
    }

    fn ids(found: Vec<SessionSummary>) -> Vec<String> {
        found.into_iter().map(|s| s.id.to_string()).collect()
    }

    #[test]
    fn a_tenants_sessions_that_changed_here_come_newest_first_and_move_when_they_change() {
        let held = Activities::default();
        held.set(&"a".into(), activity(10, "t"));
        held.set(&"b".into(), activity(30, "t"));
        held.set(&"c".into(), activity(20, "t"));
        held.set(&"c:call_1".into(), activity(40, "t"));
        held.set(&"d".into(), activity(50, "u"));
        held.set(&"e".into(), activity(0, "t"));
        let t = SessionQuery::new().tenant(Some("t"));
        assert_eq!(ids(held.changed_after(&t, None, 10)), ["b", "c", "a"]);
        assert_eq!(
            ids(held.changed_after(&t.clone().with_children(), None, 2)),
            ["c:call_1", "b"]
        );
        let from = (Timestamp(30), SessionId::from("b"));
        assert_eq!(ids(held.changed_after(&t, Some(&from), 10)), ["c", "a"]);
        // A change moves it; leaving memory takes it out.
        held.set(&"a".into(), activity(60, "t"));
        assert_eq!(ids(held.changed_after(&t, None, 10)), ["a", "b", "c"]);
        held.remove(&"b".into());
        assert_eq!(ids(held.changed_after(&t, None, 10)), ["a", "c"]);
        assert_eq!(
            ids(held.changed_after(&SessionQuery::new().tenant(Some("u")), None, 10)),
            ["d"]
        );
        assert!(held.changed_after(&SessionQuery::new(), None, 10).is_empty());
        assert!(!held.changed_here(&"e".into()) && held.changed_here(&"a".into()));
        let a = held.summary(&"a".into(), &t).unwrap();
        assert_eq!(
            (a.updated_at, a.agent.as_str(), a.tenant.as_deref()),
            (Timestamp(60), "desk", Some("t"))
        );
        assert!(
            held.summary(&"a".into(), &SessionQuery::new().tenant(Some("u")))
                .is_none()
        );
        assert!(held.summary(&"e".into(), &t).is_none());
    }
}
