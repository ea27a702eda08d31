//! Sessions opened before their first message, tenants, and the
//! `data_changed` event, on the embedded engine over SQLite: the shared
//! cases of `cases/tenants.rs` (concierge-temporal runs them on Temporal).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/tenants.rs"]
mod cases;

use embedded::{EngineUnderTest, OnEngine};

on_the_embedded_engine!(cases, EngineUnderTest::sqlite();
    an_opened_session_is_durable_listed_and_its_first_message_goes_to_its_agent,
    another_tenants_session_is_not_found_and_runs_nothing,
    a_child_session_belongs_to_its_parents_tenant_and_a_write_says_what_changed,
    a_message_for_a_busy_session_is_refused_queued_or_interrupts_as_asked,
    an_erased_person_s_conversations_are_gone_and_another_s_stay,
    a_conversation_begun_just_before_an_erase_is_erased_with_it,
    erasing_a_conversation_erases_its_child_runs_and_not_one_named_like_them,
);
