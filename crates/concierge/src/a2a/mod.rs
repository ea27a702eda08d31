//! Remote agents over A2A 1.0 as tools (`[a2a_agents.NAME]`, docs/a2a.md,
//! "Calling remote agents"): an agent that names one in its `toolsets`
//! may call it with a message; the call follows the remote task to its
//! end, puts the remote's questions to the person, and after a crash goes
//! on with the same task instead of sending the message again.
//!
//! ```no_run
//! use concierge::a2a::A2aAgentConfig;
//! use concierge::{AgentSpec, Runtime};
//!
//! # async fn demo() -> concierge::Result<()> {
//! let runtime = Runtime::builder()
//!     .a2a_agent("booking", A2aAgentConfig::new("https://booking.example.com/a2a").description("Books trains."))
//!     .agent(AgentSpec::new("travel").toolset("booking"))
//!     .build()
//!     .await?;
//! # Ok(()) }
//! ```

mod config;
mod reply;
mod tool;

pub use config::A2aAgentConfig;
pub use tool::RemoteAgent;
