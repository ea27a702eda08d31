//! How the domains write times and days in SQLite (`2025-03-05 10:00:00`,
//! `2025-03-05`), read them back, and date their seed rows.

use chrono::{Days, NaiveDate, NaiveDateTime};

const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";
const DAY_FORMAT: &str = "%Y-%m-%d";

/// A time as stored (`2025-03-05 10:00:00`).
pub fn stored_time(t: NaiveDateTime) -> String {
    t.format(TIME_FORMAT).to_string()
}

/// A day as stored (`2025-03-05`).
pub fn stored_day(day: NaiveDate) -> String {
    day.format(DAY_FORMAT).to_string()
}

/// A stored time, or what is wrong with it.
pub fn read_time(text: &str) -> Result<NaiveDateTime, String> {
    NaiveDateTime::parse_from_str(text, TIME_FORMAT).map_err(|e| format!("time {text:?}: {e}"))
}

/// A stored day, or what is wrong with it.
pub fn read_day(text: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text, DAY_FORMAT).map_err(|e| format!("date {text:?}: {e}"))
}

/// `days` after `day` (before it when negative); `day` itself past the
/// calendar's end.
pub fn add_days(day: NaiveDate, days: i64) -> NaiveDate {
    if days >= 0 {
        day.checked_add_days(Days::new(days.unsigned_abs()))
    } else {
        day.checked_sub_days(Days::new(days.unsigned_abs()))
    }
    .unwrap_or(day)
}
