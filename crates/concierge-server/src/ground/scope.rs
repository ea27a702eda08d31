//! Each tenant's own id space. A client names a session by the id it chose
//! (or the server chose for it); the engine keeps it as
//! `<tenant>/<id>` ([`SessionId::in_tenant`]), so two tenants may both
//! have a session `crm`, neither can learn that the other's exists, and
//! every session a request reaches is its caller's by construction. Child
//! runs' sessions (`<parent>:<call>`) cannot be named by a client at all:
//! client ids never contain `:`.
//!
//! What the server sends back names sessions the client's way again: ids
//! in views, and the sessions events belong to (a stream's own session and
//! its child runs, all below the subscribed one).

use concierge::core::EventKind;
use concierge::{Event, SessionId};

use concierge::memory::MemoryOwner;

use super::auth::Caller;

impl Caller {
    /// The session the caller names `local`: in its tenant's id space.
    pub fn session_id(&self, local: &str) -> SessionId {
        SessionId::in_tenant(self.tenant.as_deref(), local)
    }

    /// What the caller calls session `id` (its own id space's name).
    pub fn local_id(&self, id: &SessionId) -> String {
        id.local_in(self.tenant.as_deref()).unwrap_or(id.as_str()).to_string()
    }

    /// The person the request speaks for, whose memories and schedules it
    /// reaches: the token's user in its tenant (on a server without tokens,
    /// the deployment's one person).
    pub fn person(&self) -> MemoryOwner {
        MemoryOwner::of(self.tenant.as_deref(), self.user.as_deref().unwrap_or_default())
    }
}

/// How a stream of session `root`, which the client calls `label`, names
/// sessions: `root` and the child runs below it, the client's way.
#[derive(Clone, Debug)]
pub struct Relabel {
    root: SessionId,
    label: SessionId,
}

impl Relabel {
    /// For the stream of `root`, which the client calls `label`.
    pub fn new(root: SessionId, label: impl Into<SessionId>) -> Self {
        Self {
            root,
            label: label.into(),
        }
    }

    /// Whether names stay as they are (a caller without a tenant).
    fn is_identity(&self) -> bool {
        self.root == self.label
    }

    /// `id` (the root or a session below it) the client's way.
    pub fn session(&self, id: &SessionId) -> SessionId {
        if self.is_identity() {
            return id.clone();
        }
        match id.as_str().strip_prefix(self.root.as_str()) {
            Some(rest) => SessionId::new(format!("{}{rest}", self.label)),
            None => id.clone(),
        }
    }

    /// `id`, another session of the root's tenant (the one a fork came
    /// from), the client's way.
    fn sibling(&self, id: &SessionId) -> SessionId {
        let tenant = self.root.as_str().strip_suffix(self.label.as_str());
        match tenant.and_then(|prefix| id.as_str().strip_prefix(prefix)) {
            Some(local) => SessionId::new(local),
            None => id.clone(),
        }
    }

    /// `event` with the sessions it names the client's way.
    pub fn event(&self, mut event: Event) -> Event {
        if self.is_identity() {
            return event;
        }
        event.session = self.session(&event.session);
        match &mut event.kind {
            EventKind::ChildStarted { child, .. } => *child = self.session(child),
            EventKind::AwaitingConfirmation { pending } => {
                pending.session = pending.session.as_ref().map(|s| self.session(s));
            }
            EventKind::ChoiceRequested { pending } => {
                pending.session = pending.session.as_ref().map(|s| self.session(s));
            }
            EventKind::SessionOpened {
                forked_from: Some(origin),
                ..
            } => origin.session = self.sibling(&origin.session),
            _ => {}
        }
        event
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenants_sessions_read_back_as_its_client_named_them() {
        let acme = Caller {
            tenant: Some("acme".into()),
            user: Some("jordan".into()),
        };
        let id = acme.session_id("crm");
        assert_eq!(id.as_str(), "acme/crm");
        assert_eq!(acme.local_id(&id), "crm");
        let relabel = Relabel::new(id.clone(), "crm");
        let child = id.child(&"call_1".into()).child(&"call_2".into());
        assert_eq!(relabel.session(&child).as_str(), "crm:call_1:call_2");
        let open = Caller::default();
        assert_eq!(open.session_id("crm").as_str(), "crm");
        // The session a fork came from, named in its first event.
        let forked = concierge::Event {
            seq: 1,
            delta: 0,
            at: concierge::Timestamp(0),
            session: id.clone(),
            run: None,
            kind: EventKind::SessionOpened {
                agent: "desk".into(),
                tenant: Some("acme".into()),
                forked_from: Some(concierge::core::ForkOrigin {
                    session: acme.session_id("talk"),
                    seq: 4,
                    note: "Forked.".into(),
                }),
            },
        };
        let shown = relabel.event(forked);
        assert!(
            matches!(&shown.kind, EventKind::SessionOpened { forked_from: Some(o), .. } if o.session.as_str() == "talk"),
            "{shown:?}"
        );
    }
}
