//! Readers of one variable's text, for `#[serde(deserialize_with = "…")]`
//! on the fields of a settings struct ([`super::Source::load`]). The text is
//! never blank (blank is unset, so the field keeps its default). An error's
//! message is the reason in `invalid value "…" for NAME: <reason>`.
//!
//! Units follow the variable's name: `_MS` is integer milliseconds, `_SECS`
//! integer seconds, and a name without a unit takes a humane duration
//! (`90s`, `30m`; [`super::parse_duration`]). Integers parse as integers.

use std::{fmt::Display, str::FromStr, time::Duration};

use secrecy::SecretString;
use serde::{Deserialize, Deserializer, de::Error};

/// The text, trimmed, through `FromStr`.
pub fn parsed<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err: Display>,
{
    String::deserialize(d)?
        .trim()
        .parse()
        .map_err(D::Error::custom)
}

/// [`parsed`], for a field that is `None` when unset.
pub fn parsed_some<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err: Display>,
{
    parsed(d).map(Some)
}

/// A `_MS` variable: integer milliseconds.
pub fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    parsed(d).map(Duration::from_millis)
}

/// A `_MS` variable that is off at 0: `None` then.
pub fn millis_or_off<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    millis(d).map(|t| (!t.is_zero()).then_some(t))
}

/// A `_SECS` variable: integer seconds.
pub fn secs<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    parsed(d).map(Duration::from_secs)
}

/// A humane duration (`90s`, `30m`, `2h`; a bare number is seconds).
pub fn humane<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    super::parse_duration(&String::deserialize(d)?).map_err(D::Error::custom)
}

/// A secret, as written (not trimmed).
pub fn secret<'de, D: Deserializer<'de>>(d: D) -> Result<SecretString, D::Error> {
    String::deserialize(d).map(SecretString::from)
}

/// [`secret`], for a field that is `None` when unset.
pub fn secret_some<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SecretString>, D::Error> {
    secret(d).map(Some)
}

/// A secret, trimmed.
pub fn trimmed_secret_some<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<SecretString>, D::Error> {
    Ok(Some(String::deserialize(d)?.trim().into()))
}

/// Text as written (not trimmed), `None` when unset.
pub fn text_some<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// A count that must be at least 1.
pub fn positive<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err: Display> + PartialOrd + Default,
{
    let n: T = parsed(d)?;
    if n > T::default() {
        Ok(n)
    } else {
        Err(D::Error::custom("must be > 0"))
    }
}
