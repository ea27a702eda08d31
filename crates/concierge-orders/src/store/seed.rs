//! The orders server's fictional data: three customers, their orders in
//! every status, and the shipments' scans, dated relative to the day a new
//! file is seeded.

use chrono::NaiveDateTime;
use concierge_demo::domain_db::{add_days, stored_day};
use rusqlite::{Transaction, params};

use super::{CARRIER, OrderStatus, WAREHOUSE, tracking_number};

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

/// Fills a new file: the customers, their orders and the shipments' scans,
/// dated relative to the seeding day.
pub(crate) fn seed(tx: &Transaction<'_>, now: NaiveDateTime) -> rusqlite::Result<()> {
    let today = now.date();
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
            params![id, customer, stored_day(placed), status.as_str(), total, format!("{} 08:00:00", stored_day(updated))],
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
                stored_day(shipped_on),
                stored_day(add_days(today, *expected)),
                delivered.map(|d| stored_day(add_days(today, d)))
            ],
        )?;
        for (offset, time, location, description) in IN_TRANSIT {
            let day = add_days(shipped_on, *offset);
            if day > today {
                break;
            }
            tx.execute(
                "INSERT INTO tracking_events (tracking_number, at, location, description) VALUES (?1, ?2, ?3, ?4)",
                params![number, format!("{} {time}", stored_day(day)), location, description],
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
                params![number, format!("{} 14:30:00", stored_day(add_days(today, *delivered))), city],
            )?;
        }
    }
    Ok(())
}
