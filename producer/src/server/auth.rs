//! Who may call what. `/api/v1/*` takes `Authorization: Bearer <token>` with a
//! role ([`Role`]); the webhooks have their own secrets (GitHub: HMAC of the
//! body, see `github.rs`; Jenkins: a shared token, checked here).

use std::net::IpAddr;

use axum::{
    extract::FromRequestParts,
    http::{Extensions, HeaderMap, header, request::Parts},
};
use faultline_shared::{
    config::{ExposeSecret, SecretString},
    storage::tokens::{self, Role, TokenRow},
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{AppState, client::ClientAddr, error::AppError};

/// The bearer token of `Authorization: Bearer <token>`, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The client's address: the peer, or the forwarded client behind a
/// trusted proxy (set by the accept loop; absent in unit tests).
pub fn client_ip(extensions: &Extensions) -> Option<IpAddr> {
    extensions.get::<ClientAddr>().map(|&ClientAddr(ip)| ip)
}

/// 429 while `ip` (its /64 for IPv6) has presented too many wrong tokens
/// (checked before the token).
pub fn check_throttle(state: &AppState, ip: Option<IpAddr>) -> Result<(), AppError> {
    match ip.and_then(|ip| state.auth_throttle.blocked(ip.into())) {
        Some(wait) => Err(AppError::TooManyAttempts(wait)),
        None => Ok(()),
    }
}

/// Counts a wrong token against `ip` (its /64 for IPv6).
pub fn record_failure(state: &AppState, ip: Option<IpAddr>) {
    if let Some(ip) = ip {
        state.auth_throttle.failed(ip.into());
    }
}

/// Looks the bearer token up and checks that its role grants `needed`.
/// Wrong tokens count against the client's address (see `throttle`).
async fn authorize(parts: &Parts, state: &AppState, needed: Role) -> Result<TokenRow, AppError> {
    let token = bearer(&parts.headers).ok_or(AppError::Unauthorized(
        "send an API token as `Authorization: Bearer <token>`",
    ))?;
    let ip = client_ip(&parts.extensions);
    check_throttle(state, ip)?;
    let Some(row) = tokens::find_active(&state.pool, token).await? else {
        record_failure(state, ip);
        return Err(AppError::Unauthorized(
            "unknown, revoked or expired API token",
        ));
    };
    if !row.role.grants(needed) {
        return Err(AppError::Forbidden(format!(
            "token {:?} has role {}; this needs {needed} or admin",
            row.name, row.role
        )));
    }
    Ok(row)
}

/// A caller whose token may submit analyses (role ingest or admin).
pub struct Ingester(pub TokenRow);

/// A caller whose token may read analyses (role reviewer or admin).
pub struct Reader;

/// A caller whose token may work the review queue (role reviewer or admin);
/// its name is who the audit trail records.
pub struct Reviewer(pub TokenRow);

impl Reviewer {
    pub fn is_admin(&self) -> bool {
        self.0.role == Role::Admin
    }
}

impl FromRequestParts<AppState> for Reviewer {
    type Rejection = AppError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        authorize(parts, state, Role::Reviewer).await.map(Reviewer)
    }
}

impl FromRequestParts<AppState> for Ingester {
    type Rejection = AppError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        authorize(parts, state, Role::Ingest).await.map(Ingester)
    }
}

impl FromRequestParts<AppState> for Reader {
    type Rejection = AppError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        authorize(parts, state, Role::Reviewer)
            .await
            .map(|_| Reader)
    }
}

/// Checks Jenkins' shared token (`X-Faultline-Token` or `Authorization:
/// Bearer`). Both sides are hashed first, so the comparison is constant-time
/// and does not reveal the token's length.
pub fn check_shared_token(headers: &HeaderMap, expected: &SecretString) -> Result<(), AppError> {
    let presented = headers
        .get("x-faultline-token")
        .and_then(|v| v.to_str().ok())
        .or_else(|| bearer(headers))
        .ok_or(AppError::Unauthorized(
            "send the Jenkins token as `X-Faultline-Token` or `Authorization: Bearer`",
        ))?;
    let a = Sha256::digest(presented.trim().as_bytes());
    let b = Sha256::digest(expected.expose_secret().as_bytes());
    if bool::from(a.ct_eq(&b)) {
        Ok(())
    } else {
        Err(AppError::Unauthorized("wrong Jenkins token"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn bearer_tokens_are_read_case_insensitively() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  abc "),
        );
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
    }

    #[test]
    fn the_shared_token_must_match_exactly() {
        let secret = SecretString::from("s3cret");
        let mut h = HeaderMap::new();
        assert!(check_shared_token(&h, &secret).is_err());
        h.insert("x-faultline-token", HeaderValue::from_static("s3cre"));
        assert!(check_shared_token(&h, &secret).is_err());
        h.insert("x-faultline-token", HeaderValue::from_static("s3cret"));
        assert!(check_shared_token(&h, &secret).is_ok());
    }
}
