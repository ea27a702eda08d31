//! The travel tools. Every result is a JSON object with a `message` (a
//! sentence for people, which the rules' answers show) and the data behind
//! it. The searches put what a booking needs on the session's blackboard
//! (`provides`): the event or match found (`event_city`, `fixture_city`),
//! the day to travel (`travel_date`) and the best offer (`offer`,
//! `offer_summary`), so "find me a flight from Sydney" and "book it" need
//! nothing repeated.

use chrono::{Days, NaiveDate};
use concierge::{ToolAnnotations, ToolContext, ToolError};
use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::store::{City, Event, Fixture, Mode, Service, Team, TravelStore, money};
use super::when::{Period, parse_period};
use crate::dates::parse_date;
use crate::domain_db::{stored_day, stored_time};
use crate::toolkit::{db_tool, failed, invalid, plural, read_only};

fn lowercase_words(text: &str) -> String {
    text.trim()
        .trim_end_matches(['.', '?', '!'])
        .trim()
        .trim_start_matches("the ")
        .to_lowercase()
}

/// The city `text` names (its name, a prefix of it, or its airport code),
/// among those `serves` accepts; `what` names them in the error.
fn find_city(
    store: &TravelStore,
    field: &str,
    text: &str,
    serves: impl Fn(&City) -> bool,
    what: &str,
) -> Result<City, ToolError> {
    let wanted = lowercase_words(text);
    let cities: Vec<City> = store
        .cities()
        .map_err(failed)?
        .into_iter()
        .filter(|c| serves(c))
        .collect();
    let exact = cities
        .iter()
        .find(|c| c.name.to_lowercase() == wanted || c.airport.as_deref().is_some_and(|a| a.to_lowercase() == wanted));
    let prefix: Vec<&City> = cities
        .iter()
        .filter(|c| wanted.len() >= 3 && c.name.to_lowercase().starts_with(&wanted))
        .collect();
    match (exact, prefix.as_slice()) {
        (Some(city), _) => Ok(city.clone()),
        (None, [city]) => Ok((*city).clone()),
        _ => {
            let known: Vec<String> = cities
                .iter()
                .map(|c| match &c.airport {
                    Some(code) => format!("{} ({code})", c.name),
                    None => c.name.clone(),
                })
                .collect();
            Err(invalid(
                field,
                format!(
                    "I know no {what} called '{}'. I know: {}.",
                    text.trim(),
                    known.join(", ")
                ),
            ))
        }
    }
}

/// The day `text` means (a date or words such as "next Friday"), not before `today`.
fn travel_day(field: &str, text: &str, today: NaiveDate) -> Result<NaiveDate, ToolError> {
    let date = parse_date(text, today).map_err(|e| invalid(field, e.to_string()))?;
    if date < today {
        return Err(invalid(
            field,
            format!(
                "{} has passed: choose a day from today on.",
                date.format("%a %-d %b %Y")
            ),
        ));
    }
    Ok(date)
}

/// The month or day `text` means, or this month when it is empty.
fn period(field: &str, text: Option<&str>, today: NaiveDate) -> Result<Period, ToolError> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(parse_period("this month", today).unwrap_or(Period::Day(today))),
        Some(t) => parse_period(t, today).ok_or_else(|| {
            invalid(
                field,
                format!(
                    "I could not tell which month '{t}' means. Say a month (March, next month, March 2026) or a day (next Friday, 2025-03-14)."
                ),
            )
        }),
    }
}

fn long_day(date: NaiveDate) -> String {
    date.format("%a %-d %b %Y").to_string()
}

// ---------------------------------------------------------------- events

/// `find_events`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct FindEventsArgs {
    /// The city (e.g. "Melbourne").
    pub city: String,
    /// The month ("March", "next month", "March 2026") or a day ("next
    /// Friday", "2025-03-14"); this month if not said.
    #[serde(default)]
    pub month: Option<String>,
}

fn event_json(e: &Event) -> Value {
    json!({
        "id": e.id,
        "name": e.name,
        "city": e.city,
        "venue": e.venue,
        "starts_on": stored_day(e.starts_on),
        "ends_on": stored_day(e.ends_on),
        "description": e.description,
    })
}

db_tool!(
    /// Finds the events (festivals, parades, shows) in a city of Australia
    /// or New Zealand in a month, or on a day. The first one found is the
    /// trip's event: a flight search can then fly there the day before.
    FindEvents, "find_events", TravelStore, "travel", FindEventsArgs, read_only(), confirmation(Self::NAME),
    provides ["event_name", "event_city", "travel_date"],
    |store, args, cx| {
        let today = store.db().asked_at(&cx).date();
        let city = find_city(store, "city", &args.city, |c| c.airport.is_some(), "city with events")?;
        let period = period("month", args.month.as_deref(), today)?;
        let events = store.events(Some(&city.name), period.first(), period.last()).map_err(failed)?;
        let Some(first) = events.first() else {
            return Ok(json!({
                "city": city.name,
                "period": period.label(),
                "events": [],
                "event_name": null,
                "event_city": null,
                "travel_date": null,
                "message": format!("I found no events in {} in {}. Try another month or city.", city.name, period.label()),
            }));
        };
        // Arrive the day before it starts (or today, when that has passed).
        let arrive = first
            .starts_on
            .checked_sub_days(Days::new(1))
            .unwrap_or(first.starts_on)
            .max(today);
        let lines: Vec<String> = events
            .iter()
            .map(|e| {
                format!(
                    "- {} at {}, {} to {}: {}",
                    e.name,
                    e.venue,
                    e.starts_on.format("%a %-d %b"),
                    e.ends_on.format("%a %-d %b %Y"),
                    e.description
                )
            })
            .collect();
        let message = format!(
            "{} in {} in {}:\n{}\nTo go to {}, say where you fly from (e.g. \"find me a flight from Sydney\"): I'll look for flights on {}.",
            plural(events.len(), "event", "events"),
            city.name,
            period.label(),
            lines.join("\n"),
            first.name,
            long_day(arrive)
        );
        Ok(json!({
            "city": city.name,
            "period": period.label(),
            "events": events.iter().map(event_json).collect::<Vec<_>>(),
            "event_name": first.name,
            "event_city": first.city,
            "travel_date": stored_day(arrive),
            "message": message,
        }))
    }
);

// ---------------------------------------------------------------- flights and trains

/// `search_flights`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct SearchFlightsArgs {
    /// Where from: a city or airport code (e.g. "Sydney", "SYD").
    pub origin: String,
    /// Where to: a city or airport code (e.g. "Melbourne").
    pub destination: String,
    /// The day: YYYY-MM-DD or words such as "next Friday", "tomorrow".
    pub date: String,
    /// The most one ticket may cost, in Australian dollars.
    #[serde(default)]
    pub max_price: Option<f64>,
}

/// `search_trains`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct SearchTrainsArgs {
    /// Where from: a city in Great Britain (e.g. "London").
    pub origin: String,
    /// Where to: a city in Great Britain (e.g. "Liverpool").
    pub destination: String,
    /// The day: YYYY-MM-DD or words such as "next Saturday", "tomorrow".
    pub date: String,
    /// The most one ticket may cost, in pounds.
    #[serde(default)]
    pub max_price: Option<f64>,
}

fn service_json(s: &Service, date: NaiveDate) -> Value {
    json!({
        "number": s.number,
        "operator": s.operator,
        "origin": s.origin,
        "destination": s.destination,
        "date": stored_day(date),
        "departs": s.departs.format("%H:%M").to_string(),
        "arrives": s.arrives(date).format("%Y-%m-%d %H:%M").to_string(),
        "minutes": s.minutes,
        "fare": s.fare_on(date) as f64 / 100.0,
        "currency": s.mode.currency(),
        "summary": s.line(date),
    })
}

/// Searches one mode: the departures on the day under the price limit,
/// the cheapest (then the earliest) as the offer to book.
fn search(
    store: &TravelStore,
    mode: Mode,
    origin: &str,
    destination: &str,
    date: &str,
    max_price: Option<f64>,
    cx: &ToolContext,
) -> Result<Value, ToolError> {
    let today = store.db().asked_at(cx).date();
    let (serves, what, noun, nouns): (fn(&City) -> bool, _, _, _) = match mode {
        Mode::Flight => (|c: &City| c.airport.is_some(), "airport city", "flight", "flights"),
        Mode::Train => (|c: &City| c.station, "station", "train", "trains"),
    };
    let from = find_city(store, "origin", origin, serves, what)?;
    let to = find_city(store, "destination", destination, serves, what)?;
    if from.name == to.name {
        return Err(invalid(
            "destination",
            "The origin and the destination are the same city.",
        ));
    }
    let date = travel_day("date", date, today)?;
    if let Some(max) = max_price {
        if !max.is_finite() || max <= 0.0 {
            return Err(invalid("max_price", "The price limit must be a positive amount."));
        }
    }
    let all = store.services(mode, &from.name, &to.name).map_err(failed)?;
    if all.is_empty() {
        return Err(ToolError::failed(format!(
            "There are no direct {nouns} from {} to {}. Try another city nearby.",
            from.name, to.name
        )));
    }
    let running: Vec<&Service> = all.iter().filter(|s| s.runs_on(date)).collect();
    let limit = max_price.map(|m| (m * 100.0).round() as i64);
    let found: Vec<&Service> = running
        .iter()
        .copied()
        .filter(|s| limit.is_none_or(|l| s.fare_on(date) <= l))
        .collect();
    let currency = mode.currency();
    let Some(best) = found.iter().min_by_key(|s| (s.fare_on(date), s.departs)) else {
        let cheapest = running.iter().min_by_key(|s| (s.fare_on(date), s.departs));
        let message = match (cheapest, limit) {
            (Some(cheapest), Some(l)) => format!(
                "No {noun} from {} to {} on {} costs {} or less; the cheapest is {}.",
                from.name,
                to.name,
                long_day(date),
                money(l, currency),
                cheapest.line(date)
            ),
            _ => format!(
                "No {noun} from {} to {} runs on {}.",
                from.name,
                to.name,
                long_day(date)
            ),
        };
        return Ok(json!({
            "origin": from.name, "destination": to.name, "date": stored_day(date),
            nouns: [], "offer": null, "offer_summary": null, "travel_date": stored_day(date),
            "message": message,
        }));
    };
    let lines: Vec<String> = found.iter().map(|s| format!("- {}", s.line(date))).collect();
    let summary = best.line(date);
    let message = format!(
        "{} from {} to {} on {}:\n{}\nThe cheapest is {} at {} for {}. Say \"book it\" and I'll create the invoice, or name another {noun}.",
        plural(found.len(), noun, nouns),
        from.name,
        to.name,
        long_day(date),
        lines.join("\n"),
        best.number,
        best.departs.format("%H:%M"),
        money(best.fare_on(date), currency),
    );
    Ok(json!({
        "origin": from.name,
        "destination": to.name,
        "date": stored_day(date),
        nouns: found.iter().map(|s| service_json(s, date)).collect::<Vec<_>>(),
        "offer": best.number,
        "offer_summary": summary,
        "travel_date": stored_day(date),
        "message": message,
    }))
}

db_tool!(
    /// Searches direct flights between two cities of Australia and New
    /// Zealand on a day, optionally under a price (A$); the cheapest is the
    /// offer "book it" invoices.
    SearchFlights, "search_flights", TravelStore, "travel", SearchFlightsArgs, read_only(), confirmation(Self::NAME),
    provides ["offer", "offer_summary", "travel_date"],
    |store, args, cx| {
        search(store, Mode::Flight, &args.origin, &args.destination, &args.date, args.max_price, &cx)
    }
);

db_tool!(
    /// Searches direct trains between two cities of Great Britain on a
    /// day, optionally under a price (£); the cheapest is the offer "book
    /// it" invoices.
    SearchTrains, "search_trains", TravelStore, "travel", SearchTrainsArgs, read_only(), confirmation(Self::NAME),
    provides ["offer", "offer_summary", "travel_date"],
    |store, args, cx| {
        search(store, Mode::Train, &args.origin, &args.destination, &args.date, args.max_price, &cx)
    }
);

// ---------------------------------------------------------------- fixtures

/// `search_fixtures`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct SearchFixturesArgs {
    /// A club, whole or in part (e.g. "Mersey Rovers", "Rovers").
    #[serde(default)]
    pub team: Option<String>,
    /// A city whose home matches to list (e.g. "Liverpool").
    #[serde(default)]
    pub city: Option<String>,
    /// The month ("April", "next month") or a day ("next Saturday"); this month if not said.
    #[serde(default)]
    pub month: Option<String>,
}

fn find_team(store: &TravelStore, text: &str) -> Result<Team, ToolError> {
    let wanted = lowercase_words(text);
    let teams = store.teams().map_err(failed)?;
    let matching: Vec<&Team> = teams
        .iter()
        .filter(|t| {
            let name = t.name.to_lowercase();
            name == wanted
                || (wanted.len() >= 3
                    && name
                        .split(' ')
                        .any(|w| w == wanted || (w.len() > 4 && wanted.contains(w))))
        })
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        _ => {
            let names: Vec<&str> = teams.iter().map(|t| t.name.as_str()).collect();
            let problem = if matching.is_empty() {
                format!("I know no club called '{}'.", text.trim())
            } else {
                format!("More than one club could be '{}'.", text.trim())
            };
            Err(invalid(
                "team",
                format!("{problem} The Albion League's clubs: {}.", names.join(", ")),
            ))
        }
    }
}

/// "Mersey Rovers'" and "Irwell City's".
fn possessive(name: &str) -> String {
    if name.ends_with('s') {
        format!("{name}'")
    } else {
        format!("{name}'s")
    }
}

fn fixture_json(f: &Fixture) -> Value {
    json!({
        "id": f.id,
        "home": f.home,
        "away": f.away,
        "city": f.city,
        "stadium": f.stadium,
        "kickoff": f.kickoff.format("%Y-%m-%d %H:%M").to_string(),
        "summary": f.line(),
    })
}

db_tool!(
    /// Lists the Albion League's football matches (Great Britain) in a
    /// month or on a day: a club's (home and away), or those played in a
    /// city. The first one found is the trip's match: a train search can
    /// then go there on match day.
    SearchFixtures, "search_fixtures", TravelStore, "travel", SearchFixturesArgs, read_only(), confirmation(Self::NAME),
    provides ["fixture_name", "fixture_city", "travel_date"],
    |store, args, cx| {
        let today = store.db().asked_at(&cx).date();
        let team = match args.team.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            Some(t) => Some(find_team(store, t)?),
            None => None,
        };
        let city = match args.city.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            Some(c) => Some(find_city(store, "city", c, |c| c.station, "city with a club")?),
            None => None,
        };
        let period = period("month", args.month.as_deref(), today)?;
        let from = period.first().max(today);
        let fixtures = store
            .fixtures(team.as_ref().map(|t| t.name.as_str()), city.as_ref().map(|c| c.name.as_str()), from, period.last())
            .map_err(failed)?;
        let whose = match (&team, &city) {
            (Some(t), Some(c)) => format!("{} matches in {}", possessive(&t.name), c.name),
            (Some(t), None) => format!("{} matches", possessive(&t.name)),
            (None, Some(c)) => format!("Matches in {}", c.name),
            (None, None) => "Albion League matches".to_string(),
        };
        let Some(first) = fixtures.first() else {
            return Ok(json!({
                "fixtures": [], "fixture_name": null, "fixture_city": null, "travel_date": null,
                "message": format!("{whose}: none in {} from {} on.", period.label(), long_day(from)),
            }));
        };
        let lines: Vec<String> = fixtures.iter().map(|f| format!("- {}", f.line())).collect();
        let message = format!(
            "{whose} in {}:\n{}\nTo go to {} v {}, say where you travel from (e.g. \"find me a train from London\"): I'll look for trains to {} on {}.",
            period.label(),
            lines.join("\n"),
            first.home,
            first.away,
            first.city,
            long_day(first.kickoff.date())
        );
        Ok(json!({
            "fixtures": fixtures.iter().map(fixture_json).collect::<Vec<_>>(),
            "fixture_name": format!("{} v {}", first.home, first.away),
            "fixture_city": first.city,
            "travel_date": stored_day(first.kickoff.date()),
            "message": message,
        }))
    }
);

// ---------------------------------------------------------------- invoices

/// `create_invoice`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct CreateInvoiceArgs {
    /// The flight or train number, as a search listed it (e.g. "SX100", "AR1012").
    pub service: String,
    /// The day of travel: YYYY-MM-DD or words such as "next Friday".
    pub date: String,
    /// How many people travel (1 if not said).
    #[serde(default)]
    pub passengers: Option<u32>,
    /// Who the invoice is for, if the person said (a name or an email).
    #[serde(default)]
    pub customer: Option<String>,
    /// The offer as the search described it, shown in the question before
    /// the invoice is created (e.g. "SX100 Sydney 07:00 → Melbourne 08:35, A$164.00").
    #[serde(default)]
    pub summary: Option<String>,
}

db_tool!(
    /// Creates an invoice for a flight or a train found by a search: the
    /// fare on that day times the passengers, due in two weeks. Asks the
    /// person first.
    CreateInvoice, "create_invoice", TravelStore, "travel", CreateInvoiceArgs,
    ToolAnnotations {
        idempotent: true,
        requires_confirmation: true,
        ..ToolAnnotations::default()
    },
    confirmation(Self::NAME),
    |store, args, cx| {
        let asked = store.db().asked_at(&cx);
        let today = asked.date();
        let Some(service) = store.service_by_number(&args.service).map_err(failed)? else {
            return Err(invalid(
                "service",
                format!(
                    "There is no flight or train numbered '{}'. Search flights or trains first to see their numbers.",
                    args.service.trim()
                ),
            ));
        };
        let date = travel_day("date", &args.date, today)?;
        if !service.runs_on(date) {
            return Err(invalid(
                "date",
                format!("{} does not run on {}. Search again for that day.", service.number, long_day(date)),
            ));
        }
        let passengers = args.passengers.unwrap_or(1);
        if !(1..=9).contains(&passengers) {
            return Err(invalid("passengers", "An invoice covers 1 to 9 passengers."));
        }
        let customer = args.customer.map(|c| c.trim().to_string()).filter(|c| !c.is_empty());
        let unit = service.fare_on(date);
        let amount = unit * i64::from(passengers);
        let currency = service.mode.currency();
        let due = today.checked_add_days(Days::new(14)).unwrap_or(today);
        let line = service.line(date);
        let description = format!("{} on {}", line, long_day(date));
        let result = store
            .db()
            .apply(cx.idempotency_key.as_str(), CreateInvoice::NAME, |tx, now| {
                let id: i64 = tx
                    .query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM invoices", [], |r| r.get(0))
                    .map_err(|e| store.db().error(e))?;
                let number = format!("INV-{}-{id:04}", today.format("%Y"));
                tx.execute(
                    "INSERT INTO invoices (id, number, mode, service, travel_date, description, passengers, \
                     unit_cents, amount_cents, currency, customer, created_at, due_on) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                    params![
                        id,
                        number,
                        service.mode.as_str(),
                        service.number,
                        stored_day(date),
                        description,
                        passengers,
                        unit,
                        amount,
                        currency,
                        customer,
                        stored_time(now),
                        stored_day(due),
                    ],
                )
                .map_err(|e| store.db().error(e))?;
                let who = customer.as_deref().map(|c| format!(", billed to {c}")).unwrap_or_default();
                let message = format!(
                    "Created invoice {number}: {description}, {}, {}{who}. It is due on {}.",
                    plural(passengers as usize, "passenger", "passengers"),
                    money(amount, currency),
                    long_day(due)
                );
                Ok(json!({
                    "invoice": number,
                    "service": service.number,
                    "mode": service.mode.as_str(),
                    "travel_date": stored_day(date),
                    "passengers": passengers,
                    "amount": amount as f64 / 100.0,
                    "currency": currency,
                    "due_on": stored_day(due),
                    "message": message,
                }))
            })
            .map_err(failed)?;
        Ok(result)
    }
);

// ---------------------------------------------------------------- confirmations

/// The question each changing tool asks before it runs, over its argument
/// names; a part in square brackets shows only when its arguments are given.
pub const CONFIRMATIONS: &[(&str, &str)] = &[(
    CreateInvoice::NAME,
    "I'll create an invoice for {service} on {date}[ ({summary})][ for {passengers} passengers][, billed to {customer}]. Proceed?",
)];

/// The confirmation template of the tool named `name`, if it changes anything.
pub fn confirmation(name: &str) -> Option<&'static str> {
    CONFIRMATIONS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use concierge::Tool;

    use super::*;

    #[test]
    fn the_invoice_question_names_only_its_arguments() {
        let spec = Tool::spec(&CreateInvoice::new(Arc::new(TravelStore::open("unused.db"))));
        assert!(spec.annotations.requires_confirmation);
        let properties = spec.input_schema["properties"].as_object().unwrap();
        let template = spec.confirm.clone().unwrap();
        for placeholder in template
            .split('{')
            .skip(1)
            .filter_map(|p| p.split_once('}'))
            .map(|p| p.0)
        {
            assert!(properties.contains_key(placeholder), "{{{placeholder}}}");
        }
        let ask = |args: Value| concierge::core::confirmation_message(&spec, &args);
        assert_eq!(
            ask(
                json!({"service": "SX100", "date": "2025-03-05", "summary": "SX100 Sydney 07:00 → Melbourne 08:35, A$164.00"})
            ),
            "I'll create an invoice for SX100 on 2025-03-05 (SX100 Sydney 07:00 → Melbourne 08:35, A$164.00). Proceed?"
        );
        assert_eq!(
            ask(json!({"service": "AR1012", "date": "2025-04-12", "passengers": 2, "customer": "Sam"})),
            "I'll create an invoice for AR1012 on 2025-04-12 for 2 passengers, billed to Sam. Proceed?"
        );
    }
}
