//! The CRM's data: a SQLite file of team members, companies, contacts (with
//! labels), interactions, notes and reminders, created and seeded with
//! fictional people on first use (see [`crate::domain_db`] for what every
//! domain's file shares).

use std::fmt;
use std::str::FromStr;

use chrono::{NaiveDate, NaiveDateTime};
use rusqlite::Connection;
use serde::Serialize;

use crate::domain_db::{DbSpec, Domain, SeedMark, Store, StoreError, read_day, read_time};

/// The environment variable naming the CRM database.
pub const DB_ENV: &str = "CONCIERGE_CRM_DB";
/// The CRM database when neither [`DB_ENV`] nor a `[paths]` table
/// (`crm_db`) names one (in the working directory; the CLI's is next to the
/// engine's `concierge.db`, see `DemoPaths`).
pub const DEFAULT_DB: &str = "crm.db";

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

/// The CRM, as a [`Store`] knows it: its database.
#[derive(Clone, Copy, Debug)]
pub enum CrmDomain {}

impl Domain for CrmDomain {
    const DB: DbSpec = DbSpec::new("CRM", DB_ENV, DEFAULT_DB, SCHEMA).seeded(super::seed::seed, SeedMark::Day);
}

/// The CRM database.
pub type CrmStore = Store<CrmDomain>;

impl CrmStore {
    /// Everything in the CRM as it stands.
    pub fn read(&self) -> Result<Crm, StoreError> {
        let conn = self.db().connect()?;
        self.load(&conn)
    }

    /// Everything in the CRM as `conn` (a transaction, in
    /// [`DomainDb::apply`](crate::domain_db::DomainDb::apply)) sees it.
    pub fn load(&self, conn: &Connection) -> Result<Crm, StoreError> {
        let raw = load_raw(conn).map_err(|e| self.db().error(e))?;
        raw.into_crm().map_err(|m| self.db().corrupt(m))
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
                last_touch: last_touch.as_deref().map(read_day).transpose()?,
                created_at: read_time(&created)?,
                updated_at: read_time(&updated)?,
            });
        }
        let mut interactions = Vec::with_capacity(self.interactions.len());
        for (id, contact_id, kind, summary, occurred, logged_by, created) in self.interactions {
            interactions.push(Interaction {
                id,
                contact_id,
                kind: kind.parse()?,
                summary,
                occurred_on: read_day(&occurred)?,
                logged_by,
                created_at: read_time(&created)?,
            });
        }
        let mut notes = Vec::with_capacity(self.notes.len());
        for (id, contact_id, content, noted, written_by, created) in self.notes {
            notes.push(Note {
                id,
                contact_id,
                content,
                noted_on: read_day(&noted)?,
                written_by,
                created_at: read_time(&created)?,
            });
        }
        let mut reminders = Vec::with_capacity(self.reminders.len());
        for (id, contact_id, text, due, done, owner_id, created) in self.reminders {
            reminders.push(Reminder {
                id,
                contact_id,
                text,
                due_on: read_day(&due)?,
                done,
                owner_id,
                created_at: read_time(&created)?,
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

#[cfg(test)]
mod tests {
    use rusqlite::params;
    use serde_json::json;

    use super::*;
    use crate::domain_db::{stored_day, stored_time};

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
        let again = CrmStore::open(store.db().path()).read().unwrap();
        assert_eq!(again, crm);
    }

    #[test]
    fn a_change_is_applied_once_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = CrmStore::open(dir.path().join("crm.db")).at(now());
        let add = |key: &str| {
            store
                .db()
                .apply(key, "add_note_to_contact", |tx, now| {
                    tx.execute(
                        "INSERT INTO notes (contact_id, content, noted_on, created_at) VALUES (1, 'Likes golf', ?1, ?2)",
                        params![stored_day(now.date()), stored_time(now)],
                    )
                    .map_err(|e| store.db().error(e))?;
                    Ok(json!({"id": tx.last_insert_rowid()}))
                })
                .unwrap()
        };
        assert_eq!(add("k1"), json!({"id": 1}));
        assert_eq!(add("k1"), json!({"id": 1}), "a repeat gets the recorded result");
        assert_eq!(store.read().unwrap().notes.len(), 1);
        add("k2");
        assert_eq!(store.read().unwrap().notes.len(), 2);
        assert_eq!(store.db().applied_count().unwrap(), 2);
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
