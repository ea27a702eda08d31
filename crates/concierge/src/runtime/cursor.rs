//! Where a subscriber is in a session's stream with its child runs merged
//! in: the session's last event, and for each child run still open, its
//! last event and the stops of it shown that the parent has not answered
//! yet. Written as one string (an SSE `Last-Event-ID`): `12` when no child
//! is open, `12;call_1=5.2/1;call_1.call_3=2/0` otherwise (each child named
//! by its session after the subscribed one's, `=` its last event, `/` the
//! stops shown). A child's session is `<parent>:<call>`
//! ([`SessionId::child`]); the cursor names it by its calls from the
//! subscribed session, joined by `.` (`call_1.call_3` is
//! `<subscribed>:call_1:call_3`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use concierge_core::{EventId, SessionId};

/// A subscriber's place in a merged event stream (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamCursor {
    /// The last event of the subscribed session itself.
    pub root: EventId,
    /// Per open child run, by its session relative to the subscribed one
    /// (`call_1`, `call_1.call_3`): its last event and unanswered stops.
    pub(crate) children: BTreeMap<String, ChildPlace>,
}

/// Where a subscriber is in one open child's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ChildPlace {
    pub(crate) at: EventId,
    pub(crate) stops: u32,
}

impl From<EventId> for StreamCursor {
    fn from(root: EventId) -> Self {
        Self {
            root,
            children: BTreeMap::new(),
        }
    }
}

impl StreamCursor {
    /// Whether the cursor names open child runs too.
    pub fn has_children(&self) -> bool {
        !self.children.is_empty()
    }

    /// Notes an open child (by its session relative to the subscribed one),
    /// its last event seen and the stops of it shown that the parent has
    /// not answered.
    pub(crate) fn open_child(&mut self, relative: String, at: EventId, stops: u32) {
        self.children.insert(relative, ChildPlace { at, stops });
    }

    /// The child sessions of `root` this cursor follows, parents before their children.
    pub(crate) fn child_sessions(&self, root: &SessionId) -> Vec<(SessionId, ChildPlace)> {
        let mut children: Vec<_> = self
            .children
            .iter()
            .map(|(relative, place)| (child_of(root, relative), *place))
            .collect();
        children.sort_by_key(|(session, _)| session.as_str().matches('.').count());
        children
    }
}

/// The session of `root`'s descendant named `relative` (`call_1.call_3`).
pub(crate) fn child_of(root: &SessionId, relative: &str) -> SessionId {
    let mut id = root.as_str().to_string();
    for call in relative.split('.') {
        id.push(SessionId::CHILD_SEPARATOR);
        id.push_str(call);
    }
    SessionId::new(id)
}

/// How `root`'s descendant `child` is named in a cursor (`call_1.call_3`);
/// `None` if `child` is not below `root`.
pub(crate) fn relative_to(root: &SessionId, child: &SessionId) -> Option<String> {
    let rest = child.as_str().strip_prefix(root.as_str())?;
    let rest = rest.strip_prefix(SessionId::CHILD_SEPARATOR)?;
    Some(rest.replace(SessionId::CHILD_SEPARATOR, "."))
}

impl fmt::Display for StreamCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)?;
        for (relative, place) in &self.children {
            write!(f, ";{relative}={}/{}", place.at, place.stops)?;
        }
        Ok(())
    }
}

/// A string that is not a stream position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a stream position: send the id of the last event seen, such as 12, 12.3 or 12;call_1=5/0")]
pub struct InvalidCursor(pub String);

impl FromStr for StreamCursor {
    type Err = InvalidCursor;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidCursor(text.to_string());
        let mut parts = text.trim().split(';');
        let root = parts.next().unwrap_or_default().parse::<EventId>().map_err(|_| bad())?;
        let mut children = BTreeMap::new();
        for part in parts {
            let (relative, place) = part.split_once('=').ok_or_else(bad)?;
            let (at, stops) = place.split_once('/').ok_or_else(bad)?;
            let valid_name = !relative.is_empty()
                && relative
                    .split('.')
                    .all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
            if !valid_name {
                return Err(bad());
            }
            let place = ChildPlace {
                at: at.parse().map_err(|_| bad())?,
                stops: stops.parse().map_err(|_| bad())?,
            };
            children.insert(relative.to_string(), place);
        }
        Ok(Self { root, children })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_cursor_reads_back_as_written() {
        for text in ["12", "12.3", "12;call_1=5.2/1;call_1.call_3=2/0"] {
            let cursor: StreamCursor = text.parse().unwrap();
            assert_eq!(cursor.to_string(), text);
        }
        let plain: StreamCursor = "7".parse().unwrap();
        assert_eq!(plain, StreamCursor::from(EventId::durable(7)));
        assert!(!plain.has_children());
    }

    #[test]
    fn malformed_cursors_are_refused() {
        for text in [
            "",
            "x",
            "12;",
            "12;call_1",
            "12;call_1=5",
            "12;=5/0",
            "12;a..b=1/0",
            "12;call_1=5/x",
        ] {
            assert!(text.parse::<StreamCursor>().is_err(), "{text:?}");
        }
    }

    #[test]
    fn children_are_followed_parents_first() {
        let cursor: StreamCursor = "3;call_1.call_2=1/0;call_1=4/0".parse().unwrap();
        let sessions: Vec<String> = cursor
            .child_sessions(&SessionId::new("s.1"))
            .into_iter()
            .map(|(s, _)| s.to_string())
            .collect();
        assert_eq!(sessions, ["s.1:call_1", "s.1:call_1:call_2"]);
        let child = SessionId::new("s.1:call_1:call_2");
        assert_eq!(
            relative_to(&SessionId::new("s.1"), &child).as_deref(),
            Some("call_1.call_2")
        );
        assert_eq!(relative_to(&SessionId::new("s"), &child), None);
    }

    #[test]
    fn places_past_what_a_store_can_hold_are_refused() {
        for text in [
            "18446744073709551615",
            "9223372036854775808",
            "12.4294967295",
            "12;call_1=18446744073709551615/0",
            "12;call_1=5/4294967296",
        ] {
            assert!(text.parse::<StreamCursor>().is_err(), "{text:?}");
        }
        let last: StreamCursor = "9223372036854775807".parse().unwrap();
        assert_eq!(last.root, EventId::durable(EventId::MAX_SEQ));
    }
}
