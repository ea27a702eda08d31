//! The travel data: a SQLite file of cities, events, flight and train
//! timetables, football clubs and fixtures (fictional, created and seeded
//! on first use, see `seed.rs`) and the invoices people book (see
//! [`crate::domain_db`] for what every domain's file shares).

use chrono::{Datelike, Days, NaiveDate, NaiveDateTime, NaiveTime, Weekday};
use rusqlite::{Row, params};
use serde::Serialize;

use crate::domain_db::{DbSpec, Domain, SeedMark, Store, StoreError, read_day, read_time, rows, stored_day};

/// The environment variable naming the travel database.
pub const DB_ENV: &str = "CONCIERGE_TRAVEL_DB";
/// The travel database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "travel.db";

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

/// Travel, as a [`Store`] knows it: its database.
#[derive(Clone, Copy, Debug)]
pub enum Travel {}

impl Domain for Travel {
    const DB: DbSpec = DbSpec::new("travel", DB_ENV, DEFAULT_DB, SCHEMA).seeded(super::seed::seed, SeedMark::Day);
}

/// The travel database.
pub type TravelStore = Store<Travel>;

impl TravelStore {
    /// Every city, by name.
    pub fn cities(&self) -> Result<Vec<City>, StoreError> {
        self.db().read(|conn| {
            rows(
                conn,
                "SELECT name, country, airport, station FROM cities ORDER BY name",
                [],
                |r| {
                    Ok(City {
                        name: r.get(0)?,
                        country: r.get(1)?,
                        airport: r.get(2)?,
                        station: r.get::<_, i64>(3)? != 0,
                    })
                },
            )
        })
    }

    /// Events in `city` (any city when `None`) running on some day from `from` to `to`, earliest first.
    pub fn events(&self, city: Option<&str>, from: NaiveDate, to: NaiveDate) -> Result<Vec<Event>, StoreError> {
        self.db().select(
            "SELECT id, name, city, venue, starts_on, ends_on, description FROM events \
             WHERE (?1 IS NULL OR city = ?1) AND starts_on <= ?3 AND ends_on >= ?2 \
             ORDER BY starts_on, id",
            params![city, stored_day(from), stored_day(to)],
            |r| {
                let days: (String, String) = (r.get(4)?, r.get(5)?);
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, days, r.get(6)?))
            },
            |(id, name, city, venue, (starts, ends), description)| {
                Ok(Event {
                    id,
                    name,
                    city,
                    venue,
                    starts_on: read_day(&starts)?,
                    ends_on: read_day(&ends)?,
                    description,
                })
            },
        )
    }

    /// Every flight or train from `origin` to `destination`, by departure time.
    pub fn services(&self, mode: Mode, origin: &str, destination: &str) -> Result<Vec<Service>, StoreError> {
        self.db().select(
            &format!(
                "SELECT {SERVICE_COLUMNS} FROM {} WHERE origin = ?1 AND destination = ?2 ORDER BY departs, number",
                mode.table()
            ),
            params![origin, destination],
            service_row,
            |row| service(mode, row),
        )
    }

    /// The flight or train numbered `number` (`SX412`, `sx 412`), if there is one.
    pub fn service_by_number(&self, number: &str) -> Result<Option<Service>, StoreError> {
        let wanted: String = number
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_uppercase();
        for mode in [Mode::Flight, Mode::Train] {
            let found = self.db().select(
                &format!("SELECT {SERVICE_COLUMNS} FROM {} WHERE number = ?1", mode.table()),
                [&wanted],
                service_row,
                |row| service(mode, row),
            )?;
            if let Some(service) = found.into_iter().next() {
                return Ok(Some(service));
            }
        }
        Ok(None)
    }

    /// Every club, by name.
    pub fn teams(&self) -> Result<Vec<Team>, StoreError> {
        self.db().read(|conn| {
            rows(conn, "SELECT name, city, stadium FROM teams ORDER BY name", [], |r| {
                Ok(Team {
                    name: r.get(0)?,
                    city: r.get(1)?,
                    stadium: r.get(2)?,
                })
            })
        })
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
        let end = to.checked_add_days(Days::new(1)).unwrap_or(to);
        self.db().select(
            "SELECT id, home, away, city, stadium, kickoff FROM fixtures \
             WHERE (?1 IS NULL OR home = ?1 OR away = ?1) AND (?2 IS NULL OR city = ?2) \
             AND kickoff >= ?3 AND kickoff < ?4 ORDER BY kickoff, id",
            params![team, city, stored_day(from), stored_day(end)],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get::<_, String>(5)?,
                ))
            },
            |(id, home, away, city, stadium, kickoff)| {
                Ok(Fixture {
                    id,
                    home,
                    away,
                    city,
                    stadium,
                    kickoff: NaiveDateTime::parse_from_str(&kickoff, "%Y-%m-%d %H:%M")
                        .map_err(|e| format!("kickoff {kickoff:?}: {e}"))?,
                })
            },
        )
    }

    /// Every invoice, oldest first.
    pub fn invoices(&self) -> Result<Vec<Invoice>, StoreError> {
        self.db().select(
            "SELECT id, number, mode, service, travel_date, description, passengers, unit_cents, \
             amount_cents, currency, customer, created_at, due_on FROM invoices ORDER BY id",
            [],
            |r| {
                // The mode and the days are read from their texts, below.
                let texts: (String, String, String, String) = (r.get(2)?, r.get(4)?, r.get(11)?, r.get(12)?);
                let invoice = Invoice {
                    id: r.get(0)?,
                    number: r.get(1)?,
                    mode: Mode::Flight,
                    service: r.get(3)?,
                    travel_date: NaiveDate::MIN,
                    description: r.get(5)?,
                    passengers: r.get(6)?,
                    unit_cents: r.get(7)?,
                    amount_cents: r.get(8)?,
                    currency: r.get(9)?,
                    customer: r.get(10)?,
                    created_at: NaiveDateTime::MIN,
                    due_on: NaiveDate::MIN,
                };
                Ok((invoice, texts))
            },
            |(invoice, (mode, travel, created, due))| {
                Ok(Invoice {
                    mode: match mode.as_str() {
                        "flight" => Mode::Flight,
                        "train" => Mode::Train,
                        other => return Err(format!("unknown mode {other:?}")),
                    },
                    travel_date: read_day(&travel)?,
                    created_at: read_time(&created)?,
                    due_on: read_day(&due)?,
                    ..invoice
                })
            },
        )
    }
}

/// The columns of a flight or train, as [`service_row`] reads them.
const SERVICE_COLUMNS: &str = "number, operator, origin, destination, departs, minutes, fare_cents, days";

/// A flight or train as SQLite gives it, with its departure time as
/// written (its mode and departure are set by [`service`]).
fn service_row(r: &Row<'_>) -> rusqlite::Result<(Service, String)> {
    let service = Service {
        mode: Mode::Flight,
        number: r.get(0)?,
        operator: r.get(1)?,
        origin: r.get(2)?,
        destination: r.get(3)?,
        departs: NaiveTime::MIN,
        minutes: r.get(5)?,
        fare_cents: r.get(6)?,
        days: r.get(7)?,
    };
    Ok((service, r.get(4)?))
}

/// A flight or train of `mode`, its departure time read.
fn service(mode: Mode, (service, departs): (Service, String)) -> Result<Service, String> {
    let departs =
        NaiveTime::parse_from_str(&departs, "%H:%M").map_err(|e| format!("departure time {departs:?}: {e}"))?;
    Ok(Service {
        mode,
        departs,
        ..service
    })
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
";

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
