//! The failure categories (docs/agent.md "The agent", ../shared/eval/category-rubric.md).

use serde::{Deserialize, Serialize};
use std::{fmt, str::FromStr};

/// What kind of failure a run found (docs/agent.md, "The agent").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Category {
    CodeError,
    InfraError,
    ConfigError,
    DependencyError,
    TestFailure,
    Unknown,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Category::CodeError,
        Category::InfraError,
        Category::ConfigError,
        Category::DependencyError,
        Category::TestFailure,
        Category::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::CodeError => "CODE_ERROR",
            Category::InfraError => "INFRA_ERROR",
            Category::ConfigError => "CONFIG_ERROR",
            Category::DependencyError => "DEPENDENCY_ERROR",
            Category::TestFailure => "TEST_FAILURE",
            Category::Unknown => "UNKNOWN",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Category {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Category::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown category {s:?}"))
    }
}
