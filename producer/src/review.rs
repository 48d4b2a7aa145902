//! `faultline review …`: the review queue from a terminal. The CLI user
//! (`--as`, else `$USER`) is who the audit trail records; `--admin` closes
//! items claimed by someone else (the CLI talks to the database directly, so
//! it is trusted like an admin token when asked to be).

use anyhow::Context;
use clap::{Args, Subcommand};
use faultline_shared::{
    Settings,
    storage::{
        resolution::{self, Decision},
        review::{self, Actor, Filter, ReviewRow, Via},
        runs,
    },
};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

#[derive(Subcommand)]
pub enum ReviewCommand {
    /// List review items, oldest first (default: open and claimed).
    List {
        #[command(flatten)]
        filter: FilterArgs,
        #[arg(long, default_value_t = 100)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
    /// Claim ITEM, or the oldest open item matching the filters; the claim
    /// lapses after REVIEW_CLAIM_TTL.
    Claim {
        item: Option<Uuid>,
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        who: WhoArgs,
        #[arg(long)]
        json: bool,
    },
    /// Resolve a claimed item: accept the agent's answer, or correct it.
    Resolve {
        item: Uuid,
        /// Keep the agent's category, root cause and fix.
        #[arg(long, conflicts_with_all = ["category", "root_cause", "fix"])]
        accept: bool,
        /// The right category (CODE_ERROR, INFRA_ERROR, CONFIG_ERROR, DEPENDENCY_ERROR, TEST_FAILURE).
        #[arg(long)]
        category: Option<String>,
        #[arg(long)]
        root_cause: Option<String>,
        #[arg(long)]
        fix: Option<String>,
        #[arg(long)]
        comment: Option<String>,
        #[command(flatten)]
        who: WhoArgs,
        #[arg(long)]
        json: bool,
    },
    /// Dismiss a claimed item (nothing to learn from it).
    Dismiss {
        item: Uuid,
        #[arg(long)]
        comment: Option<String>,
        #[command(flatten)]
        who: WhoArgs,
    },
    /// Show an item, its run's answer and its audit trail.
    Show {
        item: Uuid,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct FilterArgs {
    /// Comma-separated: open, claimed, resolved, dismissed.
    #[arg(long)]
    status: Option<String>,
    #[arg(long)]
    category: Option<String>,
    #[arg(long)]
    min_confidence: Option<f32>,
    #[arg(long)]
    max_confidence: Option<f32>,
    /// Only items at least this old (90s, 30m, 2h, 7d).
    #[arg(long)]
    older_than: Option<String>,
    /// Only items at most this old.
    #[arg(long)]
    newer_than: Option<String>,
}

impl FilterArgs {
    fn filter(&self) -> anyhow::Result<Filter> {
        Filter::parse(
            self.status.as_deref(),
            self.category.as_deref(),
            self.min_confidence,
            self.max_confidence,
            self.older_than.as_deref(),
            self.newer_than.as_deref(),
        )
        .map_err(|e| anyhow::anyhow!("--{}", e.replacen('_', "-", 1)))
    }
}

#[derive(Args)]
pub struct WhoArgs {
    /// Reviewer name recorded in the audit trail (default: $USER).
    #[arg(long = "as")]
    name: Option<String>,
    /// Act as an admin: close items claimed by someone else.
    #[arg(long)]
    admin: bool,
}

impl WhoArgs {
    fn actor(&self) -> anyhow::Result<Actor> {
        let name = self
            .name
            .clone()
            .or_else(|| std::env::var("USER").ok())
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .context("say who you are with --as NAME (USER is not set)")?;
        Ok(Actor {
            name,
            via: Via::Cli,
            admin: self.admin,
        })
    }
}

pub async fn run(pool: &PgPool, settings: &Settings, command: ReviewCommand) -> anyhow::Result<()> {
    match command {
        ReviewCommand::List {
            filter,
            limit,
            json,
        } => {
            let items = review::list(pool, &filter.filter()?, limit).await?;
            print_list(&items, json)?;
        }
        ReviewCommand::Claim {
            item,
            filter,
            who,
            json,
        } => {
            let actor = who.actor()?;
            let ttl = settings.review_claim_ttl;
            let row = match item {
                Some(id) => review::claim(pool, id, &actor, ttl).await?,
                None => review::claim_next(pool, &actor, ttl, &filter.filter()?)
                    .await?
                    .context("no open review item matches")?,
            };
            print_claimed(&row, json)?;
        }
        ReviewCommand::Resolve {
            item,
            accept,
            category,
            root_cause,
            fix,
            comment,
            who,
            json,
        } => {
            let decision = Decision {
                accept: accept || (category.is_none() && root_cause.is_none() && fix.is_none()),
                category,
                root_cause,
                fix,
                comment,
            };
            let resolved = resolution::resolve(pool, item, &who.actor()?, &decision).await?;
            print_resolved(&resolved, json)?;
        }
        ReviewCommand::Dismiss { item, comment, who } => {
            resolution::dismiss(pool, item, &who.actor()?, comment.as_deref()).await?;
            outln!("dismissed {item}")?;
        }
        ReviewCommand::Show { item, json } => show(pool, item, json).await?,
    }
    Ok(())
}

fn print_claimed(row: &ReviewRow, json: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(row)?)?;
    } else {
        outln!(
            "claimed {} (run {}) until {}",
            row.id,
            row.run_id,
            row.claim_expires_at
                .map(|t| t.to_rfc3339())
                .unwrap_or_default()
        )?;
    }
    Ok(())
}

fn print_resolved(resolved: &resolution::Resolved, json: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(resolved)?)?;
        return Ok(());
    }
    let r = resolved.item.resolution.clone().unwrap_or_default();
    outln!(
        "resolved {}: {} — {}",
        resolved.item.id,
        r["category"].as_str().unwrap_or("?"),
        r["root_cause"].as_str().unwrap_or("")
    )?;
    match resolved.library_id {
        Some(_) => outln!("  the error library now answers this fingerprint")?,
        None => outln!("  (the run has no fingerprint: nothing added to the error library)")?,
    }
    Ok(())
}

async fn show(pool: &PgPool, id: Uuid, as_json: bool) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let item = review::get(&mut conn, id)
        .await?
        .with_context(|| format!("review item {id} not found"))?;
    drop(conn);
    let run = runs::get(pool, item.run_id).await?;
    let audit = review::audit(pool, id).await?;
    if as_json {
        let out = json!({"item": item, "result": run.and_then(|r| r.result), "audit": audit});
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(());
    }
    outln!(
        "review item {}  {}  (run {})",
        item.id,
        item.status,
        item.run_id
    )?;
    outln!("  reason:     {}", item.reason)?;
    if let Some(result) = run.and_then(|r| r.result) {
        outln!(
            "  answer:     {} {:.2} — {}",
            result["category"].as_str().unwrap_or("?"),
            result["confidence"].as_f64().unwrap_or(0.0),
            result["root_cause"].as_str().unwrap_or("")
        )?;
        for (label, text) in crate::show::specifics_of(&result).lines() {
            outln!("  {:<12}{text}", format!("{label}:"))?;
        }
    }
    for a in &audit {
        outln!(
            "  {}  {:<8} by {} ({}){}",
            a.at.to_rfc3339(),
            a.action,
            a.actor,
            a.via,
            a.comment
                .as_deref()
                .map(|c| format!(": {c}"))
                .unwrap_or_default()
        )?;
    }
    Ok(())
}

fn print_list(items: &[ReviewRow], as_json: bool) -> anyhow::Result<()> {
    if as_json {
        outln!("{}", serde_json::to_string_pretty(items)?)?;
        return Ok(());
    }
    if items.is_empty() {
        outln!("review queue is empty")?;
        return Ok(());
    }
    outln!("{} item(s) awaiting review:", items.len())?;
    for i in items {
        let status = match (&i.claimed_by, i.status.as_str()) {
            (Some(by), "claimed") => format!("claimed by {by}"),
            (_, s) => s.to_string(),
        };
        outln!(
            "  {}  run {}  {:<16} {:>5}  {}  {}  [{}]",
            i.id,
            i.run_id,
            i.category.map_or("-", |c| c.as_str()),
            i.confidence
                .map(|c| format!("{c:.2}"))
                .unwrap_or_else(|| "-".into()),
            i.log_name
                .as_deref()
                .or(i.job_name.as_deref())
                .unwrap_or("-"),
            status,
            i.reason
        )?;
    }
    Ok(())
}
