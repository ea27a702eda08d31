//! The Reminder agent's tool: the next thing to do about a contact, and when.

use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{Outcome, contact_or, day, me, text_arg, writes};
use crate::crm::store::CrmStore;
use crate::dates::parse_date;
use crate::domain_db::{stored_day, stored_time};
use crate::toolkit::{db_tool, failed, invalid, sentence_case};

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

db_tool!(
    /// Sets a reminder to get back to a contact on a future day (follow up,
    /// meet, send something). It becomes their next reminder if it is the earliest.
    SetNextReminder, "set_next_reminder", CrmStore, "crm", SetReminderArgs, writes(false), None,
    |store, args, cx| -> Outcome {
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
