//! The bank's tools: check an account, show the balances, move money, apply
//! for a loan.
//! Every result is a JSON object with a `message` (a sentence for people,
//! which the rules' answers show) and the data behind it.
//!
//! The customer is the run's user (`--user`: a customer number, an email, a
//! name or a first name); a run that names none acts for Jordan Avery
//! (`C-1001`), the first customer of the seed data.

use rusqlite::{Connection, params};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::store::{Account, Customer, DEFAULT_CUSTOMER, FinanceStore, accounts, customers};
use crate::domain_db::{Applied, stored_time};
use crate::money::{cents, dollars};
use crate::toolkit::invalid;
use crate::toolkit::read_only;
use crate::toolkit::{HOW_TO_BE_SOMEONE, answer, db_tool, failed, names_person, writes};
use concierge::{ToolContext, ToolError};

/// The customer the run acts for: its user, else [`DEFAULT_CUSTOMER`].
fn customer(conn: &Connection, store: &FinanceStore, cx: &ToolContext) -> Result<Customer, ToolError> {
    let all = customers(conn).map_err(|e| failed(store.db().error(e)))?;
    let found = match cx.user() {
        Some(user) => all.iter().find(|c| names_person(user, &c.id, &c.name, &c.email)),
        None => all.iter().find(|c| c.id == DEFAULT_CUSTOMER),
    };
    found.cloned().ok_or_else(|| {
        ToolError::failed(format!(
            "I do not know a bank customer called '{}', so I cannot answer for them. The customers are {}. {HOW_TO_BE_SOMEONE}",
            cx.user().unwrap_or_default(),
            all.iter()
                .map(|c| format!("{} ({})", c.name, c.email))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

fn account_json(a: &Account) -> Value {
    json!({
        "id": a.id,
        "name": a.name,
        "kind": a.kind,
        "status": a.status,
        "balance": a.balance_cents as f64 / 100.0,
        "balance_text": dollars(a.balance_cents),
    })
}

fn list(accounts: &[&Account]) -> String {
    accounts.iter().map(|a| a.label()).collect::<Vec<_>>().join(", ")
}

/// The account `text` means ("checking", "my savings account", "SAV-1002",
/// "Rainy Day Savings"), for `customer`; an account number of another
/// customer is allowed only when `others` (money may go to anyone's account).
fn find_account<'a>(all: &'a [Account], customer: &Customer, text: &str, others: bool) -> Result<&'a Account, String> {
    let wanted = text.trim().to_lowercase();
    let wanted = wanted
        .trim_start_matches("my ")
        .trim_start_matches("the ")
        .trim_end_matches(" account")
        .trim();
    let own: Vec<&Account> = all.iter().filter(|a| a.customer_id == customer.id).collect();
    if let Some(account) = all.iter().find(|a| a.id.eq_ignore_ascii_case(wanted)) {
        if account.customer_id == customer.id || others {
            return Ok(account);
        }
        return Err(format!(
            "{} is not one of {}'s accounts. Their accounts: {}.",
            account.id,
            customer.name,
            list(&own)
        ));
    }
    if let Some(account) = own.iter().copied().find(|a| a.name.eq_ignore_ascii_case(wanted)) {
        return Ok(account);
    }
    let kind = if wanted.contains("checking") || wanted == "check" {
        Some("checking")
    } else if wanted.contains("saving") {
        Some("savings")
    } else {
        None
    };
    if let Some(kind) = kind {
        let of_kind: Vec<&Account> = own.iter().copied().filter(|a| a.kind == kind).collect();
        let open: Vec<&Account> = of_kind.iter().copied().filter(|a| a.is_open()).collect();
        match (open.as_slice(), of_kind.as_slice()) {
            ([one], _) | ([], [one]) => return Ok(*one),
            ([], []) => {}
            _ => {
                return Err(format!(
                    "{} has more than one {kind} account: {}. Say which by its number.",
                    customer.name,
                    list(&of_kind)
                ));
            }
        }
    }
    Err(format!(
        "I could not find an account '{}' for {}. Their accounts: {}.",
        text.trim(),
        customer.name,
        list(&own)
    ))
}

// ---------------------------------------------------------------- check

/// `check_account_valid`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct CheckAccountArgs {
    /// The account to check: its number (CHK-1001) or kind (checking,
    /// savings); every account of the customer when left out.
    #[serde(default)]
    pub account: Option<String>,
    /// The customer's email address, when the person gave one (the signed-in
    /// customer otherwise).
    #[serde(default)]
    pub email: Option<String>,
}

db_tool!(
    /// Checks that the customer's account is valid: that it exists, belongs
    /// to them and is open (not frozen or closed). With an email, checks the
    /// customer with that email instead of the signed-in one.
    CheckAccountValid, "check_account_valid", FinanceStore, "finance", CheckAccountArgs, read_only(), None,
    |store, args, cx| {
        let conn = store.db().connect().map_err(failed)?;
        let all = accounts(&conn).map_err(|e| failed(store.db().error(e)))?;
        let customer = match args.email.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
            Some(email) => {
                let everyone = customers(&conn).map_err(|e| failed(store.db().error(e)))?;
                match everyone.into_iter().find(|c| c.email.eq_ignore_ascii_case(email)) {
                    Some(c) => c,
                    None => {
                        return Ok(json!({
                            "valid": false,
                            "message": format!("There is no customer with the email {email}, so there is no valid account to use."),
                        }));
                    }
                }
            }
            None => customer(&conn, store, &cx)?,
        };
        let checked: Vec<&Account> = match args.account.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            Some(text) => match find_account(&all, &customer, text, false) {
                Ok(account) => vec![account],
                Err(why) => return Ok(json!({"valid": false, "customer": customer.name, "message": why})),
            },
            None => all.iter().filter(|a| a.customer_id == customer.id).collect(),
        };
        let (open, not): (Vec<&Account>, Vec<&Account>) = checked.iter().copied().partition(|a| a.is_open());
        let message = match (open.as_slice(), not.as_slice()) {
            ([one], []) => format!("{} is valid and open, held by {}.", one.label(), customer.name),
            (_, []) => format!("{}'s accounts are valid and open: {}.", customer.name, list(&open)),
            ([], [one]) => format!("{} is {}, so it cannot be used.", one.label(), one.status),
            _ => format!(
                "{}: {} valid and open; {} cannot be used ({}).",
                customer.name,
                if open.is_empty() { "none".to_string() } else { list(&open) },
                list(&not),
                not.iter().map(|a| format!("{} is {}", a.id, a.status)).collect::<Vec<_>>().join(", ")
            ),
        };
        Ok(json!({
            "valid": not.is_empty(),
            "customer": customer.name,
            "email": customer.email,
            "accounts": checked.iter().map(|a| account_json(a)).collect::<Vec<_>>(),
            "message": message,
        }))
    }
);

// ---------------------------------------------------------------- balances

/// `get_account_balances`' arguments (none: the signed-in customer's accounts).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct BalancesArgs {}

db_tool!(
    /// Shows the balance of each of the customer's accounts (checking, savings).
    GetAccountBalances, "get_account_balances", FinanceStore, "finance", BalancesArgs, read_only(), None,
    |store, args, cx| {
        let conn = store.db().connect().map_err(failed)?;
        let customer = customer(&conn, store, &cx)?;
        let all = accounts(&conn).map_err(|e| failed(store.db().error(e)))?;
        let own: Vec<&Account> = all.iter().filter(|a| a.customer_id == customer.id).collect();
        let lines: Vec<String> = own
            .iter()
            .map(|a| {
                let note = if a.is_open() { String::new() } else { format!(" ({})", a.status) };
                format!("{} {}{}", a.label(), dollars(a.balance_cents), note)
            })
            .collect();
        let total: i64 = own.iter().filter(|a| a.is_open()).map(|a| a.balance_cents).sum();
        Ok(json!({
            "customer": customer.name,
            "accounts": own.iter().map(|a| account_json(a)).collect::<Vec<_>>(),
            "total": total as f64 / 100.0,
            "message": format!("{}'s balances: {}.", customer.name, lines.join("; ")),
        }))
    }
);

// ---------------------------------------------------------------- move money

/// `move_money`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct MoveMoneyArgs {
    /// How many dollars to move (e.g. 500 or 49.99).
    pub amount: f64,
    /// The account the money leaves: checking, savings, or an account number (CHK-1001).
    pub from: String,
    /// The account the money goes to: checking, savings, or an account number.
    pub to: String,
}

db_tool!(
    /// Moves money between accounts (from one of the customer's own
    /// accounts to another, or to an account number). Both balances change
    /// together; a transfer larger than the balance is refused. Asks the
    /// person first.
    MoveMoney, "move_money", FinanceStore, "finance", MoveMoneyArgs, writes(true), Some(MOVE_MONEY_CONFIRM),
    |store, args, cx| {
        let Some(amount) = cents(args.amount) else {
            return Err(invalid(
                "amount",
                "The amount must be more than zero, in dollars and cents (e.g. 500 or 49.99).",
            ));
        };
        let conn = store.db().connect().map_err(failed)?;
        let customer = customer(&conn, store, &cx)?;
        drop(conn);
        let applied = store.db().apply(cx.idempotency_key.as_str(), MoveMoney::NAME, |tx, now| {
            let all = accounts(tx).map_err(|e| store.db().error(e))?;
            let from = match find_account(&all, &customer, &args.from, false) {
                Ok(a) => a,
                Err(why) => return Ok(Applied::Unchanged(why)),
            };
            let to = match find_account(&all, &customer, &args.to, true) {
                Ok(a) => a,
                Err(why) => return Ok(Applied::Unchanged(why)),
            };
            if from.id == to.id {
                return Ok(Applied::Unchanged(format!(
                    "{} is both the source and the destination: name two different accounts.",
                    from.label()
                )));
            }
            for account in [from, to] {
                if !account.is_open() {
                    return Ok(Applied::Unchanged(format!(
                        "{} is {}, so no money can move in or out of it.",
                        account.label(),
                        account.status
                    )));
                }
            }
            if from.balance_cents < amount {
                return Ok(Applied::Unchanged(format!(
                    "{} has {}, less than {}: I did not move anything. Try a smaller amount.",
                    from.label(),
                    dollars(from.balance_cents),
                    dollars(amount)
                )));
            }
            let debit = tx
                .execute(
                    "UPDATE accounts SET balance_cents = balance_cents - ?1 WHERE id = ?2 AND balance_cents >= ?1",
                    params![amount, from.id],
                )
                .map_err(|e| store.db().error(e))?;
            if debit != 1 {
                return Ok(Applied::Unchanged(format!(
                    "{} does not have {}: I did not move anything.",
                    from.label(),
                    dollars(amount)
                )));
            }
            tx.execute(
                "UPDATE accounts SET balance_cents = balance_cents + ?1 WHERE id = ?2",
                params![amount, to.id],
            )
            .map_err(|e| store.db().error(e))?;
            tx.execute(
                "INSERT INTO transfers (from_account, to_account, amount_cents, made_at) VALUES (?1, ?2, ?3, ?4)",
                params![from.id, to.id, amount, stored_time(now)],
            )
            .map_err(|e| store.db().error(e))?;
            let transfer = tx.last_insert_rowid();
            let from_after = from.balance_cents - amount;
            let own_destination = to.customer_id == customer.id;
            let mut message = format!(
                "Moved {} from {} to {}. {} now has {}",
                dollars(amount),
                from.name,
                if own_destination { to.name.clone() } else { format!("account {}", to.id) },
                from.name,
                dollars(from_after)
            );
            if own_destination {
                message.push_str(&format!(" and {} {}", to.name, dollars(to.balance_cents + amount)));
            }
            message.push('.');
            Ok(Applied::Changed(json!({
                "transfer": transfer,
                "amount": amount as f64 / 100.0,
                "from": from.id,
                "to": to.id,
                "from_balance": from_after as f64 / 100.0,
                "message": message,
            })))
        });
        answer(applied)
    }
);

// ---------------------------------------------------------------- loans

/// `submit_loan_application`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct LoanArgs {
    /// How many dollars to borrow (e.g. 15000).
    pub amount: f64,
    /// What the loan is for, in a few words (e.g. "home renovation").
    pub purpose: String,
    /// Over how many months it is repaid (12 to 360; 36 if not said).
    #[serde(default)]
    pub term_months: Option<i64>,
}

db_tool!(
    /// Submits a loan application for the customer: an amount, what it is
    /// for and over how many months. The application is then under review.
    /// Asks the person first.
    SubmitLoanApplication, "submit_loan_application", FinanceStore, "finance", LoanArgs, writes(true), Some(LOAN_CONFIRM),
    |store, args, cx| {
        let Some(amount) = cents(args.amount).filter(|c| (100_000..=100_000_000).contains(c)) else {
            return Err(invalid("amount", "A loan is between $1,000.00 and $1,000,000.00: give an amount in that range."));
        };
        let purpose = args.purpose.trim().trim_end_matches('.').to_string();
        if purpose.is_empty() {
            return Err(invalid("purpose", "Say what the loan is for (e.g. a car, a home renovation)."));
        }
        let term = args.term_months.unwrap_or(36);
        if !(12..=360).contains(&term) {
            return Err(invalid("term_months", "A loan is repaid over 12 to 360 months."));
        }
        let conn = store.db().connect().map_err(failed)?;
        let customer = customer(&conn, store, &cx)?;
        drop(conn);
        let applied = store.db().apply(cx.idempotency_key.as_str(), SubmitLoanApplication::NAME, |tx, now| {
            tx.execute(
                "INSERT INTO loan_applications (customer_id, amount_cents, purpose, term_months, status, submitted_at) \
                 VALUES (?1, ?2, ?3, ?4, 'under_review', ?5)",
                params![customer.id, amount, purpose, term, stored_time(now)],
            )
            .map_err(|e| store.db().error(e))?;
            let id = tx.last_insert_rowid();
            Ok(Applied::Changed(json!({
                "application": id,
                "amount": amount as f64 / 100.0,
                "purpose": purpose,
                "term_months": term,
                "status": "under_review",
                "message": format!(
                    "Submitted loan application #{id} for {} over {term} months ({purpose}) for {}. It is under review; expect an answer within 3 business days.",
                    dollars(amount),
                    customer.name
                ),
            })))
        });
        answer(applied)
    }
);

// ---------------------------------------------------------------- confirmations

/// What `move_money` asks before it runs.
pub const MOVE_MONEY_CONFIRM: &str = "I'll move {amount|money} from {from} to {to}. Proceed?";
/// What `submit_loan_application` asks before it runs.
pub const LOAN_CONFIRM: &str =
    "I'll submit a loan application for {amount|money}[ over {term_months} months] for {purpose}. Proceed?";

#[cfg(test)]
mod tests {
    use super::*;

    fn customer() -> Customer {
        Customer {
            id: "C-1001".into(),
            name: "Jordan Avery".into(),
            email: "j@example.com".into(),
        }
    }

    fn account(id: &str, customer: &str, kind: &str, status: &str) -> Account {
        Account {
            id: id.into(),
            customer_id: customer.into(),
            kind: kind.into(),
            name: format!("{kind} {id}"),
            balance_cents: 100,
            status: status.into(),
        }
    }

    #[test]
    fn accounts_are_found_by_kind_number_and_name() {
        let all = vec![
            account("CHK-1", "C-1001", "checking", "open"),
            account("CHK-9", "C-1001", "checking", "closed"),
            account("SAV-2", "C-1001", "savings", "open"),
            account("CHK-3", "C-2", "checking", "open"),
        ];
        let c = customer();
        assert_eq!(find_account(&all, &c, "checking", false).unwrap().id, "CHK-1");
        assert_eq!(find_account(&all, &c, "my savings account", false).unwrap().id, "SAV-2");
        assert_eq!(find_account(&all, &c, "chk-9", false).unwrap().id, "CHK-9");
        assert_eq!(find_account(&all, &c, "savings SAV-2", false).unwrap().id, "SAV-2");
        assert_eq!(find_account(&all, &c, "CHK-3", true).unwrap().id, "CHK-3");
        let theirs = find_account(&all, &c, "CHK-3", false).unwrap_err();
        assert!(
            theirs.starts_with("CHK-3 is not one of Jordan Avery's accounts."),
            "{theirs}"
        );
        let none = find_account(&all, &c, "brokerage", false).unwrap_err();
        assert!(none.starts_with("I could not find an account 'brokerage'"), "{none}");
    }

    #[test]
    fn confirmations_read_as_sentences() {
        let store = std::sync::Arc::new(FinanceStore::open("unused.db"));
        let spec = concierge::Tool::spec(&MoveMoney::new(std::sync::Arc::clone(&store)));
        assert!(spec.annotations.requires_confirmation);
        let ask = |spec: &concierge::ToolSpec, args: Value| concierge::core::confirmation_message(spec, &args);
        assert_eq!(
            ask(&spec, json!({"amount": 500, "from": "checking", "to": "savings"})),
            "I'll move $500.00 from checking to savings. Proceed?"
        );
        let loan = concierge::Tool::spec(&SubmitLoanApplication::new(store));
        assert_eq!(
            ask(&loan, json!({"amount": "15000", "purpose": "a car"})),
            "I'll submit a loan application for $15,000.00 for a car. Proceed?"
        );
    }
}
