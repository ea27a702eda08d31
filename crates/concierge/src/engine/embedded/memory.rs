//! The memory store: nothing survives the process, but an idle session
//! costs little: when a session leaves memory, its inputs are compressed
//! together and its state is kept compressed, as the SQLite store keeps
//! them, and past events are rebuilt by replay. While a session is in use
//! its new inputs stay plain JSON: compressing each on its own cost more
//! than the rest of what the store does for it. One process only, so it
//! owns every session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use concierge_core::{AgentId, Input, Session, SessionId};
use futures::future::BoxFuture;

use super::codec::{compress, decode, encode, encode_plain};
use super::store::{Appended, Claim, Cursor, Entry, LoadFrom, Loaded, Release, StatsCell, Store};
use crate::engine::{JournalStats, SessionSummary};
use crate::error::Result;

struct Stored {
    summary: SessionSummary,
    /// The inputs accepted before the session last left memory, compressed
    /// together each time it left (a JSON array per batch), oldest first.
    packed: Vec<Vec<u8>>,
    /// The inputs accepted since, each as plain JSON.
    fresh: Vec<Vec<u8>>,
    /// How many inputs were accepted in all.
    count: u64,
    /// The state when the session left memory, compressed.
    parked: Option<Vec<u8>>,
}

impl Stored {
    /// Compresses the fresh inputs into one batch (the session leaves memory).
    fn pack(&mut self) -> Result<()> {
        if self.fresh.is_empty() {
            return Ok(());
        }
        let array = [&b"["[..], &self.fresh.join(&b','), b"]"].concat();
        self.packed.push(compress(&array)?);
        self.fresh.clear();
        Ok(())
    }
}

/// Keeps sessions in this process's memory.
#[derive(Default, Clone)]
pub struct MemoryStore {
    sessions: Arc<Mutex<HashMap<SessionId, Arc<Mutex<Stored>>>>>,
    stats: Arc<StatsCell>,
}

impl MemoryStore {
    /// A store with no sessions yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn stored(&self, session: &SessionId) -> Option<Arc<Mutex<Stored>>> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.get(session).cloned()
    }

    fn decoded(&self, session: &SessionId, from: LoadFrom) -> Result<Option<Loaded>> {
        let Some(stored) = self.stored(session) else {
            return Ok(None);
        };
        let (packed, fresh, parked) = {
            let mut stored = stored.lock().unwrap_or_else(PoisonError::into_inner);
            if stored.count == 0 {
                return Ok(None);
            }
            let parked = match from {
                LoadFrom::Snapshot => stored.parked.take(),
                LoadFrom::Start => None,
            };
            match parked {
                Some(bytes) => (Vec::new(), Vec::new(), Some((stored.count - 1, bytes))),
                None => (stored.packed.clone(), stored.fresh.clone(), None),
            }
        };
        let snapshot = match parked {
            Some((index, bytes)) => Some((index, decode::<Session>(&bytes)?)),
            None => None,
        };
        let mut inputs = Vec::new();
        for batch in &packed {
            inputs.extend(decode::<Vec<Input>>(batch)?);
        }
        for input in &fresh {
            inputs.push(decode::<Input>(input)?);
        }
        let inputs = inputs
            .into_iter()
            .enumerate()
            .map(|(i, input)| (i as u64, input))
            .collect();
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
        let result = encode_plain(&entry.input).map(|bytes| {
            let size = bytes.len() as u64;
            let at = entry.input.at();
            let stored = {
                let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
                let stored = sessions.entry(entry.session.clone()).or_insert_with(|| {
                    Arc::new(Mutex::new(Stored {
                        summary: SessionSummary {
                            id: entry.session.clone(),
                            agent: entry.agent.clone().unwrap_or_else(|| "unknown".into()),
                            live: true,
                            updated_at: at,
                            tenant: None,
                        },
                        packed: Vec::new(),
                        fresh: Vec::new(),
                        count: 0,
                        parked: None,
                    }))
                });
                Arc::clone(stored)
            };
            let mut stored = stored.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(agent) = entry.agent {
                stored.summary.agent = agent;
            }
            if let Some(tenant) = entry.tenant {
                stored.summary.tenant = Some(tenant);
            }
            stored.summary.live = true;
            stored.summary.updated_at = at;
            stored.parked = None;
            stored.fresh.push(bytes);
            stored.count += 1;
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
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session);
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
        let Some(stored) = self.stored(session.id()) else {
            return;
        };
        let mut stored = stored.lock().unwrap_or_else(PoisonError::into_inner);
        stored.summary.live = release.unfinished;
        stored.summary.updated_at = stored.summary.updated_at.max(release.changed_at);
        stored.parked = Some(encoded);
        // Kept plain if they cannot be compressed: they still read.
        if let Err(error) = stored.pack() {
            tracing::error!(%error, "cannot compress a released session's inputs; they are kept as they are");
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
        let stored: Vec<Arc<Mutex<Stored>>> = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        let mut all: Vec<SessionSummary> = stored
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).summary.clone())
            .collect();
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use concierge_core::Timestamp;

    use super::*;

    fn ticks(loaded: &Loaded) -> Vec<(u64, u64)> {
        loaded.inputs.iter().map(|(i, input)| (*i, input.at().0)).collect()
    }

    /// Inputs stay in order and readable across the session leaving memory
    /// twice (each time its new inputs are compressed together), and the
    /// state kept when it left is what a load from the snapshot gets.
    #[tokio::test]
    async fn inputs_read_back_in_order_across_each_time_the_session_left_memory() {
        let store = MemoryStore::new();
        let cursor = Cursor { session_no: 1, head: 0 };
        let mut index = 0;
        for round in 0..3 {
            for _ in 0..4 {
                store.append(Entry::tick("s", index, index == 0), cursor).await.unwrap();
                index += 1;
            }
            if round < 2 {
                store.release(Release {
                    cursor,
                    index: index - 1,
                    unfinished: false,
                    state: Some(Session::new("s", "main")),
                    changed_at: Timestamp(index),
                });
            }
        }
        {
            let stored = store.stored(&"s".into()).unwrap();
            let stored = stored.lock().unwrap();
            assert_eq!((stored.packed.len(), stored.fresh.len(), stored.count), (2, 4, 12));
            assert!(
                stored.parked.is_none(),
                "an append after the release drops the kept state"
            );
        }
        let expected: Vec<(u64, u64)> = (0..12).map(|i| (i, i + 1)).collect();
        let loaded = store.load(&"s".into(), LoadFrom::Start).await.unwrap().unwrap();
        assert_eq!(ticks(&loaded), expected);
        assert!(loaded.snapshot.is_none());

        store.release(Release {
            cursor,
            index: 11,
            unfinished: true,
            state: Some(Session::new("s", "main")),
            changed_at: Timestamp(12),
        });
        let loaded = store.load(&"s".into(), LoadFrom::Snapshot).await.unwrap().unwrap();
        let (at, session) = loaded.snapshot.unwrap();
        assert_eq!((at, session.id().as_str()), (11, "s"));
        assert!(loaded.inputs.is_empty(), "the snapshot stands for every input");
        let loaded = store.load(&"s".into(), LoadFrom::Start).await.unwrap().unwrap();
        assert_eq!(ticks(&loaded), expected);
        let listed = store.sessions().await.unwrap();
        assert_eq!((listed.len(), listed[0].live), (1, true));
        assert!(store.load(&"t".into(), LoadFrom::Start).await.unwrap().is_none());
    }
}
