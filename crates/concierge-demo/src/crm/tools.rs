//! The CRM's tools, under the names the agents of `examples/crm/agents/`
//! call them by. Every result is a JSON
//! object with a `message` (a sentence for people, which the rules' answers
//! show) and the data behind it (for a model, or a program).
//!
//! The tools that change something take the contact as `contact_id` (wins
//! when given) or `contact` (a name, "Sarah from Acme"); when the name fits
//! several contacts they change nothing and answer with a numbered choice
//! whose pick is filled into `contact_id`. They deduplicate on the call's
//! idempotency key and do not ask before running: the router
//! (`examples/crm/agents/router.toml`) answers a whole statement in one
//! message.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{Datelike, Days, Months, NaiveDate};
use concierge::{Reply, Tool, ToolAnnotations, ToolContext, ToolError, ToolSpec};
use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::find::{Ambiguity, Found, current_member, find_company, find_contact, find_member, name_fits, team_list};
use super::store::{Contact, Crm, CrmStore, InteractionKind, TeamMember};
use crate::dates::{parse_date, parse_past_date};
use crate::domain_db::{StoreError, stored_day, stored_time};
use crate::toolkit::{blocking, description, failed, invalid, read_only};

/// What a tool came to: a result, or a choice to put to the person first.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The result (with its `message`).
    Done(Value),
    /// Several contacts fit: nothing was done; ask which one.
    Choose(Ambiguity),
}

impl Outcome {
    /// The outcome as the tool's answer: the one place a choice becomes a
    /// [`concierge::Reply::Choose`], which the runtime puts to the person
    /// before calling the tool again with the chosen `contact_id`.
    pub fn into_value(self) -> Result<Value, ToolError> {
        match self {
            Outcome::Done(value) => Ok(value),
            Outcome::Choose(ambiguity) => Reply::<Value>::Choose(ambiguity.to_choice()).into_value(),
        }
    }
}

/// A day as the answers write it: `Mar 4`, with the year when it is not this one.
pub fn day(date: NaiveDate, today: NaiveDate) -> String {
    if date.year() == today.year() {
        date.format("%b %-d").to_string()
    } else {
        date.format("%b %-d, %Y").to_string()
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Declares a tool struct holding the store, its spec (the doc comment is
/// the description) and its call (the body runs on a blocking thread with
/// `store: &CrmStore`, the arguments and the context, and returns an [`Outcome`]).
macro_rules! crm_tool {
    (
        $(#[doc = $doc:literal])*
        $ty:ident, $name:literal, $args:ty, $annotations:expr,
        |$store:ident, $a:ident, $cx:ident| $body:block
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug)]
        pub struct $ty {
            store: Arc<CrmStore>,
        }

        impl $ty {
            /// The tool's name, as planners and models call it.
            pub const NAME: &'static str = $name;

            /// The tool over `store`.
            pub fn new(store: Arc<CrmStore>) -> Self {
                Self { store }
            }

            /// The call's work, on a blocking thread.
            #[allow(unused_variables)]
            fn run($store: &CrmStore, $a: $args, $cx: ToolContext) -> Result<Outcome, ToolError> $body
        }

        impl Tool for $ty {
            type Args = $args;

            fn spec(&self) -> ToolSpec {
                ToolSpec::new($name, description(&[$($doc),*]), concierge::tool::schema_for::<$args>())
                    .category("crm")
                    .annotations($annotations)
            }

            fn call(
                &self,
                args: Self::Args,
                cx: ToolContext,
            ) -> impl std::future::Future<Output = Result<Value, ToolError>> + Send {
                let store = Arc::clone(&self.store);
                async move {
                    blocking("the CRM database", move || Self::run(&store, args, cx).and_then(Outcome::into_value))
                    .await
                }
            }
        }
    };
}

/// A change that runs without asking (it is recorded under the call's
/// idempotency key, so a retry changes nothing twice).
fn writes(destructive: bool) -> ToolAnnotations {
    ToolAnnotations {
        destructive,
        idempotent: true,
        ..ToolAnnotations::default()
    }
}

fn not_found(message: String) -> Outcome {
    Outcome::Done(json!({"outcome": "not_found", "message": message}))
}

/// The contact the arguments mean, or the outcome to answer instead (a choice, "not found").
fn contact_or<'c>(crm: &'c Crm, id: Option<i64>, name: Option<&str>) -> Result<&'c Contact, Outcome> {
    match find_contact(crm, id, name) {
        Found::One(contact) => Ok(contact),
        Found::Choose(ambiguity) => Err(Outcome::Choose(ambiguity)),
        Found::Missing(why) => Err(not_found(why)),
    }
}

/// The team member the run's user is, as a tool error when not on the team.
fn me<'c>(crm: &'c Crm, cx: &ToolContext) -> Result<Option<&'c TeamMember>, ToolError> {
    current_member(crm, cx.user()).map_err(ToolError::failed)
}

/// The team member a `team_member` argument names: `me`/`my` is the run's user.
fn member_arg<'c>(crm: &'c Crm, cx: &ToolContext, who: Option<&str>) -> Result<Option<&'c TeamMember>, ToolError> {
    let Some(who) = who.map(str::trim).filter(|w| !w.is_empty()) else {
        return Ok(None);
    };
    if matches!(who.to_lowercase().as_str(), "me" | "my" | "mine" | "i" | "myself") {
        return match me(crm, cx)? {
            Some(member) => Ok(Some(member)),
            None => Err(ToolError::failed(format!(
                "I don't know who you are, so I cannot tell which contacts are yours. Run with --user and your user name (the team: {}).",
                team_list(crm)
            ))),
        };
    }
    find_member(crm, who).map(Some).ok_or_else(|| {
        invalid(
            "team_member",
            format!("'{who}' is not on the team. The team: {}.", team_list(crm)),
        )
    })
}

fn contact_json(crm: &Crm, contact: &Contact, today: NaiveDate) -> Value {
    let next = crm.next_reminder(contact.id);
    json!({
        "id": contact.id,
        "name": contact.name,
        "email": contact.email,
        "phone": contact.phone,
        "title": contact.title,
        "company": contact.company,
        "owner": contact.owner,
        "labels": contact.labels,
        "last_touch": contact.last_touch.map(stored_day),
        "next_reminder": next.map(|r| json!({"text": r.text, "due_on": stored_day(r.due_on)})),
        "overdue": crm.is_overdue(contact.id, today),
    })
}

/// One line for people: `Mike Brennan (Initech, mike@initech.example), Engineering Manager — next: Send the pricing sheet, Feb 23 (10 days overdue)`.
fn contact_line(crm: &Crm, contact: &Contact, today: NaiveDate) -> String {
    let mut line = format!("- {}", contact.label());
    if let Some(title) = &contact.title {
        line.push_str(&format!(", {title}"));
    }
    if let Some(next) = crm.next_reminder(contact.id) {
        line.push_str(&format!(" — next: {}, {}", next.text, day(next.due_on, today)));
        let late = (today - next.due_on).num_days();
        if late > 0 {
            line.push_str(&format!(" ({} overdue)", plural(late as usize, "day", "days")));
        }
    }
    line
}

/// Capitalizes the first letter and drops a final full stop.
fn sentence_case(text: &str) -> String {
    let text = text.trim().trim_end_matches(['.', '!']).trim();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn text_arg(text: Option<&str>) -> Option<String> {
    text.map(str::trim).filter(|t| !t.is_empty()).map(str::to_string)
}

// ---------------------------------------------------------------- router and query: search

/// `search_contacts`'s filters (all optional; without any, every contact).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct SearchContactsArgs {
    /// A name, part of a name, email, company or title ("John", "Acme", "CFO").
    #[serde(default)]
    pub search: Option<String>,
    /// Only this team member's contacts: a user name (maya), a name, or "me"
    /// for the person asking (say it only when they said "my").
    #[serde(default)]
    pub team_member: Option<String>,
    /// Only contacts at this company.
    #[serde(default)]
    pub company: Option<String>,
    /// Only contacts with this label (customer, prospect, partner, vip).
    #[serde(default)]
    pub label: Option<String>,
    /// Only contacts whose next reminder is overdue (due before today).
    #[serde(default)]
    pub overdue: bool,
    /// Only contacts with a reminder due on or after this day (YYYY-MM-DD or words).
    #[serde(default)]
    pub due_from: Option<String>,
    /// Only contacts with a reminder due on or before this day (YYYY-MM-DD or words).
    #[serde(default)]
    pub due_to: Option<String>,
    /// At most this many (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
}

fn matches_search(contact: &Contact, search: &str) -> bool {
    let needle = search.trim().to_lowercase();
    name_fits(contact, search)
        || contact.name.to_lowercase().contains(&needle)
        || contact
            .email
            .as_deref()
            .is_some_and(|e| e.to_lowercase().contains(&needle))
        || contact.company.as_deref().is_some_and(|c| c.to_lowercase() == needle)
        || contact
            .title
            .as_deref()
            .is_some_and(|t| t.to_lowercase().contains(&needle))
}

crm_tool!(
    /// Searches all contacts by name, email, company or title, optionally
    /// only one team member's ("me" for the person asking), a company's, a
    /// label's, the overdue ones (next reminder before today) or those with
    /// a reminder due in a date range. Lists each with company, title and next reminder.
    SearchContacts, "search_contacts", SearchContactsArgs, read_only(),
    |store, args, cx| {
        let crm = store.read().map_err(failed)?;
        let today = store.db().asked_at(&cx).date();
        let owner = member_arg(&crm, &cx, args.team_member.as_deref())?;
        let company = match text_arg(args.company.as_deref()) {
            Some(name) => Some(find_company(&crm, &name).ok_or_else(|| {
                invalid("company", format!("There is no company '{name}' in the CRM."))
            })?),
            None => None,
        };
        let date = |field: &str, text: Option<&str>| match text_arg(text) {
            Some(t) => parse_date(&t, today).map(Some).map_err(|e| invalid(field, e.to_string())),
            None => Ok(None),
        };
        let from = date("due_from", args.due_from.as_deref())?;
        let to = date("due_to", args.due_to.as_deref())?;
        let label = text_arg(args.label.as_deref()).map(|l| l.to_lowercase());
        let search = text_arg(args.search.as_deref());
        let limit = args.limit.unwrap_or(10).max(1) as usize;
        let chosen: Vec<&Contact> = crm
            .contacts
            .iter()
            .filter(|c| owner.is_none_or(|m| c.owner_id == Some(m.id)))
            .filter(|c| company.is_none_or(|co| c.company_id == Some(co.id)))
            .filter(|c| label.as_ref().is_none_or(|l| c.labels.iter().any(|x| x == l)))
            .filter(|c| !args.overdue || crm.is_overdue(c.id, today))
            .filter(|c| {
                (from.is_none() && to.is_none())
                    || crm
                        .open_reminders(c.id)
                        .iter()
                        .any(|r| from.is_none_or(|f| r.due_on >= f) && to.is_none_or(|t| r.due_on <= t))
            })
            .filter(|c| search.as_deref().is_none_or(|s| matches_search(c, s)))
            .collect();
        let shown: Vec<&Contact> = chosen.iter().copied().take(limit).collect();
        let mut what = String::from(if args.overdue { "overdue contact" } else { "contact" });
        let whose = match owner {
            Some(m) if cx.user().is_some_and(|u| m.is(u)) => " of yours".to_string(),
            Some(m) => format!(" of {}", m.name),
            None => String::new(),
        };
        let matching = search.as_ref().map(|s| format!(" matching '{s}'")).unwrap_or_default();
        let message = if chosen.is_empty() {
            what.push('s');
            format!("No {what}{whose}{matching}.")
        } else {
            let mut text = format!(
                "{}{whose}{matching}:\n{}",
                plural(chosen.len(), &what, &format!("{what}s")),
                shown.iter().map(|c| contact_line(&crm, c, today)).collect::<Vec<_>>().join("\n")
            );
            if chosen.len() > shown.len() {
                text.push_str(&format!("\n… and {} more.", chosen.len() - shown.len()));
            }
            text
        };
        Ok(Outcome::Done(json!({
            "count": chosen.len(),
            "team_member": owner.map(|m| m.name.clone()),
            "contacts": shown.iter().map(|c| contact_json(&crm, c, today)).collect::<Vec<_>>(),
            "message": message,
        })))
    }
);

/// `search_companies`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct SearchCompaniesArgs {
    /// A company's name or part of it (empty: every company).
    #[serde(default)]
    pub search: Option<String>,
    /// At most this many (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
}

crm_tool!(
    /// Searches companies by name or domain, with their industry and the
    /// contacts who work there.
    SearchCompanies, "search_companies", SearchCompaniesArgs, read_only(),
    |store, args, cx| {
        let crm = store.read().map_err(failed)?;
        let search = text_arg(args.search.as_deref()).map(|s| s.to_lowercase());
        let limit = args.limit.unwrap_or(10).max(1) as usize;
        let mut found: Vec<_> = crm
            .companies
            .iter()
            .filter(|c| {
                search
                    .as_ref()
                    .is_none_or(|s| c.name.to_lowercase().contains(s) || c.domain.to_lowercase().contains(s))
            })
            .collect();
        if found.is_empty()
            && let Some(s) = &search
            && let Some(company) = find_company(&crm, s)
        {
            found.push(company);
        }
        found.truncate(limit);
        let people = |id: i64| -> Vec<&Contact> { crm.contacts.iter().filter(|c| c.company_id == Some(id)).collect() };
        let message = if found.is_empty() {
            "No company matches.".to_string()
        } else {
            found
                .iter()
                .map(|c| {
                    let names: Vec<&str> = people(c.id).iter().map(|p| p.name.as_str()).collect();
                    format!("- {} ({}, {}): {}", c.name, c.industry, c.domain, if names.is_empty() { "no contacts".to_string() } else { names.join(", ") })
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        Ok(Outcome::Done(json!({
            "count": found.len(),
            "companies": found
                .iter()
                .map(|c| json!({
                    "id": c.id,
                    "name": c.name,
                    "domain": c.domain,
                    "industry": c.industry,
                    "contacts": people(c.id).iter().map(|p| json!({"id": p.id, "name": p.name})).collect::<Vec<_>>(),
                }))
                .collect::<Vec<_>>(),
            "message": message,
        })))
    }
);

// ---------------------------------------------------------------- interaction agent

/// `add_interaction_to_contact`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct AddInteractionArgs {
    /// The contact's number, when known (it wins over `contact`).
    #[serde(default)]
    pub contact_id: Option<i64>,
    /// The contact's name as the person said it ("Mike", "Sarah from Acme").
    #[serde(default)]
    pub contact: Option<String>,
    /// What it was: call, meeting, email, lunch, coffee or message (call if not said).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// What it was about, in a few words ("the proposal").
    #[serde(default)]
    pub content: Option<String>,
    /// When it happened: YYYY-MM-DD or words (yesterday, Monday, Oct 27); today if not said.
    #[serde(default)]
    pub interaction_date: Option<String>,
    /// Who on the team had it (a user name); the person asking if not said.
    #[serde(default)]
    pub team_member: Option<String>,
    /// Whether it counts as the contact's last touch (default true).
    #[serde(default)]
    pub update_last_touch: Option<bool>,
}

crm_tool!(
    /// Logs something that happened with a contact (a call, meeting, email,
    /// lunch, coffee or message) on the day it happened, and makes it their
    /// last touch. Only past interactions: future plans are reminders.
    AddInteraction, "add_interaction_to_contact", AddInteractionArgs, writes(false),
    |store, args, cx| {
        let crm = store.read().map_err(failed)?;
        let today = store.db().asked_at(&cx).date();
        let contact = match contact_or(&crm, args.contact_id, args.contact.as_deref()) {
            Ok(c) => c,
            Err(outcome) => return Ok(outcome),
        };
        let kind = match text_arg(args.kind.as_deref()) {
            None => InteractionKind::Call,
            Some(word) => InteractionKind::from_words(&word).ok_or_else(|| {
                invalid("type", format!("'{word}' is not a kind of interaction: say call, meeting, email, lunch, coffee or message."))
            })?,
        };
        let on = match text_arg(args.interaction_date.as_deref()) {
            Some(text) => parse_past_date(&text, today).map_err(|e| invalid("interaction_date", e.to_string()))?,
            None => today,
        };
        if on > today {
            return Err(invalid(
                "interaction_date",
                format!("{} is still ahead: log what happened, and set a reminder for what is planned.", day(on, today)),
            ));
        }
        let by = match member_arg(&crm, &cx, args.team_member.as_deref())? {
            Some(m) => Some(m),
            None => me(&crm, &cx)?,
        };
        let summary = text_arg(args.content.as_deref()).unwrap_or_default();
        let touch = args.update_last_touch.unwrap_or(true);
        let applied = store
            .db().apply(cx.idempotency_key.as_str(), AddInteraction::NAME, |tx, now| {
                tx.execute(
                    "INSERT INTO interactions (contact_id, kind, summary, occurred_on, logged_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![contact.id, kind.as_str(), summary, stored_day(on), by.map(|m| m.id), stored_time(now)],
                )
                .map_err(|e| store.db().error(e))?;
                let id = tx.last_insert_rowid();
                if touch && contact.last_touch.is_none_or(|t| t < on) {
                    tx.execute(
                        "UPDATE contacts SET last_touch_on = ?1, updated_at = ?2 WHERE id = ?3",
                        params![stored_day(on), stored_time(now), contact.id],
                    )
                    .map_err(|e| store.db().error(e))?;
                }
                let about = if summary.is_empty() {
                    String::new()
                } else if summary.to_lowercase().starts_with("about ") {
                    format!(" {summary}")
                } else {
                    format!(" about {summary}")
                };
                Ok(json!({
                    "outcome": "logged",
                    "id": id,
                    "contact_id": contact.id,
                    "contact": contact.name,
                    "type": kind.as_str(),
                    "content": summary,
                    "interaction_date": stored_day(on),
                    "message": format!("Logged the {kind} with {} on {}{about}.", contact.name, day(on, today)),
                }))
            })
            .map_err(failed)?;
        Ok(Outcome::Done(applied))
    }
);

/// `add_note_to_contact`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct AddNoteArgs {
    /// The contact's number, when known (it wins over `contact`).
    #[serde(default)]
    pub contact_id: Option<i64>,
    /// The contact's name as the person said it.
    #[serde(default)]
    pub contact: Option<String>,
    /// What to note ("prefers email to calls").
    pub content: String,
    /// The day the note is about: YYYY-MM-DD or words; today if not said.
    #[serde(default)]
    pub note_date: Option<String>,
}

crm_tool!(
    /// Adds a general note to a contact (something to remember about them
    /// that is not an interaction).
    AddNote, "add_note_to_contact", AddNoteArgs, writes(false),
    |store, args, cx| {
        let crm = store.read().map_err(failed)?;
        let today = store.db().asked_at(&cx).date();
        let content = sentence_case(&args.content);
        if content.is_empty() {
            return Err(invalid("content", "A note needs something to say."));
        }
        let contact = match contact_or(&crm, args.contact_id, args.contact.as_deref()) {
            Ok(c) => c,
            Err(outcome) => return Ok(outcome),
        };
        let on = match text_arg(args.note_date.as_deref()) {
            Some(text) => parse_past_date(&text, today).map_err(|e| invalid("note_date", e.to_string()))?,
            None => today,
        };
        let by = me(&crm, &cx)?;
        let applied = store
            .db().apply(cx.idempotency_key.as_str(), AddNote::NAME, |tx, now| {
                tx.execute(
                    "INSERT INTO notes (contact_id, content, noted_on, written_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![contact.id, content, stored_day(on), by.map(|m| m.id), stored_time(now)],
                )
                .map_err(|e| store.db().error(e))?;
                Ok(json!({
                    "outcome": "noted",
                    "id": tx.last_insert_rowid(),
                    "contact_id": contact.id,
                    "contact": contact.name,
                    "content": content,
                    "message": format!("Added a note to {}: {content}.", contact.name),
                }))
            })
            .map_err(failed)?;
        Ok(Outcome::Done(applied))
    }
);

// ---------------------------------------------------------------- reminder agent

/// `set_next_reminder`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct SetReminderArgs {
    /// The contact's number, when known (it wins over `contact`).
    #[serde(default)]
    pub contact_id: Option<i64>,
    /// The contact's name as the person said it ("Sarah").
    #[serde(default)]
    pub contact: Option<String>,
    /// When: YYYY-MM-DD or words (tomorrow, Friday, next Tuesday, Oct 28, in 2 weeks).
    pub reminder_date: String,
    /// What to do then ("send the proposal"); "Follow up with <name>" if not said.
    #[serde(default)]
    pub text: Option<String>,
}

crm_tool!(
    /// Sets a reminder to get back to a contact on a future day (follow up,
    /// meet, send something). It becomes their next reminder if it is the earliest.
    SetNextReminder, "set_next_reminder", SetReminderArgs, writes(false),
    |store, args, cx| {
        let crm = store.read().map_err(failed)?;
        let today = store.db().asked_at(&cx).date();
        let due = parse_date(&args.reminder_date, today).map_err(|e| invalid("reminder_date", e.to_string()))?;
        if due < today {
            return Err(invalid(
                "reminder_date",
                format!("{} has passed: give a day from today on.", day(due, today)),
            ));
        }
        let contact = match contact_or(&crm, args.contact_id, args.contact.as_deref()) {
            Ok(c) => c,
            Err(outcome) => return Ok(outcome),
        };
        let text = text_arg(args.text.as_deref())
            .map(|t| sentence_case(&t))
            .unwrap_or_else(|| format!("Follow up with {}", contact.name));
        // The person asking, else the contact's owner.
        let owner = me(&crm, &cx)?.map(|m| m.id).or(contact.owner_id);
        let applied = store
            .db().apply(cx.idempotency_key.as_str(), SetNextReminder::NAME, |tx, now| {
                tx.execute(
                    "INSERT INTO reminders (contact_id, text, due_on, done, owner_id, created_at) VALUES (?1, ?2, ?3, 0, ?4, ?5)",
                    params![contact.id, text, stored_day(due), owner, stored_time(now)],
                )
                .map_err(|e| store.db().error(e))?;
                let mut lowered = text.clone();
                if let Some(first) = lowered.get(..1) {
                    lowered = format!("{}{}", first.to_lowercase(), lowered.get(1..).unwrap_or_default());
                }
                let lower_text = lowered.to_lowercase();
                let named = contact
                    .name
                    .split_whitespace()
                    .any(|w| lower_text.split(|c: char| !c.is_alphanumeric()).any(|t| t == w.to_lowercase()));
                let about = if named {
                    lowered
                } else {
                    format!("{lowered} ({})", contact.name)
                };
                Ok(json!({
                    "outcome": "reminder_set",
                    "id": tx.last_insert_rowid(),
                    "contact_id": contact.id,
                    "contact": contact.name,
                    "text": text,
                    "reminder_date": stored_day(due),
                    "message": format!("Reminder set for {}: {about}.", day(due, today)),
                }))
            })
            .map_err(failed)?;
        Ok(Outcome::Done(applied))
    }
);

// ---------------------------------------------------------------- update agent

/// `update_contact`'s arguments: which contact, and only the fields that change.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct UpdateContactArgs {
    /// The contact's number, when known (it wins over `contact`).
    #[serde(default)]
    pub contact_id: Option<i64>,
    /// The contact's name as the person said it ("Jane").
    #[serde(default)]
    pub contact: Option<String>,
    /// A new full name.
    #[serde(default)]
    pub name: Option<String>,
    /// A new email.
    #[serde(default)]
    pub email: Option<String>,
    /// A new phone number.
    #[serde(default)]
    pub phone: Option<String>,
    /// A new job title ("CEO", "VP of Sales").
    #[serde(default)]
    pub title: Option<String>,
    /// The company they now work at (added to the CRM if new).
    #[serde(default)]
    pub company: Option<String>,
}

crm_tool!(
    /// Changes a contact's fields: only those given (name, email, phone,
    /// job title, company); the others stay as they are.
    UpdateContact, "update_contact", UpdateContactArgs, writes(true),
    |store, args, cx| {
        let crm = store.read().map_err(failed)?;
        let name = text_arg(args.name.as_deref());
        let email = text_arg(args.email.as_deref());
        let phone = text_arg(args.phone.as_deref());
        let title = text_arg(args.title.as_deref()).map(|t| t.trim_end_matches('.').to_string());
        let company = text_arg(args.company.as_deref());
        if name.is_none() && email.is_none() && phone.is_none() && title.is_none() && company.is_none() {
            return Err(invalid("", "Nothing to change: give a new name, email, phone, title or company."));
        }
        if let Some(email) = &email
            && !email.contains('@')
        {
            return Err(invalid("email", format!("'{email}' is not an email address.")));
        }
        let contact = match contact_or(&crm, args.contact_id, args.contact.as_deref()) {
            Ok(c) => c,
            Err(outcome) => return Ok(outcome),
        };
        let existing = company.as_deref().and_then(|c| find_company(&crm, c)).map(|c| (c.id, c.name.clone()));
        let applied = store
            .db().apply(cx.idempotency_key.as_str(), UpdateContact::NAME, |tx, now| {
                let mut changed: Vec<(&str, String)> = Vec::new();
                let set = |column: &str, value: &dyn rusqlite::ToSql| -> Result<(), StoreError> {
                    tx.execute(&format!("UPDATE contacts SET {column} = ?1 WHERE id = ?2"), params![value, contact.id])
                        .map(|_| ())
                        .map_err(|e| store.db().error(e))
                };
                if let Some(v) = &name {
                    set("name", v)?;
                    changed.push(("name", v.clone()));
                }
                if let Some(v) = &email {
                    set("email", v)?;
                    changed.push(("email", v.clone()));
                }
                if let Some(v) = &phone {
                    set("phone", v)?;
                    changed.push(("phone", v.clone()));
                }
                if let Some(v) = &title {
                    set("title", v)?;
                    changed.push(("title", v.clone()));
                }
                if let Some(wanted) = &company {
                    let (id, shown) = match &existing {
                        Some((id, shown)) => (*id, shown.clone()),
                        None => {
                            tx.execute("INSERT INTO companies (name) VALUES (?1)", [wanted])
                                .map_err(|e| store.db().error(e))?;
                            (tx.last_insert_rowid(), wanted.clone())
                        }
                    };
                    set("company_id", &id)?;
                    changed.push(("company", shown));
                }
                set("updated_at", &stored_time(now))?;
                let fields: BTreeMap<&str, &String> = changed.iter().map(|(k, v)| (*k, v)).collect();
                let message = match changed.as_slice() {
                    [(field, value)] => format!("Updated {}'s {field} to {value}.", contact.name),
                    several => format!(
                        "Updated {}: {}.",
                        contact.name,
                        several.iter().map(|(f, v)| format!("{f} {v}")).collect::<Vec<_>>().join(", ")
                    ),
                };
                Ok(json!({
                    "outcome": "updated",
                    "contact_id": contact.id,
                    "contact": contact.name,
                    "changed": fields,
                    "message": message,
                }))
            })
            .map_err(failed)?;
        Ok(Outcome::Done(applied))
    }
);

// ---------------------------------------------------------------- query agent

/// `get_dashboard_stats`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct DashboardArgs {
    /// Only this team member's numbers: a user name, or "me" for the person asking.
    #[serde(default)]
    pub team_member: Option<String>,
}

crm_tool!(
    /// Counts contacts, overdue follow-ups, open reminders and the week's
    /// reminders, and the interactions of the last 30 days, for the whole
    /// team or one member ("me" for the person asking).
    GetDashboardStats, "get_dashboard_stats", DashboardArgs, read_only(),
    |store, args, cx| {
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

crm_tool!(
    /// Shows a contact's history, newest first: interactions, notes and
    /// reminders (open and done).
    GetContactTimeline, "get_contact_timeline", TimelineArgs, read_only(),
    |store, args, cx| {
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

crm_tool!(
    /// Lists the labels contacts carry (customer, prospect, ...) with how
    /// many contacts carry each.
    GetLabels, "get_labels", NoArgs, read_only(),
    |store, args, cx| {
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

crm_tool!(
    /// Turns a range in words (this week, last month, last 30 days, next 7
    /// days) into its first and last day, counted from today.
    CalculateDateRange, "calculate_date_range", DateRangeArgs, read_only(),
    |store, args, cx| {
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
