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
    },
    /// List tokens (names and roles; never the tokens).
    List,
    /// Revoke a token by name; it stops working at once.
    Revoke { name: String },
}

pub async fn run(pool: &PgPool, command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create { role, name } => {
            let name = name.trim();
            if name.is_empty() {
                bail!("--name must not be empty");
            }
            let token = tokens::generate();
            if tokens::create(pool, name, role, &token).await?.is_none() {
                bail!("a token named {name:?} already exists");
            }
            outln!("{token}")?;
            eprintln!("created {role} token {name:?}; store it now, it is not shown again");
        }
        TokenCommand::List => {
            for t in tokens::list(pool).await? {
                let state = match t.revoked_at {
                    Some(at) => format!("revoked {at}"),
                    None => "active".into(),
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
