//! GitHub's CODEOWNERS: who owns a path. GitHub reads the first of
//! `.github/CODEOWNERS`, `CODEOWNERS` and `docs/CODEOWNERS`; each line is a
//! pattern (gitignore rules, without `!` negation) followed by owners
//! (`@user`, `@org/team`, an email); **the last matching line wins**, and a
//! line without owners leaves its paths unowned. Files of 3 MB or more are
//! ignored by GitHub, and here too. Patterns are matched by the `ignore`
//! crate's gitignore matcher (ripgrep's), not by hand.

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Where GitHub looks for the file, in order.
pub const LOCATIONS: [&str; 3] = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];
/// GitHub ignores a CODEOWNERS file of this size or more.
pub const MAX_BYTES: usize = 3 * 1024 * 1024;
/// Owners named for one path.
const MAX_OWNERS: usize = 20;

/// A parsed CODEOWNERS file.
pub struct CodeOwners {
    matcher: Gitignore,
    /// Per line that holds a pattern: its pattern text (as the matcher
    /// reports it back), its owners and its 1-based line number.
    rules: Vec<(String, Vec<String>, usize)>,
    /// Lines GitHub would not accept, with why (line number, reason).
    pub skipped: Vec<(usize, String)>,
}

/// Who owns a path, and the line that says so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Owners {
    pub owners: Vec<String>,
    pub pattern: String,
    pub line: usize,
}

impl Owners {
    /// As notifications show it: `@org/team, @user (CODEOWNERS line 12)`.
    pub fn described(&self) -> String {
        format!("{} (CODEOWNERS line {})", self.owners.join(", "), self.line)
    }
}

/// Why a CODEOWNERS file gives no owners at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodeOwnersError {
    #[error(
        "CODEOWNERS is {0} bytes: GitHub ignores a file of 3 MB or more, and so does Faultline"
    )]
    TooLarge(usize),
}

fn is_owner(word: &str) -> bool {
    (word.starts_with('@') && word.len() > 1) || (word.contains('@') && !word.starts_with('@'))
}

impl CodeOwners {
    pub fn parse(text: &str) -> Result<Self, CodeOwnersError> {
        if text.len() >= MAX_BYTES {
            return Err(CodeOwnersError::TooLarge(text.len()));
        }
        let mut builder = GitignoreBuilder::new("");
        let mut rules = Vec::new();
        let mut skipped = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // An owner list ends at a comment.
            let line = line.split(" #").next().unwrap_or(line);
            let mut words = line.split_whitespace();
            let Some(pattern) = words.next() else {
                continue;
            };
            if pattern.starts_with('!') {
                skipped.push((n, "negation (!) is not supported by CODEOWNERS".into()));
                continue;
            }
            let owners: Vec<String> = words
                .take_while(|w| is_owner(w))
                .map(str::to_string)
                .collect();
            if let Err(e) = builder.add_line(None, pattern) {
                skipped.push((n, format!("pattern {pattern:?}: {e}")));
                continue;
            }
            rules.push((pattern.to_string(), owners, n));
        }
        let matcher = builder.build().unwrap_or_else(|_| Gitignore::empty());
        Ok(Self {
            matcher,
            rules,
            skipped,
        })
    }

    /// The owners of `path` (relative to the repository root): the last
    /// matching line's; `None` when no line matches or the last one that
    /// does names nobody. A line matches a file by its name or by a
    /// directory above it (`apps/`, `/build/logs/`), except that `docs/*`
    /// matches only direct children, as GitHub documents.
    pub fn owners_of(&self, path: &str) -> Option<Owners> {
        let path = path.trim_start_matches("./").trim_start_matches('/');
        if path.is_empty() {
            return None;
        }
        // The last line matching the file itself or any directory above it.
        let mut best: Option<usize> = None;
        let mut at = Some(path);
        let mut is_dir = false;
        while let Some(p) = at.filter(|p| !p.is_empty()) {
            if let Some(glob) = self.matcher.matched(p, is_dir).inner() {
                let direct_only = is_dir && glob.original().ends_with("/*");
                // Equal patterns on two lines: the later line counts.
                let index = self
                    .rules
                    .iter()
                    .rposition(|(pat, _, _)| pat == glob.original());
                if let Some(i) = index.filter(|_| !direct_only) {
                    best = Some(best.map_or(i, |b| b.max(i)));
                }
            }
            at = p.rfind('/').map(|i| &p[..i]);
            is_dir = true;
        }
        let (pattern, owners, line) = &self.rules[best?];
        (!owners.is_empty()).then(|| Owners {
            owners: owners.iter().take(MAX_OWNERS).cloned().collect(),
            pattern: pattern.clone(),
            line: *line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# Default owners of everything
*       @octo-org/maintainers

# Order matters: the last match wins.
*.js    @js-owner #This is an inline comment.
/build/logs/ @doctocat
docs/*  docs@example.com
apps/   @octocat
/docs/build-app/  @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/github
/src/generated/**/*.rs @gen-team
";

    fn owners(path: &str) -> Option<Vec<String>> {
        CodeOwners::parse(FILE)
            .unwrap()
            .owners_of(path)
            .map(|o| o.owners)
    }

    #[test]
    fn the_last_matching_line_wins() {
        assert_eq!(owners("README.md").unwrap(), ["@octo-org/maintainers"]);
        assert_eq!(owners("src/app.js").unwrap(), ["@js-owner"]);
        // `apps/` comes after `*.js`: its directory wins for a JS file in it.
        assert_eq!(owners("apps/web/app.js").unwrap(), ["@octocat"]);
        // `/docs/build-app/` comes after `docs/*`.
        assert_eq!(
            owners("docs/build-app/troubleshooting.md").unwrap(),
            ["@doctocat"]
        );
        assert_eq!(
            owners("scripts/deploy.sh").unwrap(),
            ["@doctocat", "@octocat"]
        );
        let o = CodeOwners::parse(FILE)
            .unwrap()
            .owners_of("src/app.js")
            .unwrap();
        assert_eq!((o.pattern.as_str(), o.line), ("*.js", 5));
    }

    #[test]
    fn directories_and_globs_match_as_github_documents() {
        // `docs/*`: direct children of the root docs folder only.
        assert_eq!(
            owners("docs/getting-started.md").unwrap(),
            ["docs@example.com"]
        );
        assert_eq!(
            owners("docs/other/deep.md").unwrap(),
            ["@octo-org/maintainers"]
        );
        assert_eq!(owners("pkg/docs/a.md").unwrap(), ["@octo-org/maintainers"]);
        // `apps/` anywhere, at any depth below it.
        assert_eq!(owners("apps/web/index.html").unwrap(), ["@octocat"]);
        assert_eq!(owners("lib/apps/x.txt").unwrap(), ["@octocat"]);
        // `/build/logs/` at the root only; `**/logs` anywhere.
        assert_eq!(owners("build/logs/a/b.txt").unwrap(), ["@octocat"]);
        assert_eq!(owners("deploy/logs/today.txt").unwrap(), ["@octocat"]);
        assert_eq!(owners("src/generated/a/b/c.rs").unwrap(), ["@gen-team"]);
        assert_eq!(owners("./src/app.js").unwrap(), ["@js-owner"]);
    }

    #[test]
    fn a_line_without_owners_leaves_its_paths_unowned() {
        assert_eq!(owners("apps/github/main.go"), None);
        assert_eq!(owners("apps/other/main.go").unwrap(), ["@octocat"]);
    }

    #[test]
    fn negation_is_skipped_and_an_oversized_file_is_ignored_like_github_does() {
        let c = CodeOwners::parse("* @a\n!*.md @b\n").unwrap();
        assert_eq!(c.skipped.len(), 1);
        assert_eq!(c.owners_of("x.md").unwrap().owners, ["@a"]);
        let huge = "* @a\n".repeat(MAX_BYTES / 5 + 1);
        assert!(matches!(
            CodeOwners::parse(&huge),
            Err(CodeOwnersError::TooLarge(_))
        ));
        assert!(CodeOwners::parse("").unwrap().owners_of("a").is_none());
    }
}
