//! The Query agent's tools: the dashboard, a contact's timeline, the labels
//! in use, and date ranges in words ("last week").

use std::collections::BTreeMap;

use chrono::{Datelike, Days, Months, NaiveDate};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Outcome, contact_json, contact_or, day, member_arg};
use crate::crm::store::{Contact, CrmStore};
use crate::domain_db::stored_day;
use crate::toolkit::{db_tool, failed, invalid, plural, read_only, sentence_case};

/// `get_dashboard_stats`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct DashboardArgs {
    /// Only this team member's numbers: a user name, or "me" for the person asking.
    #[serde(default)]
    pub team_member: Option<String>,
}

db_tool!(
    /// Counts contacts, overdue follow-ups, open reminders and the week's
    /// reminders, and the interactions of the last 30 days, for the whole
    /// team or one member ("me" for the person asking).
    GetDashboardStats, "get_dashboard_stats", CrmStore, "crm", DashboardArgs, read_only(), None,
    |store, args, cx| -> Outcome {
        let crm = store.read().map_err(failed)?;
        let today = store.db().asked_at(&cx).date();
        let member = member_arg(&crm, &cx, args.team_member.as_deref())?;
        let mine = |owner: Option<i64>| member.is_none_or(|m| owner == Some(m.id));
        let contacts: Vec<&Contact> = crm.contacts.iter().filter(|c| mine(c.owner_id)).collect();
        let overdue = contacts.iter().filter(|c| crm.is_overdue(c.id, today)).count();
        let week = today.checked_add_days(Days::new(7)).unwrap_or(today);
        let open: Vec<_> = crm
            .reminders
            .iter()
            .filter(|r| !r.done && contacts.iter().any(|c| c.id == r.contact_id))
            .collect();
        let this_week = open.iter().filter(|r| r.due_on >= today && r.due_on <= week).count();
        let month_ago = today.checked_sub_days(Days::new(30)).unwrap_or(today);
        let recent = crm
            .interactions
            .iter()
            .filter(|i| i.occurred_on >= month_ago && contacts.iter().any(|c| c.id == i.contact_id))
            .count();
        let whose = match member {
            Some(m) => format!("{}: ", m.name),
            None => "The team: ".to_string(),
        };
        Ok(Outcome::Done(json!({
            "team_member": member.map(|m| m.name.clone()),
            "contacts": contacts.len(),
            "overdue": overdue,
            "open_reminders": open.len(),
            "due_this_week": this_week,
            "interactions_last_30_days": recent,
            "message": format!(
                "{whose}{}, {overdue} overdue; {}, {this_week} due in the next 7 days; {} in the last 30 days.",
                plural(contacts.len(), "contact", "contacts"),
                plural(open.len(), "open reminder", "open reminders"),
                plural(recent, "interaction", "interactions"),
            ),
        })))
    }
);

/// `get_contact_timeline`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct TimelineArgs {
    /// The contact's number, when known (it wins over `contact`).
    #[serde(default)]
    pub contact_id: Option<i64>,
    /// The contact's name as the person said it.
    #[serde(default)]
    pub contact: Option<String>,
    /// At most this many entries (default 10), newest first.
    #[serde(default)]
    pub limit: Option<u32>,
}

db_tool!(
    /// Shows a contact's history, newest first: interactions, notes and
    /// reminders (open and done).
    GetContactTimeline, "get_contact_timeline", CrmStore, "crm", TimelineArgs, read_only(), None,
    |store, args, cx| -> Outcome {
        let crm = store.read().map_err(failed)?;
        let today = store.db().asked_at(&cx).date();
        let contact = match contact_or(&crm, args.contact_id, args.contact.as_deref()) {
            Ok(c) => c,
            Err(outcome) => return Ok(outcome),
        };
        let mut entries: Vec<(NaiveDate, Value, String)> = Vec::new();
        for i in crm.interactions.iter().filter(|i| i.contact_id == contact.id) {
            let about = if i.summary.is_empty() { String::new() } else { format!(": {}", i.summary) };
            entries.push((
                i.occurred_on,
                json!({"kind": "interaction", "type": i.kind.as_str(), "date": stored_day(i.occurred_on), "content": i.summary}),
                format!("- {} {}{about}", day(i.occurred_on, today), sentence_case(i.kind.as_str())),
            ));
        }
        for n in crm.notes.iter().filter(|n| n.contact_id == contact.id) {
            entries.push((
                n.noted_on,
                json!({"kind": "note", "date": stored_day(n.noted_on), "content": n.content}),
                format!("- {} Note: {}", day(n.noted_on, today), n.content),
            ));
        }
        for r in crm.reminders.iter().filter(|r| r.contact_id == contact.id) {
            let state = if r.done { "done" } else if r.due_on < today { "overdue" } else { "open" };
            entries.push((
                r.due_on,
                json!({"kind": "reminder", "date": stored_day(r.due_on), "content": r.text, "state": state}),
                format!("- {} Reminder ({state}): {}", day(r.due_on, today), r.text),
            ));
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.0));
        entries.truncate(args.limit.unwrap_or(10).max(1) as usize);
        let message = if entries.is_empty() {
            format!("Nothing logged for {} yet.", contact.label())
        } else {
            format!(
                "{}:\n{}",
                contact.label(),
                entries.iter().map(|e| e.2.as_str()).collect::<Vec<_>>().join("\n")
            )
        };
        Ok(Outcome::Done(json!({
            "contact": contact_json(&crm, contact, today),
            "entries": entries.into_iter().map(|e| e.1).collect::<Vec<_>>(),
            "message": message,
        })))
    }
);

/// No arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct NoArgs {}

db_tool!(
    /// Lists the labels contacts carry (customer, prospect, ...) with how
    /// many contacts carry each.
    GetLabels, "get_labels", CrmStore, "crm", NoArgs, read_only(), None,
    |store, args, cx| -> Outcome {
        let crm = store.read().map_err(failed)?;
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for label in crm.contacts.iter().flat_map(|c| &c.labels) {
            *counts.entry(label.as_str()).or_default() += 1;
        }
        let message = if counts.is_empty() {
            "No contact has a label.".to_string()
        } else {
            format!(
                "Labels: {}.",
                counts.iter().map(|(l, n)| format!("{l} ({n})")).collect::<Vec<_>>().join(", ")
            )
        };
        Ok(Outcome::Done(json!({
            "labels": counts.iter().map(|(l, n)| json!({"label": l, "contacts": n})).collect::<Vec<_>>(),
            "message": message,
        })))
    }
);

/// `calculate_date_range`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct DateRangeArgs {
    /// The range in words: today, yesterday, tomorrow, this/last/next week,
    /// this/last/next month, this year, last 30 days, next 7 days.
    pub range: String,
}

fn first_of_month(date: NaiveDate) -> NaiveDate {
    date.with_day(1).unwrap_or(date)
}

/// The first and last day of a range in words, counted from `today`.
pub fn date_range(range: &str, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let lower = range.trim().to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let monday = today.checked_sub_days(Days::new(u64::from(today.weekday().num_days_from_monday())))?;
    let week = |start: NaiveDate| Some((start, start.checked_add_days(Days::new(6))?));
    let month = |start: NaiveDate| {
        let next = start.checked_add_months(Months::new(1))?;
        Some((start, next.pred_opt()?))
    };
    match words.as_slice() {
        ["today"] => Some((today, today)),
        ["yesterday"] => today.pred_opt().map(|d| (d, d)),
        ["tomorrow"] => today.succ_opt().map(|d| (d, d)),
        ["this", "week"] => week(monday),
        ["last", "week"] => week(monday.checked_sub_days(Days::new(7))?),
        ["next", "week"] => week(monday.checked_add_days(Days::new(7))?),
        ["this", "month"] => month(first_of_month(today)),
        ["last", "month"] => month(first_of_month(today).checked_sub_months(Months::new(1))?),
        ["next", "month"] => month(first_of_month(today).checked_add_months(Months::new(1))?),
        ["this", "year"] => Some((
            NaiveDate::from_ymd_opt(today.year(), 1, 1)?,
            NaiveDate::from_ymd_opt(today.year(), 12, 31)?,
        )),
        ["last" | "past", n, "days" | "day"] => {
            let n: u64 = n.parse().ok()?;
            Some((today.checked_sub_days(Days::new(n.checked_sub(1)?))?, today))
        }
        ["next", n, "days" | "day"] => {
            let n: u64 = n.parse().ok()?;
            Some((today, today.checked_add_days(Days::new(n.checked_sub(1)?))?))
        }
        _ => None,
    }
}

db_tool!(
    /// Turns a range in words (this week, last month, last 30 days, next 7
    /// days) into its first and last day, counted from today.
    CalculateDateRange, "calculate_date_range", CrmStore, "crm", DateRangeArgs, read_only(), None,
    |store, args, cx| -> Outcome {
        let today = store.db().asked_at(&cx).date();
        let (start, end) = date_range(&args.range, today).ok_or_else(|| {
            invalid(
                "range",
                format!(
                    "I could not read the range '{}'. Say today, yesterday, tomorrow, this week, last week, next week, this month, last month, next month, this year, last 30 days or next 7 days.",
                    args.range.trim()
                ),
            )
        })?;
        Ok(Outcome::Done(json!({
            "range": args.range.trim(),
            "start": stored_day(start),
            "end": stored_day(end),
            "message": format!("{}: {} to {}.", sentence_case(&args.range), day(start, today), day(end, today)),
        })))
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_in_words() {
        let wed = NaiveDate::from_ymd_opt(2025, 3, 5).unwrap();
        let d = |m, day| NaiveDate::from_ymd_opt(2025, m, day).unwrap();
        assert_eq!(date_range("this week", wed), Some((d(3, 3), d(3, 9))));
        assert_eq!(date_range("Last week", wed), Some((d(2, 24), d(3, 2))));
        assert_eq!(date_range("next week", wed), Some((d(3, 10), d(3, 16))));
        assert_eq!(date_range("last month", wed), Some((d(2, 1), d(2, 28))));
        assert_eq!(date_range("this month", wed), Some((d(3, 1), d(3, 31))));
        assert_eq!(date_range("last 30 days", wed), Some((d(2, 4), wed)));
        assert_eq!(date_range("next 7 days", wed), Some((wed, d(3, 11))));
        assert_eq!(date_range("last 0 days", wed), None);
        assert_eq!(date_range("someday", wed), None);
        assert_eq!(day(d(10, 28), wed), "Oct 28");
        assert_eq!(day(NaiveDate::from_ymd_opt(2026, 1, 2).unwrap(), wed), "Jan 2, 2026");
    }
}
