//! HR's tools: the PTO balance now and on a future date, booking PTO, and
//! whether a paycheck reached the bank. Every result is a JSON object with a `message`
//! (a sentence for people, which the rules' answers show) and the data.
//!
//! The employee is the run's user (`--user`: an employee number, an email,
//! a name or a first name); a run that names none acts for Jordan Avery
//! (`E-1001`), the first employee of the seed data. Dates may be written
//! YYYY-MM-DD or in words ("next Friday", "tomorrow", "Oct 28"), resolved
//! against the time the person asked.

use chrono::{Datelike, NaiveDate, Weekday};
use rusqlite::{Connection, params};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::store::{DEFAULT_EMPLOYEE, Employee, HOURS_PER_DAY, HrStore, bookings, employees, paychecks};
use crate::dates::parse_date;
use crate::domain_db::{Applied, stored_time};
use crate::money::dollars;
use crate::toolkit::invalid;
use crate::toolkit::read_only;
use crate::toolkit::{HOW_TO_BE_SOMEONE, answer, db_tool, failed, names_person, writes};
use concierge::{ToolContext, ToolError};

/// The employee the run acts for: its user, else [`DEFAULT_EMPLOYEE`].
fn employee(conn: &Connection, store: &HrStore, cx: &ToolContext) -> Result<Employee, ToolError> {
    let all = employees(conn).map_err(|e| failed(store.db().error(e)))?;
    let found = match cx.user() {
        Some(user) => all.iter().find(|e| names_person(user, &e.id, &e.name, &e.email)),
        None => all.iter().find(|e| e.id == DEFAULT_EMPLOYEE),
    };
    found.cloned().ok_or_else(|| {
        ToolError::failed(format!(
            "I do not know an employee called '{}', so I cannot answer for them. The employees are {}. {HOW_TO_BE_SOMEONE}",
            cx.user().unwrap_or_default(),
            all.iter()
                .map(|e| format!("{} ({})", e.name, e.email))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// "12.5 days" / "1 day".
pub fn days(n: f64) -> String {
    let shown = if n.fract() == 0.0 {
        format!("{n:.0}")
    } else {
        format!("{n}")
    };
    format!(
        "{shown} {}",
        if (n - 1.0).abs() < f64::EPSILON { "day" } else { "days" }
    )
}

/// "Friday, Mar 14".
pub fn long_day(d: NaiveDate) -> String {
    d.format("%A, %b %-d").to_string()
}

fn date_arg(field: &str, text: &str, today: NaiveDate) -> Result<NaiveDate, ToolError> {
    parse_date(text, today).map_err(|e| invalid(field, e.to_string()))
}

/// The working days (Monday to Friday) from `start` to `end`, both included.
pub fn working_days(start: NaiveDate, end: NaiveDate) -> Vec<NaiveDate> {
    start
        .iter_days()
        .take_while(|d| *d <= end)
        .filter(|d| !matches!(d.weekday(), Weekday::Sat | Weekday::Sun))
        .collect()
}

/// How many firsts of a month fall after `from` and on or before `to`.
pub fn accruals_between(from: NaiveDate, to: NaiveDate) -> u32 {
    let mut count = 0;
    let mut month = from
        .with_day(1)
        .and_then(|d| d.checked_add_months(chrono::Months::new(1)));
    while let Some(first) = month.filter(|m| *m <= to) {
        count += 1;
        month = first.checked_add_months(chrono::Months::new(1));
    }
    count
}

// ---------------------------------------------------------------- current PTO

/// `current_pto`'s arguments (none: the signed-in employee).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct CurrentPtoArgs {}

db_tool!(
    /// Shows how much paid time off (PTO) the employee has now, in days and
    /// hours, and the time off they have booked ahead.
    CurrentPto, "current_pto", HrStore, "hr", CurrentPtoArgs, read_only(), None,
    |store, args, cx| {
        let conn = store.db().connect().map_err(failed)?;
        let employee = employee(&conn, store, &cx)?;
        let today = store.db().asked_at(&cx).date();
        let ahead: Vec<_> = bookings(&conn)
            .map_err(|e| failed(store.db().error(e)))?
            .into_iter()
            .filter(|b| b.employee_id == employee.id && b.end >= today)
            .collect();
        let mut message = format!(
            "{} has {} of PTO ({} hours).",
            employee.name,
            days(employee.pto_days),
            employee.pto_days * HOURS_PER_DAY
        );
        if !ahead.is_empty() {
            let list: Vec<String> = ahead
                .iter()
                .map(|b| if b.start == b.end { long_day(b.start) } else { format!("{} to {}", long_day(b.start), long_day(b.end)) })
                .collect();
            message.push_str(&format!(" Booked ahead: {}.", list.join("; ")));
        }
        Ok(json!({
            "employee": employee.name,
            "pto_days": employee.pto_days,
            "pto_hours": employee.pto_days * HOURS_PER_DAY,
            "accrual_days_per_month": employee.accrual_days_per_month,
            "booked": ahead.iter().map(|b| json!({"start": b.start.to_string(), "end": b.end.to_string(), "days": b.days})).collect::<Vec<_>>(),
            "message": message,
        }))
    }
);

// ---------------------------------------------------------------- future PTO

/// `future_pto_balance`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct FuturePtoArgs {
    /// The day to project the balance to: YYYY-MM-DD, or words such as "Dec 1", "next Friday".
    #[schemars(extend("format" = "date"))]
    pub date: String,
}

db_tool!(
    /// Projects the employee's PTO balance on a future date: what they have
    /// now plus the PTO credited on the first of each month until then.
    FuturePtoBalance, "future_pto_balance", HrStore, "hr", FuturePtoArgs, read_only(), None,
    |store, args, cx| {
        let today = store.db().asked_at(&cx).date();
        let on = date_arg("date", &args.date, today)?;
        if on < today {
            return Err(invalid("date", format!("{on} is in the past: give a date from today on to project the balance.")));
        }
        let conn = store.db().connect().map_err(failed)?;
        let employee = employee(&conn, store, &cx)?;
        let months = accruals_between(today, on);
        let projected = employee.pto_days + f64::from(months) * employee.accrual_days_per_month;
        let message = if months == 0 {
            format!("On {on} {} will still have {} of PTO (no accrual before then).", employee.name, days(projected))
        } else {
            format!(
                "On {on} {} will have {} of PTO: {} now plus {months} monthly {} of {}.",
                employee.name,
                days(projected),
                days(employee.pto_days),
                if months == 1 { "accrual" } else { "accruals" },
                days(employee.accrual_days_per_month)
            )
        };
        Ok(json!({
            "employee": employee.name,
            "date": on.to_string(),
            "pto_days_now": employee.pto_days,
            "accruals": months,
            "projected_pto_days": projected,
            "message": message,
        }))
    }
);

// ---------------------------------------------------------------- book PTO

/// `book_pto`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct BookPtoArgs {
    /// The first day off: YYYY-MM-DD, or words such as "next Friday", "tomorrow", "Oct 28".
    #[schemars(extend("format" = "date"))]
    pub start: String,
    /// The last day off, when it is more than one day (the same forms).
    #[serde(default)]
    #[schemars(extend("format" = "date"))]
    pub end: Option<String>,
}

db_tool!(
    /// Books paid time off (PTO) from a first to a last day (one day when
    /// only the first is given). The balance goes down by the working days
    /// (Monday to Friday) in between; time off beyond the balance, or
    /// overlapping time already booked, is refused. Asks the person first.
    BookPto, "book_pto", HrStore, "hr", BookPtoArgs, writes(true), Some(BOOK_PTO_CONFIRM),
    |store, args, cx| {
        let today = store.db().asked_at(&cx).date();
        let start = date_arg("start", &args.start, today)?;
        let end = match args.end.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
            Some(text) => date_arg("end", text, start)?,
            None => start,
        };
        if start < today {
            return Err(invalid("start", format!("{} is in the past: PTO is booked from today on.", long_day(start))));
        }
        if end < start {
            return Err(invalid("end", format!("The last day off ({end}) is before the first ({start}).")));
        }
        let taken = working_days(start, end);
        if taken.is_empty() {
            return Err(invalid(
                "start",
                format!("{} to {} has no working days (it is a weekend): there is nothing to book.", long_day(start), long_day(end)),
            ));
        }
        let needed = taken.len() as f64;
        let conn = store.db().connect().map_err(failed)?;
        let who = employee(&conn, store, &cx)?;
        drop(conn);
        let span = if start == end { long_day(start) } else { format!("{} to {}", long_day(start), long_day(end)) };
        let applied = store.db().apply(cx.idempotency_key.as_str(), BookPto::NAME, |tx, now| {
            let employee = employees(tx)
                .map_err(|e| store.db().error(e))?
                .into_iter()
                .find(|e| e.id == who.id)
                .unwrap_or(who.clone());
            let overlapping = bookings(tx)
                .map_err(|e| store.db().error(e))?
                .into_iter()
                .find(|b| b.employee_id == employee.id && b.start <= end && start <= b.end);
            if let Some(b) = overlapping {
                return Ok(Applied::Unchanged(format!(
                    "{} already has time off booked from {} to {}: I did not book anything.",
                    employee.name,
                    long_day(b.start),
                    long_day(b.end)
                )));
            }
            if employee.pto_days + 1e-9 < needed {
                return Ok(Applied::Unchanged(format!(
                    "{} has {} of PTO, and {span} takes {}: I did not book anything.",
                    employee.name,
                    days(employee.pto_days),
                    days(needed)
                )));
            }
            tx.execute(
                "INSERT INTO pto_bookings (employee_id, start_date, end_date, days, booked_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![employee.id, start.to_string(), end.to_string(), needed, stored_time(now)],
            )
            .map_err(|e| store.db().error(e))?;
            let booking = tx.last_insert_rowid();
            tx.execute(
                "UPDATE employees SET pto_days = pto_days - ?1 WHERE id = ?2",
                params![needed, employee.id],
            )
            .map_err(|e| store.db().error(e))?;
            let left = employee.pto_days - needed;
            Ok(Applied::Changed(json!({
                "booking": booking,
                "start": start.to_string(),
                "end": end.to_string(),
                "working_days": needed,
                "pto_days_left": left,
                "message": format!(
                    "Booked PTO for {span} ({} working {}). {} has {} left.",
                    taken.len(),
                    if taken.len() == 1 { "day" } else { "days" },
                    employee.name,
                    days(left)
                ),
            })))
        });
        answer(applied)
    }
);

// ---------------------------------------------------------------- paycheck

/// `paycheck_deposit_status`' arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct PaycheckArgs {
    /// The payday to look at (YYYY-MM-DD or words such as "last Friday"); the latest payday when left out.
    #[serde(default)]
    #[schemars(extend("format" = "date"))]
    pub pay_date: Option<String>,
}

db_tool!(
    /// Says whether the employee's paycheck was deposited in their bank:
    /// the latest payday's, or a given payday's, and when the next one is.
    PaycheckDepositStatus, "paycheck_deposit_status", HrStore, "hr", PaycheckArgs, read_only(), None,
    |store, args, cx| {
        let today = store.db().asked_at(&cx).date();
        let wanted = match args.pay_date.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            Some(text) => Some(
                crate::dates::parse_past_date(text, today).map_err(|e| invalid("pay_date", e.to_string()))?,
            ),
            None => None,
        };
        let conn = store.db().connect().map_err(failed)?;
        let employee = employee(&conn, store, &cx)?;
        let theirs: Vec<_> = paychecks(&conn)
            .map_err(|e| failed(store.db().error(e)))?
            .into_iter()
            .filter(|p| p.employee_id == employee.id)
            .collect();
        let paycheck = match wanted {
            Some(day) => theirs.iter().find(|p| p.pay_date == day),
            None => theirs.iter().rev().find(|p| p.status != "scheduled" && p.pay_date <= today),
        };
        let Some(paycheck) = paycheck else {
            let paydays: Vec<String> = theirs.iter().map(|p| p.pay_date.to_string()).collect();
            return Err(ToolError::failed(format!(
                "{} has no paycheck{}. Paydays on file: {}.",
                employee.name,
                wanted.map(|d| format!(" on {d}")).unwrap_or_default(),
                paydays.join(", ")
            )));
        };
        let account = format!("{} account ending {}", employee.bank, employee.bank_last4);
        let amount = dollars(paycheck.amount_cents);
        let pay_day = paycheck.pay_date.format("%b %-d");
        let mut message = match paycheck.status.as_str() {
            "deposited" => format!(
                "{}'s paycheck of {amount} for {pay_day} was deposited to the {account}{}.",
                employee.name,
                paycheck.deposited_on.map(|d| format!(" on {}", d.format("%b %-d"))).unwrap_or_default()
            ),
            "processing" => format!(
                "{}'s paycheck of {amount} for {pay_day} is still processing; it should reach the {account} within 2 business days.",
                employee.name
            ),
            "returned" => format!(
                "{}'s paycheck of {amount} for {pay_day} was not deposited: {}. Update the direct deposit details and payroll will send it again.",
                employee.name,
                paycheck.note.as_deref().unwrap_or("the bank returned it")
            ),
            _ => format!("{}'s paycheck of {amount} is scheduled for {pay_day}.", employee.name),
        };
        let next = theirs.iter().find(|p| p.status == "scheduled" && p.pay_date > today);
        if let Some(next) = next.filter(|n| n.id != paycheck.id) {
            message.push_str(&format!(" The next payday is {}.", long_day(next.pay_date)));
        }
        Ok(json!({
            "employee": employee.name,
            "pay_date": paycheck.pay_date.to_string(),
            "amount": paycheck.amount_cents as f64 / 100.0,
            "status": paycheck.status,
            "deposited_on": paycheck.deposited_on.map(|d| d.to_string()),
            "next_payday": next.map(|n| n.pay_date.to_string()),
            "message": message,
        }))
    }
);

/// What `book_pto` asks before it runs.
pub const BOOK_PTO_CONFIRM: &str = "I'll book PTO for {start}[ to {end}]. Proceed?";

#[cfg(test)]
mod tests {
    use super::*;

    fn d(m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, m, day).unwrap()
    }

    #[test]
    fn working_days_skip_weekends() {
        assert_eq!(working_days(d(3, 7), d(3, 7)), [d(3, 7)]);
        assert_eq!(working_days(d(3, 7), d(3, 10)), [d(3, 7), d(3, 10)]);
        assert!(working_days(d(3, 8), d(3, 9)).is_empty());
        assert_eq!(working_days(d(3, 3), d(3, 14)).len(), 10);
    }

    #[test]
    fn accrual_counts_the_firsts_of_months_ahead() {
        assert_eq!(accruals_between(d(3, 5), d(3, 31)), 0);
        assert_eq!(accruals_between(d(3, 5), d(4, 1)), 1);
        assert_eq!(accruals_between(d(3, 5), d(6, 15)), 3);
        assert_eq!(
            accruals_between(d(3, 1), d(3, 1)),
            0,
            "today's credit is in the balance"
        );
        assert_eq!(days(1.0), "1 day");
        assert_eq!(days(12.5), "12.5 days");
        assert_eq!(days(3.0), "3 days");
    }
}
