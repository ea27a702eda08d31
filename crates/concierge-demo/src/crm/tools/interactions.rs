//! The Interaction agent's tools: log what happened with a contact (a call,
//! a meeting...) and add notes about them.

use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{Outcome, contact_or, day, me, member_arg, text_arg, writes};
use crate::crm::store::{CrmStore, InteractionKind};
use crate::dates::parse_past_date;
use crate::domain_db::{stored_day, stored_time};
use crate::toolkit::{db_tool, failed, invalid, sentence_case};

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

db_tool!(
    /// Logs something that happened with a contact (a call, meeting, email,
    /// lunch, coffee or message) on the day it happened, and makes it their
    /// last touch. Only past interactions: future plans are reminders.
    AddInteraction, "add_interaction_to_contact", CrmStore, "crm", AddInteractionArgs, writes(false), None,
    |store, args, cx| -> Outcome {
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

db_tool!(
    /// Adds a general note to a contact (something to remember about them
    /// that is not an interaction).
    AddNote, "add_note_to_contact", CrmStore, "crm", AddNoteArgs, writes(false), None,
    |store, args, cx| -> Outcome {
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
