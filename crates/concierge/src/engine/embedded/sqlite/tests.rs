#![allow(clippy::unwrap_used)]

use super::*;

fn options(label: &str) -> Options {
    Options {
        window: Duration::ZERO,
        lease: Duration::from_secs(10),
        label: label.into(),
        read_only: false,
    }
}

fn entry(session: &str, index: u64, first: bool) -> Entry {
    Entry::tick(session, index, first)
}

async fn owned(store: &SqliteStore, session: &str) -> Cursor {
    match store.claim(&session.into(), &"a".into()).await.unwrap() {
        Claim::Owned { session_no } => Cursor { session_no, head: 0 },
        Claim::Busy(who) => panic!("busy: {who}"),
    }
}

/// Heads are recorded only at the first entry after a claim; loading
/// follows each chain forward over the log tail, past other sessions'
/// entries, and an orphan scan finds both heads in one pass.
#[tokio::test]
async fn chains_are_followed_past_the_recorded_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.db");
    let store = SqliteStore::open(&path, options("one")).unwrap();
    let mut cursors = HashMap::new();
    for session in ["s", "t"] {
        cursors.insert(session, owned(&store, session).await);
    }
    for index in 0..3 {
        for session in ["s", "t"] {
            let appended = store
                .append(entry(session, index, index == 0), cursors[session])
                .await
                .unwrap();
            cursors.insert(session, appended.cursor);
        }
    }
    let loaded = store.load(&"s".into(), LoadFrom::Snapshot).await.unwrap().unwrap();
    let indexes: Vec<u64> = loaded.inputs.iter().map(|(i, _)| *i).collect();
    assert_eq!(indexes, [0, 1, 2]);
    assert_eq!(loaded.cursor, cursors["s"]);
    assert!(store.orphans().await.unwrap().is_empty(), "their owner is alive");
    store.flush().await;

    // Another process sees them as in use, not as orphans.
    let other = SqliteStore::open(&path, options("two")).unwrap();
    assert!(other.orphans().await.unwrap().is_empty());
    assert_eq!(
        other.claim(&"s".into(), &"a".into()).await.unwrap(),
        Claim::Busy(format!("process {} (one)", std::process::id()))
    );
    // An append by a process that does not own the session is refused.
    let mut stolen = entry("s", 3, false);
    stolen.input = Input::Tick { at: Timestamp(99) };
    assert!(other.append(stolen, cursors["s"]).await.is_err());
    // The owner is asked to let it go.
    assert_eq!(store.wanted().await.unwrap(), [SessionId::from("s")]);
    store.release(Release {
        cursor: cursors["s"],
        index: 2,
        unfinished: false,
        state: None,
        changed_at: Timestamp(1),
    });
    store.flush().await;
    assert!(matches!(
        other.claim(&"s".into(), &"a".into()).await.unwrap(),
        Claim::Owned { .. }
    ));
    let loaded = other.load(&"s".into(), LoadFrom::Start).await.unwrap().unwrap();
    assert_eq!(loaded.inputs.len(), 3);
}

#[tokio::test]
async fn a_corrupted_entry_is_named_with_its_session_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.db");
    let store = SqliteStore::open(&path, options("one")).unwrap();
    let cursor = owned(&store, "s").await;
    store.append(entry("s", 0, true), cursor).await.unwrap();
    store.flush().await;
    Connection::open(&path)
        .unwrap()
        .execute("UPDATE log SET input = x'01deadbeef'", [])
        .unwrap();
    let error = store.load(&"s".into(), LoadFrom::Start).await.unwrap_err().to_string();
    assert!(
        error.contains("session s") && error.contains("unreadable") && error.contains("backup"),
        "{error}"
    );
}

#[test]
fn a_new_database_has_small_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    drop(SqliteStore::open(&path, options("x")).unwrap());
    let conn = Connection::open(&path).unwrap();
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    assert_eq!(page_size, schema::PAGE_SIZE, "set before the first write");
    let id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
    assert_eq!(id, schema::APPLICATION_ID);
}

/// The steps SQLite plans for `query` (its one parameter 1) on the database at `path`.
fn plan_of(path: &Path, query: &str) -> Vec<String> {
    Connection::open(path)
        .unwrap()
        .prepare(&format!("EXPLAIN QUERY PLAN {query}"))
        .unwrap()
        .query_map([1], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn looking_for_unfinished_runs_reads_only_the_live_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    drop(SqliteStore::open(&path, options("x")).unwrap());
    let plan = plan_of(&path, UNFINISHED);
    // A scan of the partial index reads the live heads only; a scan of
    // the table would read every session's.
    let heads: Vec<&String> = plan
        .iter()
        .filter(|step| step.contains(" h ") || step.ends_with(" h"))
        .collect();
    assert!(
        !heads.is_empty() && heads.iter().all(|step| step.contains("live_heads")),
        "the heads are read through the partial index: {plan:?}"
    );
}

#[test]
fn what_a_process_owns_is_read_through_the_owners_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    drop(SqliteStore::open(&path, options("x")).unwrap());
    for query in [WANTED, FORGET_OWNER] {
        let plan = plan_of(&path, query);
        // Every idle session's head would be read by a scan of the table.
        assert!(
            plan.iter().any(|step| step.contains("owned_heads")) && !plan.iter().any(|step| step.starts_with("SCAN")),
            "{query}: {plan:?}"
        );
    }
}

#[test]
fn another_programs_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let error = SqliteStore::open(&path, options("x")).err().unwrap();
    assert!(
        matches!(&error, Error::ForeignDatabase { found, .. } if found.contains("notes")),
        "{error}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing was written");
    let mode: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "not converted to WAL");

    std::fs::write(dir.path().join("text.db"), "just some text, not a database at all").unwrap();
    assert!(matches!(
        SqliteStore::open(&dir.path().join("text.db"), options("x")),
        Err(Error::ForeignDatabase { .. })
    ));
}

/// The sessions below a conversation are read by id range: its child runs
/// and theirs, not a conversation whose id only starts like it.
#[tokio::test]
async fn the_sessions_below_one_are_its_child_runs_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("j.db"), options("one")).unwrap();
    let ids = [
        "s",
        "s:call_1",
        "s:call_1:call_2",
        "s-2",
        "s.b",
        "s;",
        "s2:call_1",
        "t",
        "r:call_1",
    ];
    for id in ids {
        let cursor = owned(&store, id).await;
        store.append(entry(id, 0, true), cursor).await.unwrap();
    }
    let mut below: Vec<String> = store
        .sessions_for(SessionQuery::new().below("s"))
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    below.sort();
    assert_eq!(below, ["s:call_1", "s:call_1:call_2"]);
    let of_child = store.sessions_for(SessionQuery::new().below("s:call_1")).await.unwrap();
    assert_eq!(of_child.len(), 1);
    assert_eq!(of_child[0].id, "s:call_1:call_2");
    assert!(
        store
            .sessions_for(SessionQuery::new().below("t"))
            .await
            .unwrap()
            .is_empty()
    );
}
