//! Model deltas on Temporal: a model call that runs in this process sends
//! its streamed text to this process's subscribers of the session. Deltas
//! never enter the workflow's history (as on the embedded engine, they are
//! live only); a subscriber in another process than the model call sees
//! the reply when the run records it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use concierge_core::{Event, SessionId};
use tokio::sync::broadcast;

/// Deltas a slow subscriber may fall behind by before it misses some (the
/// reply is whole in the run's events either way).
const BUFFER: usize = 1024;

/// The sessions followed in this process, each with its subscribers.
#[derive(Default)]
pub(crate) struct Deltas {
    sessions: Mutex<HashMap<SessionId, broadcast::Sender<Event>>>,
}

impl Deltas {
    /// A receiver of `session`'s deltas from now on.
    pub(crate) fn subscribe(&self, session: &SessionId) -> broadcast::Receiver<Event> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, tx| tx.receiver_count() > 0);
        sessions
            .entry(session.clone())
            .or_insert_with(|| broadcast::channel(BUFFER).0)
            .subscribe()
    }

    /// Where `session`'s deltas go, when someone in this process follows it.
    pub(crate) fn sender(&self, session: &SessionId) -> Option<broadcast::Sender<Event>> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.get(session).filter(|tx| tx.receiver_count() > 0).cloned()
    }
}
