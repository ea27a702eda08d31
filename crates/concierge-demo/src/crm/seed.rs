//! The CRM's demo data: a small team, four companies, eight contacts with
//! their past interactions and reminders, dated relative to the day a new
//! file is seeded (some reminders already overdue).

use chrono::{Days, NaiveDateTime, NaiveTime};
use rusqlite::{Transaction, params};

use crate::domain_db::{add_days, stored_day, stored_time};

/// The team: name, email.
const TEAM: &[(&str, &str)] = &[
    ("Maya Patel", "maya@ourteam.example"),
    ("Leo Garcia", "leo@ourteam.example"),
    ("Ava Chen", "ava@ourteam.example"),
];

/// The companies: name, domain, industry.
const COMPANIES: &[(&str, &str, &str)] = &[
    ("Acme", "acme.example", "Manufacturing"),
    ("Globex", "globex.example", "Logistics"),
    ("Initech", "initech.example", "Software"),
    ("Hooli", "hooli.example", "Consumer tech"),
];

/// A seed contact: name, email, phone, title, company (index in
/// [`COMPANIES`] + 1), owner (index in [`TEAM`] + 1), labels.
type SeedContact = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    i64,
    i64,
    &'static [&'static str],
);

/// The contacts; their numbers follow this order (John Smith is #1).
const CONTACTS: &[SeedContact] = &[
    (
        "John Smith",
        "john.smith@acme.example",
        "+1 555 0101",
        "Head of Procurement",
        1,
        1,
        &["customer"],
    ),
    (
        "John Park",
        "john.park@globex.example",
        "+1 555 0102",
        "CTO",
        2,
        2,
        &["prospect"],
    ),
    (
        "Mike Brennan",
        "mike@initech.example",
        "+1 555 0103",
        "Engineering Manager",
        3,
        1,
        &["prospect"],
    ),
    (
        "Sarah Lee",
        "sarah.lee@acme.example",
        "+1 555 0104",
        "Director of Sales",
        1,
        1,
        &["customer", "vip"],
    ),
    (
        "Jane Cooper",
        "jane@hooli.example",
        "+1 555 0105",
        "COO",
        4,
        2,
        &["partner"],
    ),
    (
        "Tom Becker",
        "tom.becker@globex.example",
        "+1 555 0106",
        "Buyer",
        2,
        3,
        &["customer"],
    ),
    (
        "Nina Alvarez",
        "nina@initech.example",
        "+1 555 0107",
        "CFO",
        3,
        1,
        &["customer"],
    ),
    (
        "Raj Mehta",
        "raj@hooli.example",
        "+1 555 0108",
        "Product Lead",
        4,
        3,
        &["prospect"],
    ),
];

/// Past interactions: contact number, kind, summary, days before the seeding day, logged by.
const INTERACTIONS: &[(i64, &str, &str, u64, i64)] = &[
    (1, "meeting", "Quarterly review of the supply contract", 20, 1),
    (2, "call", "Intro call about the routing pilot", 12, 2),
    (3, "email", "Sent the product overview", 25, 1),
    (4, "lunch", "Talked about next year's volumes", 9, 1),
    (5, "call", "Partnership terms, first draft", 6, 2),
    (6, "email", "Asked for a quote", 15, 3),
    (7, "meeting", "Budget planning for the renewal", 30, 1),
];

/// Reminders: contact number, text, due (days from the seeding day), owner.
const REMINDERS: &[(i64, &str, i64, i64)] = &[
    (3, "Send the pricing sheet", -10, 1),
    (7, "Follow up on the renewal budget", -3, 1),
    (2, "Check in on the routing pilot", -5, 2),
    (6, "Send the quote", -1, 3),
    (1, "Prepare the contract renewal", 4, 1),
    (8, "Demo the new dashboard", 10, 3),
];

pub(super) fn seed(tx: &Transaction<'_>, now: NaiveDateTime) -> rusqlite::Result<()> {
    let today = now.date();
    let created = stored_time(
        today
            .checked_sub_days(Days::new(60))
            .unwrap_or(today)
            .and_time(NaiveTime::from_hms_opt(9, 0, 0).unwrap_or_default()),
    );
    let shift = |offset: i64| add_days(today, offset);
    for (name, email) in TEAM {
        tx.execute(
            "INSERT INTO team_members (name, email) VALUES (?1, ?2)",
            params![name, email],
        )?;
    }
    for (name, domain, industry) in COMPANIES {
        tx.execute(
            "INSERT INTO companies (name, domain, industry) VALUES (?1, ?2, ?3)",
            params![name, domain, industry],
        )?;
    }
    for (number, (name, email, phone, title, company, owner, labels)) in (1_i64..).zip(CONTACTS) {
        let last_touch = INTERACTIONS
            .iter()
            .filter(|(contact, ..)| *contact == number)
            .map(|(_, _, _, ago, _)| shift(-(*ago as i64)))
            .max()
            .map(stored_day);
        tx.execute(
            "INSERT INTO contacts (name, email, phone, title, company_id, owner_id, last_touch_on, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
            params![name, email, phone, title, company, owner, last_touch, created],
        )?;
        let id = tx.last_insert_rowid();
        for label in *labels {
            tx.execute(
                "INSERT INTO contact_labels (contact_id, label) VALUES (?1, ?2)",
                params![id, label],
            )?;
        }
    }
    for (contact, kind, summary, ago, by) in INTERACTIONS {
        let on = shift(-(*ago as i64));
        tx.execute(
            "INSERT INTO interactions (contact_id, kind, summary, occurred_on, logged_by, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                contact,
                kind,
                summary,
                stored_day(on),
                by,
                stored_time(on.and_time(NaiveTime::from_hms_opt(17, 0, 0).unwrap_or_default()))
            ],
        )?;
    }
    for (contact, text, due, owner) in REMINDERS {
        tx.execute(
            "INSERT INTO reminders (contact_id, text, due_on, done, owner_id, created_at) VALUES (?1, ?2, ?3, 0, ?4, ?5)",
            params![contact, text, stored_day(shift(*due)), owner, created],
        )?;
    }
    Ok(())
}
