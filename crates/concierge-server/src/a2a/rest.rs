//! The HTTP+JSON/REST binding, under `.../rest`: `POST /message:send`,
//! `POST /message:stream`, `GET /tasks`, `GET /tasks/{id}`,
//! `POST /tasks/{id}:cancel`, `POST` (or `GET`) `/tasks/{id}:subscribe`,
//! `POST|GET /tasks/{id}/pushNotificationConfigs`, `GET|DELETE
//! /tasks/{id}/pushNotificationConfigs/{config}`.
//! Errors are `google.rpc.Status` with A2A's HTTP statuses (a malformed
//! request is a 400 naming the field; another tenant's task a 404).

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::error::A2aError;
use super::ops::{self, Ctx};
use super::params::read;
use super::{service, sse};

/// A request body as JSON (empty: `{}`).
fn body_json(body: &Bytes) -> Result<Value, A2aError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_slice(body).map_err(|why| A2aError::field("body", format!("the body is not JSON ({why})")))
}

/// Query parameters as the JSON of a request: numbers and booleans where
/// the request has them, strings otherwise.
fn query_json(query: &HashMap<String, String>) -> Result<Value, A2aError> {
    let mut object = Map::new();
    for (key, text) in query {
        let value = match key.as_str() {
            "pageSize" | "historyLength" => Value::from(
                text.parse::<i64>()
                    .map_err(|_| A2aError::field(key.as_str(), format!("{text:?} is not a whole number")))?,
            ),
            "includeArtifacts" => Value::from(match text.as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(A2aError::field(key.as_str(), "send true or false")),
            }),
            "A2A-Version" => continue,
            _ => Value::from(text.clone()),
        };
        object.insert(key.clone(), value);
    }
    Ok(Value::Object(object))
}

/// `POST /message:send`.
pub async fn send(ctx: Ctx<'_>, headers: &HeaderMap, body: Bytes) -> Response {
    answer(async {
        super::check_version(headers)?;
        let request = read(body_json(&body)?, "")?;
        Ok(Json(service::send(ctx, request).await?).into_response())
    })
    .await
}

/// `POST /message:stream`.
pub async fn stream(ctx: Ctx<'_>, headers: &HeaderMap, body: Bytes) -> Response {
    answer(async {
        super::check_version(headers)?;
        let request = read(body_json(&body)?, "")?;
        Ok(sse::respond(service::send_streaming(ctx, request).await?, None))
    })
    .await
}

/// `GET /tasks`.
pub async fn list(ctx: Ctx<'_>, headers: &HeaderMap, query: &HashMap<String, String>) -> Response {
    answer(async {
        super::check_version(headers)?;
        let request = read(query_json(query)?, "")?;
        Ok(Json(ops::list(ctx, request).await?).into_response())
    })
    .await
}

/// `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, `POST|GET /tasks/{id}:subscribe`.
pub async fn task(
    ctx: Ctx<'_>,
    method: &Method,
    headers: &HeaderMap,
    path: &str,
    query: &HashMap<String, String>,
) -> Response {
    answer(async {
        super::check_version(headers)?;
        let (id, verb) = match path.rsplit_once(':') {
            Some((id, verb)) => (id, Some(verb)),
            None => (path, None),
        };
        match (method, verb) {
            (&Method::GET, None) => {
                let mut params = query_json(query)?;
                params["id"] = Value::from(id);
                let request = read(params, "")?;
                Ok(Json(ops::get(ctx, request).await?).into_response())
            }
            (&Method::POST, Some("cancel")) => {
                let request = a2a::CancelTaskRequest {
                    id: id.to_string(),
                    metadata: None,
                    tenant: None,
                };
                Ok(Json(ops::cancel(ctx, request).await?).into_response())
            }
            (&Method::POST | &Method::GET, Some("subscribe")) => {
                let after = super::last_event_id(headers)?;
                let items = service::subscribe(ctx, id, after.as_ref().map(|c| (c.clone(), "Last-Event-ID"))).await?;
                Ok(sse::respond(items, None))
            }
            (_, Some(verb)) => Err(A2aError::Unsupported(format!(
                "there is no {method} .../tasks/{{id}}:{verb}; a task takes GET, POST :cancel and POST :subscribe"
            ))),
            (_, None) => Err(A2aError::Unsupported(format!(
                "a task takes GET, not {method}; cancel it with POST .../tasks/{{id}}:cancel"
            ))),
        }
    })
    .await
}

/// `POST|GET /tasks/{id}/pushNotificationConfigs` (set one, list them) and
/// `GET|DELETE /tasks/{id}/pushNotificationConfigs/{config}`.
pub async fn push_configs(
    ctx: Ctx<'_>,
    method: &Method,
    headers: &HeaderMap,
    task: &str,
    config: Option<&str>,
    body: Bytes,
) -> Response {
    answer(async {
        super::check_version(headers)?;
        let named = || {
            let mut params = serde_json::json!({"taskId": task});
            if let Some(config) = config {
                params["id"] = Value::from(config);
            }
            params
        };
        match (method, config) {
            (&Method::POST, None) => {
                let mut params = body_json(&body)?;
                if let Value::Object(object) = &mut params {
                    object.insert("taskId".into(), Value::from(task));
                }
                Ok(Json(super::push::create(ctx, params).await?).into_response())
            }
            (&Method::GET, None) => Ok(Json(super::push::list(ctx, named()).await?).into_response()),
            (&Method::GET, Some(_)) => Ok(Json(super::push::get(ctx, named()).await?).into_response()),
            (&Method::DELETE, Some(_)) => {
                super::push::delete(ctx, named()).await?;
                Ok(Json(Value::Object(Map::new())).into_response())
            }
            _ => Err(A2aError::Unsupported(format!(
                "{method} is not taken here: set a config with POST .../pushNotificationConfigs, list them with GET, \
                 read or delete one with GET or DELETE .../pushNotificationConfigs/{{config}}"
            ))),
        }
    })
    .await
}

/// `GET /extendedAgentCard`.
pub async fn extended_card() -> Response {
    A2aError::NoExtendedCard.into_response()
}

/// A handler's answer, or its error the REST way.
async fn answer(work: impl std::future::Future<Output = Result<Response, A2aError>>) -> Response {
    match work.await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}
