//! The specifics of a final answer: what the log names about the failure
//! (which tests failed and where, the first compiler or linter diagnostic,
//! the packages that could not be resolved, the step that failed with its
//! command and exit code).
//!
//! They are read from the log by the deterministic diagnosis
//! ([`crate::diagnose::Facts`]), never taken from a model, so a hostile log
//! or model cannot make them name something the log does not say. This is
//! the result's public shape (API, `status --json`, notifications); it is
//! kept apart from the diagnosis's internal one so tuning the analysis does
//! not change the API. Every field is optional: answers stored before the
//! field existed, and failures whose log names nothing, deserialise to the
//! empty value.

use serde::{Deserialize, Serialize};

use crate::diagnose::{Diagnostic, Facts};

/// A failing test as its runner named it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailingTest {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    /// Where the failure was reported, when the runner printed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The test runner that reported it (`pytest`, `jest`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

/// The first diagnostic of a compiler, type checker or linter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstDiagnostic {
    /// The tool that printed it (`rustc`, `tsc`, `eslint`, …).
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The diagnostic's code (`E0308`, `TS2322`, `no-unused-vars`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The log line it was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_line: Option<u64>,
}

/// A package (module, library, artifact) that could not be resolved,
/// downloaded or installed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnresolvedPackage {
    pub name: String,
    /// The version or constraint asked for, when the log gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The package manager or tool that said so (`npm`, `pip`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// The CI step that failed, from its footer or the command it echoed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailedStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// What the log names about the failure (empty when it names nothing).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Specifics {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing_tests: Vec<FailingTest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostic: Option<FirstDiagnostic>,
    /// Every compiler, type-checker or linter error of the log that names
    /// a file and a line, in log order (at most 200): what the GitHub check
    /// run annotates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<FirstDiagnostic>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved_packages: Vec<UnresolvedPackage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<FailedStep>,
}

impl Specifics {
    /// True when the log named nothing specific.
    pub fn is_empty(&self) -> bool {
        self.failing_tests.is_empty()
            && self.diagnostic.is_none()
            && self.diagnostics.is_empty()
            && self.unresolved_packages.is_empty()
            && self.failed_step.is_none()
    }

    /// One `(label, text)` per specific, for people (`faultline status`,
    /// `trace`, the GitHub check run): `("test", "`t` at tests/a.py:3 (pytest)")`.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for t in &self.failing_tests {
            let mut s = format!("`{}`", t.name);
            if let Some(suite) = &t.suite {
                s.push_str(&format!(" in {suite}"));
            }
            if let Some(at) = location(t.file.as_deref(), t.line, None) {
                s.push_str(&format!(" at {at}"));
            }
            if let Some(r) = &t.runner {
                s.push_str(&format!(" ({r})"));
            }
            out.push(("test", s));
        }
        if let Some(d) = &self.diagnostic {
            let mut s = d.tool.clone();
            if let Some(code) = &d.code {
                s.push_str(&format!(" {code}"));
            }
            if let Some(at) = location(d.file.as_deref(), d.line, d.column) {
                s.push_str(&format!(" at {at}"));
            }
            if let Some(m) = &d.message {
                s.push_str(&format!(": {m}"));
            }
            out.push(("diagnostic", s));
        }
        if self.diagnostics.len() > 1 {
            let n = self.diagnostics.len();
            out.push(("diagnostics", format!("{n} errors with a file and line")));
        }
        for p in &self.unresolved_packages {
            let mut s = format!("`{}`", p.name);
            if let Some(v) = &p.version {
                s.push_str(&format!(" {v}"));
            }
            if let Some(t) = &p.tool {
                s.push_str(&format!(" ({t})"));
            }
            out.push(("package", s));
        }
        if let Some(step) = &self.failed_step {
            let cmd = step
                .command
                .as_deref()
                .map_or_else(|| "the step".to_string(), |c| format!("`{c}`"));
            let how = step
                .exit_code
                .map_or_else(|| "failed".to_string(), |c| format!("exited with {c}"));
            out.push(("step", format!("{cmd} {how}")));
        }
        out
    }
}

/// `file:line:col`, as far as known; `None` without a file.
fn location(file: Option<&str>, line: Option<u32>, col: Option<u32>) -> Option<String> {
    let file = file?;
    Some(match (line, col) {
        (Some(l), Some(c)) => format!("{file}:{l}:{c}"),
        (Some(l), None) => format!("{file}:{l}"),
        _ => file.to_string(),
    })
}

impl From<&Diagnostic> for FirstDiagnostic {
    fn from(d: &Diagnostic) -> Self {
        FirstDiagnostic {
            tool: d.tool.clone(),
            file: d.file.clone(),
            line: d.line,
            column: d.column,
            code: d.code.clone(),
            message: d.message.clone(),
            log_line: Some(d.log_line).filter(|n| *n > 0),
        }
    }
}

impl From<&Facts> for Specifics {
    fn from(f: &Facts) -> Self {
        Specifics {
            failing_tests: f
                .failing_tests
                .iter()
                .map(|t| FailingTest {
                    name: t.name.clone(),
                    suite: t.suite.clone(),
                    file: t.file.clone(),
                    line: t.line,
                    runner: Some(t.runner.clone()).filter(|r| !r.is_empty()),
                })
                .collect(),
            diagnostic: f.diagnostic.as_ref().map(FirstDiagnostic::from),
            diagnostics: f.diagnostics.iter().map(FirstDiagnostic::from).collect(),
            unresolved_packages: f
                .packages
                .iter()
                .map(|p| UnresolvedPackage {
                    name: p.name.clone(),
                    version: p.version.clone(),
                    tool: Some(p.tool.clone()).filter(|t| !t.is_empty()),
                })
                .collect(),
            failed_step: (f.command.is_some() || f.exit_code.is_some()).then(|| FailedStep {
                command: f.command.clone(),
                exit_code: f.exit_code,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::{Diagnostic, PackageRef, TestRef};

    #[test]
    fn facts_become_specifics_and_read_as_lines() {
        let facts = Facts {
            failing_tests: vec![TestRef {
                name: "test_total".into(),
                file: Some("tests/test_totals.py".into()),
                line: Some(88),
                runner: "pytest".into(),
                ..TestRef::default()
            }],
            diagnostic: Some(Diagnostic {
                tool: "rustc".into(),
                file: Some("src/lib.rs".into()),
                line: Some(4),
                column: Some(18),
                code: Some("E0308".into()),
                message: Some("mismatched types".into()),
                log_line: 12,
            }),
            packages: vec![PackageRef {
                name: "left-pad".into(),
                version: Some("^9.0.0".into()),
                tool: "npm".into(),
            }],
            command: Some("make test".into()),
            exit_code: Some(2),
            ..Facts::default()
        };
        let s = Specifics::from(&facts);
        assert_eq!(
            s.lines(),
            vec![
                (
                    "test",
                    "`test_total` at tests/test_totals.py:88 (pytest)".into()
                ),
                (
                    "diagnostic",
                    "rustc E0308 at src/lib.rs:4:18: mismatched types".into()
                ),
                ("package", "`left-pad` ^9.0.0 (npm)".into()),
                ("step", "`make test` exited with 2".into()),
            ]
        );
        assert_eq!(Specifics::from(&Facts::default()), Specifics::default());
        assert!(Specifics::from(&Facts::default()).is_empty());
    }

    #[test]
    fn the_json_shape_is_stable_and_omits_what_is_unknown() {
        let s = Specifics {
            failing_tests: vec![FailingTest {
                name: "t".into(),
                ..FailingTest::default()
            }],
            failed_step: Some(FailedStep {
                command: None,
                exit_code: Some(137),
            }),
            ..Specifics::default()
        };
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"failing_tests": [{"name": "t"}], "failed_step": {"exit_code": 137}})
        );
        assert_eq!(
            serde_json::from_value::<Specifics>(serde_json::json!({})).unwrap(),
            Specifics::default()
        );
    }
}
