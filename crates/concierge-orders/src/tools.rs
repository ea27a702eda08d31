//! The order tools: their names, JSON schemas and annotations, and what each
//! does with the database. Every result has a `message` (a sentence for
//! people) next to its data; every refusal is a sentence.

use std::sync::Arc;

use chrono::NaiveDate;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::store::{Applied, Order, OrderStatus, OrderStore, Shipment, StoreError, money};

/// Looks up one order.
pub const GET_ORDER: &str = "GetOrder";
/// Lists a customer's orders.
pub const GET_CUSTOMER_ORDERS: &str = "GetCustomerOrders";
/// Tracks a package.
pub const TRACK_PACKAGE: &str = "TrackPackage";
/// Moves an order to another status (the one tool that changes something).
pub const UPDATE_ORDER_STATUS: &str = "UpdateOrderStatus";
/// A customer's profile: the preview tool, served only with `--preview`.
pub const GET_CUSTOMER: &str = "GetCustomer";

/// Why a call was refused or failed: a sentence for people.
#[derive(Debug, thiserror::Error)]
pub enum ToolFailure {
    /// The arguments do not say what the tool needs.
    #[error("{0}")]
    Arguments(String),
    /// Nothing matches (no such order, customer or package).
    #[error("{0}")]
    NotFound(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

fn read_only(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

fn order_id_property() -> Value {
    json!({
        "type": "integer",
        "title": "Order number",
        "description": "The order's number, e.g. 1001.",
        "minimum": 1
    })
}

/// The tools served: the four released ones, and with `preview` the
/// customer profile tool too (how a new tool reaches goals that take the
/// whole server, without any change on their side).
pub fn catalog(preview: bool) -> Vec<Tool> {
    let statuses: Vec<&str> = OrderStatus::ALL.iter().map(|s| s.as_str()).collect();
    let mut tools = vec![
        Tool::new(
            GET_ORDER,
            "Get one order by its number: what was ordered, its total, its status, and its shipment if it shipped.",
            schema(json!({
                "type": "object",
                "properties": {"order_id": order_id_property()},
                "required": ["order_id"],
                "additionalProperties": false
            })),
        )
        .with_title("Get an order")
        .with_annotations(read_only("Get an order")),
        Tool::new(
            GET_CUSTOMER_ORDERS,
            "List a customer's orders, newest first, optionally only those placed in a date range or in one status.",
            schema(json!({
                "type": "object",
                "properties": {
                    "customer_id": {
                        "type": "string",
                        "title": "Customer",
                        "description": "The customer's id (e.g. C100) or email address.",
                        "minLength": 1
                    },
                    "since": {
                        "type": "string",
                        "format": "date",
                        "title": "Placed on or after",
                        "description": "Only orders placed on or after this day (YYYY-MM-DD)."
                    },
                    "until": {
                        "type": "string",
                        "format": "date",
                        "title": "Placed on or before",
                        "description": "Only orders placed on or before this day (YYYY-MM-DD)."
                    },
                    "status": {
                        "type": "string",
                        "enum": statuses,
                        "title": "Status",
                        "description": "Only orders in this status."
                    }
                },
                "required": ["customer_id"],
                "additionalProperties": false
            })),
        )
        .with_title("List a customer's orders")
        .with_annotations(read_only("List a customer's orders")),
        Tool::new(
            TRACK_PACKAGE,
            "Track a package by its tracking number, or the package of an order by the order's number: where it was last seen and when it is expected.",
            schema(json!({
                "type": "object",
                "properties": {
                    "tracking_number": {
                        "type": "string",
                        "title": "Tracking number",
                        "description": "The carrier's tracking number, e.g. PX41001US."
                    },
                    "order_id": order_id_property()
                },
                "additionalProperties": false
            })),
        )
        .with_title("Track a package")
        .with_annotations(read_only("Track a package")),
        Tool::new(
            UPDATE_ORDER_STATUS,
            "Move an order to another status: pending → processing → shipped → delivered → returned; pending or processing orders can be cancelled. Shipping creates the package's tracking number. A retried call with the same idempotency key (the request's _meta.idempotency_key) changes nothing twice.",
            schema(json!({
                "type": "object",
                "properties": {
                    "order_id": order_id_property(),
                    "status": {
                        "type": "string",
                        "enum": statuses,
                        "title": "New status",
                        "description": "The status the order moves to."
                    },
                    "note": {
                        "type": "string",
                        "title": "Note",
                        "description": "Why, kept in the order's history."
                    }
                },
                "required": ["order_id", "status"],
                "additionalProperties": false
            })),
        )
        .with_title("Update an order's status")
        .with_annotations(
            ToolAnnotations::with_title("Update an order's status")
                .read_only(false)
                .destructive(true)
                .idempotent(true)
                .open_world(false),
        ),
    ];
    if preview {
        tools.push(
            Tool::new(
                GET_CUSTOMER,
                "Get a customer's profile by id or email address: name, email, city, and how many orders they placed for how much.",
                schema(json!({
                    "type": "object",
                    "properties": {
                        "customer_id": {
                            "type": "string",
                            "title": "Customer",
                            "description": "The customer's id (e.g. C100) or email address.",
                            "minLength": 1
                        }
                    },
                    "required": ["customer_id"],
                    "additionalProperties": false
                })),
            )
            .with_title("Get a customer")
            .with_annotations(read_only("Get a customer")),
        );
    }
    tools
}

/// Runs tool `name` with `args` against `store`; `key` deduplicates
/// side effects. `None` when the tool does not exist.
pub fn call(
    store: &OrderStore,
    name: &str,
    args: &JsonObject,
    key: Option<&str>,
    preview: bool,
) -> Option<Result<Value, ToolFailure>> {
    Some(match name {
        GET_ORDER => get_order(store, args),
        GET_CUSTOMER_ORDERS => get_customer_orders(store, args),
        TRACK_PACKAGE => track_package(store, args),
        UPDATE_ORDER_STATUS => update_order_status(store, args, key),
        GET_CUSTOMER if preview => get_customer(store, args),
        _ => return None,
    })
}

/// An order number from a number or a string such as "1001" or "#1001".
fn order_id(args: &JsonObject, field: &str) -> Result<Option<i64>, ToolFailure> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_i64().filter(|n| *n > 0).map(Some).ok_or_else(|| {
            ToolFailure::Arguments(format!("{n} is not an order number; order numbers look like 1001."))
        }),
        Some(Value::String(s)) => {
            let digits = s.trim().trim_start_matches('#');
            digits.parse::<i64>().ok().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                ToolFailure::Arguments(format!("'{s}' is not an order number; order numbers look like 1001."))
            })
        }
        Some(_) => Err(ToolFailure::Arguments(
            "The order number must be a number, such as 1001.".into(),
        )),
    }
}

fn required_order_id(args: &JsonObject) -> Result<i64, ToolFailure> {
    order_id(args, "order_id")?
        .ok_or_else(|| ToolFailure::Arguments("Which order? Give its number (order_id), such as 1001.".into()))
}

fn text<'a>(args: &'a JsonObject, field: &str) -> Option<&'a str> {
    args.get(field)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn day(args: &JsonObject, field: &str) -> Result<Option<NaiveDate>, ToolFailure> {
    text(args, field)
        .map(|s| {
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map_err(|_| ToolFailure::Arguments(format!("'{s}' is not a date; write {field} as YYYY-MM-DD.")))
        })
        .transpose()
}

fn items_text(order: &Order) -> String {
    let items: Vec<String> = order
        .items
        .iter()
        .map(|i| {
            if i.quantity == 1 {
                i.name.clone()
            } else {
                format!("{} × {}", i.quantity, i.name)
            }
        })
        .collect();
    items.join(", ")
}

fn shipment_text(shipment: &Shipment) -> String {
    match shipment.delivered_on {
        Some(day) => format!(
            "It was delivered on {day} by {} (tracking {}).",
            shipment.carrier, shipment.tracking_number
        ),
        None => {
            let last = shipment
                .events
                .last()
                .map(|e| {
                    format!(
                        "; last seen {} at {} ({})",
                        e.at.format("%Y-%m-%d %H:%M"),
                        e.location,
                        e.description.to_lowercase()
                    )
                })
                .unwrap_or_default();
            format!(
                "It shipped on {} with {} (tracking {}){last}. It is expected on {}.",
                shipment.shipped_on, shipment.carrier, shipment.tracking_number, shipment.estimated_delivery
            )
        }
    }
}

fn order_json(order: &Order) -> Value {
    json!({
        "order_id": order.id,
        "customer_id": order.customer_id,
        "placed_on": order.placed_on.to_string(),
        "status": order.status.as_str(),
        "total": order.total(),
        "total_cents": order.total_cents,
        "items": order.items.iter().map(|i| json!({
            "sku": i.sku,
            "name": i.name,
            "quantity": i.quantity,
            "unit_price": money(i.unit_cents),
        })).collect::<Vec<_>>(),
        "tracking_number": order.tracking_number,
    })
}

fn shipment_json(shipment: &Shipment) -> Value {
    json!({
        "tracking_number": shipment.tracking_number,
        "order_id": shipment.order_id,
        "carrier": shipment.carrier,
        "shipped_on": shipment.shipped_on.to_string(),
        "estimated_delivery": shipment.estimated_delivery.to_string(),
        "delivered_on": shipment.delivered_on.map(|d| d.to_string()),
        "events": shipment.events.iter().map(|e| json!({
            "at": e.at.format("%Y-%m-%d %H:%M").to_string(),
            "location": e.location,
            "description": e.description,
        })).collect::<Vec<_>>(),
    })
}

fn with_message(message: String, mut data: Value) -> Value {
    if let Value::Object(map) = &mut data {
        map.insert("message".into(), Value::String(message));
    }
    data
}

fn get_order(store: &OrderStore, args: &JsonObject) -> Result<Value, ToolFailure> {
    let id = required_order_id(args)?;
    let order = store
        .order(id)?
        .ok_or_else(|| ToolFailure::NotFound(format!("There is no order {id}; order numbers look like 1001.")))?;
    let customer = store.customer(&order.customer_id)?;
    let by = customer.as_ref().map(|c| format!(" by {}", c.name)).unwrap_or_default();
    let mut message = format!(
        "Order {} (placed {}{by}) is {}: {}, {} in all.",
        order.id,
        order.placed_on,
        order.status,
        items_text(&order),
        order.total()
    );
    let shipment = store.shipment_of(id)?;
    if let Some(shipment) = &shipment {
        message.push(' ');
        message.push_str(&shipment_text(shipment));
    }
    let mut data = order_json(&order);
    if let Value::Object(map) = &mut data {
        map.insert("customer_name".into(), json!(customer.map(|c| c.name)));
        map.insert("shipment".into(), shipment.as_ref().map_or(Value::Null, shipment_json));
    }
    Ok(with_message(message, data))
}

fn get_customer_orders(store: &OrderStore, args: &JsonObject) -> Result<Value, ToolFailure> {
    let wanted = text(args, "customer_id").ok_or_else(|| {
        ToolFailure::Arguments("Whose orders? Give a customer id (such as C100) or email address.".into())
    })?;
    let customer = store.customer(wanted)?.ok_or_else(|| {
        ToolFailure::NotFound(format!(
            "There is no customer '{wanted}'; customers are found by id (such as C100) or email address."
        ))
    })?;
    let since = day(args, "since")?;
    let until = day(args, "until")?;
    let status = text(args, "status")
        .map(|s| s.parse::<OrderStatus>().map_err(ToolFailure::Arguments))
        .transpose()?;
    let orders = store.customer_orders(&customer.id, since, until, status)?;
    let mut filters = Vec::new();
    if let Some(status) = status {
        filters.push(format!("{status}"));
    }
    if let Some(since) = since {
        filters.push(format!("placed since {since}"));
    }
    if let Some(until) = until {
        filters.push(format!("placed until {until}"));
    }
    let which = if filters.is_empty() {
        String::new()
    } else {
        format!(" ({})", filters.join(", "))
    };
    let message = match orders.len() {
        0 => format!("{} has no orders{which}.", customer.name),
        n => {
            let lines: Vec<String> = orders.iter().map(Order::line).collect();
            let noun = if n == 1 { "order" } else { "orders" };
            format!("{} has {n} {noun}{which}: {}.", customer.name, lines.join("; "))
        }
    };
    Ok(json!({
        "message": message,
        "customer": {"id": customer.id, "name": customer.name, "email": customer.email},
        "count": orders.len(),
        "orders": orders.iter().map(order_json).collect::<Vec<_>>(),
    }))
}

fn track_package(store: &OrderStore, args: &JsonObject) -> Result<Value, ToolFailure> {
    let shipment = match (text(args, "tracking_number"), order_id(args, "order_id")?) {
        (Some(number), _) => store.shipment(number)?.ok_or_else(|| {
            ToolFailure::NotFound(format!(
                "No package has the tracking number '{number}'; tracking numbers look like PX41001US."
            ))
        })?,
        (None, Some(id)) => match store.shipment_of(id)? {
            Some(shipment) => shipment,
            None => {
                let order = store.order(id)?.ok_or_else(|| {
                    ToolFailure::NotFound(format!("There is no order {id}; order numbers look like 1001."))
                })?;
                return Err(ToolFailure::NotFound(format!(
                    "Order {id} has not shipped yet (it is {}), so there is no package to track.",
                    order.status
                )));
            }
        },
        (None, None) => {
            return Err(ToolFailure::Arguments(
                "Which package? Give its tracking number (such as PX41001US) or the order's number.".into(),
            ));
        }
    };
    let state = if shipment.delivered_on.is_some() {
        "delivered"
    } else {
        "in transit"
    };
    let message = format!(
        "Package {} (order {}) is {state}. {}",
        shipment.tracking_number,
        shipment.order_id,
        shipment_text(&shipment)
    );
    Ok(with_message(message, shipment_json(&shipment)))
}

fn update_order_status(store: &OrderStore, args: &JsonObject, key: Option<&str>) -> Result<Value, ToolFailure> {
    let id = required_order_id(args)?;
    let status = text(args, "status")
        .ok_or_else(|| ToolFailure::Arguments("Which status? Give one, such as cancelled or shipped.".into()))?
        .parse::<OrderStatus>()
        .map_err(ToolFailure::Arguments)?;
    match store.update_status(id, status, text(args, "note"), key)? {
        Applied::Changed(result) => Ok(result),
        Applied::Unchanged(why) if why.starts_with("There is no order") => Err(ToolFailure::NotFound(why)),
        Applied::Unchanged(why) => Err(ToolFailure::Arguments(why)),
    }
}

fn get_customer(store: &OrderStore, args: &JsonObject) -> Result<Value, ToolFailure> {
    let wanted = text(args, "customer_id")
        .ok_or_else(|| ToolFailure::Arguments("Which customer? Give an id (such as C100) or email address.".into()))?;
    let customer = store.customer(wanted)?.ok_or_else(|| {
        ToolFailure::NotFound(format!(
            "There is no customer '{wanted}'; customers are found by id (such as C100) or email address."
        ))
    })?;
    let orders = store.customer_orders(&customer.id, None, None, None)?;
    let spent: i64 = orders
        .iter()
        .filter(|o| !matches!(o.status, OrderStatus::Cancelled | OrderStatus::Returned))
        .map(|o| o.total_cents)
        .sum();
    let message = format!(
        "{} ({}, {}) lives in {} and has placed {} orders, {} spent.",
        customer.name,
        customer.id,
        customer.email,
        customer.city,
        orders.len(),
        money(spent)
    );
    Ok(json!({
        "message": message,
        "id": customer.id,
        "name": customer.name,
        "email": customer.email,
        "city": customer.city,
        "orders": orders.len(),
        "spent": money(spent),
    }))
}
