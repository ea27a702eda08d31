//! When people mean: "March", "in March", "next month", "March 2026",
//! "2025-03", or a day ("next Friday", "Mar 14"), resolved against the day
//! they asked.

use chrono::{Datelike, Days, Months, NaiveDate};

use crate::dates::parse_date;

/// A stretch of days: a whole month or one day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Period {
    /// Every day of a month (its first day).
    Month(NaiveDate),
    /// One day.
    Day(NaiveDate),
}

impl Period {
    /// The first day.
    pub fn first(self) -> NaiveDate {
        match self {
            Period::Month(first) | Period::Day(first) => first,
        }
    }

    /// The last day.
    pub fn last(self) -> NaiveDate {
        match self {
            Period::Day(day) => day,
            Period::Month(first) => first
                .checked_add_months(Months::new(1))
                .and_then(|next| next.checked_sub_days(Days::new(1)))
                .unwrap_or(first),
        }
    }

    /// For people: "March 2025" or "Fri 7 Mar 2025".
    pub fn label(self) -> String {
        match self {
            Period::Month(first) => first.format("%B %Y").to_string(),
            Period::Day(day) => day.format("%a %-d %b %Y").to_string(),
        }
    }
}

fn month_number(word: &str) -> Option<u32> {
    Some(match word.trim_end_matches('.') {
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
    })
}

/// Reads `text` as a month or a day, relative words resolved against
/// `today`. A month without a year is its next occurrence (this month
/// included); `None` when it is neither.
pub fn parse_period(text: &str, today: NaiveDate) -> Option<Period> {
    let lower = text.trim().to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .filter(|w| !matches!(*w, "in" | "during" | "for" | "the" | "of" | "month"))
        .collect();
    let this_month = NaiveDate::from_ymd_opt(today.year(), today.month(), 1)?;
    match words.as_slice() {
        ["this"] => return Some(Period::Month(this_month)),
        ["next"] => {
            return this_month.checked_add_months(Months::new(1)).map(Period::Month);
        }
        [word] => {
            if let Some(m) = month_number(word) {
                let year = if m >= today.month() {
                    today.year()
                } else {
                    today.year() + 1
                };
                return NaiveDate::from_ymd_opt(year, m, 1).map(Period::Month);
            }
            // 2025-03
            if let Some((y, m)) = word.split_once('-') {
                if let (Ok(y), Ok(m)) = (y.parse::<i32>(), m.parse::<u32>()) {
                    if y > 999 && (1..=12).contains(&m) && word.len() <= 7 {
                        return NaiveDate::from_ymd_opt(y, m, 1).map(Period::Month);
                    }
                }
            }
        }
        [word, year] => {
            if let (Some(m), Ok(y)) = (month_number(word), year.parse::<i32>()) {
                if y > 999 {
                    return NaiveDate::from_ymd_opt(y, m, 1).map(Period::Month);
                }
            }
        }
        _ => {}
    }
    parse_date(text, today).ok().map(Period::Day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn months_resolve_to_their_next_occurrence() {
        let today = d(2025, 3, 5);
        assert_eq!(parse_period("March", today), Some(Period::Month(d(2025, 3, 1))));
        assert_eq!(parse_period("in March", today), Some(Period::Month(d(2025, 3, 1))));
        assert_eq!(parse_period("feb", today), Some(Period::Month(d(2026, 2, 1))));
        assert_eq!(parse_period("next month", today), Some(Period::Month(d(2025, 4, 1))));
        assert_eq!(parse_period("this month", today), Some(Period::Month(d(2025, 3, 1))));
        assert_eq!(parse_period("March 2027", today), Some(Period::Month(d(2027, 3, 1))));
        assert_eq!(parse_period("2026-07", today), Some(Period::Month(d(2026, 7, 1))));
        assert_eq!(parse_period("next Friday", today), Some(Period::Day(d(2025, 3, 7))));
        assert_eq!(parse_period("2025-03-20", today), Some(Period::Day(d(2025, 3, 20))));
        assert_eq!(parse_period("whenever", today), None);
        assert_eq!(Period::Month(d(2025, 2, 1)).last(), d(2025, 2, 28));
        assert_eq!(Period::Month(d(2025, 3, 1)).label(), "March 2025");
    }
}
