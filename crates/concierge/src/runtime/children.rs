//! A session's event stream with its child runs' events merged in (agents
//! called as tools): each child's events, marked with the child session, in
//! causal order — a child's events come before the parent's event that
//! depends on them (the call's result, or the child's question asked through
//! the parent), whether they are replayed from the store or happen live.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use concierge_core::{CallId, Event, EventId, EventKind, SessionId};
use futures::Stream;
use futures::stream::BoxStream;

use crate::engine::Engine;
use crate::error::Result;

/// `events` of a session with its children's (and theirs) merged in.
pub(crate) fn with_children(
    engine: Arc<dyn Engine>,
    events: BoxStream<'static, Result<Event>>,
) -> BoxStream<'static, Result<Event>> {
    Box::pin(Merged {
        engine,
        streams: vec![Followed {
            session: None,
            stream: events,
            held: None,
        }],
        children: HashMap::new(),
        stops: HashMap::new(),
    })
}

struct Followed {
    /// The child session, for a child's stream.
    session: Option<SessionId>,
    stream: BoxStream<'static, Result<Event>>,
    /// An event that waits for a child's stop to be shown first.
    held: Option<(Event, SessionId)>,
}

struct Merged {
    engine: Arc<dyn Engine>,
    /// The session's stream first, then each child's, in the order they started.
    streams: Vec<Followed>,
    /// The child session each parent call started.
    children: HashMap<(SessionId, CallId), SessionId>,
    /// Per child: how many of its stops (finished, or waiting for the
    /// person) were shown and not yet matched by the parent's event.
    stops: HashMap<SessionId, u32>,
}

impl Merged {
    /// The child an event of the parent waits for: the call's result, or
    /// the question a child asks through the parent.
    fn depends_on(&self, event: &Event) -> Option<SessionId> {
        let child = match &event.kind {
            EventKind::ToolFinished { call_id, .. } => self.children.get(&(event.session.clone(), call_id.clone())),
            EventKind::AwaitingConfirmation { pending } => pending.session.as_ref(),
            EventKind::ChoiceRequested { pending } => pending.session.as_ref(),
            _ => None,
        }?;
        self.stops.contains_key(child).then(|| child.clone())
    }

    /// Takes one of `child`'s stops, if one was shown.
    fn take_stop(&mut self, child: &SessionId) -> bool {
        match self.stops.get_mut(child) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// Notes what an event says about children: one starting, one stopping.
    fn note(&mut self, event: &Event) {
        if let EventKind::ChildStarted { call_id, child, .. } = &event.kind {
            let key = (event.session.clone(), call_id.clone());
            if let std::collections::hash_map::Entry::Vacant(entry) = self.children.entry(key) {
                entry.insert(child.clone());
                self.stops.insert(child.clone(), 0);
                self.streams.push(Followed {
                    session: Some(child.clone()),
                    stream: self.engine.subscribe(child.clone(), EventId::default()),
                    held: None,
                });
            }
        }
        let stop = matches!(
            event.kind,
            EventKind::RunFinished { .. } | EventKind::AwaitingConfirmation { .. } | EventKind::ChoiceRequested { .. }
        );
        if stop {
            if let Some(n) = self.stops.get_mut(&event.session) {
                *n += 1;
            }
        }
    }
}

impl Stream for Merged {
    type Item = Result<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        // The newest streams first: a replayed child drains before its parent goes on.
        let mut i = this.streams.len();
        while i > 0 {
            i -= 1;
            if let Some((_, child)) = &this.streams[i].held {
                let child = child.clone();
                if this.take_stop(&child) {
                    if let Some((event, _)) = this.streams[i].held.take() {
                        return Poll::Ready(Some(Ok(event)));
                    }
                }
                continue;
            }
            match this.streams[i].stream.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(event))) => {
                    this.note(&event);
                    match this.depends_on(&event) {
                        Some(child) if !this.take_stop(&child) => {
                            this.streams[i].held = Some((event, child));
                            // Look again from the newest: the child may be ready.
                            i = this.streams.len();
                        }
                        _ => return Poll::Ready(Some(Ok(event))),
                    }
                }
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error))),
                // The session's own stream ended: so does the merge.
                Poll::Ready(None) if i == 0 => return Poll::Ready(None),
                Poll::Ready(None) => {
                    // A child's stream ended: nothing waits for it any more.
                    if let Some(child) = this.streams.remove(i).session {
                        this.stops.insert(child, u32::MAX);
                    }
                }
                Poll::Pending => {}
            }
        }
        Poll::Pending
    }
}
