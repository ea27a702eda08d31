//! The memory store: a SQLite table and its FTS5 index.
//!
//! Recall ranks a person's memories against a text with FTS5's BM25 over
//! the words of the text (stemmed, so "flights" finds "flight"). The index
//! holds each word of a memory prefixed with a token naming its owner
//! (`o<fingerprint>x<word>`), so a person's words have their own posting
//! lists: a query reads one person's lists however many people the store
//! holds, and BM25 weighs a word by how rare it is among that person's
//! memories. The rows the index ranks first are then checked against the
//! owner's tenant and user exactly.

use std::path::Path;

use concierge_core::{Timestamp, fingerprint};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::json;

use crate::side_db::{SideDb, again_if_schema_changed, random_id};

use super::{MAX_MEMORY_CHARS, Memory, MemoryError, MemoryOrigin, MemoryOwner};

/// The tables the store adds to a database (FTS5's own included).
pub(crate) const MEMORY_TABLES: &[&str] = &[
    "memories",
    "memories_fts",
    "memories_fts_config",
    "memories_fts_data",
    "memories_fts_docsize",
    "memories_fts_idx",
];

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    user TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    session TEXT,
    agent TEXT,
    key TEXT
);
CREATE INDEX IF NOT EXISTS memories_by_owner ON memories (tenant, user, id);
CREATE UNIQUE INDEX IF NOT EXISTS memories_by_key ON memories (tenant, user, key) WHERE key IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    terms, content = '', contentless_delete = 1, tokenize = 'porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS memories_removed AFTER DELETE ON memories BEGIN
    DELETE FROM memories_fts WHERE rowid = old.id;
END;
";

/// Words too common to say what a memory is about.
const STOP_WORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "do", "does", "for", "from",
    "have", "he", "her", "his", "how", "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our",
    "please", "she", "so", "that", "the", "their", "them", "there", "they", "this", "to", "us", "was", "we", "what",
    "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// At most this many words of a text are looked up.
const MAX_QUERY_WORDS: usize = 24;

/// About how many memories a recall ranks at most (see [`informative_words`]).
const RANK_BUDGET: i64 = 400;

/// A person's memories, ranked by relevance with SQLite FTS5.
///
/// Cheap to clone (one shared connection); every call runs on tokio's
/// blocking pool.
#[derive(Clone)]
pub struct MemoryStore {
    db: SideDb,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("path", &self.db.path()).finish()
    }
}

impl MemoryStore {
    /// The store in the SQLite database at `path` (created if missing; the
    /// runtime's own database file when the embedded engine runs on SQLite).
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        Ok(Self {
            db: SideDb::open(path, SCHEMA)?,
        })
    }

    /// The store at `path`, opened when first used (after the runtime's
    /// engine made the file its own).
    pub(crate) fn at(path: &Path) -> Self {
        Self {
            db: SideDb::at(path, SCHEMA),
        }
    }

    /// A store that lives as long as the process (for in-memory runtimes and tests).
    pub fn in_memory() -> Result<Self, MemoryError> {
        Ok(Self {
            db: SideDb::in_memory(SCHEMA)?,
        })
    }

    /// Runs `work` on the store's connection in one transaction of the kind
    /// `access` names, again if the schema changed under it (see
    /// [`again_if_schema_changed`]).
    async fn with_conn<T: Send + 'static>(
        &self,
        access: Access,
        mut work: impl FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, MemoryError> {
        self.db
            .run(MemoryError::Storage, move |conn| {
                Ok(again_if_schema_changed(|| in_one_transaction(conn, access, &mut work))?)
            })
            .await
    }

    /// Remembers `text` for `owner`; with [`MemoryOrigin::key`] set, the
    /// memory already remembered under that key is returned instead.
    pub async fn remember(&self, owner: &MemoryOwner, text: &str, origin: MemoryOrigin) -> Result<Memory, MemoryError> {
        let text = concierge_core::trim_blank(text).to_owned();
        if text.is_empty() {
            return Err(MemoryError::Empty);
        }
        let chars = text.chars().count();
        if chars > MAX_MEMORY_CHARS {
            return Err(MemoryError::TooLong {
                chars,
                limit: MAX_MEMORY_CHARS,
            });
        }
        let owner = owner.clone();
        let id = new_id()?;
        let at = crate::clock::now();
        let (row_id, row_text, row_origin) = (id.clone(), text.clone(), origin.clone());
        let found = self
            .with_conn(Access::Write, move |tx| {
                if let Some(key) = &row_origin.key {
                    let found = tx
                        .query_row(
                            &format!("{SELECT} WHERE tenant = ?1 AND user = ?2 AND key = ?3"),
                            params![owner.tenant_key(), owner.user, key],
                            row_to_memory,
                        )
                        .optional()?;
                    if found.is_some() {
                        return Ok(found);
                    }
                }
                tx.execute(
                    "INSERT INTO memories (memory_id, tenant, user, text, created_at, session, agent, key)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        row_id,
                        owner.tenant_key(),
                        owner.user,
                        row_text,
                        i64::try_from(at.0).unwrap_or(i64::MAX),
                        row_origin.session,
                        row_origin.agent,
                        row_origin.key
                    ],
                )?;
                tx.execute(
                    "INSERT INTO memories_fts (rowid, terms) VALUES (?1, ?2)",
                    params![tx.last_insert_rowid(), owned_terms(&owner_token(&owner), &row_text)],
                )?;
                Ok(None)
            })
            .await?;
        Ok(found.unwrap_or(Memory {
            id,
            text,
            created_at: at,
            session: origin.session,
            agent: origin.agent,
        }))
    }

    /// The memories of `owner` most relevant to `text`, best first (none
    /// when no word of the text is in any of them).
    pub async fn recall(&self, owner: &MemoryOwner, text: &str, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let words = query_words(text);
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let owner = owner.clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(Access::Read, move |conn| {
            let token = owner_token(&owner);
            let kept = informative_words(conn, &token, &words)?;
            if kept.is_empty() {
                return Ok(Vec::new());
            }
            // The index ranks and cuts first; the rows it keeps are then
            // checked against the owner exactly.
            let mut statement = conn.prepare_cached(
                "SELECT m.memory_id, m.text, m.created_at, m.session, m.agent
                 FROM (SELECT rowid AS id, bm25(memories_fts) AS score FROM memories_fts
                       WHERE memories_fts MATCH ?1 ORDER BY score LIMIT ?4) AS best
                 JOIN memories m ON m.id = best.id
                 WHERE m.tenant = ?2 AND m.user = ?3
                 ORDER BY best.score",
            )?;
            let query = match_query(&token, &kept);
            let rows = statement.query_map(params![query, owner.tenant_key(), owner.user, limit], row_to_memory)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .await
    }

    /// Every memory of `owner`, newest first (at most `limit` of them).
    pub async fn list(&self, owner: &MemoryOwner, limit: Option<usize>) -> Result<Vec<Memory>, MemoryError> {
        let owner = owner.clone();
        let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        self.with_conn(Access::Read, move |conn| {
            let mut statement = conn.prepare_cached(&format!(
                "{SELECT} WHERE tenant = ?1 AND user = ?2 ORDER BY id DESC LIMIT ?3"
            ))?;
            let rows = statement.query_map(params![owner.tenant_key(), owner.user, limit], row_to_memory)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .await
    }

    /// Forgets one memory of `owner`; `false` if `owner` has none by that id.
    pub async fn forget(&self, owner: &MemoryOwner, id: &str) -> Result<bool, MemoryError> {
        let owner = owner.clone();
        let id = id.to_owned();
        self.with_conn(Access::Write, move |conn| {
            let n = conn.execute(
                "DELETE FROM memories WHERE memory_id = ?1 AND tenant = ?2 AND user = ?3",
                params![id, owner.tenant_key(), owner.user],
            )?;
            Ok(n > 0)
        })
        .await
    }

    /// Forgets everything remembered about `owner`; returns how many memories went.
    pub async fn forget_all(&self, owner: &MemoryOwner) -> Result<usize, MemoryError> {
        let owner = owner.clone();
        self.with_conn(Access::Write, move |conn| {
            conn.execute(
                "DELETE FROM memories WHERE tenant = ?1 AND user = ?2",
                params![owner.tenant_key(), owner.user],
            )
        })
        .await
    }
}

/// What a call does to the store.
#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

/// Runs `work` in one transaction that sees one schema. SQLite prepares a
/// statement again when the schema changed, but an FTS5 table connects while
/// it is prepared and fails if another connection changes the schema in the
/// meantime (another store creating its tables). So a write takes the write
/// lock before preparing anything, and a read pins its snapshot first: the
/// schema cannot change under either.
fn in_one_transaction<T>(
    conn: &mut Connection,
    access: Access,
    work: &mut impl FnMut(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let tx = conn.transaction_with_behavior(match access {
        Access::Read => TransactionBehavior::Deferred,
        Access::Write => TransactionBehavior::Immediate,
    })?;
    if matches!(access, Access::Read) {
        tx.query_row("PRAGMA schema_version", [], |row| row.get::<_, i64>(0))?;
    }
    let done = work(&tx)?;
    tx.commit()?;
    Ok(done)
}

const SELECT: &str = "SELECT memory_id, text, created_at, session, agent FROM memories";

fn row_to_memory(row: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
    let at: i64 = row.get(2)?;
    Ok(Memory {
        id: row.get(0)?,
        text: row.get(1)?,
        created_at: Timestamp(u64::try_from(at).unwrap_or(0)),
        session: row.get(3)?,
        agent: row.get(4)?,
    })
}

/// The token that names `owner` in the index (a fingerprint: the owner's
/// tenant and user are compared exactly after the index narrowed the rows).
fn owner_token(owner: &MemoryOwner) -> String {
    format!("o{}", fingerprint(&json!([owner.tenant_key(), owner.user])))
}

/// The words of `text` worth looking up (lower case, no stop words, each once).
fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        if word.chars().count() < 2 || STOP_WORDS.contains(&word.as_str()) || words.contains(&word) {
            continue;
        }
        words.push(word);
        if words.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    words
}

/// The words of `text` as `owner`'s terms in the index.
fn owned_terms(owner: &str, text: &str) -> String {
    let mut terms = String::with_capacity(text.len() * 2);
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if !terms.is_empty() {
            terms.push(' ');
        }
        terms.push_str(owner);
        terms.push('x');
        terms.extend(word.chars().flat_map(char::to_lowercase));
    }
    terms
}

/// The FTS5 query for memories of `owner` holding any of `words`. Words are
/// letters and digits only, so quoting them is enough.
fn match_query(owner: &str, words: &[&str]) -> String {
    let any: Vec<String> = words.iter().map(|w| format!("\"{owner}x{w}\"")).collect();
    any.join(" OR ")
}

/// The words of a query BM25 ranks with: the rarest among the owner's
/// memories, as many as keep the memories to rank within [`RANK_BUDGET`]
/// (at least the rarest one). A word in a large share of them says little
/// about which is relevant (BM25 gives it little weight) but would make
/// every one of them a candidate to rank, so it is left out.
fn informative_words<'w>(conn: &Connection, owner: &str, words: &'w [String]) -> rusqlite::Result<Vec<&'w str>> {
    let mut counted = Vec::with_capacity(words.len());
    let mut count = conn.prepare_cached("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1")?;
    for word in words {
        let n: i64 = count.query_row([match_query(owner, &[word.as_str()])], |r| r.get(0))?;
        if n > 0 {
            counted.push((n, word.as_str()));
        }
    }
    counted.sort_unstable();
    let mut total = 0;
    let mut kept = Vec::new();
    for (n, word) in counted {
        if !kept.is_empty() && total + n > RANK_BUDGET {
            break;
        }
        total += n;
        kept.push(word);
    }
    Ok(kept)
}

/// A random memory id.
fn new_id() -> Result<String, MemoryError> {
    random_id("mem_").map_err(MemoryError::Storage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ana() -> MemoryOwner {
        MemoryOwner::new("acme", "ana")
    }

    #[tokio::test]
    async fn recall_ranks_by_the_words_of_the_message_and_stems_them() {
        let store = MemoryStore::in_memory().unwrap();
        for text in [
            "Prefers aisle seats on flights",
            "Her manager is Sarah",
            "Allergic to peanuts",
            "Flies to Lisbon every spring",
        ] {
            store.remember(&ana(), text, MemoryOrigin::default()).await.unwrap();
        }
        let found = store.recall(&ana(), "order food without peanuts", 5).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].text, "Allergic to peanuts");
        let found = store.recall(&ana(), "book a flight", 5).await.unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].text, "Prefers aisle seats on flights");
        assert!(store.recall(&ana(), "the a of", 5).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn an_owner_sees_only_its_own_memories() {
        let store = MemoryStore::in_memory().unwrap();
        let ana_other_tenant = MemoryOwner::new("globex", "ana");
        let kept = store
            .remember(&ana(), "Likes window seats", MemoryOrigin::default())
            .await
            .unwrap();
        store
            .remember(&ana_other_tenant, "Likes window seats too", MemoryOrigin::default())
            .await
            .unwrap();
        assert_eq!(store.recall(&ana(), "window", 5).await.unwrap(), vec![kept.clone()]);
        assert_eq!(store.list(&ana(), None).await.unwrap(), vec![kept.clone()]);
        assert!(!store.forget(&ana_other_tenant, &kept.id).await.unwrap());
        assert!(store.forget(&ana(), &kept.id).await.unwrap());
        assert!(store.recall(&ana(), "window", 5).await.unwrap().is_empty());
        assert_eq!(store.list(&ana_other_tenant, None).await.unwrap().len(), 1);
        assert_eq!(store.forget_all(&ana_other_tenant).await.unwrap(), 1);
        assert!(store.recall(&ana_other_tenant, "window", 5).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn remembering_again_under_a_key_returns_the_first_memory() {
        let store = MemoryStore::in_memory().unwrap();
        let origin = MemoryOrigin {
            key: Some("s1/r1/call_1".into()),
            ..MemoryOrigin::default()
        };
        let first = store.remember(&ana(), "Vegetarian", origin.clone()).await.unwrap();
        let again = store.remember(&ana(), "Vegetarian", origin).await.unwrap();
        assert_eq!(first, again);
        assert_eq!(store.list(&ana(), None).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn empty_and_overlong_memories_are_refused_with_a_reason() {
        let store = MemoryStore::in_memory().unwrap();
        assert!(matches!(
            store.remember(&ana(), "  ", MemoryOrigin::default()).await,
            Err(MemoryError::Empty)
        ));
        let long = "x".repeat(MAX_MEMORY_CHARS + 1);
        let error = store
            .remember(&ana(), &long, MemoryOrigin::default())
            .await
            .unwrap_err();
        assert!(error.to_string().contains("at most 2000 characters"), "{error}");
    }

    #[tokio::test]
    async fn a_word_in_most_memories_does_not_crowd_out_a_rare_one() {
        let store = MemoryStore::in_memory().unwrap();
        for i in 0..(RANK_BUDGET + 50) {
            store
                .remember(
                    &ana(),
                    &format!("Travel note {i}: booked a hotel"),
                    MemoryOrigin::default(),
                )
                .await
                .unwrap();
        }
        store
            .remember(&ana(), "Allergic to shellfish", MemoryOrigin::default())
            .await
            .unwrap();
        let found = store.recall(&ana(), "book a hotel with no shellfish", 3).await.unwrap();
        assert_eq!(found[0].text, "Allergic to shellfish", "{found:?}");
        // A common word alone still finds its memories.
        let found = store.recall(&ana(), "hotel", 3).await.unwrap();
        assert_eq!(found.len(), 3);
    }

    #[tokio::test]
    async fn quotes_and_operators_in_a_message_are_words_not_syntax() {
        let store = MemoryStore::in_memory().unwrap();
        store
            .remember(&ana(), "Works NEAR the station", MemoryOrigin::default())
            .await
            .unwrap();
        let found = store.recall(&ana(), "\"near\" OR * AND (station", 5).await.unwrap();
        assert_eq!(found.len(), 1);
    }
}
