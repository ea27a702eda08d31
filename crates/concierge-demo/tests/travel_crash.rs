//! A crash inside `create_invoice`: the runtime runs in a child process
//! (this test binary, re-executed) that is killed with SIGKILL after the
//! invoice was written and before its result was journaled, then a new
//! process on the same databases resumes the run. The invoice exists once:
//! the retried call finds its idempotency key and changes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};
use concierge::config::load_agents;
use concierge::{RunOptions, RunStatus, Runtime, Tool, ToolContext, ToolError, ToolSpec, Toolset};
use concierge_demo::travel::TravelStore;
use concierge_demo::travel::tools::{CreateInvoice, CreateInvoiceArgs, FindEvents, SearchFlights};
use serde_json::Value;

const SESSION: &str = "crash";

fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2025, 2, 20)
        .unwrap()
        .and_hms_opt(9, 0, 0)
        .unwrap()
}

fn announce(what: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY {what}");
    let _ = out.flush();
}

/// The real `create_invoice`, which, when `CRASH_AT=invoice`, blocks after
/// it wrote the invoice (so the process dies before the result is journaled).
struct CrashingInvoice {
    inner: CreateInvoice,
}

impl Tool for CrashingInvoice {
    type Args = CreateInvoiceArgs;

    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }

    fn call(
        &self,
        args: CreateInvoiceArgs,
        cx: ToolContext,
    ) -> impl std::future::Future<Output = Result<Value, ToolError>> + Send {
        let inner = self.inner.clone();
        async move {
            let result = inner.call(args, cx).await;
            if std::env::var("CRASH_AT").as_deref() == Ok("invoice") {
                announce("invoice");
                futures::future::pending::<()>().await;
            }
            result
        }
    }
}

fn store(dir: &Path) -> TravelStore {
    TravelStore::open(dir.join("travel.db")).at(now())
}

/// The child process. Not a test by itself: the test below runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the crash test"]
async fn invoice_crash_child() {
    let dir = PathBuf::from(std::env::var("CRASH_DIR").expect("CRASH_DIR"));
    let store = Arc::new(store(&dir));
    let toolset = Toolset::new("travel")
        .tool(FindEvents::new(Arc::clone(&store)))
        .tool(SearchFlights::new(Arc::clone(&store)))
        .tool(concierge_demo::travel::tools::SearchTrains::new(Arc::clone(&store)))
        .tool(concierge_demo::travel::tools::SearchFixtures::new(Arc::clone(&store)))
        .tool(CrashingInvoice {
            inner: CreateInvoice::new(store),
        });
    let agents_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/assistant/agents");
    let agents: Vec<_> = load_agents(&agents_dir)
        .unwrap()
        .agents
        .into_iter()
        .filter(|a| a.id.as_str() == "travel_events")
        .collect();
    let rt = Runtime::builder()
        .sqlite(dir.join("concierge.db"))
        .toolset(toolset)
        .agents(agents)
        .build()
        .await
        .unwrap();
    if std::env::var("CRASH_MODE").as_deref() == Ok("resume") {
        assert!(rt.recovered().contains(&SESSION.into()), "{:?}", rt.recovered());
        // A liveness guard, not a timing assertion: a run that is not
        // resumed would otherwise wait forever.
        let output = tokio::time::timeout(std::time::Duration::from_secs(60), rt.wait(SESSION))
            .await
            .expect("the resumed run did not finish")
            .unwrap()
            .expect("a run was in flight");
        assert_eq!(output.status, RunStatus::Completed);
        println!("REPLY {}", output.reply.unwrap_or_default());
        return;
    }
    let client = rt.client("travel_events").unwrap();
    let options = || RunOptions::new().session_id(SESSION);
    client
        .run("find flights from Sydney to Melbourne on 2025-03-05", options())
        .await
        .unwrap();
    let out = client.run("book it", options()).await.unwrap();
    let pending = out.pending_confirmation.expect("booking asks first");
    // Blocks inside the tool, after the write: the parent kills us there.
    let _ = rt.answer(&pending, SESSION, true).await;
}

fn spawn(dir: &Path, crash_at: &str, mode: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "invoice_crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CRASH_DIR", dir)
        .env("CRASH_AT", crash_at)
        .env("CRASH_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

fn read_until(stdout: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the child exited before printing {prefix:?}");
        if let Some(at) = line.find(prefix) {
            return line[at + prefix.len()..].trim().to_string();
        }
    }
}

#[test]
fn killed_inside_create_invoice_after_its_write_the_invoice_exists_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut out) = spawn(dir.path(), "invoice", "run");
    read_until(&mut out, "READY invoice");
    let written = store(dir.path()).invoices().unwrap();
    assert_eq!(written.len(), 1, "the write committed before the crash");
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());

    let (mut child, mut out) = spawn(dir.path(), "", "resume");
    let reply = read_until(&mut out, "REPLY ");
    assert!(child.wait().unwrap().success());
    assert!(
        reply.starts_with("Created invoice INV-2025-0001: KA101 Sydney 12:30 → Melbourne 14:05"),
        "the resumed run answers with the invoice made before the crash: {reply}"
    );
    let store = store(dir.path());
    let invoices = store.invoices().unwrap();
    assert_eq!(invoices, written, "one invoice, as if the tool ran once");
    assert_eq!(store.db().applied_count().unwrap(), 1);
}
