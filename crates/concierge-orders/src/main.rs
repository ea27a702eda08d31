//! `concierge-orders`: the business-orders MCP server (stdio by default).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use concierge_orders::store::{DB_ENV, DEFAULT_DB};
use concierge_orders::{OrderStore, OrdersServer};

/// Serves business orders (GetOrder, GetCustomerOrders, TrackPackage,
/// UpdateOrderStatus) over MCP: stdio by default, streamable HTTP at /mcp
/// with --http.
#[derive(Debug, Parser)]
#[command(name = "concierge-orders", version)]
struct Args {
    /// Serve streamable HTTP on this loopback address (e.g. 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The SQLite database (created and seeded on first use).
    #[arg(long, env = DB_ENV, default_value = DEFAULT_DB)]
    db: PathBuf,
    /// Also serve the preview tools (GetCustomer).
    #[arg(long)]
    preview: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let store = OrderStore::open(&args.db);
    // Create and seed the database now, so a broken path is reported at once.
    if let Err(error) = store.ensure() {
        eprintln!("concierge-orders: {error}");
        return ExitCode::FAILURE;
    }
    let preview = args.preview || OrdersServer::preview_from_env();
    let server = OrdersServer::new(store).with_preview(preview);
    let served = match args.http {
        Some(addr) => server.serve_http(addr).await,
        None => server.serve_stdio().await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("concierge-orders: {error}");
            ExitCode::FAILURE
        }
    }
}
