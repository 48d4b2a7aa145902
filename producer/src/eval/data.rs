//! The labelled set: `DATA_DIR/categories.jsonl`, one object per line,
//! `{"log": "logs/X.log.gz", "repo": "Lang/owner@name", "category": "TEST_FAILURE"}`
//! (`log` relative to DATA_DIR; gzip or plain text).

use std::{
    path::{Path, PathBuf},
    str::FromStr,
};

use anyhow::{Context, bail};
use faultline_shared::Category;
use serde::Deserialize;

pub const CATEGORIES_FILE: &str = "categories.jsonl";

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
}
