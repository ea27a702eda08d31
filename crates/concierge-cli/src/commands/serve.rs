//! `concierge serve`: the HTTP API (sessions, runs, event streams, the
//! catalogue, `/openapi.json`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use concierge::{Error, Result, Runtime};
use concierge_server::metrics::Metrics;
use concierge_server::{HttpApi, Tokens, check_unauthenticated_addr};

use crate::{Cli, setup};

/// `concierge serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on. Without API tokens (`[[server.tokens]]` in
    /// concierge.toml) only a loopback address (127.0.0.1 or ::1) is accepted.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// The largest request body accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = concierge_server::http::DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// How many runs one tenant may have in progress at once (429 past it)
    /// [default: `[server] max_runs_per_tenant`, else 16].
    #[arg(long, value_name = "N")]
    pub max_runs_per_tenant: Option<usize>,
}

pub async fn serve(cli: &Cli, rt: &Runtime, args: &ServeArgs, metrics: Option<Arc<Metrics>>) -> Result<ExitCode> {
    let server = concierge_server::ServerConfig::from_config(&setup::resolve(cli)?.config)?;
    let tokens = Tokens::from_config(&server.tokens).map_err(|e| Error::InvalidConfig(e.to_string()))?;
    if tokens.is_empty() {
        check_unauthenticated_addr(args.addr).map_err(|e| Error::InvalidConfig(e.to_string()))?;
    }
    let max_runs = args
        .max_runs_per_tenant
        .or(server.max_runs_per_tenant)
        .unwrap_or(concierge_server::http::DEFAULT_MAX_RUNS_PER_TENANT);
    let config_error = |e: &dyn std::fmt::Display| Error::InvalidConfig(format!("[server] in concierge.toml: {e}"));
    let seconds = |key: &str, value: Option<u64>, default: Duration| match value {
        Some(0) => Err(Error::InvalidConfig(format!(
            "[server] {key} in concierge.toml is 0; give a number of seconds of at least 1"
        ))),
        Some(secs) => Ok(Duration::from_secs(secs)),
        None => Ok(default),
    };
    let header_read_timeout = seconds(
        "header_read_timeout_secs",
        server.header_read_timeout_secs,
        concierge_server::http::DEFAULT_HEADER_READ_TIMEOUT,
    )?;
    let idle_timeout = seconds(
        "idle_timeout_secs",
        server.idle_timeout_secs,
        concierge_server::http::DEFAULT_IDLE_TIMEOUT,
    )?;
    let max_connections = match server.max_connections {
        Some(0) => {
            return Err(Error::InvalidConfig(
                "[server] max_connections in concierge.toml is 0; give at least 1".into(),
            ));
        }
        Some(max) => max,
        None => concierge_server::http::DEFAULT_MAX_CONNECTIONS,
    };
    let metrics_addr = match &server.metrics_addr {
        Some(text) => Some(text.parse::<SocketAddr>().map_err(|_| {
            Error::InvalidConfig(format!(
                "[server] metrics_addr in concierge.toml is {text:?}, not an address; give an IP address and a port (\"127.0.0.1:9464\")"
            ))
        })?),
        None => None,
    };
    let open = tokens.is_empty();
    let mut api = HttpApi::new(rt.clone())
        .body_limit(args.body_limit)
        .tokens(tokens)
        .max_runs_per_tenant(max_runs)
        .header_read_timeout(header_read_timeout)
        .idle_timeout(idle_timeout)
        .max_connections(max_connections)
        .allowed_hosts(&server.allowed_hosts)
        .map_err(|e| config_error(&e))?
        .cors_origins(&server.cors_origins)
        .map_err(|e| config_error(&e))?;
    if let Some(metrics) = metrics {
        api = api.metrics(metrics);
    }
    if let Some(url) = &server.public_url {
        api = api.public_url(url.clone());
    }
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| Error::InvalidConfig(format!("cannot listen on {}: {e}", args.addr)))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::InvalidConfig(format!("cannot listen on {}: {e}", args.addr)))?;
    let metrics_local = match metrics_addr {
        Some(addr) => {
            let cannot = |e: std::io::Error| Error::InvalidConfig(format!("cannot listen on {addr} for /metrics: {e}"));
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(cannot)?;
            let local = listener.local_addr().map_err(cannot)?;
            api = api.metrics_listener(listener);
            Some(local)
        }
        None => None,
    };
    let signalled = stop_signal();
    println!("http://{local}/");
    let who = if open {
        "on this machine only (no API tokens are configured)".to_string()
    } else {
        format!(
            "to holders of its {} API token(s) (Authorization: Bearer <token>)",
            server.tokens.len()
        )
    };
    eprintln!(
        "serving the concierge API at http://{local}/api/v1 (described at http://{local}/openapi.json), {who}; at most {max_runs} runs in progress per tenant; Ctrl-C stops"
    );
    if let Some(local) = metrics_local {
        eprintln!("serving /metrics without a token at http://{local}/metrics");
    }
    // Workers of this process that stop by themselves (Temporal) stop the
    // server too: without them its runs would wait for nobody.
    let (halt_tx, mut halt_rx) = tokio::sync::oneshot::channel();
    let engine = rt.clone();
    let stop = async move {
        tokio::select! {
            () = signalled => {}
            error = engine.halted() => {
                let _ = halt_tx.send(error);
            }
        }
    };
    api.serve(listener, stop)
        .await
        .map_err(|e| Error::InvalidConfig(format!("the HTTP server failed: {e}")))?;
    if let Ok(error) = halt_rx.try_recv() {
        return Err(error);
    }
    eprintln!("stopped; letting sessions go");
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C, or SIGTERM on Unix: the handlers are installed when this is
/// called (not when the future is first polled), so a signal that arrives
/// as soon as the server answers is not the default "terminate at once".
pub(crate) fn stop_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let term = signal(SignalKind::terminate());
        async move {
            match (interrupt, term) {
                (Ok(mut interrupt), Ok(mut term)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = term.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
