//! Context-aware routing: for each failure category, which tools are worth
//! calling, in order, and when to stop. One table, read by the heuristic
//! reasoner (its plan follows it) and by the LLM reasoner (a routing hint in
//! its system prompt is rendered from it), so both agree.
//!
//! The rules (docs/agent.md, "The agent"):
//! - infra failures never fetch source code: the code is not what broke;
//! - code, config and dependency errors fetch code only when the knowledge
//!   base and the error library are not strong enough (retrieval below
//!   [`STRONG_RETRIEVAL`]): the cheap look-ups settle most failures (80/20);
//! - test failures consult the failure history first: a flaky test needs a
//!   different fix than a broken one.
//!
//! A tool that is not configured (no GitHub token, no Jenkins) is skipped.

use faultline_shared::Category;

use crate::tools::ToolName::{
    self, FailureHistory, GithubBlame, GithubCommits, GithubFile, GithubSearch, JenkinsConsole,
    SearchKnowledge, SimilarFailures,
};

/// Retrieval strength (see [`super::verify::retrieval_from_journal`]) at
/// which the knowledge base and error library are trusted and no source
/// code is fetched.
pub const STRONG_RETRIEVAL: f32 = 0.8;

/// Tools that read source code or its history (the source tools, GitHub
/// and Jenkins, are present only when configured).
pub const CODE_TOOLS: [ToolName; 4] = [GithubFile, GithubBlame, GithubCommits, GithubSearch];

/// When a step of a route is worth its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Every run of the category makes this call (once).
    Always,
    /// Only while retrieval is below [`STRONG_RETRIEVAL`].
    WeakRetrieval,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub tool: ToolName,
    pub when: When,
}

/// The route of one category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub category: Category,
    /// Tried in order after `log_excerpt` classified the failure.
    pub steps: &'static [Step],
    /// Tools never worth calling for this category.
    pub never: &'static [ToolName],
    /// One line for the LLM hint: why this route.
    pub why: &'static str,
}

const fn always(tool: ToolName) -> Step {
    Step {
        tool,
        when: When::Always,
    }
}

const fn if_weak(tool: ToolName) -> Step {
    Step {
        tool,
        when: When::WeakRetrieval,
    }
}

/// The routing table, one route per category.
pub const TABLE: [Route; 6] = [
    Route {
        category: Category::CodeError,
        steps: &[
            always(SearchKnowledge),
            always(SimilarFailures),
            // Whether this change broke it (the origin verdict).
            always(FailureHistory),
            if_weak(GithubFile),
            if_weak(GithubBlame),
            if_weak(GithubCommits),
            if_weak(GithubSearch),
        ],
        never: &[],
        why: "read the code only when the knowledge base and past failures do not explain it",
    },
    Route {
        category: Category::InfraError,
        steps: &[
            always(SearchKnowledge),
            always(SimilarFailures),
            if_weak(JenkinsConsole),
        ],
        never: &CODE_TOOLS,
        why: "the machine, network or runner broke, not the code: never fetch source code",
    },
    Route {
        category: Category::ConfigError,
        steps: &[
            always(SearchKnowledge),
            always(SimilarFailures),
            // Whether this change broke it (the origin verdict).
            always(FailureHistory),
            if_weak(GithubCommits),
            if_weak(GithubFile),
        ],
        never: &[GithubBlame],
        why: "look for what changed in the configuration when retrieval is weak",
    },
    Route {
        category: Category::DependencyError,
        steps: &[
            always(SearchKnowledge),
            always(SimilarFailures),
            // Whether this change broke it (the origin verdict).
            always(FailureHistory),
            if_weak(GithubCommits),
        ],
        never: &[GithubBlame, GithubSearch],
        why: "check recent manifest/lockfile commits only when retrieval is weak",
    },
    Route {
        category: Category::TestFailure,
        steps: &[
            always(FailureHistory),
            always(SearchKnowledge),
            always(SimilarFailures),
            if_weak(GithubFile),
            if_weak(GithubCommits),
        ],
        never: &[],
        why: "check the test's history first (flaky or newly broken?), code only when retrieval is weak",
    },
    Route {
        category: Category::Unknown,
        steps: &[
            always(SearchKnowledge),
            always(SimilarFailures),
            if_weak(FailureHistory),
            if_weak(JenkinsConsole),
        ],
        never: &CODE_TOOLS,
        why: "widen the evidence (history, console) before guessing; code is no place to start",
    },
];

/// The route of `category`.
pub fn route(category: Category) -> &'static Route {
    TABLE
        .iter()
        .find(|r| r.category == category)
        .expect("the table has a route for every category")
}

impl Route {
    /// The steps still worth taking, in order: the tool is available, not
    /// called yet in this run (`called`), and its condition holds at
    /// `retrieval`. Empty means: stop gathering and answer.
    pub fn pending<'a>(
        &'a self,
        available: &'a [&str],
        called: &'a [&str],
        retrieval: f32,
    ) -> impl Iterator<Item = ToolName> + 'a {
        self.steps
            .iter()
            .filter(move |s| {
                available.contains(&s.tool.as_str()) && !called.contains(&s.tool.as_str())
            })
            .filter(move |s| s.when == When::Always || retrieval < STRONG_RETRIEVAL)
            .map(|s| s.tool)
    }
}

/// The routing hint for the LLM's system prompt, limited to `available` tools.
pub fn hint(available: &[&str]) -> String {
    let mut out = String::from(
        "ROUTING by category, after log_excerpt (\"strong\" retrieval = a knowledge-base entry or past failure of the \
         same category that explains the log; fetch code only when it is not strong):",
    );
    for r in &TABLE {
        let steps: Vec<String> = r
            .steps
            .iter()
            .filter(|s| available.contains(&s.tool.as_str()))
            .map(|s| match s.when {
                When::Always => s.tool.to_string(),
                When::WeakRetrieval => format!("{} (only if retrieval is weak)", s.tool),
            })
            .collect();
        let never: Vec<&str> = r
            .never
            .iter()
            .map(|t| t.as_str())
            .filter(|t| available.contains(t))
            .collect();
        out.push_str(&format!("\n- {}: {}", r.category, steps.join(" -> ")));
        if !never.is_empty() {
            out.push_str(&format!("; never {}", never.join(", ")));
        }
        out.push_str(&format!(" ({}).", r.why));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolName::LogExcerpt;

    const LOG_EXCERPT: &str = LogExcerpt.as_str();
    const SEARCH_KNOWLEDGE: &str = SearchKnowledge.as_str();
    const SIMILAR_FAILURES: &str = SimilarFailures.as_str();
    const FAILURE_HISTORY: &str = FailureHistory.as_str();
    const GITHUB_COMMITS: &str = GithubCommits.as_str();
    const ALL: [&str; 9] = [
        LOG_EXCERPT,
        SEARCH_KNOWLEDGE,
        SIMILAR_FAILURES,
        FAILURE_HISTORY,
        GithubFile.as_str(),
        GithubBlame.as_str(),
        GITHUB_COMMITS,
        GithubSearch.as_str(),
        JenkinsConsole.as_str(),
    ];

    #[test]
    fn every_category_has_exactly_one_route() {
        for c in Category::ALL {
            assert_eq!(TABLE.iter().filter(|r| r.category == c).count(), 1, "{c}");
        }
    }

    #[test]
    fn no_route_calls_a_tool_it_forbids() {
        for r in &TABLE {
            for s in r.steps {
                assert!(!r.never.contains(&s.tool), "{}: {}", r.category, s.tool);
            }
        }
    }

    #[test]
    fn infra_failures_never_fetch_source_code() {
        let r = route(Category::InfraError);
        for retrieval in [0.0, 0.5, 1.0] {
            let pending: Vec<_> = r.pending(&ALL, &[], retrieval).collect();
            assert!(
                pending.iter().all(|t| !CODE_TOOLS.contains(t)),
                "{pending:?}"
            );
        }
    }

    #[test]
    fn code_errors_fetch_code_only_when_retrieval_is_weak() {
        let r = route(Category::CodeError);
        let done = [SEARCH_KNOWLEDGE, SIMILAR_FAILURES, FAILURE_HISTORY];
        assert_eq!(r.pending(&ALL, &done, 0.9).next(), None, "strong: answer");
        assert_eq!(r.pending(&ALL, &done, 0.3).next(), Some(GithubFile));
        // Cheap look-ups come before code either way.
        assert_eq!(r.pending(&ALL, &[], 0.0).next(), Some(SearchKnowledge));
    }

    #[test]
    fn tools_that_are_not_configured_are_skipped() {
        let r = route(Category::CodeError);
        let without_github = [
            LOG_EXCERPT,
            SEARCH_KNOWLEDGE,
            SIMILAR_FAILURES,
            FAILURE_HISTORY,
        ];
        let done = [SEARCH_KNOWLEDGE, SIMILAR_FAILURES, FAILURE_HISTORY];
        assert_eq!(r.pending(&without_github, &done, 0.0).next(), None);
        let only_commits = [GITHUB_COMMITS];
        assert_eq!(
            r.pending(&only_commits, &[], 0.0).next(),
            Some(GithubCommits)
        );
    }

    #[test]
    fn test_failures_consult_the_history_first() {
        let r = route(Category::TestFailure);
        assert_eq!(r.pending(&ALL, &[], 1.0).next(), Some(FailureHistory));
    }

    #[test]
    fn the_llm_hint_names_only_available_tools() {
        let h = hint(&[SEARCH_KNOWLEDGE, SIMILAR_FAILURES, FAILURE_HISTORY]);
        assert!(h.contains("TEST_FAILURE: failure_history -> search_knowledge"));
        assert!(!h.contains("github"), "{h}");
        let h = hint(&ALL);
        assert!(h.contains("INFRA_ERROR: search_knowledge -> similar_failures -> jenkins_console (only if retrieval is weak); never github_file"));
    }
}
