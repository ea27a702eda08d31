//! When a schedule runs: once at a time, or on a cron expression (UTC).

use chrono::{DateTime, SecondsFormat, Utc};
use concierge_core::Timestamp;
use croner::Cron;
use serde::{Deserialize, Serialize};

use super::ScheduleError;

/// How late a one-time schedule may be added and still run (a clock a little behind).
const PAST_GRACE_MS: u64 = 60_000;

/// When a schedule runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// Once, at this time (milliseconds since the Unix epoch).
    At(Timestamp),
    /// On every time a five-field cron expression matches (minute hour
    /// day-of-month month day-of-week, in UTC).
    Cron(String),
}

impl When {
    /// Once, at `at`.
    pub fn at(at: Timestamp) -> Self {
        When::At(at)
    }

    /// Once, at an RFC 3339 time (`2026-12-01T09:00:00Z`, or with an offset).
    pub fn at_time(text: &str) -> Result<Self, ScheduleError> {
        let time = DateTime::parse_from_rfc3339(text.trim()).map_err(|_| ScheduleError::BadTime(text.to_owned()))?;
        let millis = u64::try_from(time.timestamp_millis()).map_err(|_| ScheduleError::BadTime(text.to_owned()))?;
        Ok(When::At(Timestamp(millis)))
    }

    /// On a cron expression, checked here: five fields, e.g. `0 9 * * 1-5`.
    pub fn cron(expression: &str) -> Result<Self, ScheduleError> {
        let expression = expression.trim();
        parse(expression)?;
        Ok(When::Cron(expression.to_owned()))
    }

    /// When it first runs, counting from `now`; `None` if never.
    pub(crate) fn first(&self, now: Timestamp) -> Result<Timestamp, ScheduleError> {
        match self {
            When::At(at) if at.0.saturating_add(PAST_GRACE_MS) < now.0 => Err(ScheduleError::InThePast),
            When::At(at) => Ok(*at),
            When::Cron(expression) => {
                let cron = parse(expression)?;
                next(&cron, now).ok_or_else(|| ScheduleError::NeverDue(expression.clone()))
            }
        }
    }

    /// When it runs after `after`; `None` for a one-time schedule (or a cron
    /// expression that stopped matching, which a checked one does not).
    pub(crate) fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        match self {
            When::At(_) => None,
            When::Cron(expression) => parse(expression).ok().and_then(|cron| next(&cron, after)),
        }
    }

    /// In words: "once at 2026-12-01 09:00 UTC", "on cron 0 9 * * 1-5 (UTC)".
    pub fn describe(&self) -> String {
        match self {
            When::At(at) => format!("once at {}", show_time(*at)),
            When::Cron(expression) => format!("on cron '{expression}' (UTC)"),
        }
    }
}

/// A time as people read it: `2026-12-01 09:00 UTC`.
pub fn show_time(at: Timestamp) -> String {
    i64::try_from(at.0)
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_millis)
        .map_or_else(|| at.0.to_string(), |t| t.format("%Y-%m-%d %H:%M UTC").to_string())
}

/// A time in RFC 3339 (for tools and JSON).
pub fn rfc3339(at: Timestamp) -> String {
    i64::try_from(at.0)
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_millis)
        .map_or_else(|| at.0.to_string(), |t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

fn parse(expression: &str) -> Result<Cron, ScheduleError> {
    let fields = expression.split_whitespace().count();
    if fields != 5 {
        return Err(ScheduleError::BadCron {
            expression: expression.to_owned(),
            problem: format!("it has {fields} fields"),
        });
    }
    Cron::new(expression).parse().map_err(|e| ScheduleError::BadCron {
        expression: expression.to_owned(),
        problem: e.to_string(),
    })
}

/// The first time `cron` matches strictly after `after`.
fn next(cron: &Cron, after: Timestamp) -> Option<Timestamp> {
    let after = DateTime::<Utc>::from_timestamp_millis(i64::try_from(after.0).ok()?)?;
    let next = cron.find_next_occurrence(&after, false).ok()?;
    u64::try_from(next.timestamp_millis()).ok().map(Timestamp)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn at(text: &str) -> Timestamp {
        match When::at_time(text).unwrap() {
            When::At(at) => at,
            When::Cron(_) => unreachable!(),
        }
    }

    #[test]
    fn cron_runs_on_its_next_match_in_utc() {
        let weekdays = When::cron("0 9 * * 1-5").unwrap();
        // Friday 2026-11-27 10:00 UTC → Monday 09:00.
        let first = weekdays.first(at("2026-11-27T10:00:00Z")).unwrap();
        assert_eq!(first, at("2026-11-30T09:00:00Z"));
        assert_eq!(weekdays.next_after(first), Some(at("2026-12-01T09:00:00Z")));
    }

    #[test]
    fn bad_expressions_and_times_say_what_to_write() {
        let error = When::cron("every day").unwrap_err().to_string();
        assert!(error.contains("five fields"), "{error}");
        assert!(When::cron("61 * * * *").is_err());
        assert!(When::cron("0 0 9 * * 1").is_err(), "six fields are refused");
        let error = When::at_time("next tuesday").unwrap_err().to_string();
        assert!(error.contains("RFC 3339"), "{error}");
    }

    #[test]
    fn a_one_time_schedule_runs_once_and_not_in_the_past() {
        let once = When::at_time("2026-12-01T09:00:00+01:00").unwrap();
        assert_eq!(
            once.first(at("2026-11-27T10:00:00Z")).unwrap(),
            at("2026-12-01T08:00:00Z")
        );
        assert_eq!(once.next_after(at("2026-12-01T08:00:00Z")), None);
        assert!(matches!(
            once.first(at("2026-12-02T00:00:00Z")),
            Err(ScheduleError::InThePast)
        ));
        assert_eq!(once.describe(), "once at 2026-12-01 08:00 UTC");
    }
}
