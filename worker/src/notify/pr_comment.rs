//! One pull-request comment per pull request, edited in place (issue 32
//! item 2; opt-in per repository with `NOTIFY_GITHUB_PR_COMMENTS`).
//!
//! A finished run of a GitHub event marks the comment of each open pull
//! request of its commit dirty (`storage::pr_comments`); a later passing
//! run of the branch does too. The deliverer renders the comment from the
//! stored analyses of the head commit (`faultline_shared::pr_comment`) and
//! writes it:
//! - found again by the id it stored, else by the hidden [`MARKER`] among
//!   the pull request's comments (an attempt whose answer was lost created
//!   it), else created: never a second comment;
//! - a comment deleted by someone is posted again (counted in `recreated`);
//!   one edited by someone is rewritten (counted in `human_edits`);
//! - its 👍 / 👎 reactions are read each time it is written, and by a
//!   bounded sweep of recent comments ([`reactions`]): GitHub sends no
//!   webhook for them.

pub use faultline_shared::pr_comment::{MARKER, render, web_base};
use faultline_shared::{
    pr_comment::sha256,
    storage::pr_comments::{PrComment, Written},
};
use serde_json::{Value, json};

use super::deliver::{GitHub, github_url};
use crate::sources::codeowners::{self, CodeOwners};

/// Pages of a pull request's comments read to find ours (100 each).
pub const COMMENT_PAGES: u32 = 10;
/// Most open pull requests of one commit that get a comment.
const MAX_PULLS: usize = 5;

/// The open pull requests whose head is `sha`: those the delivery named
/// (`workflow_run.pull_requests`), else GitHub's
/// `GET /repos/{owner}/{repo}/commits/{sha}/pulls`. A commit GitHub does
/// not know (404, 422) has none.
pub(crate) async fn pulls_of(
    gh: &GitHub<'_>,
    api: &str,
    repository: &str,
    sha: &str,
    named: &[i64],
) -> Result<Vec<i64>, String> {
    if !named.is_empty() {
        return Ok(named.iter().copied().take(MAX_PULLS).collect());
    }
    let mut url = github_url(api, repository, &["commits", sha, "pulls"])?;
    url.query_pairs_mut().append_pair("per_page", "30");
    let (status, listed) = gh.request(gh.http.get(url)).await?;
    if status == 404 || status == 422 {
        return Ok(Vec::new());
    }
    if !(200..300).contains(&status) {
        return Err(format!(
            "github answered {status} listing the commit's pull requests"
        ));
    }
    Ok(listed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["state"].as_str() == Some("open"))
        .filter_map(|p| p["number"].as_i64())
        .filter(|n| *n > 0)
        .take(MAX_PULLS)
        .collect())
}

/// The repository's CODEOWNERS at `sha`, read where GitHub reads it (the
/// first of [`codeowners::LOCATIONS`] that exists, contents API). `None`,
/// with the reason logged, when there is none, it is 3 MB or more (GitHub
/// ignores it too), or GitHub does not answer it: the comment then names
/// no owner, and is written all the same.
pub(crate) async fn code_owners(
    gh: &GitHub<'_>,
    api: &str,
    repository: &str,
    sha: &str,
) -> Option<CodeOwners> {
    for location in codeowners::LOCATIONS {
        let mut segments: Vec<&str> = vec!["contents"];
        segments.extend(location.split('/'));
        let mut url = match github_url(api, repository, &segments) {
            Ok(url) => url,
            Err(e) => {
                tracing::info!(%repository, error = %e, "no CODEOWNERS");
                return None;
            }
        };
        url.query_pairs_mut().append_pair("ref", sha);
        let (status, body) = match gh.request(gh.http.get(url)).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::info!(%repository, error = %e, "CODEOWNERS not read");
                return None;
            }
        };
        match status {
            404 => continue,
            200..=299 => {}
            _ => {
                tracing::info!(%repository, status, "CODEOWNERS not read");
                return None;
            }
        }
        let size = body["size"].as_u64().unwrap_or(0) as usize;
        if size >= codeowners::MAX_BYTES || body["encoding"] != "base64" {
            tracing::info!(%repository, size, "CODEOWNERS of 3 MB or more is ignored, as GitHub does");
            return None;
        }
        let bytes = match crate::sources::github::decode_contents(&body) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::info!(%repository, error = %e, "CODEOWNERS ignored: invalid base64");
                return None;
            }
        };
        return match CodeOwners::parse(&String::from_utf8_lossy(&bytes)) {
            Ok(owners) => Some(owners),
            Err(e) => {
                tracing::info!(%repository, error = %e, "CODEOWNERS ignored");
                None
            }
        };
    }
    None
}

/// Reactions read of one comment (GitHub's maximum page size).
pub const REACTIONS_PER_PAGE: u32 = 100;

/// A comment's 👍 / 👎: the counts of its `reactions` rollup and, when
/// there are any, who gave them (`GET …/issues/comments/{id}/reactions`,
/// one page of [`REACTIONS_PER_PAGE`]: a comment with more is recorded by
/// its first hundred). `None` when the comment carries no rollup; the
/// votes are `None` (kept as they were) when the list could not be read.
pub(crate) async fn reactions(
    gh: &GitHub<'_>,
    api: &str,
    repository: &str,
    comment: &Value,
) -> Option<((i32, i32), Option<Vec<(String, bool)>>)> {
    let r = &comment["reactions"];
    if !r.is_object() {
        return None;
    }
    let count = |k: &str| r[k].as_i64().unwrap_or(0).clamp(0, i32::MAX as i64) as i32;
    let thumbs = (count("+1"), count("-1"));
    if thumbs == (0, 0) {
        return Some((thumbs, Some(Vec::new())));
    }
    let id = comment["id"].as_i64()?.to_string();
    let listed = async {
        let mut url = github_url(api, repository, &["issues", "comments", &id, "reactions"])?;
        url.query_pairs_mut()
            .append_pair("per_page", &REACTIONS_PER_PAGE.to_string());
        gh.request(gh.http.get(url)).await
    }
    .await;
    let votes = match listed {
        Ok((200..=299, list)) => Some(
            list.as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| {
                    let helpful = match r["content"].as_str()? {
                        "+1" => true,
                        "-1" => false,
                        _ => return None,
                    };
                    let login = r["user"]["login"].as_str().filter(|l| !l.is_empty())?;
                    Some((login.to_string(), helpful))
                })
                .collect(),
        ),
        Ok((status, _)) => {
            tracing::info!(%repository, comment = %id, status, "reactions not read; the votes stay as they were");
            None
        }
        Err(e) => {
            tracing::info!(%repository, comment = %id, error = %e, "reactions not read; the votes stay as they were");
            None
        }
    };
    Some((thumbs, votes))
}

/// Reads the reactions of a comment already written (the sweep): the
/// comment by its id, then [`reactions`]. `Ok(None)`: it is gone.
pub(crate) async fn read_reactions(
    gh: &GitHub<'_>,
    api: &str,
    comment: &PrComment,
) -> Result<Option<((i32, i32), Option<Vec<(String, bool)>>)>, String> {
    let Some(id) = comment.comment_id else {
        return Ok(None);
    };
    let repo = comment.repository.as_str();
    let url = github_url(api, repo, &["issues", "comments", &id.to_string()])?;
    let (status, current) = gh.request(gh.http.get(url)).await?;
    match status {
        404 | 410 => Ok(None),
        200..=299 => Ok(reactions(gh, api, repo, &current).await),
        _ => Err(format!("github answered {status} reading comment {id}")),
    }
}

/// Writes `body` as the pull request's one Faultline comment (module doc).
pub(crate) async fn write(
    gh: &GitHub<'_>,
    api: &str,
    comment: &PrComment,
    body: &str,
) -> Result<Written, String> {
    let repo = comment.repository.as_str();
    let number = comment.pr_number.to_string();
    let mut written = Written {
        body_sha256: sha256(body),
        ..Written::default()
    };
    let mut found: Option<Value> = None;
    if let Some(id) = comment.comment_id {
        let url = github_url(api, repo, &["issues", "comments", &id.to_string()])?;
        let (status, current) = gh.request(gh.http.get(url)).await?;
        match status {
            200..=299 => found = Some(current),
            // Deleted by someone: posted again (once: the marker search
            // below finds a re-post whose answer was lost).
            404 | 410 => written.recreated = true,
            _ => return Err(format!("github answered {status} reading comment {id}")),
        }
    }
    if found.is_none() {
        found = find_marked(gh, api, repo, &number).await?;
    }
    let id = match found {
        Some(current) => {
            let id = current["id"]
                .as_i64()
                .ok_or_else(|| "github: a comment without an id".to_string())?;
            let old = current["body"].as_str().unwrap_or("");
            let old_sha = sha256(old);
            written.human_edit = comment
                .body_sha256
                .as_deref()
                .is_some_and(|mine| mine != old_sha && comment.comment_id == Some(id));
            if let Some((thumbs, votes)) = reactions(gh, api, repo, &current).await {
                written.thumbs = Some(thumbs);
                written.votes = votes;
            }
            if old_sha != written.body_sha256 {
                let url = github_url(api, repo, &["issues", "comments", &id.to_string()])?;
                let (status, _) = gh
                    .request(gh.http.patch(url).json(&json!({ "body": body })))
                    .await?;
                if !(200..300).contains(&status) {
                    return Err(format!("github answered {status} updating comment {id}"));
                }
            }
            id
        }
        None => {
            let url = github_url(api, repo, &["issues", &number, "comments"])?;
            let (status, created) = gh
                .request(gh.http.post(url).json(&json!({ "body": body })))
                .await?;
            if !(200..300).contains(&status) {
                return Err(format!(
                    "github answered {status} commenting on pull request #{number}"
                ));
            }
            created["id"]
                .as_i64()
                .ok_or_else(|| "github: the created comment has no id".to_string())?
        }
    };
    written.comment_id = id;
    Ok(written)
}

/// Our comment among the pull request's, by the marker it starts with.
async fn find_marked(
    gh: &GitHub<'_>,
    api: &str,
    repo: &str,
    number: &str,
) -> Result<Option<Value>, String> {
    for page in 1..=COMMENT_PAGES {
        let mut url = github_url(api, repo, &["issues", number, "comments"])?;
        url.query_pairs_mut()
            .append_pair("per_page", "100")
            .append_pair("page", &page.to_string());
        let (status, listed) = gh.request(gh.http.get(url)).await?;
        if !(200..300).contains(&status) {
            return Err(format!(
                "github answered {status} listing the comments of pull request #{number}"
            ));
        }
        let list = listed.as_array().cloned().unwrap_or_default();
        if let Some(c) = list
            .iter()
            .find(|c| c["body"].as_str().is_some_and(|b| b.starts_with(MARKER)))
        {
            return Ok(Some(c.clone()));
        }
        if list.len() < 100 {
            return Ok(None);
        }
    }
    Err(format!(
        "github: more than {} comments on pull request #{number}; not adding another",
        COMMENT_PAGES * 100
    ))
}
