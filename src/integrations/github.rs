//! GitHub REST client: deployments, commits and merged pull requests in a window ("what changed"), revert PRs.

use super::error::{ErrorKind, IntegrationError};
use super::prometheus::{parse_time, str_of};
use super::transport::{Request, RequestBody, Transport};
use crate::model::{Change, ChangeKind};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use std::sync::Arc;

const NAME: &str = "github";
const PER_PAGE: &str = "100";

#[derive(Clone)]
pub struct GitHubClient {
    transport: Arc<dyn Transport>,
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn in_window(at: Option<DateTime<Utc>>, since: DateTime<Utc>, until: DateTime<Utc>) -> bool {
    at.is_some_and(|t| t >= since && t <= until)
}

fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}

/// `owner/name`, refusing anything that would escape the `/repos/` path.
fn check_repo(req: &Request, repo: &str) -> Result<(), IntegrationError> {
    let ok = repo.split('/').count() == 2
        && repo.split('/').all(|p| {
            !p.is_empty()
                && p != ".."
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        });
    if ok {
        Ok(())
    } else {
        Err(req.error(ErrorKind::Invalid(format!(
            "repository must be owner/name, got {repo:?}"
        ))))
    }
}

impl GitHubClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        GitHubClient { transport }
    }

    async fn list(&self, req: Request, repo: &str) -> Result<Vec<Value>, IntegrationError> {
        check_repo(&req, repo)?;
        let v = self.transport.send(&req).await?.json(&req)?;
        match v {
            Value::Array(items) => Ok(items),
            _ => Err(req.error(ErrorKind::Decode("expected an array".into()))),
        }
    }

    /// Deployments created in `[since, until]`.
    pub async fn deployments(
        &self,
        repo: &str,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Change>, IntegrationError> {
        let req =
            Request::get(NAME, format!("/repos/{repo}/deployments")).query("per_page", PER_PAGE);
        let items = self.list(req, repo).await?;
        Ok(items
            .iter()
            .filter_map(|d| {
                let at = d
                    .get("created_at")
                    .and_then(Value::as_str)
                    .and_then(parse_time);
                if !in_window(at, since, until) {
                    return None;
                }
                let description = str_of(d, "description");
                let title = if description.is_empty() {
                    format!(
                        "deploy {} to {}",
                        str_of(d, "ref"),
                        str_of(d, "environment")
                    )
                } else {
                    description
                };
                Some(Change {
                    kind: ChangeKind::Deployment,
                    at,
                    id: match d.get("sha").and_then(Value::as_str) {
                        Some(sha) => short(sha),
                        None => d.get("id").map(|i| i.to_string()).unwrap_or_default(),
                    },
                    title,
                    author: d
                        .pointer("/creator/login")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    target: repo.to_string(),
                    url: d.get("url").and_then(Value::as_str).map(str::to_string),
                })
            })
            .collect())
    }

    /// Commits on the default branch in `[since, until]`.
    pub async fn commits(
        &self,
        repo: &str,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Change>, IntegrationError> {
        let req = Request::get(NAME, format!("/repos/{repo}/commits"))
            .query("since", iso(since))
            .query("until", iso(until))
            .query("per_page", PER_PAGE);
        let items = self.list(req, repo).await?;
        Ok(items
            .iter()
            .filter_map(|c| {
                let at = c
                    .pointer("/commit/committer/date")
                    .or_else(|| c.pointer("/commit/author/date"))
                    .and_then(Value::as_str)
                    .and_then(parse_time);
                if !in_window(at, since, until) {
                    return None;
                }
                let message = c
                    .pointer("/commit/message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                Some(Change {
                    kind: ChangeKind::Commit,
                    at,
                    id: short(&str_of(c, "sha")),
                    title: message.lines().next().unwrap_or("").to_string(),
                    author: c
                        .pointer("/author/login")
                        .or_else(|| c.pointer("/commit/author/name"))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    target: repo.to_string(),
                    url: c
                        .get("html_url")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
            })
            .collect())
    }

    /// Pull requests merged in `[since, until]`.
    pub async fn merged_pulls(
        &self,
        repo: &str,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Change>, IntegrationError> {
        let req = Request::get(NAME, format!("/repos/{repo}/pulls"))
            .query("state", "closed")
            .query("sort", "updated")
            .query("direction", "desc")
            .query("per_page", PER_PAGE);
        let items = self.list(req, repo).await?;
        Ok(items
            .iter()
            .filter_map(|p| {
                let at = p
                    .get("merged_at")
                    .and_then(Value::as_str)
                    .and_then(parse_time);
                if !in_window(at, since, until) {
                    return None;
                }
                Some(Change {
                    kind: ChangeKind::PullRequest,
                    at,
                    id: p.get("number").map(|n| format!("#{n}")).unwrap_or_default(),
                    title: str_of(p, "title"),
                    author: p
                        .pointer("/user/login")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    target: repo.to_string(),
                    url: p
                        .get("html_url")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
            })
            .collect())
    }

    async fn call(&self, req: Request) -> Result<Value, IntegrationError> {
        self.transport.send(&req).await?.json(&req)
    }

    /// Opens a pull request that reverts merged PR `number` and returns its URL.
    ///
    /// The revert commit takes the tree of the merge commit's first parent, which is exactly the revert
    /// only while the base branch still points at that merge; otherwise this refuses rather than undo
    /// later work.
    pub async fn revert_pr(&self, repo: &str, number: u64) -> Result<String, IntegrationError> {
        let pr_req = Request::get(NAME, format!("/repos/{repo}/pulls/{number}"));
        check_repo(&pr_req, repo)?;
        let pr = self.call(pr_req.clone()).await?;
        let decode = |req: &Request, what: &str| req.error(ErrorKind::Decode(format!("no {what}")));
        if pr.get("merged_at").and_then(Value::as_str).is_none() {
            return Err(pr_req.error(ErrorKind::Invalid(format!(
                "pull request #{number} is not merged"
            ))));
        }
        let merge_sha = pr
            .get("merge_commit_sha")
            .and_then(Value::as_str)
            .ok_or_else(|| decode(&pr_req, "merge_commit_sha"))?
            .to_string();
        let base = pr
            .pointer("/base/ref")
            .and_then(Value::as_str)
            .ok_or_else(|| decode(&pr_req, "base.ref"))?
            .to_string();
        let title = str_of(&pr, "title");

        let head_req = Request::get(NAME, format!("/repos/{repo}/git/ref/heads/{base}"));
        let head = self.call(head_req.clone()).await?;
        let head_sha = head
            .pointer("/object/sha")
            .and_then(Value::as_str)
            .ok_or_else(|| decode(&head_req, "object.sha"))?;
        if head_sha != merge_sha {
            return Err(head_req.error(ErrorKind::Invalid(format!(
                "{base} has moved past the merge of #{number}; revert it by hand"
            ))));
        }

        let commit_req = Request::get(NAME, format!("/repos/{repo}/git/commits/{merge_sha}"));
        let commit = self.call(commit_req.clone()).await?;
        let parent = commit
            .pointer("/parents/0/sha")
            .and_then(Value::as_str)
            .ok_or_else(|| decode(&commit_req, "parents"))?
            .to_string();
        let parent_req = Request::get(NAME, format!("/repos/{repo}/git/commits/{parent}"));
        let parent_commit = self.call(parent_req.clone()).await?;
        let tree = parent_commit
            .pointer("/tree/sha")
            .and_then(Value::as_str)
            .ok_or_else(|| decode(&parent_req, "tree.sha"))?
            .to_string();

        let create_req = Request::new(NAME, "POST", format!("/repos/{repo}/git/commits")).body(
            RequestBody::Json(json!({
                "message": format!("Revert \"{title}\"\n\nThis reverts pull request #{number} (commit {merge_sha})."),
                "tree": tree,
                "parents": [merge_sha],
            })),
        );
        let created = self.call(create_req.clone()).await?;
        let revert_sha = created
            .get("sha")
            .and_then(Value::as_str)
            .ok_or_else(|| decode(&create_req, "sha"))?
            .to_string();

        let branch = format!("revert-{number}-{}", short(&merge_sha));
        let ref_req = Request::new(NAME, "POST", format!("/repos/{repo}/git/refs")).body(
            RequestBody::Json(json!({"ref": format!("refs/heads/{branch}"), "sha": revert_sha})),
        );
        self.call(ref_req).await?;

        let pull_req = Request::new(NAME, "POST", format!("/repos/{repo}/pulls")).body(
            RequestBody::Json(json!({
                "title": format!("Revert \"{title}\""),
                "head": branch,
                "base": base,
                "body": format!("Reverts #{number}, opened during incident response."),
            })),
        );
        let pull = self.call(pull_req.clone()).await?;
        pull.get("html_url")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| decode(&pull_req, "html_url"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_cannot_escape_the_path() {
        let req = Request::get(NAME, "/x");
        assert!(check_repo(&req, "acme/payments").is_ok());
        assert!(check_repo(&req, "acme/../x").is_err());
        assert!(check_repo(&req, "acme").is_err());
        assert!(check_repo(&req, "acme/pay?x=1").is_err());
    }
}
