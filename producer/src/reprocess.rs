//! `faultline reprocess`: re-analyse past failures at bulk priority.
//!
//! Idempotent and resumable: the window and filters name one batch, and the
//! batch holds at most one run per event, so rerunning the same command
//! after a Ctrl-C continues where it stopped and rerunning a finished one
//! creates nothing. Runs are created in committed chunks at
//! `PRIORITY_BULK`, so live analyses overtake them in the queue.

use std::{collections::BTreeMap, io::IsTerminal, time::Duration};

use anyhow::{Context, bail};
use chrono::{DateTime, NaiveDate, Utc};
use clap::{Args, Subcommand};
use faultline_shared::{
    Category, RunStatus, Settings,
    queue::PRIORITY_BULK,
    storage::{
        reprocess::{self, Batch, Comparison, Window},
        runs::RunLimits,
    },
};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

/// Runs created per transaction.
const CHUNK: i64 = 200;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReprocessArgs {
    #[command(subcommand)]
    command: Option<ReprocessCommand>,
    #[command(flatten)]
    window: WindowArgs,
    /// Count what would be re-analysed; create nothing.
    #[arg(long)]
    dry_run: bool,
    /// Wait until every run of the batch finished, then print the summary.
    #[arg(long)]
    wait: bool,
    /// Give up waiting after this long (with --wait).
    #[arg(long, default_value = "6h")]
    timeout: String,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum ReprocessCommand {
    /// How far a batch got and how many verdicts changed.
    Status {
        /// The batch id (printed when it started); or give the same window flags.
        batch: Option<Uuid>,
        #[command(flatten)]
        window: OptionalWindow,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct WindowArgs {
    /// Start of the window (inclusive): RFC 3339, YYYY-MM-DD (UTC midnight),
    /// `today`, `yesterday` or `Nd` (N days ago, UTC midnight).
    #[arg(long, required = true)]
    since: Option<String>,
    /// End of the window (exclusive), same forms.
    #[arg(long, required = true)]
    until: Option<String>,
    /// Only events whose previous run had this category.
    #[arg(long)]
    category: Option<String>,
    /// Only events whose previous run ended so: completed, needs_review or failed.
    #[arg(long)]
    status: Option<String>,
}

#[derive(Args)]
struct OptionalWindow {
    #[arg(long)]
    since: Option<String>,
    #[arg(long)]
    until: Option<String>,
    #[arg(long)]
    category: Option<String>,
    #[arg(long)]
    status: Option<String>,
}

/// Parses a window bound (see `--since`), relative to `now`.
pub fn parse_time(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let t = text.trim();
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc();
    let today = now.date_naive();
    if t == "today" {
        return Ok(midnight(today));
    }
    if t == "yesterday" {
        return Ok(midnight(today - chrono::Days::new(1)));
    }
    if let Some(days) = t.strip_suffix('d').and_then(|n| n.parse::<u64>().ok()) {
        return Ok(midnight(today - chrono::Days::new(days)));
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(midnight(d));
    }
    DateTime::parse_from_rfc3339(t)
        .map(|d| d.with_timezone(&Utc))
        .map_err(|_| {
            format!("{text:?} is not a time (RFC 3339, YYYY-MM-DD, today, yesterday or Nd)")
        })
}

fn window(
    since: Option<&str>,
    until: Option<&str>,
    category: Option<&str>,
    status: Option<&str>,
) -> anyhow::Result<Window> {
    let now = Utc::now();
    let since = since.context("--since is required")?;
    let until = until.context("--until is required")?;
    let since = parse_time(since, now).map_err(|e| anyhow::anyhow!("--since: {e}"))?;
    let until = parse_time(until, now).map_err(|e| anyhow::anyhow!("--until: {e}"))?;
    if since >= until {
        bail!("--since ({since}) must be before --until ({until})");
    }
    let category = category
        .map(|c| c.parse::<Category>().map(|c| c.as_str().to_string()))
        .transpose()
        .map_err(|e| anyhow::anyhow!("--category: {e}"))?;
    let status = match status {
        None => None,
        Some(s) => match s.parse::<RunStatus>() {
            Ok(st) if st.is_terminal() => Some(st.as_str().to_string()),
            _ => bail!("--status: {s:?} is not one of completed, needs_review, failed"),
        },
    };
    Ok(Window {
        since,
        until,
        category,
        status,
    })
}

pub async fn run(pool: &PgPool, settings: &Settings, args: ReprocessArgs) -> anyhow::Result<()> {
    if let Some(ReprocessCommand::Status {
        batch,
        window: w,
        json,
    }) = &args.command
    {
        let batch = match batch {
            Some(id) => reprocess::get(pool, *id)
                .await?
                .with_context(|| format!("reprocess batch {id} not found"))?,
            None => {
                let w = window(
                    w.since.as_deref(),
                    w.until.as_deref(),
                    w.category.as_deref(),
                    w.status.as_deref(),
                )?;
                reprocess::find(pool, &w)
                    .await?
                    .context("no reprocess batch for this window and these filters")?
            }
        };
        return print_summary(pool, &batch, *json).await;
    }
    let w = &args.window;
    let window = window(
        w.since.as_deref(),
        w.until.as_deref(),
        w.category.as_deref(),
        w.status.as_deref(),
    )?;
    let timeout = faultline_shared::config::parse_duration(&args.timeout)
        .map_err(|e| anyhow::anyhow!("--timeout: {e}"))?;
    if args.dry_run {
        return dry_run(pool, &window, args.json).await;
    }
    let (batch, added, total) = enqueue(pool, settings, &window).await?;
    if !args.json {
        outln!(
            "batch {}: enqueued {added} new re-analyses ({total} in the batch)",
            batch.id
        )?;
    } else if !args.wait {
        outln!(
            "{}",
            json!({"batch": batch.id, "created": added, "total": total})
        )?;
    }
    if args.wait {
        wait(pool, &batch, total, timeout).await?;
        print_summary(pool, &batch, args.json).await?;
    }
    Ok(())
}

/// `--dry-run`: what the batch would enqueue, and what it already did.
async fn dry_run(pool: &PgPool, window: &Window, json: bool) -> anyhow::Result<()> {
    let existing = reprocess::find(pool, window).await?;
    let todo = reprocess::remaining(pool, window, existing.as_ref().map(|b| b.id)).await?;
    let done = match &existing {
        Some(b) => reprocess::enqueued(pool, b.id).await?,
        None => 0,
    };
    if json {
        outln!(
            "{}",
            json!({"dry_run": true, "would_enqueue": todo, "already_enqueued": done})
        )?;
    } else {
        outln!(
            "dry run: would enqueue {todo} re-analyses ({done} already enqueued by an earlier run of this batch); nothing was created"
        )?;
    }
    Ok(())
}

/// Opens (or resumes) the window's batch and creates its runs in committed
/// chunks. Returns the batch, the runs created now and its run count.
async fn enqueue(
    pool: &PgPool,
    settings: &Settings,
    window: &Window,
) -> anyhow::Result<(Batch, usize, i64)> {
    let who = std::env::var("USER").unwrap_or_else(|_| "cli".into());
    let (batch, created) = reprocess::open(pool, window, &who).await?;
    let already = reprocess::enqueued(pool, batch.id).await?;
    let todo = reprocess::remaining(pool, window, Some(batch.id)).await?;
    if !created {
        eprintln!(
            "resuming batch {} ({already} run(s) already enqueued, {todo} to go)",
            batch.id
        );
    }
    let bar = progress(already + todo, "enqueue");
    bar.set_position(already as u64);
    let limits = RunLimits {
        max_iterations: settings.max_iterations,
        max_attempts: settings.max_attempts,
        priority: PRIORITY_BULK,
        shadowed: false,
    };
    let mut added = 0usize;
    loop {
        let n = reprocess::enqueue_chunk(pool, &batch, limits, CHUNK).await?;
        if n == 0 {
            break;
        }
        added += n;
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    let total = reprocess::enqueued(pool, batch.id).await?;
    Ok((batch, added, total))
}

/// A progress bar on stderr when it is a terminal, hidden otherwise.
fn progress(len: i64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len.max(0) as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:>9} [{bar:40}] {pos}/{len} ({eta})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

async fn wait(pool: &PgPool, batch: &Batch, total: i64, timeout: Duration) -> anyhow::Result<()> {
    let bar = progress(total, "analyse");
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let finished: i64 = finished(&reprocess::compare(pool, batch.id).await?);
        bar.set_position(finished as u64);
        if finished >= total {
            bar.finish_and_clear();
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            bar.abandon();
            bail!(
                "batch {}: {finished} of {total} runs finished after {}s (is a faultline-worker running?)",
                batch.id,
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn finished(groups: &[Comparison]) -> i64 {
    groups
        .iter()
        .filter(|g| g.new_status.is_terminal())
        .map(|g| g.runs)
        .sum()
}

/// Prints how many verdicts changed against each event's previous run: by
/// previous category and by outcome (completed / needs_review / failed).
async fn print_summary(pool: &PgPool, batch: &Batch, as_json: bool) -> anyhow::Result<()> {
    let groups = reprocess::compare(pool, batch.id).await?;
    let total: i64 = groups.iter().map(|g| g.runs).sum();
    let done: Vec<&Comparison> = groups
        .iter()
        .filter(|g| g.new_status.is_terminal())
        .collect();
    let finished: i64 = done.iter().map(|g| g.runs).sum();
    let changed =
        |g: &Comparison| g.prev_category != g.new_category || g.prev_status != g.new_status;
    let changed_total: i64 = done.iter().filter(|g| changed(g)).map(|g| g.runs).sum();
    let mut by_category: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut by_outcome: BTreeMap<String, i64> = BTreeMap::new();
    for g in &done {
        let cat = g
            .prev_category
            .map_or_else(|| "-".into(), |c| c.to_string());
        let e = by_category.entry(cat).or_default();
        e.0 += g.runs;
        if changed(g) {
            e.1 += g.runs;
        }
        *by_outcome
            .entry(format!("{} -> {}", g.prev_status, g.new_status))
            .or_default() += g.runs;
    }
    if as_json {
        let out = json!({
            "batch": batch, "runs": total, "finished": finished, "pending": total - finished,
            "changed": changed_total,
            "by_category": by_category.iter().map(|(c, (n, ch))| (c.clone(), json!({"runs": n, "changed": ch}))).collect::<serde_json::Map<_, _>>(),
            "by_outcome": by_outcome,
            "groups": groups,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(());
    }
    outln!(
        "batch {}  {} .. {}  {finished}/{total} finished, {changed_total} verdict(s) changed",
        batch.id,
        batch.since,
        batch.until
    )?;
    outln!("  by previous category (runs, changed):")?;
    for (c, (n, ch)) in &by_category {
        outln!("    {c:<18} {n:>6} {ch:>6}")?;
    }
    outln!("  by outcome (previous -> new):")?;
    for (k, n) in &by_outcome {
        outln!("    {k:<28} {n:>6}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bounds_take_dates_times_and_day_offsets() {
        let now = DateTime::parse_from_rfc3339("2026-11-22T06:45:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let day = |s: &str| parse_time(s, now).unwrap().to_rfc3339();
        assert_eq!(day("today"), "2026-11-22T00:00:00+00:00");
        assert_eq!(day("yesterday"), "2026-11-21T00:00:00+00:00");
        assert_eq!(day("7d"), "2026-11-15T00:00:00+00:00");
        assert_eq!(day("2026-11-01"), "2026-11-01T00:00:00+00:00");
        assert_eq!(
            day("2026-11-01T12:00:00+01:00"),
            "2026-11-01T11:00:00+00:00"
        );
        assert!(
            parse_time("last week", now)
                .unwrap_err()
                .contains("not a time")
        );
    }
}
