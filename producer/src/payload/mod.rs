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
    /// A field ingest refuses: the message names it and says why.
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
}

/// Refuses text ingest cannot store faithfully: a NUL character (Postgres
/// `text` and `jsonb` cannot hold one) or more than `max` bytes (keeps keys
/// and indexed columns under Postgres' index row size).
pub fn check_text(field: &'static str, value: &str, max: usize) -> Result<(), PayloadError> {
    if value.contains('\0') {
        return Err(PayloadError::Invalid {
            field,
            reason: "contains a NUL character".into(),
        });
    }
    if value.len() > max {
        return Err(PayloadError::Invalid {
            field,
            reason: format!("is {} bytes long; at most {max} are accepted", value.len()),
        });
    }
    Ok(())
}

/// [`check_text`] on an optional field.
pub fn check_opt(field: &'static str, value: Option<&str>, max: usize) -> Result<(), PayloadError> {
    value.map_or(Ok(()), |v| check_text(field, v, max))
}

/// Refuses a NUL character anywhere in a JSON value (keys and strings).
pub fn check_json(field: &'static str, value: &serde_json::Value) -> Result<(), PayloadError> {
    use serde_json::Value;
    match value {
        Value::String(s) => check_text(field, s, usize::MAX),
        Value::Array(items) => items.iter().try_for_each(|v| check_json(field, v)),
        Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            check_text(field, k, usize::MAX)?;
            check_json(field, v)
        }),
        _ => Ok(()),
    }
}

/// Longest URL accepted in a payload.
pub const MAX_URL: usize = 2048;
/// Longest name (job, workflow, step, test) accepted.
pub const MAX_NAME: usize = 512;

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
