//! The person's answer to a question a running call asks (MCP
//! elicitation): checked against the requested form (the core's field
//! checks, then a JSON Schema validator), then handed to the engine.

use concierge_core::{CallId, ElicitationAction, ElicitationAnswer, ElicitationMode, SessionId, StepError};

use super::Runtime;
use crate::RunOutput;
use crate::error::{Error, Result};

/// Checks accepted content against the question's form; the error names
/// the field, in words.
pub fn check_answer(
    question: &concierge_core::Elicitation,
    answer: &ElicitationAnswer,
) -> std::result::Result<(), String> {
    if answer.action != ElicitationAction::Accept {
        return Ok(());
    }
    question.check(answer.content.as_ref())?;
    let (ElicitationMode::Form { schema }, Some(content)) = (&question.mode, &answer.content) else {
        return Ok(());
    };
    let validator =
        jsonschema::validator_for(schema).map_err(|e| format!("the server's form cannot be checked ({e})"))?;
    if let Some(error) = validator.iter_errors(content).next() {
        let path = error.instance_path().to_string();
        let field = path.trim_start_matches('/');
        let what = if field.is_empty() { "the answer" } else { field };
        return Err(format!("{what} does not fit the form: {error}"));
    }
    Ok(())
}

impl Runtime {
    /// Answers the question a running call of `session` asks the person:
    /// `call_id` and `question` as in its
    /// [`PendingElicitation`](concierge_core::PendingElicitation). Accepted
    /// content must fit the requested form (refused with
    /// [`StepError::AnswerRefused`], naming the field). Waits for the run's
    /// next stop (it finishes, or asks again).
    pub async fn answer_question(
        &self,
        session: impl Into<SessionId>,
        call_id: impl Into<CallId>,
        question: u32,
        answer: ElicitationAnswer,
    ) -> Result<RunOutput> {
        let session = session.into();
        let call_id = call_id.into();
        let state = self.session(session.clone()).await?;
        // A question of this session's running call, or a child's that
        // this session passes up.
        let pending = state
            .asked(&call_id)
            .get(question as usize)
            .filter(|asked| asked.answer.is_none())
            .map(|asked| asked.elicitation.clone())
            .or_else(|| {
                state
                    .pending_elicitation()
                    .filter(|p| p.session.is_some() && p.call_id == call_id && p.question == question)
                    .map(|p| p.elicitation)
            });
        let Some(asked) = pending else {
            return Err(Error::Rejected(StepError::NoSuchQuestion { call_id }));
        };
        check_answer(&asked, &answer).map_err(|problem| Error::Rejected(StepError::AnswerRefused { problem }))?;
        #[cfg(feature = "sqlite")]
        self.rearm_webhooks(&session).await;
        let stop = self
            .engine_or_err()?
            .answer_question(session, call_id, question, answer)
            .await?;
        stop.output().await
    }
}
