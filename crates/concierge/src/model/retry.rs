//! Retries with exponential backoff and jitter, within the call's time budget.

use std::time::Duration;

use concierge_core::{ModelReply, ModelRequest};
use tokio::time::Instant;

use super::{Model, ModelContext, ModelError, ModelErrorKind, human_duration};

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
    /// One attempt, no retry: for an engine that retries by itself (a
    /// Temporal activity, for instance). The model's time budget still holds.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

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

/// Calls `model`, retrying retryable failures (timeouts, refused or dropped
/// connections, 429, 5xx, streams cut short, empty answers) with backoff;
/// other failures return at once. The whole call, attempts and waits
/// together, stays within the model's [`Model::call_budget`]: a wait that
/// would cross it is not started, and an attempt still running there is
/// stopped. The error of a retried call says how many attempts it made.
pub async fn complete_with_retry(
    model: &dyn Model,
    request: &ModelRequest,
    cx: &ModelContext,
    policy: &RetryPolicy,
) -> Result<ModelReply, ModelError> {
    let start = Instant::now();
    let budget = model.call_budget();
    let deadline = budget.map(|budget| start + budget);
    let mut attempt = 1;
    loop {
        let result = match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, model.complete(request, cx)).await {
                Ok(result) => result,
                Err(_) => {
                    let budget = human_duration(budget.unwrap_or_default());
                    let tries = if attempt == 1 {
                        "1 attempt".to_string()
                    } else {
                        format!("{attempt} attempts")
                    };
                    return Err(ModelError::new(
                        ModelErrorKind::Timeout,
                        model.name(),
                        format!("did not answer within {budget}, the budget for the whole call ({tries})"),
                    ));
                }
            },
            None => model.complete(request, cx).await,
        };
        match result {
            Ok(reply) => return Ok(reply),
            Err(error) if error.is_retryable() && attempt < policy.max_attempts => {
                let delay = policy.delay(attempt, &error);
                if deadline.is_some_and(|deadline| Instant::now() + delay >= deadline) {
                    return Err(with_attempts(error, attempt, start));
                }
                tracing::warn!(model = %error.model, attempt, ?delay, error = %error.message, "model call failed; retrying");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            Err(error) => return Err(with_attempts(error, attempt, start)),
        }
    }
}

/// Adds "(3 attempts over 300 s)" to the last error of a retried call.
fn with_attempts(mut error: ModelError, attempts: u32, start: Instant) -> ModelError {
    if attempts > 1 {
        error.message = format!(
            "{} ({attempts} attempts over {})",
            error.message,
            human_duration(start.elapsed())
        );
    }
    error
}
