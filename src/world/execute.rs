//! Carrying out approved actions: each catalog kind dispatched to its client, and in replay the
//! case's effects applied so later reads see the world after it.

use super::{Mode, World};
use crate::integrations::{
    ErrorKind, IntegrationError, NewIncident, NewIssue, ResourceChange, SilenceSpec,
};
use crate::model::Action;
use crate::model::catalog::{self, ActionKind, Handler};
use chrono::Utc;
use serde_json::Value;
use std::collections::BTreeMap;

/// Whether [`World::execute`] can carry out actions of `kind`: every mutating catalog entry has
/// an executor arm (the dispatch matches [`ActionKind`] exhaustively); anything else is answered
/// with an [`ErrorKind::Manual`] error saying what the operator should run instead.
pub fn is_executable(kind: &str) -> bool {
    executable(catalog::lookup(kind))
}

pub(super) fn executable(entry: Option<&catalog::Entry>) -> bool {
    match entry {
        Some(e) => {
            matches!(e.handler, Handler::Act(_)) || (e.handler == Handler::External && e.mutating)
        }
        None => false,
    }
}

impl World {
    /// Runs a mutating action. In replay the call is answered from the recordings when it can be, is
    /// otherwise simulated, and then `effects.toml` is applied so later reads see the world after it.
    pub async fn execute(&self, action: &Action) -> Result<String, IntegrationError> {
        let outcome = self.dispatch(action).await;
        if self.mode != Mode::Replay {
            return outcome;
        }
        let message = match outcome {
            Ok(m) => m,
            Err(e) if e.is_no_recording() => {
                format!("{} {}: simulated (replay)", action.kind, action.target)
            }
            Err(e) => return Err(e),
        };
        let applied = self.apply_effects(action);
        if !applied.is_empty() {
            // How the recorded world switches recordings is ours, not the operator's: it goes to
            // the log file, never into the action's result.
            tracing::debug!(action = %action.kind, recordings = %applied.join(", "), "effects applied");
        }
        Ok(message)
    }

    fn apply_effects(&self, action: &Action) -> Vec<String> {
        let (Some(case), Some(replay)) = (&self.case, &self.replay) else {
            return Vec::new();
        };
        let Ok(mut applied) = self.applied.lock() else {
            return Vec::new();
        };
        let mut names = Vec::new();
        for (i, effect) in case.effects.iter().enumerate() {
            let target_ok = effect.target.as_deref().is_none_or(|t| t == action.target);
            if effect.action != action.kind || !target_ok || applied.contains(&i) {
                continue;
            }
            if let Some(recs) = self.overlays.get(&effect.recordings) {
                replay.overlay_raw(recs.clone());
                applied.push(i);
                names.push(effect.recordings.clone());
            }
        }
        names
    }

    async fn dispatch(&self, action: &Action) -> Result<String, IntegrationError> {
        let integration = action
            .kind
            .split_once('.')
            .map(|(i, _)| i)
            .unwrap_or(action.kind.as_str());
        let catalog = self.catalog();
        if catalog
            .lookup(&action.kind)
            .is_some_and(|e| e.handler == Handler::External && e.mutating)
        {
            let args = Value::Object(action.params.clone().into_iter().collect());
            return self.mcp.call(&action.kind, &args).await;
        }
        let Some(Handler::Act(kind)) = catalog::lookup(&action.kind).map(|e| e.handler) else {
            let what = if action.operation.trim().is_empty() {
                format!("carry out {} on {} by hand", action.kind, action.target)
            } else {
                action.operation.clone()
            };
            return Err(IntegrationError::new(
                integration,
                &action.kind,
                ErrorKind::Manual(what),
            ));
        };
        let invalid =
            |m: String| IntegrationError::new(integration, &action.kind, ErrorKind::Invalid(m));
        // Target and params must name the same object; a missing name param comes from the target.
        let mut params = action.params.clone();
        catalog::reconcile(&action.kind, &action.target, &mut params).map_err(invalid)?;
        let param = |k: &str| params.get(k);
        let param_str = |k: &str| param(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let param_u64 = |k: &str| match param(k) {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.trim().trim_start_matches('#').parse().ok(),
            _ => None,
        };
        let default_u64 = |k: &str| {
            catalog::lookup(&action.kind)
                .and_then(|e| e.param(k))
                .and_then(|p| p.default)
                .and_then(|d| d.parse::<u64>().ok())
        };
        let kube = if integration == "kubernetes" {
            self.kubernetes_in(param_str("cluster")).map_err(invalid)?
        } else {
            self.kubernetes.clone()
        };
        let ns = param_str("namespace").unwrap_or(kube.default_namespace());
        let name =
            |k: &str| param_str(k).ok_or_else(|| invalid(format!("{} needs a `{k}`", action.kind)));
        match kind {
            ActionKind::RolloutRestart => {
                kube.rollout_restart(ns, name("deployment")?, self.now())
                    .await
            }
            ActionKind::RolloutUndo => kube.rollout_undo(ns, name("deployment")?).await,
            ActionKind::Scale => {
                let replicas = param_u64("replicas")
                    .and_then(|r| u32::try_from(r).ok())
                    .ok_or_else(|| invalid("scale needs a `replicas` number".into()))?;
                kube.scale(ns, name("deployment")?, replicas).await
            }
            ActionKind::DeletePod => {
                let force = matches!(param("force"), Some(Value::Bool(true)))
                    || param_str("force") == Some("true");
                let grace = match param("grace_period_seconds") {
                    _ if force => Some(0),
                    None | Some(Value::Null) => None,
                    Some(_) => Some(
                        param_u64("grace_period_seconds")
                            .and_then(|g| u32::try_from(g).ok())
                            .ok_or_else(|| {
                                invalid("`grace_period_seconds` must be a whole number".into())
                            })?,
                    ),
                };
                kube.delete_pod_with_grace(ns, name("pod")?, grace).await
            }
            ActionKind::SetResources => {
                let change = resource_change(&params).map_err(invalid)?;
                kube.set_resources(ns, name("deployment")?, &change).await
            }
            ActionKind::Cordon => kube.cordon(name("node")?).await,
            ActionKind::Drain => {
                let node = name("node")?;
                let report = kube.drain(node).await?;
                if report.complete() {
                    Ok(report.summary())
                } else {
                    // The node is cordoned and the other pods have moved, but it is not empty yet.
                    Err(IntegrationError::new(
                        integration,
                        format!("drain node/{node}"),
                        ErrorKind::Other(format!("drain incomplete: {}", report.summary())),
                    ))
                }
            }
            ActionKind::Silence => {
                // Every matcher shown is sent: dropping one would silence more than was approved.
                let mut matchers: Vec<(String, String)> = Vec::new();
                if let Some(Value::Object(m)) = param("matchers") {
                    for (k, v) in m {
                        let v = match v {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            _ => {
                                return Err(invalid(format!(
                                    "silence matcher `{k}` must be a label value, not {v}"
                                )));
                            }
                        };
                        matchers.push((k.clone(), v));
                    }
                }
                if matchers.is_empty() {
                    return Err(invalid("silence needs at least one label matcher".into()));
                }
                const MAX_MINUTES: u64 = 7 * 24 * 60;
                let minutes = match param("duration_minutes") {
                    None | Some(Value::Null) => default_u64("duration_minutes").unwrap_or(60),
                    Some(_) => param_u64("duration_minutes")
                        .filter(|m| (1..=MAX_MINUTES).contains(m))
                        .ok_or_else(|| {
                            invalid(format!(
                                "`duration_minutes` must be a whole number from 1 to {MAX_MINUTES}"
                            ))
                        })?,
                };
                let starts_at = Utc::now();
                let spec = SilenceSpec {
                    matchers,
                    starts_at,
                    ends_at: starts_at + chrono::Duration::minutes(minutes as i64),
                    created_by: param_str("created_by").unwrap_or("sitrep").to_string(),
                    comment: if action.rationale.is_empty() {
                        "silenced during incident response".into()
                    } else {
                        action.rationale.clone()
                    },
                };
                let id = self.alertmanager.create_silence(&spec).await?;
                Ok(format!("silence {id} created for {minutes} minutes"))
            }
            ActionKind::ExpireSilence => {
                let id = name("silence_id")?;
                self.alertmanager.expire_silence(id).await?;
                Ok(format!("silence {id} expired"))
            }
            ActionKind::PagerDutyAcknowledge | ActionKind::PagerDutyResolve => {
                let id = name("incident_id")?;
                let wanted = if kind == ActionKind::PagerDutyAcknowledge {
                    "acknowledged"
                } else {
                    "resolved"
                };
                let status = self.pagerduty.set_status(id, wanted).await?;
                Ok(format!("incident {id} is now {status}"))
            }
            ActionKind::PagerDutyAddNote => {
                let id = name("incident_id")?;
                let note = self.pagerduty.add_note(id, name("content")?).await?;
                Ok(format!("note {note} added to incident {id}"))
            }
            ActionKind::PostgresCancelBackend | ActionKind::PostgresTerminateBackend => {
                let pid = param_u64("pid")
                    .and_then(|p| i64::try_from(p).ok())
                    .filter(|p| *p > 0)
                    .ok_or_else(|| invalid(format!("{} needs a backend `pid`", action.kind)))?;
                if kind == ActionKind::PostgresCancelBackend {
                    self.postgres.cancel_backend(pid).await
                } else {
                    self.postgres.terminate_backend(pid).await
                }
            }
            ActionKind::JiraCreateIssue => {
                let labels = param_str("labels")
                    .map(|l| {
                        l.split(',')
                            .map(|x| x.trim().to_string())
                            .filter(|x| !x.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                let issue = NewIssue {
                    project: name("project")?.to_string(),
                    issue_type: param_str("issue_type").unwrap_or("Task").to_string(),
                    summary: name("summary")?.to_string(),
                    description: param_str("description").unwrap_or_default().to_string(),
                    labels,
                };
                let created = self.jira.create_issue(&issue).await?;
                Ok(if created.url.is_empty() {
                    format!("Jira issue {} created", created.key)
                } else {
                    format!("Jira issue {} created: {}", created.key, created.url)
                })
            }
            ActionKind::ServiceNowCreateIncident => {
                let level = |k: &str| {
                    param_u64(k)
                        .or_else(|| default_u64(k))
                        .map(|v| u8::try_from(v).unwrap_or(u8::MAX))
                        .unwrap_or(2)
                };
                let incident = NewIncident {
                    short_description: name("short_description")?.to_string(),
                    description: param_str("description").unwrap_or_default().to_string(),
                    urgency: level("urgency"),
                    impact: level("impact"),
                    category: name("category")?.to_string(),
                };
                let created = self.servicenow.create_incident(&incident).await?;
                Ok(if created.url.is_empty() {
                    format!("ServiceNow incident {} created", created.number)
                } else {
                    format!(
                        "ServiceNow incident {} created: {}",
                        created.number, created.url
                    )
                })
            }
            ActionKind::RevertPr => {
                let repo = param_str("repo")
                    .or(self.github_repo.as_deref())
                    .ok_or_else(|| invalid("revert_pr needs a `repo`".into()))?;
                let number = param_u64("pull")
                    .or_else(|| param_u64("number"))
                    .ok_or_else(|| invalid("revert_pr needs a pull request number".into()))?;
                let url = self.github.revert_pr(repo, number).await?;
                Ok(format!("revert pull request opened: {url}"))
            }
        }
    }
}

/// The resource change an action asks for: flat `memory_limit`, `memory_request`, `cpu_limit`,
/// `cpu_request` params (as analyzers propose them) and/or `limits` / `requests` objects.
fn resource_change(params: &BTreeMap<String, Value>) -> Result<ResourceChange, String> {
    let text = |key: &str, v: &Value| match v {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(format!("`{key}` must be a quantity such as 1Gi or 500m")),
    };
    let mut change = ResourceChange {
        container: match params.get("container") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) if !c.is_empty() => Some(c.clone()),
            Some(_) => return Err("`container` must be a container name".into()),
        },
        ..ResourceChange::default()
    };
    for (key, resource, into_limits) in [
        ("memory_limit", "memory", true),
        ("memory_request", "memory", false),
        ("cpu_limit", "cpu", true),
        ("cpu_request", "cpu", false),
    ] {
        if let Some(v) = params.get(key) {
            let target = if into_limits {
                &mut change.limits
            } else {
                &mut change.requests
            };
            target.insert(resource.to_string(), text(key, v)?);
        }
    }
    for (key, into_limits) in [("limits", true), ("requests", false)] {
        match params.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (resource, v) in m {
                    let q = text(&format!("{key}.{resource}"), v)?;
                    let target = if into_limits {
                        &mut change.limits
                    } else {
                        &mut change.requests
                    };
                    target.insert(resource.clone(), q);
                }
            }
            Some(_) => {
                return Err(format!(
                    "`{key}` must be an object such as {{\"memory\": \"1Gi\"}}"
                ));
            }
        }
    }
    if change.limits.is_empty() && change.requests.is_empty() {
        return Err(
            "set_resources needs at least one of `memory_limit`, `memory_request`, `cpu_limit`, `cpu_request`, `limits`, `requests`".into(),
        );
    }
    Ok(change)
}
