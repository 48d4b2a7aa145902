//! The labelled set: `DATA_DIR/categories.jsonl`, one object per line,
//! `{"log": "logs/X.log.gz", "repo": "Lang/owner@name", "category": "TEST_FAILURE"}`
//! (`log` relative to DATA_DIR; gzip or plain text).

use std::{
    path::{Path, PathBuf},
    str::FromStr,
};

use anyhow::{Context, bail};
use faultline_shared::{Category, logs};
use serde::Deserialize;

pub const CATEGORIES_FILE: &str = "categories.jsonl";

/// The labelled failure lines of a LogChunks-format set: one
/// `{"log": …, "chunk": "…"}` per line.
pub const CHUNKS_FILE: &str = "labels.jsonl";

/// How many of a log's last lines its labeller saw beside the chunk
/// (`../shared/eval/category-rubric.md`: "`log_tail` is the last 25 lines").
pub const LABELLED_TAIL: usize = 25;

/// One labelled log.
#[derive(Debug, Clone)]
pub struct Labelled {
    /// As written in the file (the report names logs by it).
    pub log: String,
    pub repo: String,
    pub expected: Category,
    /// Where the log is.
    pub path: PathBuf,
}

#[derive(Deserialize)]
struct Line {
    log: String,
    #[serde(default)]
    repo: String,
    category: String,
}

/// Reads the first `limit` labelled logs of `dir` (all without a limit),
/// checking every log is there before anything starts.
pub fn load(dir: &Path, limit: Option<usize>) -> anyhow::Result<Vec<Labelled>> {
    if !dir.is_dir() {
        bail!(
            "DATA_DIR {} is not a directory (it should hold {CATEGORIES_FILE} and the logs it names)",
            dir.display()
        );
    }
    let file = dir.join(CATEGORIES_FILE);
    if !file.is_file() {
        bail!(
            "{} has no {CATEGORIES_FILE}: one JSON object per line, \
             {{\"log\": \"logs/X.log.gz\", \"repo\": \"owner/name\", \"category\": \"TEST_FAILURE\"}}",
            dir.display()
        );
    }
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("failed to read {}", file.display()))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if rows.len() == limit.unwrap_or(usize::MAX) {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", file.display(), i + 1);
        let row: Line =
            serde_json::from_str(line).with_context(|| format!("{}: not a labelled log", at()))?;
        let expected = Category::from_str(row.category.trim()).map_err(|_| {
            anyhow::anyhow!(
                "{}: unknown category {:?} (one of {})",
                at(),
                row.category,
                Category::ALL.map(Category::as_str).join(", ")
            )
        })?;
        let path = dir.join(&row.log);
        if !path.is_file() {
            bail!("{}: the log {} is missing", at(), path.display());
        }
        rows.push(Labelled {
            log: row.log,
            repo: row.repo,
            expected,
            path,
        });
    }
    if rows.is_empty() {
        bail!("{} labels no log", file.display());
    }
    Ok(rows)
}

/// The logs as their labellers read them: the lines marked as the
/// failure (every chunk `CHUNKS_FILE` holds for the log), then the log's
/// last [`LABELLED_TAIL`] lines. Each row's log is rewritten into `into`
/// and its path pointed there. Run through the pipeline, this measures how
/// the diagnosis classifies the lines a person chose, apart from how the
/// excerpt chooses them.
pub fn labelled_view(dir: &Path, rows: &mut [Labelled], into: &Path) -> anyhow::Result<()> {
    #[derive(Deserialize)]
    struct Chunk {
        log: String,
        chunk: String,
    }
    let file = dir.join(CHUNKS_FILE);
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "the labelled view needs {}: one {{\"log\": …, \"chunk\": …}} per line",
            file.display()
        )
    })?;
    let mut chunks: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let c: Chunk = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not a labelled chunk", file.display(), i + 1))?;
        chunks.entry(c.log).or_default().push(c.chunk);
    }
    std::fs::create_dir_all(into)
        .with_context(|| format!("failed to create {}", into.display()))?;
    for (i, row) in rows.iter_mut().enumerate() {
        let marked = chunks
            .get(&row.log)
            .with_context(|| format!("{} marks no failure lines of {}", file.display(), row.log))?;
        // The last lines whole, as the labeller saw them (no cut).
        let tail = logs::open_log(&row.path)
            .and_then(|r| logs::tail_reader(r, LABELLED_TAIL, usize::MAX))
            .with_context(|| format!("failed to read {}", row.path.display()))?;
        let mut view = marked.join("\n");
        for l in &tail.lines {
            view.push('\n');
            view.push_str(&l.text);
        }
        view.push('\n');
        let path = into.join(format!("{i}.log"));
        std::fs::write(&path, view)
            .with_context(|| format!("failed to write {}", path.display()))?;
        row.path = path;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_labelled_set_is_read_in_order_up_to_the_limit() {
        let dir = scratch("faultline-eval-data");
        std::fs::write(dir.join("a.log"), "error: boom\n").unwrap();
        std::fs::write(
            dir.join(CATEGORIES_FILE),
            "{\"log\": \"a.log\", \"repo\": \"r\", \"category\": \"CODE_ERROR\"}\n\n\
             {\"log\": \"a.log\", \"category\": \"TEST_FAILURE\"}\n",
        )
        .unwrap();
        let rows = load(&dir, None).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].expected, Category::TestFailure);
        assert_eq!(load(&dir, Some(1)).unwrap().len(), 1);
        std::fs::write(
            dir.join(CATEGORIES_FILE),
            "{\"log\": \"b.log\", \"category\": \"CODE_ERROR\"}\n",
        )
        .unwrap();
        let err = load(&dir, None).unwrap_err().to_string();
        assert!(err.contains("b.log") && err.contains(":1"), "{err}");
        std::fs::write(
            dir.join(CATEGORIES_FILE),
            "{\"log\": \"a.log\", \"category\": \"FLAKY\"}\n",
        )
        .unwrap();
        let err = load(&dir, None).unwrap_err().to_string();
        assert!(err.contains("FLAKY"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_labelled_view_is_the_marked_lines_and_the_last_lines() {
        let dir = scratch("faultline-eval-view");
        let mut log: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        log.push_str("The command \"make\" exited with 2.\n");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, log.as_bytes()).unwrap();
        std::fs::write(dir.join("a.log.gz"), gz.finish().unwrap()).unwrap();
        std::fs::write(
            dir.join(CATEGORIES_FILE),
            "{\"log\": \"a.log.gz\", \"category\": \"CODE_ERROR\"}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join(CHUNKS_FILE),
            "{\"log\": \"a.log.gz\", \"chunk\": \"line 3\\nline 4\"}\n",
        )
        .unwrap();
        let mut rows = load(&dir, None).unwrap();
        let into = dir.join("view");
        labelled_view(&dir, &mut rows, &into).unwrap();
        let view = std::fs::read_to_string(&rows[0].path).unwrap();
        let lines: Vec<&str> = view.lines().collect();
        assert_eq!(&lines[..3], &["line 3", "line 4", "line 17"], "{view}");
        assert_eq!(lines.len(), 2 + LABELLED_TAIL);
        assert_eq!(lines.last(), Some(&"The command \"make\" exited with 2."));
        // A log the chunks do not mark is an error, not a silent skip.
        std::fs::write(
            dir.join(CHUNKS_FILE),
            "{\"log\": \"b.log\", \"chunk\": \"x\"}\n",
        )
        .unwrap();
        let mut rows = load(&dir, None).unwrap();
        let err = labelled_view(&dir, &mut rows, &into)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a.log.gz"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
