//! Recorded model exchanges: a cassette answers a request with the reply a
//! real model gave to the same request, so a run (an eval in CI, say) goes
//! the same way again, offline and without a key.
//!
//! ```no_run
//! # async fn f(real: std::sync::Arc<dyn concierge::Model>) -> Result<(), concierge::model::CassetteError> {
//! use concierge::model::{Cassette, CassetteMode};
//!
//! // Record: each exchange with `real` is kept; `save` writes the file.
//! let tape = Cassette::open("evals/tasks.cassette.jsonl", CassetteMode::Record)?;
//! let model = tape.model(real);
//! // ... runs ...
//! tape.save()?;
//!
//! // Replay: the same requests get the same replies; another request is an error.
//! let tape = Cassette::open("evals/tasks.cassette.jsonl", CassetteMode::Replay)?;
//! let model = tape.replayer("openai:gpt-4o-mini");
//! # let _ = model; Ok(()) }
//! ```
//!
//! A request's key is a fingerprint of everything the model is sent (the
//! agent, the model's name, the system prompt, the messages, the tools and
//! their schemas, the settings): a change of prompt or catalog is a new key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use concierge_core::{ModelReply, ModelRequest, fingerprint};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::{Model, ModelContext, ModelError, ModelErrorKind, RetryPolicy, complete_with_retry};

/// Whether a cassette records or replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CassetteMode {
    /// Calls the real model and keeps each exchange (over any kept for the same request).
    Record,
    /// Answers from the kept exchanges only.
    Replay,
}

/// What went wrong with a cassette file.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The file could not be read or written.
    #[error("the cassette {path} could not be {doing}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// "read" or "written".
        doing: &'static str,
        /// Why.
        error: std::io::Error,
    },
    /// A line of the file is not an exchange.
    #[error("line {line} of the cassette {path} is not a recorded exchange ({error}): record it again with --record")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// Why.
        error: String,
    },
}

/// One recorded exchange (a line of the file).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Exchange {
    /// The request's fingerprint.
    key: String,
    /// The model that answered.
    model: String,
    /// The agent that asked (for a person reading the file).
    agent: String,
    /// The reply, or (`None`) the failure below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<ModelReply>,
    /// How the call failed, when it did (every attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failed: Option<Failure>,
}

/// A model failure as kept in a cassette: it replays as the same failure,
/// once (not retried again), so a run goes the way it went when recorded.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Failure {
    /// Whether the model could not be reached or used at all (as opposed
    /// to answering something unusable): runs treat the two apart.
    unavailable: bool,
    /// What happened.
    message: String,
}

impl Failure {
    fn of(error: &ModelError) -> Self {
        Self {
            unavailable: error.is_unavailable(),
            message: error.message.clone(),
        }
    }

    /// The failure again, as an error no retry repeats.
    fn error(&self, model: &str) -> ModelError {
        let kind = if self.unavailable {
            ModelErrorKind::NotConfigured
        } else {
            ModelErrorKind::Protocol
        };
        ModelError::new(kind, model, self.message.clone())
    }
}

/// A file of recorded exchanges, shared by the models that record into it
/// or replay from it.
#[derive(Clone, Debug)]
pub struct Cassette {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    mode: CassetteMode,
    exchanges: Mutex<BTreeMap<String, Exchange>>,
}

impl Cassette {
    /// The cassette at `path` (JSON Lines); a file that does not exist is
    /// an empty cassette (to record into).
    pub fn open(path: impl AsRef<Path>, mode: CassetteMode) -> Result<Self, CassetteError> {
        let path = path.as_ref().to_path_buf();
        let mut exchanges = BTreeMap::new();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                for (n, line) in text.lines().enumerate() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    let exchange: Exchange = serde_json::from_str(line).map_err(|e| CassetteError::Malformed {
                        path: path.clone(),
                        line: n + 1,
                        error: e.to_string(),
                    })?;
                    exchanges.insert(exchange.key.clone(), exchange);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(CassetteError::Io {
                    path,
                    doing: "read",
                    error,
                });
            }
        }
        Ok(Self {
            shared: Arc::new(Shared {
                path,
                mode,
                exchanges: Mutex::new(exchanges),
            }),
        })
    }

    /// Whether it records or replays.
    pub fn mode(&self) -> CassetteMode {
        self.shared.mode
    }

    /// How many exchanges it holds.
    pub fn len(&self) -> usize {
        self.exchanges().len()
    }

    /// The models whose replies it holds.
    pub fn models(&self) -> std::collections::BTreeSet<String> {
        self.exchanges().values().map(|e| e.model.clone()).collect()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `real`, recording into this cassette (replaying from it in replay mode).
    pub fn model(&self, real: Arc<dyn Model>) -> Arc<dyn Model> {
        Arc::new(Taped {
            name: real.name(),
            real: (self.shared.mode == CassetteMode::Record).then_some(real),
            cassette: self.clone(),
        })
    }

    /// A model named `name` that answers from this cassette only.
    pub fn replayer(&self, name: impl Into<String>) -> Arc<dyn Model> {
        Arc::new(Taped {
            name: name.into(),
            real: None,
            cassette: self.clone(),
        })
    }

    /// Writes the exchanges to the file (sorted by key, so a file recorded
    /// again changes only where the exchanges did).
    pub fn save(&self) -> Result<(), CassetteError> {
        let mut text = String::new();
        for exchange in self.exchanges().values() {
            if let Ok(line) = serde_json::to_string(exchange) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        let path = &self.shared.path;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|error| CassetteError::Io {
                path: path.clone(),
                doing: "written",
                error,
            })?;
        }
        std::fs::write(path, text).map_err(|error| CassetteError::Io {
            path: path.clone(),
            doing: "written",
            error,
        })
    }

    fn exchanges(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Exchange>> {
        self.shared.exchanges.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The key of `request` sent to the model named `model`.
pub fn request_key(model: &str, request: &ModelRequest) -> String {
    let value = serde_json::json!({ "model": model, "request": request });
    fingerprint(&value)
}

/// A model behind a cassette.
struct Taped {
    name: String,
    real: Option<Arc<dyn Model>>,
    cassette: Cassette,
}

impl Model for Taped {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            let key = request_key(&self.name, request);
            let Some(real) = &self.real else {
                let kept = self.cassette.exchanges().get(&key).cloned();
                return match kept {
                    Some(Exchange { reply: Some(reply), .. }) => Ok(reply),
                    Some(Exchange {
                        failed: Some(failure), ..
                    }) => Err(failure.error(&self.name)),
                    _ => Err(ModelError::new(
                        ModelErrorKind::NotConfigured,
                        self.name.clone(),
                        format!(
                            "the cassette {} has no reply recorded for this request of agent {} (its prompt, tools or conversation changed): record it again with --record",
                            self.cassette.shared.path.display(),
                            request.agent
                        ),
                    )),
                };
            };
            // The whole call, retries included, is the exchange: a failure
            // is kept as the call ended, and returned as one no retry repeats.
            let result = complete_with_retry(real.as_ref(), request, cx, &RetryPolicy::default()).await;
            let mut exchanges = self.cassette.exchanges();
            let exchange = Exchange {
                key: key.clone(),
                model: self.name.clone(),
                agent: request.agent.to_string(),
                reply: None,
                failed: None,
            };
            match result {
                Ok(reply) => {
                    exchanges.insert(
                        key,
                        Exchange {
                            reply: Some(reply.clone()),
                            ..exchange
                        },
                    );
                    Ok(reply)
                }
                // Kept unless another call with the same request answered.
                Err(error) => {
                    let failure = Failure::of(&error);
                    let answered = exchanges.get(&key).is_some_and(|e| e.reply.is_some());
                    if !answered {
                        exchanges.insert(
                            key,
                            Exchange {
                                failed: Some(failure.clone()),
                                ..exchange
                            },
                        );
                    }
                    Err(failure.error(&self.name))
                }
            }
        })
    }

    /// None: a recording call keeps to the real model's budget by itself.
    fn call_budget(&self) -> Option<std::time::Duration> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ScriptedModel;

    #[tokio::test]
    async fn a_recorded_exchange_replays_offline_and_another_request_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tape.jsonl");
        let request = ModelRequest {
            agent: "a".into(),
            model: None,
            system: "Be brief.".into(),
            messages: vec![concierge_core::Message::user("hi")],
            tools: Arc::from([]),
            tool_choice: Default::default(),
            temperature: None,
            max_tokens: None,
        };
        let real = Arc::new(ScriptedModel::new().reply(ModelReply::text("Hello.")).named("test:m"));
        let tape = Cassette::open(&path, CassetteMode::Record).unwrap();
        let recording = tape.model(real.clone());
        let cx = ModelContext::default();
        assert_eq!(recording.complete(&request, &cx).await.unwrap().text, "Hello.");
        tape.save().unwrap();

        let tape = Cassette::open(&path, CassetteMode::Replay).unwrap();
        assert_eq!(tape.len(), 1);
        let replaying = tape.replayer("test:m");
        assert_eq!(replaying.complete(&request, &cx).await.unwrap().text, "Hello.");
        let mut other = request.clone();
        other.messages = vec![concierge_core::Message::user("bye")];
        let refused = replaying.complete(&other, &cx).await.unwrap_err();
        assert!(refused.message.contains("record it again"), "{refused}");
        assert_eq!(real.requests().len(), 1, "the replay asked the real model");
    }

    #[tokio::test]
    async fn a_call_that_failed_when_recorded_fails_the_same_way_once_on_replay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tape.jsonl");
        let request = |text: &str| ModelRequest {
            agent: "a".into(),
            model: None,
            system: "Be brief.".into(),
            messages: vec![concierge_core::Message::user(text)],
            tools: Arc::from([]),
            tool_choice: Default::default(),
            temperature: None,
            max_tokens: None,
        };
        let slow = ModelError::new(ModelErrorKind::Timeout, "test:m", "did not answer within 120 s");
        let unreadable = ModelError::new(ModelErrorKind::Protocol, "test:m", "the answer is not JSON");
        let real = Arc::new(
            ScriptedModel::new()
                .fail(slow)
                .reply(ModelReply::text("Late, but here."))
                .fail(unreadable.clone())
                .named("test:m"),
        );
        let tape = Cassette::open(&path, CassetteMode::Record).unwrap();
        let recording = tape.model(real);
        let cx = ModelContext::default();
        // A timeout, then (retried) an answer: the answer is kept.
        assert!(recording.complete(&request("hi"), &cx).await.is_ok());
        // A call that failed for good: the failure is kept.
        let failed = recording.complete(&request("bye"), &cx).await.unwrap_err();
        assert!(!failed.is_retryable(), "{failed:?}");
        tape.save().unwrap();

        let tape = Cassette::open(&path, CassetteMode::Replay).unwrap();
        let replaying = tape.replayer("test:m");
        assert_eq!(
            replaying.complete(&request("hi"), &cx).await.unwrap().text,
            "Late, but here."
        );
        let failed = replaying.complete(&request("bye"), &cx).await.unwrap_err();
        assert_eq!(failed.message, unreadable.message);
        assert!(!failed.is_retryable(), "a recorded failure is not tried again");
        assert!(!failed.is_unavailable(), "the model answered, unusably: {failed:?}");
    }
}
