//! A cap on the runs one tenant may have in progress at once: past it a new
//! run is refused with 429 (and `Retry-After`); nothing is queued.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::StatusCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::auth::Caller;
use super::error::ApiError;

/// The default cap per tenant.
pub const DEFAULT_MAX_RUNS_PER_TENANT: usize = 16;

/// Runs in progress per tenant, each holding a permit until its run stops.
#[derive(Clone, Debug)]
pub struct RunLimiter {
    max: usize,
    tenants: Arc<Mutex<HashMap<Option<String>, Arc<Semaphore>>>>,
}

impl Default for RunLimiter {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_RUNS_PER_TENANT)
    }
}

/// A run's place under its tenant's cap; dropping it frees the place.
#[derive(Debug)]
pub struct RunPermit(#[allow(dead_code)] OwnedSemaphorePermit);

impl RunLimiter {
    /// At most `max` runs in progress per tenant (at least one).
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            tenants: Arc::default(),
        }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// A place for one more run of `caller`'s tenant, or 429.
    pub fn permit(&self, caller: &Caller) -> Result<RunPermit, ApiError> {
        let semaphore = {
            let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
            tenants
                .entry(caller.tenant.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.max)))
                .clone()
        };
        semaphore.try_acquire_owned().map(RunPermit).map_err(|_| {
            let who = match &caller.tenant {
                Some(tenant) => format!("tenant {tenant:?} has"),
                None => "this server has".to_string(),
            };
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "{who} {} runs in progress, the most allowed at once; wait for one to finish and try again",
                    self.max
                ),
            )
        })
    }
}
