//! The orders database: customers, their orders (with items), shipments
//! (with tracking events) and the history of status changes, in one SQLite
//! file created and seeded with fictional data on first use (see
//! `seed.rs`). It is a [`DomainDb`] like the demo's domains: the same file
//! handling, clock and idempotent apply, so a retried status change changes
//! nothing twice.
//!
//! [`OrderStore`] holds its [`DomainDb`] itself rather than being a
//! `concierge_demo::domain_db::Store<...>`: a crate cannot add methods to a
//! type of another crate.

mod seed;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use chrono::{NaiveDate, NaiveDateTime};
use concierge_demo::domain_db::{
    DbSpec, DomainDb, SeedMark, add_days, read_day, read_time, rows, stored_day, stored_time,
};
use rusqlite::{OptionalExtension, Row, ToSql, params};
use serde::Serialize;

pub use concierge_demo::domain_db::{Applied, StoreError};

/// The environment variable naming the orders database.
pub const DB_ENV: &str = "CONCIERGE_ORDERS_DB";
/// The orders database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "orders.db";
/// The environment variable that pins "today" (`YYYY-MM-DD`): the day the
/// data is seeded relative to and changes are dated with (tests, demos).
pub const TODAY_ENV: &str = "CONCIERGE_ORDERS_TODAY";

/// Where an order stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    /// Placed, not yet being prepared.
    Pending,
    /// Being picked and packed.
    Processing,
    /// Handed to the carrier.
    Shipped,
    /// Delivered to the customer.
    Delivered,
    /// Cancelled before it shipped.
    Cancelled,
    /// Sent back after delivery.
    Returned,
}

impl OrderStatus {
    /// Every status, in the order an order moves through them.
    pub const ALL: [OrderStatus; 6] = [
        OrderStatus::Pending,
        OrderStatus::Processing,
        OrderStatus::Shipped,
        OrderStatus::Delivered,
        OrderStatus::Cancelled,
        OrderStatus::Returned,
    ];

    /// The name stored and accepted (`pending`, `shipped`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Pending => "pending",
            OrderStatus::Processing => "processing",
            OrderStatus::Shipped => "shipped",
            OrderStatus::Delivered => "delivered",
            OrderStatus::Cancelled => "cancelled",
            OrderStatus::Returned => "returned",
        }
    }

    /// The statuses an order in this one may move to.
    pub fn next(self) -> &'static [OrderStatus] {
        match self {
            OrderStatus::Pending => &[OrderStatus::Processing, OrderStatus::Cancelled],
            OrderStatus::Processing => &[OrderStatus::Shipped, OrderStatus::Cancelled],
            OrderStatus::Shipped => &[OrderStatus::Delivered],
            OrderStatus::Delivered => &[OrderStatus::Returned],
            OrderStatus::Cancelled | OrderStatus::Returned => &[],
        }
    }
}

impl fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OrderStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let wanted = s.trim().to_ascii_lowercase();
        let wanted = if wanted == "canceled" {
            "cancelled".to_string()
        } else {
            wanted
        };
        OrderStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = OrderStatus::ALL.iter().map(|s| s.as_str()).collect();
                format!("'{s}' is not an order status; use one of {}", names.join(", "))
            })
    }
}

/// A customer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Customer {
    /// Their id (`C100`).
    pub id: String,
    /// Their name.
    pub name: String,
    /// Their email address.
    pub email: String,
    /// Where they live.
    pub city: String,
}

/// One line of an order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderItem {
    /// The product's code.
    pub sku: String,
    /// The product's name.
    pub name: String,
    /// How many.
    pub quantity: i64,
    /// The price of one, in cents.
    pub unit_cents: i64,
}

/// An order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Order {
    /// Its number (`1001`).
    pub id: i64,
    /// The customer who placed it.
    pub customer_id: String,
    /// The day it was placed.
    pub placed_on: NaiveDate,
    /// Where it stands.
    pub status: OrderStatus,
    /// What it costs in all, in cents.
    pub total_cents: i64,
    /// What was ordered.
    pub items: Vec<OrderItem>,
    /// Its shipment's tracking number, once shipped.
    pub tracking_number: Option<String>,
    /// When its status last changed.
    pub updated_at: NaiveDateTime,
}

impl Order {
    /// The total for people: `$107.50`.
    pub fn total(&self) -> String {
        money(self.total_cents)
    }

    /// One line for people: `Order 1001 placed 2025-03-01: shipped, 2 items, $107.50`.
    pub fn line(&self) -> String {
        let count: i64 = self.items.iter().map(|i| i.quantity).sum();
        let items = if count == 1 {
            "1 item".to_string()
        } else {
            format!("{count} items")
        };
        format!(
            "Order {} placed {}: {}, {items}, {}",
            self.id,
            self.placed_on,
            self.status,
            self.total()
        )
    }
}

/// One scan of a package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TrackingEvent {
    /// When.
    pub at: NaiveDateTime,
    /// Where.
    pub location: String,
    /// What happened.
    pub description: String,
}

/// A package on its way (or arrived).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shipment {
    /// The carrier's tracking number.
    pub tracking_number: String,
    /// The order it carries.
    pub order_id: i64,
    /// The carrier.
    pub carrier: String,
    /// The day it left.
    pub shipped_on: NaiveDate,
    /// The day it is expected.
    pub estimated_delivery: NaiveDate,
    /// The day it arrived, if it has.
    pub delivered_on: Option<NaiveDate>,
    /// Its scans, oldest first.
    pub events: Vec<TrackingEvent>,
}

/// One change of an order's status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatusChange {
    /// The order.
    pub order_id: i64,
    /// The status before.
    pub from: OrderStatus,
    /// The status after.
    pub to: OrderStatus,
    /// Why, if the caller said.
    pub note: Option<String>,
    /// When.
    pub at: NaiveDateTime,
}

/// What the orders database is.
const DB: DbSpec = DbSpec::new("orders", DB_ENV, DEFAULT_DB, SCHEMA)
    .seeded(seed::seed, SeedMark::Day)
    .today_from(TODAY_ENV);

/// The orders database: its file, its clock and its reads and changes.
#[derive(Clone, Debug)]
pub struct OrderStore {
    db: DomainDb,
}

impl OrderStore {
    /// The database at `path` (created and seeded on first use), dated by
    /// the local clock, or by [`TODAY_ENV`] when it is set.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        Self {
            db: DomainDb::open(DB, path),
        }
    }

    /// The database named by `CONCIERGE_ORDERS_DB`, else `orders.db` in the working directory.
    pub fn from_env() -> Self {
        Self {
            db: DomainDb::from_env(DB),
        }
    }

    /// Dates everything at `now` instead of the clock (tests).
    pub fn at(self, now: NaiveDateTime) -> Self {
        Self { db: self.db.at(now) }
    }

    /// The file: its path, its clock and its changes applied once.
    pub fn db(&self) -> &DomainDb {
        &self.db
    }

    /// Creates and seeds the database if it is new.
    pub fn ensure(&self) -> Result<(), StoreError> {
        self.db.connect().map(drop)
    }

    /// A customer by id (`C100`, any case) or email address.
    pub fn customer(&self, id_or_email: &str) -> Result<Option<Customer>, StoreError> {
        self.db.read(|conn| {
            conn.query_row(
                "SELECT id, name, email, city FROM customers WHERE id = upper(?1) OR lower(email) = lower(?1)",
                [id_or_email.trim()],
                customer,
            )
            .optional()
        })
    }

    /// Every customer, by id.
    pub fn customers(&self) -> Result<Vec<Customer>, StoreError> {
        self.db.read(|conn| {
            rows(
                conn,
                "SELECT id, name, email, city FROM customers ORDER BY id",
                [],
                customer,
            )
        })
    }

    /// The orders `filter` (a `WHERE` clause over `o`, with `args`) selects,
    /// newest first, with their items.
    fn read_orders(&self, filter: &str, args: &[&dyn ToSql]) -> Result<Vec<Order>, StoreError> {
        let sql = format!(
            "SELECT o.id, o.customer_id, o.placed_on, o.status, o.total_cents, o.updated_at, s.tracking_number \
             FROM orders o LEFT JOIN shipments s ON s.order_id = o.id {filter} ORDER BY o.placed_on DESC, o.id DESC"
        );
        let mut orders = self.db.select(
            &sql,
            args,
            |r| {
                let texts: (String, String, String) = (r.get(2)?, r.get(3)?, r.get(5)?);
                Ok((r.get(0)?, r.get(1)?, texts, r.get(4)?, r.get(6)?))
            },
            |(id, customer_id, (placed_on, status, updated_at), total_cents, tracking_number)| {
                Ok(Order {
                    id,
                    customer_id,
                    placed_on: read_day(&placed_on).map_err(|e| format!("order {id}'s {e}"))?,
                    status: status.parse()?,
                    total_cents,
                    items: Vec::new(),
                    tracking_number,
                    updated_at: read_time(&updated_at).map_err(|e| format!("order {id}'s {e}"))?,
                })
            },
        )?;
        self.db.read(|conn| {
            for order in &mut orders {
                order.items = rows(
                    conn,
                    "SELECT sku, name, quantity, unit_cents FROM order_items WHERE order_id = ?1 ORDER BY line",
                    [order.id],
                    |r| {
                        Ok(OrderItem {
                            sku: r.get(0)?,
                            name: r.get(1)?,
                            quantity: r.get(2)?,
                            unit_cents: r.get(3)?,
                        })
                    },
                )?;
            }
            Ok(orders)
        })
    }

    /// One order by number.
    pub fn order(&self, id: i64) -> Result<Option<Order>, StoreError> {
        Ok(self.read_orders("WHERE o.id = ?1", &[&id])?.into_iter().next())
    }

    /// A customer's orders, newest first, placed between `since` and `until`
    /// (inclusive, either open) and in `status` when given.
    pub fn customer_orders(
        &self,
        customer_id: &str,
        since: Option<NaiveDate>,
        until: Option<NaiveDate>,
        status: Option<OrderStatus>,
    ) -> Result<Vec<Order>, StoreError> {
        let since = since.map(stored_day);
        let until = until.map(stored_day);
        let status = status.map(OrderStatus::as_str);
        self.read_orders(
            "WHERE o.customer_id = ?1 AND (?2 IS NULL OR o.placed_on >= ?2) AND (?3 IS NULL OR o.placed_on <= ?3) \
             AND (?4 IS NULL OR o.status = ?4)",
            &[&customer_id, &since, &until, &status],
        )
    }

    /// A shipment by tracking number (any case).
    pub fn shipment(&self, tracking_number: &str) -> Result<Option<Shipment>, StoreError> {
        self.read_shipment("tracking_number = upper(?1)", &tracking_number.trim())
    }

    /// The shipment of an order, if it shipped.
    pub fn shipment_of(&self, order_id: i64) -> Result<Option<Shipment>, StoreError> {
        self.read_shipment("order_id = ?1", &order_id)
    }

    /// The shipment `filter` (a `WHERE` clause, with `arg`) selects, with its scans.
    fn read_shipment(&self, filter: &str, arg: &dyn ToSql) -> Result<Option<Shipment>, StoreError> {
        let found = self.db.select(
            &format!(
                "SELECT tracking_number, order_id, carrier, shipped_on, estimated_delivery, delivered_on \
                 FROM shipments WHERE {filter}"
            ),
            [arg],
            |r| {
                let days: (String, String, Option<String>) = (r.get(3)?, r.get(4)?, r.get(5)?);
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, days))
            },
            |(tracking_number, order_id, carrier, (shipped_on, estimated, delivered)): (String, _, _, _)| {
                let date = |s: &str| read_day(s).map_err(|e| format!("shipment {tracking_number}'s {e}"));
                Ok(Shipment {
                    order_id,
                    carrier,
                    shipped_on: date(&shipped_on)?,
                    estimated_delivery: date(&estimated)?,
                    delivered_on: delivered.as_deref().map(date).transpose()?,
                    events: Vec::new(),
                    tracking_number,
                })
            },
        )?;
        let Some(mut shipment) = found.into_iter().next() else {
            return Ok(None);
        };
        shipment.events = self.db.select(
            "SELECT at, location, description FROM tracking_events WHERE tracking_number = ?1 ORDER BY at, id",
            [&shipment.tracking_number],
            |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)),
            |(at, location, description)| {
                Ok(TrackingEvent {
                    at: read_time(&at).map_err(|e| format!("tracking {e}"))?,
                    location,
                    description,
                })
            },
        )?;
        Ok(Some(shipment))
    }

    /// Every status change of an order, oldest first.
    pub fn status_changes(&self, order_id: i64) -> Result<Vec<StatusChange>, StoreError> {
        self.db.select(
            "SELECT from_status, to_status, note, at FROM status_changes WHERE order_id = ?1 ORDER BY id",
            [order_id],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get(2)?,
                    r.get::<_, String>(3)?,
                ))
            },
            |(from, to, note, at)| {
                Ok(StatusChange {
                    order_id,
                    from: from.parse()?,
                    to: to.parse()?,
                    note,
                    at: read_time(&at).map_err(|e| format!("change {e}"))?,
                })
            },
        )
    }

    /// Moves order `order_id` to `status`, in one transaction: the order's
    /// status, a row in its history, and (shipping) a new shipment or
    /// (delivering) the shipment's arrival. With `key`, a call whose key was
    /// applied before returns that call's result and changes nothing (see
    /// [`DomainDb::apply`]).
    pub fn update_status(
        &self,
        order_id: i64,
        status: OrderStatus,
        note: Option<&str>,
        key: Option<&str>,
    ) -> Result<Applied, StoreError> {
        self.db.apply(key, "UpdateOrderStatus", |tx, now| {
            let error = |e: rusqlite::Error| self.db.error(e);
            let current: Option<String> = tx
                .query_row("SELECT status FROM orders WHERE id = ?1", [order_id], |r| r.get(0))
                .optional()
                .map_err(error)?;
            let Some(current) = current else {
                return Ok(Applied::Unchanged(format!("There is no order {order_id}.")));
            };
            let current: OrderStatus = current.parse().map_err(|e: String| self.db.corrupt(e))?;
            if let Some(why) = refusal(order_id, current, status) {
                return Ok(Applied::Unchanged(why));
            }
            let stamp = stored_time(now);
            let today = now.date();
            tx.execute(
                "UPDATE orders SET status = ?1, updated_at = ?2 WHERE id = ?3",
                params![status.as_str(), stamp, order_id],
            )
            .map_err(error)?;
            tx.execute(
                "INSERT INTO status_changes (order_id, from_status, to_status, note, at, idempotency_key) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![order_id, current.as_str(), status.as_str(), note, stamp, key],
            )
            .map_err(error)?;
            let mut tracking = None;
            match status {
                OrderStatus::Shipped => {
                    let number = tracking_number(order_id);
                    tx.execute(
                        "INSERT OR REPLACE INTO shipments (tracking_number, order_id, carrier, shipped_on, estimated_delivery, delivered_on) \
                         VALUES (?1, ?2, ?3, ?4, ?5, NULL)",
                        params![number, order_id, CARRIER, stored_day(today), stored_day(add_days(today, 4))],
                    )
                    .map_err(error)?;
                    tx.execute(
                        "INSERT INTO tracking_events (tracking_number, at, location, description) VALUES (?1, ?2, ?3, ?4)",
                        params![number, stamp, WAREHOUSE, "Label created, waiting for pickup"],
                    )
                    .map_err(error)?;
                    tracking = Some(number);
                }
                OrderStatus::Delivered => {
                    tx.execute(
                        "UPDATE shipments SET delivered_on = ?1 WHERE order_id = ?2",
                        params![stored_day(today), order_id],
                    )
                    .map_err(error)?;
                    tx.execute(
                        "INSERT INTO tracking_events (tracking_number, at, location, description) \
                         SELECT tracking_number, ?1, 'Front door', 'Delivered' FROM shipments WHERE order_id = ?2",
                        params![stamp, order_id],
                    )
                    .map_err(error)?;
                }
                _ => {}
            }
            let mut message = format!("Order {order_id} is now {status} (it was {current}).");
            if let Some(number) = &tracking {
                message.push_str(&format!(" Its tracking number is {number}."));
            }
            Ok(Applied::Changed(serde_json::json!({
                "message": message,
                "order_id": order_id,
                "previous_status": current.as_str(),
                "status": status.as_str(),
                "tracking_number": tracking,
                "changed_at": stamp,
            })))
        })
    }
}

/// Why an order in `current` cannot become `status`, if it cannot.
fn refusal(order_id: i64, current: OrderStatus, status: OrderStatus) -> Option<String> {
    if current == status {
        return Some(format!("Order {order_id} is already {status}; nothing changed."));
    }
    if current.next().contains(&status) {
        return None;
    }
    let next: Vec<&str> = current.next().iter().map(|s| s.as_str()).collect();
    let options = if next.is_empty() {
        "it cannot change any more".to_string()
    } else {
        format!("it can only become {}", next.join(" or "))
    };
    Some(format!(
        "Order {order_id} is {current}, so it cannot become {status}; {options}."
    ))
}

/// A customer row: id, name, email, city.
fn customer(r: &Row<'_>) -> rusqlite::Result<Customer> {
    Ok(Customer {
        id: r.get(0)?,
        name: r.get(1)?,
        email: r.get(2)?,
        city: r.get(3)?,
    })
}

/// Cents for people: `$107.50`.
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.abs();
    format!("{sign}${}.{:02}", cents / 100, cents % 100)
}

/// The tracking number the carrier gives an order's package.
pub fn tracking_number(order_id: i64) -> String {
    format!("PX{}US", 40_000 + order_id)
}

/// The carrier every package goes with.
pub(crate) const CARRIER: &str = "Parcel Express";
/// Where every package leaves from.
pub(crate) const WAREHOUSE: &str = "Portland, OR warehouse";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    city TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers (id),
    placed_on TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'shipped', 'delivered', 'cancelled', 'returned')),
    total_cents INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS order_items (
    order_id INTEGER NOT NULL REFERENCES orders (id),
    line INTEGER NOT NULL,
    sku TEXT NOT NULL,
    name TEXT NOT NULL,
    quantity INTEGER NOT NULL,
    unit_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, line)
);
CREATE TABLE IF NOT EXISTS shipments (
    tracking_number TEXT PRIMARY KEY,
    order_id INTEGER NOT NULL UNIQUE REFERENCES orders (id),
    carrier TEXT NOT NULL,
    shipped_on TEXT NOT NULL,
    estimated_delivery TEXT NOT NULL,
    delivered_on TEXT
);
CREATE TABLE IF NOT EXISTS tracking_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tracking_number TEXT NOT NULL REFERENCES shipments (tracking_number),
    at TEXT NOT NULL,
    location TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS status_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id INTEGER NOT NULL REFERENCES orders (id),
    from_status TEXT NOT NULL,
    to_status TEXT NOT NULL,
    note TEXT,
    at TEXT NOT NULL,
    idempotency_key TEXT
);
";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn store() -> (tempfile::TempDir, OrderStore) {
        let dir = tempfile::tempdir().unwrap();
        let day = NaiveDate::from_ymd_opt(2025, 3, 5).unwrap();
        let store = OrderStore::open(dir.path().join("orders.db")).at(day.and_hms_opt(10, 0, 0).unwrap());
        (dir, store)
    }

    #[test]
    fn seeded_once_with_fictional_orders() {
        let (_dir, store) = store();
        let order = store.order(1001).unwrap().unwrap();
        assert_eq!(order.line(), "Order 1001 placed 2025-02-28: shipped, 2 items, $107.50");
        assert_eq!(order.tracking_number.as_deref(), Some("PX41001US"));
        let shipment = store.shipment("px41001us").unwrap().unwrap();
        assert_eq!(shipment.events.len(), 4);
        assert_eq!(
            shipment.estimated_delivery,
            NaiveDate::from_ymd_opt(2025, 3, 7).unwrap()
        );
        assert_eq!(store.customer("MAYA.CHEN@example.com").unwrap().unwrap().id, "C100");
        assert_eq!(store.customer_orders("C100", None, None, None).unwrap().len(), 3);
        store.ensure().unwrap();
        assert_eq!(store.customers().unwrap().len(), 3, "seeded once");
    }

    #[test]
    fn a_status_change_is_applied_once_per_key_and_checked() {
        let (_dir, store) = store();
        let first = store
            .update_status(1002, OrderStatus::Shipped, None, Some("k1"))
            .unwrap();
        let again = store
            .update_status(1002, OrderStatus::Shipped, None, Some("k1"))
            .unwrap();
        assert_eq!(first, again);
        assert_eq!(store.status_changes(1002).unwrap().len(), 1);
        assert_eq!(store.shipment_of(1002).unwrap().unwrap().tracking_number, "PX41002US");
        let refused = store
            .update_status(1007, OrderStatus::Shipped, None, Some("k2"))
            .unwrap();
        assert_eq!(
            refused,
            Applied::Unchanged(
                "Order 1007 is cancelled, so it cannot become shipped; it cannot change any more.".into()
            )
        );
        assert_eq!(store.db().applied_count().unwrap(), 1);
        assert!("Canceled".parse::<OrderStatus>().is_ok());
        assert!("lost".parse::<OrderStatus>().unwrap_err().contains("pending"));
    }
}
