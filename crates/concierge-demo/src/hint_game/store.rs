//! The hint game's state: one row per game (a session plays round after
//! round), the guesses made, and the idempotency keys of the calls already
//! applied (a retried hint is the same hint, not the next one).

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::Serialize;
use serde_json::Value;

use crate::domain_db::{DbSpec, Domain, Store, StoreError, rows, stored_time};

/// The environment variable naming the game database.
pub const DB_ENV: &str = "CONCIERGE_HINT_GAME_DB";
/// The game database when [`DB_ENV`] is not set (in the working directory).
pub const DEFAULT_DB: &str = "hint_game.db";

/// A place to guess: its name, other names people use for it, and its
/// hints from the hardest to the easiest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Its name.
    pub name: &'static str,
    /// Other accepted answers.
    pub aliases: &'static [&'static str],
    /// The hints, hardest first.
    pub hints: &'static [&'static str],
}

/// The places the game chooses from.
pub const LOCATIONS: &[Location] = &[
    Location {
        name: "Paris",
        aliases: &["paris france"],
        hints: &[
            "It is a capital city on a river that flows to the English Channel.",
            "Its underground railway opened in 1900, for a world's fair.",
            "Its most famous museum keeps a small portrait behind glass.",
            "A wrought-iron tower built in 1889 stands over it.",
            "It is the capital of France.",
        ],
    },
    Location {
        name: "Tokyo",
        aliases: &["tokyo japan", "edo"],
        hints: &[
            "It was once a fishing village called by another name.",
            "The world's busiest pedestrian crossing is in one of its districts.",
            "It hosted the Summer Olympics twice, in 1964 and 2021.",
            "Mount Fuji can be seen from it on a clear day.",
            "It is the capital of Japan.",
        ],
    },
    Location {
        name: "Rio de Janeiro",
        aliases: &["rio", "rio de janeiro brazil"],
        hints: &[
            "Its name means \"river of January\".",
            "A cable car climbs a granite peak called Sugarloaf.",
            "Its carnival is said to be the biggest in the world.",
            "A statue of Christ with open arms looks down on it.",
            "It is Brazil's most famous city by the beach of Copacabana.",
        ],
    },
    Location {
        name: "Cairo",
        aliases: &["cairo egypt"],
        hints: &[
            "Its name means \"the victorious\".",
            "It is the largest city of the Arab world.",
            "The world's longest river runs through it.",
            "Three great pyramids stand at its edge, at Giza.",
            "It is the capital of Egypt.",
        ],
    },
    Location {
        name: "Reykjavik",
        aliases: &["reykjavík", "reykjavik iceland"],
        hints: &[
            "Its name means \"smoky bay\", after the steam of its hot springs.",
            "It is the northernmost capital of a sovereign state.",
            "In winter the northern lights can be seen from its streets.",
            "Its church, Hallgrímskirkja, looks like basalt columns.",
            "It is the capital of Iceland.",
        ],
    },
    Location {
        name: "Cape Town",
        aliases: &["capetown", "cape town south africa"],
        hints: &[
            "It was founded as a supply station for ships in 1652.",
            "Penguins live on a beach a short drive away.",
            "A flat-topped mountain, often under a \"tablecloth\" of cloud, rises behind it.",
            "Robben Island lies in its bay.",
            "It is South Africa's city at the tip of the continent, near the Cape of Good Hope.",
        ],
    },
    Location {
        name: "New York",
        aliases: &["new york city", "nyc", "manhattan"],
        hints: &[
            "It was once called New Amsterdam.",
            "Its park in the middle of an island is 4 km long.",
            "A statue given by France holds a torch in its harbour.",
            "Its nickname is the Big Apple.",
            "It is the largest city of the United States.",
        ],
    },
    Location {
        name: "Rome",
        aliases: &["roma", "rome italy"],
        hints: &[
            "Legend says twin brothers raised by a wolf founded it.",
            "A whole country lies inside it.",
            "People throw coins into its most famous fountain to be sure to return.",
            "Gladiators fought in its Colosseum.",
            "It is the capital of Italy.",
        ],
    },
];

/// The place session `session` plays in its `round`-th game: chosen from
/// the session's id (FNV-1a), the next place each new round.
pub fn secret(session: &str, round: i64) -> &'static Location {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in session.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let offset = u64::try_from(round.max(1) - 1).unwrap_or(0);
    let index = (hash.wrapping_add(offset) % LOCATIONS.len() as u64) as usize;
    &LOCATIONS[index]
}

/// Whether `guess` names `location` (its name or an alias, case, accents of
/// the alias list, punctuation and a leading "the" aside).
pub fn names(location: &Location, guess: &str) -> bool {
    let normal = |s: &str| -> String {
        let s: String = s
            .to_lowercase()
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .collect();
        let words: Vec<&str> = s.split_whitespace().filter(|w| *w != "the").collect();
        words.join(" ")
    };
    let guess = normal(guess);
    !guess.is_empty() && (normal(location.name) == guess || location.aliases.iter().any(|a| normal(a) == guess))
}

/// One game of a session, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Game {
    /// The session playing.
    pub session_id: String,
    /// Which game of the session (1 for the first).
    pub round: i64,
    /// The place to guess.
    pub location: String,
    /// How many hints were given.
    pub hints_given: i64,
    /// How many guesses were made.
    pub guesses: i64,
    /// When the place was guessed, if it was.
    pub solved_at: Option<String>,
}

/// The hint game, as a [`Store`] knows it: its database, which starts
/// empty (a game starts when a session first asks).
#[derive(Clone, Copy, Debug)]
pub enum HintGame {}

impl Domain for HintGame {
    const DB: DbSpec = DbSpec::new("game", DB_ENV, DEFAULT_DB, SCHEMA);
}

/// The game database.
pub type GameStore = Store<HintGame>;

impl GameStore {
    /// The session's latest game, if it played.
    pub fn game(&self, session: &str) -> Result<Option<Game>, StoreError> {
        self.db().read(|conn| latest(conn, session))
    }

    /// The guesses of the session's games, in order: (round, guess, correct).
    pub fn guesses(&self, session: &str) -> Result<Vec<(i64, String, bool)>, StoreError> {
        self.db().read(|conn| {
            rows(
                conn,
                "SELECT round, guess, correct FROM guesses WHERE session_id = ?1 ORDER BY id",
                [session],
                |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? != 0)),
            )
        })
    }

    /// Runs `change` with the session's game as it stands (a new one when
    /// none is open) and the time as stored, once per idempotency key (see
    /// [`DomainDb::apply`](crate::domain_db::DomainDb::apply)).
    pub fn apply<F>(&self, key: &str, tool: &str, session: &str, change: F) -> Result<Value, StoreError>
    where
        F: FnOnce(&Transaction<'_>, &Game, &str) -> rusqlite::Result<Value>,
    {
        self.db().apply(key, tool, |tx, now| {
            let now = stored_time(now);
            let game = open_game(tx, session, &now).map_err(|e| self.db().error(e))?;
            change(tx, &game, &now).map_err(|e| self.db().error(e))
        })
    }
}

/// The session's open game, or a new one (the next round) when its last
/// one was solved or it never played.
fn open_game(tx: &Transaction<'_>, session: &str, now: &str) -> rusqlite::Result<Game> {
    let round = match latest(tx, session)? {
        Some(game) if game.solved_at.is_none() => return Ok(game),
        previous => previous.map_or(1, |g| g.round + 1),
    };
    let location = secret(session, round).name;
    tx.execute(
        "INSERT INTO games (session_id, round, location, hints_given, guesses, started_at) \
         VALUES (?1, ?2, ?3, 0, 0, ?4)",
        params![session, round, location, now],
    )?;
    Ok(Game {
        session_id: session.to_string(),
        round,
        location: location.to_string(),
        hints_given: 0,
        guesses: 0,
        solved_at: None,
    })
}

fn latest(conn: &Connection, session: &str) -> rusqlite::Result<Option<Game>> {
    conn.query_row(
        "SELECT session_id, round, location, hints_given, guesses, solved_at FROM games \
         WHERE session_id = ?1 ORDER BY round DESC LIMIT 1",
        [session],
        |r| {
            Ok(Game {
                session_id: r.get(0)?,
                round: r.get(1)?,
                location: r.get(2)?,
                hints_given: r.get(3)?,
                guesses: r.get(4)?,
                solved_at: r.get(5)?,
            })
        },
    )
    .optional()
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS games (
    session_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    location TEXT NOT NULL,
    hints_given INTEGER NOT NULL DEFAULT 0,
    guesses INTEGER NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL,
    solved_at TEXT,
    PRIMARY KEY (session_id, round)
);
CREATE TABLE IF NOT EXISTS guesses (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    guess TEXT NOT NULL,
    correct INTEGER NOT NULL,
    at TEXT NOT NULL
);
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_depends_on_the_session_alone() {
        assert_eq!(secret("s1", 1).name, secret("s1", 1).name);
        assert_ne!(
            secret("s1", 1).name,
            secret("s1", 2).name,
            "the next round plays another place"
        );
        let distinct: std::collections::BTreeSet<&str> =
            (0..40).map(|i| secret(&format!("session-{i}"), 1).name).collect();
        assert!(distinct.len() > 4, "sessions spread over the places: {distinct:?}");
        assert!(LOCATIONS.iter().all(|l| l.hints.len() == 5));
    }

    #[test]
    fn guesses_match_names_and_aliases() {
        let rio = LOCATIONS.iter().find(|l| l.name == "Rio de Janeiro").unwrap();
        assert!(names(rio, "rio"));
        assert!(names(rio, "Rio de Janeiro!"));
        assert!(!names(rio, "Rome"));
        assert!(!names(rio, "  "));
        let ny = LOCATIONS.iter().find(|l| l.name == "New York").unwrap();
        assert!(names(ny, "NYC"));
        assert!(names(ny, "new york city"));
        assert!(!names(ny, "York"), "only whole names count");
    }
}
