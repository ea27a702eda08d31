//! Typed identifiers.
//!
//! Every id is a cheap-to-clone reference-counted string. Ids are built
//! infallibly from strings; the places where an id must follow a grammar
//! (agent and tool names, which models see as function names) check it when
//! the [`Catalog`](crate::Catalog) is built, with an error that says what to change.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

macro_rules! define_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Builds the id from any string.
            pub fn new(value: impl AsRef<str>) -> Self {
                Self(Arc::from(value.as_ref()))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::new(value)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(Arc::from(value))
            }
        }

        impl From<&String> for $name {
            fn from(value: &String) -> Self {
                Self::new(value)
            }
        }

        impl From<&$name> for $name {
            fn from(value: &$name) -> Self {
                value.clone()
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }
    };
}

define_id!(
    /// Identifies an agent (a *goal* a person can pursue), e.g. `calculator`.
    AgentId
);
define_id!(
    /// Identifies a tool, e.g. `calculator` or `transfer_to_billing`.
    ToolId
);
define_id!(
    /// Identifies a session: one durable conversation.
    SessionId
);
impl SessionId {
    /// Between a parent session and its call in a child session's id
    /// (`s1:call_2`). Ids that clients choose never contain it (front doors
    /// accept letters, digits, `-`, `_` and `.`), so no client can create
    /// or name a child run's session from outside.
    pub const CHILD_SEPARATOR: char = ':';

    /// Between a tenant and the id its client chose (`acme/s1`): each
    /// tenant has its own id space, so one tenant's `s1` is not another's.
    pub const TENANT_SEPARATOR: char = '/';

    /// The session of the child run that answers `call` of this session:
    /// the same for every attempt of the call.
    pub fn child(&self, call: &CallId) -> SessionId {
        SessionId::new(format!("{self}{}{call}", Self::CHILD_SEPARATOR))
    }

    /// Whether this id reads as a child run's session below `root` (a
    /// child of it, or of one of its children): `root`, the separator, more.
    /// As the id reads: a caller of an earlier version may have named a
    /// conversation so.
    pub fn reads_below(&self, root: &SessionId) -> bool {
        self.as_str()
            .strip_prefix(root.as_str())
            .is_some_and(|rest| rest.starts_with(Self::CHILD_SEPARATOR))
    }

    /// For a child run's session, its parent's session and the call it answers.
    pub fn parent_and_call(&self) -> Option<(SessionId, CallId)> {
        let (parent, call) = self.as_str().rsplit_once(Self::CHILD_SEPARATOR)?;
        Some((SessionId::new(parent), CallId::new(call)))
    }

    /// Why a caller may not give a new session this id, if it may not: it
    /// would read as a child run's (`<parent>:<call>`) and be erased,
    /// ended and listed with that parent. Child runs' sessions are made by
    /// [`SessionId::child`] only.
    pub fn check_new(id: &str) -> Result<(), String> {
        if id.trim().is_empty() {
            return Err("a session id must not be empty".into());
        }
        if id.contains(Self::CHILD_SEPARATOR) {
            return Err(format!(
                "the session id {id:?} has a '{}', which only child runs' sessions have: choose one without it",
                Self::CHILD_SEPARATOR
            ));
        }
        Ok(())
    }

    /// Why `tenant` cannot be a tenant's name, if it cannot: empty, or with
    /// a `/` or `:`, which would make its sessions' ids ambiguous (one
    /// tenant's `b/s1` another's `s1`, or a child run's id).
    pub fn check_tenant(tenant: &str) -> Result<(), String> {
        if tenant.trim().is_empty() {
            return Err("a tenant's name must not be empty".into());
        }
        match tenant
            .chars()
            .find(|c| [Self::TENANT_SEPARATOR, Self::CHILD_SEPARATOR].contains(c) || c.is_control())
        {
            Some(c) if c.is_control() => Err(format!(
                "the tenant name {tenant:?} has a control character: choose one without"
            )),
            Some(c) => Err(format!(
                "the tenant name {tenant:?} has a '{c}', which would make its sessions' ids ambiguous: choose one without"
            )),
            None => Ok(()),
        }
    }

    /// The session a client of `tenant` names `local`: `local` itself
    /// without a tenant, `<tenant>/<local>` with one.
    pub fn in_tenant(tenant: Option<&str>, local: &str) -> SessionId {
        match tenant {
            Some(tenant) => SessionId::new(format!("{tenant}{}{local}", Self::TENANT_SEPARATOR)),
            None => SessionId::new(local),
        }
    }

    /// What a client of `tenant` calls this session (the inverse of
    /// [`SessionId::in_tenant`]); `None` if it is not in `tenant`'s id space.
    pub fn local_in(&self, tenant: Option<&str>) -> Option<&str> {
        match tenant {
            Some(tenant) => self
                .as_str()
                .strip_prefix(tenant)
                .and_then(|rest| rest.strip_prefix(Self::TENANT_SEPARATOR)),
            None => Some(self.as_str()),
        }
    }
}

define_id!(
    /// Identifies a run: one turn of a session, from user input to reply.
    RunId
);
define_id!(
    /// Identifies one tool call within a session (assigned by the core).
    CallId
);
define_id!(
    /// Identifies a caller-side turn (an opaque correlation id from callers such as `concierge::RunOptions`).
    TurnId
);

/// Checks the grammar agent and tool names must follow: models see them as
/// function names, so `^[A-Za-z0-9_-]{1,64}$`.
pub fn check_name(kind: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{kind} name {name:?} is invalid: use 1 to 64 ASCII letters, digits, '_' or '-'"
        ))
    }
}

/// The key a side-effecting tool can use to deduplicate a retried call.
///
/// It is derived from the session, the run and the call id, so a call that is
/// issued again after a crash carries the same key as the first attempt.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IdempotencyKey(Arc<str>);

impl IdempotencyKey {
    /// Derives the key for `call` in `run` of `session`.
    pub fn derive(session: &SessionId, run: &RunId, call: &CallId) -> Self {
        Self(Arc::from(format!("{session}/{run}/{call}")))
    }

    /// A key given by a caller (a tool called from outside a run, say).
    pub fn given(key: impl AsRef<str>) -> Self {
        Self(Arc::from(key.as_ref()))
    }

    /// The key as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_function_name_grammar() {
        assert!(check_name("agent", "goal_travel-flights2").is_ok());
        assert!(check_name("agent", "").is_err());
        assert!(check_name("agent", "has space").is_err());
        assert!(check_name("tool", &"x".repeat(65)).is_err());
    }

    #[test]
    fn tenants_have_their_own_id_spaces_and_children_are_not_client_ids() {
        let acme = SessionId::in_tenant(Some("acme"), "crm");
        let globex = SessionId::in_tenant(Some("globex"), "crm");
        assert_ne!(acme, globex);
        assert_eq!(acme.local_in(Some("acme")), Some("crm"));
        assert_eq!(acme.local_in(Some("globex")), None);
        assert_eq!(acme.local_in(Some("acm")), None);
        assert_eq!(SessionId::in_tenant(None, "crm"), SessionId::new("crm"));
        let child = acme.child(&CallId::new("call_2"));
        assert_eq!(child.local_in(Some("acme")), Some("crm:call_2"));
        assert_eq!(child.parent_and_call(), Some((acme, CallId::new("call_2"))));
        // A client's dotted id is no child.
        assert_eq!(SessionId::new("crm.call_2").parent_and_call(), None);
        assert!(child.reads_below(&SessionId::in_tenant(Some("acme"), "crm")));
        assert!(!SessionId::new("acme/crm-2:call_1").reads_below(&SessionId::new("acme/crm")));
        assert!(!SessionId::new("acme/crm").reads_below(&SessionId::new("acme/crm")));
    }

    #[test]
    fn a_new_session_or_a_tenant_cannot_be_named_like_a_child_run() {
        assert!(SessionId::check_new("s1").is_ok());
        assert!(SessionId::check_new("acme/s1").is_ok());
        let child = SessionId::check_new("s1:call_9").unwrap_err();
        assert!(child.contains("\"s1:call_9\""), "{child}");
        assert!(SessionId::check_new("  ").is_err());
        assert!(SessionId::check_tenant("acme").is_ok());
        for bad in ["org:acme", "a/b", "", "a\nb"] {
            assert!(SessionId::check_tenant(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn idempotency_key_is_stable() {
        let k1 = IdempotencyKey::derive(&"s".into(), &"r".into(), &"call_1".into());
        let k2 = IdempotencyKey::derive(&"s".into(), &"r".into(), &"call_1".into());
        assert_eq!(k1, k2);
        assert_eq!(k1.as_str(), "s/r/call_1");
    }
}
