//! The catalogue: agents, goals (with starter prompts) and tools with their schemas.

use axum::Json;
use axum::extract::State;

use crate::ground::body::QueryParams;
use crate::ground::{ApiState, ErrorBody};

use super::types::{AgentList, AgentView, GoalList, ToolList, ToolQuery, ToolView};

/// Every agent, with whether the catalogue offers it as a goal.
#[utoipa::path(
    get, path = "/api/v1/agents", tag = "catalog",
    responses((status = 200, description = "The agents", body = AgentList))
)]
pub async fn agents(State(state): State<ApiState>) -> Json<AgentList> {
    let goals: Vec<String> = state.rt.goals().iter().map(|g| g.id.to_string()).collect();
    let agents = state
        .rt
        .agents()
        .iter()
        .map(|a| AgentView::of(a, goals.iter().any(|g| g == a.id.as_str())))
        .collect();
    Json(AgentList { agents })
}

/// The goals a person can choose from, with their starter prompts.
#[utoipa::path(
    get, path = "/api/v1/goals", tag = "catalog",
    responses((status = 200, description = "The goals catalogue", body = GoalList))
)]
pub async fn goals(State(state): State<ApiState>) -> Json<GoalList> {
    let goals = state.rt.goals().iter().map(|a| AgentView::of(a, true)).collect();
    Json(GoalList { goals })
}

/// Every tool (or those of one category) with its argument schema.
#[utoipa::path(
    get, path = "/api/v1/tools", tag = "catalog",
    params(ToolQuery),
    responses(
        (status = 200, description = "The tools", body = ToolList),
        (status = 400, description = "The query string is malformed", body = ErrorBody),
    )
)]
pub async fn tools(State(state): State<ApiState>, QueryParams(query): QueryParams<ToolQuery>) -> Json<ToolList> {
    let mut specs = match query.category.as_deref() {
        Some(category) => state.rt.tools_by_category(category),
        None => state.rt.tools(),
    };
    specs.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
    Json(ToolList {
        tools: specs.iter().map(ToolView::from).collect(),
    })
}
