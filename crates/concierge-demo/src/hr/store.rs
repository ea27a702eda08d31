//! HR's data: employees with their PTO balance (in days) and monthly
//! accrual, their PTO bookings, and their paychecks with the bank deposit
//! status, in a SQLite file created and seeded with fictional employees on
//! first use (paydays dated relative to that day).

use chrono::{Datelike, Days, NaiveDate, NaiveDateTime, Weekday};
use rusqlite::{Connection, Transaction, params};
use serde::Serialize;

use crate::domain_db::{DbSpec, Domain, SeedMark, Store, StoreError, add_days, read_day, rows, stored_day};

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

/// HR's employees, PTO and paychecks, as a [`Store`] knows it: its database.
#[derive(Clone, Copy, Debug)]
pub enum Hr {}

impl Domain for Hr {
    const DB: DbSpec = DbSpec::new("HR", DB_ENV, DEFAULT_DB, SCHEMA).seeded(seed, SeedMark::Time);
}

/// The HR database.
pub type HrStore = Store<Hr>;

impl HrStore {
    /// Every employee, by number.
    pub fn employees(&self) -> Result<Vec<Employee>, StoreError> {
        self.db().read(employees)
    }

    /// One employee by number.
    pub fn employee(&self, id: &str) -> Result<Option<Employee>, StoreError> {
        Ok(self.employees()?.into_iter().find(|e| e.id == id))
    }

    /// Every PTO booking, oldest first.
    pub fn bookings(&self) -> Result<Vec<PtoBooking>, StoreError> {
        self.db().read(bookings)
    }

    /// Every paycheck, by payday.
    pub fn paychecks(&self) -> Result<Vec<Paycheck>, StoreError> {
        self.db().read(paychecks)
    }
}

fn date(text: String) -> rusqlite::Result<NaiveDate> {
    read_day(&text).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))
}

/// Every employee in `conn` (inside a transaction too).
pub(crate) fn employees(conn: &Connection) -> rusqlite::Result<Vec<Employee>> {
    rows(
        conn,
        "SELECT id, name, email, pto_days, accrual_days_per_month, bank, bank_last4 FROM employees ORDER BY id",
        [],
        |r| {
            Ok(Employee {
                id: r.get(0)?,
                name: r.get(1)?,
                email: r.get(2)?,
                pto_days: r.get(3)?,
                accrual_days_per_month: r.get(4)?,
                bank: r.get(5)?,
                bank_last4: r.get(6)?,
            })
        },
    )
}

/// Every PTO booking in `conn`.
pub(crate) fn bookings(conn: &Connection) -> rusqlite::Result<Vec<PtoBooking>> {
    rows(
        conn,
        "SELECT id, employee_id, start_date, end_date, days, booked_at FROM pto_bookings ORDER BY id",
        [],
        |r| {
            Ok(PtoBooking {
                id: r.get(0)?,
                employee_id: r.get(1)?,
                start: date(r.get(2)?)?,
                end: date(r.get(3)?)?,
                days: r.get(4)?,
                booked_at: r.get(5)?,
            })
        },
    )
}

/// Every paycheck in `conn`.
pub(crate) fn paychecks(conn: &Connection) -> rusqlite::Result<Vec<Paycheck>> {
    rows(
        conn,
        "SELECT id, employee_id, pay_date, amount_cents, status, deposited_on, note FROM paychecks ORDER BY pay_date, id",
        [],
        |r| {
            Ok(Paycheck {
                id: r.get(0)?,
                employee_id: r.get(1)?,
                pay_date: date(r.get(2)?)?,
                amount_cents: r.get(3)?,
                status: r.get(4)?,
                deposited_on: r.get::<_, Option<String>>(5)?.map(date).transpose()?,
                note: r.get(6)?,
            })
        },
    )
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

/// Paydays are every other Friday; the last one is the Friday on or before
/// the seeding day. Jordan's paychecks were all deposited; Priya's last one
/// was returned by her bank; Sam's last one is still processing.
fn seed(tx: &Transaction<'_>, now: NaiveDateTime) -> rusqlite::Result<()> {
    let today = now.date();
    let back = (7 + today.weekday().num_days_from_monday() - Weekday::Fri.num_days_from_monday()) % 7;
    let last_payday = today.checked_sub_days(Days::new(u64::from(back))).unwrap_or(today);
    for (id, name, email, pto, accrual, bank, last4, pay) in EMPLOYEES {
        tx.execute(
            "INSERT INTO employees (id, name, email, pto_days, accrual_days_per_month, bank, bank_last4) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![id, name, email, pto, accrual, bank, last4],
        )?;
        let earlier = add_days(last_payday, -14);
        let next = add_days(last_payday, 14);
        let (last_status, last_deposited, note) = match *id {
            "E-1002" => (
                "returned",
                None,
                Some("the bank returned the deposit because the account on file is closed"),
            ),
            "E-1003" => ("processing", None, None),
            _ => ("deposited", Some(stored_day(add_days(last_payday, -1))), None),
        };
        let rows: [(NaiveDate, &str, Option<String>, Option<&str>); 3] = [
            (earlier, "deposited", Some(stored_day(add_days(earlier, -1))), None),
            (last_payday, last_status, last_deposited, note),
            (next, "scheduled", None, None),
        ];
        for (day, status, deposited, note) in rows {
            tx.execute(
                "INSERT INTO paychecks (employee_id, pay_date, amount_cents, status, deposited_on, note) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, stored_day(day), pay, status, deposited, note],
            )?;
        }
    }
    Ok(())
}
