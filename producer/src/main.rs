//! `faultline`: the producer CLI and HTTP server. Ingest failure logs,
//! follow analyses, read traces and the review queue, run the excerpt tool
//! locally, and serve webhooks and the REST API (`faultline serve`).

/// `println!` that returns an `io::Result` instead of panicking when stdout
/// is closed (`faultline review list --json | head`): main then exits quietly.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

mod eval;
mod ingest;
mod prompt;
mod reprocess;
mod review;
mod server;
mod shadow;
mod show;
mod token;

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use clap::{Parser, Subcommand};
use faultline_shared::{Settings, config::Source, db, kb, logs, telemetry};
use uuid::Uuid;

#[derive(Parser)]
#[command(name = "faultline", version, about = "Durable analysis of CI failures")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the CI webhooks and the REST API until SIGTERM/SIGINT.
    Serve {
        /// Address to listen on (default: FAULTLINE_BIND, else 127.0.0.1:8080; port 0 picks one).
        #[arg(long)]
        bind: Option<std::net::SocketAddr>,
    },
    /// API tokens of the REST API.
    Token {
        #[command(subcommand)]
        command: token::TokenCommand,
    },
    /// Create or upgrade the database schema and load the built-in knowledge base.
    Migrate,
    /// Enqueue a log for analysis; prints only the run id.
    Enqueue(ingest::EnqueueArgs),
    /// Enqueue a log, wait for its analysis, print the result.
    Analyze {
        #[command(flatten)]
        enqueue: ingest::EnqueueArgs,
        /// Give up waiting after this many seconds.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the pull-request comment Faultline writes
    /// (NOTIFY_GITHUB_PR_COMMENTS) for a commit's analysed jobs, or for
    /// the newest analyses as if they were one commit's jobs.
    PrComment {
        /// `owner/name` of the commit's repository.
        #[arg(long, requires = "commit")]
        repository: Option<String>,
        /// The commit whose failed jobs the comment shows.
        #[arg(long, requires = "repository")]
        commit: Option<String>,
        /// Without a commit: how many of the newest analyses (default 10).
        #[arg(long, conflicts_with = "commit")]
        recent: Option<i64>,
        /// Print GitHub Markdown, as it is posted, instead of the terminal view.
        #[arg(long)]
        markdown: bool,
    },
    /// Show a run's status and result.
    Status {
        run: Uuid,
        #[arg(long)]
        json: bool,
    },
    /// Show every iteration of a run: thought, action, observation.
    Trace {
        run: Uuid,
        #[arg(long)]
        json: bool,
    },
    /// Print the lines of FILE that explain the failure (verbatim, one per line).
    Excerpt {
        file: PathBuf,
        /// Print line numbers, scores and totals as JSON.
        #[arg(long)]
        json: bool,
        /// Most lines to print.
        #[arg(long, default_value_t = logs::ExcerptOptions::default().max_lines)]
        max_lines: usize,
        /// A passing log of the same job (plain or gzip): lines it also
        /// prints, once timestamps, durations, counters, hashes and
        /// temporary paths are normalised, are not the failure.
        #[arg(long, value_name = "PASS")]
        baseline: Option<PathBuf>,
    },
    /// Print the HTTP API's OpenAPI 3.1 document (what
    /// `GET /api/v1/openapi.json` serves), with no server or database.
    Openapi,
    /// Diagnose FILE offline (no database, no workers): the category, the
    /// rule that decided it, the specifics and the findings.
    Diagnose {
        file: PathBuf,
        /// Print the diagnosis as JSON.
        #[arg(long)]
        json: bool,
        /// A passing log of the same job (plain or gzip), as for `excerpt`.
        #[arg(long, value_name = "PASS")]
        baseline: Option<PathBuf>,
    },
    /// The human-review queue.
    Review {
        #[command(subcommand)]
        command: review::ReviewCommand,
    },
    /// Re-analyse past failures of a time window at bulk priority (idempotent, resumable).
    Reprocess(reprocess::ReprocessArgs),
    /// The prompt registry: versioned system prompts and tool descriptions.
    Prompt {
        #[command(subcommand)]
        command: prompt::PromptCommand,
    },
    /// Run a labelled set (DATA_DIR/categories.jsonl) through the real
    /// pipeline on scratch databases and report category accuracy, review
    /// share, calibration, tokens, cost and wall time; `--compare` puts two
    /// configurations side by side.
    Eval(eval::EvalArgs),
    /// Shadow runs (FAULTLINE_SHADOW_REASONER): how the two reasoners compare.
    Shadow {
        #[command(subcommand)]
        command: shadow::ShadowCommand,
    },
    /// The knowledge base of failure patterns.
    Kb {
        #[command(subcommand)]
        command: KbCommand,
    },
}

#[derive(Subcommand)]
enum KbCommand {
    /// Add or update patterns from a JSON file (an array of entries, as in analysis/kb/patterns.json).
    Load { file: PathBuf },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    // The server logs its requests; the other commands stay quiet by default.
    let default_filter = match cli.command {
        Command::Serve { .. } => "info",
        _ => "warn",
    };
    // Held until main returns: dropping it flushes the last spans.
    let _telemetry = match telemetry::init(&telemetry::Service {
        name: "faultline-producer",
        instance: format!("{}-{}", hostname(), std::process::id()),
        default_filter,
    }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: invalid telemetry configuration: {e}");
            return ExitCode::from(1);
        }
    };
    match run(cli).await {
        Ok(code) => code,
        // The reader went away (`| head`): like any CLI, stop quietly.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::Excerpt {
        file,
        json,
        max_lines,
        baseline,
    } = &cli.command
    {
        return excerpt(file, *json, *max_lines, baseline.as_deref());
    }
    if let Command::Diagnose {
        file,
        json,
        baseline,
    } = &cli.command
    {
        return diagnose(file, *json, baseline.as_deref());
    }
    if let Command::Openapi = &cli.command {
        let doc = server::openapi_document()
            .to_pretty_json()
            .context("serialising the OpenAPI document")?;
        outln!("{doc}")?;
        return Ok(ExitCode::SUCCESS);
    }
    // Its own databases and workers: nothing of DATABASE_URL's but the server
    // (and the prompt registry it copies from).
    if let Command::Eval(args) = cli.command {
        return eval::run(args).await;
    }
    // Every setting comes from this one reading of the environment.
    let env = Source::env();
    let settings = Settings::load(&env).context("invalid configuration")?;
    let broker = faultline_shared::queue::connect(&settings)
        .await
        .context("failed to connect the queue broker (check QUEUE_BACKEND, REDIS_URL)")?;
    if let Command::Serve { bind } = &cli.command {
        server::serve(&env, &settings, broker, *bind).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let pool = db::connect(&settings, 4).await?;
    match cli.command {
        Command::Migrate => {
            db::migrate(&pool).await?;
            let entries = faultline_shared::storage::knowledge::count(&pool).await?;
            outln!("migrated; knowledge base has {entries} entries")?;
        }
        Command::Enqueue(args) => {
            let ingested = ingest::enqueue(&pool, &broker, &settings, &args).await?;
            outln!("{}", ingested.run_id)?;
        }
        Command::Analyze {
            enqueue,
            timeout,
            json,
        } => {
            let ingested = ingest::enqueue(&pool, &broker, &settings, &enqueue).await?;
            if !ingested.created {
                eprintln!(
                    "this log was already submitted; showing run {}",
                    ingested.run_id
                );
            }
            let run = ingest::wait_for(
                &pool,
                ingested.run_id,
                std::time::Duration::from_secs(timeout),
            )
            .await?;
            show::status(&pool, run.id, json).await?;
            return Ok(show::exit_code(&run));
        }
        Command::Status { run, json } => show::status(&pool, run, json).await?,
        Command::Trace { run, json } => show::trace(&pool, run, json).await?,
        Command::PrComment {
            repository,
            commit,
            recent,
            markdown,
        } => {
            let target = repository.zip(commit);
            show::pr_comment(&pool, target, recent.unwrap_or(10), markdown).await?
        }
        Command::Review { command } => review::run(&pool, &settings, command).await?,
        Command::Kb {
            command: KbCommand::Load { file },
        } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("failed to read {}", file.display()))?;
            let entries = kb::parse_entries(&text)
                .with_context(|| format!("{} is not a valid pattern file", file.display()))?;
            kb::validate(&entries).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let n = faultline_shared::storage::knowledge::upsert_entries(&pool, &entries, "file")
                .await?;
            outln!("loaded {n} entries from {}", file.display())?;
        }
        Command::Token { command } => token::run(&pool, command).await?,
        Command::Prompt { command } => prompt::run(&pool, command).await?,
        Command::Shadow { command } => shadow::run(&pool, command).await?,
        Command::Reprocess(args) => reprocess::run(&pool, &settings, args).await?,
        Command::Excerpt { .. }
        | Command::Openapi
        | Command::Diagnose { .. }
        | Command::Eval(_)
        | Command::Serve { .. } => {
            unreachable!("handled above")
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// True when `e` comes from writing to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        let kind = cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| cause.downcast_ref::<serde_json::Error>()?.io_error_kind());
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// This host's name (the container's, under Docker or Kubernetes).
fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "producer".into())
}

/// Diagnoses a local file as the worker's `log_excerpt` tool does.
fn diagnose(
    file: &std::path::Path,
    json: bool,
    baseline: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let opts = logs::ExcerptOptions {
        max_lines: faultline_shared::diagnose::EXCERPT_LINES,
        baseline: load_baseline(baseline)?,
        ..logs::ExcerptOptions::default()
    };
    let excerpt = logs::excerpt_file(file, &opts)
        .with_context(|| format!("failed to read {}", file.display()))?;
    let d = faultline_shared::diagnose::diagnose(&excerpt);
    if json {
        outln!("{}", serde_json::to_string_pretty(&d)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "category:   {}   confidence {:.2}",
        d.category,
        d.confidence
    )?;
    outln!("decided by: {}", d.decided_by)?;
    if let Some(facts) = d.facts.sentence() {
        outln!("specifics:  {facts}")?;
    }
    for f in &d.findings {
        outln!(
            "  {:>6}  {:<28} {:.2}  {}",
            f.line_no,
            f.rule,
            f.weight,
            f.line
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The passing log given with `--baseline`, read as the excerpt reads lines.
fn load_baseline(
    pass: Option<&std::path::Path>,
) -> anyhow::Result<Option<std::sync::Arc<logs::Baseline>>> {
    let Some(pass) = pass else { return Ok(None) };
    let max_line_bytes = logs::ExcerptOptions::default().max_line_bytes;
    let baseline = logs::Baseline::from_file(pass, max_line_bytes)
        .with_context(|| format!("failed to read {}", pass.display()))?;
    Ok(Some(std::sync::Arc::new(baseline)))
}

/// Runs the excerpt tool on a local file: plain lines, or JSON with
/// `--json`; with a baseline, lines of the passing log do not count.
fn excerpt(
    file: &std::path::Path,
    json: bool,
    max_lines: usize,
    baseline: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let opts = logs::ExcerptOptions {
        max_lines,
        baseline: load_baseline(baseline)?,
        ..logs::ExcerptOptions::default()
    };
    let excerpt = logs::excerpt_file(file, &opts)
        .with_context(|| format!("failed to read {}", file.display()))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if json {
        serde_json::to_writer_pretty(&mut out, &excerpt)?;
        writeln!(out)?;
    } else {
        for line in &excerpt.lines {
            writeln!(out, "{}", line.text)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
