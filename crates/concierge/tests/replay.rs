//! Deterministic replay on the embedded engine (SQLite): the shared case of
//! `cases/replay.rs` (concierge-temporal runs it on Temporal).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/replay.rs"]
mod cases;

use embedded::{EngineUnderTest, OnEngine};

on_the_embedded_engine!(cases, EngineUnderTest::sqlite(); a_session_replays_against_the_tools_its_run_saw);
