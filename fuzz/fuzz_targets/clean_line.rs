//! One log line through every per-line function the excerpt and the
//! diagnosis run on it: cleaning (ANSI, `\r` redraws, timestamps, workflow
//! commands), scoring, the baseline's normalisation, the fingerprint's
//! normalisation and the recognisers' line strength.

use faultline_analysis::diagnose;
use faultline_analysis::logs::{baseline, clean, fingerprint, score};

fn main() {
    // The recognisers compile once, before the fork server starts.
    diagnose::warm_up();
    afl::fuzz!(|data: &[u8]| {
        let raw = String::from_utf8_lossy(data);
        let (cleaned, tag) = clean::clean_line_tagged(&raw);
        let _ = clean::strip_ansi(&raw);
        let red = clean::is_red(&raw);
        let _ = score::analyse(&cleaned, tag, red);
        let _ = score::is_item(&cleaned);
        let _ = score::quote_marker(&cleaned);
        let _ = score::is_frame(&cleaned);
        let _ = baseline::normalise_line(&cleaned);
        let _ = fingerprint::normalize(&cleaned);
        let _ = fingerprint::fingerprint(&[&cleaned]);
        let _ = diagnose::line_strength(&raw);
    });
}
