//! A schedule fires once at its time, on the embedded engine over SQLite:
//! the shared case of `cases/schedule_timer.rs` (concierge-temporal runs it
//! on Temporal, where a workflow's durable timer keeps the time).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/schedule_timer.rs"]
mod cases;

use embedded::{EngineUnderTest, OnEngine};

on_the_embedded_engine!(cases, EngineUnderTest::sqlite();
    a_schedule_fires_once_even_when_its_process_stopped_before_it_was_due,
);
