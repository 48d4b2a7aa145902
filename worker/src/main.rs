//! `faultline-worker`: executes analysis steps until SIGTERM.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use clap::Parser;
use faultline_shared::{Settings, db};
use faultline_worker::{
    Engine,
    agent::{
        HeuristicReasoner, Reasoner,
        llm::{LlmReasoner, config::LlmConfig, limit::SharedLimit},
    },
    runtime,
    tools::ToolBelt,
};
use tokio::sync::watch;
use tracing::info;

/// Faultline worker: runs checkpointed ReAct steps from the queue. Scale by
/// running more processes; configuration comes from the environment (see README).
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Concurrent steps in this process (overrides FAULTLINE_WORKER_CONCURRENCY).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Worker id used for leases (default: host-pid).
    #[arg(long, env = "FAULTLINE_WORKER_ID")]
    id: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut settings = Settings::from_env().context("invalid configuration")?;
    if let Some(c) = args.concurrency {
        settings.worker_concurrency = c.max(1);
    }
    let worker_id = args.id.unwrap_or_else(default_worker_id);
    let pool = db::connect(&settings, settings.worker_concurrency as u32 * 2 + 4).await?;

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let tools = ToolBelt::standard(settings.tool_timeout, settings.chaos.tool_delay);
    let llm = LlmConfig::from_env().context("invalid LLM configuration")?;
    let llm_fallback = llm.as_ref().is_some_and(|c| c.fallback);
    let reasoner: Arc<dyn Reasoner> =
        match llm {
            Some(cfg) => {
                info!(
                    provider = cfg.provider.name(),
                    model = cfg.model,
                    base_url = cfg.base_url,
                    "LLM reasoner"
                );
                let limit = (cfg.max_concurrent.is_some() || cfg.requests_per_minute.is_some())
                    .then(|| SharedLimit {
                        pool: pool.clone(),
                        max_concurrent: cfg.max_concurrent,
                        per_minute: cfg.requests_per_minute,
                        holder: worker_id.clone(),
                        slot_ttl: cfg.timeout + Duration::from_secs(30),
                        max_wait: Duration::from_secs(300),
                    });
                Arc::new(LlmReasoner::new(cfg, tools.describe(), limit))
            }
            None => Arc::new(HeuristicReasoner),
        };
    let engine = Arc::new(Engine {
        pool,
        tools,
        reasoner,
        llm_fallback,
        worker_id: worker_id.clone(),
        shutdown: shutdown_rx.clone(),
        settings,
    });
    tokio::spawn(async move {
        wait_for_signal().await;
        info!("shutdown requested: finishing in-flight steps");
        let _ = shutdown_tx.send(true);
    });
    info!(
        worker_id,
        concurrency = engine.settings.worker_concurrency,
        "worker started"
    );
    runtime::run(engine, shutdown_rx).await
}

fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "worker".into());
    format!("{host}-{}", std::process::id())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
