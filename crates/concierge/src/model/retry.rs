//! Retries with exponential backoff and jitter.

use std::time::Duration;

use concierge_core::{ModelReply, ModelRequest};

use super::{Model, ModelContext, ModelError, ModelErrorKind};

/// When and how often a failed model call is tried again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (1 means no retry).
    pub max_attempts: u32,
    /// The first delay; it doubles each time.
    pub base_delay: Duration,
    /// The longest delay (a `Retry-After` is honoured up to this too).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// The delay before attempt `attempt + 1` (attempt counts from 1).
    pub fn delay(&self, attempt: u32, error: &ModelError) -> Duration {
        if let ModelErrorKind::RateLimited {
            retry_after: Some(after),
        } = error.kind
        {
            return after.min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        // Full jitter on the upper half: between 50% and 100% of the delay.
        capped.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

/// Calls `model`, retrying retryable failures (connect errors, timeouts, 429,
/// 5xx) with backoff; other failures return at once.
pub async fn complete_with_retry(
    model: &dyn Model,
    request: &ModelRequest,
    cx: &ModelContext,
    policy: &RetryPolicy,
) -> Result<ModelReply, ModelError> {
    let mut attempt = 1;
    loop {
        match model.complete(request, cx).await {
            Ok(reply) => return Ok(reply),
            Err(error) if error.is_retryable() && attempt < policy.max_attempts => {
                let delay = policy.delay(attempt, &error);
                tracing::warn!(model = %error.model, attempt, ?delay, error = %error.message, "model call failed; retrying");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}
