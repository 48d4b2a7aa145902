//! The GitHub tools: `github_file` (lines around a location at a commit),
//! `github_blame` (who last touched a line range), `github_commits` (recent
//! commits touching a path) and `github_search` (code search in the repo).
//! They read only the failure's own repository ([`super::scope`]); the commit
//! defaults to the failing one. API errors become
//! observations with GitHub's reason (404 not found, 401 bad token).

use std::sync::Arc;

use faultline_shared::{
    storage::events,
    tool::{self, BlameRange, Commit, Line, SearchItem},
};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{JsonTool, Tool, ToolContext, ToolError, ToolName, scope};
use crate::sources::{
    ApiError,
    github::{GithubClient, parse_repo},
};

/// All four GitHub tools over one client.
pub(super) fn tools(client: Arc<GithubClient>) -> Vec<Arc<dyn JsonTool>> {
    vec![
        Arc::new(GithubFile(client.clone())),
        Arc::new(GithubBlame(client.clone())),
        Arc::new(GithubCommits(client.clone())),
        Arc::new(GithubSearch(client)),
    ]
}

impl From<ApiError> for ToolError {
    fn from(e: ApiError) -> Self {
        crate::failure::Failure::from(e).into()
    }
}

/// The repository and ref a call is about: always the failure's own
/// repository (a `repo` argument may only name it again, in any case or
/// as a clone URL), and the ref of the arguments, else the failing commit.
async fn target(
    ctx: &ToolContext,
    tool: ToolName,
    repo: Option<&str>,
    reference: Option<String>,
) -> Result<((String, String), Option<String>), ToolError> {
    let event = events::get(&ctx.pool, ctx.event_id).await?;
    let own_text = event.as_ref().and_then(|e| e.repository.clone());
    let own = own_text.as_deref().and_then(parse_repo);
    if let Some(asked) = repo {
        let same = parse_repo(asked)
            .zip(own.as_ref())
            .is_some_and(|(asked, own)| scope::same_repo(&asked, own));
        if !same {
            return Err(ToolError::Invalid(scope::other_repo(
                tool.as_str(),
                own.as_ref(),
                asked,
            )));
        }
    }
    let repo = match (own, own_text) {
        (Some(repo), _) => repo,
        (None, Some(text)) => {
            return Err(ToolError::Invalid(format!(
                "the failure's repository {text:?} is not a GitHub owner/name or URL: \
                 {tool} is not available for it"
            )));
        }
        (None, None) => {
            return Err(ToolError::Invalid(format!(
                "the failure names no repository: {tool} reads only the failing repository"
            )));
        }
    };
    let reference = reference.or_else(|| event.and_then(|e| e.commit_sha));
    Ok((repo, reference))
}

fn need_ref(reference: Option<String>) -> Result<String, ToolError> {
    reference.ok_or_else(|| {
        ToolError::Invalid("the failure names no commit: pass \"ref\" (a SHA or branch)".into())
    })
}

/// Highest line number a call may name (the schema's bound).
const MAX_LINE: u64 = 10_000_000;

const REPO: &str =
    "owner/name of the failing repository (the only one these tools read); may be omitted";
const REF: &str = "commit SHA or branch; default: the failing commit";

/// `owner/name` of a repository.
fn full_name(repo: &(String, String)) -> String {
    format!("{}/{}", repo.0, repo.1)
}

pub struct GithubFile(Arc<GithubClient>);

/// The arguments of `github_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileArgs {
    #[schemars(length(max = 200), description = REPO)]
    repo: Option<String>,
    #[serde(rename = "ref")]
    #[schemars(length(max = 255), description = REF)]
    reference: Option<String>,
    #[schemars(length(max = 1024), description = "file path in the repository")]
    path: String,
    #[schemars(range(min = 1, max = MAX_LINE))]
    line: Option<u64>,
    #[schemars(range(min = 1, max = 100))]
    context: Option<u64>,
}

impl Tool for GithubFile {
    type Args = FileArgs;
    type Observation = tool::GithubFile;
    fn name(&self) -> ToolName {
        ToolName::GithubFile
    }
    fn description(&self) -> &'static str {
        "Read lines of a source file from GitHub at the failing commit: `context` lines either side of `line` (or the top of the file)."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: FileArgs,
    ) -> BoxFuture<'a, Result<tool::GithubFile, ToolError>> {
        Box::pin(async move {
            let (repo, reference) =
                target(ctx, Tool::name(self), args.repo.as_deref(), args.reference).await?;
            let reference = need_ref(reference)?;
            let path = args.path;
            let file = self.0.file(&repo, &path, &reference).await?;
            let context = args.context.unwrap_or(20);
            let lines: Vec<&str> = file.text.lines().collect();
            let total = lines.len() as u64;
            let (from, to) = match args.line {
                Some(line) if line > total => {
                    return Err(ToolError::Failed(format!(
                        "{path} has {total} lines; line {line} does not exist at {reference}"
                    )));
                }
                Some(line) => (
                    line.saturating_sub(context).max(1),
                    (line + context).min(total),
                ),
                None => (1, (2 * context).min(total)),
            };
            let window: Vec<Line> = (from..=to)
                .filter(|n| *n >= 1)
                .map(|n| Line {
                    n,
                    text: lines[(n - 1) as usize].to_string(),
                })
                .collect();
            Ok(tool::GithubFile {
                repo: full_name(&repo),
                reference,
                path: file.path,
                blob_sha: file.sha,
                size: file.size,
                total_lines: total,
                lines: window,
            })
        })
    }
}

pub struct GithubBlame(Arc<GithubClient>);

/// The arguments of `github_blame`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlameArgs {
    #[schemars(length(max = 200), description = REPO)]
    repo: Option<String>,
    #[serde(rename = "ref")]
    #[schemars(length(max = 255), description = REF)]
    reference: Option<String>,
    #[schemars(length(max = 1024))]
    path: String,
    #[schemars(range(min = 1, max = MAX_LINE))]
    start_line: u64,
    #[schemars(range(min = 1, max = MAX_LINE))]
    end_line: Option<u64>,
}

impl Tool for GithubBlame {
    type Args = BlameArgs;
    type Observation = tool::GithubBlame;
    fn name(&self) -> ToolName {
        ToolName::GithubBlame
    }
    fn description(&self) -> &'static str {
        "Blame a line range of a file on GitHub: the commit, author and date that last changed each part."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: BlameArgs,
    ) -> BoxFuture<'a, Result<tool::GithubBlame, ToolError>> {
        Box::pin(async move {
            let (repo, reference) =
                target(ctx, Tool::name(self), args.repo.as_deref(), args.reference).await?;
            let reference = need_ref(reference)?;
            let path = args.path;
            let start = args.start_line;
            let end = args.end_line.unwrap_or(start);
            if end < start || end - start > 500 {
                return Err(ToolError::Invalid(format!(
                    "end_line must be within 500 lines at or after start_line ({start}..{end})"
                )));
            }
            let ranges = self.0.blame(&repo, &path, &reference).await?;
            let text = |v: &Value| v.as_str().map(str::to_string);
            let hits: Vec<BlameRange> = ranges
                .iter()
                .filter(|r| {
                    r["startingLine"].as_u64().unwrap_or(0) <= end
                        && r["endingLine"].as_u64().unwrap_or(0) >= start
                })
                .map(|r| {
                    let c = &r["commit"];
                    BlameRange {
                        start_line: r["startingLine"].as_u64(),
                        end_line: r["endingLine"].as_u64(),
                        commit: text(&c["oid"]),
                        message: text(&c["messageHeadline"]),
                        author: text(&c["author"]["name"]),
                        date: text(&c["committedDate"]),
                        age: r["age"].as_u64(),
                    }
                })
                .collect();
            Ok(tool::GithubBlame {
                repo: full_name(&repo),
                reference,
                path,
                start_line: start,
                end_line: end,
                ranges: hits,
            })
        })
    }
}

pub struct GithubCommits(Arc<GithubClient>);

/// The arguments of `github_commits`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitsArgs {
    #[schemars(length(max = 200), description = REPO)]
    repo: Option<String>,
    #[serde(rename = "ref")]
    #[schemars(length(max = 255), description = REF)]
    reference: Option<String>,
    #[schemars(
        length(max = 1024),
        description = "file or directory; omit for the whole repository"
    )]
    path: Option<String>,
    #[schemars(range(min = 1, max = 30))]
    limit: Option<u32>,
}

impl Tool for GithubCommits {
    type Args = CommitsArgs;
    type Observation = tool::GithubCommits;
    fn name(&self) -> ToolName {
        ToolName::GithubCommits
    }
    fn description(&self) -> &'static str {
        "List recent commits touching a path (newest first) up to the failing commit."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: CommitsArgs,
    ) -> BoxFuture<'a, Result<tool::GithubCommits, ToolError>> {
        Box::pin(async move {
            let (repo, reference) =
                target(ctx, Tool::name(self), args.repo.as_deref(), args.reference).await?;
            let path = args.path;
            let limit = args.limit.unwrap_or(10);
            let list = self
                .0
                .commits(&repo, path.as_deref(), reference.as_deref(), limit)
                .await?;
            let text = |v: &Value| v.as_str().map(str::to_string);
            let commits: Vec<Commit> = list
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let message = c["commit"]["message"].as_str().unwrap_or_default();
                    Commit {
                        sha: text(&c["sha"]),
                        message: message.lines().next().unwrap_or_default().to_string(),
                        author: text(&c["commit"]["author"]["name"]),
                        login: text(&c["author"]["login"]),
                        date: text(&c["commit"]["author"]["date"]),
                        url: text(&c["html_url"]),
                    }
                })
                .collect();
            Ok(tool::GithubCommits {
                repo: full_name(&repo),
                reference,
                path,
                commits,
            })
        })
    }
}

pub struct GithubSearch(Arc<GithubClient>);

/// The arguments of `github_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    #[schemars(
        length(max = 256),
        description = "search terms, all of which must match (no OR or parentheses: one call per alternative); the search is scoped to the failing repository (repo:, org:, user: qualifiers are refused; path:, language:, filename:, extension:, in: narrow it)"
    )]
    query: String,
    #[schemars(
        length(max = 200),
        description = "owner/name of the failing repository (the only one searched); may be omitted"
    )]
    repo: Option<String>,
    #[schemars(range(min = 1, max = 20))]
    limit: Option<u32>,
}

impl Tool for GithubSearch {
    type Args = SearchArgs;
    type Observation = tool::GithubSearch;
    fn name(&self) -> ToolName {
        ToolName::GithubSearch
    }
    fn description(&self) -> &'static str {
        "Search the repository's code on GitHub (default branch index) for identifiers or messages from the log."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: SearchArgs,
    ) -> BoxFuture<'a, Result<tool::GithubSearch, ToolError>> {
        Box::pin(async move {
            let (repo, _) = target(ctx, Tool::name(self), args.repo.as_deref(), None).await?;
            let query = args.query;
            if query.trim().is_empty() {
                return Err(ToolError::Invalid("query must not be empty".into()));
            }
            scope::check_search_query(&query).map_err(ToolError::Invalid)?;
            let limit = args.limit.unwrap_or(10);
            let found = self.0.search_code(&repo, &query, limit).await?;
            let listed = found["items"].as_array().map_or(&[][..], Vec::as_slice);
            let text = |v: &Value| v.as_str().map(str::to_string);
            // Belt and braces: an item of another repository is dropped
            // even if the query somehow widened the search.
            let items: Vec<SearchItem> = listed
                .iter()
                .filter(|i| {
                    i["repository"]["full_name"].as_str().is_none_or(|full| {
                        parse_repo(full).is_some_and(|r| scope::same_repo(&r, &repo))
                    })
                })
                .map(|i| SearchItem {
                    path: text(&i["path"]),
                    blob_sha: text(&i["sha"]),
                    url: text(&i["html_url"]),
                })
                .collect();
            // GitHub's `total_count` is not passed on: it counts what was
            // dropped too. `count` is what this observation holds.
            let dropped = listed.len() - items.len();
            if dropped > 0 {
                tracing::warn!(run_id = %ctx.run_id, dropped, "github_search dropped results of other repositories");
            }
            Ok(tool::GithubSearch {
                repo: full_name(&repo),
                query,
                count: items.len() as u64,
                incomplete_results: found["incomplete_results"].as_bool(),
                items,
                dropped: (dropped > 0)
                    .then(|| format!("{dropped} result(s) of other repositories were dropped")),
            })
        })
    }
}
