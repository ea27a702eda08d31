//! The JSON-RPC 2.0 binding: `POST .../jsonrpc` with `{"jsonrpc": "2.0",
//! "id", "method", "params"}`. Answers are JSON-RPC responses (HTTP 200,
//! errors in `error` with A2A's codes); SendStreamingMessage and
//! SubscribeToTask answer with Server-Sent Events whose `data` is one
//! JSON-RPC response each. A2A 0.3's method names (`message/send`,
//! `tasks/get`...) are taken as aliases of 1.0's (with 1.0's params).

use axum::Json;
use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::error::A2aError;
use super::ops::{self, Ctx};
use super::params::read;
use super::service;
use super::sse;

/// A method of the binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    GetExtendedAgentCard,
    CreatePushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
}

impl Method {
    /// The method `name` names (1.0's, or 0.3's alias).
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "SendMessage" | "message/send" => Self::SendMessage,
            "SendStreamingMessage" | "message/stream" => Self::SendStreamingMessage,
            "GetTask" | "tasks/get" => Self::GetTask,
            "ListTasks" | "tasks/list" => Self::ListTasks,
            "CancelTask" | "tasks/cancel" => Self::CancelTask,
            "SubscribeToTask" | "tasks/resubscribe" => Self::SubscribeToTask,
            "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard" => Self::GetExtendedAgentCard,
            "CreateTaskPushNotificationConfig" | "tasks/pushNotificationConfig/set" => Self::CreatePushConfig,
            "GetTaskPushNotificationConfig" | "tasks/pushNotificationConfig/get" => Self::GetPushConfig,
            "ListTaskPushNotificationConfigs" | "tasks/pushNotificationConfig/list" => Self::ListPushConfigs,
            "DeleteTaskPushNotificationConfig" | "tasks/pushNotificationConfig/delete" => Self::DeletePushConfig,
            _ => return None,
        })
    }
}

/// A JSON-RPC error response.
fn error(id: &Value, error: &A2aError) -> Response {
    Json(json!({"jsonrpc": "2.0", "id": id, "error": error.to_jsonrpc()})).into_response()
}

/// A JSON-RPC result response.
fn result(id: &Value, result: impl serde::Serialize) -> Response {
    match serde_json::to_value(result) {
        Ok(value) => Json(json!({"jsonrpc": "2.0", "id": id, "result": value})).into_response(),
        Err(why) => error(
            id,
            &A2aError::Server(crate::ground::ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                format!("the answer could not be written: {why}"),
            )),
        ),
    }
}

/// Answers one JSON-RPC request.
pub async fn handle(ctx: Ctx<'_>, headers: &HeaderMap, body: Bytes) -> Response {
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(why) => {
            return error(
                &Value::Null,
                &A2aError::Parse(format!("the body is not JSON ({why}); send a JSON-RPC 2.0 request")),
            );
        }
    };
    let Value::Object(mut request) = value else {
        return error(
            &Value::Null,
            &A2aError::InvalidRequest("the body is not a JSON-RPC request object (batches are not taken)".to_string()),
        );
    };
    let id = match request.remove("id") {
        None => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id,
        Some(_) => {
            return error(
                &Value::Null,
                &A2aError::InvalidRequest("id: a request's id is a string or a number".to_string()),
            );
        }
    };
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return error(
            &id,
            &A2aError::InvalidRequest("jsonrpc: send \"jsonrpc\": \"2.0\"".to_string()),
        );
    }
    let Some(name) = request.get("method").and_then(Value::as_str).map(str::to_string) else {
        return error(
            &id,
            &A2aError::InvalidRequest("method: a request names its method".to_string()),
        );
    };
    let Some(method) = Method::named(&name) else {
        return error(&id, &A2aError::MethodNotFound(name));
    };
    let params = match request.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(params @ Value::Object(_)) => params,
        Some(_) => return error(&id, &A2aError::field("params", "the params are a JSON object")),
    };
    if let Err(refused) = super::check_version(headers) {
        return error(&id, &refused);
    }
    match call(ctx, headers, &id, method, params).await {
        Ok(response) => response,
        Err(refused) => error(&id, &refused),
    }
}

async fn call(
    ctx: Ctx<'_>,
    headers: &HeaderMap,
    id: &Value,
    method: Method,
    params: Value,
) -> Result<Response, A2aError> {
    Ok(match method {
        Method::SendMessage => result(id, service::send(ctx, read(params, "")?).await?),
        Method::SendStreamingMessage => {
            let items = service::send_streaming(ctx, read(params, "")?).await?;
            sse::respond(items, Some(id.clone()))
        }
        Method::GetTask => result(id, ops::get(ctx, read(params, "")?).await?),
        Method::ListTasks => result(id, ops::list(ctx, read(params, "")?).await?),
        Method::CancelTask => result(id, ops::cancel(ctx, read(params, "")?).await?),
        Method::SubscribeToTask => {
            let request: a2a::SubscribeToTaskRequest = read(params, "")?;
            let after = super::last_event_id(headers)?;
            let items =
                service::subscribe(ctx, &request.id, after.as_ref().map(|c| (c.clone(), "Last-Event-ID"))).await?;
            sse::respond(items, Some(id.clone()))
        }
        Method::GetExtendedAgentCard => return Err(A2aError::NoExtendedCard),
        Method::CreatePushConfig => result(id, super::push::create(ctx, params).await?),
        Method::GetPushConfig => result(id, super::push::get(ctx, params).await?),
        Method::ListPushConfigs => result(id, super::push::list(ctx, params).await?),
        Method::DeletePushConfig => {
            super::push::delete(ctx, params).await?;
            result(id, Value::Null)
        }
    })
}
