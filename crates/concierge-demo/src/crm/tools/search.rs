//! The router's and the Query agent's searches: contacts (by name, company,
//! label, owner, when last touched) and companies.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{Outcome, contact_json, contact_line, member_arg, text_arg};
use crate::crm::find::{find_company, name_fits};
use crate::crm::store::{Contact, CrmStore};
use crate::dates::parse_date;
use crate::toolkit::{db_tool, failed, invalid, plural, read_only};

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

db_tool!(
    /// Searches all contacts by name, email, company or title, optionally
    /// only one team member's ("me" for the person asking), a company's, a
    /// label's, the overdue ones (next reminder before today) or those with
    /// a reminder due in a date range. Lists each with company, title and next reminder.
    SearchContacts, "search_contacts", CrmStore, "crm", SearchContactsArgs, read_only(), None,
    |store, args, cx| -> Outcome {
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

db_tool!(
    /// Searches companies by name or domain, with their industry and the
    /// contacts who work there.
    SearchCompanies, "search_companies", CrmStore, "crm", SearchCompaniesArgs, read_only(), None,
    |store, args, cx| -> Outcome {
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
