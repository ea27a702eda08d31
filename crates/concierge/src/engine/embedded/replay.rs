//! Rebuilding a session from its journal: the one replay function, used to
//! load a session and to read its past events.

use std::sync::Arc;

use concierge_core::{Catalog, Event, Input, Session, SessionId};

use super::store::Loaded;
use crate::engine::Catalogs;
use crate::error::{Error, Result};

/// A session rebuilt from its journal.
#[derive(Debug, Default)]
pub(crate) struct Replayed {
    /// The session (`None` when the journal held nothing).
    pub session: Option<Session>,
    /// The index the next input gets.
    pub next_index: u64,
    /// The events with `seq >= from_seq`, when asked for.
    pub events: Vec<Event>,
}

fn replay_error(session: &SessionId, index: u64, input: &Input, reason: String) -> Error {
    Error::Replay {
        session: session.clone(),
        index,
        input: input.name(),
        reason,
    }
}

/// The catalog an input is stepped with: the version its run started with.
fn catalog_for(
    id: &SessionId,
    index: u64,
    input: &Input,
    session: Option<&Session>,
    loaded: &Loaded,
    catalogs: &Catalogs,
) -> Result<Arc<Catalog>> {
    let version = match input {
        Input::StartRun(start) => start.catalog_version.as_deref(),
        _ => session.and_then(Session::catalog_version),
    };
    if let Some(catalog) = catalogs.get(version) {
        return Ok(catalog);
    }
    let Some(version) = version else {
        return Err(replay_error(id, index, input, "has no catalog".into()));
    };
    match loaded.catalogs.get(version) {
        Some(recorded) => catalogs
            .restore(version, recorded)
            .map_err(|e| replay_error(id, index, input, e.to_string())),
        None => Err(replay_error(
            id,
            index,
            input,
            format!("ran with catalog version {version}, which the database does not record"),
        )),
    }
}

/// Replays `loaded` (its snapshot, then its inputs) with the catalog
/// versions the runs recorded; collects the events with `seq >= from_seq`
/// when `from_seq` is given (archived ones first, for a compacted journal). An input the core refuses is an error naming
/// the session and the input: the journal holds only accepted inputs, so a
/// refusal means this process cannot reproduce the session (another
/// configuration, a missing agent).
pub(crate) fn replay(
    id: &SessionId,
    mut loaded: Loaded,
    catalogs: &Catalogs,
    from_seq: Option<u64>,
) -> Result<Replayed> {
    let (mut session, mut next_index) = match loaded.snapshot.take() {
        Some((index, session)) => (Some(session), index + 1),
        None => (None, 0),
    };
    let inputs = std::mem::take(&mut loaded.inputs);
    // A compacted journal's events before its snapshot were archived.
    let mut events: Vec<Event> = match from_seq {
        Some(from) => std::mem::take(&mut loaded.archived)
            .into_iter()
            .filter(|e| e.seq >= from)
            .collect(),
        None => Vec::new(),
    };
    for (index, input) in inputs {
        let catalog = catalog_for(id, index, &input, session.as_ref(), &loaded, catalogs)?;
        let state = match session.as_mut() {
            Some(state) => state,
            None => {
                let agent = match &input {
                    Input::StartRun(start) => start.agent.clone(),
                    Input::Open(open) => Some(open.agent.clone()),
                    _ => None,
                };
                let Some(agent) = agent else {
                    return Err(replay_error(
                        id,
                        index,
                        &input,
                        "comes first but does not start a run with an agent; the journal is damaged".into(),
                    ));
                };
                session.insert(Session::new(id.clone(), agent))
            }
        };
        let name = input.name();
        match state.step(input, &catalog) {
            Ok(step) => {
                if let Some(from) = from_seq {
                    events.extend(step.events.into_iter().filter(|e| e.seq >= from));
                }
            }
            Err(error) => {
                return Err(Error::Replay {
                    session: id.clone(),
                    index,
                    input: name,
                    reason: format!(
                        "is refused here ({error}); open the database with the configuration the session ran with"
                    ),
                });
            }
        }
        next_index = index + 1;
    }
    Ok(Replayed {
        session,
        next_index,
        events,
    })
}
