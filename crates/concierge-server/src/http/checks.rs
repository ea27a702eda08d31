//! What every front door (the HTTP API, AG-UI, the OpenAI-compatible
//! endpoint) checks the same way: session and run ids a client chooses, and
//! the size of a message.

use concierge::Runtime;

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

/// `None` if `text` fits the runtime's message limit; otherwise the
/// sentence that says it does not ([`concierge::Error::MessageTooLarge`]'s).
pub fn oversized_message(rt: &Runtime, text: &str) -> Option<String> {
    rt.check_message_size(text.len()).err().map(|error| error.to_string())
}
