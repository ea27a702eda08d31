//! The orders database: customers, their orders (with items), shipments
//! (with tracking events) and the history of status changes, in one SQLite
//! file created and seeded with fictional data on first use. Status changes
//! are recorded under the caller's idempotency key in the same transaction,
//! so a retried call changes nothing twice.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use chrono::{Days, Local, NaiveDate, NaiveDateTime, NaiveTime};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

/// The environment variable naming the orders database.
pub const DB_ENV: &str = "CONCIERGE_ORDERS_DB";
/// The orders database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "orders.db";
/// The environment variable that pins "today" (`YYYY-MM-DD`): the day the
/// data is seeded relative to and changes are dated with (tests, demos).
pub const TODAY_ENV: &str = "CONCIERGE_ORDERS_TODAY";

const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";
const DATE_FORMAT: &str = "%Y-%m-%d";

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

/// Why the orders database could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error(
        "The orders database at {path} could not be used: {message}. Check that the file is writable, or set {DB_ENV} to another path."
    )]
    Database {
        /// The database's path.
        path: String,
        /// What SQLite said.
        message: String,
    },
    /// A row held something this version cannot read.
    #[error("The orders database at {path} holds a row this version cannot read ({message}).")]
    Corrupt {
        /// The database's path.
        path: String,
        /// What was wrong.
        message: String,
    },
}

/// What a status change came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Applied {
    /// The status changed (or a call with the same key changed it before):
    /// this is the result, recorded under the key.
    Changed(Value),
    /// Nothing changed: this is why (no such order, a move the order cannot
    /// make, the status it already has). Not recorded, so a retry looks again.
    Unchanged(String),
}

/// The orders database: a file path and the clock that dates changes.
#[derive(Clone, Debug)]
pub struct OrderStore {
    path: PathBuf,
    now: Option<NaiveDateTime>,
}

impl OrderStore {
    /// The database at `path` (created and seeded on first use), dated by
    /// the local clock, or by [`TODAY_ENV`] when it is set.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        let pinned = std::env::var(TODAY_ENV)
            .ok()
            .and_then(|day| NaiveDate::parse_from_str(day.trim(), DATE_FORMAT).ok())
            .map(|day| day.and_time(NaiveTime::from_hms_opt(12, 0, 0).unwrap_or(NaiveTime::MIN)));
        Self {
            path: path.into(),
            now: pinned,
        }
    }

    /// The database named by `CONCIERGE_ORDERS_DB`, else `orders.db` in the working directory.
    pub fn from_env() -> Self {
        let path = std::env::var_os(DB_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
        Self::open(path)
    }

    /// Dates everything at `now` instead of the clock (tests).
    pub fn at(mut self, now: NaiveDateTime) -> Self {
        self.now = Some(now);
        self
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The time changes are dated with.
    pub fn now(&self) -> NaiveDateTime {
        self.now.unwrap_or_else(|| Local::now().naive_local())
    }

    fn db_error(&self, e: impl fmt::Display) -> StoreError {
        StoreError::Database {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn corrupt(&self, message: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            path: self.path.display().to_string(),
            message: message.into(),
        }
    }

    /// Opens the file, creating the tables and seeding the data on first use.
    fn connect(&self) -> Result<Connection, StoreError> {
        let mut conn = Connection::open(&self.path).map_err(|e| self.db_error(e))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| self.db_error(e))?;
        conn.execute_batch(SCHEMA).map_err(|e| self.db_error(e))?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_error(e))?;
        let seeded: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'seeded_on'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.db_error(e))?;
        if seeded.is_none() {
            seed(&tx, self.now().date()).map_err(|e| self.db_error(e))?;
        }
        tx.commit().map_err(|e| self.db_error(e))?;
        Ok(conn)
    }

    /// Creates and seeds the database if it is new.
    pub fn ensure(&self) -> Result<(), StoreError> {
        self.connect().map(drop)
    }

    /// A customer by id (`C100`, any case) or email address.
    pub fn customer(&self, id_or_email: &str) -> Result<Option<Customer>, StoreError> {
        let conn = self.connect()?;
        let wanted = id_or_email.trim();
        conn.query_row(
            "SELECT id, name, email, city FROM customers WHERE id = upper(?1) OR lower(email) = lower(?1)",
            [wanted],
            |r| {
                Ok(Customer {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    email: r.get(2)?,
                    city: r.get(3)?,
                })
            },
        )
        .optional()
        .map_err(|e| self.db_error(e))
    }

    /// Every customer, by id.
    pub fn customers(&self) -> Result<Vec<Customer>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare("SELECT id, name, email, city FROM customers ORDER BY id")
            .map_err(|e| self.db_error(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Customer {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    email: r.get(2)?,
                    city: r.get(3)?,
                })
            })
            .map_err(|e| self.db_error(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.db_error(e))
    }

    fn read_orders(
        &self,
        conn: &Connection,
        filter: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<Order>, StoreError> {
        let sql = format!(
            "SELECT o.id, o.customer_id, o.placed_on, o.status, o.total_cents, o.updated_at, s.tracking_number \
             FROM orders o LEFT JOIN shipments s ON s.order_id = o.id {filter} ORDER BY o.placed_on DESC, o.id DESC"
        );
        let mut stmt = conn.prepare(&sql).map_err(|e| self.db_error(e))?;
        let rows = stmt
            .query_map(args, |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            })
            .map_err(|e| self.db_error(e))?;
        let mut orders = Vec::new();
        for row in rows {
            let (id, customer_id, placed_on, status, total_cents, updated_at, tracking_number) =
                row.map_err(|e| self.db_error(e))?;
            orders.push(Order {
                id,
                customer_id,
                placed_on: NaiveDate::parse_from_str(&placed_on, DATE_FORMAT)
                    .map_err(|e| self.corrupt(format!("order {id}'s date {placed_on:?}: {e}")))?,
                status: status.parse().map_err(|e: String| self.corrupt(e))?,
                total_cents,
                items: Vec::new(),
                tracking_number,
                updated_at: NaiveDateTime::parse_from_str(&updated_at, TIME_FORMAT)
                    .map_err(|e| self.corrupt(format!("order {id}'s time {updated_at:?}: {e}")))?,
            });
        }
        let mut stmt = conn
            .prepare("SELECT sku, name, quantity, unit_cents FROM order_items WHERE order_id = ?1 ORDER BY line")
            .map_err(|e| self.db_error(e))?;
        for order in &mut orders {
            let items = stmt
                .query_map([order.id], |r| {
                    Ok(OrderItem {
                        sku: r.get(0)?,
                        name: r.get(1)?,
                        quantity: r.get(2)?,
                        unit_cents: r.get(3)?,
                    })
                })
                .map_err(|e| self.db_error(e))?;
            order.items = items.collect::<Result<Vec<_>, _>>().map_err(|e| self.db_error(e))?;
        }
        Ok(orders)
    }

    /// One order by number.
    pub fn order(&self, id: i64) -> Result<Option<Order>, StoreError> {
        let conn = self.connect()?;
        Ok(self.read_orders(&conn, "WHERE o.id = ?1", &[&id])?.into_iter().next())
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
        let conn = self.connect()?;
        let since = since.map(|d| d.format(DATE_FORMAT).to_string());
        let until = until.map(|d| d.format(DATE_FORMAT).to_string());
        let status = status.map(OrderStatus::as_str);
        self.read_orders(
            &conn,
            "WHERE o.customer_id = ?1 AND (?2 IS NULL OR o.placed_on >= ?2) AND (?3 IS NULL OR o.placed_on <= ?3) \
             AND (?4 IS NULL OR o.status = ?4)",
            &[&customer_id, &since, &until, &status],
        )
    }

    /// A shipment by tracking number (any case).
    pub fn shipment(&self, tracking_number: &str) -> Result<Option<Shipment>, StoreError> {
        let conn = self.connect()?;
        self.read_shipment(&conn, "tracking_number = upper(?1)", &tracking_number.trim())
    }

    /// The shipment of an order, if it shipped.
    pub fn shipment_of(&self, order_id: i64) -> Result<Option<Shipment>, StoreError> {
        let conn = self.connect()?;
        self.read_shipment(&conn, "order_id = ?1", &order_id)
    }

    fn read_shipment(
        &self,
        conn: &Connection,
        filter: &str,
        arg: &dyn rusqlite::ToSql,
    ) -> Result<Option<Shipment>, StoreError> {
        let row = conn
            .query_row(
                &format!(
                    "SELECT tracking_number, order_id, carrier, shipped_on, estimated_delivery, delivered_on \
                     FROM shipments WHERE {filter}"
                ),
                [arg],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, Option<String>>(5)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.db_error(e))?;
        let Some((tracking_number, order_id, carrier, shipped_on, estimated, delivered)) = row else {
            return Ok(None);
        };
        let date = |s: &str| {
            NaiveDate::parse_from_str(s, DATE_FORMAT)
                .map_err(|e| self.corrupt(format!("shipment {tracking_number}'s date {s:?}: {e}")))
        };
        let mut stmt = conn
            .prepare("SELECT at, location, description FROM tracking_events WHERE tracking_number = ?1 ORDER BY at, id")
            .map_err(|e| self.db_error(e))?;
        let rows = stmt
            .query_map([&tracking_number], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
            })
            .map_err(|e| self.db_error(e))?;
        let mut events = Vec::new();
        for row in rows {
            let (at, location, description) = row.map_err(|e| self.db_error(e))?;
            events.push(TrackingEvent {
                at: NaiveDateTime::parse_from_str(&at, TIME_FORMAT)
                    .map_err(|e| self.corrupt(format!("tracking time {at:?}: {e}")))?,
                location,
                description,
            });
        }
        Ok(Some(Shipment {
            order_id,
            carrier,
            shipped_on: date(&shipped_on)?,
            estimated_delivery: date(&estimated)?,
            delivered_on: delivered.as_deref().map(date).transpose()?,
            events,
            tracking_number,
        }))
    }

    /// Every status change of an order, oldest first.
    pub fn status_changes(&self, order_id: i64) -> Result<Vec<StatusChange>, StoreError> {
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare("SELECT from_status, to_status, note, at FROM status_changes WHERE order_id = ?1 ORDER BY id")
            .map_err(|e| self.db_error(e))?;
        let rows = stmt
            .query_map([order_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(|e| self.db_error(e))?;
        let mut changes = Vec::new();
        for row in rows {
            let (from, to, note, at) = row.map_err(|e| self.db_error(e))?;
            changes.push(StatusChange {
                order_id,
                from: from.parse().map_err(|e: String| self.corrupt(e))?,
                to: to.parse().map_err(|e: String| self.corrupt(e))?,
                note,
                at: NaiveDateTime::parse_from_str(&at, TIME_FORMAT)
                    .map_err(|e| self.corrupt(format!("change time {at:?}: {e}")))?,
            });
        }
        Ok(changes)
    }

    /// How many calls changed something (rows in the idempotency table).
    pub fn applied_count(&self) -> Result<i64, StoreError> {
        let conn = self.connect()?;
        conn.query_row("SELECT COUNT(*) FROM applied_calls", [], |r| r.get(0))
            .map_err(|e| self.db_error(e))
    }

    /// Moves order `order_id` to `status`, in one transaction: the order's
    /// status, a row in its history, and (shipping) a new shipment or
    /// (delivering) the shipment's arrival. With `key`, a call whose key was
    /// applied before returns that call's result and changes nothing.
    pub fn update_status(
        &self,
        order_id: i64,
        status: OrderStatus,
        note: Option<&str>,
        key: Option<&str>,
    ) -> Result<Applied, StoreError> {
        let mut conn = self.connect()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db_error(e))?;
        if let Some(key) = key {
            let earlier: Option<String> = tx
                .query_row("SELECT result FROM applied_calls WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .map_err(|e| self.db_error(e))?;
            if let Some(result) = earlier {
                let value = serde_json::from_str(&result).map_err(|e| self.corrupt(e.to_string()))?;
                return Ok(Applied::Changed(value));
            }
        }
        let now = self.now();
        let current: Option<String> = tx
            .query_row("SELECT status FROM orders WHERE id = ?1", [order_id], |r| r.get(0))
            .optional()
            .map_err(|e| self.db_error(e))?;
        let Some(current) = current else {
            return Ok(Applied::Unchanged(format!("There is no order {order_id}.")));
        };
        let current: OrderStatus = current.parse().map_err(|e: String| self.corrupt(e))?;
        if current == status {
            return Ok(Applied::Unchanged(format!(
                "Order {order_id} is already {status}; nothing changed."
            )));
        }
        if !current.next().contains(&status) {
            let next: Vec<&str> = current.next().iter().map(|s| s.as_str()).collect();
            let options = if next.is_empty() {
                "it cannot change any more".to_string()
            } else {
                format!("it can only become {}", next.join(" or "))
            };
            return Ok(Applied::Unchanged(format!(
                "Order {order_id} is {current}, so it cannot become {status}; {options}."
            )));
        }
        let stamp = now.format(TIME_FORMAT).to_string();
        let today = now.date();
        tx.execute(
            "UPDATE orders SET status = ?1, updated_at = ?2 WHERE id = ?3",
            params![status.as_str(), stamp, order_id],
        )
        .map_err(|e| self.db_error(e))?;
        tx.execute(
            "INSERT INTO status_changes (order_id, from_status, to_status, note, at, idempotency_key) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![order_id, current.as_str(), status.as_str(), note, stamp, key],
        )
        .map_err(|e| self.db_error(e))?;
        let mut tracking = None;
        match status {
            OrderStatus::Shipped => {
                let number = tracking_number(order_id);
                tx.execute(
                    "INSERT OR REPLACE INTO shipments (tracking_number, order_id, carrier, shipped_on, estimated_delivery, delivered_on) \
                     VALUES (?1, ?2, ?3, ?4, ?5, NULL)",
                    params![number, order_id, CARRIER, date(today), date(add_days(today, 4))],
                )
                .map_err(|e| self.db_error(e))?;
                tx.execute(
                    "INSERT INTO tracking_events (tracking_number, at, location, description) VALUES (?1, ?2, ?3, ?4)",
                    params![number, stamp, WAREHOUSE, "Label created, waiting for pickup"],
                )
                .map_err(|e| self.db_error(e))?;
                tracking = Some(number);
            }
            OrderStatus::Delivered => {
                tx.execute(
                    "UPDATE shipments SET delivered_on = ?1 WHERE order_id = ?2",
                    params![date(today), order_id],
                )
                .map_err(|e| self.db_error(e))?;
                tx.execute(
                    "INSERT INTO tracking_events (tracking_number, at, location, description) \
                     SELECT tracking_number, ?1, 'Front door', 'Delivered' FROM shipments WHERE order_id = ?2",
                    params![stamp, order_id],
                )
                .map_err(|e| self.db_error(e))?;
            }
            _ => {}
        }
        let mut message = format!("Order {order_id} is now {status} (it was {current}).");
        if let Some(number) = &tracking {
            message.push_str(&format!(" Its tracking number is {number}."));
        }
        let result = serde_json::json!({
            "message": message,
            "order_id": order_id,
            "previous_status": current.as_str(),
            "status": status.as_str(),
            "tracking_number": tracking,
            "changed_at": stamp,
        });
        if let Some(key) = key {
            tx.execute(
                "INSERT INTO applied_calls (key, tool, result, applied_at) VALUES (?1, 'UpdateOrderStatus', ?2, ?3)",
                params![key, result.to_string(), stamp],
            )
            .map_err(|e| self.db_error(e))?;
        }
        tx.commit().map_err(|e| self.db_error(e))?;
        Ok(Applied::Changed(result))
    }
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

const CARRIER: &str = "Parcel Express";
const WAREHOUSE: &str = "Portland, OR warehouse";

fn date(day: NaiveDate) -> String {
    day.format(DATE_FORMAT).to_string()
}

fn add_days(day: NaiveDate, days: i64) -> NaiveDate {
    if days >= 0 {
        day.checked_add_days(Days::new(days.unsigned_abs())).unwrap_or(day)
    } else {
        day.checked_sub_days(Days::new(days.unsigned_abs())).unwrap_or(day)
    }
}

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
CREATE TABLE IF NOT EXISTS applied_calls (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    result TEXT NOT NULL,
    applied_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

/// A seed customer: id, name, email, city.
const CUSTOMERS: &[(&str, &str, &str, &str)] = &[
    ("C100", "Maya Chen", "maya.chen@example.com", "Denver, CO"),
    ("C101", "Tom Okafor", "tom.okafor@example.com", "Austin, TX"),
    ("C102", "Lena Fischer", "lena.fischer@example.com", "Chicago, IL"),
];

/// A seed order: number, customer, placed (days before the seeding day),
/// status, items (sku, name, quantity, unit cents), and its shipment as
/// (shipped, expected, delivered) in days relative to the seeding day.
type SeedOrder = (
    i64,
    &'static str,
    i64,
    OrderStatus,
    &'static [(&'static str, &'static str, i64, i64)],
    Option<(i64, i64, Option<i64>)>,
);

const ORDERS: &[SeedOrder] = &[
    (
        1001,
        "C100",
        5,
        OrderStatus::Shipped,
        &[
            ("SHOE-TR-42", "Trail running shoes", 1, 8900),
            ("SOCK-WL-3", "Wool socks (3 pack)", 1, 1850),
        ],
        Some((-3, 2, None)),
    ),
    (
        1002,
        "C100",
        1,
        OrderStatus::Processing,
        &[("BOTL-INS-1", "Insulated water bottle", 2, 2400)],
        None,
    ),
    (
        1003,
        "C100",
        30,
        OrderStatus::Delivered,
        &[("LAMP-HD-2", "Headlamp", 1, 3500)],
        Some((-28, -25, Some(-25))),
    ),
    (
        1004,
        "C101",
        2,
        OrderStatus::Pending,
        &[("GRND-ESP-1", "Espresso grinder", 1, 14900)],
        None,
    ),
    (
        1005,
        "C101",
        12,
        OrderStatus::Delivered,
        &[
            ("PAN-CI-10", "Cast iron skillet", 1, 4200),
            ("MITT-OV-2", "Oven mitts", 2, 950),
        ],
        Some((-11, -8, Some(-8))),
    ),
    (
        1006,
        "C102",
        4,
        OrderStatus::Shipped,
        &[("HEAD-NC-7", "Noise-cancelling headphones", 1, 19900)],
        Some((-2, 1, None)),
    ),
    (
        1007,
        "C102",
        20,
        OrderStatus::Cancelled,
        &[("LAMP-DK-5", "Desk lamp", 1, 5500)],
        None,
    ),
];

/// Scans of a package in transit: (day offset from shipping, time, location, description).
const IN_TRANSIT: &[(i64, &str, &str, &str)] = &[
    (0, "09:10:00", WAREHOUSE, "Label created, waiting for pickup"),
    (0, "17:40:00", "Portland, OR", "Picked up by Parcel Express"),
    (
        1,
        "06:15:00",
        "Salt Lake City, UT sorting hub",
        "Arrived at sorting hub",
    ),
    (1, "22:05:00", "Salt Lake City, UT sorting hub", "Departed sorting hub"),
];

fn seed(tx: &Transaction<'_>, today: NaiveDate) -> rusqlite::Result<()> {
    for (id, name, email, city) in CUSTOMERS {
        tx.execute(
            "INSERT OR IGNORE INTO customers (id, name, email, city) VALUES (?1, ?2, ?3, ?4)",
            params![id, name, email, city],
        )?;
    }
    for (id, customer, placed_ago, status, items, shipment) in ORDERS {
        let placed = add_days(today, -placed_ago);
        let total: i64 = items.iter().map(|(_, _, quantity, cents)| quantity * cents).sum();
        let updated = shipment
            .map(|(shipped, _, delivered)| add_days(today, delivered.unwrap_or(shipped)))
            .unwrap_or(placed);
        tx.execute(
            "INSERT INTO orders (id, customer_id, placed_on, status, total_cents, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, customer, date(placed), status.as_str(), total, format!("{} 08:00:00", date(updated))],
        )?;
        for (line, (sku, name, quantity, cents)) in items.iter().enumerate() {
            tx.execute(
                "INSERT INTO order_items (order_id, line, sku, name, quantity, unit_cents) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, line as i64 + 1, sku, name, quantity, cents],
            )?;
        }
        let Some((shipped, expected, delivered)) = shipment else {
            continue;
        };
        let number = tracking_number(*id);
        let shipped_on = add_days(today, *shipped);
        tx.execute(
            "INSERT INTO shipments (tracking_number, order_id, carrier, shipped_on, estimated_delivery, delivered_on) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                number,
                id,
                CARRIER,
                date(shipped_on),
                date(add_days(today, *expected)),
                delivered.map(|d| date(add_days(today, d)))
            ],
        )?;
        for (offset, time, location, description) in IN_TRANSIT {
            let day = add_days(shipped_on, *offset);
            if day > today {
                break;
            }
            tx.execute(
                "INSERT INTO tracking_events (tracking_number, at, location, description) VALUES (?1, ?2, ?3, ?4)",
                params![number, format!("{} {time}", date(day)), location, description],
            )?;
        }
        if let Some(delivered) = delivered {
            let (_, city, _, _) = CUSTOMERS
                .iter()
                .find(|c| c.0 == *customer)
                .copied()
                .unwrap_or(CUSTOMERS[0]);
            tx.execute(
                "INSERT INTO tracking_events (tracking_number, at, location, description) VALUES (?1, ?2, ?3, 'Delivered')",
                params![number, format!("{} 14:30:00", date(add_days(today, *delivered))), city],
            )?;
        }
    }
    tx.execute("INSERT INTO meta (key, value) VALUES ('seeded_on', ?1)", [date(today)])?;
    Ok(())
}

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
        assert_eq!(store.applied_count().unwrap(), 1);
        assert!("Canceled".parse::<OrderStatus>().is_ok());
        assert!("lost".parse::<OrderStatus>().unwrap_err().contains("pending"));
    }
}
