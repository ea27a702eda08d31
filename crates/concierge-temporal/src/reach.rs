//! Whether the Temporal server answers and has the namespace: checked when
//! the engine opens, and watched while workers run (the SDK's workers wait
//! and retry in silence while the server is away).

use std::convert::Infallible;
use std::time::{Duration, Instant};

use concierge::{Error, Result};
use temporalio_client::Client;
use temporalio_client::tonic::{Code, Request};
use temporalio_common::protos::temporal::api::workflowservice::v1::DescribeNamespaceRequest;

use crate::config::TemporalConfig;
use crate::connection::unavailable;

/// How often the workers' thread asks, and how long it waits for an answer.
const EVERY: Duration = Duration::from_secs(5);

/// How often a server still away is mentioned again.
const AGAIN_AFTER: Duration = Duration::from_secs(60);

/// Why the namespace cannot be used now.
enum Unreached {
    /// The server did not answer, or answered with an error.
    Server(String),
    /// The server answers, without the namespace.
    Namespace,
}

impl Unreached {
    fn say(&self, config: &TemporalConfig) -> String {
        match self {
            Self::Server(why) => format!("the Temporal server at {} cannot be reached ({why})", config.address),
            Self::Namespace => format!(
                "the Temporal server at {} has no namespace {}",
                config.address, config.namespace
            ),
        }
    }
}

/// Asks the server to describe the namespace.
async fn ask(client: &Client, config: &TemporalConfig) -> std::result::Result<(), Unreached> {
    let request = Request::new(DescribeNamespaceRequest {
        namespace: config.namespace.clone(),
        ..Default::default()
    });
    match tokio::time::timeout(
        EVERY,
        client.connection().workflow_service().describe_namespace(request),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(status)) if status.code() == Code::NotFound => Err(Unreached::Namespace),
        // A key that may not describe namespaces still polls: trusted.
        Ok(Err(status)) if matches!(status.code(), Code::PermissionDenied | Code::Unimplemented) => Ok(()),
        Ok(Err(status)) => Err(Unreached::Server(status.message().to_string())),
        Err(_) => Err(Unreached::Server(format!("no answer within {} s", EVERY.as_secs()))),
    }
}

/// Whether the server answers (with or without the namespace).
pub(crate) async fn answers(client: &Client, config: &TemporalConfig) -> bool {
    !matches!(ask(client, config).await, Err(Unreached::Server(_)))
}

/// Checks, when the engine opens, that the namespace exists: a worker
/// polling a missing one would wait for it in silence.
pub(crate) async fn check_namespace(client: &Client, config: &TemporalConfig) -> Result<()> {
    match ask(client, config).await {
        Ok(()) => Ok(()),
        Err(Unreached::Namespace) => Err(Error::InvalidConfig(format!(
            "{}: create it (`temporal operator namespace create --namespace {}`) or name another one \
             ([temporal] namespace)",
            Unreached::Namespace.say(config),
            config.namespace
        ))),
        Err(server) => {
            tracing::debug!("{}", server.say(config));
            Err(unavailable(config))
        }
    }
}

/// Says when the server or the namespace stops answering, every minute
/// while it stays away, and when it is back. Never returns.
pub(crate) async fn watch(client: &Client, config: &TemporalConfig) -> Infallible {
    let mut away_since: Option<Instant> = None;
    let mut said_at = Instant::now();
    loop {
        tokio::time::sleep(EVERY).await;
        match (ask(client, config).await, away_since) {
            (Ok(()), None) => {}
            (Ok(()), Some(since)) => {
                tracing::warn!(
                    "the Temporal server at {} answers again after {} s; the workers go on",
                    config.address,
                    since.elapsed().as_secs()
                );
                away_since = None;
            }
            (Err(why), None) => {
                tracing::warn!("{}; the workers wait for it and retry", why.say(config));
                away_since = Some(Instant::now());
                said_at = Instant::now();
            }
            (Err(why), Some(since)) if said_at.elapsed() >= AGAIN_AFTER => {
                tracing::warn!("{}, for {} s now", why.say(config), since.elapsed().as_secs());
                said_at = Instant::now();
            }
            (Err(_), Some(_)) => {}
        }
    }
}
