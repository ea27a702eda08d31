//! When a schedule runs: once at a time, or on a cron expression (UTC).

use chrono::{DateTime, SecondsFormat, Utc};
use concierge_core::Timestamp;
use croner::Cron;
use serde::{Deserialize, Serialize};

use super::ScheduleError;

/// The cron expressions accepted: five fields of numbers, `*`, ranges
/// (`1-5`; one that wraps, `22-2`, means 22, 23, 0, 1, 2), steps (`*/15`)
/// and lists (`0,30`), separated by spaces. The OpenAPI document gives it
/// as the `cron` field's pattern.
pub const CRON_PATTERN: &str = concat!(
    r"^(?:\*|[0-5]?[0-9](?:-[0-5]?[0-9])?)(?:/[1-9][0-9]?)?(?:,(?:\*|[0-5]?[0-9](?:-[0-5]?[0-9])?)(?:/[1-9][0-9]?)?)*",
    r" +(?:\*|(?:[01]?[0-9]|2[0-3])(?:-(?:[01]?[0-9]|2[0-3]))?)(?:/[1-9][0-9]?)?(?:,(?:\*|(?:[01]?[0-9]|2[0-3])(?:-(?:[01]?[0-9]|2[0-3]))?)(?:/[1-9][0-9]?)?)*",
    r" +(?:\*|(?:0?[1-9]|[12][0-9]|3[01])(?:-(?:0?[1-9]|[12][0-9]|3[01]))?)(?:/[1-9][0-9]?)?(?:,(?:\*|(?:0?[1-9]|[12][0-9]|3[01])(?:-(?:0?[1-9]|[12][0-9]|3[01]))?)(?:/[1-9][0-9]?)?)*",
    r" +(?:\*|(?:0?[1-9]|1[0-2])(?:-(?:0?[1-9]|1[0-2]))?)(?:/[1-9][0-9]?)?(?:,(?:\*|(?:0?[1-9]|1[0-2])(?:-(?:0?[1-9]|1[0-2]))?)(?:/[1-9][0-9]?)?)*",
    r" +(?:\*|0?[0-7](?:-0?[0-7])?)(?:/[1-9][0-9]?)?(?:,(?:\*|0?[0-7](?:-0?[0-7])?)(?:/[1-9][0-9]?)?)*$",
);

/// Each field's smallest and largest value (day of week: 0 and 7 are Sunday).
const BOUNDS: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];

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
        // A time before 1970 is long past: it runs at once.
        Ok(When::At(Timestamp(u64::try_from(time.timestamp_millis()).unwrap_or(0))))
    }

    /// On a cron expression, checked here: five fields, e.g. `0 9 * * 1-5`
    /// (see [`CRON_PATTERN`]).
    pub fn cron(expression: &str) -> Result<Self, ScheduleError> {
        parse(expression)?;
        Ok(When::Cron(expression.to_owned()))
    }

    /// When it first runs, counting from `now`: a time already passed runs
    /// at once; a cron expression that no day matches (`0 0 31 2 *`) is refused.
    pub(crate) fn first(&self, now: Timestamp) -> Result<Timestamp, ScheduleError> {
        match self {
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
    static PATTERN: std::sync::LazyLock<Option<regex::Regex>> =
        std::sync::LazyLock::new(|| regex::Regex::new(CRON_PATTERN).ok());
    let bad = |problem: String| ScheduleError::BadCron {
        expression: expression.to_owned(),
        problem,
    };
    let fields = expression.split_whitespace().count();
    if fields != 5 {
        return Err(bad(format!("it has {fields} fields")));
    }
    if !PATTERN.as_ref().is_some_and(|p| p.is_match(expression)) {
        return Err(bad(
            "each field is numbers, *, ranges, steps or lists, within its bounds".into(),
        ));
    }
    let fields: Vec<String> = expression
        .split_whitespace()
        .zip(BOUNDS)
        .map(|(field, bounds)| unwrap_ranges(field, bounds))
        .collect();
    Cron::new(&fields.join(" ")).parse().map_err(|e| bad(e.to_string()))
}

/// A field as the plain list of values it stands for (`*` when it is every
/// value): ranges that wrap (`22-2`) go round, steps count from the start
/// of their range, day of week 7 is Sunday (0). The parser then sees only
/// numbers, whatever combination of forms the field used.
fn unwrap_ranges(field: &str, (low, high): (u32, u32)) -> String {
    let mut values = std::collections::BTreeSet::new();
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, step.parse::<usize>().unwrap_or(1).max(1)),
            None => (item, 1),
        };
        let number = |text: &str| {
            let n = text.parse::<u32>().unwrap_or(low);
            if high == 6 { n % 7 } else { n }
        };
        let span: Vec<u32> = match range.split_once('-') {
            _ if range == "*" => (low..=high).collect(),
            Some((from, to)) => {
                let (from, to) = (number(from), number(to));
                if from <= to {
                    (from..=to).collect()
                } else {
                    (from..=high).chain(low..=to).collect()
                }
            }
            // `a/s`: from a to the end, every s.
            None if step > 1 => (number(range)..=high).collect(),
            None => vec![number(range)],
        };
        values.extend(span.into_iter().step_by(step));
    }
    if values.len() == (low..=high).count() {
        return "*".into();
    }
    values.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
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
        assert!(When::cron("0 9 * * MON").is_err(), "names are not in the pattern");
        assert!(matches!(
            When::cron("0 0 31 2 *").unwrap().first(at("2026-11-27T10:00:00Z")),
            Err(ScheduleError::NeverDue(_))
        ));
    }

    #[test]
    fn any_expression_of_the_pattern_parses() {
        let odd = "00,9-10,07-16,51,*/77,51-5/69 05-20/2 */8,02-19,14/99,01-01 *,12,07-04/46 */48,1-3/8,7";
        assert!(When::cron(odd).unwrap().first(at("2026-11-27T10:00:00Z")).is_ok());
        let pattern = regex::Regex::new(CRON_PATTERN).unwrap();
        assert!(pattern.is_match(odd) && pattern.is_match("0 9 * * 1-5") && !pattern.is_match("0 9 * * MON"));
    }

    #[test]
    fn a_range_that_wraps_goes_round() {
        let nights = When::cron("0 22-2/2 * * *").unwrap();
        let first = nights.first(at("2026-11-27T10:00:00Z")).unwrap();
        assert_eq!(first, at("2026-11-27T22:00:00Z"));
        assert_eq!(nights.next_after(first), Some(at("2026-11-28T00:00:00Z")));
        assert_eq!(
            nights.next_after(at("2026-11-28T00:00:00Z")),
            Some(at("2026-11-28T02:00:00Z"))
        );
        let weekend = When::cron("0 9 * * 6-0").unwrap();
        assert_eq!(
            weekend.first(at("2026-11-27T10:00:00Z")).unwrap(),
            at("2026-11-28T09:00:00Z")
        );
    }

    #[test]
    fn a_one_time_schedule_runs_once_and_at_once_if_its_time_passed() {
        let once = When::at_time("2026-12-01T09:00:00+01:00").unwrap();
        assert_eq!(
            once.first(at("2026-11-27T10:00:00Z")).unwrap(),
            at("2026-12-01T08:00:00Z")
        );
        assert_eq!(once.next_after(at("2026-12-01T08:00:00Z")), None);
        assert_eq!(
            once.first(at("2026-12-02T00:00:00Z")).unwrap(),
            at("2026-12-01T08:00:00Z")
        );
        assert_eq!(When::at_time("0001-01-01T00:00:00Z").unwrap(), When::at(Timestamp(0)));
        assert_eq!(once.describe(), "once at 2026-12-01 08:00 UTC");
    }
}
