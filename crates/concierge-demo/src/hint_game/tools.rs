//! The hint game's tools: `give_hint` and `guess_location`. Both change the
//! game (a hint given, a guess counted) and deduplicate on the call's
//! idempotency key. A right guess succeeds, which finishes the goal
//! (`finish_on`); a wrong one is a failed call whose error says so, so the
//! goal goes on.

use std::sync::Arc;

use concierge::{Tool, ToolAnnotations, ToolContext, ToolError, ToolSpec};
use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::store::{GameStore, LOCATIONS, Location, names};
use crate::toolkit::{blocking, invalid};

fn location(name: &str) -> Option<&'static Location> {
    LOCATIONS.iter().find(|l| l.name == name)
}

fn game_tool_spec(name: &str, description: &str, schema: Value) -> ToolSpec {
    ToolSpec::new(name, description, schema)
        .category("games")
        .annotations(ToolAnnotations {
            idempotent: true,
            ..ToolAnnotations::default()
        })
}

/// No arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct NoArgs {}

/// Gives the next hint about the place to guess (starting a game when none
/// is open); the hints get easier.
#[derive(Clone, Debug)]
pub struct GiveHint {
    store: Arc<GameStore>,
}

impl GiveHint {
    /// The tool's name, as planners and models call it.
    pub const NAME: &'static str = "give_hint";

    /// The tool over `store`.
    pub fn new(store: Arc<GameStore>) -> Self {
        Self { store }
    }
}

impl Tool for GiveHint {
    type Args = NoArgs;

    fn spec(&self) -> ToolSpec {
        game_tool_spec(
            Self::NAME,
            "Gives the next hint about the place the person is guessing (starting a game when none is open); each hint is easier than the last.",
            concierge::tool::schema_for::<NoArgs>(),
        )
    }

    fn call(
        &self,
        _args: NoArgs,
        cx: ToolContext,
    ) -> impl std::future::Future<Output = Result<Value, ToolError>> + Send {
        let store = Arc::clone(&self.store);
        async move {
            blocking("the game database", move || {
                let session = cx.session_id.to_string();
                store
                    .apply(
                        cx.idempotency_key.as_str(),
                        GiveHint::NAME,
                        &session,
                        |tx, game, _now| {
                            let hints = location(&game.location).map_or(&[][..], |l| l.hints);
                            let total = hints.len() as i64;
                            let number = (game.hints_given + 1).min(total.max(1));
                            let hint = hints.get((number - 1) as usize).copied().unwrap_or_default();
                            tx.execute(
                                "UPDATE games SET hints_given = ?1 WHERE session_id = ?2 AND round = ?3",
                                params![number, game.session_id, game.round],
                            )?;
                            let message = if game.hints_given >= total {
                                format!(
                                    "That was the last hint: {hint} It starts with \"{}\". Your guess?",
                                    game.location.chars().next().unwrap_or(' ')
                                )
                            } else if number == 1 {
                                format!("I'm thinking of a place. Hint 1 of {total}: {hint} Where is it?")
                            } else {
                                format!("Hint {number} of {total}: {hint}")
                            };
                            Ok(json!({
                                "round": game.round,
                                "hint": hint,
                                "hint_number": number,
                                "hints_total": total,
                                "message": message,
                            }))
                        },
                    )
                    .map_err(|e| ToolError::failed(e.to_string()))
            })
            .await
        }
    }
}

/// `guess_location`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GuessLocationArgs {
    /// The place the person guesses (e.g. "Paris").
    pub guess: String,
}

/// Checks the person's guess of the place. A right guess wins the game; a
/// wrong one fails with a sentence saying so (and the game goes on).
#[derive(Clone, Debug)]
pub struct GuessLocation {
    store: Arc<GameStore>,
}

impl GuessLocation {
    /// The tool's name, as planners and models call it.
    pub const NAME: &'static str = "guess_location";

    /// The tool over `store`.
    pub fn new(store: Arc<GameStore>) -> Self {
        Self { store }
    }
}

impl Tool for GuessLocation {
    type Args = GuessLocationArgs;

    fn spec(&self) -> ToolSpec {
        game_tool_spec(
            Self::NAME,
            "Checks the person's guess of the place in the hint game. A right guess wins the game; a wrong one fails with a sentence saying so, and the game goes on.",
            concierge::tool::schema_for::<GuessLocationArgs>(),
        )
    }

    fn call(
        &self,
        args: GuessLocationArgs,
        cx: ToolContext,
    ) -> impl std::future::Future<Output = Result<Value, ToolError>> + Send {
        let store = Arc::clone(&self.store);
        async move {
            blocking("the game database", move || {
                let guess = args.guess.trim().trim_end_matches(['?', '!', '.']).trim().to_string();
                if guess.is_empty() {
                    return Err(invalid("guess", "Say which place you guess, e.g. Paris."));
                }
                let session = cx.session_id.to_string();
                let result = store
                    .apply(
                        cx.idempotency_key.as_str(),
                        GuessLocation::NAME,
                        &session,
                        |tx, game, now| {
                            let correct = location(&game.location).is_some_and(|l| names(l, &guess));
                            let guesses = game.guesses + 1;
                            tx.execute(
                                "UPDATE games SET guesses = ?1, solved_at = CASE WHEN ?2 THEN ?3 ELSE solved_at END \
                             WHERE session_id = ?4 AND round = ?5",
                                params![guesses, correct, now, game.session_id, game.round],
                            )?;
                            tx.execute(
                            "INSERT INTO guesses (session_id, round, guess, correct, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                            params![game.session_id, game.round, guess, correct, now],
                        )?;
                            let hints = game.hints_given;
                            let message = if correct {
                                format!(
                                    "Yes, it is {}! You got it with {} and {}.",
                                    game.location,
                                    count(hints, "hint", "hints"),
                                    count(guesses, "guess", "guesses")
                                )
                            } else if hints < 5 {
                                format!("No, it is not {guess}. Ask for another hint, or guess again.")
                            } else {
                                format!(
                                    "No, it is not {guess}. It starts with \"{}\"; guess again.",
                                    game.location.chars().next().unwrap_or(' ')
                                )
                            };
                            Ok(json!({
                                "round": game.round,
                                "guess": guess,
                                "correct": correct,
                                "location": if correct { Value::String(game.location.clone()) } else { Value::Null },
                                "guesses": guesses,
                                "hints_given": hints,
                                "message": message,
                            }))
                        },
                    )
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                // A wrong guess is recorded, and fails: the goal is not met.
                if result["correct"] == Value::Bool(true) {
                    Ok(result)
                } else {
                    Err(ToolError::failed(
                        result["message"].as_str().unwrap_or("That is not it.").to_string(),
                    ))
                }
            })
            .await
        }
    }
}

fn count(n: i64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
