//! Forks and replays on the embedded engine, in memory and over SQLite:
//! the shared cases of `cases/forks.rs` (concierge-temporal runs them on Temporal).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
#[path = "cases/embedded.rs"]
mod embedded;
#[path = "cases/forks.rs"]
mod cases;

use embedded::{EngineUnderTest, OnEngine};

mod sqlite {
    use super::*;
    on_the_embedded_engine!(cases, EngineUnderTest::sqlite();
        a_fork_carries_the_conversation_and_does_not_redo_what_was_done,
        a_replay_runs_against_another_model_without_side_effects,
    );
}

mod memory {
    use super::*;
    on_the_embedded_engine!(cases, EngineUnderTest::memory();
        a_fork_carries_the_conversation_and_does_not_redo_what_was_done,
        a_replay_runs_against_another_model_without_side_effects,
    );
}
