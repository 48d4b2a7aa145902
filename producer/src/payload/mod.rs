//! Webhook payload parsers: a request body in, what ingest stores out.
//!
//! Pure functions over untrusted bytes (no I/O, no signature check, no
//! database), shared by the HTTP handlers and the fuzz targets:
//! [`github::parse`] and [`jenkins::parse`].

pub mod github;
pub mod jenkins;

use serde::de::DeserializeOwned;

/// Why a body cannot be ingested; the HTTP layer answers 400 with the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// Not JSON at all (a syntax error or a truncated body).
    #[error("{0}")]
    Syntax(String),
    /// JSON of the wrong shape; the message starts with the field's path
    /// (`workflow_run.id: invalid type …`).
    #[error("{0}")]
    Data(String),
}

/// Deserializes `body`, naming the path of a field of the wrong type.
fn from_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, PayloadError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value =
        serde_path_to_error::deserialize(&mut de).map_err(|e| match e.inner().classify() {
            serde_json::error::Category::Data => PayloadError::Data(e.to_string()),
            _ => PayloadError::Syntax(e.to_string()),
        })?;
    de.end().map_err(|e| PayloadError::Syntax(e.to_string()))?;
    Ok(value)
}
