//! Connecting to Postgres and running both migration sets (ours and the
//! apalis queue's, which keeps its own history in `apalis._sqlx_migrations`).

use std::time::Duration;

use sqlx::{PgPool, postgres::PgPoolOptions};

use crate::config::{ExposeSecret, Settings};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Opens a pool sized for `max_connections`.
pub async fn connect(settings: &Settings, max_connections: u32) -> anyhow::Result<PgPool> {
    use anyhow::Context as _;
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .connect(settings.database_url.expose_secret())
        .await
        .context("failed to connect to Postgres (check DATABASE_URL)")
}

/// Applies the queue's and Faultline's migrations, then upserts the built-in
/// knowledge base. Safe to run concurrently and repeatedly.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    use anyhow::Context as _;
    // Serialise concurrent migrators (several workers starting at once).
    let mut lock = pool.acquire().await?;
    sqlx::query("SELECT pg_advisory_lock(7171001)")
        .execute(&mut *lock)
        .await?;
    let result = async {
        apalis_postgres::PostgresStorage::setup(pool)
            .await
            .context("failed to migrate the apalis queue schema")?;
        MIGRATOR
            .run(pool)
            .await
            .context("failed to run Faultline migrations")?;
        crate::storage::knowledge::upsert_entries(pool, crate::kb::builtin(), "builtin")
            .await
            .context("failed to load the built-in knowledge base")?;
        anyhow::Ok(())
    }
    .await;
    sqlx::query("SELECT pg_advisory_unlock(7171001)")
        .execute(&mut *lock)
        .await?;
    result
}
