//! `GET /v1/models`: the agents as OpenAI models (the id is the agent's),
//! and `concierge`, the default agent (the hub that routes each message).

use axum::Json;
use axum::extract::State;
use concierge::{AgentId, Runtime};
use serde::Serialize;
use utoipa::ToSchema;

use super::unix_now;
use crate::ground::ApiState;

/// The model that stands for the default agent: the hub in multi mode, as
/// `concierge run` without `--agent`.
pub const DEFAULT_MODEL: &str = "concierge";

/// Who owns the models, as OpenAI's list says it.
const OWNER: &str = "concierge";

/// `GET /v1/models`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: ListObject,
    /// The models.
    pub data: Vec<ModelCard>,
}

/// The `object` of a list.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListObject {
    /// A list.
    List,
}

/// The `object` of a model.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelObject {
    /// A model.
    Model,
}

/// One model: an agent, or `concierge`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelCard {
    /// The agent's id, or `concierge` for the default agent.
    pub id: String,
    /// Always `model`.
    pub object: ModelObject,
    /// Unix seconds (the time of the listing: agents come with the configuration).
    pub created: u64,
    /// Always `concierge`.
    pub owned_by: String,
}

/// What a request's `model` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `concierge`: the session's current agent, or the default one for a new session.
    Default,
    /// One agent, by its id.
    Agent(AgentId),
}

/// The agents' ids, with `concierge` first.
pub fn model_ids(rt: &Runtime) -> Vec<String> {
    let mut ids = vec![DEFAULT_MODEL.to_string()];
    ids.extend(
        rt.catalog()
            .agent_ids()
            .iter()
            .map(ToString::to_string)
            .filter(|id| id != DEFAULT_MODEL),
    );
    ids
}

/// What `model` names; `None` when it names nothing (an agent of that id wins over `concierge`).
pub fn target(rt: &Runtime, model: &str) -> Option<Target> {
    let agent = AgentId::new(model);
    if rt.catalog().agent(&agent).is_some() {
        Some(Target::Agent(agent))
    } else if model == DEFAULT_MODEL {
        Some(Target::Default)
    } else {
        None
    }
}

/// Lists the models: `concierge` (the default agent, the hub when there
/// are several) and every agent by its id.
#[utoipa::path(
    get, path = "/v1/models", tag = "openai",
    responses((status = 200, description = "The models: `concierge` and the agents", body = ModelList))
)]
pub async fn list(State(state): State<ApiState>) -> Json<ModelList> {
    let created = unix_now();
    let data = model_ids(&state.rt)
        .into_iter()
        .map(|id| ModelCard {
            id,
            object: ModelObject::Model,
            created,
            owned_by: OWNER.to_string(),
        })
        .collect();
    Json(ModelList {
        object: ListObject::List,
        data,
    })
}
