//! A log through the path of `faultline diagnose` and the worker's
//! `log_excerpt` tool: the excerpt, the diagnosis of it (recognisers,
//! facts, failed step), the knowledge-base classifier, the fingerprint;
//! and the same text through `diagnose_text`.

use std::io::Cursor;

use faultline_analysis::diagnose::{self, EXCERPT_LINES};
use faultline_analysis::kb::Classifier;
use faultline_analysis::logs::{ExcerptOptions, excerpt_reader, fingerprint};

fn main() {
    // Compile the regex sets once, before the fork server starts, not per input.
    diagnose::warm_up();
    let classifier = Classifier::builtin();
    let opts = ExcerptOptions {
        max_lines: EXCERPT_LINES,
        ..ExcerptOptions::default()
    };
    afl::fuzz!(|data: &[u8]| {
        let excerpt =
            excerpt_reader(Cursor::new(data), &opts).expect("reading from memory cannot fail");
        let d = diagnose::diagnose(&excerpt);
        assert!(
            (0.0..=1.0).contains(&d.confidence),
            "confidence {} out of 0..=1",
            d.confidence
        );
        let _ = d.facts.sentence();
        let _ = serde_json::to_string(&d).expect("a diagnosis serialises");
        let lines: Vec<(u64, String)> = excerpt
            .lines
            .iter()
            .map(|l| (l.line_no, l.text.clone()))
            .collect();
        let c = classifier.classify(&lines);
        let _ = serde_json::to_string(&c).expect("a classification serialises");
        let texts: Vec<&str> = excerpt.lines.iter().map(|l| l.text.as_str()).collect();
        let _ = fingerprint::fingerprint(&texts);

        let text = String::from_utf8_lossy(data);
        let d = diagnose::diagnose_text(&text);
        assert!(
            (0.0..=1.0).contains(&d.confidence),
            "confidence {} out of 0..=1",
            d.confidence
        );
    });
}
