//! Errors in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`,
//! so that OpenAI clients raise their usual exceptions (a 404 is
//! `openai.NotFoundError`, a 400 `openai.BadRequestError`).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::ground::ApiError;

/// The body of every error response of the OpenAI-compatible endpoints.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct OpenAiErrorBody {
    /// What went wrong.
    pub error: OpenAiErrorDetail,
}

/// What went wrong, as OpenAI says it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct OpenAiErrorDetail {
    /// What went wrong and what to do, in a sentence.
    pub message: String,
    /// The kind of error: `invalid_request_error` for a request at fault,
    /// `server_error` otherwise.
    #[serde(rename = "type")]
    pub kind: String,
    /// The request field at fault (`messages`, `messages[1].content`, `model`,
    /// or the `X-Concierge-Session` header), when one is.
    pub param: Option<String>,
    /// A short machine-readable code (`model_not_found`, `session_busy`, ...), when one applies.
    pub code: Option<String>,
}

/// An error the OpenAI-compatible endpoints answer with.
#[derive(Clone, Debug)]
pub struct OpenAiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body.
    pub body: OpenAiErrorBody,
}

impl OpenAiError {
    /// An error with this status and sentence.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        let kind = if status.is_server_error() {
            "server_error"
        } else {
            "invalid_request_error"
        };
        Self {
            status,
            body: OpenAiErrorBody {
                error: OpenAiErrorDetail {
                    message: message.into(),
                    kind: kind.into(),
                    param: None,
                    code: None,
                },
            },
        }
    }

    /// A 400 about one field of the request.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message).param(param)
    }

    /// 413 for a body over the server's size limit (in OpenAI's shape,
    /// where the HTTP API says it in its own).
    pub fn body_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over the limit of {limit} bytes; send a smaller one"),
        )
    }

    /// Names the field at fault.
    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.body.error.param = Some(param.into());
        self
    }

    /// Sets the machine-readable code.
    pub fn code(mut self, code: impl Into<String>) -> Self {
        self.body.error.code = Some(code.into());
        self
    }
}

impl From<ApiError> for OpenAiError {
    /// The HTTP API's error, said the OpenAI way. A malformed body (422 in
    /// the HTTP API) is a 400 here, as OpenAI answers it.
    fn from(error: ApiError) -> Self {
        let status = match error.status {
            StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
            other => other,
        };
        let mut out = Self::new(status, error.body.error);
        out.body.error.param = error.body.field;
        out
    }
}

impl From<concierge::Error> for OpenAiError {
    fn from(error: concierge::Error) -> Self {
        let code = match &error {
            concierge::Error::SessionBusy { .. }
            | concierge::Error::Rejected(concierge::core::StepError::RunInProgress { .. }) => Some("session_busy"),
            concierge::Error::Rejected(concierge::core::StepError::SessionEnded) => Some("session_ended"),
            concierge::Error::EngineUnavailable { .. } => Some("engine_unavailable"),
            concierge::Error::WorkerCatalogMismatch { .. } => Some("worker_catalog_mismatch"),
            _ => None,
        };
        let out = Self::from(ApiError::from(error));
        match code {
            Some(code) => out.code(code),
            None => out,
        }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let too_many = self.status == StatusCode::TOO_MANY_REQUESTS;
        let unavailable = self.status == StatusCode::SERVICE_UNAVAILABLE;
        let mut response = (self.status, Json(self.body)).into_response();
        if too_many {
            // A place frees up as soon as one of the tenant's runs stops.
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        } else if unavailable {
            // As the HTTP API says it: the engine may be back by then.
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(crate::ground::error::RETRY_UNAVAILABLE_SECS),
            );
        }
        response
    }
}
