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
    /// Identifies an agent (a seed-000 *goal*), e.g. `calculator`.
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
    fn idempotency_key_is_stable() {
        let k1 = IdempotencyKey::derive(&"s".into(), &"r".into(), &"call_1".into());
        let k2 = IdempotencyKey::derive(&"s".into(), &"r".into(), &"call_1".into());
        assert_eq!(k1, k2);
        assert_eq!(k1.as_str(), "s/r/call_1");
    }
}
