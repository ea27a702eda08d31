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
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

use super::cursor::{ChildPlace, StreamCursor, child_of, relative_to};
use crate::engine::Engine;
use crate::error::Result;

/// Session `root`'s events after `cursor`, with its children's (and
/// theirs) merged in, each with the cursor to resume after it.
pub(crate) fn follow(
    engine: Arc<dyn Engine>,
    root: SessionId,
    cursor: StreamCursor,
) -> BoxStream<'static, Result<(Event, StreamCursor)>> {
    let mut merged = Merged {
        streams: vec![Followed {
            session: None,
            stream: engine.subscribe(root.clone(), cursor.root),
            held: None,
        }],
        engine,
        root: root.clone(),
        children: HashMap::new(),
        stops: HashMap::new(),
        cursor: StreamCursor::from(cursor.root),
    };
    // The children the subscriber was following when it stopped: on from
    // where it was in each, with the stops it saw that the parent has not
    // answered yet.
    for (child, place) in cursor.child_sessions(&root) {
        let Some((parent, call)) = child.parent_and_call() else {
            continue;
        };
        merged.adopt(parent, call, child.clone(), place);
    }
    Box::pin(merged)
}

/// `root`'s events after `after`, with its children's merged in (from the
/// children started after `after`).
pub(crate) fn with_children(
    engine: Arc<dyn Engine>,
    root: SessionId,
    after: EventId,
) -> BoxStream<'static, Result<Event>> {
    follow(engine, root, StreamCursor::from(after))
        .map(|item| item.map(|(event, _)| event))
        .boxed()
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
    /// The subscribed session.
    root: SessionId,
    /// Where the subscriber is, after the last event returned.
    cursor: StreamCursor,
    /// The session's stream first, then each child's, in the order they started.
    streams: Vec<Followed>,
    /// The child session each parent call started.
    children: HashMap<(SessionId, CallId), SessionId>,
    /// Per child: how many of its stops (finished, or waiting for the
    /// person) were shown and not yet matched by the parent's event.
    stops: HashMap<SessionId, u32>,
}

impl Merged {
    /// Follows `child`, which answers `parent`'s `call`, from `place`.
    fn adopt(&mut self, parent: SessionId, call: CallId, child: SessionId, place: ChildPlace) {
        let key = (parent, call);
        if self.children.contains_key(&key) {
            return;
        }
        self.children.insert(key, child.clone());
        self.stops.insert(child.clone(), place.stops);
        if let Some(relative) = self.relative(&child) {
            self.cursor.children.insert(relative, place);
        }
        self.streams.push(Followed {
            session: Some(child.clone()),
            stream: self.engine.subscribe(child, place.at),
            held: None,
        });
    }

    /// How a cursor names `child`, below the subscribed session (`call_1.call_3`).
    fn relative(&self, child: &SessionId) -> Option<String> {
        relative_to(&self.root, child)
    }

    /// `event` is returned: the cursor moves past it.
    fn shown(&mut self, event: Event) -> Poll<Option<Result<(Event, StreamCursor)>>> {
        if event.session == self.root {
            self.cursor.root = event.id();
        } else if let Some(relative) = self.relative(&event.session) {
            if let Some(place) = self.cursor.children.get_mut(&relative) {
                place.at = event.id();
            }
        }
        // A call's result closes its child: nothing more of it is followed.
        if let EventKind::ToolFinished { call_id, .. } = &event.kind {
            if let Some(child) = self.children.get(&(event.session.clone(), call_id.clone())) {
                if let Some(relative) = self.relative(child) {
                    self.cursor.children.remove(&relative);
                }
            }
        }
        let root = self.root.clone();
        for (relative, place) in self.cursor.children.iter_mut() {
            let child = child_of(&root, relative);
            place.stops = self.stops.get(&child).copied().unwrap_or_default().min(u32::MAX - 1);
        }
        Poll::Ready(Some(Ok((event, self.cursor.clone()))))
    }

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
            self.adopt(
                event.session.clone(),
                call_id.clone(),
                child.clone(),
                ChildPlace::default(),
            );
        }
        let stop = matches!(
            event.kind,
            EventKind::RunFinished { .. } | EventKind::AwaitingConfirmation { .. } | EventKind::ChoiceRequested { .. }
        );
        if stop {
            if let Some(n) = self.stops.get_mut(&event.session) {
                *n = n.saturating_add(1);
            }
        }
    }
}

impl Stream for Merged {
    type Item = Result<(Event, StreamCursor)>;

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
                        return this.shown(event);
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
                        _ => return this.shown(event),
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
