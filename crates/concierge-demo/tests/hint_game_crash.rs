//! Crashes inside the hint game's tools: the runtime runs in a child
//! process (this test binary, re-executed) that is killed with SIGKILL after
//! `give_hint` or `guess_location` wrote the game's state and before the
//! result was journaled; a new process on the same databases resumes the
//! run. The game is as if the tool ran once: one hint given (not two), one
//! guess counted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;

use concierge::config::load_agents;
use concierge::{RunOptions, Runtime, Tool, ToolContext, ToolError, ToolSpec, Toolset};
use concierge_demo::hint_game::GameStore;
use concierge_demo::hint_game::store::secret;
use concierge_demo::hint_game::tools::{GiveHint, GuessLocation};
use serde_json::Value;

const SESSION: &str = "crash";

/// A real tool that, when `CRASH_AT` names it, blocks after it ran (so the
/// process dies before the result is journaled).
#[derive(Clone)]
struct Crashing<T> {
    inner: T,
}

impl<T: Tool + Clone> Tool for Crashing<T> {
    type Args = T::Args;

    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }

    fn call(
        &self,
        args: T::Args,
        cx: ToolContext,
    ) -> impl std::future::Future<Output = Result<Value, ToolError>> + Send {
        let inner = self.inner.clone();
        let name = self.inner.spec().name.to_string();
        async move {
            let result = inner.call(args, cx).await;
            if std::env::var("CRASH_AT").as_deref() == Ok(name.as_str()) {
                announce(&name);
                futures::future::pending::<()>().await;
            }
            result
        }
    }
}

fn announce(what: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY {what}");
    let _ = out.flush();
}

/// The child process. Not a test by itself: the tests below run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the crash tests"]
async fn game_crash_child() {
    let dir = PathBuf::from(std::env::var("CRASH_DIR").expect("CRASH_DIR"));
    let store = Arc::new(GameStore::open(dir.join("hint_game.db")));
    let toolset = Toolset::new("hint_game")
        .tool(Crashing {
            inner: GiveHint::new(Arc::clone(&store)),
        })
        .tool(Crashing {
            inner: GuessLocation::new(store),
        });
    let agents_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/assistant/agents");
    let agents: Vec<_> = load_agents(&agents_dir)
        .unwrap()
        .agents
        .into_iter()
        .filter(|a| a.id.as_str() == "hint_game")
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
        // A liveness guard, not a timing assertion.
        let output = tokio::time::timeout(std::time::Duration::from_secs(60), rt.wait(SESSION))
            .await
            .expect("the resumed run did not finish")
            .unwrap()
            .expect("a run was in flight");
        println!("REPLY {}", output.reply.unwrap_or_default());
        return;
    }
    let client = rt.client("hint_game").unwrap();
    let text = std::env::var("CRASH_SAY").unwrap();
    let _ = client.run(text, RunOptions::new().session_id(SESSION)).await;
}

fn spawn(dir: &Path, crash_at: &str, say: &str, mode: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "game_crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CRASH_DIR", dir)
        .env("CRASH_AT", crash_at)
        .env("CRASH_SAY", say)
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

/// Says `text` in a child that dies inside `tool`, then resumes; returns the resumed reply.
fn killed_inside(dir: &Path, tool: &str, text: &str) -> String {
    let (mut child, mut out) = spawn(dir, tool, text, "run");
    read_until(&mut out, &format!("READY {tool}"));
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());
    let (mut child, mut out) = spawn(dir, "", "", "resume");
    let reply = read_until(&mut out, "REPLY ");
    assert!(child.wait().unwrap().success());
    reply
}

#[test]
fn killed_inside_give_hint_then_guess_location_each_counts_once() {
    let dir = tempfile::tempdir().unwrap();
    let place = secret(SESSION, 1);
    let store = GameStore::open(dir.path().join("hint_game.db"));

    let reply = killed_inside(dir.path(), "give_hint", "give me a hint");
    assert_eq!(
        reply,
        format!("I'm thinking of a place. Hint 1 of 5: {} Where is it?", place.hints[0]),
        "the retried call is the same hint, not the next"
    );
    let game = store.game(SESSION).unwrap().unwrap();
    assert_eq!((game.hints_given, game.guesses), (1, 0));

    let reply = killed_inside(dir.path(), "guess_location", "is it Atlantis?");
    assert_eq!(reply, "No, it is not Atlantis. Ask for another hint, or guess again.");
    let game = store.game(SESSION).unwrap().unwrap();
    assert_eq!((game.hints_given, game.guesses), (1, 1), "one guess counted");
    assert_eq!(store.guesses(SESSION).unwrap(), [(1, "Atlantis".to_string(), false)]);
}
