//! The embedded engine for the shared cases of `tests/cases/` (each
//! embedded root includes this file): in memory, or on SQLite in a
//! temporary directory, with what this engine does that another may not.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use concierge::RuntimeBuilder;

/// Where the engine keeps its sessions.
enum Store {
    Memory,
    /// A fresh database file in this directory per runtime.
    Sqlite(tempfile::TempDir, AtomicUsize),
}

/// The engine a shared case builds its runtimes on.
pub struct EngineUnderTest {
    store: Store,
}

impl EngineUnderTest {
    /// Subscribers see model deltas as they are produced.
    pub const STREAMS_MODEL_DELTAS: bool = true;

    /// The tools an MCP server offered are remembered in the database for
    /// the next process.
    pub const REMEMBERS_TOOLSETS: bool = true;

    /// The embedded engine in memory.
    pub fn memory() -> Self {
        Self { store: Store::Memory }
    }

    /// The embedded engine on SQLite (a new database per runtime, deleted
    /// with this value).
    pub fn sqlite() -> Self {
        Self {
            store: Store::Sqlite(tempfile::tempdir().unwrap(), AtomicUsize::new(0)),
        }
    }

    /// `builder` on this engine: a runtime of its own, sharing nothing with
    /// another built here.
    pub fn on(&self, builder: RuntimeBuilder) -> RuntimeBuilder {
        match &self.store {
            Store::Memory => builder.in_memory(),
            Store::Sqlite(dir, next) => {
                let n = next.fetch_add(1, Ordering::Relaxed);
                builder.sqlite(dir.path().join(format!("c{n}.db")))
            }
        }
    }

    /// `builder` on this engine's durable store `name`: runtimes built on
    /// the same name share their sessions, as processes on one database do.
    pub fn on_store(&self, builder: RuntimeBuilder, name: &str) -> RuntimeBuilder {
        match &self.store {
            Store::Memory => panic!("the embedded engine in memory keeps nothing for another runtime"),
            Store::Sqlite(dir, _) => builder.sqlite(dir.path().join(format!("store-{name}.db"))),
        }
    }
}

/// Each named case of the module `$cases` as a test of this root on the
/// embedded engine `$engine` makes (a case left out is dead code, which the
/// build refuses); after `ignore = "why";` the tests are ignored.
macro_rules! on_the_embedded_engine {
    ($cases:ident, $engine:expr; ignore = $why:literal; $($case:ident),* $(,)?) => {$(
        #[tokio::test]
        #[ignore = $why]
        async fn $case() {
            $cases::$case(&$engine).await
        }
    )*};
    ($cases:ident, $engine:expr; $($case:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $case() {
            $cases::$case(&$engine).await
        }
    )*};
}

/// A runtime builder on the engine under test.
pub trait OnEngine {
    /// This builder on `engine`.
    fn on_engine(self, engine: &EngineUnderTest) -> Self;

    /// This builder on `engine`'s durable store `name`.
    fn on_engine_store(self, engine: &EngineUnderTest, name: &str) -> Self;
}

impl OnEngine for RuntimeBuilder {
    fn on_engine(self, engine: &EngineUnderTest) -> Self {
        engine.on(self)
    }

    fn on_engine_store(self, engine: &EngineUnderTest, name: &str) -> Self {
        engine.on_store(self, name)
    }
}
