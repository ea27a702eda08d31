//! The A2A front door's errors, one per A2A error type the spec names
//! (docs/a2a.md lists them), each said in a sentence. A binding writes them
//! its way: JSON-RPC as `{"code", "message", "data"}`, HTTP+JSON/REST as
//! `google.rpc.Status` with its HTTP status.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::ground::ApiError;

/// The domain of the `google.rpc.ErrorInfo` details A2A errors carry.
const DOMAIN: &str = "a2a-protocol.org";

/// An A2A error.
#[derive(Clone, Debug, thiserror::Error)]
pub enum A2aError {
    /// The body is not JSON (JSON-RPC -32700).
    #[error("{0}")]
    Parse(String),
    /// The body is not a JSON-RPC request (-32600).
    #[error("{0}")]
    InvalidRequest(String),
    /// No such method (-32601).
    #[error(
        "there is no method {0:?}; the methods are SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask and GetExtendedAgentCard"
    )]
    MethodNotFound(String),
    /// A parameter is missing or malformed (-32602, REST 400), naming it.
    #[error("{field}: {message}")]
    InvalidParams {
        /// The parameter at fault (`message.parts[0].data.fingerprint`).
        field: String,
        /// What is wrong with it and what to send instead.
        message: String,
    },
    /// No task of the caller has this id (-32001, 404): never says whether
    /// another tenant has one.
    #[error("there is no task {0:?}; a task id is what SendMessage answered with")]
    TaskNotFound(String),
    /// The task has ended (-32002).
    #[error("{0}")]
    TaskNotCancelable(String),
    /// The operation does not apply (-32004).
    #[error("{0}")]
    Unsupported(String),
    /// A part's kind or media type is not taken (-32005).
    #[error("{0}")]
    ContentTypeNotSupported(String),
    /// The extended card is not offered (-32007 is for a declared one; this
    /// agent declares none, so -32004).
    #[error("this agent has no extended agent card; its card is at /.well-known/agent-card.json")]
    NoExtendedCard,
    /// The `A2A-Version` is not one this server speaks (-32009).
    #[error("A2A version {0:?} is not supported; this agent speaks A2A 1.0 (send A2A-Version: 1.0)")]
    VersionNotSupported(String),
    /// Anything else: the server's own error, with its HTTP status (a 429
    /// past the tenant's cap, a 503 while the engine is away).
    #[error("{}", .0.body.error)]
    Server(ApiError),
}

impl A2aError {
    /// An invalid parameter.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidParams {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error, with the field it names under `prefix` (a part of a
    /// larger request).
    pub fn under(self, prefix: &str) -> Self {
        match self {
            Self::InvalidParams { field, message } => Self::InvalidParams {
                field: format!("{prefix}.{field}"),
                message,
            },
            other => other,
        }
    }

    /// The same error, about `field` of the request (for the server's own errors).
    pub fn with_field(self, field: &str) -> Self {
        match self {
            Self::Server(error) => Self::Server(error.with_field(field)),
            other => other,
        }
    }

    /// The JSON-RPC error code.
    pub fn code(&self) -> i64 {
        match self {
            Self::Parse(_) => -32700,
            Self::InvalidRequest(_) => -32600,
            Self::MethodNotFound(_) => -32601,
            Self::InvalidParams { .. } => -32602,
            Self::TaskNotFound(_) => -32001,
            Self::TaskNotCancelable(_) => -32002,
            Self::Unsupported(_) | Self::NoExtendedCard => -32004,
            Self::ContentTypeNotSupported(_) => -32005,
            Self::VersionNotSupported(_) => -32009,
            Self::Server(error) if error.status.is_client_error() => -32602,
            Self::Server(_) => -32603,
        }
    }

    /// The error's reason (`TASK_NOT_FOUND`), as A2A's `ErrorInfo` names
    /// its error types (and the SDKs map them back).
    fn reason(&self) -> &'static str {
        match self {
            Self::Parse(_) | Self::InvalidRequest(_) => "INVALID_REQUEST",
            Self::MethodNotFound(_) => "METHOD_NOT_FOUND",
            Self::InvalidParams { .. } => "INVALID_PARAMS",
            Self::TaskNotFound(_) => "TASK_NOT_FOUND",
            Self::TaskNotCancelable(_) => "TASK_NOT_CANCELABLE",
            Self::Unsupported(_) | Self::NoExtendedCard => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::VersionNotSupported(_) => "VERSION_NOT_SUPPORTED",
            Self::Server(error) if error.status.is_client_error() => "INVALID_PARAMS",
            Self::Server(_) => "INTERNAL_ERROR",
        }
    }

    /// The field at fault, if one is.
    pub fn field_name(&self) -> Option<&str> {
        match self {
            Self::InvalidParams { field, .. } => Some(field),
            Self::Server(error) => error.body.field.as_deref(),
            _ => None,
        }
    }

    /// The HTTP status of the REST binding.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Parse(_) | Self::InvalidRequest(_) | Self::InvalidParams { .. } => StatusCode::BAD_REQUEST,
            Self::MethodNotFound(_) | Self::TaskNotFound(_) => StatusCode::NOT_FOUND,
            Self::TaskNotCancelable(_)
            | Self::Unsupported(_)
            | Self::ContentTypeNotSupported(_)
            | Self::NoExtendedCard
            | Self::VersionNotSupported(_) => StatusCode::BAD_REQUEST,
            Self::Server(error) => error.status,
        }
    }

    /// The error's details: an `ErrorInfo` for A2A's own errors, a
    /// `BadRequest` naming the field for a malformed one.
    fn details(&self) -> Vec<Value> {
        let mut details = Vec::new();
        if let Some(field) = self.field_name() {
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": self.to_string()}],
            }));
        }
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.reason(),
            "domain": DOMAIN,
        }));
        details
    }

    /// The JSON-RPC error object.
    pub fn to_jsonrpc(&self) -> Value {
        let mut error = json!({"code": self.code(), "message": self.to_string()});
        let details = self.details();
        if !details.is_empty() {
            error["data"] = Value::Array(details);
        }
        error
    }

    /// The gRPC status the error stands for in `google.rpc.Status`.
    fn grpc_status(&self) -> &'static str {
        match self {
            Self::Parse(_) | Self::InvalidRequest(_) | Self::InvalidParams { .. } => "INVALID_ARGUMENT",
            Self::ContentTypeNotSupported(_) => "INVALID_ARGUMENT",
            Self::MethodNotFound(_) | Self::TaskNotFound(_) => "NOT_FOUND",
            Self::TaskNotCancelable(_) | Self::Unsupported(_) | Self::NoExtendedCard | Self::VersionNotSupported(_) => {
                "FAILED_PRECONDITION"
            }
            Self::Server(error) => match error.status.as_u16() {
                401 => "UNAUTHENTICATED",
                404 => "NOT_FOUND",
                409 => "FAILED_PRECONDITION",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                400..=499 => "INVALID_ARGUMENT",
                _ => "INTERNAL",
            },
        }
    }

    /// The REST error body (`google.rpc.Status` in JSON).
    pub fn to_rest(&self) -> Value {
        let status = self.status();
        json!({"error": {
            "code": status.as_u16(),
            "status": self.grpc_status(),
            "message": self.to_string(),
            "details": self.details(),
        }})
    }
}

impl From<ApiError> for A2aError {
    fn from(error: ApiError) -> Self {
        Self::Server(error)
    }
}

impl From<concierge::Error> for A2aError {
    fn from(error: concierge::Error) -> Self {
        Self::Server(ApiError::from(error))
    }
}

/// The REST binding's answer for an error.
impl IntoResponse for A2aError {
    fn into_response(self) -> Response {
        let retry = match self.status() {
            StatusCode::TOO_MANY_REQUESTS => Some("1"),
            StatusCode::SERVICE_UNAVAILABLE => Some("5"),
            _ => None,
        };
        let mut response = (self.status(), Json(self.to_rest())).into_response();
        if let Some(seconds) = retry {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
        }
        response
    }
}
