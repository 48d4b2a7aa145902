//! `faultline shadow report`: how the shadow reasoner agrees with the live
//! one on the comparisons of a window (docs/rollout.md): agreement overall
//! and by the live run's category, the confusion between the two, and what
//! each side cost.

use std::collections::BTreeMap;

use chrono::Utc;
use faultline_shared::storage::shadow::{self, Comparison};
use sqlx::PgPool;

#[derive(clap::Subcommand)]
pub enum ShadowCommand {
    /// Agreement, confusion and cost of the live and shadow reasoners.
    Report {
        /// The window (`24h`, `7d`), counted back from now.
        #[arg(long, default_value = "7d", value_parser = faultline_shared::config::parse_duration)]
        since: std::time::Duration,
        /// Print the comparisons as JSON lines instead.
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(pool: &PgPool, command: ShadowCommand) -> anyhow::Result<()> {
    let ShadowCommand::Report { since, json } = command;
    let from = Utc::now() - chrono::Duration::from_std(since)?;
    let rows = shadow::since(pool, from).await?;
    let pending = shadow::pending_count(pool, from).await?;
    if json {
        for row in &rows {
            outln!("{}", serde_json::to_string(row)?)?;
        }
        return Ok(());
    }
    report(&rows, pending)
}

fn category(c: &Option<String>) -> &str {
    c.as_deref().unwrap_or("NONE")
}

fn report(rows: &[Comparison], pending: i64) -> anyhow::Result<()> {
    let n = rows.len();
    outln!(
        "shadow comparisons: {n} pairs compared, {pending} not compared yet (a run of the pair still going)"
    )?;
    if n == 0 {
        return Ok(());
    }
    let mut arms: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in rows {
        *arms
            .entry((&r.live_reasoner, &r.shadow_reasoner))
            .or_default() += 1;
    }
    for ((live, shadow), k) in &arms {
        outln!("  {k} pairs: live {live}, shadow {shadow}")?;
    }
    let agree = rows.iter().filter(|r| r.same_category).count();
    outln!(
        "agreement: {agree}/{n} = {:.1} %",
        100.0 * agree as f64 / n as f64
    )?;
    outln!("\nby the live run's category:")?;
    let mut by: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in rows {
        let e = by.entry(category(&r.live_category)).or_default();
        e.0 += 1;
        e.1 += usize::from(r.same_category);
    }
    for (cat, (k, same)) in &by {
        outln!(
            "  {cat:<18} {same:>5}/{k:<5} {:>5.1} %",
            100.0 * *same as f64 / *k as f64
        )?;
    }
    outln!("\nconfusion (rows: live, columns: shadow):")?;
    let mut cats: Vec<&str> = rows
        .iter()
        .flat_map(|r| [category(&r.live_category), category(&r.shadow_category)])
        .collect();
    cats.sort_unstable();
    cats.dedup();
    let abbrev = |c: &str| c.chars().take(8).collect::<String>();
    let header: String = cats.iter().map(|c| format!(" {:>8}", abbrev(c))).collect();
    outln!("  {:<18}{header}", "")?;
    for live in &cats {
        let cells: String = cats
            .iter()
            .map(|shadow| {
                let k = rows
                    .iter()
                    .filter(|r| category(&r.live_category) == *live)
                    .filter(|r| category(&r.shadow_category) == *shadow)
                    .count();
                format!(" {k:>8}")
            })
            .collect();
        outln!("  {live:<18}{cells}")?;
    }
    let completed = |status: &str| status == "completed";
    let live_auto = rows.iter().filter(|r| completed(&r.live_status)).count();
    let shadow_auto = rows.iter().filter(|r| completed(&r.shadow_status)).count();
    outln!(
        "\nauto-completed (no review): live {live_auto}/{n}, shadow {shadow_auto}/{n} (would have been)"
    )?;
    let sum = |f: fn(&Comparison) -> f64| rows.iter().map(f).sum::<f64>();
    let (live_cost, shadow_cost) = (sum(|r| r.live_cost_usd), sum(|r| r.shadow_cost_usd));
    let (live_tokens, shadow_tokens) = (
        sum(|r| r.live_tokens as f64),
        sum(|r| r.shadow_tokens as f64),
    );
    outln!(
        "cost: live ${live_cost:.4} ({:.0} tokens/analysis), shadow ${shadow_cost:.4} ({:.0} tokens/analysis) — what the shadow would have cost live",
        live_tokens / n as f64,
        shadow_tokens / n as f64
    )?;
    Ok(())
}
