//! Talking to the Temporal server: connecting, and saying in words what
//! went wrong (a server that does not answer is said so, as
//! [`Error::EngineUnavailable`]).

use std::str::FromStr;

use concierge::{Error, Result};
use temporalio_client::errors::{
    ClientError, WorkflowGetResultError, WorkflowQueryError, WorkflowStartError, WorkflowUpdateError,
    WorkflowUpdateWithStartError,
};
use temporalio_client::tonic::{Code, Status};
use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, GrpcCompression, TlsOptions, Url};

use crate::config::TemporalConfig;

/// Connects to the server `config` names; an unreachable one is an error
/// that names its address.
pub async fn connect(config: &TemporalConfig) -> Result<Client> {
    let unreachable = |why: String| {
        Error::Storage(format!(
            "the Temporal server at {} cannot be reached ({why}); start it or check the address",
            config.address
        ))
    };
    let failed = |error: temporalio_client::errors::ClientConnectError| {
        use temporalio_client::errors::ClientConnectError;
        // (A TLS handshake that fails is no silence: said as it is.)
        let tls = {
            let said = format!("{error:?}").to_ascii_lowercase();
            ["certificate", "tls", "handshake"]
                .iter()
                .any(|word| said.contains(word))
        };
        match error {
            ClientConnectError::TonicTransportError(_) if !tls => {
                tracing::debug!(%error, address = %config.address, "the Temporal server does not answer");
                unavailable(config)
            }
            ClientConnectError::SystemInfoCallError(status) if unanswered(&status) => {
                tracing::debug!(%status, address = %config.address, "the Temporal server does not answer");
                unavailable(config)
            }
            other => unreachable(other.to_string()),
        }
    };
    let url = Url::from_str(&config.url()).map_err(|e| {
        Error::InvalidConfig(format!(
            "the Temporal address {:?} is not a valid address: {e}",
            config.address
        ))
    })?;
    let mut options = ConnectionOptions::new(url)
        .identity(format!("concierge@{}", std::process::id()))
        .connect_timeout(config.connect_timeout)
        .maybe_api_key(config.api_key.clone())
        .grpc_compression(if config.grpc_compression {
            GrpcCompression::Gzip
        } else {
            GrpcCompression::None
        })
        .build();
    if config.tls || config.api_key.is_some() {
        options.tls_options = Some(TlsOptions::default());
    }
    let connection = Connection::connect(options).await.map_err(failed)?;
    Client::new(connection, ClientOptions::new(config.namespace.clone()).build())
        .map_err(|e| unreachable(e.to_string()))
}

/// An error talking to the server, as a sentence (a server that does not
/// answer is said so).
pub(crate) fn server_error<E: std::fmt::Display + RpcStatus>(config: &TemporalConfig, what: &str, error: E) -> Error {
    if error.rpc_status().is_some_and(unanswered) {
        tracing::debug!(%error, address = %config.address, "the Temporal server does not answer");
        return unavailable(config);
    }
    Error::Storage(format!("Temporal at {} could not {what}: {error}", config.address))
}

/// The server at `config`'s address does not answer.
pub(crate) fn unavailable(config: &TemporalConfig) -> Error {
    Error::EngineUnavailable {
        server: "Temporal".into(),
        address: config.address.clone(),
    }
}

/// Whether `status` says the server did not answer: it is down, or the
/// network to it is (the client retried for a while before saying so).
fn unanswered(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable => true,
        Code::Unknown => {
            let message = status.message().to_ascii_lowercase();
            message.contains("transport error") || message.contains("connection")
        }
        _ => false,
    }
}

/// A client error that may carry the server's gRPC status.
pub(crate) trait RpcStatus {
    /// The status, when the error is the server's (or the network's) answer.
    fn rpc_status(&self) -> Option<&Status>;
}

impl RpcStatus for WorkflowUpdateError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) | Self::NotFound(status) => Some(status),
            _ => None,
        }
    }
}

impl RpcStatus for WorkflowQueryError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) | Self::NotFound(status) => Some(status),
            _ => None,
        }
    }
}

impl RpcStatus for WorkflowUpdateWithStartError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) | Self::Start(WorkflowStartError::Rpc(status)) => Some(status),
            Self::Start(WorkflowStartError::AlreadyStarted { source, .. }) => Some(source),
            Self::Update(inner) => inner.rpc_status(),
            _ => None,
        }
    }
}

impl RpcStatus for WorkflowGetResultError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) | Self::NotFound(status) => Some(status),
            _ => None,
        }
    }
}

impl RpcStatus for ClientError {
    fn rpc_status(&self) -> Option<&Status> {
        match self {
            Self::Rpc(status) => Some(status),
            _ => None,
        }
    }
}
