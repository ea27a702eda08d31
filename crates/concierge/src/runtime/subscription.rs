//! A session's event stream: stored events fill gaps, live ones follow.

use std::collections::VecDeque;
use std::sync::Arc;

use concierge_core::{Catalog, Event, EventKind, SessionId};
use tokio::sync::broadcast;

use crate::engine::SharedJournal;
use crate::error::Result;

pub(crate) struct Subscription {
    pub(crate) rx: broadcast::Receiver<Event>,
    pub(crate) journal: SharedJournal,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) session: SessionId,
    /// Stored events to deliver first (they fill a gap before the live ones).
    pub(crate) backlog: VecDeque<Event>,
    /// Live events already taken from the channel, in order.
    pub(crate) live: VecDeque<Event>,
    pub(crate) last: u64,
    pub(crate) started: bool,
}

impl Subscription {
    /// Fills the backlog from the journal: events after `last` and before `until`.
    async fn fill(&mut self, until: Option<u64>) -> Result<()> {
        let events = self
            .journal
            .events(&self.session, self.last + 1, self.catalog.clone())
            .await?;
        self.backlog = events.into_iter().filter(|e| until.is_none_or(|u| e.seq < u)).collect();
        Ok(())
    }

    /// The next live event, from what was drained or from the channel.
    async fn next_live(&mut self) -> Option<std::result::Result<Event, broadcast::error::RecvError>> {
        if let Some(event) = self.live.pop_front() {
            return Some(Ok(event));
        }
        match self.rx.recv().await {
            Err(broadcast::error::RecvError::Closed) => None,
            other => Some(other),
        }
    }

    pub(crate) async fn next(mut self) -> Option<(Result<Event>, Self)> {
        if !self.started {
            // Take what the channel holds already, so live events (deltas
            // included) keep their order; the journal only fills the gap
            // before the first of them.
            self.started = true;
            while let Ok(event) = self.rx.try_recv() {
                self.live.push_back(event);
            }
            let first = self
                .live
                .iter()
                .find(|e| !matches!(e.kind, EventKind::ModelDelta { .. }))
                .map(|e| e.seq);
            if first != Some(self.last + 1) {
                if let Err(error) = self.fill(first).await {
                    return Some((Err(error), self));
                }
            }
        }
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if event.seq <= self.last {
                    continue;
                }
                self.last = event.seq;
                return Some((Ok(event), self));
            }
            match self.next_live().await? {
                Ok(event) if matches!(event.kind, EventKind::ModelDelta { .. }) => {
                    if event.seq >= self.last {
                        return Some((Ok(event), self));
                    }
                }
                Ok(event) if event.seq <= self.last => {}
                Ok(event) if event.seq == self.last + 1 => {
                    self.last = event.seq;
                    return Some((Ok(event), self));
                }
                Ok(event) => {
                    // A gap: the journal has everything durable before this event.
                    let until = event.seq;
                    self.live.push_front(event);
                    if let Err(error) = self.fill(Some(until)).await {
                        return Some((Err(error), self));
                    }
                }
                Err(_) => {
                    // Lagged: some live events were dropped; read them back.
                    if let Err(error) = self.fill(None).await {
                        return Some((Err(error), self));
                    }
                }
            }
        }
    }
}
