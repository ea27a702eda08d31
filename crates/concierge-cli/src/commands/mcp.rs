//! `concierge mcp`: inspect MCP servers; serve concierge over MCP.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use concierge::{Error, IdempotencyKey, Result, Runtime};
use concierge_server::ConciergeMcp;

use crate::commands::bench::measure::percentile;
use crate::{Cli, render, setup};

/// `concierge mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: McpCommand,
}

impl McpArgs {
    /// Whether the command serves concierge over MCP (its `ask_<agent>` tools run agents).
    pub fn serves(&self) -> bool {
        matches!(self.command, McpCommand::Serve { .. })
    }

    /// Whether the command signs in to a server, or out (it needs no runtime).
    pub fn signs_in(&self) -> bool {
        matches!(self.command, McpCommand::Login { .. } | McpCommand::Logout { .. })
    }
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
    /// Calls one tool on an MCP server and prints its result (the progress
    /// it reports goes to stderr). With --repeat, calls it that many times
    /// and reports the round-trip times.
    Call {
        /// The server's name (`[mcp_servers.NAME]`).
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Calls the tool this many times (one after another) and prints
        /// p50/p99/mean round-trip times to stderr.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        repeat: u32,
    },
    /// Signs in to a remote MCP server whose `oauth` has `grant =
    /// "authorization_code"`: prints an address to open in a browser, waits
    /// for the sign-in to come back, and keeps the tokens (in
    /// `.concierge/oauth/SERVER.json` beside concierge.toml unless its
    /// `credentials_file` says where) for every later run to use and renew.
    Login {
        /// The server's name (`[mcp_servers.NAME]`).
        server: String,
    },
    /// Forgets the sign-in to a remote MCP server (removes its credentials file).
    Logout {
        /// The server's name (`[mcp_servers.NAME]`).
        server: String,
    },
    /// Serves concierge's Rust tools, and each agent as an `ask_<agent>`
    /// tool, over MCP: stdio by default, streamable HTTP at /mcp with --http.
    Serve {
        /// Serve streamable HTTP on this address (loopback) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
    },
}

/// `mcp login` and `mcp logout`: the server's configuration is read, no
/// runtime is opened (it would start the server that needs the sign-in).
pub async fn sign_in(cli: &Cli, args: &McpArgs) -> Result<ExitCode> {
    let (McpCommand::Login { server } | McpCommand::Logout { server }) = &args.command else {
        return Err(Error::InvalidConfig("only `mcp login` and `mcp logout` sign in".into()));
    };
    let resolved = setup::resolve(cli)?;
    let servers = setup::declared(&resolved.config)?.servers;
    let Some(config) = servers.get(server) else {
        let known: Vec<&str> = servers.keys().map(String::as_str).collect();
        return Err(Error::InvalidConfig(format!(
            "there is no MCP server {server} in concierge.toml or an agent file (the servers: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    sign_in_to(server, config, matches!(args.command, McpCommand::Login { .. })).await
}

#[cfg(feature = "mcp-oauth")]
async fn sign_in_to(server: &str, config: &concierge::mcp::McpServerConfig, login: bool) -> Result<ExitCode> {
    if login {
        let shown = concierge::mcp::login(server, config, |address| {
            eprintln!("Open this address in a browser to sign in to the MCP server {server}:");
            println!("{address}");
            eprintln!("Waiting for the sign-in to come back (Ctrl-C stops)...");
        })
        .await;
        return Ok(match shown {
            Ok(path) => {
                eprintln!("Signed in to {server}; the sign-in is kept in {}.", path.display());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        });
    }
    Ok(match concierge::mcp::logout(server, config).await {
        Ok(true) => {
            eprintln!("Signed out of {server}: its sign-in is forgotten.");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            eprintln!("Nobody was signed in to {server}.");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    })
}

#[cfg(not(feature = "mcp-oauth"))]
async fn sign_in_to(server: &str, _config: &concierge::mcp::McpServerConfig, _login: bool) -> Result<ExitCode> {
    Err(Error::InvalidConfig(format!(
        "signing in to the MCP server {server} needs concierge built with the mcp-oauth feature (on by default)"
    )))
}

pub async fn mcp(rt: &Runtime, args: &McpArgs) -> Result<ExitCode> {
    match &args.command {
        McpCommand::Login { .. } | McpCommand::Logout { .. } => Err(Error::InvalidConfig(
            "`mcp login` and `mcp logout` open no runtime; they run before one".into(),
        )),
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
        McpCommand::Call {
            server,
            tool,
            args,
            repeat,
        } => call(rt, server, tool, args, *repeat).await,
        McpCommand::Serve { http: None } => {
            ConciergeMcp::new(rt.clone())
                .serve_stdio()
                .await
                .map_err(|e| Error::InvalidConfig(e.to_string()))?;
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

async fn call(rt: &Runtime, server: &str, tool: &str, args: &str, repeat: u32) -> Result<ExitCode> {
    let arguments: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(args).map_err(|e| Error::InvalidConfig(format!("--args must be a JSON object: {e}")))?;
    // Starting the server and listing its tools is not part of a call's time.
    let tools = rt.discover(server).await?;
    if !tools.iter().any(|t| t.remote == tool) {
        let names: Vec<&str> = tools.iter().map(|t| t.remote.as_str()).collect();
        return Err(Error::InvalidConfig(format!(
            "{server} has no tool {tool:?} (or it is not in included_tools); it offers: {}",
            names.join(", ")
        )));
    }
    let client = rt
        .mcp_client(server)
        .ok_or_else(|| Error::InvalidConfig(format!("no MCP server named {server:?}")))?;
    // Progress the server reports goes to stderr while the call runs.
    let mut progress = client.progress();
    let mut took = Vec::with_capacity(repeat as usize);
    let mut last = None;
    for i in 0..repeat {
        let key = IdempotencyKey::given(format!("cli-{}-{i}", std::process::id()));
        let started = std::time::Instant::now();
        let call = client.call(tool, arguments.clone(), &key);
        tokio::pin!(call);
        let mut unfinished = false;
        let result = loop {
            tokio::select! {
                result = &mut call => break result,
                Ok(report) = progress.recv() => {
                    unfinished = report.total.is_some_and(|total| report.progress < total);
                    eprintln!("progress {report}");
                }
            }
        };
        // A report the server sent just before its result may be handled
        // after it: while the last one seen is short of its total, wait a
        // moment for the rest.
        loop {
            let next = if unfinished {
                tokio::time::timeout(std::time::Duration::from_millis(500), progress.recv())
                    .await
                    .ok()
                    .and_then(Result::ok)
            } else {
                progress.try_recv().ok()
            };
            let Some(report) = next else { break };
            unfinished = report.total.is_some_and(|total| report.progress < total);
            eprintln!("progress {report}");
        }
        took.push(started.elapsed());
        match result {
            Ok(value) => last = Some(value),
            Err(error) => {
                eprintln!("{tool} failed ({:?}): {}", error.kind, error.message);
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    if let Some(value) = last {
        let text = serde_json::to_string_pretty(&value).map_err(|e| Error::InvalidConfig(e.to_string()))?;
        println!("{text}");
    }
    if repeat > 1 {
        let mut micros: Vec<f64> = took.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        micros.sort_by(f64::total_cmp);
        let mean = micros.iter().sum::<f64>() / micros.len() as f64;
        eprintln!(
            "{repeat} calls to {server}/{tool}: p50 {:.0} µs, p99 {:.0} µs, mean {mean:.0} µs",
            percentile(&micros, 50.0),
            percentile(&micros, 99.0)
        );
    }
    Ok(ExitCode::SUCCESS)
}
