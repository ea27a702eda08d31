//! A scripted model: a test double for tests and examples.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use concierge_core::{ModelReply, ModelRequest};
use futures::future::BoxFuture;

use super::{Model, ModelContext, ModelError, ModelErrorKind};

type Responder = dyn Fn(&ModelRequest) -> Result<ModelReply, ModelError> + Send + Sync;

/// Answers from a script (and then from a function, if given), and records
/// every request. A test double: products talk to real providers.
#[derive(Clone)]
pub struct ScriptedModel {
    name: String,
    script: Arc<Mutex<VecDeque<Result<ModelReply, ModelError>>>>,
    responder: Option<Arc<Responder>>,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedModel {
    /// An empty script.
    pub fn new() -> Self {
        Self {
            name: "scripted:test".into(),
            script: Arc::default(),
            responder: None,
            requests: Arc::default(),
        }
    }

    /// A model that answers every request with `f`.
    pub fn from_fn(f: impl Fn(&ModelRequest) -> Result<ModelReply, ModelError> + Send + Sync + 'static) -> Self {
        Self {
            responder: Some(Arc::new(f)),
            ..Self::new()
        }
    }

    /// Appends a reply.
    pub fn reply(self, reply: ModelReply) -> Self {
        if let Ok(mut script) = self.script.lock() {
            script.push_back(Ok(reply));
        }
        self
    }

    /// Appends a failure.
    pub fn fail(self, error: ModelError) -> Self {
        if let Ok(mut script) = self.script.lock() {
            script.push_back(Err(error));
        }
        self
    }

    /// Sets the reference the model reports (`provider:name`, default `scripted:test`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request.clone());
        }
        let next = self.script.lock().ok().and_then(|mut s| s.pop_front());
        let result = match (next, &self.responder) {
            (Some(step), _) => step,
            (None, Some(responder)) => responder(request),
            (None, None) => Err(ModelError::new(
                ModelErrorKind::Protocol,
                self.name.clone(),
                "the script has no more replies",
            )),
        };
        Box::pin(async move { result })
    }
}
