//! The web chat, served by the binary itself: the page at `/` and its
//! files at `/assets/...`, all embedded (see [`assets`]). The page talks
//! only to the HTTP API under `/api/v1` (the catalogue, sessions, messages,
//! confirmations, choices, and each session's resumable event stream).
//!
//! Every response carries an `ETag` and `Cache-Control: no-cache`: a browser
//! keeps the files but asks each time whether they changed (a `304` when
//! they did not), so a new binary's page is never mixed with an old one's
//! scripts. The page is sent with a Content-Security-Policy that lets it
//! load nothing but its own files and talk to nothing but its own server.

pub mod assets;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use assets::Asset;

/// What the page may load and where it may connect: its own origin only.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The routes of the web chat: `/` and `/assets/{name}`. Merge them into the
/// API's router.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route("/", get(index)).route("/assets/{name}", get(asset))
}

async fn index(headers: HeaderMap) -> Response {
    let mut response = serve(&assets::INDEX, &headers);
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    response
}

async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match assets::find(&name) {
        Some(asset) => serve(asset, &headers),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("there is no file /assets/{name} in the web chat"),
        )
            .into_response(),
    }
}

/// The asset, or `304 Not Modified` when the browser has this version.
fn serve(asset: &'static Asset, headers: &HeaderMap) -> Response {
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == asset.etag || t.trim() == "*"));
    let common = [
        (header::ETAG, asset.etag),
        (header::CACHE_CONTROL, "no-cache"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        StatusCode::OK,
        common,
        [(header::CONTENT_TYPE, asset.content_type)],
        asset.bytes,
    )
        .into_response()
}
