//! Test support for black-box tests of the real `faultline` and
//! `faultline-worker` binaries against a real Postgres.
//!
//! Each test gets its own database ([`TestDb`]), migrated by the real
//! `faultline migrate`, so tests run in parallel. Nothing here sleeps to
//! "wait for it": [`wait_until`] polls a condition up to a deadline.

use std::{
    collections::HashMap,
    fs,
    future::Future,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::Duration,
};

use sqlx::{Connection, PgConnection, PgPool, postgres::PgPoolOptions};

pub mod browser;
pub mod fake_llm;
pub mod fakes;
pub mod four_step_model;
pub mod scripted_model;
use uuid::Uuid;

/// The server tests create their databases on (`FAULTLINE_TEST_ADMIN_URL`,
/// default: the local trust-auth superuser).
pub fn admin_url() -> String {
    std::env::var("FAULTLINE_TEST_ADMIN_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Where cargo put the binaries (the test executable lives in `target/<profile>/deps`).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: build it first (`cargo build --bins`, or `make test`)",
        path.display()
    );
    path
}

/// A fresh, migrated database, dropped when the test ends.
pub struct TestDb {
    pub name: String,
    pub url: String,
    pub pool: PgPool,
    pub dir: PathBuf,
}

impl TestDb {
    pub async fn new() -> TestDb {
        let name = format!("faultline_t_{}", Uuid::new_v4().simple());
        let admin = admin_url();
        let mut conn = PgConnection::connect(&admin)
            .await
            .expect("connect to the test Postgres (FAULTLINE_TEST_ADMIN_URL)");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create test database");
        conn.close().await.ok();
        let url = match admin.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{name}"),
            None => panic!("admin url {admin} has no database part"),
        };
        let dir = std::env::temp_dir().join(&name);
        fs::create_dir_all(&dir).unwrap();
        let db = TestDb {
            pool: PgPoolOptions::new()
                .max_connections(4)
                .connect_lazy(&url)
                .unwrap(),
            name,
            url,
            dir,
        };
        let out = db.cli(&["migrate"], &[]);
        assert!(
            out.status.success(),
            "migrate failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        db
    }

    /// Runs `faultline ARGS` against this database.
    pub fn cli(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(bin("faultline"))
            .args(args)
            .env("DATABASE_URL", &self.url)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .expect("run faultline")
    }

    /// Runs `faultline ARGS`, asserts success, returns trimmed stdout.
    pub fn cli_ok(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self.cli(args, env);
        assert!(
            out.status.success(),
            "faultline {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Writes a file into this test's scratch folder.
    pub fn write(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.join(name);
        fs::write(&path, content).unwrap();
        path
    }

    /// Copies the bundled sample `samples/NAME` into this test's scratch
    /// folder (samples/README.md says what each one is).
    pub fn write_sample(&self, name: &str) -> PathBuf {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../samples")
            .join(name);
        let bytes = fs::read(&sample).unwrap_or_else(|e| panic!("{}: {e}", sample.display()));
        self.write(name, bytes)
    }

    /// Enqueues a log and returns the run id.
    pub fn enqueue(&self, path: &Path, env: &[(&str, &str)]) -> Uuid {
        self.cli_ok(&["enqueue", path.to_str().unwrap()], env)
            .parse()
            .expect("enqueue prints a run id")
    }

    /// Waits (60 s at most) until run `run`'s notification is delivered to
    /// every configured target.
    pub async fn wait_delivered(&self, run: Uuid) {
        wait_until(Duration::from_secs(60), || async {
            let status: Option<String> =
                sqlx::query_scalar("SELECT status FROM notification_outbox WHERE run_id = $1")
                    .bind(run)
                    .fetch_optional(&self.pool)
                    .await
                    .unwrap();
            (status.as_deref() == Some("delivered")).then_some(())
        })
        .await
    }

    /// Stores `event` and its `log` as a webhook handler does (Postgres
    /// broker, priority 10, 5 attempts, at most `max_iterations`); its run.
    pub async fn ingest(
        &self,
        event: &faultline_shared::storage::events::NewEvent,
        log: &[u8],
        max_iterations: i32,
    ) -> Uuid {
        let limits = faultline_shared::storage::runs::RunLimits {
            max_iterations,
            max_attempts: 5,
            priority: 10,
            shadowed: false,
        };
        faultline_shared::storage::ingest(
            &self.pool,
            &faultline_shared::queue::Broker::Postgres,
            event,
            log,
            limits,
        )
        .await
        .unwrap()
        .run_id
    }

    /// The database's clock (timestamps to compare with its rows').
    pub async fn now(&self) -> chrono::DateTime<chrono::Utc> {
        sqlx::query_scalar("SELECT now()")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// When the lease `owner` holds on `run` expires.
    pub async fn lease_expires_at(&self, run: Uuid, owner: &str) -> chrono::DateTime<chrono::Utc> {
        sqlx::query_scalar(
            "SELECT lease_expires_at FROM analysis_runs WHERE id = $1 AND lease_owner = $2",
        )
        .bind(run)
        .bind(owner)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }

    /// Waits (up to 60 s) until `run` commits `iteration`; returns when.
    pub async fn committed_at(&self, run: Uuid, iteration: i32) -> chrono::DateTime<chrono::Utc> {
        wait_until(Duration::from_secs(60), || async {
            sqlx::query_scalar(
                "SELECT created_at FROM run_steps WHERE run_id = $1 AND iteration = $2",
            )
            .bind(run)
            .bind(iteration)
            .fetch_optional(&self.pool)
            .await
            .unwrap()
        })
        .await
    }

    /// Starts a worker against this database with extra environment, on
    /// [`FAST_WORKER`] settings.
    pub fn worker(&self, name: &str, env: &[(&str, &str)]) -> Worker {
        self.spawn_worker(name, FAST_WORKER, env)
    }

    /// Starts a worker with the product's default lease, reconcile, poll and
    /// retry settings (only its HTTP port is chosen freely), plus `env`.
    pub fn worker_with_defaults(&self, name: &str, env: &[(&str, &str)]) -> Worker {
        self.spawn_worker(name, &[("WORKER_HTTP_ADDR", "127.0.0.1:0")], env)
    }

    fn spawn_worker(&self, name: &str, base: &[(&str, &str)], env: &[(&str, &str)]) -> Worker {
        let log = self.dir.join(format!("{name}.log"));
        let mut vars: HashMap<&str, &str> = base.iter().copied().collect();
        vars.extend(env.iter().copied());
        let child = Command::new(bin("faultline-worker"))
            .env("DATABASE_URL", &self.url)
            .env("FAULTLINE_WORKER_ID", name)
            .env(
                "RUST_LOG",
                "info,apalis=warn,apalis_core=warn,apalis_postgres=warn",
            )
            .env("NO_COLOR", "1")
            .envs(vars)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .expect("start faultline-worker");
        Worker {
            child: Some(child),
            log,
        }
    }
}

/// Worker settings that keep recovery quick in tests.
pub const FAST_WORKER: &[(&str, &str)] = &[
    ("FAULTLINE_LEASE_TTL_MS", "1500"),
    ("FAULTLINE_RECONCILE_INTERVAL_MS", "250"),
    ("FAULTLINE_POLL_INTERVAL_MS", "200"),
    ("FAULTLINE_QUEUE_HEARTBEAT_SECS", "1"),
    ("FAULTLINE_RETRY_BASE_MS", "200"),
    ("FAULTLINE_SHUTDOWN_GRACE_MS", "2000"),
    ("FAULTLINE_WORKER_CONCURRENCY", "2"),
    // Many workers share this host: each takes a free port for its HTTP side.
    ("WORKER_HTTP_ADDR", "127.0.0.1:0"),
];

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        let _ = fs::remove_dir_all(&self.dir);
        // Drop the database from a separate thread with its own runtime: Drop cannot await.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(mut conn) = PgConnection::connect(&admin_url()).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                    )))
                    .execute(&mut conn)
                    .await;
                }
            });
        })
        .join();
    }
}

/// A running worker process; killed (SIGKILL) when dropped.
pub struct Worker {
    child: Option<Child>,
    pub log: PathBuf,
}

impl Worker {
    pub fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(self.child.as_ref().expect("running").id() as i32)
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(self.pid(), sig).expect("signal worker");
    }

    /// `kill -9` and reap.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits for the process to exit by itself, up to `deadline`.
    pub async fn wait_exit(&mut self, deadline: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let status = wait_until(deadline, || {
            let status = child.try_wait().ok().flatten();
            async move { status }
        })
        .await;
        self.child = None;
        Some(status)
    }

    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the worker sits inside a step, holding its lease, just
    /// before the commit (`FAULTLINE_CHAOS_STEP_DELAY_MS` keeps it there).
    pub async fn wait_holding_a_step(&self) {
        wait_until(Duration::from_secs(30), || async {
            self.stderr()
                .contains("holding the step before its commit")
                .then_some(())
        })
        .await
    }

    /// The worker's `/metrics` page.
    pub async fn metrics(&self) -> String {
        let base = self.http_base().await;
        reqwest::get(format!("{base}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// The base URL of the worker's HTTP port (`/healthz`, `/readyz`,
    /// `/metrics`), read from the line it logs once listening.
    pub async fn http_base(&self) -> String {
        const MARK: &str = "health and metrics on ";
        wait_until(Duration::from_secs(30), || {
            let log = self.stderr();
            let base = log.find(MARK).map(|i| {
                log[i + MARK.len()..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '"')
                    .collect::<String>()
            });
            async move { base }
        })
        .await
    }
}

/// A running `faultline serve` on a free port; killed when dropped.
pub struct Serve {
    pub child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// Its stderr (`serve.log` in the test's folder).
    pub log: PathBuf,
}

impl TestDb {
    /// Starts `faultline serve` on port 0 and reads the address it prints;
    /// its stderr goes to `serve.log` in the test's folder.
    pub async fn serve(&self, env: &[(&str, &str)]) -> Serve {
        use tokio::io::{AsyncBufReadExt, BufReader};
        let stderr = fs::File::create(self.dir.join("serve.log")).unwrap();
        let mut child = tokio::process::Command::new(bin("faultline"))
            .args(["serve", "--bind", "127.0.0.1:0"])
            .env("DATABASE_URL", &self.url)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("start faultline serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("serve printed nothing within 30s")
            .unwrap()
            .unwrap_or_else(|| {
                let log = fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default();
                panic!("serve exited before listening: {log}")
            });
        let base = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Serve {
            child,
            base,
            log: self.dir.join("serve.log"),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_ref() {
            // A SIGSTOPped worker must be continued before it can die.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGCONT,
            );
        }
        self.kill9();
        // A failing test shows what its worker said: the log lives in a
        // scratch folder nobody reads once CI has gone.
        if std::thread::panicking() {
            print_log_ends(&self.log);
        }
    }
}

/// Prints the first 20 and the last 40 lines of a child's log: a failing
/// test shows what the process said (its scratch folder is gone once CI
/// has finished), how it started and how it ended.
pub fn print_log_ends(log: &Path) {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    eprintln!("--- {} ({} lines) ---", log.display(), lines.len());
    let mut from = 0;
    if lines.len() > 60 {
        lines[..20].iter().for_each(|l| eprintln!("{l}"));
        eprintln!("[…]");
        from = lines.len() - 40;
    }
    lines[from..].iter().for_each(|l| eprintln!("{l}"));
}

/// Polls `check` every 25 ms until it yields `Some`, panicking at `deadline`.
pub async fn wait_until<T, F, Fut>(deadline: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let end = tokio::time::Instant::now() + deadline;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() >= end {
            panic!("condition not met within {deadline:?}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A run's status and committed iteration count.
pub async fn run_state(pool: &PgPool, run: Uuid) -> (String, i32) {
    sqlx::query_as("SELECT status, iteration FROM analysis_runs WHERE id = $1")
        .bind(run)
        .fetch_one(pool)
        .await
        .expect("run exists")
}

/// Waits until the run reaches completed, needs_review or failed.
pub async fn wait_terminal(pool: &PgPool, run: Uuid, deadline: Duration) -> String {
    wait_until(deadline, || async {
        let (status, _) = run_state(pool, run).await;
        ["completed", "needs_review", "failed"]
            .contains(&status.as_str())
            .then_some(status)
    })
    .await
}

/// A realistic failure log: an OOM-killed Gradle test JVM after ordinary build noise.
pub fn oom_log() -> String {
    let mut log = String::new();
    log.push_str("Started by GitHub push\nChecking out Revision 3f2a9c1\n> Task :compileJava\n> Task :test\n");
    for i in 0..60 {
        log.push_str(&format!(
            "com.example.ledger.BatchTest > case{i}() PASSED\n"
        ));
    }
    log.push_str("java.lang.OutOfMemoryError: Java heap space\n");
    log.push_str("\tat java.base/java.util.Arrays.copyOf(Arrays.java:3512)\n");
    log.push_str("Process 'Gradle Test Executor 1' finished with non-zero exit value 137\n");
    log.push_str(
        "> Task :test FAILED\nFAILURE: Build failed with an exception.\nBUILD FAILED in 2m 13s\n",
    );
    log
}

/// Deletes every Redis key of a broker namespace (`<ns>-*`): what FLUSHALL
/// does to that deployment's queues, without touching anyone else's keys.
/// Returns how many keys were deleted.
pub async fn wipe_redis_namespace(redis_url: &str, namespace: &str) -> anyhow::Result<usize> {
    let client = redis::Client::open(redis_url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{namespace}-*"))
        .query_async(&mut conn)
        .await?;
    if !keys.is_empty() {
        redis::cmd("DEL")
            .arg(&keys)
            .query_async::<()>(&mut conn)
            .await?;
    }
    Ok(keys.len())
}

impl TestDb {
    /// Creates an API token with `role` named `name` and returns it.
    pub fn token(&self, role: &str, name: &str) -> String {
        self.cli_ok(&["token", "create", "--role", role, "--name", name], &[])
    }

    /// The journaled observation of the run's first call of `tool`.
    pub async fn observation(&self, run: Uuid, tool: &str) -> serde_json::Value {
        sqlx::query_scalar(
            "SELECT observation FROM run_steps WHERE run_id = $1 AND action = $2
             ORDER BY iteration LIMIT 1",
        )
        .bind(run)
        .bind(tool)
        .fetch_one(&self.pool)
        .await
        .unwrap_or_else(|e| panic!("no {tool} step in run {run}: {e}"))
    }
}

/// The value of one sample of a Prometheus text page (`name{labels}`,
/// labels in any order; summed over the series that match), 0 if absent.
pub fn metric_sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            metric == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, v)| v.parse::<f64>().unwrap())
        .sum()
}

/// A run taken over from a `kill -9`ed worker resumes ahead of a backlog of
/// waiting steps (either broker, chosen by `env`): 30 other runs wait for
/// the one surviving slot, 300 ms a step, so a resume queued behind them
/// would wait about 9 s; ahead of them it waits for the take-over (session
/// grace plus a reconcile pass) and one step. Returns the kill-to-resume
/// time.
pub async fn a_resumed_run_goes_ahead_of_the_backlog(
    db: &TestDb,
    env: &[(&str, &str)],
) -> Duration {
    let run = db.enqueue(&db.write("held.log", oom_log()), env);
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut all = env.to_vec();
        all.extend_from_slice(extra);
        all
    };
    let mut dead = db.worker_with_defaults(
        "dead",
        &with(&[
            ("FAULTLINE_CHAOS_STEP_DELAY_MS", "60000"),
            ("FAULTLINE_WORKER_CONCURRENCY", "1"),
        ]),
    );
    dead.wait_holding_a_step().await;
    for i in 0..30 {
        let log = db.write(
            &format!("backlog{i}.log"),
            format!("{}\nbacklog {i}\n", oom_log()),
        );
        db.enqueue(&log, env);
    }
    let _alive = db.worker_with_defaults(
        "alive",
        &with(&[
            ("FAULTLINE_CHAOS_STEP_DELAY_MS", "300"),
            ("FAULTLINE_WORKER_CONCURRENCY", "1"),
        ]),
    );
    // The survivor is chewing the backlog when the holder dies.
    wait_until(Duration::from_secs(30), || async {
        let steps: i64 = sqlx::query_scalar("SELECT count(*) FROM run_steps WHERE run_id <> $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
        (steps >= 2).then_some(())
    })
    .await;
    let killed_at = db.now().await;
    dead.kill9();
    let resumed_at = db.committed_at(run, 1).await;
    (resumed_at - killed_at).to_std().unwrap_or_default()
}
