//! The memory journal: sessions live in this process only.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use concierge_core::{Catalog, Event, Session, SessionId};
use futures::future::BoxFuture;

use super::{Appended, Cursor, Entry, Journal, JournalStats, Loaded, SessionSummary, StatsCell};
use crate::error::Result;

/// How many events per session the memory journal keeps for late subscribers.
const EVENTS_KEPT: usize = 1024;

#[derive(Default)]
struct State {
    parked: HashMap<SessionId, Session>,
    events: HashMap<SessionId, VecDeque<Event>>,
    sessions: HashMap<SessionId, SessionSummary>,
}

/// Keeps parked sessions, their last events and their status in memory.
#[derive(Default, Clone)]
pub(crate) struct MemoryJournal {
    state: Arc<Mutex<State>>,
    stats: Arc<StatsCell>,
}

impl MemoryJournal {
    pub(crate) fn new() -> Self {
        Self::default()
    }
}

impl Journal for MemoryJournal {
    fn append(&self, entry: Entry, cursor: Cursor) -> BoxFuture<'static, Result<Appended>> {
        if let Ok(mut state) = self.state.lock() {
            let kept = state.events.entry(entry.session.clone()).or_default();
            for event in entry.events {
                if kept.len() == EVENTS_KEPT {
                    kept.pop_front();
                }
                kept.push_back(event);
            }
            let at = entry.input.at();
            let summary = state.sessions.entry(entry.session.clone()).or_insert_with(|| SessionSummary {
                id: entry.session.clone(),
                agent: entry.agent.clone().unwrap_or_else(|| "unknown".into()),
                live: true,
                updated_at: at,
            });
            if let Some(agent) = entry.agent {
                summary.agent = agent;
            }
            summary.live = true;
            summary.updated_at = at;
        }
        self.stats.record(1, 0, 0, 0);
        Box::pin(async move {
            Ok(Appended {
                cursor,
                input_bytes: 0,
                snapshot_bytes: 0,
            })
        })
    }

    fn load(&self, session: &SessionId, _full: bool) -> BoxFuture<'static, Result<Option<Loaded>>> {
        let parked = self.state.lock().ok().and_then(|mut s| s.parked.remove(session));
        Box::pin(async move {
            Ok(parked.map(|s| Loaded {
                snapshot: Some((0, s)),
                inputs: Vec::new(),
                cursor: Cursor::default(),
                snapshot_bytes: 0,
            }))
        })
    }

    fn events(&self, session: &SessionId, from_seq: u64, _catalog: Arc<Catalog>) -> BoxFuture<'static, Result<Vec<Event>>> {
        let events = self
            .state
            .lock()
            .ok()
            .and_then(|s| {
                s.events
                    .get(session)
                    .map(|e| e.iter().filter(|e| e.seq >= from_seq).cloned().collect())
            })
            .unwrap_or_default();
        Box::pin(async move { Ok(events) })
    }

    fn open_sessions(&self) -> Result<Vec<SessionId>> {
        Ok(Vec::new())
    }

    fn sessions(&self) -> BoxFuture<'static, Result<Vec<SessionSummary>>> {
        let mut all: Vec<SessionSummary> = self
            .state
            .lock()
            .map(|s| s.sessions.values().cloned().collect())
            .unwrap_or_default();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        Box::pin(async move { Ok(all) })
    }

    fn park(&self, session: Session, _cursor: Cursor, _index: u64) {
        if let Ok(mut state) = self.state.lock() {
            if let Some(summary) = state.sessions.get_mut(session.id()) {
                summary.live = false;
            }
            state.parked.insert(session.id().clone(), session);
        }
    }

    fn stats(&self) -> JournalStats {
        self.stats.get()
    }

    fn flush(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}
