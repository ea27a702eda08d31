//! A model asked directly, outside any session (an eval's judge).

use concierge_core::{Input, ModelReply, ModelRequest, RunId, SessionId};

use super::Runtime;
use crate::error::{Error, Result};
use crate::model::{ModelContext, ModelError, ModelErrorKind};

impl Runtime {
    /// Asks a model `request` directly, outside any session, through the
    /// executor: the hooks and metrics see it, the retry policy applies, and
    /// the model is the one `request` names, else the default one.
    pub async fn complete(&self, request: &ModelRequest) -> Result<ModelReply> {
        let (answer, failure) = self
            .inner
            .executor
            .call_model(
                &SessionId::new("direct"),
                RunId::new("direct"),
                0,
                request,
                &ModelContext::default(),
                &[],
            )
            .await;
        match (answer, failure) {
            (Input::ModelReplied { reply, .. }, _) => Ok(reply),
            (_, Some(error)) => Err(Error::Model(error)),
            (_, None) => Err(Error::Model(ModelError::new(
                ModelErrorKind::NotConfigured,
                request.model.clone().unwrap_or_else(|| "default".into()),
                "the model gave no answer",
            ))),
        }
    }
}
