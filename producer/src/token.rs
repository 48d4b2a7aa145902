//! `faultline token`: create, list and revoke API tokens. A token is printed
//! once, at creation; only its SHA-256 is stored.

use anyhow::bail;
use clap::Subcommand;
use faultline_shared::storage::tokens::{self, Role};
use sqlx::PgPool;

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it (the only time it is shown).
    Create {
        /// ingest (submit analyses), reviewer (read analyses) or admin (everything).
        #[arg(long)]
        role: Role,
        /// A unique name saying who or what uses the token.
        #[arg(long)]
        name: String,
        /// The token stops working this long from now (`90m`, `12h`, `30d`);
        /// without it the token works until revoked.
        #[arg(long, value_parser = faultline_shared::config::parse_duration)]
        expires_in: Option<std::time::Duration>,
    },
    /// List tokens (names, roles, revocation and expiry; never the tokens).
    List,
    /// Revoke a token by name; it stops working at once.
    Revoke { name: String },
}

pub async fn run(pool: &PgPool, command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create {
            role,
            name,
            expires_in,
        } => {
            let name = name.trim();
            if name.is_empty() {
                bail!("--name must not be empty");
            }
            let token = tokens::generate();
            let Some(row) = tokens::create(pool, name, role, &token, expires_in).await? else {
                bail!("a token named {name:?} already exists");
            };
            outln!("{token}")?;
            let until = match row.expires_at {
                Some(at) => format!(", valid until {at}"),
                None => String::new(),
            };
            eprintln!("created {role} token {name:?}{until}; store it now, it is not shown again");
        }
        TokenCommand::List => {
            for t in tokens::list(pool).await? {
                let now = chrono::Utc::now();
                let state = match (t.revoked_at, t.expires_at) {
                    (Some(at), _) => format!("revoked {at}"),
                    (None, Some(at)) if at <= now => format!("expired {at}"),
                    (None, Some(at)) => format!("active, expires {at}"),
                    (None, None) => "active".into(),
                };
                outln!(
                    "{:<24} {:<8} created {}  {state}",
                    t.name,
                    t.role,
                    t.created_at
                )?;
            }
        }
        TokenCommand::Revoke { name } => {
            if !tokens::revoke(pool, &name).await? {
                bail!("no active token named {name:?}");
            }
            outln!("revoked {name:?}")?;
        }
    }
    Ok(())
}
