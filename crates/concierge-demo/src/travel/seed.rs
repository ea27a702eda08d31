//! The travel demo's fictional world: cities, yearly events, flight and
//! train timetables, and the clubs and fixtures of a football league,
//! dated around the year a new file is seeded.

use chrono::{Datelike, Days, NaiveDate, NaiveDateTime, Weekday};
use rusqlite::{Transaction, params};

use crate::domain_db::stored_day;

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
pub(super) fn seed(tx: &Transaction<'_>, now: NaiveDateTime) -> rusqlite::Result<()> {
    let today = now.date();
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
                params![name, city, venue, stored_day(starts), stored_day(ends), description],
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
                params![
                    home_name,
                    away_name,
                    city,
                    stadium,
                    format!("{} 15:00", stored_day(saturday))
                ],
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
