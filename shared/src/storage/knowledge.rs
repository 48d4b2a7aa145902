//! `knowledge_base`: documented failure patterns, searched with Postgres
//! full-text search (weighted: title and keywords first, then symptoms,
//! then cause and fix).

use sqlx::PgPool;

use crate::kb::KbEntry;

/// Inserts or updates knowledge-base entries by slug.
pub async fn upsert_entries(
    pool: &PgPool,
    entries: &[KbEntry],
    source: &str,
) -> sqlx::Result<usize> {
    let mut tx = pool.begin().await?;
    for e in entries {
        sqlx::query(
            "INSERT INTO knowledge_base (slug, title, category, symptoms, root_cause, fix, keywords, signatures, source, search)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,
                     setweight(to_tsvector('english', $2 || ' ' || array_to_string($7::text[], ' ')), 'A')
                     || setweight(to_tsvector('english', $4), 'B')
                     || setweight(to_tsvector('english', $5 || ' ' || $6), 'C'))
             ON CONFLICT (slug) DO UPDATE SET
                 title = EXCLUDED.title, category = EXCLUDED.category, symptoms = EXCLUDED.symptoms,
                 root_cause = EXCLUDED.root_cause, fix = EXCLUDED.fix, keywords = EXCLUDED.keywords,
                 signatures = EXCLUDED.signatures, source = EXCLUDED.source, search = EXCLUDED.search,
                 updated_at = now()",
        )
        .bind(&e.slug)
        .bind(&e.title)
        .bind(&e.category)
        .bind(&e.symptoms)
        .bind(&e.root_cause)
        .bind(&e.fix)
        .bind(&e.keywords)
        .bind(&e.signatures)
        .bind(source)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(entries.len())
}

/// A knowledge-base hit with its normalised rank (0..1).
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct KbMatch {
    pub slug: String,
    pub title: String,
    pub category: String,
    pub root_cause: String,
    pub fix: String,
    pub rank: f32,
}

/// Full-text search; any query word may match (OR), better matches rank higher.
pub async fn search(pool: &PgPool, query: &str, limit: i64) -> sqlx::Result<Vec<KbMatch>> {
    sqlx::query_as(
        "WITH q AS (
             SELECT nullif(replace(plainto_tsquery('english', $1)::text, '&', '|'), '')::tsquery AS tsq)
         SELECT slug, title, category, root_cause, fix, ts_rank_cd(search, q.tsq, 32)::real AS rank
         FROM knowledge_base, q
         WHERE q.tsq IS NOT NULL AND search @@ q.tsq
         ORDER BY rank DESC, slug LIMIT $2",
    )
    .bind(query)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// Number of entries.
pub async fn count(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM knowledge_base")
        .fetch_one(pool)
        .await
}
