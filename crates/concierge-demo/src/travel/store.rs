//! The travel data: a SQLite file of cities, events, flight and train
//! timetables, football clubs and fixtures (fictional, created and seeded
//! on first use) and the invoices people book, with a table of the
//! idempotency keys of the invoices already created (so a retried call
//! creates nothing twice).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{Datelike, Days, Local, NaiveDate, NaiveDateTime, NaiveTime, Weekday};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

/// The environment variable naming the travel database.
pub const DB_ENV: &str = "CONCIERGE_TRAVEL_DB";
/// The travel database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "travel.db";

const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// How someone travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A scheduled flight (Australia and New Zealand, priced in A$).
    Flight,
    /// A scheduled train (Great Britain, priced in £).
    Train,
}

impl Mode {
    /// The name stored (`flight`, `train`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Flight => "flight",
            Mode::Train => "train",
        }
    }

    fn table(self) -> &'static str {
        match self {
            Mode::Flight => "flights",
            Mode::Train => "trains",
        }
    }

    /// The currency its fares are in.
    pub fn currency(self) -> &'static str {
        match self {
            Mode::Flight => "AUD",
            Mode::Train => "GBP",
        }
    }
}

/// An amount in cents written for people: `A$189.00`, `£55.00`.
pub fn money(cents: i64, currency: &str) -> String {
    let symbol = match currency {
        "AUD" => "A$",
        "GBP" => "£",
        _ => "",
    };
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.abs();
    format!("{sign}{symbol}{}.{:02}", cents / 100, cents % 100)
}

/// A place people travel to or from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct City {
    /// Its name (`Melbourne`).
    pub name: String,
    /// Its country.
    pub country: String,
    /// Its airport code (`MEL`), for cities flights serve.
    pub airport: Option<String>,
    /// Whether trains serve it.
    pub station: bool,
}

/// An event that runs in a city for one or more days.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Its number.
    pub id: i64,
    /// What it is called.
    pub name: String,
    /// The city it is in.
    pub city: String,
    /// Where in the city.
    pub venue: String,
    /// Its first day.
    pub starts_on: NaiveDate,
    /// Its last day.
    pub ends_on: NaiveDate,
    /// A sentence about it.
    pub description: String,
}

/// A scheduled flight or train: it runs on some weekdays at the same time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Service {
    /// Flight or train.
    pub mode: Mode,
    /// Its number (`SX412`, `AR1203`).
    pub number: String,
    /// Who runs it.
    pub operator: String,
    /// Where it leaves from.
    pub origin: String,
    /// Where it arrives.
    pub destination: String,
    /// When it leaves, local time.
    pub departs: NaiveTime,
    /// How long it takes, in minutes.
    pub minutes: i64,
    /// The standard fare, in cents.
    pub fare_cents: i64,
    /// The weekdays it runs, `1` (Monday) to `7` (Sunday).
    pub days: String,
}

impl Service {
    /// Whether it runs on `date`'s weekday.
    pub fn runs_on(&self, date: NaiveDate) -> bool {
        let day = date.weekday().number_from_monday().to_string();
        self.days.contains(day.as_str())
    }

    /// The fare on `date`, in cents: flights cost a fifth more on Fridays
    /// and Sundays, trains two fifths more before 09:30 on weekdays.
    pub fn fare_on(&self, date: NaiveDate) -> i64 {
        let weekday = date.weekday();
        let percent = match self.mode {
            Mode::Flight if matches!(weekday, Weekday::Fri | Weekday::Sun) => 120,
            Mode::Train
                if !matches!(weekday, Weekday::Sat | Weekday::Sun)
                    && self.departs < NaiveTime::from_hms_opt(9, 30, 0).unwrap_or_default() =>
            {
                140
            }
            _ => 100,
        };
        // Whole units: A$178.80 becomes A$179.00.
        (self.fare_cents * percent / 100 + 50) / 100 * 100
    }

    /// When it arrives, for a departure on `date`.
    pub fn arrives(&self, date: NaiveDate) -> NaiveDateTime {
        date.and_time(self.departs) + chrono::Duration::minutes(self.minutes)
    }

    /// One line for people: `SX412 Sydney 08:30 → Melbourne 10:05, A$189.00`.
    pub fn line(&self, date: NaiveDate) -> String {
        let arrives = self.arrives(date);
        let next_day = if arrives.date() > date { " (next day)" } else { "" };
        format!(
            "{} {} {} → {} {}{}, {}",
            self.number,
            self.origin,
            self.departs.format("%H:%M"),
            self.destination,
            arrives.format("%H:%M"),
            next_day,
            money(self.fare_on(date), self.mode.currency())
        )
    }
}

/// A football club.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Team {
    /// Its name (`Mersey Rovers`).
    pub name: String,
    /// Its home city.
    pub city: String,
    /// Its home ground.
    pub stadium: String,
}

/// A league match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fixture {
    /// Its number.
    pub id: i64,
    /// The home club.
    pub home: String,
    /// The visiting club.
    pub away: String,
    /// The city it is played in (the home club's).
    pub city: String,
    /// The ground.
    pub stadium: String,
    /// When it kicks off, local time.
    pub kickoff: NaiveDateTime,
}

impl Fixture {
    /// One line for people: `Sat 12 Apr 15:00 Mersey Rovers v Irwell City at Dockside Ground, Liverpool`.
    pub fn line(&self) -> String {
        format!(
            "{} {} v {} at {}, {}",
            self.kickoff.format("%a %-d %b %H:%M"),
            self.home,
            self.away,
            self.stadium,
            self.city
        )
    }
}

/// An invoice for a booked flight or train.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Invoice {
    /// Its row number.
    pub id: i64,
    /// Its number for people (`INV-2025-0001`).
    pub number: String,
    /// Flight or train.
    pub mode: Mode,
    /// The flight or train number.
    pub service: String,
    /// The day of travel.
    pub travel_date: NaiveDate,
    /// What is invoiced, in a line.
    pub description: String,
    /// How many people travel.
    pub passengers: i64,
    /// The fare per person, in cents.
    pub unit_cents: i64,
    /// The total, in cents.
    pub amount_cents: i64,
    /// `AUD` or `GBP`.
    pub currency: String,
    /// Who it is billed to, if the person said.
    pub customer: Option<String>,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// When it is due.
    pub due_on: NaiveDate,
}

/// Why the travel database could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error(
        "The travel database at {path} could not be used: {message}. Check that the file is writable, or set {DB_ENV} to another path."
    )]
    Database {
        /// The path of the travel database.
        path: String,
        /// What SQLite said.
        message: String,
    },
    /// A row held something this version cannot read.
    #[error("The travel database at {path} holds a row this version cannot read ({message}).")]
    Corrupt {
        /// The path of the travel database.
        path: String,
        /// What was wrong.
        message: String,
    },
}

/// The travel database: a file path and, for tests and demos, a fixed clock.
#[derive(Clone, Debug)]
pub struct TravelStore {
    path: PathBuf,
    now: Option<NaiveDateTime>,
}

impl TravelStore {
    /// The database at `path` (created and seeded on first use).
    pub fn open(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            now: None,
        }
    }

    /// The database named by `CONCIERGE_TRAVEL_DB`, else `travel.db` in the working directory.
    pub fn from_env() -> Self {
        let path = std::env::var_os(DB_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
        Self::open(path)
    }

    /// Fixes the clock at `now`: it seeds the data and stands for the time
    /// the person asked (tests, demos).
    pub fn at(mut self, now: NaiveDateTime) -> Self {
        self.now = Some(now);
        self
    }

    /// The fixed clock, if [`at`](Self::at) set one.
    pub fn fixed_now(&self) -> Option<NaiveDateTime> {
        self.now
    }

    /// The path of the database this store uses.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The fixed clock, else the local one.
    pub fn now(&self) -> NaiveDateTime {
        self.now.unwrap_or_else(|| Local::now().naive_local())
    }

    /// A [`StoreError`] for a failure while using the database.
    pub fn error(&self, e: impl fmt::Display) -> StoreError {
        StoreError::Database {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn corrupt(&self, message: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.display().to_string(),
            message,
        }
    }

    /// Opens the file, creating the tables and seeding them on first use.
    fn connect(&self) -> Result<Connection, StoreError> {
        let mut conn = Connection::open(&self.path).map_err(|e| self.error(e))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| self.error(e))?;
        conn.execute_batch(SCHEMA).map_err(|e| self.error(e))?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let seeded: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'seeded_on'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.error(e))?;
        if seeded.is_none() {
            seed(&tx, self.now().date()).map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))?;
        Ok(conn)
    }

    /// Every city, by name.
    pub fn cities(&self) -> Result<Vec<City>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare("SELECT name, country, airport, station FROM cities ORDER BY name")
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(City {
                    name: r.get(0)?,
                    country: r.get(1)?,
                    airport: r.get(2)?,
                    station: r.get::<_, i64>(3)? != 0,
                })
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.error(e))
    }

    /// Events in `city` (any city when `None`) running on some day from `from` to `to`, earliest first.
    pub fn events(&self, city: Option<&str>, from: NaiveDate, to: NaiveDate) -> Result<Vec<Event>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare(
                "SELECT id, name, city, venue, starts_on, ends_on, description FROM events \
                 WHERE (?1 IS NULL OR city = ?1) AND starts_on <= ?3 AND ends_on >= ?2 \
                 ORDER BY starts_on, id",
            )
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map(params![city, day(from), day(to)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })
            .map_err(|e| self.error(e))?;
        let mut events = Vec::new();
        for row in rows {
            let (id, name, city, venue, starts, ends, description) = row.map_err(|e| self.error(e))?;
            events.push(Event {
                id,
                name,
                city,
                venue,
                starts_on: self.read_day(&starts)?,
                ends_on: self.read_day(&ends)?,
                description,
            });
        }
        Ok(events)
    }

    /// Every flight or train from `origin` to `destination`, by departure time.
    pub fn services(&self, mode: Mode, origin: &str, destination: &str) -> Result<Vec<Service>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare(&format!(
                "SELECT number, operator, origin, destination, departs, minutes, fare_cents, days FROM {} \
                 WHERE origin = ?1 AND destination = ?2 ORDER BY departs, number",
                mode.table()
            ))
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map(params![origin, destination], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, String>(7)?,
                ))
            })
            .map_err(|e| self.error(e))?;
        let mut services = Vec::new();
        for row in rows {
            services.push(self.service(mode, row.map_err(|e| self.error(e))?)?);
        }
        Ok(services)
    }

    /// The flight or train numbered `number` (`SX412`, `sx 412`), if there is one.
    pub fn service_by_number(&self, number: &str) -> Result<Option<Service>, StoreError> {
        let wanted: String = number
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_uppercase();
        let conn = self.connect()?;
        for mode in [Mode::Flight, Mode::Train] {
            let row = conn
                .query_row(
                    &format!(
                        "SELECT number, operator, origin, destination, departs, minutes, fare_cents, days FROM {} \
                         WHERE number = ?1",
                        mode.table()
                    ),
                    [&wanted],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, String>(3)?,
                            r.get::<_, String>(4)?,
                            r.get::<_, i64>(5)?,
                            r.get::<_, i64>(6)?,
                            r.get::<_, String>(7)?,
                        ))
                    },
                )
                .optional()
                .map_err(|e| self.error(e))?;
            if let Some(row) = row {
                return Ok(Some(self.service(mode, row)?));
            }
        }
        Ok(None)
    }

    #[allow(clippy::type_complexity)]
    fn service(
        &self,
        mode: Mode,
        (number, operator, origin, destination, departs, minutes, fare_cents, days): (
            String,
            String,
            String,
            String,
            String,
            i64,
            i64,
            String,
        ),
    ) -> Result<Service, StoreError> {
        let departs = NaiveTime::parse_from_str(&departs, "%H:%M")
            .map_err(|e| self.corrupt(format!("departure time {departs:?}: {e}")))?;
        Ok(Service {
            mode,
            number,
            operator,
            origin,
            destination,
            departs,
            minutes,
            fare_cents,
            days,
        })
    }

    /// Every club, by name.
    pub fn teams(&self) -> Result<Vec<Team>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare("SELECT name, city, stadium FROM teams ORDER BY name")
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Team {
                    name: r.get(0)?,
                    city: r.get(1)?,
                    stadium: r.get(2)?,
                })
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.error(e))
    }

    /// Matches from `from` to `to` (days included), of `team` (home or away)
    /// and in `city` when given, earliest first.
    pub fn fixtures(
        &self,
        team: Option<&str>,
        city: Option<&str>,
        from: NaiveDate,
        to: NaiveDate,
    ) -> Result<Vec<Fixture>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare(
                "SELECT id, home, away, city, stadium, kickoff FROM fixtures \
                 WHERE (?1 IS NULL OR home = ?1 OR away = ?1) AND (?2 IS NULL OR city = ?2) \
                 AND kickoff >= ?3 AND kickoff < ?4 ORDER BY kickoff, id",
            )
            .map_err(|e| self.error(e))?;
        let end = to.checked_add_days(Days::new(1)).unwrap_or(to);
        let rows = stmt
            .query_map(params![team, city, day(from), day(end)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(|e| self.error(e))?;
        let mut fixtures = Vec::new();
        for row in rows {
            let (id, home, away, city, stadium, kickoff) = row.map_err(|e| self.error(e))?;
            let kickoff = NaiveDateTime::parse_from_str(&kickoff, "%Y-%m-%d %H:%M")
                .map_err(|e| self.corrupt(format!("kickoff {kickoff:?}: {e}")))?;
            fixtures.push(Fixture {
                id,
                home,
                away,
                city,
                stadium,
                kickoff,
            });
        }
        Ok(fixtures)
    }

    /// Every invoice, oldest first.
    pub fn invoices(&self) -> Result<Vec<Invoice>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare(
                "SELECT id, number, mode, service, travel_date, description, passengers, unit_cents, \
                 amount_cents, currency, customer, created_at, due_on FROM invoices ORDER BY id",
            )
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    (
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                    ),
                    (
                        r.get::<_, i64>(6)?,
                        r.get::<_, i64>(7)?,
                        r.get::<_, i64>(8)?,
                        r.get::<_, String>(9)?,
                        r.get::<_, Option<String>>(10)?,
                        r.get::<_, String>(11)?,
                        r.get::<_, String>(12)?,
                    ),
                ))
            })
            .map_err(|e| self.error(e))?;
        let mut invoices = Vec::new();
        for row in rows {
            let (
                (id, number, mode, service, travel, description),
                (passengers, unit_cents, amount_cents, currency, customer, created, due),
            ) = row.map_err(|e| self.error(e))?;
            let mode = match mode.as_str() {
                "flight" => Mode::Flight,
                "train" => Mode::Train,
                other => return Err(self.corrupt(format!("unknown mode {other:?}"))),
            };
            invoices.push(Invoice {
                id,
                number,
                mode,
                service,
                travel_date: self.read_day(&travel)?,
                description,
                passengers,
                unit_cents,
                amount_cents,
                currency,
                customer,
                created_at: NaiveDateTime::parse_from_str(&created, TIME_FORMAT)
                    .map_err(|e| self.corrupt(format!("time {created:?}: {e}")))?,
                due_on: self.read_day(&due)?,
            });
        }
        Ok(invoices)
    }

    /// Runs `change` in one transaction, unless a change with `key` was
    /// applied already: then its recorded result is returned and nothing
    /// changes. The result is recorded under `key` in the same transaction.
    pub fn apply<F>(&self, key: &str, tool: &str, at: NaiveDateTime, change: F) -> Result<Value, StoreError>
    where
        F: FnOnce(&Transaction<'_>) -> Result<Value, StoreError>,
    {
        let mut conn = self.connect()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let earlier: Option<String> = tx
            .query_row("SELECT result FROM applied_calls WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.error(e))?;
        if let Some(result) = earlier {
            return serde_json::from_str(&result).map_err(|e| self.error(e));
        }
        let result = change(&tx)?;
        tx.execute(
            "INSERT INTO applied_calls (key, tool, result, applied_at) VALUES (?1, ?2, ?3, ?4)",
            params![key, tool, result.to_string(), stored_time(at)],
        )
        .map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(result)
    }

    /// How many changes have been applied (rows in the idempotency table).
    pub fn applied_count(&self) -> Result<i64, StoreError> {
        let conn = self.connect()?;
        conn.query_row("SELECT COUNT(*) FROM applied_calls", [], |r| r.get(0))
            .map_err(|e| self.error(e))
    }

    fn read_day(&self, text: &str) -> Result<NaiveDate, StoreError> {
        NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|e| self.corrupt(format!("date {text:?}: {e}")))
    }
}

/// A day as stored (`2025-03-05`).
pub fn day(date: NaiveDate) -> String {
    date.format("%Y-%m-%d").to_string()
}

/// A time as stored (`2025-03-05 10:00:00`).
pub fn stored_time(t: NaiveDateTime) -> String {
    t.format(TIME_FORMAT).to_string()
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS cities (
    name TEXT PRIMARY KEY,
    country TEXT NOT NULL,
    airport TEXT,
    station INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    city TEXT NOT NULL REFERENCES cities (name),
    venue TEXT NOT NULL,
    starts_on TEXT NOT NULL,
    ends_on TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS flights (
    number TEXT PRIMARY KEY,
    operator TEXT NOT NULL,
    origin TEXT NOT NULL REFERENCES cities (name),
    destination TEXT NOT NULL REFERENCES cities (name),
    departs TEXT NOT NULL,
    minutes INTEGER NOT NULL,
    fare_cents INTEGER NOT NULL,
    days TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trains (
    number TEXT PRIMARY KEY,
    operator TEXT NOT NULL,
    origin TEXT NOT NULL REFERENCES cities (name),
    destination TEXT NOT NULL REFERENCES cities (name),
    departs TEXT NOT NULL,
    minutes INTEGER NOT NULL,
    fare_cents INTEGER NOT NULL,
    days TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS teams (
    name TEXT PRIMARY KEY,
    city TEXT NOT NULL REFERENCES cities (name),
    stadium TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fixtures (
    id INTEGER PRIMARY KEY,
    home TEXT NOT NULL REFERENCES teams (name),
    away TEXT NOT NULL REFERENCES teams (name),
    city TEXT NOT NULL,
    stadium TEXT NOT NULL,
    kickoff TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS invoices (
    id INTEGER PRIMARY KEY,
    number TEXT NOT NULL UNIQUE,
    mode TEXT NOT NULL CHECK (mode IN ('flight', 'train')),
    service TEXT NOT NULL,
    travel_date TEXT NOT NULL,
    description TEXT NOT NULL,
    passengers INTEGER NOT NULL CHECK (passengers > 0),
    unit_cents INTEGER NOT NULL,
    amount_cents INTEGER NOT NULL,
    currency TEXT NOT NULL,
    customer TEXT,
    created_at TEXT NOT NULL,
    due_on TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS applied_calls (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    result TEXT NOT NULL,
    applied_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

/// Cities: name, country, airport code (flights), station (trains).
const CITIES: &[(&str, &str, Option<&str>, bool)] = &[
    ("Sydney", "Australia", Some("SYD"), false),
    ("Melbourne", "Australia", Some("MEL"), false),
    ("Brisbane", "Australia", Some("BNE"), false),
    ("Perth", "Australia", Some("PER"), false),
    ("Adelaide", "Australia", Some("ADL"), false),
    ("Auckland", "New Zealand", Some("AKL"), false),
    ("Wellington", "New Zealand", Some("WLG"), false),
    ("London", "United Kingdom", None, true),
    ("Manchester", "United Kingdom", None, true),
    ("Liverpool", "United Kingdom", None, true),
    ("Birmingham", "United Kingdom", None, true),
    ("Leeds", "United Kingdom", None, true),
    ("Newcastle", "United Kingdom", None, true),
    ("Bristol", "United Kingdom", None, true),
    ("Nottingham", "United Kingdom", None, true),
];

/// A yearly event: name, city, venue, first day (month, day), days, description.
type SeedEvent = (&'static str, &'static str, &'static str, (u32, u32), u64, &'static str);

/// The yearly events.
const EVENTS: &[SeedEvent] = &[
    (
        "Harbour Lantern Parade",
        "Sydney",
        "Circular Quay",
        (1, 24),
        3,
        "Paper lanterns float past the quay at dusk.",
    ),
    (
        "Sydney Winter Food Market",
        "Sydney",
        "The Rocks",
        (6, 13),
        10,
        "Street food, mulled wine and fire pits.",
    ),
    (
        "Bondi Kite Day",
        "Sydney",
        "Bondi Beach",
        (9, 14),
        1,
        "Hundreds of kites over the beach.",
    ),
    (
        "Yarra Lights Festival",
        "Melbourne",
        "Birrarung Marr",
        (3, 6),
        11,
        "Light installations along the river, every night.",
    ),
    (
        "Southbank Comedy Week",
        "Melbourne",
        "Southbank Theatre",
        (3, 22),
        14,
        "Stand-up shows in theatres and bars.",
    ),
    (
        "Laneway Jazz Nights",
        "Melbourne",
        "Hosier Lane",
        (7, 10),
        4,
        "Jazz bands in the city's laneways.",
    ),
    (
        "River Fire Week",
        "Brisbane",
        "South Bank",
        (9, 1),
        7,
        "Fireworks and music on the river.",
    ),
    (
        "Brisbane Mango Fair",
        "Brisbane",
        "Roma Street Parkland",
        (12, 5),
        3,
        "Tropical fruit, cooking shows and a market.",
    ),
    (
        "Swan River Arts Festival",
        "Perth",
        "Elizabeth Quay",
        (2, 8),
        21,
        "Theatre, music and art by the river.",
    ),
    (
        "Adelaide Fringe Lights",
        "Adelaide",
        "Rundle Park",
        (2, 20),
        24,
        "Open-air shows and illuminated gardens.",
    ),
    (
        "Barossa Harvest Weekend",
        "Adelaide",
        "Tanunda Showgrounds",
        (4, 4),
        3,
        "Wine, food and the grape harvest.",
    ),
    (
        "Waitematā Sailing Regatta",
        "Auckland",
        "Viaduct Harbour",
        (1, 26),
        2,
        "Yachts race across the harbour.",
    ),
    (
        "Auckland Lantern Nights",
        "Auckland",
        "Albert Park",
        (2, 27),
        4,
        "Lanterns, food stalls and dance.",
    ),
    (
        "Cuba Street Carnival",
        "Wellington",
        "Cuba Street",
        (3, 15),
        2,
        "A street parade with bands and costumes.",
    ),
    (
        "Capital Food Week",
        "Wellington",
        "Waterfront",
        (8, 8),
        14,
        "Restaurants across the city serve festival menus.",
    ),
];

/// Flight routes (both ways): from, to, minutes, standard fare in A$.
const FLIGHT_ROUTES: &[(&str, &str, i64, i64)] = &[
    ("Sydney", "Melbourne", 95, 149),
    ("Sydney", "Brisbane", 90, 139),
    ("Sydney", "Perth", 300, 329),
    ("Sydney", "Adelaide", 125, 179),
    ("Sydney", "Auckland", 180, 289),
    ("Sydney", "Wellington", 190, 299),
    ("Melbourne", "Brisbane", 135, 169),
    ("Melbourne", "Perth", 240, 299),
    ("Melbourne", "Adelaide", 80, 129),
    ("Melbourne", "Auckland", 220, 319),
    ("Brisbane", "Perth", 330, 359),
    ("Brisbane", "Auckland", 185, 279),
    ("Adelaide", "Perth", 180, 239),
    ("Auckland", "Wellington", 65, 119),
];

/// Each flight route's departures: time, fare in percent of the standard
/// one, the weekdays it runs.
const FLIGHT_TIMES: &[(&str, i64, &str)] = &[
    ("07:00", 110, "1234567"),
    ("12:30", 90, "1234567"),
    ("18:15", 100, "123457"),
];

/// Train routes (both ways): from, to, minutes, standard fare in £.
const TRAIN_ROUTES: &[(&str, &str, i64, i64)] = &[
    ("London", "Manchester", 130, 89),
    ("London", "Liverpool", 140, 92),
    ("London", "Birmingham", 85, 55),
    ("London", "Leeds", 135, 85),
    ("London", "Newcastle", 175, 110),
    ("London", "Bristol", 100, 65),
    ("London", "Nottingham", 105, 60),
    ("Manchester", "Liverpool", 50, 18),
    ("Manchester", "Leeds", 55, 22),
    ("Manchester", "Newcastle", 150, 45),
    ("Birmingham", "Manchester", 90, 38),
    ("Birmingham", "Bristol", 80, 35),
    ("Birmingham", "Nottingham", 75, 25),
    ("Leeds", "Newcastle", 90, 40),
];

/// Each train route's departures (every day).
const TRAIN_TIMES: &[&str] = &["06:30", "09:15", "12:00", "15:45", "18:30"];

/// Clubs of the fictional Albion League: name, city, ground.
const TEAMS: &[(&str, &str, &str)] = &[
    ("Thames Athletic", "London", "Riverside Park"),
    ("Camden Borough", "London", "Lock Road"),
    ("Irwell City", "Manchester", "Irwell Stadium"),
    ("Mersey Rovers", "Liverpool", "Dockside Ground"),
    ("Aire Valley", "Leeds", "Kirkgate Park"),
    ("Tyne Wanderers", "Newcastle", "Quayside Stadium"),
    ("Avon Albion", "Bristol", "Harbourside Ground"),
    ("Trent Forest", "Nottingham", "Trentside"),
];

/// Seeds every table; the events and fixtures cover the years around `today`.
fn seed(tx: &Transaction<'_>, today: NaiveDate) -> rusqlite::Result<()> {
    for (name, country, airport, station) in CITIES {
        tx.execute(
            "INSERT INTO cities (name, country, airport, station) VALUES (?1, ?2, ?3, ?4)",
            params![name, country, airport, i64::from(*station)],
        )?;
    }
    let year = today.year();
    for y in year - 1..=year + 2 {
        for (name, city, venue, (month, first), days, description) in EVENTS {
            let Some(starts) = NaiveDate::from_ymd_opt(y, *month, *first) else {
                continue;
            };
            let ends = starts
                .checked_add_days(Days::new(days.saturating_sub(1)))
                .unwrap_or(starts);
            tx.execute(
                "INSERT INTO events (name, city, venue, starts_on, ends_on, description) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![name, city, venue, day(starts), day(ends), description],
            )?;
        }
    }
    for (i, (a, b, minutes, fare)) in FLIGHT_ROUTES.iter().enumerate() {
        for (direction, (from, to)) in [(a, b), (b, a)].into_iter().enumerate() {
            for (k, (departs, percent, days)) in FLIGHT_TIMES.iter().enumerate() {
                let (operator, code) = if k == 1 {
                    ("Koala Air", "KA")
                } else {
                    ("Southern Cross Air", "SX")
                };
                let number = format!("{code}{}", 100 + i * 20 + direction * 10 + k);
                tx.execute(
                    "INSERT INTO flights (number, operator, origin, destination, departs, minutes, fare_cents, days) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![number, operator, from, to, departs, minutes, fare * percent, days],
                )?;
            }
        }
    }
    for (i, (a, b, minutes, fare)) in TRAIN_ROUTES.iter().enumerate() {
        for (direction, (from, to)) in [(a, b), (b, a)].into_iter().enumerate() {
            for (k, departs) in TRAIN_TIMES.iter().enumerate() {
                let number = format!("AR{}", 1000 + i * 20 + direction * 10 + k);
                tx.execute(
                    "INSERT INTO trains (number, operator, origin, destination, departs, minutes, fare_cents, days) \
                     VALUES (?1, 'Albion Rail', ?2, ?3, ?4, ?5, ?6, '1234567')",
                    params![number, from, to, departs, minutes, fare * 100],
                )?;
            }
        }
    }
    for (name, city, stadium) in TEAMS {
        tx.execute(
            "INSERT INTO teams (name, city, stadium) VALUES (?1, ?2, ?3)",
            params![name, city, stadium],
        )?;
    }
    for season in year - 1..=year + 1 {
        seed_season(tx, season)?;
    }
    tx.execute("INSERT INTO meta (key, value) VALUES ('seeded_on', ?1)", [day(today)])?;
    Ok(())
}

/// One season of the league, from the second Saturday of August to the end
/// of May: a round every Saturday at 15:00, each club meeting every other
/// in turn (the circle method), home and away swapping every cycle.
fn seed_season(tx: &Transaction<'_>, season: i32) -> rusqlite::Result<()> {
    let Some(august) = NaiveDate::from_ymd_opt(season, 8, 1) else {
        return Ok(());
    };
    let Some(end) = NaiveDate::from_ymd_opt(season + 1, 5, 31) else {
        return Ok(());
    };
    let first_saturday = august
        .iter_days()
        .find(|d| d.weekday() == Weekday::Sat)
        .unwrap_or(august);
    let mut saturday = first_saturday.checked_add_days(Days::new(7)).unwrap_or(first_saturday);
    let n = TEAMS.len();
    let rounds = n - 1;
    let mut round = 0usize;
    while saturday <= end {
        let cycle = round / rounds;
        let r = round % rounds;
        // The circle: club 0 stays, the others rotate by the round.
        let mut order = vec![0usize];
        order.extend((0..n - 1).map(|i| 1 + (i + r) % (n - 1)));
        for pair in 0..n / 2 {
            let (mut home, mut away) = (order[pair], order[n - 1 - pair]);
            if (pair + r + cycle) % 2 == 1 {
                std::mem::swap(&mut home, &mut away);
            }
            let (home_name, city, stadium) = TEAMS[home];
            let away_name = TEAMS[away].0;
            tx.execute(
                "INSERT INTO fixtures (home, away, city, stadium, kickoff) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![home_name, away_name, city, stadium, format!("{} 15:00", day(saturday))],
            )?;
        }
        round += 1;
        let Some(next) = saturday.checked_add_days(Days::new(7)) else {
            break;
        };
        saturday = next;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, TravelStore) {
        let dir = tempfile::tempdir().unwrap();
        let now = NaiveDate::from_ymd_opt(2025, 2, 20)
            .unwrap()
            .and_hms_opt(9, 0, 0)
            .unwrap();
        let store = TravelStore::open(dir.path().join("travel.db")).at(now);
        (dir, store)
    }

    #[test]
    fn seeds_the_same_data_every_time() {
        let (_d1, a) = store();
        let (_d2, b) = store();
        let march = |s: &TravelStore| {
            s.events(
                Some("Melbourne"),
                NaiveDate::from_ymd_opt(2025, 3, 1).unwrap(),
                NaiveDate::from_ymd_opt(2025, 3, 31).unwrap(),
            )
            .unwrap()
        };
        assert_eq!(march(&a), march(&b));
        let names: Vec<String> = march(&a).into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["Yarra Lights Festival", "Southbank Comedy Week"]);
        let flights = a.services(Mode::Flight, "Sydney", "Melbourne").unwrap();
        assert_eq!(flights.len(), 3);
        assert_eq!(flights[0].number, "SX100");
        assert_eq!(
            a.service_by_number("ka 101").unwrap().unwrap().departs.to_string(),
            "12:30:00"
        );
        assert_eq!(a.teams().unwrap().len(), 8);
    }

    #[test]
    fn every_club_plays_once_each_saturday_and_meets_every_other() {
        let (_d, s) = store();
        let day1 = NaiveDate::from_ymd_opt(2025, 4, 12).unwrap();
        let round = s.fixtures(None, None, day1, day1).unwrap();
        assert_eq!(round.len(), 4);
        let mut clubs: Vec<&str> = round.iter().flat_map(|f| [f.home.as_str(), f.away.as_str()]).collect();
        clubs.sort_unstable();
        clubs.dedup();
        assert_eq!(clubs.len(), 8);
        let from = NaiveDate::from_ymd_opt(2024, 8, 1).unwrap();
        let to = NaiveDate::from_ymd_opt(2024, 10, 31).unwrap();
        let rovers = s.fixtures(Some("Mersey Rovers"), None, from, to).unwrap();
        let mut opponents: Vec<&str> = rovers
            .iter()
            .map(|f| {
                if f.home == "Mersey Rovers" {
                    f.away.as_str()
                } else {
                    f.home.as_str()
                }
            })
            .collect();
        opponents.sort_unstable();
        opponents.dedup();
        assert_eq!(opponents.len(), 7);
    }

    #[test]
    fn fares_depend_on_the_day() {
        let (_d, s) = store();
        let flight = s.service_by_number("SX100").unwrap().unwrap();
        let wednesday = NaiveDate::from_ymd_opt(2025, 3, 5).unwrap();
        let friday = NaiveDate::from_ymd_opt(2025, 3, 7).unwrap();
        assert_eq!(flight.fare_on(wednesday), 16400, "149 × 1.1 = 163.90, rounded");
        assert_eq!(flight.fare_on(friday), 19700);
        assert_eq!(money(16400, "AUD"), "A$164.00");
        assert_eq!(flight.line(wednesday), "SX100 Sydney 07:00 → Melbourne 08:35, A$164.00");
    }
}
