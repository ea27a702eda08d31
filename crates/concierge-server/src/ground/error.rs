//! The API's errors: a status and a JSON body `{"error": sentence, "field": name}`
//! that says what was wrong and, for a malformed request, which field.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use concierge::Error;
use concierge::core::StepError;
use concierge::memory::MemoryError;
use concierge::schedule::ScheduleError;
use concierge::webhook::WebhookError;
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong and what to do, in a sentence.
    pub error: String,
    /// The request field at fault (a body field, a query parameter or a
    /// header), when one is.
    pub field: Option<String>,
}

/// An error the API answers with.
#[derive(Clone, Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body.
    pub body: ErrorBody,
}

impl ApiError {
    /// An error with this status and sentence, about no field in particular.
    pub fn new(status: StatusCode, error: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                error: error.into(),
                field: None,
            },
        }
    }

    /// An error about one field of the request.
    pub fn field(status: StatusCode, field: impl Into<String>, error: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                error: error.into(),
                field: Some(field.into()),
            },
        }
    }

    /// The same error, about `field` of the request.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.body.field = Some(field.into());
        self
    }

    /// 404 for a session this server does not know.
    pub fn unknown_session(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            format!("there is no session {id:?}; create one with POST /api/v1/sessions"),
        )
    }

    /// 413 for a body over the size limit.
    pub fn body_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over the limit of {limit} bytes; send a smaller one"),
        )
    }
}

/// The `Retry-After` of a 503 (the engine's server away, its workers
/// halted), in seconds.
pub(crate) const RETRY_UNAVAILABLE_SECS: &str = "5";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let too_many = self.status == StatusCode::TOO_MANY_REQUESTS;
        let unavailable = self.status == StatusCode::SERVICE_UNAVAILABLE;
        let mut response = (self.status, Json(self.body)).into_response();
        if too_many {
            // A place frees up as soon as one of the tenant's runs stops.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        } else if unavailable {
            // The engine (its server, its workers) may be back by then.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_UNAVAILABLE_SECS));
        }
        response
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        let text = error.to_string();
        match error {
            Error::SessionNotFound(id) => Self::unknown_session(id.as_str()),
            Error::AgentNotFound { .. } => Self::field(StatusCode::UNPROCESSABLE_ENTITY, "agent", text),
            Error::MissingSessionId => Self::field(StatusCode::BAD_REQUEST, "id", "a session id is required"),
            Error::InvalidSessionId(_) => Self::field(StatusCode::BAD_REQUEST, "id", text),
            Error::Rejected(step) => match step {
                StepError::ConfirmationMismatch { .. } => Self::field(StatusCode::CONFLICT, "fingerprint", text),
                StepError::AmendmentRefused { .. } => Self::field(StatusCode::UNPROCESSABLE_ENTITY, "arguments", text),
                StepError::UnknownAgent { .. } => Self::field(StatusCode::UNPROCESSABLE_ENTITY, "agent", text),
                StepError::NoUserMessage => Self::field(StatusCode::UNPROCESSABLE_ENTITY, "text", text),
                StepError::RunIdTaken { .. } => Self::field(StatusCode::CONFLICT, "run_id", text),
                _ => Self::new(StatusCode::CONFLICT, text),
            },
            Error::RunStartFailed(_) => Self::new(StatusCode::UNPROCESSABLE_ENTITY, text),
            Error::MessageTooLarge { .. } => Self::new(StatusCode::PAYLOAD_TOO_LARGE, text),
            Error::Memory(MemoryError::Empty | MemoryError::TooLong { .. }) => {
                Self::field(StatusCode::UNPROCESSABLE_ENTITY, "text", text)
            }
            Error::Schedule(schedule) => match schedule {
                ScheduleError::EmptyMessage | ScheduleError::MessageTooLong { .. } => {
                    Self::field(StatusCode::UNPROCESSABLE_ENTITY, "message", text)
                }
                ScheduleError::BadCron { .. } | ScheduleError::NeverDue(_) => {
                    Self::field(StatusCode::UNPROCESSABLE_ENTITY, "cron", text)
                }
                ScheduleError::BadTime(_) => Self::field(StatusCode::UNPROCESSABLE_ENTITY, "at", text),
                ScheduleError::Storage(_) => Self::new(StatusCode::INTERNAL_SERVER_ERROR, text),
            },
            Error::Webhook(webhook) => match webhook {
                WebhookError::Storage(_) => Self::new(StatusCode::INTERNAL_SERVER_ERROR, text),
                WebhookError::NoEvents | WebhookError::UnknownEvent(_) => {
                    Self::field(StatusCode::UNPROCESSABLE_ENTITY, "events", text)
                }
                WebhookError::BadUrl { .. } | WebhookError::NotPublic(_) | WebhookError::BadSecret => {
                    Self::field(StatusCode::UNPROCESSABLE_ENTITY, "url", text)
                }
            },
            Error::SessionBusy { .. } => Self::new(StatusCode::CONFLICT, text),
            Error::ReadOnly => Self::new(StatusCode::FORBIDDEN, text),
            Error::RunInterrupted
            | Error::EngineNotConfigured
            | Error::EngineHalted(_)
            | Error::EngineUnavailable { .. }
            | Error::WorkerCatalogMismatch { .. }
            | Error::ToolsUnavailable { .. }
            | Error::ResourceUnavailable { .. } => Self::new(StatusCode::SERVICE_UNAVAILABLE, text),
            _ => Self::new(StatusCode::INTERNAL_SERVER_ERROR, text),
        }
    }
}
