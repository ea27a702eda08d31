//! A session's event stream: stored events fill gaps, live ones follow.

use std::collections::VecDeque;
use std::sync::Arc;

use concierge_core::{Event, EventId, SessionId};
use tokio::sync::broadcast;

use super::Shared;
use super::live::Live;
use super::replay::replay;
use super::store::LoadFrom;
use crate::error::Result;

pub(crate) struct Subscription {
    shared: Arc<Shared>,
    session: SessionId,
    live: Arc<Live>,
    rx: broadcast::Receiver<Event>,
    /// Events to deliver, in order.
    queue: VecDeque<Event>,
    /// The last event delivered (or the one the subscriber resumes after).
    last: EventId,
    /// Whether the first event was asked for yet.
    started: bool,
}

impl Subscription {
    /// A subscription from the kept events and a receiver taken together (so
    /// nothing published from then on is missed, and the model streams to
    /// this subscriber); the journal is read at the first poll.
    pub(crate) fn new(
        shared: Arc<Shared>,
        session: SessionId,
        live: Arc<Live>,
        after: EventId,
        kept: Vec<Event>,
        rx: broadcast::Receiver<Event>,
    ) -> Self {
        Self {
            shared,
            session,
            live,
            rx,
            queue: kept.into(),
            last: after,
            started: false,
        }
    }
}

impl Subscription {
    /// Durable events after `last` (and before `until`) from the journal.
    async fn stored(&self, until: Option<u64>) -> Result<Vec<Event>> {
        let from = self.last.seq + 1;
        let store = &self.shared.store;
        let mut loaded = store.load(&self.session, LoadFrom::Snapshot).await?;
        if loaded
            .as_ref()
            .and_then(|l| l.snapshot.as_ref())
            .is_some_and(|(_, s)| s.last_seq() >= from)
        {
            loaded = store.load(&self.session, LoadFrom::Start).await?;
        }
        let Some(loaded) = loaded else {
            return Ok(Vec::new());
        };
        let replayed = replay(&self.session, loaded, &self.shared.parts.catalogs, Some(from))?;
        Ok(replayed
            .events
            .into_iter()
            .filter(|e| until.is_none_or(|u| e.seq < u))
            .collect())
    }

    /// Puts the journal's events before what is queued.
    async fn fill(&mut self, until: Option<u64>) -> Result<()> {
        let mut events: VecDeque<Event> = self.stored(until).await?.into();
        events.extend(self.queue.drain(..));
        self.queue = events;
        Ok(())
    }

    /// Starts again from the session's kept events after the last one
    /// delivered (model deltas included), with a new receiver taken
    /// together with them: for a subscriber that fell behind the live
    /// channel.
    fn rejoin(&mut self) {
        let (kept, rx) = self.live.subscribe(self.last);
        self.rx = rx;
        self.queue = kept.into();
    }

    /// Fills from the journal what comes before the first durable event
    /// queued, unless it follows the last one delivered.
    async fn fill_gap(&mut self) -> Result<()> {
        let first_durable = self
            .queue
            .iter()
            .find(|e| e.delta == 0 && e.seq > self.last.seq)
            .map(|e| e.seq);
        if first_durable != Some(self.last.seq + 1) {
            self.fill(first_durable).await?;
        }
        Ok(())
    }

    fn take(&mut self) -> Option<Event> {
        while let Some(event) = self.queue.pop_front() {
            if event.id() > self.last {
                self.last = event.id();
                return Some(event);
            }
        }
        None
    }

    pub(crate) async fn next(mut self) -> Option<(Result<Event>, Self)> {
        if !self.started {
            // Live events so far keep their order (model deltas included);
            // the journal fills only what comes before the first of them.
            self.started = true;
            loop {
                match self.rx.try_recv() {
                    Ok(event) => self.queue.push_back(event),
                    Err(broadcast::error::TryRecvError::Lagged(_)) => self.rejoin(),
                    Err(_) => break,
                }
            }
            if let Err(error) = self.fill_gap().await {
                return Some((Err(error), self));
            }
        }
        loop {
            if let Some(event) = self.take() {
                return Some((Ok(event), self));
            }
            let received = tokio::select! {
                received = self.rx.recv() => Some(received),
                () = self.live.changed() => None,
            };
            match received {
                Some(Ok(event)) => {
                    if event.id() <= self.last {
                        continue;
                    }
                    if event.delta == 0 && event.seq > self.last.seq + 1 {
                        // A gap: the journal has everything durable before this event.
                        let until = event.seq;
                        self.queue.push_back(event);
                        if let Err(error) = self.fill(Some(until)).await {
                            return Some((Err(error), self));
                        }
                    } else {
                        self.queue.push_back(event);
                    }
                }
                Some(Err(broadcast::error::RecvError::Lagged(_))) => {
                    // Fell behind: what was missed is in the session's kept
                    // events, or older than they reach and in the journal.
                    self.rejoin();
                    if let Err(error) = self.fill_gap().await {
                        return Some((Err(error), self));
                    }
                }
                None => {
                    // Another process wrote: read the journal again.
                    if let Err(error) = self.fill(None).await {
                        return Some((Err(error), self));
                    }
                }
                Some(Err(broadcast::error::RecvError::Closed)) => return None,
            }
        }
    }
}
