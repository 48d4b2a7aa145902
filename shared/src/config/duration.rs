//! Humane durations: `90s`, `30m`, `1.5h`, `7d`.
//!
//! Not `humantime`: its grammar is another one (it refuses a bare `90` and
//! `1.5h`, and takes `5 weeks` or `1h 30m`), and the settings, the CLI's
//! `--older-than` and `--expires` accept exactly this one. Computed in whole
//! nanoseconds, never through a float.

use std::time::Duration;

/// Beyond this, a duration overflows `Duration` (a panic) or Postgres' interval.
const MAX_SECS: u128 = 100 * 365 * 86_400;
const NANOS_PER_SEC: u128 = 1_000_000_000;
/// Fraction digits past this are below a nanosecond at any unit.
const MAX_FRACTION_DIGITS: usize = 20;

/// A positive duration: a number with a unit `ms`, `s`, `m`, `h` or `d`
/// (`90s`, `30m`, `2h`, `7d`); a bare number is seconds. The number may
/// have a fraction (`1.5h`), at most 100 years.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err(format!(
            "{text:?} is not a duration (like 90s, 30m, 2h, 7d)"
        ));
    }
    let unit_nanos: u128 = match unit.trim() {
        "" | "s" => NANOS_PER_SEC,
        "ms" => NANOS_PER_SEC / 1000,
        "m" => 60 * NANOS_PER_SEC,
        "h" => 3600 * NANOS_PER_SEC,
        "d" => 86_400 * NANOS_PER_SEC,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?} (use ms, s, m, h or d)"
            ));
        }
    };
    let too_long = || format!("{text:?} is too long (at most 100 years)");
    let whole = whole.trim_start_matches('0');
    // More digits than this is more than 100 years at any unit.
    if whole.len() > 20 {
        return Err(too_long());
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_long())?
    };
    let fraction = &fraction[..fraction.len().min(MAX_FRACTION_DIGITS)];
    let fraction_nanos = if fraction.is_empty() {
        0
    } else {
        let digits: u128 = fraction.parse().map_err(|_| too_long())?;
        digits * unit_nanos / 10u128.pow(fraction.len() as u32)
    };
    let nanos = whole * unit_nanos + fraction_nanos;
    if nanos == 0 {
        return Err(format!("{text:?} must be a positive duration"));
    }
    if nanos > MAX_SECS * NANOS_PER_SEC {
        return Err(too_long());
    }
    Ok(Duration::new(
        (nanos / NANOS_PER_SEC) as u64,
        (nanos % NANOS_PER_SEC) as u32,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_name_bad_ones() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert!(parse_duration("99999999999999999999").is_err());
        assert!(parse_duration("36500d").is_ok() && parse_duration("36501d").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(
            parse_duration("5 weeks")
                .unwrap_err()
                .contains("unknown unit")
        );
    }

    #[test]
    fn fractions_are_exact_and_what_the_float_parser_took_still_parses() {
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration(" .5s "), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2."), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0.001s"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration("30 m"), Ok(Duration::from_secs(1800)));
        assert_eq!(
            parse_duration("36500.5d").unwrap_err(),
            "\"36500.5d\" is too long (at most 100 years)"
        );
        assert!(
            parse_duration(&"9".repeat(60))
                .unwrap_err()
                .contains("too long")
        );
        for bad in ["", ".", "1.2.3s", "soon", "-5s", "1e3s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(
            parse_duration("soon")
                .unwrap_err()
                .contains("is not a duration")
        );
    }
}
