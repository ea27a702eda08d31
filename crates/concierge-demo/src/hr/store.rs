//! HR's data: employees with their PTO balance (in days) and monthly
//! accrual, their PTO bookings, and their paychecks with the bank deposit
//! status, in a SQLite file created and seeded with fictional employees on
//! first use (paydays dated relative to that day).

use std::path::PathBuf;

use chrono::{Datelike, Days, NaiveDate, NaiveDateTime, Weekday};
use rusqlite::{Connection, Transaction, params};
use serde::Serialize;

use crate::seeded_db::{Applied, SeededDb, StoreError};

/// The environment variable naming the HR database.
pub const DB_ENV: &str = "CONCIERGE_HR_DB";
/// The HR database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "hr.db";
/// The employee a run acts for when it names no user: Jordan Avery.
pub const DEFAULT_EMPLOYEE: &str = "E-1001";
/// Hours in a working day, for answers in hours.
pub const HOURS_PER_DAY: f64 = 8.0;

/// An employee, as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Employee {
    /// Their employee number (`E-1001`).
    pub id: String,
    /// Their full name.
    pub name: String,
    /// Their work email.
    pub email: String,
    /// PTO they have now, in days.
    pub pto_days: f64,
    /// PTO credited on the first of each month, in days.
    pub accrual_days_per_month: f64,
    /// Where their pay goes ("First Demo Bank").
    pub bank: String,
    /// The last four digits of that account.
    pub bank_last4: String,
}

/// A PTO booking, as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PtoBooking {
    /// Its number.
    pub id: i64,
    /// Whose.
    pub employee_id: String,
    /// The first day off.
    pub start: NaiveDate,
    /// The last day off.
    pub end: NaiveDate,
    /// How many working days it took from the balance.
    pub days: f64,
    /// When it was booked.
    pub booked_at: String,
}

/// A paycheck, as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Paycheck {
    /// Its number.
    pub id: i64,
    /// Whose.
    pub employee_id: String,
    /// Its payday.
    pub pay_date: NaiveDate,
    /// The net pay, in cents.
    pub amount_cents: i64,
    /// `deposited`, `processing`, `returned` or `scheduled`.
    pub status: String,
    /// When the bank received it, once it did.
    pub deposited_on: Option<NaiveDate>,
    /// What went wrong, for a returned deposit.
    pub note: Option<String>,
}

/// The HR database.
#[derive(Clone, Debug)]
pub struct HrStore {
    db: SeededDb,
}

impl HrStore {
    /// The database at `path` (created and seeded on first use).
    pub fn open(path: impl Into<PathBuf>) -> Self {
        Self {
            db: SeededDb::new("HR", DB_ENV, SCHEMA, seed, path.into()),
        }
    }

    /// The database named by `CONCIERGE_HR_DB`, else `hr.db` in the working directory.
    pub fn from_env() -> Self {
        Self::open(SeededDb::path_from_env(DB_ENV, DEFAULT_DB))
    }

    /// Dates everything at `now` instead of the clock (tests, demos).
    pub fn at(mut self, now: NaiveDateTime) -> Self {
        self.db = self.db.at(now);
        self
    }

    /// The file, its clock and its idempotency table.
    pub fn db(&self) -> &SeededDb {
        &self.db
    }

    /// Every employee, by number.
    pub fn employees(&self) -> Result<Vec<Employee>, StoreError> {
        let conn = self.db.connect()?;
        employees(&conn).map_err(|e| self.db.error(e))
    }

    /// One employee by number.
    pub fn employee(&self, id: &str) -> Result<Option<Employee>, StoreError> {
        Ok(self.employees()?.into_iter().find(|e| e.id == id))
    }

    /// Every PTO booking, oldest first.
    pub fn bookings(&self) -> Result<Vec<PtoBooking>, StoreError> {
        let conn = self.db.connect()?;
        bookings(&conn).map_err(|e| self.db.error(e))
    }

    /// Every paycheck, by payday.
    pub fn paychecks(&self) -> Result<Vec<Paycheck>, StoreError> {
        let conn = self.db.connect()?;
        paychecks(&conn).map_err(|e| self.db.error(e))
    }

    /// Runs a change in one transaction, once per idempotency key (see [`SeededDb::apply`]).
    pub fn apply<F>(&self, key: &str, tool: &str, change: F) -> Result<Applied, StoreError>
    where
        F: FnOnce(&Transaction<'_>, NaiveDateTime) -> Result<Applied, StoreError>,
    {
        self.db.apply(key, tool, change)
    }
}

fn date(text: String) -> rusqlite::Result<NaiveDate> {
    NaiveDate::parse_from_str(&text, "%Y-%m-%d").map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// Every employee in `conn` (inside a transaction too).
pub(crate) fn employees(conn: &Connection) -> rusqlite::Result<Vec<Employee>> {
    let mut stmt = conn.prepare(
        "SELECT id, name, email, pto_days, accrual_days_per_month, bank, bank_last4 FROM employees ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Employee {
            id: r.get(0)?,
            name: r.get(1)?,
            email: r.get(2)?,
            pto_days: r.get(3)?,
            accrual_days_per_month: r.get(4)?,
            bank: r.get(5)?,
            bank_last4: r.get(6)?,
        })
    })?;
    rows.collect()
}

/// Every PTO booking in `conn`.
pub(crate) fn bookings(conn: &Connection) -> rusqlite::Result<Vec<PtoBooking>> {
    let mut stmt =
        conn.prepare("SELECT id, employee_id, start_date, end_date, days, booked_at FROM pto_bookings ORDER BY id")?;
    let rows = stmt.query_map([], |r| {
        Ok(PtoBooking {
            id: r.get(0)?,
            employee_id: r.get(1)?,
            start: date(r.get(2)?)?,
            end: date(r.get(3)?)?,
            days: r.get(4)?,
            booked_at: r.get(5)?,
        })
    })?;
    rows.collect()
}

/// Every paycheck in `conn`.
pub(crate) fn paychecks(conn: &Connection) -> rusqlite::Result<Vec<Paycheck>> {
    let mut stmt = conn.prepare(
        "SELECT id, employee_id, pay_date, amount_cents, status, deposited_on, note FROM paychecks ORDER BY pay_date, id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Paycheck {
            id: r.get(0)?,
            employee_id: r.get(1)?,
            pay_date: date(r.get(2)?)?,
            amount_cents: r.get(3)?,
            status: r.get(4)?,
            deposited_on: r.get::<_, Option<String>>(5)?.map(date).transpose()?,
            note: r.get(6)?,
        })
    })?;
    rows.collect()
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS employees (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    pto_days REAL NOT NULL,
    accrual_days_per_month REAL NOT NULL,
    bank TEXT NOT NULL,
    bank_last4 TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pto_bookings (
    id INTEGER PRIMARY KEY,
    employee_id TEXT NOT NULL REFERENCES employees(id),
    start_date TEXT NOT NULL,
    end_date TEXT NOT NULL,
    days REAL NOT NULL CHECK (days > 0),
    booked_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS paychecks (
    id INTEGER PRIMARY KEY,
    employee_id TEXT NOT NULL REFERENCES employees(id),
    pay_date TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('deposited', 'processing', 'returned', 'scheduled')),
    deposited_on TEXT,
    note TEXT
);
";

/// A seed employee: number, name, email, PTO days, accrual per month, bank,
/// last four digits, net pay in cents.
type SeedEmployee = (
    &'static str,
    &'static str,
    &'static str,
    f64,
    f64,
    &'static str,
    &'static str,
    i64,
);

const EMPLOYEES: &[SeedEmployee] = &[
    (
        "E-1001",
        "Jordan Avery",
        "jordan.avery@example.com",
        12.5,
        1.25,
        "First Demo Bank",
        "4321",
        288_462,
    ),
    (
        "E-1002",
        "Priya Natarajan",
        "priya.natarajan@example.com",
        4.0,
        1.5,
        "Harbor Credit Union",
        "7788",
        312_500,
    ),
    (
        "E-1003",
        "Sam Okafor",
        "sam.okafor@example.com",
        0.5,
        1.0,
        "First Demo Bank",
        "0456",
        196_154,
    ),
];

fn stored(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

/// Paydays are every other Friday; the last one is the Friday on or before
/// the seeding day. Jordan's paychecks were all deposited; Priya's last one
/// was returned by her bank; Sam's last one is still processing.
fn seed(tx: &Transaction<'_>, now: NaiveDateTime) -> rusqlite::Result<()> {
    let today = now.date();
    let back = (7 + today.weekday().num_days_from_monday() - Weekday::Fri.num_days_from_monday()) % 7;
    let last_payday = today.checked_sub_days(Days::new(u64::from(back))).unwrap_or(today);
    let shift = |d: NaiveDate, days: i64| {
        if days < 0 {
            d.checked_sub_days(Days::new(days.unsigned_abs()))
        } else {
            d.checked_add_days(Days::new(days.unsigned_abs()))
        }
        .unwrap_or(d)
    };
    for (id, name, email, pto, accrual, bank, last4, pay) in EMPLOYEES {
        tx.execute(
            "INSERT INTO employees (id, name, email, pto_days, accrual_days_per_month, bank, bank_last4) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![id, name, email, pto, accrual, bank, last4],
        )?;
        let earlier = shift(last_payday, -14);
        let next = shift(last_payday, 14);
        let (last_status, last_deposited, note) = match *id {
            "E-1002" => (
                "returned",
                None,
                Some("the bank returned the deposit because the account on file is closed"),
            ),
            "E-1003" => ("processing", None, None),
            _ => ("deposited", Some(stored(shift(last_payday, -1))), None),
        };
        let rows: [(NaiveDate, &str, Option<String>, Option<&str>); 3] = [
            (earlier, "deposited", Some(stored(shift(earlier, -1))), None),
            (last_payday, last_status, last_deposited, note),
            (next, "scheduled", None, None),
        ];
        for (day, status, deposited, note) in rows {
            tx.execute(
                "INSERT INTO paychecks (employee_id, pay_date, amount_cents, status, deposited_on, note) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, stored(day), pay, status, deposited, note],
            )?;
        }
    }
    Ok(())
}
