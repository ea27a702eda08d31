//! A subscription to a session's events: the workflow's `events` query,
//! polled, and the model deltas of calls run in this process.

use std::collections::VecDeque;
use std::sync::Arc;

use concierge::Result;
use concierge_core::{Event, EventId, SessionId};
use futures::stream::BoxStream;
use tokio::sync::broadcast;

use super::TemporalEngine;

/// A subscription's state between polls.
struct Follow {
    engine: Arc<TemporalEngine>,
    session: SessionId,
    /// Where the subscriber asked to start (after it).
    from: EventId,
    /// The last durable event given.
    after: u64,
    /// Durable events read, not yet given.
    buffered: VecDeque<Event>,
    /// Model deltas of calls in this process, and those received, not yet
    /// given (each goes right after the durable event it follows).
    deltas: broadcast::Receiver<Event>,
    pending: VecDeque<Event>,
    /// Whether the last query brought nothing new (a delta ahead then
    /// waits for the next poll instead of asking again at once).
    dry: bool,
    /// When to ask the query next if nothing comes first (the first time:
    /// at once).
    next_poll: tokio::time::Instant,
    done: bool,
}

impl Follow {
    /// Takes the deltas received meanwhile.
    fn receive(&mut self) {
        loop {
            match self.deltas.try_recv() {
                Ok(delta) => self.pending.push_back(delta),
                // A slow reader misses some deltas; the reply is whole in
                // the run's events.
                Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                Err(_) => return,
            }
        }
    }

    /// The next event in order, from what is at hand: a delta right after
    /// the durable event it follows (one whose place was passed is
    /// dropped), else the next durable event.
    fn next_at_hand(&mut self) -> Option<Event> {
        while let Some(delta) = self.pending.front() {
            if delta.seq > self.after {
                break;
            }
            let delta = self.pending.pop_front()?;
            // (One the subscriber had before it came back is not given again.)
            if delta.seq == self.after && delta.id() > self.from {
                return Some(delta);
            }
        }
        let event = self.buffered.pop_front()?;
        self.after = event.seq;
        Some(event)
    }
}

/// The session's events after `after`: pages from the `events` query,
/// asked again every
/// [`TemporalConfig::poll_interval`](crate::TemporalConfig::poll_interval)
/// while none come (a session that does not exist yet is followed from its
/// first event), and the model deltas of calls that run in this process,
/// each given after the durable event it follows (asking the query at once
/// when a delta comes before it). The stream ends after the last event of
/// an ended session.
pub(super) fn follow(
    engine: Arc<TemporalEngine>,
    session: SessionId,
    after: EventId,
) -> BoxStream<'static, Result<Event>> {
    let state = Follow {
        deltas: engine.deltas.subscribe(&session),
        engine,
        session,
        from: after,
        after: after.seq,
        buffered: VecDeque::new(),
        pending: VecDeque::new(),
        dry: false,
        next_poll: tokio::time::Instant::now(),
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            st.receive();
            if let Some(event) = st.next_at_hand() {
                return Some((Ok(event), st));
            }
            if st.done {
                return None;
            }
            // A delta ahead of the events read: read them now.
            let ahead = !st.dry && st.pending.front().is_some_and(|d| d.seq > st.after);
            if !ahead {
                // (The time of the next poll stays while deltas come.)
                let pause = tokio::time::sleep_until(st.next_poll);
                tokio::select! {
                    () = pause => {}
                    delta = st.deltas.recv() => match delta {
                        Ok(delta) => {
                            st.pending.push_back(delta);
                            continue;
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        // (Not while this stream holds the engine.)
                        Err(broadcast::error::RecvError::Closed) => tokio::time::sleep_until(st.next_poll).await,
                    }
                }
            }
            st.next_poll = tokio::time::Instant::now() + st.engine.config.poll_interval;
            match st.engine.query_events(&st.session, st.after).await {
                Ok(Some(page)) => {
                    st.done = page.ended;
                    st.dry = page.events.is_empty();
                    st.buffered.extend(page.events);
                }
                // Not begun yet: its events come once it does.
                Ok(None) => st.dry = true,
                Err(error) => {
                    st.done = true;
                    return Some((Err(error), st));
                }
            }
        }
    }))
}
