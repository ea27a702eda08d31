//! The Update agent's tool: change a contact's details, owner and labels.

use std::collections::BTreeMap;

use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{Outcome, contact_or, text_arg, writes};
use crate::crm::find::find_company;
use crate::crm::store::CrmStore;
use crate::domain_db::{StoreError, stored_time};
use crate::toolkit::{db_tool, failed, invalid};

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

db_tool!(
    /// Changes a contact's fields: only those given (name, email, phone,
    /// job title, company); the others stay as they are.
    UpdateContact, "update_contact", CrmStore, "crm", UpdateContactArgs, writes(true), None,
    |store, args, cx| -> Outcome {
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
