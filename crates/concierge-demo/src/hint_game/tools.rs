//! The hint game's tools: `give_hint` and `guess_location`. Both change the
//! game (a hint given, a guess counted) and deduplicate on the call's
//! idempotency key. A right guess succeeds, which finishes the goal
//! (`finish_on`); a wrong one is a failed call whose error says so, so the
//! goal goes on.

use concierge::{ToolAnnotations, ToolError};
use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::store::{GameStore, LOCATIONS, Location, names};
use crate::toolkit::{db_tool, failed, invalid, plural};

fn location(name: &str) -> Option<&'static Location> {
    LOCATIONS.iter().find(|l| l.name == name)
}

/// Annotations of a game move: it changes the game, once per idempotency key.
fn plays() -> ToolAnnotations {
    ToolAnnotations {
        idempotent: true,
        ..ToolAnnotations::default()
    }
}

/// No arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct NoArgs {}

db_tool!(
    /// Gives the next hint about the place the person is guessing (starting
    /// a game when none is open); each hint is easier than the last.
    GiveHint, "give_hint", GameStore, "games", NoArgs, plays(), None,
    |store, args, cx| {
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
            .map_err(failed)
    }
);

/// `guess_location`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GuessLocationArgs {
    /// The place the person guesses (e.g. "Paris").
    pub guess: String,
}

db_tool!(
    /// Checks the person's guess of the place in the hint game. A right guess
    /// wins the game; a wrong one fails with a sentence saying so, and the
    /// game goes on.
    GuessLocation, "guess_location", GameStore, "games", GuessLocationArgs, plays(), None,
    |store, args, cx| {
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
                            plural(hints, "hint", "hints"),
                            plural(guesses, "guess", "guesses")
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
            .map_err(failed)?;
        // A wrong guess is recorded, and fails: the goal is not met.
        if result["correct"] == Value::Bool(true) {
            Ok(result)
        } else {
            Err(ToolError::failed(
                result["message"].as_str().unwrap_or("That is not it.").to_string(),
            ))
        }
    }
);
