//! Due dates as people write them: `2025-03-07`, `today`, `tomorrow`,
//! `Friday`, `next Friday`, `in 3 days`, `in 2 weeks`, resolved against a
//! reference date (the day the tool runs).
//!
//! A bare weekday (`Friday`, `this Friday`, `on Friday`) is the nearest one
//! from today on, today included; `next Friday` is the nearest one after
//! today (so on a Friday, `Friday` is today and `next Friday` is in a week).

use chrono::{Datelike, Days, NaiveDate, Weekday};

/// Why a date could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "I could not read the date {0:?}. Write it as YYYY-MM-DD (e.g. 2025-03-07), \
     or as today, tomorrow, a weekday (Friday, next Friday), or \"in 3 days\"."
)]
pub struct DateError(pub String);

fn weekday(word: &str) -> Option<Weekday> {
    let day = match word {
        "monday" | "mon" => Weekday::Mon,
        "tuesday" | "tue" | "tues" => Weekday::Tue,
        "wednesday" | "wed" => Weekday::Wed,
        "thursday" | "thu" | "thur" | "thurs" => Weekday::Thu,
        "friday" | "fri" => Weekday::Fri,
        "saturday" | "sat" => Weekday::Sat,
        "sunday" | "sun" => Weekday::Sun,
        _ => return None,
    };
    Some(day)
}

/// The first `day` on or after `from` (after it when `strictly_after`).
fn next_weekday(from: NaiveDate, day: Weekday, strictly_after: bool) -> Option<NaiveDate> {
    let mut ahead = (7 + day.num_days_from_monday() - from.weekday().num_days_from_monday()) % 7;
    if ahead == 0 && strictly_after {
        ahead = 7;
    }
    from.checked_add_days(Days::new(u64::from(ahead)))
}

/// Reads `text` as a date, relative words resolved against `today`.
pub fn parse_date(text: &str, today: NaiveDate) -> Result<NaiveDate, DateError> {
    let error = || DateError(text.trim().to_string());
    let lower = text.trim().to_lowercase();
    let lower = lower.trim_end_matches(['.', '!', '?']);
    if let Ok(date) = NaiveDate::parse_from_str(lower, "%Y-%m-%d") {
        return Ok(date);
    }
    let words: Vec<&str> = lower.split_whitespace().collect();
    let resolved = match words.as_slice() {
        ["today"] | ["now"] => Some(today),
        ["tomorrow"] => today.checked_add_days(Days::new(1)),
        ["yesterday"] => today.checked_sub_days(Days::new(1)),
        ["next", "week"] => today.checked_add_days(Days::new(7)),
        ["in", n, unit] => {
            let n: u64 = n.parse().map_err(|_| error())?;
            match *unit {
                "day" | "days" => today.checked_add_days(Days::new(n)),
                "week" | "weeks" => n.checked_mul(7).and_then(|d| today.checked_add_days(Days::new(d))),
                _ => None,
            }
        }
        ["next", day] => weekday(day).and_then(|d| next_weekday(today, d, true)),
        [day] | ["this", day] | ["on", day] => weekday(day).and_then(|d| next_weekday(today, d, false)),
        _ => None,
    };
    resolved.ok_or_else(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Wednesday.
    fn wed() -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, 3, 5).unwrap()
    }

    fn d(m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, m, day).unwrap()
    }

    #[test]
    fn iso_dates_and_relative_words() {
        assert_eq!(parse_date("2025-12-24", wed()), Ok(d(12, 24)));
        assert_eq!(parse_date(" Today ", wed()), Ok(wed()));
        assert_eq!(parse_date("tomorrow", wed()), Ok(d(3, 6)));
        assert_eq!(parse_date("yesterday", wed()), Ok(d(3, 4)));
        assert_eq!(parse_date("in 3 days", wed()), Ok(d(3, 8)));
        assert_eq!(parse_date("in 2 weeks", wed()), Ok(d(3, 19)));
        assert_eq!(parse_date("next week", wed()), Ok(d(3, 12)));
    }

    #[test]
    fn weekdays_are_the_nearest_one_ahead() {
        assert_eq!(parse_date("Friday", wed()), Ok(d(3, 7)));
        assert_eq!(parse_date("this fri", wed()), Ok(d(3, 7)));
        assert_eq!(parse_date("next Friday", wed()), Ok(d(3, 7)));
        assert_eq!(parse_date("Monday", wed()), Ok(d(3, 10)));
        // On the day itself: "Wednesday" is today, "next Wednesday" in a week.
        assert_eq!(parse_date("wednesday", wed()), Ok(wed()));
        assert_eq!(parse_date("next wednesday", wed()), Ok(d(3, 12)));
    }

    #[test]
    fn anything_else_is_a_clear_error() {
        let e = parse_date("someday", wed()).unwrap_err();
        assert!(e.to_string().contains("\"someday\""), "{e}");
        assert!(e.to_string().contains("YYYY-MM-DD"), "{e}");
        assert!(parse_date("2025-02-30", wed()).is_err());
        assert!(parse_date("in many days", wed()).is_err());
        assert!(parse_date("in 99999999999999999 weeks", wed()).is_err());
    }
}
