//! The assistant's hint game (`examples/assistant/agents/hint_game.toml`)
//! through the hub of the assistant, on rules and with a scripted model:
//! the place comes from the session's id, the hints and guesses are rows
//! in SQLite (a game survives a restart of the runtime), and guessing the
//! place completes the goal.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use concierge::config::{Config, load_agents};
use concierge::model::ScriptedModel;
use concierge::{ModelReply, RunOptions, RunOutput, RunStatus, Runtime};
use concierge_demo::hint_game::store::secret;
use concierge_demo::hint_game::{GameStore, toolset_with};
use serde_json::json;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/assistant")
}

/// The assistant with every goal file and demo toolset, the game's and the
/// engine's databases in `dir`.
async fn runtime(dir: &Path, model: Option<ScriptedModel>) -> Runtime {
    let config = Config::load(&example().join("concierge.toml"), true).unwrap();
    let mut agents = Vec::new();
    let mut servers = std::collections::BTreeMap::new();
    for agents_dir in config.agents_dir.iter().chain(&config.agents_dirs) {
        let files = load_agents(agents_dir).unwrap();
        servers.extend(files.mcp_servers);
        agents.extend(files.agents);
    }
    let mut builder = Runtime::builder().sqlite(dir.join("concierge.db"));
    for set in concierge_demo::toolsets() {
        if set.name() != concierge_demo::hint_game::TOOLSET {
            builder = builder.toolset(set);
        }
    }
    let builder = builder
        .toolset(toolset_with(GameStore::open(dir.join("hint_game.db"))))
        .agents(concierge_demo::agents())
        .agent_files(concierge::config::AgentFiles {
            agents,
            mcp_servers: servers,
            ..Default::default()
        });
    let mut builder = config.apply_hub(builder);
    if let Some(model) = model {
        builder = builder.model(model);
    }
    builder.build().await.unwrap()
}

async fn say(rt: &Runtime, session: &str, text: &str) -> RunOutput {
    rt.send(text, RunOptions::new().session_id(session)).await.unwrap()
}

async fn agent_of(rt: &Runtime, session: &str) -> String {
    let sessions = rt.sessions().await.unwrap();
    sessions
        .iter()
        .find(|s| s.id.as_str() == session)
        .unwrap()
        .agent
        .to_string()
}

#[tokio::test]
async fn rules_hints_and_guesses_survive_a_restart_and_the_right_guess_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let place = secret("g1", 1);
    let rt = runtime(dir.path(), None).await;
    let out = say(&rt, "g1", "let's play the hint game").await;
    assert_eq!(out.agent.as_str(), "hint_game", "the hub routed by the goal's intents");
    assert_eq!(
        out.reply.as_deref(),
        Some(format!("I'm thinking of a place. Hint 1 of 5: {} Where is it?", place.hints[0]).as_str())
    );
    let out = say(&rt, "g1", "is it Atlantis?").await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        out.reply.as_deref(),
        Some("No, it is not Atlantis. Ask for another hint, or guess again.")
    );
    assert_eq!(
        agent_of(&rt, "g1").await,
        "hint_game",
        "a wrong guess does not finish the game"
    );
    let out = say(&rt, "g1", "another hint please").await;
    assert_eq!(
        out.reply.as_deref(),
        Some(format!("Hint 2 of 5: {}", place.hints[1]).as_str())
    );
    rt.shutdown().await;
    drop(rt);

    // A new runtime on the same files: the game goes on where it was.
    let rt = runtime(dir.path(), None).await;
    let out = say(&rt, "g1", "one more clue").await;
    assert_eq!(
        out.reply.as_deref(),
        Some(format!("Hint 3 of 5: {}", place.hints[2]).as_str())
    );
    let out = say(&rt, "g1", &format!("is it {}?", place.name)).await;
    assert_eq!(
        out.reply.as_deref(),
        Some(format!("Yes, it is {}! You got it with 3 hints and 2 guesses.", place.name).as_str())
    );
    assert_eq!(agent_of(&rt, "g1").await, "hub", "the right guess completed the goal");

    let store = GameStore::open(dir.path().join("hint_game.db"));
    let game = store.game("g1").unwrap().unwrap();
    assert_eq!((game.round, game.location.as_str()), (1, place.name));
    assert_eq!((game.hints_given, game.guesses), (3, 2));
    assert!(game.solved_at.is_some());
    assert_eq!(
        store.guesses("g1").unwrap(),
        [(1, "Atlantis".to_string(), false), (1, place.name.to_string(), true)]
    );
}

#[tokio::test]
async fn rules_the_same_session_plays_the_same_place_and_a_new_round_another() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let rt = runtime(a.path(), None).await;
    let first = say(&rt, "same-id", "give me a hint").await;
    let second = say(&runtime(b.path(), None).await, "same-id", "give me a hint").await;
    assert_eq!(first.reply, second.reply, "the secret comes from the session id");

    let place = secret("same-id", 1);
    say(&rt, "same-id", place.name).await;
    assert_eq!(agent_of(&rt, "same-id").await, "hub");
    // Playing again in the same session: round 2, another place.
    let out = say(&rt, "same-id", "let's play the hint game again").await;
    let next = secret("same-id", 2);
    assert_ne!(next.name, place.name);
    assert_eq!(
        out.reply.as_deref(),
        Some(format!("I'm thinking of a place. Hint 1 of 5: {} Where is it?", next.hints[0]).as_str())
    );
    let game = GameStore::open(a.path().join("hint_game.db"))
        .game("same-id")
        .unwrap()
        .unwrap();
    assert_eq!(
        (game.round, game.location.as_str(), game.hints_given),
        (2, next.name, 1)
    );
}

#[tokio::test]
async fn model_plays_a_wrong_then_a_right_guess() {
    let dir = tempfile::tempdir().unwrap();
    let place = secret("m1", 1);
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("give_hint", "{}"))
        .reply(ModelReply::text("Here is your first hint."))
        .reply(ModelReply::tool_call("guess_location", r#"{"guess": "Atlantis"}"#))
        .reply(ModelReply::text("Not Atlantis, sorry! Want another hint?"))
        .reply(ModelReply::tool_call(
            "guess_location",
            json!({"guess": place.name.to_lowercase()}).to_string(),
        ))
        .reply(ModelReply::text("Well done!"));
    let rt = runtime(dir.path(), Some(model.clone())).await;
    let out = say(&rt, "m1", "I'd like to play a guessing game").await;
    assert_eq!(out.agent.as_str(), "hint_game");
    assert_eq!(model.requests().len(), 2, "the routing needed no model call");
    assert_eq!(out.tool_executions[0].tool.as_str(), "give_hint");
    let out = say(&rt, "m1", "is it Atlantis?").await;
    assert_eq!(out.reply.as_deref(), Some("Not Atlantis, sorry! Want another hint?"));
    assert!(!out.tool_executions[0].outcome.is_ok(), "a wrong guess fails");
    assert_eq!(agent_of(&rt, "m1").await, "hint_game");
    let out = say(&rt, "m1", &format!("{}?", place.name)).await;
    assert_eq!(out.reply.as_deref(), Some("Well done!"));
    assert_eq!(agent_of(&rt, "m1").await, "hub");
    let game = GameStore::open(dir.path().join("hint_game.db"))
        .game("m1")
        .unwrap()
        .unwrap();
    assert_eq!((game.hints_given, game.guesses), (1, 2));
    assert!(game.solved_at.is_some());
}
