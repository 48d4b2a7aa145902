//! `faultline eval DATA_DIR`: a labelled set through the real pipeline.
//! For each configuration (`--reasoner`, and `--compare`) in turn: a
//! scratch database next to DATABASE_URL's, `--workers` worker processes
//! on it, every labelled log ingested as `faultline analyze` would, then
//! the runs' categories, routing, confidence, tokens, cost and wall times
//! scored against the labels; the workers and the database are gone
//! afterwards, on error and Ctrl-C too.
//!
//! - [`data`]: the labelled set (`categories.jsonl`).
//! - [`spec`]: a configuration (`heuristic`, `openai:MODEL@PROMPT`) and
//!   its workers' environment.
//! - [`scratch`]: the scratch database and the workers.
//! - [`run`]: ingesting the logs and waiting for the analyses.
//! - [`score`], [`report`]: the figures, the table and the `--json` file.

mod data;
mod report;
mod run;
mod score;
mod scratch;
mod spec;

use std::{path::PathBuf, process::ExitCode, time::Duration};

use anyhow::{Context, bail};
use faultline_shared::{
    Settings,
    config::{ExposeSecret, QueueBackend, Source},
    storage::{eval::ScratchName, prompts},
};
use sqlx::PgPool;
use tokio::signal::unix::{SignalKind, signal};

use self::{
    data::Labelled,
    report::Evaluated,
    score::LogResult,
    spec::{Reasoner, Spec, WorkerEnv},
};

#[derive(clap::Args)]
pub struct EvalArgs {
    /// A folder with categories.jsonl: one `{"log": PATH, "repo": …,
    /// "category": …}` per line, PATH relative to the folder (gzip or plain).
    pub data_dir: PathBuf,
    /// The configuration to evaluate: heuristic, openai[:MODEL][@PROMPT_VERSION]
    /// or anthropic[:MODEL][@PROMPT_VERSION] (LLM_BASE_URL, LLM_API_KEY and
    /// prices come from the environment).
    #[arg(long, default_value = "heuristic")]
    pub reasoner: Spec,
    /// A second configuration, run on the same logs after the first and
    /// printed beside it.
    #[arg(long, value_name = "SPEC")]
    pub compare: Option<Spec>,
    /// Worker processes per configuration.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Only the first N labelled logs.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Also write every log's result and the figures to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Give up when no analysis finishes for this many seconds.
    #[arg(long, default_value_t = 600)]
    pub stall_timeout: u64,
    /// Analyse each log as its labeller read it: the lines labels.jsonl
    /// marks as the failure, then the log's last 25 lines. What is then
    /// wrong is how those lines are classified, not which were read.
    #[arg(long, env = "FAULTLINE_EVAL_LABELLED_VIEW")]
    pub labelled_view: bool,
}

/// One configuration, ready to run: its workers' environment and the
/// prompt version copied into its database.
struct Plan {
    spec: Spec,
    env: WorkerEnv,
    prompt: Option<prompts::PromptVersion>,
}

pub async fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    if args.workers == 0 {
        bail!("--workers must be at least 1");
    }
    // Everything that can be wrong with the input fails before anything starts.
    let mut rows = data::load(&args.data_dir, args.limit)?;
    let view = args
        .labelled_view
        .then(|| std::env::temp_dir().join(format!("faultline-eval-view-{}", std::process::id())));
    if let Some(into) = &view {
        data::labelled_view(&args.data_dir, &mut rows, into)?;
    }
    let outcome = run_rows(&args, &rows).await;
    if let Some(into) = &view {
        let _ = std::fs::remove_dir_all(into);
    }
    outcome
}

async fn run_rows(args: &EvalArgs, rows: &[Labelled]) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&Source::env()).context("invalid configuration")?;
    let specs: Vec<Spec> = std::iter::once(args.reasoner.clone())
        .chain(args.compare.clone())
        .collect();
    let mut plans = Vec::new();
    for spec in specs {
        plans.push(plan(spec, &settings).await?);
    }
    // From here on Ctrl-C and SIGTERM tear down what was started.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let window = args.workers * settings.worker_concurrency.max(1);
    let feed = run::Feed {
        window,
        stall: Duration::from_secs(args.stall_timeout),
    };
    let mut done: Vec<Evaluated> = Vec::new();
    for (n, plan) in plans.iter().enumerate() {
        let mut scratch = scratch::Scratch::new(
            settings.database_url.expose_secret(),
            ScratchName::new(std::process::id(), n),
        )?;
        let started = std::time::Instant::now();
        let outcome = tokio::select! {
            r = evaluate(&mut scratch, plan, &settings, rows, args, &feed) => r,
            _ = interrupt.recv() => Err(anyhow::anyhow!("interrupted")),
            _ = terminate.recv() => Err(anyhow::anyhow!("terminated")),
        };
        let teardown = scratch.teardown(outcome.is_err()).await;
        let results = outcome?;
        teardown?;
        done.push(Evaluated {
            spec: plan.spec.to_string(),
            seconds: started.elapsed().as_secs_f64(),
            summary: score::summarise(&results),
            results,
        });
    }
    let agreement = match done.as_slice() {
        [a, b] => Some(score::agreement(&a.results, &b.results)),
        _ => None,
    };
    let mut data_dir = args.data_dir.display().to_string();
    if args.labelled_view {
        data_dir.push_str(", labelled view: the marked lines and the last 25");
    }
    outln!(
        "{}",
        report::render(&data_dir, args.workers, &done, agreement.as_ref()).trim_end()
    )?;
    if let Some(path) = &args.json {
        report::write_json(
            path,
            &report::JsonReport {
                data_dir,
                logs: rows.len(),
                workers: args.workers,
                configurations: &done,
                agreement: agreement.as_ref(),
            },
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolves a configuration: its prompt version (read from DATABASE_URL's
/// registry) and its workers' environment.
async fn plan(spec: Spec, settings: &Settings) -> anyhow::Result<Plan> {
    let Reasoner::Llm {
        prompt: Some(named),
        ..
    } = &spec.reasoner
    else {
        let env = spec.worker_env(std::env::var("LLM_MODEL").ok().as_deref(), None)?;
        return Ok(Plan {
            spec,
            env,
            prompt: None,
        });
    };
    let version = match named.parse::<i32>() {
        Ok(0) => 0,
        _ => {
            let pool = source_pool(settings).await?;
            let version = prompts::resolve(&pool, named)
                .await?
                .filter(|v| *v >= 0)
                .with_context(|| {
                    format!(
                        "{spec}: prompt version {named:?} is not in the prompt registry of DATABASE_URL's database (see `faultline prompt list`)"
                    )
                })?;
            pool.close().await;
            version
        }
    };
    let prompt = if version > 0 {
        let pool = source_pool(settings).await?;
        let p = prompts::get(&pool, version)
            .await?
            .with_context(|| format!("{spec}: prompt version {version} vanished"))?;
        pool.close().await;
        Some(p)
    } else {
        None
    };
    let env = spec.worker_env(std::env::var("LLM_MODEL").ok().as_deref(), Some(version))?;
    Ok(Plan { spec, env, prompt })
}

/// DATABASE_URL's database: where the prompt registry is read.
async fn source_pool(settings: &Settings) -> anyhow::Result<PgPool> {
    faultline_shared::db::connect(settings, 1).await
}

/// One configuration on its scratch database: every log analysed and scored.
async fn evaluate(
    scratch: &mut scratch::Scratch,
    plan: &Plan,
    settings: &Settings,
    rows: &[Labelled],
    args: &EvalArgs,
    feed: &run::Feed,
) -> anyhow::Result<Vec<LogResult>> {
    let pool = scratch.create(plan.prompt.as_ref()).await?;
    scratch.spawn_workers(args.workers, &plan.env)?;
    let mut settings = settings.clone();
    settings.database_url = scratch.url.clone().into();
    settings.queue_backend = QueueBackend::Postgres;
    settings.shadow_reasoner = None;
    let outcomes = run::analyse(scratch, &pool, &settings, rows, feed, &plan.spec.text).await?;
    pool.close().await;
    Ok(rows
        .iter()
        .zip(outcomes)
        .map(|(row, o)| LogResult {
            log: row.log.clone(),
            repo: row.repo.clone(),
            expected: row.expected.to_string(),
            got: o.category,
            status: o.status,
            // As printed (0.7, not 0.699999988): the value the run reported.
            confidence: o.confidence.and_then(|c| c.to_string().parse().ok()),
            tokens: o.tokens,
            cost: o.cost_usd,
            seconds: o
                .finished_at
                .map(|f| (f - o.created_at).num_milliseconds() as f64 / 1000.0),
            run_id: o.id,
            reasoner: o.reasoner,
            prompt_version: o.prompt_version,
            evidence: o.evidence,
        })
        .collect())
}
