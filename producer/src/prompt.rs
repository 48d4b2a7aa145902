//! `faultline prompt`: the prompt registry (docs/rollout.md). A version is
//! immutable once added; `activate` makes one the prompt of new LLM runs,
//! `ratio` puts one on trial for a share of them. Version 0 is the built-in
//! prompt. Runs keep the version they started with.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Subcommand;
use faultline_shared::storage::prompts;
use serde_json::Value;
use sqlx::PgPool;

#[derive(Subcommand)]
pub enum PromptCommand {
    /// Register FILE as a new version: plain text (the system prompt), or
    /// JSON `{"system": "…", "tools": {"log_excerpt": "description", …}}`.
    Add {
        file: PathBuf,
        /// What the prompt is (several versions may share a name).
        #[arg(long)]
        name: String,
    },
    /// List versions: name, state (active, on trial at a ratio), age.
    List,
    /// Make a version (a number, or the newest of a name; 0 = built in)
    /// the prompt of new LLM runs.
    Activate { version: String },
    /// Send this share (0–1) of new LLM runs to a version on trial; 0 ends
    /// the trial. All ratios add up to at most 1.
    Ratio { version: String, ratio: f64 },
}

pub async fn run(pool: &PgPool, command: PromptCommand) -> anyhow::Result<()> {
    match command {
        PromptCommand::Add { file, name } => {
            let name = name.trim();
            if name.is_empty() {
                bail!("--name must not be empty");
            }
            let (system, tools) = read(&file)?;
            let by = std::env::var("USER").ok();
            let version = prompts::add(pool, name, &system, &tools, by.as_deref()).await?;
            outln!("{version}")?;
            eprintln!(
                "added prompt {name:?} as version {version}; try it with `faultline eval DATA_DIR --compare openai@{version}`, \
                 then `faultline prompt ratio {version} 0.1` or `faultline prompt activate {version}`"
            );
        }
        PromptCommand::List => {
            let versions = prompts::list(pool).await?;
            let active = versions.iter().any(|p| p.active);
            outln!("{:>7}  {:<24}  {:<16}  created", "version", "name", "state")?;
            outln!(
                "{:>7}  {:<24}  {:<16}  -",
                0,
                "(built in)",
                if active { "" } else { "active" }
            )?;
            for p in versions {
                let state = match (p.active, p.ratio) {
                    (true, r) if r > 0.0 => format!("active, trial {r}"),
                    (true, _) => "active".to_string(),
                    (false, r) if r > 0.0 => format!("trial {r}"),
                    _ => String::new(),
                };
                let by = p.created_by.map(|b| format!(" by {b}")).unwrap_or_default();
                outln!(
                    "{:>7}  {:<24}  {:<16}  {}{by}",
                    p.version,
                    p.name,
                    state,
                    p.created_at.format("%Y-%m-%d %H:%M")
                )?;
            }
        }
        PromptCommand::Activate { version } => {
            let v = resolve(pool, &version).await?;
            prompts::activate(pool, v).await?;
            eprintln!(
                "prompt version {v} is active: new LLM runs use it (runs in flight keep theirs)"
            );
        }
        PromptCommand::Ratio { version, ratio } => {
            if !(0.0..=1.0).contains(&ratio) {
                bail!("the ratio must be between 0 and 1, not {ratio}");
            }
            let v = resolve(pool, &version).await?;
            if v == 0 {
                bail!("version 0 is the built-in prompt: it takes what the trials leave");
            }
            if let Err(others) = prompts::set_ratio(pool, v, ratio).await? {
                bail!(
                    "the other versions on trial take {others:.3} of LLM runs; {ratio} more would pass 1"
                );
            }
            eprintln!("prompt version {v} takes {ratio} of new LLM runs");
        }
    }
    Ok(())
}

/// A version a user named: a number or the newest version of a name.
async fn resolve(pool: &PgPool, name_or_version: &str) -> anyhow::Result<i32> {
    prompts::resolve(pool, name_or_version)
        .await?
        .with_context(|| {
            format!("no prompt version {name_or_version:?} (see `faultline prompt list`)")
        })
}

/// The system prompt and tool descriptions of a prompt file.
fn read(file: &Path) -> anyhow::Result<(String, Value)> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("failed to read {}", file.display()))?;
    let is_json = file.extension().is_some_and(|e| e == "json");
    let (system, tools) = if is_json {
        let doc: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", file.display()))?;
        let system = doc["system"]
            .as_str()
            .with_context(|| format!("{}: \"system\" must be a string", file.display()))?
            .to_string();
        let tools = doc
            .get("tools")
            .cloned()
            .unwrap_or(Value::Object(Default::default()));
        let valid = tools
            .as_object()
            .is_some_and(|t| t.values().all(Value::is_string));
        if !valid {
            bail!(
                "{}: \"tools\" must map tool names to descriptions (strings)",
                file.display()
            );
        }
        (system, tools)
    } else {
        (text, Value::Object(Default::default()))
    };
    if system.trim().is_empty() {
        bail!("{}: the system prompt is empty", file.display());
    }
    Ok((system, tools))
}
