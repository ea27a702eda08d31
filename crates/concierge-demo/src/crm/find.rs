//! Finding whom the person means: a contact by number, name, part of a name
//! or email (optionally "Sarah from Acme"), a team member by user name, a
//! company by name. A name several contacts share is not guessed: it comes
//! back as an [`Ambiguity`], a numbered choice to put to the person.

use concierge::Choice;
use concierge::fuzzy::{self, Candidate, Match, Thresholds};
use serde_json::{Value, json};

use super::store::{Company, Contact, Crm, TeamMember};
use crate::toolkit::HOW_TO_BE_SOMEONE;

/// A question with options, for when a name fits several contacts: the
/// person picks one, and the chosen option's id is filled into the tool's
/// `argument` for the call to run again.
#[derive(Clone, Debug, PartialEq)]
pub struct Ambiguity {
    /// What to ask ("Which John do you mean?").
    pub question: String,
    /// The tool argument the chosen id goes into (`contact_id`).
    pub argument: String,
    /// The options, in the order shown: id and a label that tells them apart.
    pub options: Vec<(Value, String)>,
}

impl Ambiguity {
    /// The question and its numbered options, as one message for people.
    pub fn message(&self) -> String {
        let mut text = self.question.clone();
        for (n, (_, label)) in (1..).zip(&self.options) {
            text.push_str(&format!("\n{n}) {label}"));
        }
        text
    }

    /// The choice as the runtime asks it (the core numbers the options and
    /// fills the pick into `argument`).
    pub fn to_choice(&self) -> Choice {
        self.options.iter().fold(
            Choice::new(self.question.clone(), self.argument.clone()),
            |choice, (id, label)| choice.option(id.clone(), label.clone()),
        )
    }
}

/// Whom a reference came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Found<'c> {
    /// Exactly one contact.
    One(&'c Contact),
    /// Several could be meant: ask.
    Choose(Ambiguity),
    /// None: why, in a sentence (with the closest names, if any).
    Missing(String),
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '@' || c == '.' || c == '-' || c == '\''))
        .map(|w| w.trim_matches(['.', '\'']).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The name without a possessive or filler words ("Jane's" → "Jane", "with Mike" → "Mike").
fn clean(text: &str) -> String {
    let text = text.trim().trim_end_matches(['.', ',', '!', '?']).trim();
    let text = text
        .strip_suffix("'s")
        .or_else(|| text.strip_suffix("’s"))
        .unwrap_or(text);
    let lower = text.to_lowercase();
    for filler in ["with ", "to ", "for ", "contact "] {
        if lower.starts_with(filler) {
            return text[filler.len()..].trim().to_string();
        }
    }
    text.trim().to_string()
}

/// The company a name means: the same name in any case, else one clear fuzzy match.
pub fn find_company<'c>(crm: &'c Crm, text: &str) -> Option<&'c Company> {
    let wanted = text.trim().to_lowercase();
    if wanted.is_empty() {
        return None;
    }
    if let Some(c) = crm.companies.iter().find(|c| {
        c.name.to_lowercase() == wanted || c.domain.to_lowercase() == wanted || words(&c.name) == words(&wanted)
    }) {
        return Some(c);
    }
    // "Globex Corp", "Acme Inc.": every word of a company's name, and only one company's.
    let given = words(&wanted);
    let mut covered = crm
        .companies
        .iter()
        .filter(|c| words(&c.name).iter().all(|w| given.contains(w)));
    if let (Some(c), None) = (covered.next(), covered.next()) {
        return Some(c);
    }
    let candidates = crm
        .companies
        .iter()
        .map(|c| Candidate::new(c.id.to_string(), c.name.clone()));
    match fuzzy::classify(&wanted, candidates, &Thresholds::default()) {
        Match::Found(found) => crm.companies.iter().find(|c| c.id.to_string() == found.id),
        _ => None,
    }
}

/// "Sarah from Acme" → ("Sarah", Acme) when the part after `from`/`at`/`of` is a company.
fn split_company<'c>(crm: &'c Crm, text: &str) -> (String, Option<&'c Company>) {
    let lower = text.to_lowercase();
    for joint in [" from ", " at ", " of "] {
        if let Some(at) = lower.rfind(joint) {
            let (name, company) = (&text[..at], &text[at + joint.len()..]);
            if let Some(found) = find_company(crm, company) {
                return (name.trim().to_string(), Some(found));
            }
        }
    }
    (text.to_string(), None)
}

/// Whether every word of `query` is a word of the contact's name (or the query is their email).
pub fn name_fits(contact: &Contact, query: &str) -> bool {
    let query = words(query);
    if query.is_empty() {
        return false;
    }
    if query.len() == 1 && query[0].contains('@') {
        return contact.email.as_deref().is_some_and(|e| e.to_lowercase() == query[0]);
    }
    let name = words(&contact.name);
    query.iter().all(|q| name.contains(q))
}

/// Capitalizes the first letter ("john" → "John").
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The contact `id` names, else the one `name` means ("John Smith", "John",
/// "Jane's", "sarah.lee@acme.example", "Sarah from Acme"). Several that fit
/// are a choice; none, a sentence with the closest names.
pub fn find_contact<'c>(crm: &'c Crm, id: Option<i64>, name: Option<&str>) -> Found<'c> {
    if let Some(id) = id {
        return match crm.contact(id) {
            Some(contact) => Found::One(contact),
            None => Found::Missing(format!(
                "There is no contact #{id}. Search for them by name, e.g. \"find John\"."
            )),
        };
    }
    let Some(text) = name.map(clean).filter(|t| !t.is_empty()) else {
        return Found::Missing("Say which contact you mean, by name (e.g. Sarah Lee).".into());
    };
    let (who, company) = split_company(crm, &text);
    let pool: Vec<&Contact> = crm
        .contacts
        .iter()
        .filter(|c| company.is_none_or(|co| c.company_id == Some(co.id)))
        .collect();
    let exact: Vec<&Contact> = pool
        .iter()
        .copied()
        .filter(|c| c.name.to_lowercase() == who.to_lowercase())
        .collect();
    let fits: Vec<&Contact> = if exact.len() == 1 {
        exact
    } else {
        pool.iter().copied().filter(|c| name_fits(c, &who)).collect()
    };
    match fits.as_slice() {
        [one] => return Found::One(one),
        [] => {}
        several => return Found::Choose(choice(&who, several)),
    }
    let candidates = pool.iter().map(|c| Candidate::new(c.id.to_string(), c.name.clone()));
    let by_id = |id: &str| pool.iter().copied().find(|c| c.id.to_string() == id);
    let place = company.map(|c| format!(" at {}", c.name)).unwrap_or_default();
    match fuzzy::classify(&who, candidates, &Thresholds::default()) {
        Match::Found(found) => match by_id(&found.id) {
            Some(contact) => Found::One(contact),
            None => Found::Missing(format!("I found no contact named '{who}'{place}.")),
        },
        Match::Choice { candidates } => {
            let several: Vec<&Contact> = candidates.iter().filter_map(|s| by_id(&s.id)).collect();
            Found::Choose(choice(&who, &several))
        }
        Match::NotFound { suggestions } => {
            let closest: Vec<String> = suggestions
                .iter()
                .filter_map(|s| by_id(&s.id))
                .map(Contact::label)
                .collect();
            if closest.is_empty() {
                Found::Missing(format!("I found no contact named '{who}'{place}."))
            } else {
                Found::Missing(format!(
                    "I found no contact named '{who}'{place}. The closest: {}.",
                    closest.join("; ")
                ))
            }
        }
    }
}

fn choice(who: &str, several: &[&Contact]) -> Ambiguity {
    Ambiguity {
        question: format!("Which {} do you mean?", capitalized(who)),
        argument: "contact_id".into(),
        options: several.iter().map(|c| (json!(c.id), c.label())).collect(),
    }
}

/// The team member `who` names (user name, email, name, first name or number).
pub fn find_member<'c>(crm: &'c Crm, who: &str) -> Option<&'c TeamMember> {
    crm.team.iter().find(|m| m.is(who))
}

/// The team as a list for people: `Maya Patel (maya), Leo Garcia (leo)`.
pub fn team_list(crm: &Crm) -> String {
    crm.team
        .iter()
        .map(|m| format!("{} ({})", m.name, m.handle()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The team member the run's user is: `None` when the run did not say who
/// asked; a sentence when it named someone not on the team.
pub fn current_member<'c>(crm: &'c Crm, user: Option<&str>) -> Result<Option<&'c TeamMember>, String> {
    match user.map(str::trim).filter(|u| !u.is_empty()) {
        None => Ok(None),
        Some(user) => find_member(crm, user).map(Some).ok_or_else(|| {
            format!(
                "'{user}' is not on the team, so I cannot tell whose contacts are yours. The team: {}. {HOW_TO_BE_SOMEONE}",
                team_list(crm)
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, NaiveDateTime};

    use super::*;
    use crate::crm::store::CrmStore;

    fn crm() -> Crm {
        let dir = tempfile::tempdir().unwrap();
        let now: NaiveDateTime = NaiveDate::from_ymd_opt(2025, 3, 5)
            .unwrap()
            .and_hms_opt(10, 0, 0)
            .unwrap();
        CrmStore::open(dir.path().join("crm.db")).at(now).read().unwrap()
    }

    fn one(found: Found<'_>) -> String {
        match found {
            Found::One(c) => c.name.clone(),
            other => panic!("not one contact: {other:?}"),
        }
    }

    #[test]
    fn a_name_one_contact_has_is_that_contact() {
        let crm = crm();
        assert_eq!(one(find_contact(&crm, None, Some("Mike"))), "Mike Brennan");
        assert_eq!(one(find_contact(&crm, None, Some("Jane's"))), "Jane Cooper");
        assert_eq!(one(find_contact(&crm, None, Some("with Sarah"))), "Sarah Lee");
        assert_eq!(one(find_contact(&crm, None, Some("Sarah from Acme"))), "Sarah Lee");
        assert_eq!(one(find_contact(&crm, None, Some("john smith"))), "John Smith");
        assert_eq!(one(find_contact(&crm, None, Some("John at Globex"))), "John Park");
        assert_eq!(
            one(find_contact(&crm, None, Some("john.park@globex.example"))),
            "John Park"
        );
        assert_eq!(
            one(find_contact(&crm, None, Some("Mkie Brennan"))),
            "Mike Brennan",
            "a typo"
        );
        // The number wins over the name.
        assert_eq!(one(find_contact(&crm, Some(2), Some("John"))), "John Park");
    }

    #[test]
    fn a_shared_name_is_a_numbered_choice() {
        let crm = crm();
        let Found::Choose(choice) = find_contact(&crm, None, Some("john")) else {
            panic!("two Johns")
        };
        assert_eq!(choice.question, "Which John do you mean?");
        assert_eq!(choice.argument, "contact_id");
        assert_eq!(
            choice.options,
            [
                (json!(1), "John Smith (Acme, john.smith@acme.example)".to_string()),
                (json!(2), "John Park (Globex, john.park@globex.example)".to_string()),
            ]
        );
        assert_eq!(
            choice.message(),
            "Which John do you mean?\n1) John Smith (Acme, john.smith@acme.example)\n2) John Park (Globex, john.park@globex.example)"
        );
        let asked = choice.to_choice();
        assert_eq!(asked.options[1].id, 2);
        assert_eq!(asked.resolve("2"), Some(1));
    }

    #[test]
    fn an_unknown_name_says_so_with_the_closest() {
        let crm = crm();
        let Found::Missing(why) = find_contact(&crm, None, Some("Bob Marley")) else {
            panic!("nobody")
        };
        assert!(why.starts_with("I found no contact named 'Bob Marley'"), "{why}");
        let Found::Missing(why) = find_contact(&crm, Some(99), None) else {
            panic!("no #99")
        };
        assert!(why.contains("no contact #99"), "{why}");
        assert!(matches!(find_contact(&crm, None, Some("  ")), Found::Missing(_)));
    }

    #[test]
    fn the_current_member_is_the_runs_user() {
        let crm = crm();
        assert_eq!(current_member(&crm, Some("maya")).unwrap().unwrap().name, "Maya Patel");
        assert_eq!(current_member(&crm, None).unwrap(), None);
        let e = current_member(&crm, Some("zed")).unwrap_err();
        assert!(
            e.contains("'zed' is not on the team") && e.contains("Maya Patel (maya)"),
            "{e}"
        );
        assert_eq!(find_company(&crm, "acme").unwrap().name, "Acme");
        assert_eq!(
            find_company(&crm, "Globex Corp").map(|c| c.name.as_str()),
            Some("Globex")
        );
    }
}
