//! A person's answer to a parked call that the rules cannot read, understood
//! by the agent's model: the shared cases of `cases/confirmation_answers.rs`
//! on the embedded engine in memory (concierge-temporal runs them on
//! Temporal).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/confirmation_answers.rs"]
mod cases;

use embedded::{EngineUnderTest, OnEngine};

on_the_embedded_engine!(cases, EngineUnderTest::memory();
    a_change_the_rules_miss_is_read_by_the_model_and_shown_back_before_it_runs,
    a_plain_no_never_reaches_the_model,
    a_model_answer_that_is_no_decision_leaves_the_call_parked_with_a_reminder,
    without_a_model_the_rules_alone_answer,
);
