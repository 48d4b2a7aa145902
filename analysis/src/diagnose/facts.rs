//! The specifics of a failure, gathered from the recognisers' captures:
//! which tests failed (and where), the first compiler or linter diagnostic,
//! the packages that could not be had, the failed command and exit code.
//! Every field is bounded.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::Kind;

/// Most failing tests named.
pub const MAX_TESTS: usize = 10;
/// Most packages named.
pub const MAX_PACKAGES: usize = 5;
/// Longest text of one fact.
pub const MAX_FACT_CHARS: usize = 300;
/// Most located diagnostics listed ([`Facts::diagnostics`]).
pub const MAX_DIAGNOSTICS: usize = 200;

/// A failing test as its runner named it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TestRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The runner that reported it.
    pub runner: String,
}

/// The first diagnostic of a compiler, type checker or linter.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Diagnostic {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Line of the log it was read from.
    pub log_line: u64,
}

/// A package (module, library, artifact) that could not be resolved.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PackageRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The package manager or tool that said so.
    pub tool: String,
}

/// The structured specifics of a diagnosis.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Facts {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing_tests: Vec<TestRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostic: Option<Diagnostic>,
    /// Every compiler, type-checker or linter error that names a file and
    /// a line, in log order (at most [`MAX_DIAGNOSTICS`]): what a check
    /// run annotates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<PackageRef>,
    /// The failed step's command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

impl Facts {
    /// True when nothing specific was found.
    pub fn is_empty(&self) -> bool {
        self.failing_tests.is_empty()
            && self.diagnostic.is_none()
            && self.diagnostics.is_empty()
            && self.packages.is_empty()
            && self.command.is_none()
            && self.exit_code.is_none()
    }

    /// One sentence naming the specifics, for the root cause.
    pub fn sentence(&self) -> Option<String> {
        let mut parts: Vec<String> = Vec::new();
        if !self.failing_tests.is_empty() {
            let names: Vec<String> = self
                .failing_tests
                .iter()
                .take(3)
                .map(|t| match (&t.file, t.line) {
                    (Some(f), Some(l)) => format!("`{}` ({f}:{l})", t.name),
                    (Some(f), None) => format!("`{}` ({f})", t.name),
                    _ => format!("`{}`", t.name),
                })
                .collect();
            let more = self.failing_tests.len().saturating_sub(3);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            let verb = if self.failing_tests.len() == 1 {
                "fails"
            } else {
                "fail"
            };
            parts.push(format!("{}{tail} {verb}", names.join(", ")));
        }
        if let Some(d) = &self.diagnostic {
            let at = match (&d.file, d.line) {
                (Some(f), Some(l)) => format!(" at {f}:{l}"),
                (Some(f), None) => format!(" in {f}"),
                _ => String::new(),
            };
            let code = d
                .code
                .as_deref()
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            let msg = d
                .message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            parts.push(format!("{}{code}{at}{msg}", d.tool));
        }
        if !self.packages.is_empty() {
            let names: Vec<String> = self
                .packages
                .iter()
                .map(|p| match &p.version {
                    Some(v) => format!("`{} {v}`", p.name),
                    None => format!("`{}`", p.name),
                })
                .collect();
            parts.push(format!("could not be resolved: {}", names.join(", ")));
        }
        if let Some(cmd) = &self.command {
            let code = self
                .exit_code
                .map(|c| format!(" exited with {c}"))
                .unwrap_or_else(|| " failed".into());
            parts.push(format!("`{cmd}`{code}"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

fn text(v: &str) -> String {
    crate::text::truncate_chars(v.trim(), MAX_FACT_CHARS).to_string()
}

fn number(v: Option<&String>) -> Option<u32> {
    v.and_then(|s| s.parse().ok())
}

type Captures = HashMap<&'static str, String>;

/// Gathers facts from `(kind, tool, log line, captures)` in priority order.
pub(super) fn gather<'a>(
    hits: impl Iterator<Item = (Kind, &'static str, u64, &'a Captures)>,
    command: Option<&str>,
    exit_code: Option<i32>,
) -> Facts {
    let mut facts = Facts {
        command: command.map(text),
        exit_code,
        ..Facts::default()
    };
    for (kind, tool, log_line, caps) in hits {
        match kind {
            Kind::Assertion | Kind::TestFailed | Kind::TestSummary => facts.add_test(tool, caps),
            Kind::Compile | Kind::Lint => {
                facts.add_diagnostic(tool, log_line, caps);
                facts.add_located(tool, log_line, caps);
            }
            Kind::Dependency => facts.add_package(tool, caps),
            _ => {}
        }
    }
    facts.complete_located();
    facts
}

impl Facts {
    /// A failing test by name (merged with one already seen), or a location
    /// printed under the last test's header.
    fn add_test(&mut self, tool: &str, caps: &Captures) {
        let file = caps.get("file").map(|f| text(f));
        let line = number(caps.get("line"));
        if let Some(name) = caps.get("test") {
            let name = text(name);
            if let Some(t) = self.failing_tests.iter_mut().find(|t| t.name == name) {
                t.file = t.file.take().or(file);
                t.line = t.line.or(line);
            } else if self.failing_tests.len() < MAX_TESTS {
                self.failing_tests.push(TestRef {
                    name,
                    suite: caps.get("suite").map(|s| text(s)),
                    file,
                    line,
                    runner: tool.to_string(),
                });
            }
        } else if let (Some(f), Some(t)) = (file, self.failing_tests.last_mut()) {
            // A location printed under the test's header.
            if t.file.is_none() {
                t.file = Some(f);
                t.line = line;
            }
        }
    }

    /// The first compiler or linter diagnostic, completed by a location
    /// printed on a later line.
    fn add_diagnostic(&mut self, tool: &str, log_line: u64, caps: &Captures) {
        let file = caps.get("file").map(|f| text(f));
        let line = number(caps.get("line"));
        match &mut self.diagnostic {
            None if caps.contains_key("msg") || caps.contains_key("code") || file.is_some() => {
                self.diagnostic = Some(Diagnostic {
                    tool: tool.to_string(),
                    file,
                    line,
                    column: number(caps.get("col")),
                    code: caps.get("code").map(|c| text(c)),
                    message: caps.get("msg").map(|m| text(m)),
                    log_line,
                });
            }
            // rustc and friends print the location on a later line.
            Some(d) if d.file.is_none() && file.is_some() && d.tool == tool => {
                d.file = file;
                d.line = line;
                d.column = number(caps.get("col"));
            }
            _ => {}
        }
    }

    /// A diagnostic naming a file and a line joins the list (each log line
    /// once, log order, bounded).
    pub(super) fn add_located(&mut self, tool: &str, log_line: u64, caps: &Captures) {
        let (Some(file), Some(line)) = (caps.get("file"), number(caps.get("line"))) else {
            return;
        };
        let (file, column) = (text(file), number(caps.get("col")));
        let (code, message) = (
            caps.get("code").map(|c| text(c)),
            caps.get("msg").map(|m| text(m)),
        );
        // The same place said twice (a tool's report and its summary, or a
        // location line under its message) is one diagnostic.
        if let Some(d) = self.diagnostics.iter_mut().find(|d| {
            d.log_line == log_line
                || (d.file.as_deref() == Some(file.as_str())
                    && d.line == Some(line)
                    && d.column == column)
        }) {
            d.code = d.code.take().or(code);
            d.message = d.message.take().or(message);
            return;
        }
        let at = self.diagnostics.partition_point(|d| d.log_line < log_line);
        if at >= MAX_DIAGNOSTICS {
            return;
        }
        self.diagnostics.insert(
            at,
            Diagnostic {
                tool: tool.to_string(),
                file: Some(file),
                line: Some(line),
                column,
                code,
                message,
                log_line,
            },
        );
        self.diagnostics.truncate(MAX_DIAGNOSTICS);
    }

    /// A bare location in the list (rustc and friends print it on the line
    /// after the message) at the first diagnostic's place takes its code
    /// and message.
    pub(super) fn complete_located(&mut self) {
        let Some(first) = &self.diagnostic else {
            return;
        };
        for d in &mut self.diagnostics {
            if d.file == first.file && d.line == first.line && d.tool == first.tool {
                d.code = d.code.take().or_else(|| first.code.clone());
                d.message = d.message.take().or_else(|| first.message.clone());
            }
        }
    }

    /// A package the build could not resolve (each name once).
    fn add_package(&mut self, tool: &str, caps: &Captures) {
        let Some(name) = caps.get("pkg") else {
            return;
        };
        let name = text(name.trim_matches(|c| c == '\'' || c == '"' || c == '`'));
        if !self.packages.iter().any(|p| p.name == name) && self.packages.len() < MAX_PACKAGES {
            self.packages.push(PackageRef {
                name,
                version: caps.get("ver").map(|v| text(v)),
                tool: tool.to_string(),
            });
        }
    }
}
