//! `concierge mcp`: inspect MCP servers; serve concierge over MCP.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use concierge::mcp::ConciergeMcp;
use concierge::{Error, Result, Runtime};

use crate::render;

/// `concierge mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// The `mcp` subcommands.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Starts an MCP server from the configuration and lists its tools with their schemas.
    List {
        /// The server's name (`[mcp_servers.NAME]`).
        server: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serves concierge's Rust tools, and each agent as an `ask_<agent>`
    /// tool, over MCP: stdio by default, streamable HTTP at /mcp with --http.
    Serve {
        /// Serve streamable HTTP on this address (loopback) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
    },
}

pub async fn mcp(rt: &Runtime, args: &McpArgs) -> Result<ExitCode> {
    match &args.command {
        McpCommand::List { server, json } => {
            let tools = rt.discover(server).await?;
            if *json {
                let text = serde_json::to_string_pretty(&tools).map_err(|e| Error::InvalidConfig(e.to_string()))?;
                println!("{text}");
                return Ok(ExitCode::SUCCESS);
            }
            for tool in tools {
                let spec = &tool.spec;
                if spec.name.as_str() == tool.remote {
                    println!("{}", spec.name);
                } else {
                    println!("{}  (on the server: {})", spec.name, tool.remote);
                }
                println!("  {}", spec.description.replace('\n', "\n  "));
                let flags = render::annotations(spec);
                if !flags.is_empty() {
                    println!("  annotations: {flags}");
                }
                let schema = serde_json::to_string_pretty(&spec.input_schema).unwrap_or_default();
                println!("  schema:\n    {}", schema.replace('\n', "\n    "));
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Serve { http: None } => {
            ConciergeMcp::new(rt.clone()).serve_stdio().await?;
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Serve { http: Some(addr) } => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Error::InvalidConfig(format!("cannot listen on {addr}: {e}")))?;
            let local = listener
                .local_addr()
                .map_err(|e| Error::InvalidConfig(format!("cannot listen on {addr}: {e}")))?;
            println!("http://{local}/mcp");
            eprintln!("serving MCP (streamable HTTP) at http://{local}/mcp; Ctrl-C stops");
            let router = ConciergeMcp::new(rt.clone()).router();
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await
                .map_err(|e| Error::InvalidConfig(format!("MCP server failed: {e}")))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
