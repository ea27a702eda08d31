//! The CRM's data: a SQLite file of team members, companies, contacts (with
//! labels), interactions, notes and reminders, created and seeded with
//! fictional people on first use, and a table of the idempotency keys of the
//! changes already applied (so a retried call changes nothing twice).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use chrono::{Days, Local, NaiveDate, NaiveDateTime, NaiveTime};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

/// The environment variable naming the CRM database.
pub const DB_ENV: &str = "CONCIERGE_CRM_DB";
/// The CRM database when neither [`DB_ENV`] nor a `[paths]` table
/// (`crm_db`) names one (in the working directory; the CLI's is next to the
/// engine's `concierge.db`, see `DemoPaths`).
pub const DEFAULT_DB: &str = "crm.db";

const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";
const DATE_FORMAT: &str = "%Y-%m-%d";

/// Formats a time as stored.
pub fn stored_time(t: NaiveDateTime) -> String {
    t.format(TIME_FORMAT).to_string()
}

/// Formats a date as stored.
pub fn stored_date(d: NaiveDate) -> String {
    d.format(DATE_FORMAT).to_string()
}

/// What kind of contact an interaction was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InteractionKind {
    /// A phone or video call.
    Call,
    /// A meeting in person or online.
    Meeting,
    /// An email exchange.
    Email,
    /// Lunch or dinner together.
    Lunch,
    /// A coffee.
    Coffee,
    /// A text or chat message.
    Message,
    /// Anything else.
    Other,
}

impl InteractionKind {
    /// Every kind, in the order the tools list them.
    pub const ALL: [InteractionKind; 7] = [
        InteractionKind::Call,
        InteractionKind::Meeting,
        InteractionKind::Email,
        InteractionKind::Lunch,
        InteractionKind::Coffee,
        InteractionKind::Message,
        InteractionKind::Other,
    ];

    /// The name stored and shown (`call`, `meeting`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            InteractionKind::Call => "call",
            InteractionKind::Meeting => "meeting",
            InteractionKind::Email => "email",
            InteractionKind::Lunch => "lunch",
            InteractionKind::Coffee => "coffee",
            InteractionKind::Message => "message",
            InteractionKind::Other => "other",
        }
    }

    /// The kind a word names, with the verbs people use for it ("talked",
    /// "phoned" → call; "met" → meeting; "dinner" → lunch), any case.
    pub fn from_words(text: &str) -> Option<Self> {
        let kind = match text.trim().to_lowercase().as_str() {
            "call" | "called" | "phone" | "phoned" | "phone call" | "talk" | "talked" | "spoke" | "spoken" | "chat"
            | "chatted" | "video call" | "zoom" => InteractionKind::Call,
            "meeting" | "meet" | "met" | "visit" | "visited" | "demo" => InteractionKind::Meeting,
            "email" | "e-mail" | "emailed" | "mail" | "mailed" => InteractionKind::Email,
            "lunch" | "dinner" | "breakfast" | "drinks" => InteractionKind::Lunch,
            "coffee" => InteractionKind::Coffee,
            "message" | "messaged" | "text" | "texted" | "sms" | "dm" => InteractionKind::Message,
            "other" | "note" => InteractionKind::Other,
            _ => return None,
        };
        Some(kind)
    }
}

impl fmt::Display for InteractionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for InteractionKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        InteractionKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown interaction kind {s:?}"))
    }
}

/// Someone on the team using the CRM (contacts and reminders belong to one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TeamMember {
    /// Their number.
    pub id: i64,
    /// Their full name.
    pub name: String,
    /// Their email (its part before the `@` is their user name: `maya`).
    pub email: String,
}

impl TeamMember {
    /// The user name a run names them by (`maya` for maya@…).
    pub fn handle(&self) -> &str {
        self.email.split('@').next().unwrap_or(&self.email)
    }

    /// Whether `who` (a run's user: a user name, an email, a name or a first name) names them.
    pub fn is(&self, who: &str) -> bool {
        let who = who.trim().to_lowercase();
        !who.is_empty()
            && (who == self.id.to_string()
                || who == self.email.to_lowercase()
                || who == self.handle().to_lowercase()
                || who == self.name.to_lowercase()
                || self.name.split_whitespace().next().map(str::to_lowercase) == Some(who))
    }
}

/// A company contacts work at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Company {
    /// Its number.
    pub id: i64,
    /// What it is called.
    pub name: String,
    /// Its web domain.
    pub domain: String,
    /// What it does.
    pub industry: String,
}

/// A person the team keeps in touch with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Contact {
    /// Their number.
    pub id: i64,
    /// Their full name.
    pub name: String,
    /// Their email, if known.
    pub email: Option<String>,
    /// Their phone number, if known.
    pub phone: Option<String>,
    /// Their job title, if known.
    pub title: Option<String>,
    /// The company they work at, by number.
    pub company_id: Option<i64>,
    /// The company's name.
    pub company: Option<String>,
    /// The team member they belong to, by number.
    pub owner_id: Option<i64>,
    /// That team member's name.
    pub owner: Option<String>,
    /// Labels such as `customer`, `prospect`.
    pub labels: Vec<String>,
    /// The day of the last logged interaction.
    pub last_touch: Option<NaiveDate>,
    /// When the contact was created.
    pub created_at: NaiveDateTime,
    /// When the contact last changed.
    pub updated_at: NaiveDateTime,
}

impl Contact {
    /// How options and answers name them: `John Smith (Acme, john.smith@acme.example)`.
    pub fn label(&self) -> String {
        let details: Vec<&str> = [self.company.as_deref(), self.email.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if details.is_empty() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, details.join(", "))
        }
    }
}

/// Something that happened with a contact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Interaction {
    /// Its number.
    pub id: i64,
    /// Whom it was with.
    pub contact_id: i64,
    /// A call, a meeting, ...
    pub kind: InteractionKind,
    /// What it was about (may be empty).
    pub summary: String,
    /// The day it happened.
    pub occurred_on: NaiveDate,
    /// The team member who logged it, if the run said who asked.
    pub logged_by: Option<i64>,
    /// When it was logged.
    pub created_at: NaiveDateTime,
}

/// A note about a contact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Note {
    /// Its number.
    pub id: i64,
    /// Whom it is about.
    pub contact_id: i64,
    /// What it says.
    pub content: String,
    /// The day it is about.
    pub noted_on: NaiveDate,
    /// The team member who wrote it, if the run said who asked.
    pub written_by: Option<i64>,
    /// When it was written.
    pub created_at: NaiveDateTime,
}

/// Something to do about a contact on a day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reminder {
    /// Its number.
    pub id: i64,
    /// Whom it is about.
    pub contact_id: i64,
    /// What to do.
    pub text: String,
    /// The day it is due.
    pub due_on: NaiveDate,
    /// Whether it was done.
    pub done: bool,
    /// The team member it reminds.
    pub owner_id: Option<i64>,
    /// When it was set.
    pub created_at: NaiveDateTime,
}

/// Everything in the CRM, read in one go (the demo's data is small).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Crm {
    /// The team, by number.
    pub team: Vec<TeamMember>,
    /// The companies, by number.
    pub companies: Vec<Company>,
    /// The contacts, by number.
    pub contacts: Vec<Contact>,
    /// The interactions, by number.
    pub interactions: Vec<Interaction>,
    /// The notes, by number.
    pub notes: Vec<Note>,
    /// The reminders, by number.
    pub reminders: Vec<Reminder>,
}

impl Crm {
    /// The contact numbered `id`.
    pub fn contact(&self, id: i64) -> Option<&Contact> {
        self.contacts.iter().find(|c| c.id == id)
    }

    /// The team member numbered `id`.
    pub fn member(&self, id: i64) -> Option<&TeamMember> {
        self.team.iter().find(|m| m.id == id)
    }

    /// The open reminders of a contact, earliest first.
    pub fn open_reminders(&self, contact_id: i64) -> Vec<&Reminder> {
        let mut open: Vec<&Reminder> = self
            .reminders
            .iter()
            .filter(|r| r.contact_id == contact_id && !r.done)
            .collect();
        open.sort_by_key(|r| (r.due_on, r.id));
        open
    }

    /// The contact's earliest open reminder, if any.
    pub fn next_reminder(&self, contact_id: i64) -> Option<&Reminder> {
        self.open_reminders(contact_id).into_iter().next()
    }

    /// Whether the contact has an open reminder due before `today`.
    pub fn is_overdue(&self, contact_id: i64, today: NaiveDate) -> bool {
        self.next_reminder(contact_id).is_some_and(|r| r.due_on < today)
    }
}

/// Why the CRM database could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error(
        "The CRM database at {path} could not be used: {message}. Check that the file is writable, or set {DB_ENV} to another path."
    )]
    Database {
        /// The path of the CRM database.
        path: String,
        /// What SQLite said.
        message: String,
    },
    /// A row held something this version does not know.
    #[error(
        "The CRM database at {path} holds a row this version cannot read ({message}). Delete the file to start over with the demo data."
    )]
    Corrupt {
        /// The path of the CRM database.
        path: String,
        /// What was wrong.
        message: String,
    },
}

/// What a change came to: applied (recorded under its idempotency key) or
/// refused without changing anything (not recorded, so a retry looks again).
#[derive(Clone, Debug, PartialEq)]
pub enum Applied {
    /// The change was made; this is its result.
    Changed(Value),
    /// Nothing was changed; this is why (a contact not found, a choice to make).
    Unchanged(Value),
}

/// The CRM database: a file path and the clock that dates changes.
#[derive(Clone, Debug)]
pub struct CrmStore {
    path: PathBuf,
    now: Option<NaiveDateTime>,
}

impl CrmStore {
    /// The database at `path` (created and seeded on first use), dated by the local clock.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            now: None,
        }
    }

    /// The database named by `CONCIERGE_CRM_DB`, else `crm.db` in the working directory.
    pub fn from_env() -> Self {
        let path = std::env::var_os(DB_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
        Self::open(path)
    }

    /// Dates everything at `now` instead of the local clock (tests, demos):
    /// the seed data, the changes, and the day relative dates count from.
    pub fn at(mut self, now: NaiveDateTime) -> Self {
        self.now = Some(now);
        self
    }

    /// The path of the database this store uses.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The fixed time set by [`at`](Self::at), if any.
    pub fn fixed_now(&self) -> Option<NaiveDateTime> {
        self.now
    }

    /// The time changes are dated with.
    pub fn now(&self) -> NaiveDateTime {
        self.now.unwrap_or_else(|| Local::now().naive_local())
    }

    /// A [`StoreError`] for a failure of SQLite (inside [`apply`](Self::apply)'s closure too).
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

    /// Opens the file, creating the tables and seeding the demo data on first use.
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
            seed(&tx, self.now()).map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))?;
        Ok(conn)
    }

    /// Everything in the CRM as it stands.
    pub fn read(&self) -> Result<Crm, StoreError> {
        let conn = self.connect()?;
        self.load(&conn)
    }

    /// Everything in the CRM as `conn` (a transaction, in [`apply`](Self::apply)) sees it.
    pub fn load(&self, conn: &Connection) -> Result<Crm, StoreError> {
        let raw = load_raw(conn).map_err(|e| self.error(e))?;
        raw.into_crm().map_err(|m| self.corrupt(m))
    }

    /// Runs `change` in one transaction, unless a change with `key` was
    /// applied already: then its recorded result is returned and nothing
    /// changes. A [`Applied::Changed`] result is recorded under `key` in the
    /// same transaction.
    pub fn apply<F>(&self, key: &str, tool: &str, change: F) -> Result<Applied, StoreError>
    where
        F: FnOnce(&Transaction<'_>, NaiveDateTime) -> Result<Applied, StoreError>,
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
            let value = serde_json::from_str(&result).map_err(|e| self.corrupt(e.to_string()))?;
            return Ok(Applied::Changed(value));
        }
        let now = self.now();
        let applied = change(&tx, now)?;
        if let Applied::Changed(result) = &applied {
            tx.execute(
                "INSERT INTO applied_calls (key, tool, result, applied_at) VALUES (?1, ?2, ?3, ?4)",
                params![key, tool, result.to_string(), stored_time(now)],
            )
            .map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))?;
        Ok(applied)
    }

    /// How many changes have been applied (rows in the idempotency table).
    pub fn applied_count(&self) -> Result<i64, StoreError> {
        let conn = self.connect()?;
        conn.query_row("SELECT COUNT(*) FROM applied_calls", [], |r| r.get(0))
            .map_err(|e| self.error(e))
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS team_members (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS companies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    domain TEXT NOT NULL DEFAULT '',
    industry TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS contacts (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT,
    phone TEXT,
    title TEXT,
    company_id INTEGER REFERENCES companies(id),
    owner_id INTEGER REFERENCES team_members(id),
    last_touch_on TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS contact_labels (
    contact_id INTEGER NOT NULL REFERENCES contacts(id),
    label TEXT NOT NULL,
    PRIMARY KEY (contact_id, label)
);
CREATE TABLE IF NOT EXISTS interactions (
    id INTEGER PRIMARY KEY,
    contact_id INTEGER NOT NULL REFERENCES contacts(id),
    kind TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    occurred_on TEXT NOT NULL,
    logged_by INTEGER REFERENCES team_members(id),
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY,
    contact_id INTEGER NOT NULL REFERENCES contacts(id),
    content TEXT NOT NULL,
    noted_on TEXT NOT NULL,
    written_by INTEGER REFERENCES team_members(id),
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS reminders (
    id INTEGER PRIMARY KEY,
    contact_id INTEGER NOT NULL REFERENCES contacts(id),
    text TEXT NOT NULL,
    due_on TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    owner_id INTEGER REFERENCES team_members(id),
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS applied_calls (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    result TEXT NOT NULL,
    applied_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

type RawContact = (
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    String,
    String,
);

/// An interaction row: id, contact, kind, summary, day, logged by, created.
type RawInteraction = (i64, i64, String, String, String, Option<i64>, String);
/// A reminder row: id, contact, text, due, done, owner, created.
type RawReminder = (i64, i64, String, String, bool, Option<i64>, String);

/// The rows as SQLite gives them, before dates and kinds are read.
#[derive(Default)]
struct RawCrm {
    team: Vec<TeamMember>,
    companies: Vec<Company>,
    contacts: Vec<RawContact>,
    labels: Vec<(i64, String)>,
    interactions: Vec<RawInteraction>,
    notes: Vec<(i64, i64, String, String, Option<i64>, String)>,
    reminders: Vec<RawReminder>,
}

fn load_raw(conn: &Connection) -> rusqlite::Result<RawCrm> {
    let mut raw = RawCrm::default();
    let mut stmt = conn.prepare("SELECT id, name, email FROM team_members ORDER BY id")?;
    for row in stmt.query_map([], |r| {
        Ok(TeamMember {
            id: r.get(0)?,
            name: r.get(1)?,
            email: r.get(2)?,
        })
    })? {
        raw.team.push(row?);
    }
    let mut stmt = conn.prepare("SELECT id, name, domain, industry FROM companies ORDER BY id")?;
    for row in stmt.query_map([], |r| {
        Ok(Company {
            id: r.get(0)?,
            name: r.get(1)?,
            domain: r.get(2)?,
            industry: r.get(3)?,
        })
    })? {
        raw.companies.push(row?);
    }
    let mut stmt = conn.prepare(
        "SELECT c.id, c.name, c.email, c.phone, c.title, c.company_id, co.name, c.owner_id, t.name, \
                c.last_touch_on, c.created_at, c.updated_at \
         FROM contacts c LEFT JOIN companies co ON co.id = c.company_id \
                         LEFT JOIN team_members t ON t.id = c.owner_id ORDER BY c.id",
    )?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            r.get(7)?,
            r.get(8)?,
            r.get(9)?,
            r.get(10)?,
            r.get(11)?,
        ))
    })? {
        raw.contacts.push(row?);
    }
    let mut stmt = conn.prepare("SELECT contact_id, label FROM contact_labels ORDER BY contact_id, label")?;
    for row in stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))? {
        raw.labels.push(row?);
    }
    let mut stmt = conn.prepare(
        "SELECT id, contact_id, kind, summary, occurred_on, logged_by, created_at FROM interactions ORDER BY id",
    )?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
        ))
    })? {
        raw.interactions.push(row?);
    }
    let mut stmt =
        conn.prepare("SELECT id, contact_id, content, noted_on, written_by, created_at FROM notes ORDER BY id")?;
    for row in stmt.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
    })? {
        raw.notes.push(row?);
    }
    let mut stmt =
        conn.prepare("SELECT id, contact_id, text, due_on, done, owner_id, created_at FROM reminders ORDER BY id")?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
        ))
    })? {
        raw.reminders.push(row?);
    }
    Ok(raw)
}

fn time(s: &str) -> Result<NaiveDateTime, String> {
    NaiveDateTime::parse_from_str(s, TIME_FORMAT).map_err(|e| format!("time {s:?}: {e}"))
}

fn date(s: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(s, DATE_FORMAT).map_err(|e| format!("date {s:?}: {e}"))
}

impl RawCrm {
    fn into_crm(self) -> Result<Crm, String> {
        let mut contacts = Vec::with_capacity(self.contacts.len());
        for (id, name, email, phone, title, company_id, company, owner_id, owner, last_touch, created, updated) in
            self.contacts
        {
            contacts.push(Contact {
                id,
                name,
                email,
                phone,
                title,
                company_id,
                company,
                owner_id,
                owner,
                labels: self
                    .labels
                    .iter()
                    .filter(|(c, _)| *c == id)
                    .map(|(_, l)| l.clone())
                    .collect(),
                last_touch: last_touch.as_deref().map(date).transpose()?,
                created_at: time(&created)?,
                updated_at: time(&updated)?,
            });
        }
        let mut interactions = Vec::with_capacity(self.interactions.len());
        for (id, contact_id, kind, summary, occurred, logged_by, created) in self.interactions {
            interactions.push(Interaction {
                id,
                contact_id,
                kind: kind.parse()?,
                summary,
                occurred_on: date(&occurred)?,
                logged_by,
                created_at: time(&created)?,
            });
        }
        let mut notes = Vec::with_capacity(self.notes.len());
        for (id, contact_id, content, noted, written_by, created) in self.notes {
            notes.push(Note {
                id,
                contact_id,
                content,
                noted_on: date(&noted)?,
                written_by,
                created_at: time(&created)?,
            });
        }
        let mut reminders = Vec::with_capacity(self.reminders.len());
        for (id, contact_id, text, due, done, owner_id, created) in self.reminders {
            reminders.push(Reminder {
                id,
                contact_id,
                text,
                due_on: date(&due)?,
                done,
                owner_id,
                created_at: time(&created)?,
            });
        }
        Ok(Crm {
            team: self.team,
            companies: self.companies,
            contacts,
            interactions,
            notes,
            reminders,
        })
    }
}

// ---------------------------------------------------------------- seed data

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

fn seed(tx: &Transaction<'_>, now: NaiveDateTime) -> rusqlite::Result<()> {
    let today = now.date();
    let created = stored_time(
        today
            .checked_sub_days(Days::new(60))
            .unwrap_or(today)
            .and_time(NaiveTime::from_hms_opt(9, 0, 0).unwrap_or_default()),
    );
    let shift = |offset: i64| {
        let day = if offset < 0 {
            today.checked_sub_days(Days::new(offset.unsigned_abs()))
        } else {
            today.checked_add_days(Days::new(offset.unsigned_abs()))
        };
        day.unwrap_or(today)
    };
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
            .map(stored_date);
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
                stored_date(on),
                by,
                stored_time(on.and_time(NaiveTime::from_hms_opt(17, 0, 0).unwrap_or_default()))
            ],
        )?;
    }
    for (contact, text, due, owner) in REMINDERS {
        tx.execute(
            "INSERT INTO reminders (contact_id, text, due_on, done, owner_id, created_at) VALUES (?1, ?2, ?3, 0, ?4, ?5)",
            params![contact, text, stored_date(shift(*due)), owner, created],
        )?;
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('seeded_on', ?1)",
        [stored_date(today)],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2025, 3, 5)
            .unwrap()
            .and_hms_opt(10, 0, 0)
            .unwrap()
    }

    #[test]
    fn a_new_database_is_seeded_once_with_the_demo_people() {
        let dir = tempfile::tempdir().unwrap();
        let store = CrmStore::open(dir.path().join("crm.db")).at(now());
        let crm = store.read().unwrap();
        assert_eq!(crm.team.len(), 3);
        assert_eq!(crm.companies.len(), 4);
        let names: Vec<&str> = crm.contacts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "John Smith",
                "John Park",
                "Mike Brennan",
                "Sarah Lee",
                "Jane Cooper",
                "Tom Becker",
                "Nina Alvarez",
                "Raj Mehta"
            ]
        );
        let john = crm.contact(1).unwrap();
        assert_eq!(john.company.as_deref(), Some("Acme"));
        assert_eq!(john.owner.as_deref(), Some("Maya Patel"));
        assert_eq!(john.label(), "John Smith (Acme, john.smith@acme.example)");
        assert_eq!(crm.contact(4).unwrap().labels, ["customer", "vip"]);
        assert_eq!(
            crm.contact(4).unwrap().last_touch,
            NaiveDate::from_ymd_opt(2025, 2, 24),
            "Sarah's lunch nine days before"
        );
        let today = now().date();
        let overdue: Vec<i64> = crm
            .contacts
            .iter()
            .filter(|c| crm.is_overdue(c.id, today))
            .map(|c| c.id)
            .collect();
        assert_eq!(overdue, [2, 3, 6, 7]);
        assert_eq!(crm.interactions.len(), 7);
        assert_eq!(crm.reminders.len(), 6);

        // Opening it again seeds nothing more.
        let again = CrmStore::open(store.path()).read().unwrap();
        assert_eq!(again, crm);
    }

    #[test]
    fn a_change_is_applied_once_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = CrmStore::open(dir.path().join("crm.db")).at(now());
        let add = |key: &str| {
            store
                .apply(key, "add_note_to_contact", |tx, now| {
                    tx.execute(
                        "INSERT INTO notes (contact_id, content, noted_on, created_at) VALUES (1, 'Likes golf', ?1, ?2)",
                        params![stored_date(now.date()), stored_time(now)],
                    )
                    .map_err(|e| store.error(e))?;
                    Ok(Applied::Changed(serde_json::json!({"id": tx.last_insert_rowid()})))
                })
                .unwrap()
        };
        assert_eq!(add("k1"), Applied::Changed(serde_json::json!({"id": 1})));
        assert_eq!(add("k1"), Applied::Changed(serde_json::json!({"id": 1})));
        assert_eq!(store.read().unwrap().notes.len(), 1);
        add("k2");
        assert_eq!(store.read().unwrap().notes.len(), 2);
        assert_eq!(store.applied_count().unwrap(), 2);
    }

    #[test]
    fn members_are_named_by_user_name_email_or_first_name() {
        let maya = TeamMember {
            id: 1,
            name: "Maya Patel".into(),
            email: "maya@ourteam.example".into(),
        };
        for who in ["maya", "Maya", "maya@ourteam.example", "Maya Patel", "1"] {
            assert!(maya.is(who), "{who}");
        }
        for who in ["leo", "", "patel"] {
            assert!(!maya.is(who), "{who}");
        }
        assert_eq!(InteractionKind::from_words("Talked"), Some(InteractionKind::Call));
        assert_eq!(InteractionKind::from_words("met"), Some(InteractionKind::Meeting));
        assert_eq!(InteractionKind::from_words("dinner"), Some(InteractionKind::Lunch));
        assert_eq!(InteractionKind::from_words("carrier pigeon"), None);
    }

    #[test]
    fn an_unwritable_path_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = CrmStore::open(dir.path().join("missing").join("crm.db"));
        let e = store.read().unwrap_err().to_string();
        assert!(e.contains("could not be used") && e.contains(DB_ENV), "{e}");
    }
}
