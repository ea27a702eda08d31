//! The input guardrails: the person's message is checked before the run's
//! start is journaled, so redacted text never reaches the journal and a
//! message that trips never reaches a model.

use concierge_core::{AgentId, GuardStage, GuardrailTrip, Message, RunId, SessionId};

use super::Runtime;
use crate::engine::{Engine, Whose};
use crate::guardrail::input_guardrails;

impl Runtime {
    /// Checks the person's messages with the input guardrails of the agent
    /// that takes them (`named`, else the session's current agent, else the
    /// default): redacts them in place, and returns the trip if one tripped.
    pub(crate) async fn check_input(
        &self,
        engine: &dyn Engine,
        session: &SessionId,
        named: Option<&AgentId>,
        run: Option<&RunId>,
        messages: &mut [Message],
    ) -> Option<GuardrailTrip> {
        let catalog = self.catalog();
        // Most runtimes have none: no read of the session for them.
        if catalog.agents().all(|a| a.spec.guardrails.input.is_empty()) {
            return None;
        }
        let agent = self.run_agent(engine, session, named).await;
        let checks = input_guardrails(&catalog, agent.as_ref());
        if checks.is_empty() {
            return None;
        }
        let unnamed = RunId::new("input");
        let whose = Whose {
            session,
            run: run.unwrap_or(&unnamed),
        };
        for message in messages.iter_mut() {
            if let Message::User { content } = message {
                let checked = self
                    .inner
                    .executor
                    .check_text(GuardStage::Input, &checks, content, whose)
                    .await;
                *content = checked.value;
                if checked.trip.is_some() {
                    return checked.trip;
                }
            }
        }
        None
    }
}
