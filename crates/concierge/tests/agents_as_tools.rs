//! Agents as tools on the embedded engine (SQLite): the shared cases of
//! `cases/agents_as_tools.rs` (concierge-temporal runs them on Temporal).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/agents_as_tools.rs"]
mod cases;

use embedded::{EngineUnderTest, OnEngine};

on_the_embedded_engine!(cases, EngineUnderTest::sqlite();
    a_router_answers_a_compound_statement_once_with_each_specialists_part_in_order,
    a_specialists_choice_and_confirmation_reach_the_person_through_the_router,
    a_new_runtime_on_the_same_database_finishes_a_parked_tree_without_repeating_a_child,
    a_prompt_template_and_a_prompt_builder_write_the_childs_message,
    what_a_tool_writes_is_declared_in_rust_or_by_configuration,
    a_subscriber_that_stops_anywhere_in_a_childs_events_resumes_with_every_event_exactly_once,
    ending_the_router_ends_the_specialist_waiting_under_it,
);
