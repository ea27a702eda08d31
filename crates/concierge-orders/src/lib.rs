//! A business-orders MCP server, built the way a tool team ships one (see
//! `docs/mcp.md`): a separate program any MCP client can use, here over stdio or
//! streamable HTTP. It serves:
//!
//! - `GetOrder`: one order (items, total, status, shipment);
//! - `GetCustomerOrders`: a customer's orders, by date range or status;
//! - `TrackPackage`: a package by tracking number or order number;
//! - `UpdateOrderStatus`: moves an order to another status (the only tool
//!   that changes anything; it deduplicates on the request's
//!   `_meta.idempotency_key`);
//! - with `--preview` (or `CONCIERGE_ORDERS_PREVIEW=1`), also `GetCustomer`.
//!
//! The data is a SQLite file (`orders.db` in the working directory, or
//! `CONCIERGE_ORDERS_DB`), created and seeded with fictional customers,
//! orders and shipments on first use.

pub mod server;
pub mod store;
pub mod tools;

pub use server::{IDEMPOTENCY_KEY_META, OrdersServer, PREVIEW_ENV, ServeError};
pub use store::{OrderStatus, OrderStore};
