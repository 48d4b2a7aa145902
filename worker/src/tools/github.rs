//! The GitHub tools: `github_file` (lines around a location at a commit),
//! `github_blame` (who last touched a line range), `github_commits` (recent
//! commits touching a path) and `github_search` (code search in the repo).
//! They read only the failure's own repository ([`super::scope`]); the commit
//! defaults to the failing one. API errors become
//! observations with GitHub's reason (404 not found, 401 bad token).

use std::sync::Arc;

use faultline_shared::storage::events;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError, scope};
use crate::sources::{
    ApiError,
    github::{GithubClient, parse_repo},
};

/// All four GitHub tools over one client.
pub fn tools(client: Arc<GithubClient>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(GithubFile(client.clone())),
        Arc::new(GithubBlame(client.clone())),
        Arc::new(GithubCommits(client.clone())),
        Arc::new(GithubSearch(client)),
    ]
}

impl From<ApiError> for ToolError {
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::Transient { message, .. } => ToolError::Transient(message),
            ApiError::NotFound { message, .. } | ApiError::Permanent { message, .. } => {
                ToolError::Failed(message)
            }
        }
    }
}

/// The repository and ref a call is about: always the failure's own
/// repository (a `repo` argument may only name it again, in any case or
/// as a clone URL), and the ref of the arguments, else the failing commit.
async fn target(
    ctx: &ToolContext,
    tool: &str,
    input: &Value,
) -> Result<((String, String), Option<String>), ToolError> {
    let event = events::get(&ctx.pool, ctx.event_id).await?;
    let own_text = event.as_ref().and_then(|e| e.repository.clone());
    let own = own_text.as_deref().and_then(parse_repo);
    if let Some(asked) = input["repo"].as_str() {
        let same = parse_repo(asked)
            .zip(own.as_ref())
            .is_some_and(|(asked, own)| scope::same_repo(&asked, own));
        if !same {
            return Err(ToolError::Invalid(scope::other_repo(
                tool,
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
    let reference = input["ref"]
        .as_str()
        .map(str::to_string)
        .or_else(|| event.and_then(|e| e.commit_sha));
    Ok((repo, reference))
}

fn need_ref(reference: Option<String>) -> Result<String, ToolError> {
    reference.ok_or_else(|| {
        ToolError::Invalid("the failure names no commit: pass \"ref\" (a SHA or branch)".into())
    })
}

/// Highest line number a call may name (the schema's bound).
const MAX_LINE: u64 = 10_000_000;

fn int(input: &Value, key: &str, default: u64) -> u64 {
    input[key].as_u64().unwrap_or(default)
}

fn common() -> Value {
    json!({
        "repo": {"type": "string", "maxLength": 200, "description": "owner/name of the failing repository (the only one these tools read); may be omitted"},
        "ref": {"type": "string", "maxLength": 255, "description": "commit SHA or branch; default: the failing commit"}})
}

fn schema(extra: Value, required: &[&str]) -> Value {
    let mut props = common();
    for (k, v) in extra.as_object().into_iter().flatten() {
        props[k] = v.clone();
    }
    json!({"type": "object", "properties": props, "required": required})
}

pub struct GithubFile(Arc<GithubClient>);

impl Tool for GithubFile {
    fn name(&self) -> &'static str {
        super::GITHUB_FILE
    }
    fn description(&self) -> &'static str {
        "Read lines of a source file from GitHub at the failing commit: `context` lines either side of `line` (or the top of the file)."
    }
    fn schema(&self) -> Value {
        schema(
            json!({"path": {"type": "string", "maxLength": 1024, "description": "file path in the repository"},
                   "line": {"type": "integer", "minimum": 1, "maximum": MAX_LINE},
                   "context": {"type": "integer", "minimum": 1, "maximum": 100}}),
            &["path"],
        )
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let (repo, reference) = target(ctx, self.name(), input).await?;
            let reference = need_ref(reference)?;
            let path = input["path"].as_str().unwrap_or_default();
            let file = self.0.file(&repo, path, &reference).await?;
            let context = int(input, "context", 20);
            let lines: Vec<&str> = file.text.lines().collect();
            let total = lines.len() as u64;
            let (from, to) = match input["line"].as_u64() {
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
            let window: Vec<Value> = (from..=to)
                .filter(|n| *n >= 1)
                .map(|n| json!({"n": n, "text": lines[(n - 1) as usize]}))
                .collect();
            Ok(json!({
                "repo": format!("{}/{}", repo.0, repo.1), "ref": reference, "path": file.path,
                "blob_sha": file.sha, "size": file.size, "total_lines": total, "lines": window,
            }))
        })
    }
}

pub struct GithubBlame(Arc<GithubClient>);

impl Tool for GithubBlame {
    fn name(&self) -> &'static str {
        super::GITHUB_BLAME
    }
    fn description(&self) -> &'static str {
        "Blame a line range of a file on GitHub: the commit, author and date that last changed each part."
    }
    fn schema(&self) -> Value {
        schema(
            json!({"path": {"type": "string", "maxLength": 1024},
                   "start_line": {"type": "integer", "minimum": 1, "maximum": MAX_LINE},
                   "end_line": {"type": "integer", "minimum": 1, "maximum": MAX_LINE}}),
            &["path", "start_line"],
        )
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let (repo, reference) = target(ctx, self.name(), input).await?;
            let reference = need_ref(reference)?;
            let path = input["path"].as_str().unwrap_or_default();
            let start = int(input, "start_line", 1);
            let end = int(input, "end_line", start);
            if end < start || end - start > 500 {
                return Err(ToolError::Invalid(format!(
                    "end_line must be within 500 lines at or after start_line ({start}..{end})"
                )));
            }
            let ranges = self.0.blame(&repo, path, &reference).await?;
            let hits: Vec<Value> = ranges
                .iter()
                .filter(|r| {
                    r["startingLine"].as_u64().unwrap_or(0) <= end
                        && r["endingLine"].as_u64().unwrap_or(0) >= start
                })
                .map(|r| {
                    let c = &r["commit"];
                    json!({"start_line": r["startingLine"], "end_line": r["endingLine"],
                           "commit": c["oid"], "message": c["messageHeadline"],
                           "author": c["author"]["name"], "date": c["committedDate"], "age": r["age"]})
                })
                .collect();
            Ok(
                json!({"repo": format!("{}/{}", repo.0, repo.1), "ref": reference, "path": path,
                      "start_line": start, "end_line": end, "ranges": hits}),
            )
        })
    }
}

pub struct GithubCommits(Arc<GithubClient>);

impl Tool for GithubCommits {
    fn name(&self) -> &'static str {
        super::GITHUB_COMMITS
    }
    fn description(&self) -> &'static str {
        "List recent commits touching a path (newest first) up to the failing commit."
    }
    fn schema(&self) -> Value {
        schema(
            json!({"path": {"type": "string", "maxLength": 1024, "description": "file or directory; omit for the whole repository"},
                   "limit": {"type": "integer", "minimum": 1, "maximum": 30}}),
            &[],
        )
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let (repo, reference) = target(ctx, self.name(), input).await?;
            let path = input["path"].as_str();
            let limit = int(input, "limit", 10) as u32;
            let list = self
                .0
                .commits(&repo, path, reference.as_deref(), limit)
                .await?;
            let commits: Vec<Value> = list
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let message = c["commit"]["message"].as_str().unwrap_or_default();
                    json!({"sha": c["sha"], "message": message.lines().next().unwrap_or_default(),
                           "author": c["commit"]["author"]["name"], "login": c["author"]["login"],
                           "date": c["commit"]["author"]["date"], "url": c["html_url"]})
                })
                .collect();
            Ok(
                json!({"repo": format!("{}/{}", repo.0, repo.1), "ref": reference, "path": path,
                      "commits": commits}),
            )
        })
    }
}

pub struct GithubSearch(Arc<GithubClient>);

impl Tool for GithubSearch {
    fn name(&self) -> &'static str {
        super::GITHUB_SEARCH
    }
    fn description(&self) -> &'static str {
        "Search the repository's code on GitHub (default branch index) for identifiers or messages from the log."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string", "maxLength": 256, "description": "search terms, all of which must match (no OR or parentheses: one call per alternative); the search is scoped to the failing repository (repo:, org:, user: qualifiers are refused; path:, language:, filename:, extension:, in: narrow it)"},
            "repo": {"type": "string", "maxLength": 200, "description": "owner/name of the failing repository (the only one searched); may be omitted"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20}}, "required": ["query"]})
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let (repo, _) = target(ctx, self.name(), input).await?;
            let query = input["query"].as_str().unwrap_or_default();
            if query.trim().is_empty() {
                return Err(ToolError::Invalid("query must not be empty".into()));
            }
            scope::check_search_query(query).map_err(ToolError::Invalid)?;
            let limit = int(input, "limit", 10) as u32;
            let found = self.0.search_code(&repo, query, limit).await?;
            let listed = found["items"].as_array().map_or(&[][..], Vec::as_slice);
            // Belt and braces: an item of another repository is dropped
            // even if the query somehow widened the search.
            let items: Vec<Value> = listed
                .iter()
                .filter(|i| {
                    i["repository"]["full_name"].as_str().is_none_or(|full| {
                        parse_repo(full).is_some_and(|r| scope::same_repo(&r, &repo))
                    })
                })
                .map(|i| json!({"path": i["path"], "blob_sha": i["sha"], "url": i["html_url"]}))
                .collect();
            // GitHub's `total_count` is not passed on: it counts what was
            // dropped too. `count` is what this observation holds.
            let dropped = listed.len() - items.len();
            let mut out = json!({"repo": format!("{}/{}", repo.0, repo.1), "query": query,
                "count": items.len(), "incomplete_results": found["incomplete_results"],
                "items": items});
            if dropped > 0 {
                out["dropped"] = json!(format!(
                    "{dropped} result(s) of other repositories were dropped"
                ));
                tracing::warn!(run_id = %ctx.run_id, dropped, "github_search dropped results of other repositories");
            }
            Ok(out)
        })
    }
}
