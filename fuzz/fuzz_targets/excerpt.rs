//! A whole log through the streaming excerpt, with the knobs and the
//! baseline varied by the input so that line cuts, window limits and the
//! green-log filter are all reached.
//!
//! Input layout: byte 0 picks options (bit 0: the text up to the first
//! 0xFF byte is a baseline log), byte 1 picks `max_line_bytes`, the rest
//! is the log.

use std::io::Cursor;
use std::sync::Arc;

use faultline_analysis::logs::{Baseline, ExcerptOptions, excerpt_reader};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let [flags, cut, rest @ ..] = data else {
            return;
        };
        let mut opts = ExcerptOptions {
            // Small cuts reach the long-line paths with small inputs.
            max_line_bytes: [4096, 1, 7, 64][usize::from(cut & 3)],
            max_lines: [100, 40, 3, 1][usize::from((flags >> 1) & 3)],
            context_before: usize::from((flags >> 3) & 7),
            max_windows: [16, 2][usize::from((flags >> 6) & 1)],
            ..ExcerptOptions::default()
        };
        let mut log = rest;
        if flags & 1 == 1
            && let Some(at) = rest.iter().position(|&b| b == 0xff)
        {
            let pass = Baseline::from_reader(Cursor::new(&rest[..at]), opts.max_line_bytes)
                .expect("reading from memory cannot fail");
            opts.baseline = Some(Arc::new(pass));
            log = &rest[at + 1..];
        }
        let excerpt =
            excerpt_reader(Cursor::new(log), &opts).expect("reading from memory cannot fail");
        assert!(
            excerpt.lines.len() <= opts.max_lines.max(1),
            "excerpt longer than max_lines"
        );
        assert_eq!(
            excerpt.total_bytes,
            log.len() as u64,
            "total_bytes is the log's size"
        );
        assert!(
            excerpt
                .lines
                .windows(2)
                .all(|w| w[0].line_no < w[1].line_no),
            "excerpt lines in log order, each once"
        );
        assert!(
            excerpt
                .lines
                .iter()
                .all(|l| l.line_no >= 1 && l.line_no <= excerpt.total_lines)
        );
    });
}
