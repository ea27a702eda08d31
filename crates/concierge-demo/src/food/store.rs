//! The food ordering data: a restaurant's menu, carts (one per owner: the
//! run's user, else its session) and the orders placed, in a SQLite file
//! created and seeded with a fictional menu on first use.

use chrono::NaiveDateTime;
use rusqlite::{Connection, Row, Transaction, params};
use serde::Serialize;

use crate::domain_db::{DbSpec, Domain, SeedMark, Store, StoreError, rows};

/// The environment variable naming the food database.
pub const DB_ENV: &str = "CONCIERGE_FOOD_DB";
/// The food database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "food.db";
/// The restaurant the menu is from.
pub const RESTAURANT: &str = "Trattoria Demo";

/// One dish or drink on the menu.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MenuItem {
    /// Its number on the menu.
    pub id: i64,
    /// Its name ("Margherita pizza").
    pub name: String,
    /// Its section ("pizza", "drinks").
    pub category: String,
    /// A line about it.
    pub description: String,
    /// Its price in cents.
    pub price_cents: i64,
    /// Whether it can be ordered today.
    pub available: bool,
}

/// One line of a cart: an item and how many.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CartLine {
    /// The menu item.
    pub item_id: i64,
    /// Its name.
    pub name: String,
    /// How many.
    pub quantity: i64,
    /// Its price in cents (each).
    pub price_cents: i64,
}

impl CartLine {
    /// "2 × Margherita pizza".
    pub fn label(&self) -> String {
        format!("{} × {}", self.quantity, self.name)
    }
}

/// An order, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Order {
    /// Its number.
    pub id: i64,
    /// Whose cart it was (`user:…` or `session:…`).
    pub owner: String,
    /// What it cost, in cents.
    pub total_cents: i64,
    /// `placed`.
    pub status: String,
    /// When.
    pub placed_at: String,
    /// What was in it.
    pub lines: Vec<CartLine>,
}

/// The restaurant's menu, carts and orders, as a [`Store`] knows it: its database.
#[derive(Clone, Copy, Debug)]
pub enum Food {}

impl Domain for Food {
    const DB: DbSpec = DbSpec::new("food", DB_ENV, DEFAULT_DB, SCHEMA).seeded(seed, SeedMark::Time);
}

/// The food database.
pub type FoodStore = Store<Food>;

impl FoodStore {
    /// The whole menu, by number.
    pub fn menu(&self) -> Result<Vec<MenuItem>, StoreError> {
        self.db().read(menu)
    }

    /// What `owner`'s cart holds, in the order it was added.
    pub fn cart(&self, owner: &str) -> Result<Vec<CartLine>, StoreError> {
        self.db().read(|conn| cart(conn, owner))
    }

    /// Every order, oldest first, with its lines.
    pub fn orders(&self) -> Result<Vec<Order>, StoreError> {
        self.db().read(orders)
    }
}

/// The menu in `conn`.
pub(crate) fn menu(conn: &Connection) -> rusqlite::Result<Vec<MenuItem>> {
    rows(
        conn,
        "SELECT id, name, category, description, price_cents, available FROM menu_items ORDER BY id",
        [],
        |r| {
            Ok(MenuItem {
                id: r.get(0)?,
                name: r.get(1)?,
                category: r.get(2)?,
                description: r.get(3)?,
                price_cents: r.get(4)?,
                available: r.get(5)?,
            })
        },
    )
}

/// `owner`'s cart in `conn` (inside a transaction too).
pub(crate) fn cart(conn: &Connection, owner: &str) -> rusqlite::Result<Vec<CartLine>> {
    rows(
        conn,
        "SELECT c.item_id, m.name, c.quantity, m.price_cents FROM cart_items c \
         JOIN menu_items m ON m.id = c.item_id WHERE c.owner = ?1 ORDER BY c.added, c.item_id",
        [owner],
        cart_line,
    )
}

/// A cart or order line of `item_id, name, quantity, price_cents`.
fn cart_line(r: &Row<'_>) -> rusqlite::Result<CartLine> {
    Ok(CartLine {
        item_id: r.get(0)?,
        name: r.get(1)?,
        quantity: r.get(2)?,
        price_cents: r.get(3)?,
    })
}

fn orders(conn: &Connection) -> rusqlite::Result<Vec<Order>> {
    let mut orders = rows(
        conn,
        "SELECT id, owner, total_cents, status, placed_at FROM orders ORDER BY id",
        [],
        |r| {
            Ok(Order {
                id: r.get(0)?,
                owner: r.get(1)?,
                total_cents: r.get(2)?,
                status: r.get(3)?,
                placed_at: r.get(4)?,
                lines: Vec::new(),
            })
        },
    )?;
    for order in &mut orders {
        order.lines = rows(
            conn,
            "SELECT item_id, name, quantity, price_cents FROM order_items WHERE order_id = ?1 ORDER BY rowid",
            [order.id],
            cart_line,
        )?;
    }
    Ok(orders)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS menu_items (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    description TEXT NOT NULL,
    price_cents INTEGER NOT NULL,
    available INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS cart_items (
    owner TEXT NOT NULL,
    item_id INTEGER NOT NULL REFERENCES menu_items(id),
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    added INTEGER NOT NULL,
    PRIMARY KEY (owner, item_id)
);
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    total_cents INTEGER NOT NULL,
    status TEXT NOT NULL,
    placed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS order_items (
    order_id INTEGER NOT NULL REFERENCES orders(id),
    item_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    quantity INTEGER NOT NULL,
    price_cents INTEGER NOT NULL
);
";

/// Name, section, description, price in cents, available today.
const MENU: &[(&str, &str, &str, i64, bool)] = &[
    (
        "Margherita pizza",
        "pizza",
        "Tomato, mozzarella and basil.",
        1_250,
        true,
    ),
    (
        "Pepperoni pizza",
        "pizza",
        "Tomato, mozzarella and spicy pepperoni.",
        1_400,
        true,
    ),
    (
        "Spaghetti carbonara",
        "pasta",
        "Egg, pecorino, guanciale and black pepper.",
        1_375,
        true,
    ),
    (
        "Mushroom risotto",
        "pasta",
        "Arborio rice with porcini and parmesan.",
        1_300,
        false,
    ),
    (
        "Caesar salad",
        "salads",
        "Romaine, croutons, parmesan and Caesar dressing.",
        925,
        true,
    ),
    (
        "Garlic bread",
        "sides",
        "Toasted ciabatta with garlic butter.",
        550,
        true,
    ),
    (
        "Tiramisu",
        "desserts",
        "Espresso-soaked ladyfingers and mascarpone.",
        650,
        true,
    ),
    ("Lemonade", "drinks", "Freshly squeezed, lightly sweet.", 325, true),
];

fn seed(tx: &Transaction<'_>, _now: NaiveDateTime) -> rusqlite::Result<()> {
    for (name, category, description, price, available) in MENU {
        tx.execute(
            "INSERT INTO menu_items (name, category, description, price_cents, available) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![name, category, description, price, available],
        )?;
    }
    Ok(())
}
