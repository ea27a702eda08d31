//! Delivering webhooks: following the sessions whose runs a tenant's
//! webhooks want to hear about, putting each stop in the outbox, and
//! posting the outbox, signed, with retries. One process on a database does
//! it at a time (a lease); another takes over within the lease if it dies.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use concierge_core::{Event, EventId, EventKind, RunStatus, SessionId, Timestamp};
use futures::StreamExt;
use serde_json::json;
use sha2::Digest;

use super::{Inner, Runtime};
use crate::error::{Error, Result};
use crate::webhook::{
    Attempt, CreatedWebhook, Due, NewPushConfig, NewWebhook, Outgoing, PublicOnly, PushConfig, Watch, WebhookError,
    WebhookEvent, WebhookStats, WebhookStore,
};

/// The lease's name in the database.
const LEASE_NAME: &str = "webhooks";
/// How long the lease lasts unless renewed: longer than a round can take
/// (a batch of deliveries whose receivers all time out).
const LEASE: Duration = Duration::from_secs(60);
/// How often the deliverer looks for work (a delivery put in the outbox by
/// this process wakes it at once).
const POLL: Duration = Duration::from_secs(1);
/// How long the list of tenants with webhooks is trusted before it is read again.
const TENANTS_FRESH: Duration = Duration::from_secs(1);
/// Most deliveries one round posts (one at most [`TIMEOUT`] each, all at once).
const BATCH: usize = IN_FLIGHT;
/// Most deliveries in flight at once.
const IN_FLIGHT: usize = 16;
/// How long a receiver has to answer.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How long a follower waits for an event before it checks whether the session settled.
const SETTLE_CHECK: Duration = Duration::from_secs(5);
/// A run started or resumed this long ago whose events never came was refused.
const STALE_ARM: Duration = Duration::from_secs(60);
/// Attempts before a delivery is given up (about a day with the backoff below).
pub(crate) const MAX_ATTEMPTS: u32 = 30;
/// The longest wait between two attempts.
const MAX_BACKOFF_MS: u64 = 3_600_000;

/// Turns a run's stop into the body of an A2A push notification (the
/// server's A2A endpoint knows what a task looks like; the runtime does not).
pub trait PushRenderer: Send + Sync + 'static {
    /// The body to post to `config` now that a run of its session stopped
    /// (`stopped` is the `run_finished` event); `None` when the run is not
    /// the config's task's.
    fn render<'a>(
        &'a self,
        runtime: &'a Runtime,
        config: &'a PushConfig,
        stopped: &'a Event,
    ) -> futures::future::BoxFuture<'a, Option<String>>;
}

/// What the runtime keeps for webhooks.
pub(super) struct Webhooks {
    pub(super) store: WebhookStore,
    /// Whether deliveries may go to loopback, private and link-local addresses.
    pub(super) to_private: bool,
    /// The tenants with a webhook for run events (`""`: none), and when read.
    tenants: std::sync::Mutex<Option<(Instant, Arc<HashSet<String>>)>>,
    delivered: AtomicU64,
    failed_attempts: AtomicU64,
    gave_up: AtomicU64,
    enqueued: AtomicU64,
    /// Wakes the deliverer (something went in the outbox).
    wake: tokio::sync::Notify,
    /// The deliverer's task and the name it holds the lease by.
    pub(super) task: std::sync::Mutex<Option<(tokio::task::AbortHandle, String)>>,
    /// What turns a run's stop into an A2A push notification (set by the A2A endpoint).
    renderer: std::sync::RwLock<Option<Arc<dyn PushRenderer>>>,
}

impl Webhooks {
    pub(super) fn new(store: WebhookStore, to_private: bool) -> Self {
        Self {
            store,
            to_private,
            tenants: std::sync::Mutex::new(None),
            delivered: AtomicU64::new(0),
            failed_attempts: AtomicU64::new(0),
            gave_up: AtomicU64::new(0),
            enqueued: AtomicU64::new(0),
            wake: tokio::sync::Notify::new(),
            task: std::sync::Mutex::new(None),
            renderer: std::sync::RwLock::new(None),
        }
    }

    fn forget_tenants(&self) {
        *self.tenants.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    fn enqueued(&self, added: u64) {
        if added > 0 {
            self.enqueued.fetch_add(added, Ordering::Relaxed);
            self.wake.notify_one();
        }
    }
}

impl Runtime {
    /// This runtime's webhooks and their outbox.
    pub fn webhooks(&self) -> &WebhookStore {
        &self.inner.webhooks.store
    }

    /// Registers a webhook after checking what the store cannot: that its
    /// URL is one this deployment posts to (public addresses only, unless
    /// [`RuntimeBuilder::webhooks_to_private_addresses`](crate::RuntimeBuilder::webhooks_to_private_addresses)).
    pub async fn add_webhook(&self, new: NewWebhook) -> Result<CreatedWebhook> {
        self.check_destination(&new.url)?;
        let created = self.inner.webhooks.store.add(new).await?;
        self.inner.webhooks.forget_tenants();
        Ok(created)
    }

    /// Sets an A2A push notification config after checking its URL as
    /// [`Runtime::add_webhook`] does; its task's updates are pushed from now on.
    pub async fn set_push(&self, new: NewPushConfig) -> Result<PushConfig> {
        self.check_destination(&new.url)?;
        let config = self.inner.webhooks.store.set_push(new).await?;
        self.inner.webhooks.forget_tenants();
        self.inner.webhooks.wake.notify_one();
        Ok(config)
    }

    /// Checks that `url` is one this deployment posts to: an http(s) URL,
    /// and a public address unless private ones are allowed.
    fn check_destination(&self, url: &str) -> Result<()> {
        let parsed = crate::webhook::check_url(url)?;
        if !self.inner.webhooks.to_private && !crate::webhook::resolve::host_is_public(&parsed) {
            return Err(WebhookError::NotPublic(url.to_owned()).into());
        }
        Ok(())
    }

    /// Pushes A2A task updates with `renderer` (the A2A endpoint sets it).
    pub fn render_pushes_with(&self, renderer: Arc<dyn PushRenderer>) {
        *self
            .inner
            .webhooks
            .renderer
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(renderer);
    }

    /// Deletes a webhook of `tenant` and what waits to go to it; false if there is none.
    pub async fn delete_webhook(&self, tenant: Option<&str>, id: &str) -> Result<bool> {
        let deleted = self.inner.webhooks.store.delete(tenant, id).await?;
        self.inner.webhooks.forget_tenants();
        Ok(deleted)
    }

    /// What this process delivered since it started.
    pub fn webhook_stats(&self) -> WebhookStats {
        let hooks = &self.inner.webhooks;
        WebhookStats {
            delivered: hooks.delivered.load(Ordering::Relaxed),
            failed_attempts: hooks.failed_attempts.load(Ordering::Relaxed),
            gave_up: hooks.gave_up.load(Ordering::Relaxed),
            enqueued: hooks.enqueued.load(Ordering::Relaxed),
        }
    }

    /// The tenants with a webhook for run events, read again at most every [`TENANTS_FRESH`].
    async fn tenants_following_runs(&self) -> Arc<HashSet<String>> {
        let hooks = &self.inner.webhooks;
        {
            let tenants = hooks.tenants.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((read, set)) = tenants.as_ref() {
                if read.elapsed() < TENANTS_FRESH {
                    return set.clone();
                }
            }
        }
        let set = match hooks.store.tenants_following_runs().await {
            Ok(list) => Arc::new(list.into_iter().collect::<HashSet<_>>()),
            Err(error) => {
                tracing::warn!(%error, "the webhooks could not be read; runs started now are not followed for them");
                Arc::new(HashSet::new())
            }
        };
        *hooks.tenants.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((Instant::now(), set.clone()));
        set
    }

    /// Before a run starts in `session` of `tenant`: follows the session
    /// for the tenant's webhooks, if it has any for runs. A store that
    /// fails does not stop the run (it is logged: its webhooks miss it).
    pub(super) async fn arm_webhooks(&self, session: &SessionId, tenant: Option<&str>) {
        let tenants = self.tenants_following_runs().await;
        if !tenants.contains(tenant.unwrap_or("")) {
            return;
        }
        let armed = self
            .inner
            .webhooks
            .store
            .arm(session.as_str(), tenant, crate::clock::now())
            .await;
        if let Err(error) = armed {
            tracing::warn!(session = %session, %error, "the run goes on, but its webhooks will not hear of it");
        }
    }

    /// Before a parked run is resumed in `session`: follows it again if it
    /// was followed when it parked (a store that fails is logged, as above).
    pub(super) async fn rearm_webhooks(&self, session: &SessionId) {
        if self.tenants_following_runs().await.is_empty() {
            return;
        }
        let armed = self
            .inner
            .webhooks
            .store
            .rearm(session.as_str(), crate::clock::now())
            .await;
        if let Err(error) = armed {
            tracing::warn!(session = %session, %error, "the run goes on, but its webhooks will not hear of it");
        }
    }

    /// A schedule started its run: tells the webhooks that want to know.
    pub(super) async fn schedule_fired(&self, schedule: &crate::schedule::Schedule, slot: Timestamp, run: &str) {
        let session = SessionId::from(schedule.session.as_str());
        let tenant = schedule.tenant.as_deref();
        let body = json!({
            "type": WebhookEvent::ScheduleFired.as_str(),
            "timestamp": crate::schedule::rfc3339(crate::clock::now()),
            "data": {
                "schedule": schedule.id,
                "session": session.local_in(tenant).unwrap_or(session.as_str()),
                "run": run,
                "due_at": crate::schedule::rfc3339(slot),
                "message": schedule.message,
            },
        });
        let outgoing = Outgoing {
            event: WebhookEvent::ScheduleFired,
            event_id: event_id(&["schedule", &schedule.id, &slot.0.to_string()]),
            session: Some(schedule.session.clone()),
            body: body.to_string(),
        };
        match self.inner.webhooks.store.enqueue(tenant, outgoing).await {
            Ok(added) => self.inner.webhooks.enqueued(added),
            Err(error) => {
                tracing::warn!(schedule = %schedule.id, %error, "a schedule's firing could not be put in the webhooks' outbox")
            }
        }
    }

    /// Forgets what the webhooks keep of an erased session.
    pub(super) async fn forget_webhooks_of(&self, session: &SessionId) -> Result<()> {
        Ok(self.inner.webhooks.store.forget_session(session.as_str()).await?)
    }
}

/// An event id made from what identifies the event, the same every time it is found.
fn event_id(parts: &[&str]) -> String {
    let mut hash = sha2::Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let digest = hash.finalize();
    format!(
        "evt_{}",
        digest.iter().take(12).map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// The body of a run's stop.
fn run_outgoing(watch: &Watch, event: &Event, status: RunStatus, reply: Option<&str>) -> Outgoing {
    let kind = WebhookEvent::of_status(status);
    let tenant = watch.tenant.as_deref();
    let session = event.session.local_in(tenant).unwrap_or(event.session.as_str());
    let mut data = json!({
        "session": session,
        "run": event.run.as_ref().map(ToString::to_string),
        "status": status,
    });
    if let (Some(reply), Some(object)) = (reply, data.as_object_mut()) {
        object.insert("reply".into(), json!(reply));
    }
    let body = json!({
        "type": kind.as_str(),
        "timestamp": crate::schedule::rfc3339(event.at),
        "data": data,
    });
    Outgoing {
        event: kind,
        event_id: event_id(&["run", event.session.as_str(), &event.seq.to_string()]),
        session: Some(watch.session.clone()),
        body: body.to_string(),
    }
}

/// Follows one session's runs from the watch's place, putting each stop in
/// the outbox, until the session settles: nothing runs in it, every event
/// was read, and no run was started or resumed since the last stop read.
async fn follow(runtime: Runtime, mut watch: Watch) {
    let store = runtime.inner.webhooks.store.clone();
    let session = SessionId::from(watch.session.as_str());
    let engine = match runtime.engine_or_err() {
        Ok(engine) => engine.clone(),
        Err(_) => return,
    };
    let mut events = engine.subscribe(session.clone(), EventId::durable(watch.after));
    let mut read = watch.after;
    // The input time of the last stop read (none yet).
    let mut last_stop = Timestamp(0);
    loop {
        let event = match tokio::time::timeout(SETTLE_CHECK, events.next()).await {
            Ok(Some(Ok(event))) => event,
            Ok(Some(Err(error))) => {
                tracing::debug!(session = %session, %error, "following a session for webhooks stopped; trying again");
                return;
            }
            Ok(None) => return,
            Err(_) => {
                if settled(&runtime, &session, read, last_stop).await {
                    return;
                }
                continue;
            }
        };
        if event.delta != 0 || event.session != session {
            continue;
        }
        read = read.max(event.seq);
        let Some((status, reply)) = stop_of(&event.kind) else {
            continue;
        };
        if let Ok(Some(now)) = store.watch(&watch.session).await {
            watch = now;
        }
        if let Err(error) = push(&runtime, &event, status).await {
            tracing::warn!(session = %session, %error, "a task's push could not be put in the outbox; trying again");
            return;
        }
        let outgoing = (event.at >= watch.since).then(|| run_outgoing(&watch, &event, status, reply));
        match store.record_stop(&watch, event.seq, outgoing).await {
            Ok(added) => runtime.inner.webhooks.enqueued(added),
            Err(error) => {
                tracing::warn!(session = %session, %error, "a run's stop could not be put in the webhooks' outbox; trying again");
                return;
            }
        }
        last_stop = last_stop.max(event.at);
        if settled(&runtime, &session, read, last_stop).await {
            return;
        }
    }
}

/// The stop an event is, with what the run says there: a run finished, or
/// parked on a confirmation, a choice or a running call's question.
fn stop_of(kind: &EventKind) -> Option<(RunStatus, Option<&str>)> {
    Some(match kind {
        EventKind::RunFinished { status, reply } => (*status, reply.as_deref()),
        EventKind::AwaitingConfirmation { pending } => {
            (RunStatus::AwaitingConfirmation, Some(pending.message.as_str()))
        }
        EventKind::ChoiceRequested { pending } => (RunStatus::AwaitingChoice, Some(pending.choice.question.as_str())),
        EventKind::ElicitationRequested { pending } => (RunStatus::AwaitingInput, Some(pending.text.as_str())),
        _ => return None,
    })
}

/// Puts the A2A pushes of a run's stop in the outbox: one per push config
/// of the session set before the stop, whose task the run belongs to.
async fn push(runtime: &Runtime, stopped: &Event, status: RunStatus) -> Result<()> {
    let renderer = runtime
        .inner
        .webhooks
        .renderer
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let Some(renderer) = renderer else {
        return Ok(());
    };
    let store = &runtime.inner.webhooks.store;
    for config in store.pushes_of_session(stopped.session.as_str()).await? {
        if stopped.seq <= config.after_seq {
            continue;
        }
        let Some(body) = renderer.render(runtime, &config, stopped).await else {
            continue;
        };
        let id = event_id(&["push", &config.row.to_string(), &stopped.seq.to_string()]);
        if store
            .enqueue_push(&config, WebhookEvent::of_status(status), id, body)
            .await?
        {
            runtime.inner.webhooks.enqueued(1);
        }
    }
    Ok(())
}

/// Whether following `session` can stop (and stops it): nothing runs in it,
/// no event after `read`, and no run started or resumed since the last stop
/// read (or so long ago that its start never came).
async fn settled(runtime: &Runtime, session: &SessionId, read: u64, last_stop: Timestamp) -> bool {
    let store = &runtime.inner.webhooks.store;
    let Ok(Some(watch)) = store.watch(session.as_str()).await else {
        return true;
    };
    let Ok(engine) = runtime.engine_or_err() else {
        return true;
    };
    let state = match engine.session(session.clone()).await {
        Ok(state) => state,
        Err(_) => return false,
    };
    let now = crate::clock::now();
    let stale = now.0.saturating_sub(watch.armed_at.0) > STALE_ARM.as_millis() as u64;
    if watch.armed_at > last_stop && !stale {
        return false;
    }
    if let Some(state) = &state {
        let running = state.active_run().is_some() && !state.waits_for_person();
        if running || state.last_seq() > read {
            return false;
        }
    }
    store.settle(session.as_str(), watch.generation).await.unwrap_or(false)
}

/// Posts one delivery; when the receiver took it, or why not and when to try again.
async fn post(client: &reqwest::Client, due: &Due) -> Attempt {
    let now = crate::clock::now();
    let seconds = i64::try_from(now.0 / 1_000).unwrap_or_default();
    let attempt = due.attempts.saturating_add(1);
    let retry = || {
        if attempt >= MAX_ATTEMPTS {
            return None;
        }
        let backoff = 2_000u64
            .saturating_mul(1 << attempt.min(20).saturating_sub(1))
            .min(MAX_BACKOFF_MS);
        let jitter = fastrand::u64(0..=backoff / 10);
        Some(Timestamp(now.0.saturating_add(backoff).saturating_add(jitter)))
    };
    let mut request = client
        .post(&due.url)
        .header("content-type", "application/json")
        .header("webhook-id", &due.event_id)
        .header("webhook-timestamp", seconds.to_string());
    if let Some(secret) = &due.secret {
        match crate::webhook::sign(secret, &due.event_id, seconds, due.body.as_bytes()) {
            Ok(signature) => request = request.header("webhook-signature", signature),
            Err(error) => {
                return Attempt::Failed {
                    error: error.to_string(),
                    retry_at: None,
                };
            }
        }
    }
    if let Some(token) = &due.token {
        // The two spellings A2A's reference SDKs read.
        request = request
            .header("x-a2a-notification-token", token)
            .header("a2a-notification-token", token);
    }
    if let Some(authorization) = &due.authorization {
        request = request.header("authorization", authorization);
    }
    let sent = request.body(due.body.clone()).send().await;
    match sent {
        Ok(response) if response.status().is_success() => Attempt::Delivered(crate::clock::now()),
        Ok(response) => Attempt::Failed {
            error: format!("the receiver answered {}", response.status()),
            retry_at: retry(),
        },
        Err(error) => {
            let why = if error.is_timeout() {
                format!("the receiver did not answer within {} seconds", TIMEOUT.as_secs())
            } else if error.is_connect() {
                "the receiver could not be reached".to_string()
            } else {
                "the request failed".to_string()
            };
            // The root cause ("Connection refused (os error 111)"), not the layers above it.
            let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(&error);
            while let Some(deeper) = cause.and_then(std::error::Error::source) {
                cause = Some(deeper);
            }
            let detail = cause.map(ToString::to_string).unwrap_or_default();
            Attempt::Failed {
                error: if detail.is_empty() {
                    why
                } else {
                    format!("{why} ({detail})")
                },
                retry_at: retry(),
            }
        }
    }
}

/// The client deliveries are posted with.
fn client(to_private: bool) -> Result<reqwest::Client> {
    crate::tls::install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(4)
        .user_agent(concat!("concierge-webhooks/", env!("CARGO_PKG_VERSION")));
    if !to_private {
        builder = builder.dns_resolver(Arc::new(PublicOnly));
    }
    builder
        .build()
        .map_err(|e| Error::InvalidConfig(format!("the webhooks' HTTP client could not be built: {e}")))
}

/// The sessions this process follows, each by a task; the tasks end with
/// it (the deliverer stopped, or another process took the lease).
#[derive(Default)]
struct Following(HashMap<String, tokio::task::JoinHandle<()>>);

impl Following {
    fn stop(&mut self) {
        for (_, task) in self.0.drain() {
            task.abort();
        }
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One round of the deliverer while it holds the lease: follows the watched
/// sessions not followed yet, then posts what is due.
async fn round(runtime: &Runtime, client: &reqwest::Client, following: &mut Following) -> Result<bool> {
    let hooks = &runtime.inner.webhooks;
    following.0.retain(|_, task| !task.is_finished());
    for watch in hooks.store.watches().await? {
        if !following.0.contains_key(&watch.session) {
            let session = watch.session.clone();
            following
                .0
                .insert(session, tokio::spawn(follow(runtime.clone(), watch)));
        }
    }
    let due = hooks.store.due(crate::clock::now(), BATCH).await?;
    let full = due.len() == BATCH;
    let recorded: Vec<Result<()>> = futures::stream::iter(due)
        .map(|due| async move {
            let attempt = post(client, &due).await;
            let (outcome, delivered, gave_up) = match &attempt {
                Attempt::Delivered(_) => ("delivered", true, false),
                Attempt::Failed { retry_at: Some(_), .. } => ("failed", false, false),
                Attempt::Failed { error, retry_at: None } => {
                    tracing::warn!(%error, "a webhook delivery was given up after its last attempt");
                    ("gave_up", false, true)
                }
            };
            runtime
                .inner
                .executor
                .exec_hooks()
                .webhook_attempted(&due.event, outcome);
            hooks.store.record_attempt(due.row, attempt).await?;
            // Counted once written, so the counters never run ahead of what
            // the deliveries say.
            match delivered {
                true => hooks.delivered.fetch_add(1, Ordering::Relaxed),
                false => hooks.failed_attempts.fetch_add(1, Ordering::Relaxed),
            };
            if gave_up {
                hooks.gave_up.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    recorded.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(full)
}

/// Delivers webhooks while the runtime lives: takes the lease when there is
/// work, follows sessions and posts the outbox, and lets the lease go when
/// another process holds it.
async fn deliver(runtime: Weak<Inner>, holder: String) {
    let mut following = Following::default();
    let mut client_for: Option<reqwest::Client> = None;
    loop {
        let Some(inner) = runtime.upgrade() else {
            break;
        };
        let runtime_now = Runtime { inner };
        let hooks = &runtime_now.inner.webhooks;
        let now = crate::clock::now();
        let until = Timestamp(now.0.saturating_add(LEASE.as_millis() as u64));
        let mut more = false;
        // Nothing to do: no lease taken (no write to the database while idle).
        let work = !following.0.is_empty() || hooks.store.has_work().await.unwrap_or(true);
        let leased = if work {
            hooks.store.lease(LEASE_NAME, &holder, now, until).await
        } else {
            Ok(false)
        };
        match leased {
            Ok(true) => {
                if client_for.is_none() {
                    match client(hooks.to_private) {
                        Ok(built) => client_for = Some(built),
                        Err(error) => tracing::warn!(%error, "webhooks cannot be delivered"),
                    }
                }
                if let Some(client) = &client_for {
                    match round(&runtime_now, client, &mut following).await {
                        Ok(full) => more = full,
                        Err(error) => tracing::warn!(%error, "delivering webhooks failed; trying again"),
                    }
                }
            }
            Ok(false) => {
                following.stop();
            }
            Err(error) => tracing::warn!(%error, "the webhooks' lease could not be taken; trying again"),
        }
        let wake = runtime_now.inner.clone();
        drop(runtime_now);
        if !more {
            let _ = tokio::time::timeout(POLL, wake.webhooks.wake.notified()).await;
        }
    }
    following.stop();
}

impl Runtime {
    /// Starts delivering webhooks in the background (see [`deliver`]).
    pub(super) fn start_delivering_webhooks(&self) -> Result<()> {
        let holder = crate::side_db::random_id(&format!("{}-", std::process::id())).map_err(Error::Storage)?;
        let task = tokio::spawn(deliver(Arc::downgrade(&self.inner), holder.clone()));
        *self
            .inner
            .webhooks
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((task.abort_handle(), holder));
        Ok(())
    }

    /// Stops delivering and gives the lease up, so another process takes over at once.
    pub(super) async fn stop_delivering_webhooks(&self) {
        let task = self
            .inner
            .webhooks
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some((task, holder)) = task {
            task.abort();
            if let Err(error) = self.inner.webhooks.store.release(LEASE_NAME, &holder).await {
                tracing::warn!(%error, "the webhooks' lease could not be given up");
            }
        }
    }
}
