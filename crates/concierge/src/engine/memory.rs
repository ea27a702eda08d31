//! The memory journal: nothing survives the process, but an idle session
//! costs little: its inputs and its parked state are kept compressed, as the
//! SQLite journal stores them, and past events are rebuilt by replay.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use concierge_core::{Catalog, Event, Input, Session, SessionId};
use futures::future::BoxFuture;

use super::codec::{decode, encode};
use super::{Appended, Cursor, Entry, Journal, JournalStats, Loaded, SessionSummary, StatsCell, replay_events};
use crate::error::Result;

struct Stored {
    summary: SessionSummary,
    /// Every accepted input, compressed.
    inputs: Vec<Vec<u8>>,
    /// The state when the session left memory, compressed.
    parked: Option<Vec<u8>>,
}

/// Keeps sessions in this process's memory.
#[derive(Default, Clone)]
pub struct MemoryJournal {
    sessions: Arc<Mutex<HashMap<SessionId, Stored>>>,
    stats: Arc<StatsCell>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    fn inputs(&self, session: &SessionId) -> Result<Option<Vec<(u64, Input)>>> {
        let encoded: Option<Vec<Vec<u8>>> = self
            .sessions
            .lock()
            .ok()
            .and_then(|s| s.get(session).map(|stored| stored.inputs.clone()));
        match encoded {
            Some(inputs) => Ok(Some(
                inputs
                    .iter()
                    .enumerate()
                    .map(|(i, bytes)| Ok((i as u64, decode::<Input>(bytes)?)))
                    .collect::<Result<Vec<_>>>()?,
            )),
            None => Ok(None),
        }
    }
}

impl Journal for MemoryJournal {
    fn append(&self, entry: Entry, cursor: Cursor) -> BoxFuture<'static, Result<Appended>> {
        let result = encode(&entry.input).map(|bytes| {
            let size = bytes.len() as u64;
            if let Ok(mut sessions) = self.sessions.lock() {
                let at = entry.input.at();
                let stored = sessions.entry(entry.session.clone()).or_insert_with(|| Stored {
                    summary: SessionSummary {
                        id: entry.session.clone(),
                        agent: entry.agent.clone().unwrap_or_else(|| "unknown".into()),
                        live: true,
                        updated_at: at,
                    },
                    inputs: Vec::new(),
                    parked: None,
                });
                if let Some(agent) = entry.agent {
                    stored.summary.agent = agent;
                }
                stored.summary.live = true;
                stored.summary.updated_at = at;
                stored.inputs.push(bytes);
            }
            self.stats.record(1, 0, size, 0);
            Appended {
                cursor,
                input_bytes: size,
                snapshot_bytes: 0,
            }
        });
        Box::pin(async move { result })
    }

    fn load(&self, session: &SessionId, full: bool) -> BoxFuture<'static, Result<Option<Loaded>>> {
        let parked = if full {
            None
        } else {
            self.sessions
                .lock()
                .ok()
                .and_then(|mut s| s.get_mut(session).and_then(|stored| stored.parked.take()))
        };
        let result = match parked {
            Some(bytes) => decode::<Session>(&bytes).map(|state| {
                let index = self
                    .sessions
                    .lock()
                    .ok()
                    .and_then(|s| s.get(session).map(|stored| stored.inputs.len() as u64))
                    .unwrap_or_default()
                    .saturating_sub(1);
                Some(Loaded {
                    snapshot: Some((index, state)),
                    inputs: Vec::new(),
                    cursor: Cursor::default(),
                    snapshot_bytes: 0,
                })
            }),
            None => self.inputs(session).map(|inputs| {
                inputs.map(|inputs| Loaded {
                    snapshot: None,
                    inputs,
                    cursor: Cursor::default(),
                    snapshot_bytes: 0,
                })
            }),
        };
        Box::pin(async move { result })
    }

    fn events(
        &self,
        session: &SessionId,
        from_seq: u64,
        catalog: Arc<Catalog>,
    ) -> BoxFuture<'static, Result<Vec<Event>>> {
        let result = self
            .inputs(session)
            .map(|inputs| replay_events(session, None, inputs.unwrap_or_default(), from_seq, &catalog));
        Box::pin(async move { result })
    }

    fn open_sessions(&self) -> Result<Vec<SessionId>> {
        Ok(Vec::new())
    }

    fn sessions(&self) -> BoxFuture<'static, Result<Vec<SessionSummary>>> {
        let mut all: Vec<SessionSummary> = self
            .sessions
            .lock()
            .map(|s| s.values().map(|stored| stored.summary.clone()).collect())
            .unwrap_or_default();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        Box::pin(async move { Ok(all) })
    }

    fn park(&self, session: Session, _cursor: Cursor, _index: u64) {
        let encoded = match encode(&session) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::error!(%error, "cannot park a session; it stays in its journal");
                return;
            }
        };
        if let Ok(mut sessions) = self.sessions.lock() {
            if let Some(stored) = sessions.get_mut(session.id()) {
                stored.summary.live = false;
                stored.parked = Some(encoded);
            }
        }
    }

    fn stats(&self) -> JournalStats {
        self.stats.get()
    }

    fn flush(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    fn save_toolset(&self, _name: &str, _tools: String) {}

    fn toolsets(&self) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
}
