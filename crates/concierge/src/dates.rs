//! Dates as people write them: `2025-03-07`, `today`, `tomorrow`,
//! `yesterday`, `Friday`, `next Friday`, `last Monday`, `in 3 days`,
//! `2 days ago`, `Oct 28`, `28th of October`, resolved against a reference
//! date (the day the person asked).
//!
//! Tools read dates two ways. A due date or a reminder looks ahead
//! ([`parse_date`]): a bare weekday (`Friday`, `this Friday`, `on Friday`)
//! is the nearest one from today on, today included; `next Friday` is the
//! nearest one after today (so on a Friday, `Friday` is today and `next
//! Friday` is in a week); a day without a year (`Oct 28`) is its next
//! occurrence. Something that happened looks back ([`parse_past_date`]):
//! `Monday` is the nearest one up to today, `last Monday` the nearest one
//! before today, and `Oct 28` its last occurrence.

use chrono::{Datelike, Days, NaiveDate, Weekday};

/// Why a date could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "I could not read the date {0:?}. Write it as YYYY-MM-DD (e.g. 2025-03-07), \
     or as today, tomorrow, yesterday, a weekday (Friday, next Friday), a day \
     (Oct 28), or \"in 3 days\"."
)]
pub struct DateError(pub String);

/// Which way a date without a year or a week points from today.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tense {
    /// Something to do: a due date, a reminder.
    Future,
    /// Something that happened: a call, a meeting.
    Past,
}

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

fn month(word: &str) -> Option<u32> {
    let month = match word.trim_end_matches('.') {
        "january" | "jan" => 1,
        "february" | "feb" => 2,
        "march" | "mar" => 3,
        "april" | "apr" => 4,
        "may" => 5,
        "june" | "jun" => 6,
        "july" | "jul" => 7,
        "august" | "aug" => 8,
        "september" | "sep" | "sept" => 9,
        "october" | "oct" => 10,
        "november" | "nov" => 11,
        "december" | "dec" => 12,
        _ => return None,
    };
    Some(month)
}

/// A day of the month written `28`, `28th`, `1st`, `2nd`, `3rd`.
fn day_of_month(word: &str) -> Option<u32> {
    let digits = word
        .trim_end_matches(',')
        .trim_end_matches("st")
        .trim_end_matches("nd")
        .trim_end_matches("rd")
        .trim_end_matches("th");
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// The first `day` on or after `from` (after it when `strictly`).
fn next_weekday(from: NaiveDate, day: Weekday, strictly: bool) -> Option<NaiveDate> {
    let mut ahead = (7 + day.num_days_from_monday() - from.weekday().num_days_from_monday()) % 7;
    if ahead == 0 && strictly {
        ahead = 7;
    }
    from.checked_add_days(Days::new(u64::from(ahead)))
}

/// The last `day` on or before `from` (before it when `strictly`).
fn last_weekday(from: NaiveDate, day: Weekday, strictly: bool) -> Option<NaiveDate> {
    let mut back = (7 + from.weekday().num_days_from_monday() - day.num_days_from_monday()) % 7;
    if back == 0 && strictly {
        back = 7;
    }
    from.checked_sub_days(Days::new(u64::from(back)))
}

/// `month`/`day` in `year` if given, else its next (or last) occurrence from `today`.
fn month_day(today: NaiveDate, month: u32, day: u32, year: Option<i32>, tense: Tense) -> Option<NaiveDate> {
    if let Some(year) = year {
        return NaiveDate::from_ymd_opt(year, month, day);
    }
    let this_year = NaiveDate::from_ymd_opt(today.year(), month, day);
    match tense {
        Tense::Future => match this_year {
            Some(date) if date >= today => Some(date),
            _ => NaiveDate::from_ymd_opt(today.year() + 1, month, day),
        },
        Tense::Past => match this_year {
            Some(date) if date <= today => Some(date),
            _ => NaiveDate::from_ymd_opt(today.year() - 1, month, day),
        },
    }
}

fn year(word: &str) -> Option<i32> {
    word.parse().ok().filter(|y| (1000..=9999).contains(y))
}

fn count(word: &str) -> Option<u64> {
    match word {
        "a" | "an" | "one" => Some(1),
        "two" => Some(2),
        "three" => Some(3),
        "four" => Some(4),
        "five" => Some(5),
        other => other.parse().ok(),
    }
}

fn days_in(n: u64, unit: &str) -> Option<u64> {
    match unit {
        "day" | "days" => Some(n),
        "week" | "weeks" => n.checked_mul(7),
        _ => None,
    }
}

/// Reads `text` as a date looking ahead (a due date, a reminder), relative
/// words resolved against `today`.
pub fn parse_date(text: &str, today: NaiveDate) -> Result<NaiveDate, DateError> {
    parse_date_in(text, today, Tense::Future)
}

/// Reads `text` as the date something happened, relative words resolved
/// against `today` (`Monday` is the last one, `Oct 28` this year's unless
/// that is still ahead).
pub fn parse_past_date(text: &str, today: NaiveDate) -> Result<NaiveDate, DateError> {
    parse_date_in(text, today, Tense::Past)
}

/// Reads `text` as a date, words without a year or week resolved toward `tense`.
pub fn parse_date_in(text: &str, today: NaiveDate, tense: Tense) -> Result<NaiveDate, DateError> {
    let error = || DateError(text.trim().to_string());
    let lower = text.trim().to_lowercase();
    let lower = lower.trim_end_matches(['.', '!', '?']);
    if let Ok(date) = NaiveDate::parse_from_str(lower, "%Y-%m-%d") {
        return Ok(date);
    }
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let words = match words.as_slice() {
        ["on", rest @ ..] | ["by", rest @ ..] if !rest.is_empty() => rest,
        all => all,
    };
    let before = |n: u64| today.checked_sub_days(Days::new(n));
    let after = |n: u64| today.checked_add_days(Days::new(n));
    let resolved = match words {
        ["today"] | ["now"] | ["tonight"] | ["this", "morning" | "afternoon" | "evening"] | ["earlier", "today"] => {
            Some(today)
        }
        ["tomorrow"] => after(1),
        ["yesterday"] => before(1),
        ["next", "week"] => after(7),
        ["last", "week"] => before(7),
        ["in", n, unit] => count(n).and_then(|n| days_in(n, unit)).and_then(after),
        [n, unit, "ago"] => count(n).and_then(|n| days_in(n, unit)).and_then(before),
        ["next", day] => weekday(day).and_then(|d| next_weekday(today, d, true)),
        ["last", day] => weekday(day).and_then(|d| last_weekday(today, d, true)),
        [day] | ["this", day] => weekday(day).and_then(|d| match tense {
            Tense::Future => next_weekday(today, d, false),
            Tense::Past => last_weekday(today, d, false),
        }),
        [m, d] => month(m)
            .zip(day_of_month(d))
            .or_else(|| month(d).zip(day_of_month(m)))
            .and_then(|(m, d)| month_day(today, m, d, None, tense)),
        [d, "of", m] => month(m)
            .zip(day_of_month(d))
            .and_then(|(m, d)| month_day(today, m, d, None, tense)),
        [m, d, y] => month(m)
            .zip(day_of_month(d))
            .or_else(|| month(d).zip(day_of_month(m)))
            .zip(year(y))
            .and_then(|((m, d), y)| month_day(today, m, d, Some(y), tense)),
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
        assert_eq!(parse_date("in a week", wed()), Ok(d(3, 12)));
        assert_eq!(parse_date("next week", wed()), Ok(d(3, 12)));
        assert_eq!(parse_past_date("2 days ago", wed()), Ok(d(3, 3)));
        assert_eq!(parse_past_date("a week ago", wed()), Ok(d(2, 26)));
        assert_eq!(parse_past_date("this morning", wed()), Ok(wed()));
    }

    #[test]
    fn weekdays_are_the_nearest_one_ahead() {
        assert_eq!(parse_date("Friday", wed()), Ok(d(3, 7)));
        assert_eq!(parse_date("this fri", wed()), Ok(d(3, 7)));
        assert_eq!(parse_date("on Friday", wed()), Ok(d(3, 7)));
        assert_eq!(parse_date("next Friday", wed()), Ok(d(3, 7)));
        assert_eq!(parse_date("Monday", wed()), Ok(d(3, 10)));
        assert_eq!(parse_date("next Tuesday", wed()), Ok(d(3, 11)));
        // On the day itself: "Wednesday" is today, "next Wednesday" in a week.
        assert_eq!(parse_date("wednesday", wed()), Ok(wed()));
        assert_eq!(parse_date("next wednesday", wed()), Ok(d(3, 12)));
    }

    #[test]
    fn past_weekdays_are_the_nearest_one_behind() {
        assert_eq!(parse_past_date("Monday", wed()), Ok(d(3, 3)));
        assert_eq!(parse_past_date("on Friday", wed()), Ok(d(2, 28)));
        assert_eq!(parse_past_date("wednesday", wed()), Ok(wed()));
        assert_eq!(parse_past_date("last Wednesday", wed()), Ok(d(2, 26)));
        assert_eq!(parse_past_date("last week", wed()), Ok(d(2, 26)));
    }

    #[test]
    fn days_of_the_year_point_ahead_or_back() {
        assert_eq!(parse_date("Oct 28", wed()), Ok(d(10, 28)));
        assert_eq!(parse_date("Oct 28th", wed()), Ok(d(10, 28)));
        assert_eq!(parse_date("28 October", wed()), Ok(d(10, 28)));
        assert_eq!(parse_date("the 28th of October", wed()).ok(), None);
        assert_eq!(parse_date("28th of October", wed()), Ok(d(10, 28)));
        assert_eq!(
            parse_date("on March 1st", wed()),
            Ok(NaiveDate::from_ymd_opt(2026, 3, 1).unwrap())
        );
        assert_eq!(parse_past_date("March 1st", wed()), Ok(d(3, 1)));
        assert_eq!(
            parse_past_date("Oct 28", wed()),
            Ok(NaiveDate::from_ymd_opt(2024, 10, 28).unwrap())
        );
        assert_eq!(
            parse_date("Oct 28, 2026", wed()),
            Ok(NaiveDate::from_ymd_opt(2026, 10, 28).unwrap())
        );
        assert!(parse_date("Feb 30", wed()).is_err());
    }

    #[test]
    fn anything_else_is_a_clear_error() {
        let e = parse_date("someday", wed()).unwrap_err();
        assert!(e.to_string().contains("\"someday\""), "{e}");
        assert!(e.to_string().contains("YYYY-MM-DD"), "{e}");
        assert!(parse_date("2025-02-30", wed()).is_err());
        assert!(parse_date("in many days", wed()).is_err());
        assert!(parse_date("in 99999999999999999 weeks", wed()).is_err());
        assert!(parse_past_date("99999999999999999 weeks ago", wed()).is_err());
        assert!(parse_date("Oct 32", wed()).is_err());
    }
}
