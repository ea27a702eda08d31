//! The bank's data: customers, their accounts and balances (in cents),
//! transfers and loan applications, in a SQLite file created and seeded
//! with fictional customers on first use.

use chrono::NaiveDateTime;
use rusqlite::{Connection, Transaction, params};
use serde::Serialize;

use crate::domain_db::{DbSpec, Domain, SeedMark, Store, StoreError, rows};

/// The environment variable naming the finance database.
pub const DB_ENV: &str = "CONCIERGE_FINANCE_DB";
/// The finance database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "finance.db";
/// The customer a run acts for when it names no user: Jordan Avery.
pub const DEFAULT_CUSTOMER: &str = "C-1001";

/// A bank customer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Customer {
    /// Their customer number (`C-1001`).
    pub id: String,
    /// Their full name.
    pub name: String,
    /// Their email address.
    pub email: String,
}

/// One account, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Account {
    /// Its number (`CHK-1001`).
    pub id: String,
    /// Whose it is (a customer number).
    pub customer_id: String,
    /// `checking` or `savings`.
    pub kind: String,
    /// What the customer calls it ("Everyday Checking").
    pub name: String,
    /// Its balance in cents.
    pub balance_cents: i64,
    /// `open`, `frozen` or `closed`.
    pub status: String,
}

impl Account {
    /// Whether money may move in or out of it.
    pub fn is_open(&self) -> bool {
        self.status == "open"
    }

    /// "Everyday Checking (CHK-1001)".
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, self.id)
    }
}

/// A transfer between two accounts, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Transfer {
    /// Its number.
    pub id: i64,
    /// The account the money left.
    pub from_account: String,
    /// The account the money went to.
    pub to_account: String,
    /// How much, in cents.
    pub amount_cents: i64,
    /// When.
    pub made_at: String,
}

/// A loan application, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoanApplication {
    /// Its number.
    pub id: i64,
    /// Who applied.
    pub customer_id: String,
    /// How much, in cents.
    pub amount_cents: i64,
    /// What for.
    pub purpose: String,
    /// Over how many months.
    pub term_months: i64,
    /// `under_review` when submitted.
    pub status: String,
    /// When.
    pub submitted_at: String,
}

/// The bank, as a [`Store`] knows it: its database.
#[derive(Clone, Copy, Debug)]
pub enum Finance {}

impl Domain for Finance {
    const DB: DbSpec = DbSpec::new("finance", DB_ENV, DEFAULT_DB, SCHEMA).seeded(seed, SeedMark::Time);
}

/// The finance database.
pub type FinanceStore = Store<Finance>;

impl FinanceStore {
    /// Every customer, by number.
    pub fn customers(&self) -> Result<Vec<Customer>, StoreError> {
        self.db().read(customers)
    }

    /// Every account, by number.
    pub fn accounts(&self) -> Result<Vec<Account>, StoreError> {
        self.db().read(accounts)
    }

    /// One account by number.
    pub fn account(&self, id: &str) -> Result<Option<Account>, StoreError> {
        Ok(self.accounts()?.into_iter().find(|a| a.id == id))
    }

    /// Every transfer, oldest first.
    pub fn transfers(&self) -> Result<Vec<Transfer>, StoreError> {
        self.db().read(|conn| {
            rows(
                conn,
                "SELECT id, from_account, to_account, amount_cents, made_at FROM transfers ORDER BY id",
                [],
                |r| {
                    Ok(Transfer {
                        id: r.get(0)?,
                        from_account: r.get(1)?,
                        to_account: r.get(2)?,
                        amount_cents: r.get(3)?,
                        made_at: r.get(4)?,
                    })
                },
            )
        })
    }

    /// Every loan application, oldest first.
    pub fn loan_applications(&self) -> Result<Vec<LoanApplication>, StoreError> {
        self.db().read(|conn| {
            rows(
                conn,
                "SELECT id, customer_id, amount_cents, purpose, term_months, status, submitted_at \
                 FROM loan_applications ORDER BY id",
                [],
                |r| {
                    Ok(LoanApplication {
                        id: r.get(0)?,
                        customer_id: r.get(1)?,
                        amount_cents: r.get(2)?,
                        purpose: r.get(3)?,
                        term_months: r.get(4)?,
                        status: r.get(5)?,
                        submitted_at: r.get(6)?,
                    })
                },
            )
        })
    }
}

/// Every customer in `conn`.
pub(crate) fn customers(conn: &Connection) -> rusqlite::Result<Vec<Customer>> {
    rows(conn, "SELECT id, name, email FROM customers ORDER BY id", [], |r| {
        Ok(Customer {
            id: r.get(0)?,
            name: r.get(1)?,
            email: r.get(2)?,
        })
    })
}

/// Every account in `conn` (inside a transaction too).
pub(crate) fn accounts(conn: &Connection) -> rusqlite::Result<Vec<Account>> {
    rows(
        conn,
        "SELECT id, customer_id, kind, name, balance_cents, status FROM accounts ORDER BY id",
        [],
        |r| {
            Ok(Account {
                id: r.get(0)?,
                customer_id: r.get(1)?,
                kind: r.get(2)?,
                name: r.get(3)?,
                balance_cents: r.get(4)?,
                status: r.get(5)?,
            })
        },
    )
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS accounts (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    kind TEXT NOT NULL CHECK (kind IN ('checking', 'savings')),
    name TEXT NOT NULL,
    balance_cents INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'frozen', 'closed'))
);
CREATE TABLE IF NOT EXISTS transfers (
    id INTEGER PRIMARY KEY,
    from_account TEXT NOT NULL REFERENCES accounts(id),
    to_account TEXT NOT NULL REFERENCES accounts(id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    made_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS loan_applications (
    id INTEGER PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    purpose TEXT NOT NULL,
    term_months INTEGER NOT NULL,
    status TEXT NOT NULL,
    submitted_at TEXT NOT NULL
);
";

const CUSTOMERS: &[(&str, &str, &str)] = &[
    ("C-1001", "Jordan Avery", "jordan.avery@example.com"),
    ("C-1002", "Priya Natarajan", "priya.natarajan@example.com"),
    ("C-1003", "Sam Okafor", "sam.okafor@example.com"),
];

/// Account number, customer, kind, name, balance in cents, status.
const ACCOUNTS: &[(&str, &str, &str, &str, i64, &str)] = &[
    ("CHK-1001", "C-1001", "checking", "Everyday Checking", 245_000, "open"),
    ("SAV-1002", "C-1001", "savings", "Rainy Day Savings", 1_020_000, "open"),
    ("CHK-2001", "C-1002", "checking", "Checking", 82_015, "open"),
    ("SAV-2002", "C-1002", "savings", "Savings", 300_000, "open"),
    ("CHK-3001", "C-1003", "checking", "Student Checking", 1_540, "open"),
    ("SAV-3002", "C-1003", "savings", "Savings", 50_000, "frozen"),
    ("CHK-3009", "C-1003", "checking", "Old Checking", 0, "closed"),
];

fn seed(tx: &Transaction<'_>, _now: NaiveDateTime) -> rusqlite::Result<()> {
    for (id, name, email) in CUSTOMERS {
        tx.execute(
            "INSERT INTO customers (id, name, email) VALUES (?1, ?2, ?3)",
            params![id, name, email],
        )?;
    }
    for (id, customer, kind, name, balance, status) in ACCOUNTS {
        tx.execute(
            "INSERT INTO accounts (id, customer_id, kind, name, balance_cents, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, customer, kind, name, balance, status],
        )?;
    }
    Ok(())
}
