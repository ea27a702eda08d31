//! Listing sessions from the database: every one, one tenant's read
//! through the tenant's index, or a page of one tenant's conversations
//! read in the list's order through `sessions_by_tenant_at`.

use concierge_core::SessionId;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row};

use super::Timestamp;
use std::collections::HashSet;
use std::sync::LazyLock;

use super::super::activity::{Activities, Place};
use crate::engine::listing::list_place;
use crate::engine::{SessionPage, SessionQuery, SessionSummary, TenantScope, newest_first};
use crate::error::{Error, Result};

/// What a list shows of each session (its `sessions` and `heads` rows).
const COLUMNS: &str = "SELECT s.id, s.agent, h.live, s.at, s.tenant FROM sessions s JOIN heads h ON h.no = s.no";

fn summary(r: &Row<'_>) -> rusqlite::Result<SessionSummary> {
    Ok(SessionSummary {
        id: r.get::<_, String>(0)?.into(),
        agent: r.get::<_, String>(1)?.into(),
        live: r.get::<_, bool>(2)?,
        updated_at: Timestamp(r.get::<_, i64>(3)? as u64),
        tenant: r.get(4)?,
    })
}

/// Every session that took an input, by id.
pub(super) fn sessions(conn: &Connection) -> Result<Vec<SessionSummary>> {
    let mut stmt = conn.prepare_cached(&format!("{COLUMNS} WHERE h.head != 0 ORDER BY s.id"))?;
    let rows = stmt.query_map([], summary)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Every session `query` holds, its cursor and limit aside: a tenant's
/// read through `sessions_by_tenant_at`, so the list of one costs what that
/// tenant has, not what every tenant has. The engine adds what it knows
/// of the sessions it holds, then takes the page.
pub(super) fn sessions_for(conn: &Connection, query: &SessionQuery) -> Result<Vec<SessionSummary>> {
    let mut filters = vec!["h.head != 0"];
    let mut params: Vec<Value> = Vec::new();
    if let TenantScope::Only(only) = &query.tenant {
        // Every session that took an input has its time (`at > 0`): that
        // is what puts a tenant's rows in `sessions_by_tenant_at`.
        filters.push("s.tenant IS ? AND s.at > 0");
        params.push(only.clone().map_or(Value::Null, Value::Text));
    }
    if let Some(root) = &query.below {
        // Ids from `<root>:` (exclusive) to `<root>;`, the next character:
        // a range of the ids' unique index, whatever else is stored.
        filters.push("s.id > ? AND s.id < ?");
        params.push(Value::Text(format!("{root}{}", SessionId::CHILD_SEPARATOR)));
        let next = char::from_u32(u32::from(SessionId::CHILD_SEPARATOR) + 1).unwrap_or(char::MAX);
        params.push(Value::Text(format!("{root}{next}")));
    } else if !query.children {
        // A child run's session id is its parent's, ':' and the call.
        filters.push("instr(s.id, ':') = 0");
    }
    let mut stmt = conn.prepare_cached(&format!("{COLUMNS} WHERE {}", filters.join(" AND ")))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(params), summary)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Whether [`page`] reads `query`'s sessions through `sessions_by_tenant_at`:
/// one tenant's conversations (not child runs', not below one).
pub(super) fn pages(query: &SessionQuery) -> bool {
    matches!(query.tenant, TenantScope::Only(_)) && !query.children && query.below.is_none()
}

/// Where a session stands in a list: when it last changed, then its id.
fn place(summary: &SessionSummary) -> Place {
    (summary.updated_at, summary.id.clone())
}

/// A page of the sessions [`pages`] says `query` reads through the index,
/// with the sessions this process holds (`held`) where it knows they are:
/// what it costs is what the page holds, however many sessions the tenant
/// has or this process holds.
///
/// The store learns when a session last changed when the process that
/// holds it lets it go, so one that changed here since is listed as this
/// process knows it (placed by when it changed: it only ever moves up the
/// list, the store's time is older) and skipped where the index still has
/// it.
pub(super) fn page(conn: &Connection, query: &SessionQuery, held: &Activities) -> Result<SessionPage> {
    let from = match &query.after {
        None => None,
        Some(after) => {
            let cursor = match held.summary(after, query) {
                Some(mine) => Some(mine),
                None => summary_of(conn, after)?
                    .map(|mut stored| {
                        held.overlay(std::slice::from_mut(&mut stored));
                        stored
                    })
                    .filter(|s| query.holds(s)),
            };
            match cursor {
                Some(cursor) => Some(place(&cursor)),
                None => return Err(Error::SessionNotFound(after.clone())),
            }
        }
    };
    let want = query.limit.saturating_add(1);
    // The held ones that changed here, where this process places them.
    let mut listed = held.changed_after(query, from.as_ref(), want);
    // A stored session after the last of a full page of those is on no
    // page before the next.
    let bound = (listed.len() == want).then(|| listed.last().map(place)).flatten();
    // The stored ones, in the index's order, but those placed above (and
    // any that changed here since: it is listed where it now stands).
    let placed: HashSet<SessionId> = listed.iter().map(|s| s.id.clone()).collect();
    let mut stored = 0;
    let mut at = from;
    let mut ask = want;
    loop {
        let mut rows = sessions_after(conn, query, at.as_ref(), ask)?;
        let full = rows.len() == ask;
        if let Some(last) = rows.last() {
            at = Some(place(last));
        }
        rows.retain(|row| !placed.contains(&row.id) && !held.changed_here(&row.id));
        held.overlay(&mut rows);
        stored += rows.len();
        listed.append(&mut rows);
        let past = match (&at, &bound) {
            (Some((at, id)), Some((bound_at, bound_id))) => list_place(*at, id) > list_place(*bound_at, bound_id),
            _ => false,
        };
        if stored >= want || !full || past {
            break;
        }
        ask = ask.saturating_mul(2);
    }
    listed.sort_by(newest_first);
    let more = listed.len() > query.limit;
    listed.truncate(query.limit);
    Ok(SessionPage { sessions: listed, more })
}

/// Up to `limit` of `query`'s sessions in the index's order, after `from`.
fn sessions_after(
    conn: &Connection,
    query: &SessionQuery,
    from: Option<&Place>,
    limit: usize,
) -> Result<Vec<SessionSummary>> {
    let tenant = match &query.tenant {
        TenantScope::Only(only) => only.clone().map_or(Value::Null, Value::Text),
        TenantScope::Any => Value::Null,
    };
    let (at, id) = from.map_or((i64::MAX, String::new()), |(at, id)| {
        (i64::try_from(at.0).unwrap_or(i64::MAX), id.to_string())
    });
    let mut stmt = conn.prepare_cached(&ROWS_AFTER)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(rusqlite::params![tenant, at, id, limit], summary)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The query of [`sessions_after`]: `at <= ?2` bounds the index's range,
/// the rest orders ties by id.
pub(super) static ROWS_AFTER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{COLUMNS} WHERE s.tenant IS ?1 AND s.at > 0 AND s.at <= ?2 AND (s.at < ?2 OR s.id > ?3)
         AND instr(s.id, ':') = 0 AND h.head != 0 ORDER BY s.at DESC, s.id LIMIT ?4"
    )
});

/// The session `id`, if it took an input.
fn summary_of(conn: &Connection, id: &SessionId) -> Result<Option<SessionSummary>> {
    static ONE: LazyLock<String> = LazyLock::new(|| format!("{COLUMNS} WHERE s.id = ?1 AND h.head != 0"));
    let mut stmt = conn.prepare_cached(&ONE)?;
    Ok(stmt.query_row([id.as_str()], summary).optional()?)
}
