//! `faultline-worker`: executes analysis steps until SIGTERM.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use clap::Parser;
use faultline_shared::{
    Settings, config::Source, db, rollout::ShadowReasoner, storage::sessions, telemetry,
};
use faultline_worker::{
    Engine,
    agent::{
        Reasoner,
        judge::Judge,
        llm::{
            LlmReasoner,
            config::{LlmConfig, Role},
            limit::SharedLimit,
        },
        rollout::Rollout,
    },
    health,
    leases::Leases,
    notify::{self, NotifyConfig},
    runtime,
    sources::SourcesConfig,
    tools::ToolBelt,
};
use tokio::sync::watch;
use tracing::info;

/// Faultline worker: runs checkpointed ReAct steps from the queue. Scale by
/// running more processes; configuration comes from the environment (docs/configuration.md).
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Concurrent steps in this process (overrides FAULTLINE_WORKER_CONCURRENCY).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Worker id used for leases (default: host-pid).
    #[arg(long, env = "FAULTLINE_WORKER_ID")]
    id: Option<String>,
    /// Address of /healthz, /readyz and /metrics (`off` disables; port 0
    /// picks one). Loopback by default: the port is unauthenticated, so
    /// reaching it from other hosts is the operator's choice (the container
    /// image sets 0.0.0.0:9464 for the orchestrator and the scraper).
    #[arg(long, env = "WORKER_HTTP_ADDR", default_value = "127.0.0.1:9464", value_parser = health::parse_addr)]
    http_addr: health::HttpAddr,
}

/// Start-up in the order it happens (telemetry, settings, database, broker,
/// sources, tools, health port, reasoner, engine, notifications, signals);
/// a little over a screen, because each step uses what the one before built.
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let worker_id = args.id.clone().unwrap_or_else(default_worker_id);
    // Held until main returns: dropping it flushes the last spans.
    let _telemetry = telemetry::init(&telemetry::Service {
        name: "faultline-worker",
        instance: worker_id.clone(),
        default_filter: "info",
    })
    .context("invalid telemetry configuration")?;
    let metrics = faultline_shared::metrics::install("faultline-worker");
    // Every setting comes from this one reading of the environment.
    let env = Source::env();
    let mut settings = Settings::load(&env).context("invalid configuration")?;
    // Compile the diagnosis's recognisers now, not inside the first step.
    faultline_shared::diagnose::warm_up();
    if let Some(c) = args.concurrency {
        settings.worker_concurrency = c.max(1);
    }
    // The lease connection is the one more (FAULTLINE_DB_POOL_SIZE in all).
    let pool = db::connect(&settings, settings.db_pool_size - 1).await?;
    faultline_worker::pool_watch::start(pool.clone());
    let broker = faultline_shared::queue::connect(&settings)
        .await
        .context("failed to connect the queue broker (check QUEUE_BACKEND, REDIS_URL)")?;

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let sources = SourcesConfig::load(&env).context("invalid GitHub / Jenkins configuration")?;
    info!(
        github = sources.github.as_ref().map(|g| g.api_url.as_str()),
        jenkins = sources.jenkins.as_ref().map(|j| j.url.as_str()),
        "CI sources"
    );
    let log_fetch = sources.build(&pool, &settings.allowed);
    let tools = ToolBelt::standard(settings.tool_timeout, settings.chaos.tool_delay)
        .with_sources(log_fetch.github.clone(), log_fetch.jenkins.clone())
        .with_rate_limits(
            &settings.tool_rate_limits,
            settings.tool_rate_limit_max_wait,
        )
        .map_err(|e| anyhow::anyhow!(e))
        .context("invalid configuration")?;
    if let health::HttpAddr(Some(addr)) = args.http_addr {
        let state = health::HttpState {
            pool: pool.clone(),
            broker: broker.clone(),
            metrics,
            shutdown: shutdown_rx.clone(),
        };
        serve_health(addr, state).await?;
    }
    let (llm, llm_fallback, rollout) =
        reasoners(&env, &tools, &pool, &worker_id, settings.shadow_reasoner)?;
    let judge = judge(&env)?;
    // Before anything is claimed: an earlier process with this id left
    // leases behind (see sessions::expire_predecessor).
    let orphaned = sessions::expire_predecessor(&pool, &worker_id)
        .await
        .context("expiring an earlier process's leases")?;
    if orphaned > 0 {
        info!(
            orphaned,
            "runs left by an earlier process with this worker id are taken over"
        );
    }
    let engine = Arc::new(Engine {
        judge,
        leases: Leases::start(
            settings.database_url.clone(),
            worker_id.clone(),
            settings.lease_ttl,
        ),
        pool,
        broker,
        tools,
        llm,
        rollout,
        llm_fallback,
        worker_id: worker_id.clone(),
        shutdown: shutdown_rx.clone(),
        log_fetch,
        settings,
    });
    if let Some(mut notify) =
        NotifyConfig::load(&env).context("invalid notification configuration")?
    {
        notify.allowed = engine.settings.allowed.clone();
        let (pool, owner, stop) = (engine.pool.clone(), worker_id.clone(), shutdown_rx.clone());
        tokio::spawn(async move {
            if let Err(e) = notify::run(pool, notify, owner, stop).await {
                tracing::error!(error = %format!("{e:#}"), "notification delivery stopped");
            }
        });
    }
    tokio::spawn(async move {
        wait_for_signal().await;
        info!("shutdown requested: finishing in-flight steps");
        let _ = shutdown_tx.send(true);
    });
    info!(
        worker_id,
        concurrency = engine.settings.worker_concurrency,
        queue = engine.settings.queue_backend.as_str(),
        "worker started"
    );
    runtime::run(engine, shutdown_rx).await
}

/// Binds `WORKER_HTTP_ADDR` and serves health and metrics in the background.
async fn serve_health(addr: std::net::SocketAddr, state: health::HttpState) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("failed to bind WORKER_HTTP_ADDR={addr} (another worker on this host? use another port, 127.0.0.1:0, or off)")
    })?;
    info!(addr = %listener.local_addr()?, "health and metrics on http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        if let Err(e) = health::serve(listener, state).await {
            tracing::error!(error = %e, "worker HTTP port failed");
        }
    });
    Ok(())
}

/// [`reasoners`]' answer: the model's reasoner, `LLM_FALLBACK`, the rollout.
type Reasoners = (Option<Arc<dyn Reasoner>>, bool, Rollout);

/// The configured LLM reasoner (with its shared rate limit), if any;
/// whether the heuristic takes over when it fails for good
/// (`LLM_FALLBACK`); and which runs it gets ([`Rollout`]: the ratio, shadow
/// runs, the prompt registry).
fn reasoners(
    env: &Source,
    tools: &ToolBelt,
    pool: &sqlx::PgPool,
    worker_id: &str,
    shadow: Option<ShadowReasoner>,
) -> anyhow::Result<Reasoners> {
    let cfg = LlmConfig::load(env, Role::Reasoner).context("invalid LLM configuration")?;
    let rollout = Rollout::new(cfg.as_ref(), shadow).context("invalid rollout configuration")?;
    let Some(cfg) = cfg else {
        return Ok((None, false, rollout));
    };
    info!(
        provider = cfg.provider.name(),
        model = cfg.model,
        base_url = cfg.base_url,
        ratio = cfg.ratio,
        prompt_version = cfg.prompt_pin,
        shadow = shadow.map(|s| s.as_str()),
        "LLM reasoner"
    );
    let fallback = cfg.fallback;
    let limit =
        (cfg.max_concurrent.is_some() || cfg.requests_per_minute.is_some()).then(|| SharedLimit {
            pool: pool.clone(),
            max_concurrent: cfg.max_concurrent,
            per_minute: cfg.requests_per_minute,
            holder: worker_id.to_string(),
            slot_ttl: cfg.timeout + Duration::from_secs(30),
            max_wait: Duration::from_secs(300),
        });
    Ok((
        Some(Arc::new(LlmReasoner::new(cfg, tools.describe(), limit))),
        fallback,
        rollout,
    ))
}

/// The judge model, when `LLM_JUDGE_PROVIDER` names one.
fn judge(env: &Source) -> anyhow::Result<Option<Arc<Judge>>> {
    let judge = LlmConfig::load(env, Role::Judge).context("invalid LLM judge configuration")?;
    Ok(judge.map(|cfg| {
        info!(
            provider = cfg.provider.name(),
            model = cfg.model,
            base_url = cfg.base_url,
            "judge model"
        );
        Arc::new(Judge::new(cfg))
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_port_listens_on_loopback_unless_told_otherwise() {
        let args = Args::try_parse_from(["faultline-worker"]).unwrap();
        assert_eq!(
            args.http_addr,
            health::HttpAddr(Some("127.0.0.1:9464".parse().unwrap()))
        );
        let args =
            Args::try_parse_from(["faultline-worker", "--http-addr", "0.0.0.0:9464"]).unwrap();
        assert_eq!(
            args.http_addr,
            health::HttpAddr(Some("0.0.0.0:9464".parse().unwrap()))
        );
    }
}
