//! The memory store: nothing survives the process, but an idle session
//! costs little: its inputs and its released state are kept compressed, as
//! the SQLite store keeps them, and past events are rebuilt by replay. One
//! process only, so it owns every session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use concierge_core::{AgentId, Input, Session, SessionId};
use futures::future::BoxFuture;

use super::codec::{decode, encode};
use super::store::{Appended, Claim, Cursor, Entry, LoadFrom, Loaded, Release, StatsCell, Store};
use crate::engine::{JournalStats, SessionSummary};
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
pub struct MemoryStore {
    sessions: Arc<Mutex<HashMap<SessionId, Stored>>>,
    stats: Arc<StatsCell>,
}

impl MemoryStore {
    /// A store with no sessions yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn decoded(&self, session: &SessionId, from: LoadFrom) -> Result<Option<Loaded>> {
        let (inputs, parked) = {
            let Ok(mut sessions) = self.sessions.lock() else {
                return Ok(None);
            };
            let Some(stored) = sessions.get_mut(session) else {
                return Ok(None);
            };
            if stored.inputs.is_empty() {
                return Ok(None);
            }
            let parked = match from {
                LoadFrom::Snapshot => stored.parked.take(),
                LoadFrom::Start => None,
            };
            let inputs = if parked.is_some() {
                Vec::new()
            } else {
                stored.inputs.clone()
            };
            (inputs, parked.map(|p| (stored.inputs.len() as u64 - 1, p)))
        };
        let snapshot = match parked {
            Some((index, bytes)) => Some((index, decode::<Session>(&bytes)?)),
            None => None,
        };
        let inputs = inputs
            .iter()
            .enumerate()
            .map(|(i, bytes)| Ok((i as u64, decode::<Input>(bytes)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(Loaded {
            snapshot,
            inputs,
            cursor: Cursor { session_no: 1, head: 0 },
            ..Loaded::default()
        }))
    }
}

impl Store for MemoryStore {
    fn keeps_snapshots(&self) -> bool {
        false
    }

    fn claim(&self, _session: &SessionId, _agent: &AgentId) -> BoxFuture<'static, Result<Claim>> {
        Box::pin(async { Ok(Claim::Owned { session_no: 1 }) })
    }

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
                        tenant: None,
                    },
                    inputs: Vec::new(),
                    parked: None,
                });
                if let Some(agent) = entry.agent {
                    stored.summary.agent = agent;
                }
                if let Some(tenant) = entry.tenant {
                    stored.summary.tenant = Some(tenant);
                }
                stored.summary.live = true;
                stored.summary.updated_at = at;
                stored.parked = None;
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

    fn load(&self, session: &SessionId, from: LoadFrom) -> BoxFuture<'static, Result<Option<Loaded>>> {
        let result = self.decoded(session, from);
        Box::pin(async move { result })
    }

    fn erase(&self, session: &SessionId) -> BoxFuture<'static, Result<()>> {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(session);
        }
        Box::pin(async { Ok(()) })
    }

    fn release(&self, release: Release) {
        let Some(session) = release.state else {
            return;
        };
        let encoded = match encode(&session) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::error!(%error, "cannot keep a released session's state; it is rebuilt from its inputs");
                return;
            }
        };
        if let Ok(mut sessions) = self.sessions.lock() {
            if let Some(stored) = sessions.get_mut(session.id()) {
                stored.summary.live = release.unfinished;
                stored.summary.updated_at = stored.summary.updated_at.max(release.changed_at);
                stored.parked = Some(encoded);
            }
        }
    }

    fn disown(&self, _session: &SessionId) {}

    fn orphans(&self) -> BoxFuture<'static, Result<Vec<SessionId>>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn wanted(&self) -> BoxFuture<'static, Result<Vec<SessionId>>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn heartbeat(&self) -> BoxFuture<'static, Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn changes(&self, after: i64) -> BoxFuture<'static, Result<(i64, Vec<SessionId>)>> {
        // One process: its own actors publish every change.
        Box::pin(async move { Ok((after, Vec::new())) })
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

    fn save_catalog(&self, _version: &str, _recorded: String) {}

    fn save_toolset(&self, _name: &str, _tools: String) {}

    fn toolsets(&self) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }

    fn stats(&self) -> JournalStats {
        self.stats.get()
    }

    fn flush(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    fn close(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}
