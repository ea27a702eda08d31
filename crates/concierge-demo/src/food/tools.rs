//! The food ordering tools (the assistant's food goal: browse the menu, add to
//! the cart, show it, check out). Every result is a JSON object with a
//! `message` (a sentence for people, which the rules' answers show) and the
//! data behind it.
//!
//! The cart belongs to the run's user when it names one (`--user`), else to
//! the session, so one conversation fills one cart.

use concierge::fuzzy::{self, Candidate, Match, Thresholds};
use concierge::{Choice, Reply, ToolContext, ToolError};
use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::store::{CartLine, FoodStore, MenuItem, RESTAURANT, cart, menu};
use crate::domain_db::{Applied, stored_time};
use crate::money::{cents, dollars};
use crate::toolkit::invalid;
use crate::toolkit::read_only;
use crate::toolkit::{answer, db_tool, failed, writes};

/// Whose cart the call works on: `user:<user>` when the run names a user,
/// else `session:<session id>`.
pub fn cart_owner(cx: &ToolContext) -> String {
    match cx.user().map(str::trim).filter(|u| !u.is_empty()) {
        Some(user) => format!("user:{}", user.to_lowercase()),
        None => format!("session:{}", cx.session_id),
    }
}

fn total(lines: &[CartLine]) -> i64 {
    lines.iter().map(|l| l.price_cents * l.quantity).sum()
}

fn summary(lines: &[CartLine]) -> String {
    lines.iter().map(CartLine::label).collect::<Vec<_>>().join(", ")
}

fn item_json(item: &MenuItem) -> Value {
    json!({
        "id": item.id,
        "name": item.name,
        "category": item.category,
        "description": item.description,
        "price": item.price_cents as f64 / 100.0,
        "available": item.available,
    })
}

/// The menu item `text` means: its number (`3`, `#3`) or its name, whole or
/// in part; several close names become a choice, none a sentence with the
/// closest ones.
fn find_item<'m>(items: &'m [MenuItem], text: &str) -> Result<&'m MenuItem, Result<Value, ToolError>> {
    let t = text.trim();
    if let Ok(n) = t.trim_start_matches('#').trim().parse::<i64>() {
        return items.iter().find(|i| i.id == n).ok_or_else(|| {
            Err(ToolError::failed(format!(
                "There is no item #{n} on the menu. Say \"show the food menu\" to see it."
            )))
        });
    }
    let candidates = items.iter().map(|i| Candidate::new(i.id.to_string(), i.name.clone()));
    let by_id = |id: &str| items.iter().find(|i| i.id.to_string() == id);
    match fuzzy::classify(t, candidates, &Thresholds::default()) {
        Match::Found(found) => by_id(&found.id).ok_or_else(|| Err(ToolError::failed("The menu changed; try again."))),
        Match::Choice { candidates } => {
            let choice = candidates.iter().fold(
                Choice::new(format!("More than one dish could be '{t}'. Which one?"), "item"),
                |choice, c| {
                    let label = match by_id(&c.id) {
                        Some(item) => format!("{} ({})", item.name, dollars(item.price_cents)),
                        None => c.label.clone(),
                    };
                    choice.option(c.id.clone(), label)
                },
            );
            Err(Reply::<Value>::Choose(choice).into_value())
        }
        Match::NotFound { suggestions } => {
            let closest: Vec<String> = suggestions.iter().map(|s| s.label.clone()).collect();
            let mut message = format!("'{t}' is not on the menu.");
            if !closest.is_empty() {
                message.push_str(&format!(" The closest: {}.", closest.join(", ")));
            }
            Err(Err(ToolError::failed(message)))
        }
    }
}

// ---------------------------------------------------------------- menu

/// `browse_menu`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct BrowseMenuArgs {
    /// A section to show (pizza, pasta, salads, sides, desserts, drinks); the whole menu when left out.
    #[serde(default)]
    pub category: Option<String>,
}

db_tool!(
    /// Shows the restaurant's menu with prices, or one section of it
    /// (pizza, pasta, salads, sides, desserts, drinks).
    BrowseMenu, "browse_menu", FoodStore, "food", BrowseMenuArgs, read_only(), None,
    |store, args, cx| {
        let conn = store.db().connect().map_err(failed)?;
        let items = menu(&conn).map_err(|e| failed(store.db().error(e)))?;
        let wanted = args
            .category
            .as_deref()
            .map(|c| c.trim().to_lowercase())
            .filter(|c| !c.is_empty() && c != "all" && c != "menu");
        let shown: Vec<&MenuItem> = match &wanted {
            Some(c) => items
                .iter()
                .filter(|i| i.category == *c || i.category.trim_end_matches('s') == c.trim_end_matches('s'))
                .collect(),
            None => items.iter().collect(),
        };
        if shown.is_empty() {
            let mut sections: Vec<&str> = items.iter().map(|i| i.category.as_str()).collect();
            sections.dedup();
            return Err(invalid(
                "category",
                format!(
                    "The menu has no section '{}'. Its sections: {}.",
                    wanted.unwrap_or_default(),
                    sections.join(", ")
                ),
            ));
        }
        let lines: Vec<String> = shown
            .iter()
            .map(|i| {
                let sold_out = if i.available { "" } else { " (sold out today)" };
                format!("#{} {} {}{}", i.id, i.name, dollars(i.price_cents), sold_out)
            })
            .collect();
        Ok(json!({
            "restaurant": RESTAURANT,
            "items": shown.iter().map(|i| item_json(i)).collect::<Vec<_>>(),
            "message": format!("{RESTAURANT}'s menu: {}.", lines.join("; ")),
        }))
    }
);

// ---------------------------------------------------------------- add

/// `add_to_cart`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct AddToCartArgs {
    /// The dish or drink: its name ("margherita pizza", "tiramisu") or its number on the menu.
    pub item: String,
    /// How many (1 if not said).
    #[serde(default)]
    pub quantity: Option<i64>,
}

db_tool!(
    /// Adds a dish or drink from the menu to the cart, by name or number
    /// (and how many). When the name fits several dishes it adds nothing
    /// and asks which one.
    AddToCart, "add_to_cart", FoodStore, "food", AddToCartArgs, writes(false), None,
    |store, args, cx| {
        let quantity = args.quantity.unwrap_or(1);
        if !(1..=20).contains(&quantity) {
            return Err(invalid("quantity", "Add between 1 and 20 of a dish at a time."));
        }
        let conn = store.db().connect().map_err(failed)?;
        let items = menu(&conn).map_err(|e| failed(store.db().error(e)))?;
        drop(conn);
        let item = match find_item(&items, &args.item) {
            Ok(item) => item.clone(),
            Err(answer) => return answer,
        };
        if !item.available {
            return Err(ToolError::failed(format!(
                "{} is sold out today. Say \"show the food menu\" to pick something else.",
                item.name
            )));
        }
        let owner = cart_owner(&cx);
        let applied = store.db().apply(cx.idempotency_key.as_str(), AddToCart::NAME, |tx, _now| {
            tx.execute(
                "INSERT INTO cart_items (owner, item_id, quantity, added) \
                 VALUES (?1, ?2, ?3, (SELECT COALESCE(MAX(added), 0) + 1 FROM cart_items)) \
                 ON CONFLICT (owner, item_id) DO UPDATE SET quantity = quantity + excluded.quantity",
                params![owner, item.id, quantity],
            )
            .map_err(|e| store.db().error(e))?;
            let lines = cart(tx, &owner).map_err(|e| store.db().error(e))?;
            let count: i64 = lines.iter().map(|l| l.quantity).sum();
            Ok(Applied::Changed(json!({
                "item": item.name,
                "quantity": quantity,
                "cart_total": total(&lines) as f64 / 100.0,
                "message": format!(
                    "Added {quantity} × {} to your cart. Your cart: {} ({} {}), {}.",
                    item.name,
                    summary(&lines),
                    count,
                    if count == 1 { "item" } else { "items" },
                    dollars(total(&lines))
                ),
            })))
        });
        answer(applied)
    }
);

// ---------------------------------------------------------------- show

/// `show_cart`'s arguments (none: this conversation's cart).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct ShowCartArgs {}

db_tool!(
    /// Shows what is in the cart and what it comes to.
    ShowCart, "show_cart", FoodStore, "food", ShowCartArgs, read_only(), None,
    |store, args, cx| {
        let conn = store.db().connect().map_err(failed)?;
        let lines = cart(&conn, &cart_owner(&cx)).map_err(|e| failed(store.db().error(e)))?;
        if lines.is_empty() {
            return Ok(json!({
                "lines": [],
                "total": 0.0,
                "message": "Your cart is empty. Say \"show the food menu\" to pick something.",
            }));
        }
        let sum = total(&lines);
        let detail: Vec<String> = lines
            .iter()
            .map(|l| format!("{} {}", l.label(), dollars(l.price_cents * l.quantity)))
            .collect();
        Ok(json!({
            "lines": lines,
            "total": sum as f64 / 100.0,
            "order": summary(&lines),
            "message": format!("Your cart: {}. Total {}.", detail.join("; "), dollars(sum)),
        }))
    }
);

// ---------------------------------------------------------------- checkout

/// `checkout`'s arguments: what the person was shown, so the order placed is
/// the one they approved.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct CheckoutArgs {
    /// The cart as the person saw it (e.g. "2 × Margherita pizza, 1 × Tiramisu").
    #[serde(default)]
    pub items: Option<String>,
    /// The total the person saw, in dollars: if the cart now comes to
    /// something else, nothing is ordered.
    #[serde(default)]
    pub total: Option<f64>,
}

db_tool!(
    /// Places the order for everything in the cart and empties it. Give the
    /// cart and total the person saw (from show_cart): a cart that changed
    /// since is not ordered. Asks the person first.
    Checkout, "checkout", FoodStore, "food", CheckoutArgs, writes(true), Some(CHECKOUT_CONFIRM),
    |store, args, cx| {
        let expected = match args.total {
            Some(t) => Some(cents(t).ok_or_else(|| invalid("total", "The total must be an amount in dollars, e.g. 31.50."))?),
            None => None,
        };
        let owner = cart_owner(&cx);
        let applied = store.db().apply(cx.idempotency_key.as_str(), Checkout::NAME, |tx, now| {
            let lines = cart(tx, &owner).map_err(|e| store.db().error(e))?;
            if lines.is_empty() {
                return Ok(Applied::Unchanged(
                    "Your cart is empty, so there is nothing to order. Add something from the menu first.".into(),
                ));
            }
            let sum = total(&lines);
            if let Some(expected) = expected.filter(|e| *e != sum) {
                return Ok(Applied::Unchanged(format!(
                    "Your cart now comes to {} ({}), not {}: I did not place the order. Check the cart and check out again.",
                    dollars(sum),
                    summary(&lines),
                    dollars(expected)
                )));
            }
            tx.execute(
                "INSERT INTO orders (owner, total_cents, status, placed_at) VALUES (?1, ?2, 'placed', ?3)",
                params![owner, sum, stored_time(now)],
            )
            .map_err(|e| store.db().error(e))?;
            let order = tx.last_insert_rowid();
            for line in &lines {
                tx.execute(
                    "INSERT INTO order_items (order_id, item_id, name, quantity, price_cents) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![order, line.item_id, line.name, line.quantity, line.price_cents],
                )
                .map_err(|e| store.db().error(e))?;
            }
            tx.execute("DELETE FROM cart_items WHERE owner = ?1", [&owner])
                .map_err(|e| store.db().error(e))?;
            Ok(Applied::Changed(json!({
                "order": order,
                "total": sum as f64 / 100.0,
                "items": summary(&lines),
                "message": format!(
                    "Placed order #{order} with {RESTAURANT}: {}, {}. It will be ready in about 30 minutes.",
                    summary(&lines),
                    dollars(sum)
                ),
            })))
        });
        answer(applied)
    }
);

/// What `checkout` asks before it runs.
pub const CHECKOUT_CONFIRM: &str = "I'll place your order[ of {items}][ for {total|money}]. Proceed?";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkout_asks_with_the_cart_it_was_shown() {
        let spec = concierge::Tool::spec(&Checkout::new(std::sync::Arc::new(FoodStore::open("unused.db"))));
        let ask = |args: Value| concierge::core::confirmation_message(&spec, &args);
        assert_eq!(
            ask(json!({"items": "2 × Margherita pizza", "total": 25})),
            "I'll place your order of 2 × Margherita pizza for $25.00. Proceed?"
        );
        assert_eq!(ask(json!({})), "I'll place your order. Proceed?");
    }
}
