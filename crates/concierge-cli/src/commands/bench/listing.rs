//! `concierge bench --tenants N`: what a page of one tenant's sessions costs
//! once the benchmark's sessions are spread over N tenants, beside reading
//! every session (what a list cost before it was indexed by tenant); and
//! what ending a conversation costs among them (it looks for the child
//! runs below it, which once meant reading every session).

use std::time::Instant;

use concierge::{Result, Runtime, SessionQuery};
use serde::Serialize;

use super::measure::{percentile, round};

/// Pages read to measure.
const PAGES: usize = 200;

/// The sessions in a page (the HTTP list's default).
const PAGE: usize = 100;

/// Conversations ended to measure (the benchmark's last ones).
const ENDS: usize = 50;

/// What listing costs.
#[derive(Debug, Serialize)]
pub struct ListFigures {
    /// The tenants the sessions are spread over.
    pub tenants: usize,
    /// A first page of one tenant's sessions, in milliseconds (median).
    pub list_page_ms_p50: f64,
    /// The same, 95th percentile.
    pub list_page_ms_p95: f64,
    /// The page after it (the list read on from the first page's last
    /// session), in milliseconds (median); `None` if no tenant had more
    /// than a page.
    pub list_next_page_ms_p50: Option<f64>,
    /// Reading every session once, in milliseconds.
    pub list_every_session_ms: f64,
    /// Ending one idle conversation, in milliseconds (median of [`ENDS`]).
    pub end_conversation_ms_p50: f64,
}

/// The tenant of session number `s` of `tenants`.
pub fn tenant_of(s: usize, tenants: usize) -> String {
    format!("tenant-{}", s % tenants.max(1))
}

/// Reads [`PAGES`] first pages, one tenant after another (and the page
/// after each, where there is one), then every
/// session once; then ends [`ENDS`] of the `sessions` conversations.
pub async fn measure(rt: &Runtime, tenants: usize, sessions: usize) -> Result<ListFigures> {
    let mut times = Vec::with_capacity(PAGES);
    let mut next = Vec::with_capacity(PAGES);
    for n in 0..PAGES {
        let tenant = tenant_of(n, tenants);
        let query = SessionQuery::new().tenant(Some(tenant.as_str())).limit(PAGE);
        let started = Instant::now();
        let page = rt.session_page(query.clone()).await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        if let (true, Some(last)) = (page.more, page.sessions.last()) {
            let started = Instant::now();
            rt.session_page(query.after(last.id.clone())).await?;
            next.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    next.sort_by(f64::total_cmp);
    let started = Instant::now();
    rt.sessions().await?;
    let every = started.elapsed().as_secs_f64() * 1000.0;
    let mut ends = Vec::with_capacity(ENDS);
    for s in sessions.saturating_sub(ENDS)..sessions {
        let started = Instant::now();
        rt.end(super::session_of(s), "the benchmark is over").await?;
        ends.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    ends.sort_by(f64::total_cmp);
    Ok(ListFigures {
        tenants,
        list_page_ms_p50: round(percentile(&times, 50.0), 3),
        list_page_ms_p95: round(percentile(&times, 95.0), 3),
        list_next_page_ms_p50: (!next.is_empty()).then(|| round(percentile(&next, 50.0), 3)),
        list_every_session_ms: round(every, 2),
        end_conversation_ms_p50: round(percentile(&ends, 50.0), 3),
    })
}
