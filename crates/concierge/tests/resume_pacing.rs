//! Runs taken over at start resume in waves: a process with several runs
//! waiting on the model is killed with SIGKILL, and the process that opens
//! the database next with `resume_concurrency(2)` never has more than two of
//! their model calls under way at once, and finishes every run once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support {
    pub mod child;
}

use std::ffi::OsStr;
use std::io::{BufReader, Write};
use std::process::{Child, ChildStdout};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use concierge::model::{Model, ModelContext, ModelError};
use concierge::{AgentSpec, ModelReply, ModelRequest, RunOptions, Runtime};
use futures::future::BoxFuture;
use support::child::{read_until, spawn as spawn_child};

const RUNS: usize = 6;
const SLOTS: usize = 2;

/// In the first process every call waits forever (the runs are in flight
/// when it is killed); in the second each takes a while and counts how many
/// are under way together.
struct Counting {
    hold: bool,
    started: AtomicUsize,
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Model for Counting {
    fn name(&self) -> String {
        "counting".into()
    }

    fn complete<'a>(
        &'a self,
        _: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            if self.hold {
                if self.started.fetch_add(1, Ordering::SeqCst) + 1 == RUNS {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "READY all waiting");
                    let _ = out.flush();
                }
                futures::future::pending::<()>().await;
            }
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(200)).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            Ok(ModelReply::text("answered"))
        })
    }
}

/// The child process. Not a test by itself: the test below runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the pacing test"]
async fn pacing_child() {
    let db = std::env::var("PACING_DB").expect("PACING_DB");
    let resume = std::env::var("PACING_MODE").as_deref() == Ok("resume");
    let model = std::sync::Arc::new(Counting {
        hold: !resume,
        started: AtomicUsize::new(0),
        now: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
    });
    let rt = Runtime::builder()
        .agent(AgentSpec::new("helper").instructions("Answer."))
        .model(SharedModel(model.clone()))
        .resume_concurrency(SLOTS)
        .sqlite(&db)
        .build()
        .await
        .unwrap();
    if !resume {
        let client = rt.client("helper").unwrap();
        for i in 0..RUNS {
            client
                .start("hello", RunOptions::new().session_id(format!("s{i}")))
                .await
                .unwrap();
        }
        futures::future::pending::<()>().await;
    }
    let mut recovered = rt.recovered();
    recovered.sort();
    println!("RECOVERED {}", recovered.len());
    for i in 0..RUNS {
        // A liveness guard, not a timing assertion.
        let output = tokio::time::timeout(Duration::from_secs(60), rt.wait(format!("s{i}")))
            .await
            .expect("a resumed run did not finish")
            .unwrap()
            .expect("a run was in flight");
        assert_eq!(output.reply.as_deref(), Some("answered"));
    }
    for i in 0..RUNS {
        let history = rt.history(format!("s{i}")).await.unwrap();
        assert_eq!(history.len(), 2, "one question, one answer in s{i}: {history:?}");
    }
    println!("MOST {}", model.most.load(Ordering::SeqCst));
}

/// The counting model, shared with the test body.
struct SharedModel(std::sync::Arc<Counting>);

impl Model for SharedModel {
    fn name(&self) -> String {
        self.0.name()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        self.0.complete(request, cx)
    }
}

fn spawn(db: &std::path::Path, mode: &str) -> (Child, BufReader<ChildStdout>) {
    spawn_child(
        "pacing_child",
        &[("PACING_DB", db.as_os_str()), ("PACING_MODE", OsStr::new(mode))],
    )
}

#[test]
fn runs_taken_over_at_start_call_the_model_at_most_resume_concurrency_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("pacing.db");
    let (mut child, mut out) = spawn(&db, "start");
    read_until(&mut out, "READY all waiting");
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());

    let (mut child, mut out) = spawn(&db, "resume");
    let recovered: usize = read_until(&mut out, "RECOVERED ").parse().unwrap();
    assert_eq!(recovered, RUNS, "every run in flight is taken over");
    let most: usize = read_until(&mut out, "MOST ").parse().unwrap();
    assert!(child.wait().unwrap().success());
    assert!(most >= 1, "the model was called");
    assert!(
        most <= SLOTS,
        "{most} resumed calls were under way at once, above {SLOTS}"
    );
}
