//! Telling other systems what happened: a run finished, needs the person,
//! failed; a schedule fired.
//!
//! A [`Webhook`] is a URL a tenant registers with the [`WebhookEvent`]s it
//! wants. When one happens, the runtime puts a delivery in its database
//! (an outbox) and posts it from there: signed the way the Standard
//! Webhooks specification says (headers `webhook-id`, `webhook-timestamp`
//! and `webhook-signature`, an HMAC-SHA256 over `id.timestamp.body` with
//! the webhook's secret, see [`sign`] and [`verify`]), retried with backoff
//! until the receiver answers 2xx, at least once. A receiver deduplicates
//! on the event id (the same for every retry, and for the same event found
//! again after a crash).
//!
//! Runs are followed through the engine's event stream, so webhooks work
//! the same on every engine, and survive a crash of the process that
//! delivers them: another process on the database takes over within a
//! lease.
//!
//! ```
//! use concierge::webhook::{NewWebhook, WebhookEvent, WebhookStore, sign, verify};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), concierge::webhook::WebhookError> {
//! let store = WebhookStore::in_memory()?;
//! let new = NewWebhook::new(Some("acme"), "https://example.com/hooks", vec![WebhookEvent::RunFinished])?;
//! let created = store.add(new).await?;
//! assert!(created.secret.starts_with("whsec_"));
//! let signature = sign(&created.secret, "evt_1", 1_767_000_000, b"{}")?;
//! assert!(verify(&created.secret, "evt_1", 1_767_000_000, b"{}", &signature));
//! # Ok(()) }
//! ```

mod push;
pub(crate) mod resolve;
mod sign;
mod store;

use concierge_core::{RunStatus, Timestamp};
use serde::{Deserialize, Serialize};

pub use push::{NewPushConfig, PushAuth, PushConfig};
pub(crate) use resolve::PublicOnly;
pub use sign::{sign, verify};
pub use store::WebhookStore;
pub(crate) use store::{Attempt, Due, Outgoing, WEBHOOK_TABLES, Watch};

/// The longest webhook URL, in bytes.
pub const MAX_WEBHOOK_URL_BYTES: usize = 2_048;

/// What a webhook is told about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum WebhookEvent {
    /// A run finished with an answer (or was cancelled).
    #[serde(rename = "run.finished")]
    RunFinished,
    /// A run waits for the person: a question, a confirmation, a choice.
    #[serde(rename = "run.needs_input")]
    RunNeedsInput,
    /// A run failed.
    #[serde(rename = "run.failed")]
    RunFailed,
    /// A schedule started its run.
    #[serde(rename = "schedule.fired")]
    ScheduleFired,
}

impl WebhookEvent {
    /// Every event, in the order they are documented.
    pub const ALL: [WebhookEvent; 4] = [
        WebhookEvent::RunFinished,
        WebhookEvent::RunNeedsInput,
        WebhookEvent::RunFailed,
        WebhookEvent::ScheduleFired,
    ];

    /// Its name on the wire (`run.finished`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookEvent::RunFinished => "run.finished",
            WebhookEvent::RunNeedsInput => "run.needs_input",
            WebhookEvent::RunFailed => "run.failed",
            WebhookEvent::ScheduleFired => "schedule.fired",
        }
    }

    /// The event its wire name names.
    pub fn parse(name: &str) -> Result<Self, WebhookError> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == name)
            .ok_or_else(|| WebhookError::UnknownEvent(name.to_owned()))
    }

    /// The event a run that stopped with `status` is.
    pub fn of_status(status: RunStatus) -> Self {
        match status {
            RunStatus::Completed | RunStatus::Cancelled | RunStatus::Blocked => WebhookEvent::RunFinished,
            RunStatus::NeedsInput
            | RunStatus::AwaitingConfirmation
            | RunStatus::AwaitingChoice
            | RunStatus::AwaitingInput => WebhookEvent::RunNeedsInput,
            RunStatus::Failed => WebhookEvent::RunFailed,
        }
    }
}

/// Events in words: "run.finished and run.failed", "every event".
pub fn show_events(events: &[WebhookEvent]) -> String {
    if WebhookEvent::ALL.iter().all(|e| events.contains(e)) {
        return "every event".into();
    }
    let names: Vec<&str> = events.iter().map(|e| e.as_str()).collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "nothing".into(),
    }
}

impl std::fmt::Display for WebhookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A webhook to register.
#[derive(Clone, Debug, PartialEq)]
pub struct NewWebhook {
    /// The tenant whose runs it hears about (`None`: a runtime without tenants).
    pub tenant: Option<String>,
    /// Where deliveries are posted (`http` or `https`).
    pub url: String,
    /// What it is told about (at least one).
    pub events: Vec<WebhookEvent>,
    /// What it is for, in words.
    pub description: Option<String>,
}

impl NewWebhook {
    /// A webhook of `tenant` at `url` for `events`, after checking both.
    pub fn new(tenant: Option<&str>, url: impl Into<String>, events: Vec<WebhookEvent>) -> Result<Self, WebhookError> {
        let url = url.into();
        check_url(&url)?;
        if events.is_empty() {
            return Err(WebhookError::NoEvents);
        }
        Ok(Self {
            tenant: tenant.map(str::to_owned),
            url,
            events,
            description: None,
        })
    }

    /// What it is for, in words.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Checks that `url` is an absolute `http` or `https` URL of a sensible length.
pub fn check_url(url: &str) -> Result<reqwest::Url, WebhookError> {
    if url.len() > MAX_WEBHOOK_URL_BYTES {
        return Err(WebhookError::BadUrl {
            url: url.chars().take(60).collect::<String>() + "…",
            problem: format!("it is longer than {MAX_WEBHOOK_URL_BYTES} bytes"),
        });
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| WebhookError::BadUrl {
        url: url.to_owned(),
        problem: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(WebhookError::BadUrl {
            url: url.to_owned(),
            problem: "it must start with http:// or https:// and name a host".into(),
        });
    }
    Ok(parsed)
}

/// A registered webhook (its secret is given once, when it is added).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Webhook {
    /// Its id (random), to change or delete it by.
    pub id: String,
    /// The tenant whose runs it hears about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Where deliveries are posted.
    pub url: String,
    /// What it is told about.
    pub events: Vec<WebhookEvent>,
    /// What it is for, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether deliveries are held (they wait, and go when it is resumed).
    pub paused: bool,
    /// When it was added, in milliseconds since the Unix epoch.
    pub created_at: Timestamp,
}

/// A webhook just added, with the secret its deliveries are signed with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CreatedWebhook {
    /// The webhook.
    #[serde(flatten)]
    pub webhook: Webhook,
    /// The signing secret (`whsec_` and base64): shown only now.
    pub secret: String,
}

/// Where one delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Not delivered yet: it goes (again) at `next_at`.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Every attempt failed; no more are made.
    GaveUp,
}

/// One event on its way to one webhook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    /// The event's id (the `webhook-id` header; the same on every attempt).
    pub event_id: String,
    /// What happened.
    pub event: WebhookEvent,
    /// Where it stands.
    pub state: DeliveryState,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due (pending only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_at: Option<Timestamp>,
    /// When the receiver took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<Timestamp>,
    /// Why the last attempt failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the event happened.
    pub created_at: Timestamp,
    /// The body posted.
    pub body: serde_json::Value,
}

/// What went wrong with a webhook.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The URL is not one deliveries can go to.
    #[error("'{url}' is not a URL a webhook can post to: {problem}")]
    BadUrl {
        /// The URL (cut short when very long).
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The URL points inside the deployment's network, and the deployment
    /// posts only to public addresses.
    #[error(
        "'{0}' points at a loopback, private or link-local address; this deployment posts webhooks only to \
         public addresses (its operator can allow others with `webhooks_to_private_addresses`)"
    )]
    NotPublic(String),
    /// No events named.
    #[error("a webhook needs at least one event: run.finished, run.needs_input, run.failed or schedule.fired")]
    NoEvents,
    /// An event name that is not one.
    #[error("'{0}' is not a webhook event: use run.finished, run.needs_input, run.failed or schedule.fired")]
    UnknownEvent(String),
    /// A secret that is not `whsec_` and base64.
    #[error("a webhook secret is 'whsec_' followed by base64; this one is not")]
    BadSecret,
    /// The store failed.
    #[error("the webhook store failed: {0}")]
    Storage(String),
}

impl From<rusqlite::Error> for WebhookError {
    fn from(error: rusqlite::Error) -> Self {
        WebhookError::Storage(error.to_string())
    }
}

/// Delivery counts since this process started, for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WebhookStats {
    /// Deliveries the receiver took (2xx).
    pub delivered: u64,
    /// Attempts that failed (the delivery is retried, unless it gave up).
    pub failed_attempts: u64,
    /// Deliveries given up after their last attempt.
    pub gave_up: u64,
    /// Events put in the outbox (one per webhook that wants it).
    pub enqueued: u64,
}
