//! Who is calling: API tokens from the configuration (stored as SHA-256
//! hashes), each bound to a tenant and a user.
//!
//! A request sends its token as `Authorization: Bearer <token>`; an event
//! stream opened by a browser's `EventSource` (which cannot set headers)
//! may send it as the `access_token` query parameter instead
//! (`GET /api/v1/sessions/{id}/events` only: a URL ends up in logs and
//! histories, so anywhere else a token in it is refused). Without
//! tokens configured every request is the same tenant-less caller, and the
//! server listens on loopback only.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::TokenConfig;
use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use concierge::{RunOptions, SessionId};
use sha2::{Digest, Sha256};

use super::error::ApiError;

/// The prefix of a stored token hash.
const HASH_PREFIX: &str = "sha256:";

/// The query parameter an event stream may carry its token in.
pub const ACCESS_TOKEN_PARAM: &str = "access_token";

/// Whom a request speaks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// The tenant whose sessions the request sees (`None` without tokens).
    pub tenant: Option<String>,
    /// The user its runs are for.
    pub user: Option<String>,
}

impl Caller {
    /// Run options for the session the caller names `id` (in its tenant's
    /// id space, see [`Caller::session_id`]), with its tenant and user.
    pub fn options(&self, id: &str) -> RunOptions {
        self.options_for(self.session_id(id))
    }

    /// Run options for `session` (an id already in the caller's id space),
    /// with the caller's tenant and user.
    pub fn options_for(&self, session: concierge::SessionId) -> RunOptions {
        let mut options = RunOptions::new().session_id(session);
        if let Some(tenant) = &self.tenant {
            options = options.tenant(tenant.clone());
        }
        if let Some(user) = &self.user {
            options = options.user(user.clone());
        }
        options
    }

    /// Whether a session of `tenant` is this caller's.
    pub fn owns(&self, tenant: Option<&str>) -> bool {
        self.tenant.as_deref() == tenant
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Caller>().cloned().unwrap_or_default())
    }
}

/// A token entry of the configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The hash is not `sha256:` and 64 hex digits.
    #[error(
        "the API token for tenant {tenant:?} and user {user:?} has a malformed hash: expected \"sha256:\" and 64 hex digits (make one with `concierge token new`)"
    )]
    MalformedHash {
        /// The token's tenant.
        tenant: String,
        /// The token's user.
        user: String,
    },
    /// A tenant or user is empty.
    #[error("an API token has an empty tenant or user; give both")]
    Empty,
    /// A tenant's name would make its sessions' ids ambiguous.
    #[error("an API token's tenant cannot be used: {0}")]
    Tenant(String),
    /// Two entries have the same hash.
    #[error("two API tokens have the same hash; each token must be different")]
    Duplicate,
}

/// The configured tokens, by hash.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    by_hash: Arc<HashMap<String, Caller>>,
}

impl Tokens {
    /// The tokens of `[[server.tokens]]`.
    pub fn from_config(entries: &[TokenConfig]) -> Result<Self, TokenError> {
        let mut by_hash = HashMap::new();
        for entry in entries {
            let hex = entry
                .hash
                .strip_prefix(HASH_PREFIX)
                .filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
                .ok_or_else(|| TokenError::MalformedHash {
                    tenant: entry.tenant.clone(),
                    user: entry.user.clone(),
                })?;
            if entry.tenant.trim().is_empty() || entry.user.trim().is_empty() {
                return Err(TokenError::Empty);
            }
            SessionId::check_tenant(&entry.tenant).map_err(TokenError::Tenant)?;
            let caller = Caller {
                tenant: Some(entry.tenant.clone()),
                user: Some(entry.user.clone()),
            };
            if by_hash.insert(hex.to_ascii_lowercase(), caller).is_some() {
                return Err(TokenError::Duplicate);
            }
        }
        Ok(Self {
            by_hash: Arc::new(by_hash),
        })
    }

    /// Whether no token is configured (the server is then open on loopback).
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// The caller a token speaks for.
    pub fn caller(&self, token: &str) -> Option<Caller> {
        self.by_hash.get(&hex_digest(token)).cloned()
    }

    /// A new random token and the hash to put in the configuration.
    pub fn generate() -> Result<(String, String), getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        let token = format!("cx_{}", hex(&bytes));
        let hash = format!("{HASH_PREFIX}{}", hex_digest(&token));
        Ok((token, hash))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_digest(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Middleware: with tokens configured, a request without a valid one is
/// refused with 401; a valid one puts its [`Caller`] on the request. A
/// token in the query string (`?access_token=`) is taken only on an event
/// stream (`GET .../sessions/{id}/events`); on any other request it is a 401.
pub async fn authenticate(State(tokens): State<Tokens>, mut req: Request, next: Next) -> Response {
    if tokens.is_empty() {
        return next.run(req).await;
    }
    let in_query = query_token(&req);
    if in_query.is_some() && !event_stream(&req) {
        return unauthorized_field(
            ACCESS_TOKEN_PARAM,
            "an API token in the URL (?access_token=) is taken only on a session's event stream (GET /api/v1/sessions/{id}/events); send it as Authorization: Bearer <token>",
        );
    }
    let token = bearer(&req).or(in_query);
    let Some(token) = token else {
        return unauthorized("this server needs an API token: send it as Authorization: Bearer <token>");
    };
    match tokens.caller(&token) {
        Some(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        None => unauthorized("the API token is not valid; ask the server's operator for one"),
    }
}

/// Whether `req` opens a session's event stream, the one request a token
/// may come in the query string of.
fn event_stream(req: &Request) -> bool {
    req.method() == Method::GET
        && req
            .extensions()
            .get::<MatchedPath>()
            .is_some_and(|path| path.as_str().ends_with("/sessions/{id}/events"))
}

fn bearer(req: &Request) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string())
}

fn query_token(req: &Request) -> Option<String> {
    let query = req.uri().query()?;
    form_urlencoded_pairs(query)
        .find(|(k, _)| k == ACCESS_TOKEN_PARAM)
        .map(|(_, v)| v)
}

/// The pairs of a query string (tokens are URL-safe, so no decoding is needed
/// beyond splitting).
fn form_urlencoded_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    query.split('&').filter_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        Some((k.to_string(), v.to_string()))
    })
}

fn unauthorized(sentence: &str) -> Response {
    unauthorized_field("Authorization", sentence)
}

fn unauthorized_field(field: &str, sentence: &str) -> Response {
    let mut response = ApiError::field(StatusCode::UNAUTHORIZED, field, sentence).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_generated_token_matches_its_hash_and_no_other_token_does() {
        let (token, hash) = Tokens::generate().unwrap();
        let tokens = Tokens::from_config(&[TokenConfig {
            hash,
            tenant: "acme".into(),
            user: "jordan".into(),
        }])
        .unwrap();
        let caller = tokens.caller(&token).unwrap();
        assert_eq!(caller.tenant.as_deref(), Some("acme"));
        assert_eq!(caller.user.as_deref(), Some("jordan"));
        assert!(tokens.caller("cx_guess").is_none());
        assert!(tokens.caller(&token[..token.len() - 1]).is_none());
    }

    #[test]
    fn a_malformed_hash_says_which_token() {
        let error = Tokens::from_config(&[TokenConfig {
            hash: "md5:abc".into(),
            tenant: "acme".into(),
            user: "jordan".into(),
        }])
        .unwrap_err();
        assert!(error.to_string().contains("\"acme\""), "{error}");
    }

    #[test]
    fn a_tenant_named_like_a_path_or_a_child_run_is_refused() {
        let (_, hash) = Tokens::generate().unwrap();
        for tenant in ["org:acme", "acme/eu"] {
            let error = Tokens::from_config(&[TokenConfig {
                hash: hash.clone(),
                tenant: tenant.into(),
                user: "jordan".into(),
            }])
            .unwrap_err();
            assert!(error.to_string().contains(&format!("{tenant:?}")), "{error}");
        }
    }
}
