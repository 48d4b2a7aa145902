//! `log_excerpt`: the lines that explain the failure, streamed from the
//! stored log (one chunk in memory at a time), diagnosed (category from
//! what produced the failing lines, the specifics) and fingerprinted for
//! the error library. When the last green log of the job was fetched
//! ([`crate::sources::baseline`]), it is the excerpt's baseline: lines it
//! also printed are the job's usual noise, not the failure.

use std::{io::BufRead, sync::Arc};

use faultline_shared::tool::{self, Classification, ExcerptMode, Line};
use faultline_shared::{
    diagnose,
    logs::{self, Baseline, ExcerptOptions},
    storage::{
        baselines::{self, BaselineRow},
        events::{LogKind, StoredLogReader},
    },
};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, ToolName};

/// Longest line text put into an observation.
const MAX_LINE_CHARS: usize = 600;

pub struct LogExcerpt;

/// The arguments of `log_excerpt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    #[schemars(description = "which lines to return")]
    mode: Option<Mode>,
    #[schemars(range(min = 5, max = 200))]
    max_lines: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Failure,
    Tail,
}

impl Tool for LogExcerpt {
    type Args = Args;
    type Observation = tool::LogExcerpt;
    fn name(&self) -> ToolName {
        ToolName::LogExcerpt
    }
    fn local(&self) -> bool {
        true
    }
    fn description(&self) -> &'static str {
        "Read the failure log. mode=failure returns the lines that explain the failure; mode=tail returns the last lines. Lines the job's last green build also printed are left out of mode=failure when that log is available. Both come with a deterministic classification (category, deciding rule, scores) and the facts the log names (failing tests, first diagnostic, unresolved packages, failed command and exit code)."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Args,
    ) -> BoxFuture<'a, Result<tool::LogExcerpt, ToolError>> {
        Box::pin(async move {
            let tail = args.mode == Some(Mode::Tail);
            let max_lines = args.max_lines.unwrap_or(if tail {
                60
            } else {
                diagnose::EXCERPT_LINES as u64
            }) as usize;
            let (pool, event_id) = (ctx.pool.clone(), ctx.event_id);
            let recorded = if tail {
                None
            } else {
                baselines::get(&pool, event_id).await?
            };
            let handle = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || {
                let (baseline, note) = match &recorded {
                    Some(row) if row.bytes.is_some() => {
                        let green = StoredLogReader::of(
                            LogKind::Baseline,
                            pool.clone(),
                            event_id,
                            handle.clone(),
                        );
                        let max_line_bytes = ExcerptOptions::default().max_line_bytes;
                        // An unreadable baseline (a corrupt gzip, a cut
                        // stream) leaves the plain excerpt, said so.
                        match Baseline::from_reader(green, max_line_bytes) {
                            Ok(b) => {
                                let note = describe(row, &b);
                                (Some(Arc::new(b)), Some(note))
                            }
                            Err(e) => (None, Some(format!("none (unreadable: {e})"))),
                        }
                    }
                    Some(row) => {
                        let reason = row.reason.as_deref().unwrap_or("unknown");
                        (None, Some(format!("none ({reason})")))
                    }
                    None => (None, None),
                };
                let reader = StoredLogReader::new(pool, event_id, handle);
                let observation = read(reader, tail, max_lines, baseline)?;
                Ok(tool::LogExcerpt {
                    baseline: note,
                    ..observation
                })
            })
            .await
            .map_err(|e| ToolError::Failed(format!("excerpt task panicked: {e}")))?
        })
    }
}

/// What the baseline is, for the observation.
fn describe(row: &BaselineRow, b: &Baseline) -> String {
    let d = &row.detail;
    let what = match (d["run_id"].as_u64(), d["console_url"].as_str()) {
        (Some(run), _) => format!(
            "GitHub run {run} on {}",
            d["branch"].as_str().unwrap_or("?")
        ),
        (None, Some(url)) => url.to_string(),
        _ => row.source.clone(),
    };
    format!(
        "last green log ({what}, {} lines): lines it also printed are left out",
        b.lines()
    )
}

fn read(
    reader: impl BufRead,
    tail: bool,
    max_lines: usize,
    baseline: Option<Arc<Baseline>>,
) -> Result<tool::LogExcerpt, ToolError> {
    let io_err = |e: std::io::Error| ToolError::Transient(format!("reading the stored log: {e}"));
    let excerpt = if tail {
        logs::tail_reader(reader, max_lines, ExcerptOptions::default().max_line_bytes)
            .map_err(io_err)?
    } else {
        logs::excerpt_reader(
            reader,
            &ExcerptOptions {
                max_lines,
                baseline,
                ..ExcerptOptions::default()
            },
        )
        .map_err(io_err)?
    };
    // The agent observes the lines shown and, where the diagnosis read
    // another block, that block too: what the verdict cites is in sight.
    let mut observed: Vec<&logs::ExcerptLine> = excerpt
        .lines
        .iter()
        .chain(excerpt.evidence.iter())
        .collect();
    observed.sort_by_key(|l| l.line_no);
    observed.dedup_by_key(|l| l.line_no);
    let cleaned: Vec<(u64, String)> = observed
        .iter()
        .map(|l| (l.line_no, logs::clean_line(&l.text).trim().to_string()))
        .collect();
    let diagnosis = diagnose::diagnose(&excerpt);
    // Fingerprint the lines that carry the failure: the diagnosis's
    // findings first, else the strongest excerpt lines.
    let mut key_lines: Vec<String> = Vec::new();
    for f in &diagnosis.findings {
        if key_lines.len() < 3 && !key_lines.contains(&f.line) {
            key_lines.push(f.line.clone());
        }
    }
    if key_lines.is_empty() {
        let mut scored: Vec<_> = observed
            .iter()
            .zip(&cleaned)
            .filter(|(_, c)| !c.1.is_empty())
            .collect();
        scored.sort_by(|a, b| {
            b.0.score
                .total_cmp(&a.0.score)
                .then(a.0.line_no.cmp(&b.0.line_no))
        });
        key_lines = scored.iter().take(3).map(|(_, c)| c.1.clone()).collect();
    }
    let refs: Vec<&str> = key_lines.iter().map(String::as_str).collect();
    let fingerprint = if refs.is_empty() {
        String::new()
    } else {
        logs::fingerprint(&refs)
    };
    let lines: Vec<Line> = observed
        .iter()
        .zip(&cleaned)
        .map(|(l, c)| Line {
            n: l.line_no,
            text: truncate(&c.1),
        })
        .collect();
    Ok(tool::LogExcerpt {
        mode: if tail {
            ExcerptMode::Tail
        } else {
            ExcerptMode::Failure
        },
        lines,
        total_lines: excerpt.total_lines,
        total_bytes: excerpt.total_bytes,
        classification: Classification::from(&diagnosis),
        error_lines: key_lines,
        fingerprint,
        baseline: None,
    })
}

fn truncate(s: &str) -> String {
    match s.char_indices().nth(MAX_LINE_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
