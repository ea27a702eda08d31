//! Session and run ids: those a client chooses, which every front door (the
//! HTTP API, AG-UI, the OpenAI-compatible endpoint) checks the same way, and
//! those the server draws.

use axum::http::StatusCode;

use super::error::ApiError;

/// The longest session or run id a client may choose.
pub const MAX_ID_LEN: usize = 128;

/// What an id a client chooses may be, in words (for error messages).
pub const ID_RULE: &str = "1 to 128 letters, digits, '-', '_' or '.'";

/// Whether `id` is an id a client may choose: 1 to [`MAX_ID_LEN`] letters,
/// digits, `-`, `_` or `.` (so it is safe in a URL, a header and a log).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `<prefix>-` and 128 random bits in hex: an id the server chooses, that
/// nobody can guess.
pub fn random_id(prefix: &str) -> Result<String, ApiError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the server could not draw a random id ({error}); try again"),
        )
    })?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{prefix}-{hex}"))
}
