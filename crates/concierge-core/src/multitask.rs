//! What happens to a message that arrives while a run of its session is
//! still working.

use serde::{Deserialize, Serialize};

/// What a message that arrives while its session's run is in progress
/// does. (A run that waits for the person is not in progress: a message
/// then answers it.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Multitask {
    /// Refused: the caller is told a run is in progress and tries later.
    #[default]
    Reject,
    /// Queued: it runs as soon as the run in progress stops (also one that
    /// a process that died left, once another process has taken it over).
    Enqueue,
    /// The run in progress is cancelled, then it runs.
    Interrupt,
}

impl Multitask {
    /// Its name, as written in files and requests.
    pub fn as_str(self) -> &'static str {
        match self {
            Multitask::Reject => "reject",
            Multitask::Enqueue => "enqueue",
            Multitask::Interrupt => "interrupt",
        }
    }
}

impl std::fmt::Display for Multitask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Multitask {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "reject" => Ok(Self::Reject),
            "enqueue" => Ok(Self::Enqueue),
            "interrupt" => Ok(Self::Interrupt),
            other => Err(format!(
                "{other:?} is not a multitask policy: use reject, enqueue or interrupt"
            )),
        }
    }
}
