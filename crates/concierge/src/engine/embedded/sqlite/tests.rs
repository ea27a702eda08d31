#![allow(clippy::unwrap_used)]

use super::*;
use crate::engine::embedded::activity::{Activities, Activity};

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
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {query}")).unwrap();
    let params = std::iter::repeat_n(1, stmt.parameter_count());
    stmt.query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3))
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

/// Writes a first input to `id` of `tenant` at time `at`; returns where it ends.
async fn changed(store: &SqliteStore, id: &str, tenant: Option<&str>, at: u64) -> Cursor {
    let cursor = owned(store, id).await;
    let entry = Entry {
        input: Input::Tick { at: Timestamp(at) },
        tenant: tenant.map(str::to_string),
        ..entry(id, 0, true)
    };
    store.append(entry, cursor).await.unwrap().cursor
}

/// What this process holds: `(id, changed_at, live)` of tenant `acme`.
fn holding(held: &[(&str, u64, bool)]) -> Arc<Activities> {
    let activities = Arc::new(Activities::default());
    for (id, changed_at, live) in held {
        let activity = Activity {
            live: *live,
            changed_at: Timestamp(*changed_at),
            tenant: Some("acme".into()),
            agent: "a".into(),
        };
        activities.set(&SessionId::from(*id), activity);
    }
    activities
}

/// Every page of `query` (`limit` a page), with `held` in place.
async fn pages_of(store: &SqliteStore, query: SessionQuery, held: &Arc<Activities>) -> Vec<SessionSummary> {
    let mut all = Vec::new();
    let mut query = query;
    loop {
        let page = store.session_page(query.clone(), held.clone()).unwrap().await.unwrap();
        all.extend(page.sessions.iter().cloned());
        match (page.more, page.sessions.last()) {
            (true, Some(last)) => query = query.after(last.id.clone()),
            _ => return all,
        }
    }
}

#[tokio::test]
async fn a_tenants_page_is_read_in_order_from_its_index_with_what_this_process_holds_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.db");
    let store = SqliteStore::open(&path, options("one")).unwrap();
    let mut cursors = HashMap::new();
    for (id, at) in [("a", 10), ("b", 20), ("c", 20), ("d", 30), ("e", 5), ("f", 15)] {
        cursors.insert(id, changed(&store, id, Some("acme"), at).await);
    }
    changed(&store, "b:call_1", Some("acme"), 100).await;
    changed(&store, "z", Some("globex"), 50).await;
    changed(&store, "n", None, 40).await;
    let ids = |listed: &[SessionSummary]| listed.iter().map(|s| s.id.to_string()).collect::<Vec<_>>();
    let acme = SessionQuery::new().tenant(Some("acme"));

    // From the store alone: the most recently changed first, then by id.
    let stored = ["d", "b", "c", "f", "a", "e"];
    for limit in [1, 2, 4, 10] {
        assert_eq!(
            ids(&pages_of(&store, acme.clone().limit(limit), &holding(&[])).await),
            stored
        );
    }
    // Held here: `b` and `e` changed since the store heard (they move up,
    // and are not listed twice), `d` is running but has taken no input here.
    let mine = holding(&[("b", 70, false), ("e", 60, true), ("d", 0, true)]);
    for limit in [1, 2, 3, 10] {
        let listed = pages_of(&store, acme.clone().limit(limit), &mine).await;
        assert_eq!(ids(&listed), ["b", "e", "d", "c", "f", "a"], "limit {limit}");
        assert_eq!(listed[1].updated_at, Timestamp(60));
        assert!(listed[1].live && listed[2].live && !listed[0].live);
        assert_eq!(listed[2].updated_at, Timestamp(30));
    }
    let untenanted = pages_of(&store, SessionQuery::new().tenant(None), &mine).await;
    assert_eq!(ids(&untenanted), ["n"]);
    // Another tenant's session, or a child run's, is no place in this list.
    for foreign in ["z", "b:call_1", "nobody"] {
        let page = store
            .session_page(acme.clone().after(foreign), mine.clone())
            .unwrap()
            .await;
        assert!(matches!(page, Err(Error::SessionNotFound(_))), "{foreign}: {page:?}");
    }
    // Child runs, everyone's, or those below one are listed the other way.
    assert!(store.session_page(acme.clone().with_children(), mine.clone()).is_none());
    assert!(store.session_page(SessionQuery::new(), mine.clone()).is_none());

    // When a process lets a session go, the store learns when it changed.
    store.release(Release {
        cursor: cursors["a"],
        index: 0,
        unfinished: false,
        state: None,
        changed_at: Timestamp(90),
    });
    store.flush().await;
    assert_eq!(
        ids(&pages_of(&store, acme.clone().limit(2), &holding(&[])).await),
        ["a", "d", "b", "c", "f", "e"]
    );
    drop(store);

    // The page is read along the index, in its order: no sort of the tenant's rows.
    let plan = plan_of(&path, &listing::ROWS_AFTER);
    assert!(
        plan.iter().any(|step| step.contains("sessions_by_tenant_at")),
        "{plan:?}"
    );
    assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "{plan:?}");
}

#[tokio::test]
async fn an_older_database_lists_its_sessions_by_when_they_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let store = SqliteStore::open(&path, options("one")).unwrap();
    for id in ["a", "b", "c"] {
        changed(&store, id, Some("acme"), 1).await;
    }
    drop(store);
    // What an earlier version left: the time on the head, none on the session.
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP INDEX sessions_by_tenant_at;
         ALTER TABLE sessions DROP COLUMN at;
         CREATE INDEX sessions_by_tenant ON sessions (tenant);
         UPDATE heads SET at = 30 WHERE no = (SELECT no FROM sessions WHERE id = 'b');
         UPDATE heads SET at = 20 WHERE no = (SELECT no FROM sessions WHERE id = 'c');
         UPDATE heads SET at = 10 WHERE no = (SELECT no FROM sessions WHERE id = 'a');",
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(&path, options("two")).unwrap();
    let listed = pages_of(&store, SessionQuery::new().tenant(Some("acme")).limit(1), &holding(&[])).await;
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["b", "c", "a"]);
    assert_eq!(listed[0].updated_at, Timestamp(30));
    drop(store);
    // Its index by tenant alone gave way to the one by tenant and time.
    let indexes: Vec<String> = Connection::open(&path)
        .unwrap()
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' AND sql IS NOT NULL")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(indexes, ["sessions_by_tenant_at"]);
}
