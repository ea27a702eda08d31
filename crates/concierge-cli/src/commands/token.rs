//! `concierge token new`: makes an API token for `concierge serve` and
//! prints it once, with the configuration lines that hold its hash.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use concierge::{Error, Result};
use concierge_server::Tokens;

/// `concierge token`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub command: TokenCommand,
}

/// What to do with tokens.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Makes a new token for a tenant and a user.
    New {
        /// The tenant the token acts for: it sees that tenant's sessions only.
        #[arg(long)]
        tenant: String,
        /// The user the token's runs are for (tools see it).
        #[arg(long)]
        user: String,
    },
}

pub fn token(args: &TokenArgs) -> Result<ExitCode> {
    match &args.command {
        TokenCommand::New { tenant, user } => {
            let (tenant, user) = (tenant.trim(), user.trim());
            if tenant.is_empty() || user.is_empty() {
                return Err(Error::InvalidConfig(
                    "give a tenant and a user: --tenant T --user U".into(),
                ));
            }
            concierge::SessionId::check_tenant(tenant).map_err(Error::InvalidConfig)?;
            let (token, hash) = Tokens::generate()
                .map_err(|e| Error::InvalidConfig(format!("the system gave no randomness for a token: {e}")))?;
            println!("{token}");
            eprintln!(
                "The token above is shown once; give it to the client (Authorization: Bearer <token>).\nAdd these lines to concierge.toml; only the hash is kept:\n"
            );
            eprintln!("[[server.tokens]]\nhash = \"{hash}\"\ntenant = {tenant:?}\nuser = {user:?}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
