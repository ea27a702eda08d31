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
    let catalog = state.rt.catalog();
    let goals = catalog.goals();
    let agents = catalog
        .agents()
        .map(|a| AgentView::of(&a.spec, goals.iter().any(|g| g.id == a.spec.id)))
        .collect();
    Json(AgentList { agents })
}

/// The goals a person can choose from, with their starter prompts.
#[utoipa::path(
    get, path = "/api/v1/goals", tag = "catalog",
    responses((status = 200, description = "The goals catalogue", body = GoalList))
)]
pub async fn goals(State(state): State<ApiState>) -> Json<GoalList> {
    let goals = state
        .rt
        .catalog()
        .goals()
        .into_iter()
        .map(|a| AgentView::of(a, true))
        .collect();
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
    let catalog = state.rt.catalog();
    let mut specs = match query.category.as_deref() {
        Some(category) => catalog.tools_in_category(category),
        None => catalog.tools().collect(),
    };
    specs.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
    Json(ToolList {
        tools: specs.into_iter().map(ToolView::from).collect(),
    })
}
