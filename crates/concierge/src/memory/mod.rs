//! What an assistant remembers about a person across conversations.
//!
//! Memories belong to one person of one tenant ([`MemoryOwner`]): an agent
//! that opts into the [`MEMORY_TOOLSET`](crate::tool::MEMORY_TOOLSET) (`toolsets = ["memory"]`) can
//! `remember`, `recall` and `forget` them, and an agent with a recall budget
//! (`[memory] recall = 5` in its file, [`AgentSpec::recall`](concierge_core::AgentSpec::recall))
//! sees the memories most relevant to the person's message in its
//! instructions. The person sees and erases what is remembered through the
//! runtime ([`Runtime::memories`](crate::Runtime::memories)), the HTTP API and
//! `concierge memory list|forget|export --user …`.
//!
//! The store is a SQLite table with an FTS5 index ([`MemoryStore`]): in the
//! runtime's database file on the embedded engine, in memory for an
//! in-memory runtime.
//!
//! ```
//! use concierge::memory::{MemoryOrigin, MemoryOwner, MemoryStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), concierge::memory::MemoryError> {
//! let store = MemoryStore::in_memory()?;
//! let ana = MemoryOwner::new("acme", "ana");
//! store.remember(&ana, "Ana prefers aisle seats on long flights", MemoryOrigin::default()).await?;
//! store.remember(&ana, "Ana's manager is Sarah", MemoryOrigin::default()).await?;
//! let found = store.recall(&ana, "book me a flight to Lisbon", 3).await?;
//! assert_eq!(found[0].text, "Ana prefers aisle seats on long flights");
//! assert!(store.recall(&MemoryOwner::new("other", "ana"), "flight", 3).await?.is_empty());
//! # Ok(()) }
//! ```

mod index;

use concierge_core::Timestamp;
use serde::{Deserialize, Serialize};

pub(crate) use index::MEMORY_TABLES;
pub use index::MemoryStore;

/// The longest memory, in characters: a memory is a fact, not a document.
pub const MAX_MEMORY_CHARS: usize = 2_000;

/// Whose memories: one person (`user`) of one tenant.
///
/// A run that names no user (a server without tokens, `concierge chat`
/// without `--user`) is the deployment's one person: the empty user.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemoryOwner {
    /// The tenant the person belongs to (`None`: a runtime without tenants).
    pub tenant: Option<String>,
    /// The person, as the caller names them (`RunOptions::user`, `--user`, a token's user).
    pub user: String,
}

impl MemoryOwner {
    /// The memories of `user` in `tenant`.
    pub fn new(tenant: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            tenant: Some(tenant.into()),
            user: user.into(),
        }
    }

    /// The memories of `user` of a runtime without tenants.
    pub fn user(user: impl Into<String>) -> Self {
        Self {
            tenant: None,
            user: user.into(),
        }
    }

    /// The owner for a tenant that may be absent.
    pub fn of(tenant: Option<&str>, user: impl Into<String>) -> Self {
        Self {
            tenant: tenant.map(str::to_owned),
            user: user.into(),
        }
    }

    /// The tenant as stored (empty without one; tokens refuse an empty tenant).
    pub(crate) fn tenant_key(&self) -> &str {
        self.tenant.as_deref().unwrap_or("")
    }
}

/// One remembered fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// Its id (random), to forget it by.
    pub id: String,
    /// What is remembered, in words.
    pub text: String,
    /// When it was remembered, in milliseconds since the Unix epoch.
    pub created_at: Timestamp,
    /// The conversation it was learnt in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The agent that remembered it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Where a memory comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryOrigin {
    /// The conversation.
    pub session: Option<String>,
    /// The agent.
    pub agent: Option<String>,
    /// A key that makes remembering idempotent: remembering again with the
    /// same key (a retried tool call) returns the first memory.
    pub key: Option<String>,
}

/// What went wrong with the memory store.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// Nothing to remember.
    #[error("there is nothing to remember: the text is empty")]
    Empty,
    /// The text is longer than [`MAX_MEMORY_CHARS`].
    #[error("a memory holds at most {limit} characters; this one has {chars}: remember a shorter fact")]
    TooLong {
        /// Its length in characters.
        chars: usize,
        /// The limit.
        limit: usize,
    },
    /// The store failed.
    #[error("the memory store failed: {0}")]
    Storage(String),
}

impl From<rusqlite::Error> for MemoryError {
    fn from(error: rusqlite::Error) -> Self {
        MemoryError::Storage(error.to_string())
    }
}
