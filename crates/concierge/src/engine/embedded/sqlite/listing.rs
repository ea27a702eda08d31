//! Listing sessions from the database: every one, or one tenant's read
//! through the tenant's index.

use concierge_core::SessionId;
use rusqlite::types::Value;
use rusqlite::{Connection, Row};

use super::Timestamp;
use crate::engine::{SessionQuery, SessionSummary, TenantScope};
use crate::error::Result;

/// What a list shows of each session (its `sessions` and `heads` rows).
const COLUMNS: &str = "SELECT s.id, s.agent, h.live, h.at, s.tenant FROM sessions s JOIN heads h ON h.no = s.no";

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
/// read through `sessions_by_tenant`, so the list of one costs what that
/// tenant has, not what every tenant has. The engine adds what it knows
/// of the sessions it holds, then takes the page.
pub(super) fn sessions_for(conn: &Connection, query: &SessionQuery) -> Result<Vec<SessionSummary>> {
    let mut filters = vec!["h.head != 0"];
    let mut params: Vec<Value> = Vec::new();
    if let TenantScope::Only(only) = &query.tenant {
        filters.push("s.tenant IS ?");
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
