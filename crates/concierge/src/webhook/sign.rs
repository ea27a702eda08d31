//! Signatures as the Standard Webhooks specification gives them: HMAC-SHA256
//! with the secret's bytes over `id.timestamp.body`, sent as `v1,<base64>`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};

use super::WebhookError;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The prefix of a webhook secret.
pub(crate) const SECRET_PREFIX: &str = "whsec_";

/// A new random secret: `whsec_` and 32 random bytes in base64.
pub(crate) fn new_secret() -> Result<String, WebhookError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| WebhookError::Storage(format!("no randomness for a secret: {e}")))?;
    Ok(format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes)))
}

fn mac(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<HmacSha256, WebhookError> {
    let key = secret.strip_prefix(SECRET_PREFIX).ok_or(WebhookError::BadSecret)?;
    let key = STANDARD.decode(key).map_err(|_| WebhookError::BadSecret)?;
    let mut mac = HmacSha256::new_from_slice(&key).map_err(|_| WebhookError::BadSecret)?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(mac)
}

/// The `webhook-signature` header for a delivery: `v1,` and the base64 of
/// HMAC-SHA256(`secret`, `id.timestamp.body`); `timestamp` in seconds since
/// the Unix epoch.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String, WebhookError> {
    let tag = mac(secret, id, timestamp, body)?.finalize().into_bytes();
    Ok(format!("v1,{}", STANDARD.encode(tag)))
}

/// Whether `header` (one or more space-separated `v1,<base64>` signatures)
/// holds a valid signature of the delivery, compared in constant time. A
/// receiver also checks that `timestamp` is recent (say, within 5 minutes)
/// so that a captured delivery cannot be replayed later.
pub fn verify(secret: &str, id: &str, timestamp: i64, body: &[u8], header: &str) -> bool {
    header.split_whitespace().any(|one| {
        let Some(encoded) = one.strip_prefix("v1,") else {
            return false;
        };
        let Ok(tag) = STANDARD.decode(encoded) else {
            return false;
        };
        mac(secret, id, timestamp, body).is_ok_and(|m| m.verify_slice(&tag).is_ok())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The example of the Standard Webhooks specification's test vectors.
    #[test]
    fn the_specification_example_verifies() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = br#"{"test": 2432232314}"#;
        let signature = sign(secret, id, 1_614_265_330, body).unwrap();
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(verify(secret, id, 1_614_265_330, body, &signature));
        assert!(!verify(secret, id, 1_614_265_331, body, &signature));
        assert!(!verify(secret, id, 1_614_265_330, b"{}", &signature));
        assert!(verify(
            secret,
            id,
            1_614_265_330,
            body,
            &format!("v1,bm9wZQ== {signature}")
        ));
    }

    #[test]
    fn a_secret_without_its_prefix_is_refused() {
        assert!(matches!(sign("abc", "x", 1, b""), Err(WebhookError::BadSecret)));
        assert!(new_secret().unwrap().starts_with(SECRET_PREFIX));
    }
}
