//! The CRM's tools, under the names the agents of `examples/crm/agents/`
//! call them by, one file per agent. Every result is a JSON object with a
//! `message` (a sentence for people, which the rules' answers show) and the
//! data behind it (for a model, or a program).
//!
//! The tools that change something take the contact as `contact_id` (wins
//! when given) or `contact` (a name, "Sarah from Acme"); when the name fits
//! several contacts they change nothing and answer with a numbered choice
//! whose pick is filled into `contact_id`. They deduplicate on the call's
//! idempotency key and do not ask before running: the router
//! (`examples/crm/agents/router.toml`) answers a whole statement in one
//! message.

mod interactions;
mod query;
mod reminders;
mod search;
mod update;

use chrono::{Datelike, NaiveDate};
use concierge::{Reply, ToolAnnotations, ToolContext, ToolError};
use serde_json::{Value, json};

use super::find::{Ambiguity, Found, current_member, find_contact, find_member, team_list};
use super::store::{Contact, Crm, TeamMember};
use crate::domain_db::stored_day;
use crate::toolkit::{Answer, HOW_TO_BE_SOMEONE, invalid, plural};

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

impl Answer for Outcome {
    fn into_answer(self) -> Result<Value, ToolError> {
        self.into_value()
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
                "I don't know who you are, so I cannot tell which contacts are yours. The team: {}. {HOW_TO_BE_SOMEONE}",
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

fn text_arg(text: Option<&str>) -> Option<String> {
    text.map(str::trim).filter(|t| !t.is_empty()).map(str::to_string)
}

pub use interactions::{AddInteraction, AddInteractionArgs, AddNote, AddNoteArgs};
pub use query::{
    CalculateDateRange, DashboardArgs, DateRangeArgs, GetContactTimeline, GetDashboardStats, GetLabels, NoArgs,
    TimelineArgs, date_range,
};
pub use reminders::{SetNextReminder, SetReminderArgs};
pub use search::{SearchCompanies, SearchCompaniesArgs, SearchContacts, SearchContactsArgs};
pub use update::{UpdateContact, UpdateContactArgs};
