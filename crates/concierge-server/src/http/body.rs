//! Request bodies: JSON read with the path of the field that does not fit,
//! so a malformed request is answered with the field and the reason.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A JSON body of type `T`; a body that is not JSON, or not a `T`, is
/// refused with a 4xx naming the field.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(unreadable)?;
        parse(&bytes).map(JsonBody)
    }
}

/// An optional JSON body: empty means `None`.
#[derive(Debug)]
pub struct OptionalJsonBody<T>(pub Option<T>);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(unreadable)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(None));
        }
        parse(&bytes).map(|v| OptionalJsonBody(Some(v)))
    }
}

fn unreadable(rejection: BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is over the size limit; send a smaller one",
        )
    } else {
        ApiError::new(
            rejection.status(),
            format!("the request body could not be read: {}", rejection.body_text()),
        )
    }
}

/// Reads `bytes` as a `T`, naming the field at fault on failure.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "the request has no body: send a JSON object",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let reason = without_position(&inner.to_string());
        match inner.classify() {
            serde_json::error::Category::Data => {
                let field = if path == "." {
                    // A missing or unknown field is named in the message only.
                    quoted(&reason).unwrap_or_default()
                } else {
                    path
                };
                if field.is_empty() {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!("the body does not fit: {reason}"),
                    )
                } else {
                    ApiError::field(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        field.clone(),
                        format!("field {field}: {reason}"),
                    )
                }
            }
            _ => ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("the body is not valid JSON ({reason}); send a JSON object"),
            ),
        }
    })
}

/// serde_json's message without its " at line L column C" tail.
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// The first name in backquotes (serde's "missing field `text`").
fn quoted(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Message {
        text: String,
        #[serde(default)]
        run_id: Option<String>,
    }

    #[test]
    fn each_malformed_body_names_its_field() {
        let missing = parse::<Message>(b"{}").unwrap_err();
        assert_eq!(missing.body.field.as_deref(), Some("text"));
        assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
        let wrong = parse::<Message>(br#"{"text": 5}"#).unwrap_err();
        assert_eq!(wrong.body.field.as_deref(), Some("text"));
        assert!(wrong.body.error.contains("expected a string"), "{}", wrong.body.error);
        let unknown = parse::<Message>(br#"{"text": "hi", "colour": 1}"#).unwrap_err();
        assert_eq!(unknown.body.field.as_deref(), Some("colour"));
        let broken = parse::<Message>(b"{\"text\": ").unwrap_err();
        assert_eq!(broken.status, StatusCode::BAD_REQUEST);
        assert_eq!(parse::<Message>(b"").unwrap_err().status, StatusCode::BAD_REQUEST);
    }
}
