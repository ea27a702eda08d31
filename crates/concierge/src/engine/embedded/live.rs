//! A session's live events: a broadcast channel for subscribers, and a ring
//! of the most recent events (model deltas included, which are never stored)
//! so that a subscriber that reconnects resumes where it stopped.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use concierge_core::{Event, EventId};
use tokio::sync::{Notify, broadcast};

/// Events kept for subscribers that reconnect.
const RECENT: usize = 1024;
/// Events a slow subscriber may fall behind before it catches up from the
/// kept events (then from the journal, for what is older than they reach:
/// there the model's deltas are skipped, the reply they make up is in the
/// journal). A broadcast channel reserves its slots
/// up front, per session with a subscriber: 32 keep an idle stream at about
/// 12 KiB (1,024 cost about 245 KiB), measured with 5,000 sessions each
/// followed by one stream.
const BUFFER: usize = 32;

struct Inner {
    tx: broadcast::Sender<Event>,
    recent: VecDeque<Event>,
}

/// One session's live events.
pub(crate) struct Live {
    inner: Mutex<Inner>,
    /// Rung when another process wrote to the session: subscribers read the journal again.
    changed: Notify,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                tx: broadcast::channel(BUFFER).0,
                recent: VecDeque::new(),
            }),
            changed: Notify::new(),
        }
    }
}

impl Live {
    /// Sends an event to subscribers and keeps it for those that reconnect.
    pub(crate) fn publish(&self, event: Event) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.recent.len() == RECENT {
            inner.recent.pop_front();
        }
        inner.recent.push_back(event.clone());
        let _ = inner.tx.send(event);
    }

    /// The kept events after `after`, and a receiver of the ones to come
    /// (taken together: nothing falls in between).
    pub(crate) fn subscribe(&self, after: EventId) -> (Vec<Event>, broadcast::Receiver<Event>) {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = inner.recent.iter().filter(|e| e.id() > after).cloned().collect();
        (kept, inner.tx.subscribe())
    }

    /// How many subscribers listen.
    pub(crate) fn listeners(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tx
            .receiver_count()
    }

    /// Tells subscribers the journal has news.
    pub(crate) fn poke(&self) {
        self.changed.notify_waiters();
    }

    /// Resolves when [`Live::poke`] is called.
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }
}
