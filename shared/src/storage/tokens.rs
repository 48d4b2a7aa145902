//! `api_tokens`: bearer tokens of the HTTP API, each with one role. Only a
//! token's SHA-256 is stored, so a database dump reveals no usable token.

use std::{fmt, str::FromStr, sync::LazyLock};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

/// What a token may do. `Admin` may do everything. Serialised as its name
/// (`ingest`, `reviewer`, `admin`), as the `api_tokens.role` column stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Submit analyses.
    Ingest,
    /// Read analyses and work the review queue.
    Reviewer,
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Ingest, Role::Reviewer, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Ingest => "ingest",
            Role::Reviewer => "reviewer",
            Role::Admin => "admin",
        }
    }

    /// True when a token with this role may do what `needed` may do.
    pub fn grants(self, needed: Role) -> bool {
        self == Role::Admin || self == needed
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown role {s:?} (expected ingest, reviewer or admin)"))
    }
}

/// A stored token, without its secret.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct TokenRow {
    pub id: Uuid,
    pub name: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// When the token stops working; `None`: never.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A new random token: `flt_` and 64 hex digits (256 bits from a CSPRNG).
pub fn generate() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("flt_{}", crate::hex(&bytes))
}

/// The stored form of a token: hex SHA-256.
pub fn hash(token: &str) -> String {
    crate::hex(&Sha256::digest(token.as_bytes()))
}

const COLUMNS: &str = "id, name, role, created_at, revoked_at, expires_at";

/// [`create`]'s statement.
pub(crate) static CREATE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO api_tokens (id, name, role, token_sha256, expires_at)
         VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
         ON CONFLICT (name) DO NOTHING
         RETURNING {COLUMNS}"
    )
});

/// Stores a new token under `name` that stops working `expires_in` from now
/// (`None`: never); `None` when the name is already taken.
pub async fn create(
    pool: &PgPool,
    name: &str,
    role: Role,
    token: &str,
    expires_in: Option<std::time::Duration>,
) -> sqlx::Result<Option<TokenRow>> {
    sqlx::query_as(CREATE.as_str())
        .bind(Uuid::now_v7())
        .bind(name)
        .bind(role)
        .bind(hash(token))
        .bind(expires_in.map(|d| d.as_secs_f64()))
        .fetch_optional(pool)
        .await
}

/// [`find_active`]'s statement.
pub(crate) static FIND_ACTIVE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM api_tokens
         WHERE token_sha256 = $1 AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > now())"
    )
});

/// Finds the token with this secret that is neither revoked nor expired.
pub async fn find_active(pool: &PgPool, token: &str) -> sqlx::Result<Option<TokenRow>> {
    sqlx::query_as(FIND_ACTIVE.as_str())
        .bind(hash(token))
        .fetch_optional(pool)
        .await
}

/// [`list`]'s statement.
pub(crate) static LIST: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM api_tokens ORDER BY created_at"));

/// Lists every token (never their secrets), oldest first.
pub async fn list(pool: &PgPool) -> sqlx::Result<Vec<TokenRow>> {
    sqlx::query_as(LIST.as_str()).fetch_all(pool).await
}

/// Marks the named token revoked; false when no active token has that name.
pub async fn revoke(pool: &PgPool, name: &str) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL",
    )
    .bind(name)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hashes_are_stable() {
        let (a, b) = (generate(), generate());
        assert_ne!(a, b);
        assert!(a.starts_with("flt_") && a.len() == 68);
        assert_eq!(hash(&a), hash(&a));
        assert_ne!(hash(&a), a);
        assert_eq!(hash(&a).len(), 64);
    }

    #[test]
    fn roles_parse_case_insensitively() {
        assert_eq!("Reviewer".parse::<Role>(), Ok(Role::Reviewer));
        assert!("root".parse::<Role>().is_err());
        assert!(Role::Admin.grants(Role::Ingest) && Role::Admin.grants(Role::Reviewer));
        assert!(!Role::Ingest.grants(Role::Reviewer) && !Role::Reviewer.grants(Role::Ingest));
    }
}
