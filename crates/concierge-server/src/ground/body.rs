//! Request bodies: JSON read with the path of the field that does not fit,
//! so a malformed request is answered with the field and the reason. A
//! body must say it is JSON (`Content-Type: application/json`): a web page
//! can send `text/plain` to any server without asking, but not JSON.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// The default limit on a request body, in bytes.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

/// A JSON body of type `T`; a body that is not JSON, or not a `T`, is
/// refused with a 4xx naming the field (415 naming `Content-Type` when the
/// request does not say it is JSON).
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        json_content_type(req.headers())?;
        let bytes = Bytes::from_request(req, state).await.map_err(unreadable)?;
        parse(&bytes).map(JsonBody)
    }
}

/// An optional JSON body: none (or JSON `null`) means `None`. A body that
/// is there must be sent as JSON, as [`JsonBody`]'s.
#[derive(Debug)]
pub struct OptionalJsonBody<T>(pub Option<T>);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        json_content_type(req.headers())?;
        let bytes = Bytes::from_request(req, state).await.map_err(unreadable)?;
        parse_optional(&bytes).map(OptionalJsonBody)
    }
}

/// No body is `None`; anything else must be JSON (whitespace alone is not).
fn parse_optional<T: DeserializeOwned>(bytes: &[u8]) -> Result<Option<T>, ApiError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    parse::<Option<T>>(bytes)
}

/// Query parameters of type `T`; a malformed query string is refused with
/// a 400 naming the parameter (in JSON, as every error).
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match Query::<T>::try_from_uri(&parts.uri) {
            Ok(Query(value)) => Ok(QueryParams(value)),
            Err(rejection) => {
                let text = rejection.body_text();
                let detail = text
                    .strip_prefix("Failed to deserialize query string: ")
                    .unwrap_or(&text)
                    .to_string();
                // serde_path_to_error's "wait: provided string was not ...",
                // or serde's "duplicate field `wait`".
                let field = detail
                    .split_once(": ")
                    .map(|(field, _)| field.to_string())
                    .filter(|f| is_name(f))
                    .or_else(|| quoted(&detail).filter(|f| is_name(f)));
                let message = format!("the query string does not fit: {detail}");
                Err(match field {
                    Some(field) => ApiError::field(StatusCode::BAD_REQUEST, field, message),
                    None => ApiError::new(StatusCode::BAD_REQUEST, message),
                })
            }
        }
    }
}

fn is_name(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `headers` say the body is JSON: `application/json` or
/// `application/<x>+json`, with any parameters (`; charset=utf-8`). A
/// request without a `Content-Type` passes only without a body. Otherwise
/// 415, naming `Content-Type`.
pub fn json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    match headers.get(header::CONTENT_TYPE) {
        Some(value) => {
            let text = value.to_str().unwrap_or("\u{fffd}");
            let essence = text.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
            let json = essence == "application/json"
                || essence
                    .strip_prefix("application/")
                    .and_then(|sub| sub.strip_suffix("+json"))
                    .is_some_and(|sub| !sub.is_empty() && !sub.contains('/'));
            if json {
                Ok(())
            } else {
                Err(ApiError::field(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Content-Type",
                    format!(
                        "the body must be JSON, sent with Content-Type: application/json (this request says {text:?})"
                    ),
                ))
            }
        }
        None if may_have_body(headers) => Err(ApiError::field(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type",
            "the request has a body but no Content-Type; send it as JSON with Content-Type: application/json",
        )),
        None => Ok(()),
    }
}

/// Whether a request with `headers` may carry a body (a length over 0, or
/// a chunked one).
fn may_have_body(headers: &HeaderMap) -> bool {
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return true;
    }
    match headers.get(header::CONTENT_LENGTH) {
        Some(length) => length.to_str().ok().map(str::trim) != Some("0"),
        None => false,
    }
}

/// Whether `error`, or what caused it, is a request body that stopped arriving.
fn stalled(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cause = error.source();
    }
    false
}

fn unreadable(rejection: BytesRejection) -> ApiError {
    if stalled(&rejection) {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "the request body stopped arriving before it was complete; send it again, all at once",
        )
    } else if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
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
    // serde reads a struct from an array too (its fields in order); no body
    // of this API is an array.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the body is an array; send a JSON object",
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
        let array = parse::<Message>(br#"["hi", null]"#).unwrap_err();
        assert_eq!(array.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(parse::<Option<Message>>(b"null").unwrap().is_none());
        // An optional body: none at all is none; whitespace alone is not JSON.
        assert!(parse_optional::<Message>(b"").unwrap().is_none());
        assert_eq!(
            parse_optional::<Message>(b"\t").unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        assert!(parse_optional::<Message>(br#"{"text": "hi"}"#).unwrap().is_some());
    }

    #[test]
    fn a_body_must_say_it_is_json() {
        let with = |pairs: &[(&str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(
                    header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.parse().unwrap(),
                );
            }
            json_content_type(&headers)
        };
        assert!(with(&[("content-type", "application/json")]).is_ok());
        assert!(with(&[("content-type", "Application/JSON; charset=utf-8")]).is_ok());
        assert!(with(&[("content-type", "application/merge-patch+json")]).is_ok());
        assert!(with(&[]).is_ok());
        assert!(with(&[("content-length", "0")]).is_ok());
        let plain = with(&[("content-type", "text/plain;charset=UTF-8"), ("content-length", "12")]).unwrap_err();
        assert_eq!(plain.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(plain.body.field.as_deref(), Some("Content-Type"));
        assert!(with(&[("content-type", "application/+json")]).is_err());
        assert!(with(&[("content-length", "12")]).is_err());
        assert!(with(&[("transfer-encoding", "chunked")]).is_err());
    }
}
