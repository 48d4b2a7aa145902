//! Printing runs, traces and the review queue, for people or as JSON.

use std::process::ExitCode;

use anyhow::Context;
use faultline_shared::{
    Specifics, pr_comment,
    storage::{events, pr_comments, reruns, review, runs, steps},
    tool::{self, Observed, ToolName},
    types::FINAL_ANSWER,
};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

/// Prints the pull-request comment for `target`'s (repository, commit)
/// analysed jobs, or for the newest `recent` analyses: GitHub Markdown, or
/// its terminal view (bold only on a terminal without `NO_COLOR`). Links go
/// to `GITHUB_API_URL`'s web host and `NOTIFY_CONSOLE_URL`, as the
/// notifier's do.
pub async fn pr_comment(
    pool: &PgPool,
    target: Option<(String, String)>,
    recent: i64,
    markdown: bool,
) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    let (repository, sha, jobs) = match target {
        Some((repo, sha)) => {
            let jobs = pr_comments::jobs_of_commit(pool, &repo, &sha).await?;
            (repo, sha, jobs)
        }
        None => (
            "local/samples".to_string(),
            "0000000".to_string(),
            pr_comments::recent_jobs(pool, recent).await?,
        ),
    };
    if jobs.is_empty() {
        anyhow::bail!("no finished analysis to show");
    }
    let body = comment_preview(repository, sha, &jobs);
    if markdown {
        outln!("{body}")?;
    } else {
        let ansi = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        outln!("{}", pr_comment::to_terminal(&body, ansi).trim_end())?;
    }
    Ok(())
}

/// The comment the notifier would post for `jobs` of commit `head_sha`
/// (GitHub's address from GITHUB_API_URL, console links from
/// NOTIFY_CONSOLE_URL): what `faultline pr-comment` prints and the
/// console's comment page renders.
pub fn comment_preview(
    repository: String,
    head_sha: String,
    jobs: &[pr_comments::CommitJob],
) -> String {
    let comment = pr_comments::PrComment {
        repository,
        head_sha,
        ..Default::default()
    };
    let api = std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".into());
    let console = std::env::var("NOTIFY_CONSOLE_URL").ok();
    pr_comment::render(
        &comment,
        jobs,
        &pr_comment::web_base(&api),
        console.as_deref().map(|c| c.trim_end_matches('/')),
        None,
    )
}

/// 0 when the analysis completed, 2 when it needs review, 3 when it failed.
pub fn exit_code(run: &runs::RunRow) -> ExitCode {
    match run.status.as_str() {
        "completed" => ExitCode::SUCCESS,
        "needs_review" => ExitCode::from(2),
        _ => ExitCode::from(3),
    }
}

/// Prints a run's status and, when finished, its result.
pub async fn status(pool: &PgPool, run_id: Uuid, as_json: bool) -> anyhow::Result<()> {
    let run = runs::get(pool, run_id)
        .await?
        .with_context(|| format!("run {run_id} not found"))?;
    let event = events::get(pool, run.event_id).await?;
    let item = review::for_run(pool, run_id).await?;
    let asked = reruns::of_runs(pool, &[run_id]).await?;
    if as_json {
        let out = json!({"run": run, "event": event, "review": item, "reruns": asked});
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(());
    }
    let name = event
        .as_ref()
        .and_then(|e| e.log_name.clone().or(e.job_name.clone()))
        .unwrap_or_default();
    let took = match (run.started_at, run.finished_at) {
        (Some(s), Some(f)) => format!(", {:.2}s", (f - s).num_milliseconds() as f64 / 1000.0),
        _ => String::new(),
    };
    outln!(
        "run {}  {}  {}  ({} iterations{took})",
        run.id,
        name,
        run.status,
        run.iteration
    )?;
    // The arm is recorded by the first checkpoint.
    if run.iteration > 0 {
        let prompt = run
            .prompt_version
            .map(|v| format!(" (prompt version {v})"))
            .unwrap_or_default();
        outln!("  reasoner:   {}{prompt}", run.reasoner)?;
    }
    if let Some(live) = run.shadow_of {
        outln!("  shadow of:  {live} (never notified or reviewed; see `faultline shadow report`)")?;
    }
    if let Some(result) = &run.result {
        outln!(
            "  category:   {}   confidence {:.2}",
            result["category"].as_str().unwrap_or("?"),
            result["confidence"].as_f64().unwrap_or(0.0)
        )?;
        outln!(
            "  root cause: {}",
            result["root_cause"].as_str().unwrap_or("")
        )?;
        outln!("  fix:        {}", result["fix"].as_str().unwrap_or(""))?;
        if let Some(origin) = result["origin"].as_str() {
            let (_, why) = faultline_shared::Origin::of_result(result);
            let why = if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join("; "))
            };
            outln!("  origin:     {origin}{why}")?;
        }
        for (label, text) in specifics_of(result).lines() {
            outln!("  {:<12}{text}", format!("{label}:"))?;
        }
        for e in result["evidence"].as_array().into_iter().flatten() {
            outln!(
                "  evidence:   [iteration {}] {}",
                e["iteration"],
                e["quote"].as_str().unwrap_or("")
            )?;
        }
    }
    if let Some(reason) = &run.failure_reason {
        outln!("  failed:     {reason}")?;
    } else if let Some(err) = &run.last_error {
        outln!(
            "  last error: {err} (attempt {} of {}, next at {})",
            run.attempts,
            run.max_attempts,
            run.next_attempt_at
        )?;
    }
    if let Some(item) = item {
        outln!("  review:     {} ({})", item.status, item.reason)?;
    }
    for r in &asked {
        outln!("  re-run:     {}", rerun_line(r))?;
    }
    Ok(())
}

/// A re-run Faultline asked the CI system for, in one line: its state,
/// the verdict that asked, the request and what the CI system answered.
fn rerun_line(r: &reruns::Rerun) -> String {
    let status = r
        .http_status
        .map(|s| format!(", HTTP {s}"))
        .unwrap_or_default();
    let detail = r
        .detail
        .as_deref()
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    format!(
        "{} (origin {}, confidence {:.2}) {} at {}{status}{detail}",
        r.state,
        r.origin,
        r.confidence,
        r.request,
        r.requested_at.format("%Y-%m-%d %H:%M:%S UTC")
    )
}

/// Prints every iteration of a run with its thought, action and observation.
pub async fn trace(pool: &PgPool, run_id: Uuid, as_json: bool) -> anyhow::Result<()> {
    let run = runs::get(pool, run_id)
        .await?
        .with_context(|| format!("run {run_id} not found"))?;
    let journal = steps::list(pool, run_id).await?;
    let attempts = steps::list_attempts(pool, run_id).await?;
    let asked = reruns::of_runs(pool, &[run_id]).await?;
    if as_json {
        let out = json!({"run_id": run.id, "status": run.status, "steps": journal, "failed_attempts": attempts, "reruns": asked});
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(());
    }
    outln!(
        "run {}  {}  ({} iterations, {} tokens in, {} out, ${:.4})",
        run.id,
        run.status,
        run.iteration,
        run.tokens_in,
        run.tokens_out,
        run.cost_usd
    )?;
    for step in &journal {
        outln!(
            "\n#{} {} {}   [{} ms tool, {} ms step, attempt {}, worker {}]",
            step.iteration,
            step.action,
            step.action_input,
            step.tool_ms,
            step.step_ms,
            step.attempt,
            step.worker_id
        )?;
        if step.reasoner != "heuristic" || step.tokens_in + step.tokens_out > 0 {
            outln!(
                "   reasoner:    {} ({} tokens in, {} out, ${:.4}){}",
                step.reasoner,
                step.tokens_in,
                step.tokens_out,
                step.cost_usd,
                step.call_id
                    .as_deref()
                    .map(|id| format!(", call {id}"))
                    .unwrap_or_default()
            )?;
        }
        if let Some(reason) = step.llm.as_ref().and_then(|l| l["llm_fallback"].as_str()) {
            outln!("   llm_fallback: {reason}")?;
        }
        if let Some(judge) = step.llm.as_ref().and_then(|l| l.get("judge")) {
            match judge["judge_error"].as_str() {
                Some(error) => outln!("   judge_error: {error}")?,
                None => outln!(
                    "   judge:       score {:.2} — {}",
                    judge["score"].as_f64().unwrap_or(0.0),
                    judge["reason"].as_str().unwrap_or("")
                )?,
            }
        }
        outln!("   thought:     {}", step.thought)?;
        outln!(
            "   observation: {}",
            summarize(&step.action, &step.observation)
        )?;
    }
    for r in &asked {
        outln!("\nre-run asked of the CI system: {}", rerun_line(r))?;
    }
    for a in &attempts {
        let next = a
            .next_attempt_at
            .map(|t| format!(", retry at {t}"))
            .unwrap_or_else(|| ", no retry".into());
        outln!(
            "\nattempt {} of iteration {} failed at {}: {}{next}",
            a.attempt,
            a.iteration,
            a.failed_at,
            a.error
        )?;
    }
    Ok(())
}

/// The specifics of a stored answer (empty for answers stored before
/// they existed).
pub fn specifics_of(answer: &Value) -> Specifics {
    serde_json::from_value(answer["specifics"].clone()).unwrap_or_default()
}

/// A one-paragraph human summary of an observation. An observation that
/// does not read as its tool's type is summarised as one that found
/// nothing, as a missing key always was.
fn summarize(action: &str, obs: &Value) -> String {
    let observed = Observed(obs);
    if let Some(err) = observed.error() {
        return format!("error: {err}");
    }
    let result = Observed(observed.result());
    match action.parse::<ToolName>() {
        Ok(ToolName::LogExcerpt) => excerpt_line(&result.parse().unwrap_or_default()),
        Ok(ToolName::SearchKnowledge) => knowledge_line(&result.parse().unwrap_or_default()),
        Ok(ToolName::SimilarFailures) => similar_line(&result.parse().unwrap_or_default()),
        Ok(ToolName::FailureHistory) => history_line(
            &result
                .parse::<tool::FailureHistory>()
                .unwrap_or_default()
                .history,
        ),
        _ if action == FINAL_ANSWER => answer_line(&result.parse().unwrap_or_default()),
        _ => result.0.to_string(),
    }
}

/// The excerpt: its size, what it signals, its fingerprint and first lines.
fn excerpt_line(e: &tool::LogExcerpt) -> String {
    let cls = &e.classification;
    let lines: Vec<String> = e
        .lines
        .iter()
        .take(8)
        .map(|l| format!("\n      {:>6}: {}", l.n, l.text))
        .collect();
    let names = cls
        .facts
        .sentence()
        .map(|s| format!("; names {s}"))
        .unwrap_or_default();
    format!(
        "{} of {} lines; signals {} ({:.2}){names}; fingerprint {}{}",
        e.lines.len(),
        e.total_lines,
        cls.category,
        cls.confidence,
        e.fingerprint,
        lines.concat()
    )
}

/// The knowledge-base entries found, with category and rank.
fn knowledge_line(k: &tool::SearchKnowledge) -> String {
    let m: Vec<String> = k
        .matches
        .iter()
        .map(|m| format!("{} ({}, {:.2})", m.slug, m.category, m.rank))
        .collect();
    if m.is_empty() {
        "no knowledge-base match".into()
    } else {
        m.join(", ")
    }
}

/// The similar past failures, then those below the relevance floor.
fn similar_line(found: &tool::SimilarFailures) -> String {
    let m: Vec<String> = found
        .matches
        .iter()
        .map(|m| {
            format!(
                "{} {} ({}, {:.2}{})",
                m.category().unwrap_or("?"),
                m.run_id().unwrap_or(""),
                m.tier().unwrap_or(m.source().unwrap_or("?")),
                m.score().unwrap_or(1.0),
                if m.human_confirmed() {
                    ", confirmed"
                } else {
                    ""
                }
            )
        })
        .collect();
    let below: Vec<String> = found
        .below_relevance_floor
        .iter()
        .map(|m| {
            format!(
                "{} {} ({}, {:.2})",
                m.category().unwrap_or("?"),
                m.run_id().unwrap_or(""),
                m.tier().unwrap_or("?"),
                m.score().unwrap_or(0.0),
            )
        })
        .collect();
    let listed = if m.is_empty() {
        "no similar past failure".to_string()
    } else {
        m.join(", ")
    };
    if below.is_empty() {
        listed
    } else {
        format!("{listed}; below relevance floor: {}", below.join(", "))
    }
}

/// The job's record: failures, passes, streak, flakiness, last green commit.
fn history_line(h: &tool::History) -> String {
    format!(
        "{} failure(s), {} pass(es), {} consecutive failure(s){}; last passing commit {}",
        h.failures,
        h.passes,
        h.consecutive_failures,
        if h.flaky { ", flaky" } else { "" },
        h.last_passing_commit.as_deref().unwrap_or("-")
    )
}

/// The verdict, the answer and its specifics.
fn answer_line(step: &AnswerStep) -> String {
    let specifics: Vec<String> = specifics_of(&step.answer)
        .lines()
        .into_iter()
        .map(|(label, text)| format!("\n      {label}: {text}"))
        .collect();
    let answer: AnswerSummary = Observed(&step.answer).parse().unwrap_or_default();
    format!(
        "verdict {} at confidence {:.2}: {} — {}{}",
        step.verdict.as_deref().unwrap_or("?"),
        step.confidence,
        answer.category.as_deref().unwrap_or("?"),
        answer.root_cause,
        specifics.concat()
    )
}

/// What `trace` shows of a final answer's step: the verdict and the answer.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct AnswerStep {
    verdict: Option<String>,
    confidence: f64,
    answer: Value,
}

/// The category and root cause of a stored answer.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct AnswerSummary {
    category: Option<String>,
    root_cause: String,
}
