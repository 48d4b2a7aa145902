//! One configuration's world: a scratch database on the server of
//! DATABASE_URL, migrated as `faultline migrate` does, and `faultline-worker`
//! processes on it. [`Scratch::teardown`] stops the workers (SIGTERM, then
//! kill) and drops the database; the caller runs it on success, error and
//! Ctrl-C alike.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use anyhow::{Context, bail};
use faultline_shared::{
    db,
    storage::{
        eval::{self, ScratchName},
        prompts,
    },
};
use sqlx::{Connection, PgConnection, PgPool, postgres::PgPoolOptions};
use tokio::process::{Child, Command};

use super::spec::WorkerEnv;

/// How long a worker has to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(30);

pub struct Scratch {
    pub name: ScratchName,
    /// The server's `postgres` database: where scratch databases are created and dropped.
    admin_url: String,
    /// DATABASE_URL with the scratch database.
    pub url: String,
    workers: Vec<(Child, PathBuf)>,
    /// Where the workers' output goes; removed by a clean teardown.
    log_dir: PathBuf,
}

impl Scratch {
    /// The scratch database `name` next to `database_url`'s (nothing is created yet).
    pub fn new(database_url: &str, name: ScratchName) -> anyhow::Result<Scratch> {
        Ok(Scratch {
            admin_url: with_database(database_url, "postgres")?,
            url: with_database(database_url, name.as_str())?,
            log_dir: std::env::temp_dir().join(name.as_str()),
            name,
            workers: Vec::new(),
        })
    }

    /// Creates and migrates the database, copies `prompt` into its
    /// registry, and returns a pool on it.
    pub async fn create(&self, prompt: Option<&prompts::PromptVersion>) -> anyhow::Result<PgPool> {
        let mut admin = self.admin().await?;
        eval::create_database(&mut admin, &self.name)
            .await
            .with_context(|| format!("failed to create the scratch database {}", self.name))?;
        admin.close().await.ok();
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(10))
            .connect(&self.url)
            .await
            .with_context(|| format!("failed to connect to {}", self.name))?;
        db::migrate(&pool).await?;
        if let Some(p) = prompt {
            prompts::insert_copy(&pool, p)
                .await
                .with_context(|| format!("failed to copy prompt version {}", p.version))?;
        }
        Ok(pool)
    }

    /// Starts `n` workers on the database with `env` over the caller's environment.
    pub fn spawn_workers(&mut self, n: usize, env: &WorkerEnv) -> anyhow::Result<()> {
        let bin = worker_binary()?;
        std::fs::create_dir_all(&self.log_dir)
            .with_context(|| format!("failed to create {}", self.log_dir.display()))?;
        for i in 0..n {
            let log = self.log_dir.join(format!("worker-{i}.log"));
            let out = std::fs::File::create(&log)
                .with_context(|| format!("failed to create {}", log.display()))?;
            let mut cmd = Command::new(&bin);
            cmd.env("DATABASE_URL", &self.url)
                .env("QUEUE_BACKEND", "postgres")
                .env("FAULTLINE_WORKER_ID", format!("{}-{i}", self.name))
                .env("WORKER_HTTP_ADDR", "off")
                .env("NO_COLOR", "1");
            if std::env::var_os("RUST_LOG").is_none() {
                cmd.env("RUST_LOG", "warn");
            }
            for k in &env.remove {
                cmd.env_remove(k);
            }
            cmd.envs(env.set.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(out)
                .kill_on_drop(true);
            let child = cmd
                .spawn()
                .with_context(|| format!("failed to start {}", bin.display()))?;
            self.workers.push((child, log));
        }
        Ok(())
    }

    /// An error when a worker has exited (with the end of its output).
    pub fn check_workers(&mut self) -> anyhow::Result<()> {
        for (child, log) in &mut self.workers {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "a faultline-worker exited ({status}); the end of its output ({}):\n{}",
                    log.display(),
                    tail(log, 15)
                );
            }
        }
        Ok(())
    }

    /// Stops the workers and drops the database. The workers' output is
    /// kept (and its folder named) only when `keep_logs`.
    pub async fn teardown(mut self, keep_logs: bool) -> anyhow::Result<()> {
        for (child, _) in &self.workers {
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
        }
        for (child, _) in &mut self.workers {
            if tokio::time::timeout(STOP_GRACE, child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
        if keep_logs && !self.workers.is_empty() {
            eprintln!("the workers' output is in {}", self.log_dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.log_dir);
        }
        let mut admin = self.admin().await?;
        eval::drop_database(&mut admin, &self.name)
            .await
            .with_context(|| format!("failed to drop the scratch database {}", self.name))?;
        admin.close().await.ok();
        Ok(())
    }

    async fn admin(&self) -> anyhow::Result<PgConnection> {
        PgConnection::connect(&self.admin_url)
            .await
            .context("failed to connect to the `postgres` database of DATABASE_URL's server")
    }
}

/// `faultline-worker`, next to this executable.
fn worker_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the faultline executable")?;
    let bin = exe
        .parent()
        .map(|d| d.join("faultline-worker"))
        .context("the faultline executable has no folder")?;
    if !bin.is_file() {
        bail!(
            "{} is missing: faultline eval starts the faultline-worker next to faultline (cargo build --bins)",
            bin.display()
        );
    }
    Ok(bin)
}

/// The end of a worker's output: its error and causes (not a backtrace)
/// when it returned one, else its last `n` lines.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = match lines.iter().rposition(|l| l.starts_with("Error: ")) {
        Some(at) => at,
        None => lines.len().saturating_sub(n),
    };
    lines[from..]
        .iter()
        .take(n)
        .take_while(|l| !l.starts_with("Stack backtrace:"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

/// `url` with its database replaced by `db` (query parameters kept).
pub fn with_database(url: &str, db: &str) -> anyhow::Result<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        bail!("DATABASE_URL is not a URL (postgres://user@host:port/database)");
    };
    let query_at = rest.find('?').unwrap_or(rest.len());
    let authority_end = rest[..query_at].find('/').unwrap_or(query_at);
    Ok(format!(
        "{scheme}://{}/{db}{}",
        &rest[..authority_end],
        &rest[query_at..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_database_is_on_the_server_of_database_url() {
        let cases = [
            ("postgres://u@h:5432/faultline", "postgres://u@h:5432/x"),
            (
                "postgres://u@h/faultline?sslmode=disable",
                "postgres://u@h/x?sslmode=disable",
            ),
            ("postgres://h", "postgres://h/x"),
            (
                "postgres:///faultline?host=/run/pg",
                "postgres:///x?host=/run/pg",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(with_database(url, "x").unwrap(), want, "{url}");
        }
        assert!(with_database("faultline", "x").is_err());
    }
}
