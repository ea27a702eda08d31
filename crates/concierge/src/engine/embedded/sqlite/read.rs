//! Reading sessions back: following a session's chain of entries over the
//! log, loading a session (from its snapshot or from the start), and the
//! recorded catalogs a replay needs.

use super::*;

/// Reads a session's chain back, newest first, until `stop` (exclusive).
fn read_chain(conn: &Connection, id: &str, head: i64, stop: i64) -> Result<Vec<(u64, Input)>> {
    let mut stmt = conn.prepare_cached("SELECT prev, idx, input FROM log WHERE rowid = ?1")?;
    let mut inputs = Vec::new();
    let mut pos = head;
    while pos != 0 && pos != stop {
        let (prev, idx, bytes): (i64, i64, Vec<u8>) = stmt
            .query_row([pos], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| corrupted(id, pos, &e.to_string()))?;
        let input: Input = decode(&bytes).map_err(|e| corrupted(id, idx, &e.to_string()))?;
        inputs.push((idx as u64, input));
        pos = prev;
    }
    inputs.reverse();
    Ok(inputs)
}

fn corrupted(session: &str, entry: i64, why: &str) -> Error {
    Error::Storage(format!(
        "session {session}: journal entry {entry} is unreadable ({why}); the session cannot be loaded. \
         Restore the database from a backup, or end the session and start a new one"
    ))
}

/// Moves each session's recorded head (`heads`: session number → log
/// position) to its true one: entries written after a head was recorded
/// point back to it, so one pass over the log tail (a rowid range scan)
/// follows every chain forward.
pub(super) fn follow(conn: &Connection, heads: &mut HashMap<i64, i64>) -> Result<()> {
    let Some(oldest) = heads.values().min().copied() else {
        return Ok(());
    };
    let mut tail = conn.prepare_cached("SELECT rowid, no, prev FROM log WHERE rowid > ?1 ORDER BY rowid")?;
    let rows = tail.query_map([oldest], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    })?;
    for row in rows {
        let (pos, no, prev) = row?;
        if let Some(head) = heads.get_mut(&no) {
            if *head == prev {
                *head = pos;
            }
        }
    }
    Ok(())
}

pub(super) fn lock_reader(reader: &Mutex<Connection>) -> Result<std::sync::MutexGuard<'_, Connection>> {
    reader
        .lock()
        .map_err(|_| Error::Storage("the journal reader is poisoned".into()))
}

/// The catalog versions named by `inputs` and `snapshot`, with what was recorded for them.
fn catalogs_for(
    conn: &Connection,
    inputs: &[(u64, Input)],
    snapshot: Option<&Session>,
) -> Result<HashMap<String, String>> {
    let mut versions: Vec<&str> = inputs
        .iter()
        .filter_map(|(_, input)| match input {
            Input::StartRun(start) => start.catalog_version.as_deref(),
            _ => None,
        })
        .collect();
    if let Some(version) = snapshot.and_then(Session::catalog_version) {
        versions.push(version);
    }
    versions.sort_unstable();
    versions.dedup();
    let mut stmt = conn.prepare_cached("SELECT toolsets FROM catalogs WHERE version = ?1")?;
    let mut found = HashMap::new();
    for version in versions {
        if let Some(json) = stmt.query_row([version], |r| r.get::<_, String>(0)).optional()? {
            found.insert(version.to_string(), json);
        }
    }
    Ok(found)
}

/// Reads a session in one read transaction (a compaction by another
/// process cannot fall between its reads).
pub(super) fn load(
    conn: &Connection,
    id: &str,
    from: LoadFrom,
    recovered: &Mutex<HashMap<i64, (i64, i64)>>,
) -> Result<Option<Loaded>> {
    let tx = conn.unchecked_transaction()?;
    let loaded = load_in(&tx, id, from, recovered)?;
    tx.finish()?;
    Ok(loaded)
}

fn load_in(
    conn: &Connection,
    id: &str,
    from: LoadFrom,
    recovered: &Mutex<HashMap<i64, (i64, i64)>>,
) -> Result<Option<Loaded>> {
    let found: Option<(i64, i64, bool)> = conn
        .prepare_cached("SELECT s.no, h.head, h.live FROM sessions s JOIN heads h ON h.no = s.no WHERE s.id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let Some((no, recorded, live)) = found else {
        return Ok(None);
    };
    let known = recovered.lock().ok().and_then(|mut r| r.remove(&no));
    let head = match (live, known) {
        (false, _) => recorded,
        // The orphan scan followed this chain already, and nobody wrote since.
        (true, Some((then, head))) if then == recorded => head,
        (true, _) => {
            let mut heads = HashMap::from([(no, recorded)]);
            follow(conn, &mut heads)?;
            heads.get(&no).copied().unwrap_or(recorded)
        }
    };
    if head == 0 {
        return Ok(None);
    }
    let archived_seq: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(last), 0) FROM archive WHERE no = ?1")?
        .query_row([no], |r| r.get(0))?;
    // A compacted journal starts at its snapshot.
    let snapshot: Option<(i64, i64, Vec<u8>)> = match from {
        LoadFrom::Start if archived_seq == 0 => None,
        LoadFrom::Start | LoadFrom::Snapshot => conn
            .prepare_cached("SELECT idx, pos, state FROM snapshots WHERE no = ?1")?
            .query_row([no], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?,
    };
    let stop = snapshot.as_ref().map_or(0, |s| s.1);
    let inputs = read_chain(conn, id, head, stop)?;
    let snapshot_bytes = snapshot.as_ref().map_or(0, |s| s.2.len() as u64);
    let snapshot = match snapshot {
        Some((idx, pos, bytes)) => {
            let state: Session = decode(&bytes).map_err(|e| corrupted(id, pos, &format!("snapshot: {e}")))?;
            Some((idx as u64, state))
        }
        None => None,
    };
    let catalogs = catalogs_for(conn, &inputs, snapshot.as_ref().map(|(_, s)| s))?;
    let mut archived = Vec::new();
    if from == LoadFrom::Start && archived_seq > 0 {
        let mut stmt = conn.prepare_cached("SELECT last, events FROM archive WHERE no = ?1 ORDER BY last")?;
        let rows = stmt.query_map([no], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
        for row in rows {
            let (last, bytes) = row?;
            let events: Vec<Event> =
                decode(&bytes).map_err(|e| corrupted(id, last, &format!("archived events: {e}")))?;
            archived.extend(events);
        }
    }
    Ok(Some(Loaded {
        snapshot,
        inputs,
        cursor: Cursor { session_no: no, head },
        snapshot_bytes,
        catalogs,
        archived_seq: archived_seq as u64,
        archived,
    }))
}
