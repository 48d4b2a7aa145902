//! `console_sessions`: browsers signed in to the review console
//! (`faultline serve`, `/ui/`). A session is a random cookie value whose
//! SHA-256 is stored, tied to the API token it was opened with, and a form
//! token (CSRF) of its own. It ends when it expires, at sign-out, or as
//! soon as its token is revoked or expires: every look-up reads the token.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::tokens::{self, TokenRow};

/// A live session: who is signed in and the form token of their pages.
#[derive(Debug, Clone)]
pub struct ConsoleSession {
    pub token: TokenRow,
    pub csrf: String,
    pub expires_at: DateTime<Utc>,
}

/// A session just opened: the cookie value (shown once, never stored) and
/// its form token.
#[derive(Debug, Clone)]
pub struct Opened {
    pub cookie: String,
    pub csrf: String,
}

/// Opens a session for `token` lasting `ttl`; drops expired sessions of
/// every token on the way (they are refused anyway; this keeps the table small).
pub async fn open(pool: &PgPool, token: &TokenRow, ttl: Duration) -> sqlx::Result<Opened> {
    let cookie = tokens::generate();
    let csrf = tokens::generate();
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM console_sessions WHERE expires_at < now()")
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO console_sessions (id_sha256, token_id, csrf, expires_at)
         VALUES ($1, $2, $3, now() + make_interval(secs => $4))",
    )
    .bind(tokens::hash(&cookie))
    .bind(token.id)
    .bind(&csrf)
    .bind(ttl.as_secs_f64())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Opened { cookie, csrf })
}

#[derive(sqlx::FromRow)]
struct SessionRow {
    #[sqlx(flatten)]
    token: TokenRow,
    csrf: String,
    session_expires_at: DateTime<Utc>,
}

/// The live session of a cookie value: not expired, its token neither
/// revoked nor expired.
pub async fn find(pool: &PgPool, cookie: &str) -> sqlx::Result<Option<ConsoleSession>> {
    let row: Option<SessionRow> = sqlx::query_as(
        "SELECT t.id, t.name, t.role, t.created_at, t.revoked_at, t.expires_at,
                s.csrf, s.expires_at AS session_expires_at
         FROM console_sessions s JOIN api_tokens t ON t.id = s.token_id
         WHERE s.id_sha256 = $1 AND s.expires_at > now()
           AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())",
    )
    .bind(tokens::hash(cookie))
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| ConsoleSession {
        token: r.token,
        csrf: r.csrf,
        expires_at: r.session_expires_at,
    }))
}

/// Ends the session of a cookie value (sign-out); true when there was one.
pub async fn close(pool: &PgPool, cookie: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM console_sessions WHERE id_sha256 = $1")
        .bind(tokens::hash(cookie))
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}
