//! The caller every specialist's tool calls go through: credentials asked for, events, timeout,
//! evidence, and the facts folded into the lane's observations.

use super::absorb;
use crate::agent::evidence::{self, Chart};
use crate::agent::journal::Journal;
use crate::agent::tools::{Params, ToolOutput, Tools};
use crate::model::{Change, ChangeKind, DeploymentFacts, Event, EvidenceId};
use crate::reason::Observations;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// Runs tool calls for one specialist: events, timeout, evidence.
#[derive(Clone)]
pub struct Caller {
    pub tools: Arc<dyn Tools>,
    pub journal: Arc<Mutex<Journal>>,
    pub timeout: Duration,
    pub specialist: String,
    /// Calls already made in this phase (tool + params), so two lanes never ask twice.
    pub seen: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// Credential approvals of this run, shared with the command dispatcher.
    pub credentials: Arc<crate::agent::credentials::CredentialGate>,
    /// The cluster every Kubernetes call of this run names, when several are configured.
    pub cluster: Option<String>,
}

/// Lock the journal; a panic elsewhere must not silence the session log.
pub fn lock(j: &Mutex<Journal>) -> MutexGuard<'_, Journal> {
    j.lock().unwrap_or_else(|e| e.into_inner())
}

impl Caller {
    /// The same caller with a fresh memory of calls made (verification re-queries on purpose).
    pub fn fresh(&self, name: &str) -> Caller {
        Caller {
            specialist: name.to_string(),
            seen: Arc::default(),
            ..self.clone()
        }
    }

    pub fn for_specialist(&self, name: &str) -> Caller {
        Caller {
            specialist: name.to_string(),
            ..self.clone()
        }
    }

    pub fn emit(&self, event: Event) {
        lock(&self.journal).emit(event);
    }

    /// Call a tool; on success add its evidence and fold the facts into `obs`.
    /// A failure is an event, and `None`: the investigation goes on without it.
    pub async fn call(
        &self,
        tool: &str,
        params: Params,
        chart: &Chart,
        obs: &Mutex<Observations>,
    ) -> Option<(ToolOutput, EvidenceId)> {
        let key = format!(
            "{tool} {}",
            serde_json::Value::from(
                params
                    .clone()
                    .into_iter()
                    .collect::<serde_json::Map<_, _>>()
            )
        );
        if !self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key)
        {
            return None;
        }
        let integration = tool.split('.').next().unwrap_or(tool);
        // Every Kubernetes read names the cluster it asks, in its params (and so in the session).
        let mut params = params;
        if integration == "kubernetes"
            && let Some(c) = &self.cluster
        {
            params
                .entry("cluster".to_string())
                .or_insert_with(|| serde_json::Value::String(c.clone()));
        }
        let refused = self.credentials_for(integration).await.err();
        let call_id = {
            let mut j = lock(&self.journal);
            let call_id = j.next_id("call");
            j.emit(Event::ToolCalled {
                call_id: call_id.clone(),
                tool: tool.to_string(),
                specialist: Some(self.specialist.clone()),
                params: params.clone(),
            });
            call_id
        };
        if let Some(error) = refused {
            self.emit(Event::ToolFailed {
                call_id,
                duration_ms: 0,
                error,
            });
            return None;
        }
        let started = Instant::now();
        let result = tokio::time::timeout(self.timeout, self.tools.call(tool, &params)).await;
        let duration_ms = started.elapsed().as_millis() as u64;
        let output = match result {
            Ok(Ok(out)) => out,
            Ok(Err(error)) => {
                self.emit(Event::ToolFailed {
                    call_id,
                    duration_ms,
                    error,
                });
                return None;
            }
            Err(_) => {
                self.emit(Event::ToolFailed {
                    call_id,
                    duration_ms,
                    error: format!("{tool} timed out after {:.0?}", self.timeout),
                });
                return None;
            }
        };
        let draft = evidence::build(tool, &params, &output, chart);
        let id = {
            let mut j = lock(&self.journal);
            j.emit(Event::ToolSucceeded {
                call_id: call_id.clone(),
                duration_ms,
                summary: output.summary(),
            });
            let id = j.next_id("ev");
            j.emit(Event::EvidenceAdded {
                evidence: crate::model::Evidence {
                    id: id.clone(),
                    kind: draft.kind.clone(),
                    title: draft.title,
                    source: tool.to_string(),
                    call_id: Some(call_id.clone()),
                    body: draft.body,
                },
            });
            j.emit(Event::Observed {
                evidence_id: id.clone(),
                kind: draft.kind.clone(),
                facts: output.clone(),
            });
            id
        };
        absorb(
            &mut obs.lock().unwrap_or_else(|e| e.into_inner()),
            tool,
            &params,
            &output,
            &draft.kind,
            &id,
        );
        // Rollout history is a change record too: show it where changes are looked for.
        if matches!(
            tool,
            "kubernetes.replica_sets" | "kubernetes.controller_revisions"
        ) && let ToolOutput::Deployments(rs) = &output
        {
            let changes = rollout_changes(rs);
            if !changes.is_empty() {
                let out = ToolOutput::Changes(changes.clone());
                let draft = evidence::build(tool, &params, &out, chart);
                let cid = {
                    let mut j = lock(&self.journal);
                    let cid = j.next_id("ev");
                    j.emit(Event::EvidenceAdded {
                        evidence: crate::model::Evidence {
                            id: cid.clone(),
                            kind: "changes".into(),
                            title: "Rollout history".into(),
                            source: tool.to_string(),
                            call_id: Some(call_id),
                            body: draft.body,
                        },
                    });
                    j.emit(Event::Observed {
                        evidence_id: cid.clone(),
                        kind: "changes".into(),
                        facts: out.clone(),
                    });
                    cid
                };
                let mut o = obs.lock().unwrap_or_else(|e| e.into_inner());
                o.changes.extend(changes);
                o.evidence.entry("changes".into()).or_default().push(cid);
            }
        }
        Some((output, id))
    }
}

impl Caller {
    /// Asks for every credential of `integration` still waiting for a decision (an AWS key ID and
    /// its secret are two references), one after another; the first refusal stops the call.
    pub(in crate::agent) async fn credentials_for(&self, integration: &str) -> Result<(), String> {
        let mut asked: Vec<String> = Vec::new();
        while let Some(reference) = self.tools.pending_credential(integration) {
            // A decision the world did not take up would be asked for forever.
            if asked.contains(&reference) {
                return Err(format!(
                    "credential {reference} is still waiting for a decision"
                ));
            }
            self.credential(integration, &reference).await?;
            asked.push(reference);
        }
        Ok(())
    }

    /// Asks the operator (once per reference and session) whether `integration` may read its
    /// credential; waits for the recorded decision and hands it to the world.
    pub(in crate::agent) async fn credential(
        &self,
        integration: &str,
        reference: &str,
    ) -> Result<(), String> {
        use crate::agent::credentials::Ask;
        let decided = match self.credentials.ask(reference) {
            Ask::First => {
                self.emit(Event::CredentialRequested {
                    reference: reference.to_string(),
                    integration: integration.to_string(),
                    specialist: Some(self.specialist.clone()),
                });
                self.credentials.wait(reference).await
            }
            Ask::Wait => self.credentials.wait(reference).await,
            Ask::Decided { approved: true, .. } => Ok(()),
            Ask::Decided { reason, .. } => Err(reason),
        };
        match decided {
            Ok(()) => {
                self.tools.decide_credential(reference, true, "");
                Ok(())
            }
            Err(reason) => {
                self.tools.decide_credential(reference, false, &reason);
                let why = if reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({reason})")
                };
                Err(format!(
                    "{integration}: not asked: the credential {reference} was not approved for this session{why}"
                ))
            }
        }
    }
}

/// ReplicaSets and ControllerRevisions as rollout changes, newest first, so a deploy can be
/// lined up with an onset. A revision owned by a StatefulSet or DaemonSet is a change to that
/// workload, titled with what it changed since the one before when that one is listed too.
pub fn rollout_changes(rs: &[DeploymentFacts]) -> Vec<Change> {
    let mut out: Vec<Change> = rs
        .iter()
        .map(|r| match revision_owner(r) {
            Some((kind, owner)) => Change {
                kind: ChangeKind::Rollout,
                at: r.created_at,
                id: format!("revision {}", r.revision.as_deref().unwrap_or("?")),
                title: revision_title(r, kind, owner, rs),
                author: None,
                target: format!("{}/{owner}", r.namespace),
                url: None,
            },
            None => {
                let mut c = replica_set_change(r, rs);
                // A revision no StatefulSet or DaemonSet owns (orphaned, not yet adopted) is no
                // ReplicaSet: it is named for what it is.
                if r.labels.contains_key(REVISION_HASH) {
                    c.title = format!(
                        "ControllerRevision {} revision {} ({})",
                        r.name,
                        r.revision.as_deref().unwrap_or("?"),
                        r.images.join(", ")
                    );
                }
                c
            }
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.at));
    out
}

/// The label StatefulSet and DaemonSet controllers put on each ControllerRevision.
const REVISION_HASH: &str = "controller.kubernetes.io/hash";

/// A ReplicaSet as its Deployment's rollout, titled with its images and, when its owner's
/// previous ReplicaSet is listed, what its template changed since (an image, the ConfigMaps and
/// Secrets it reads, a literal environment value).
fn replica_set_change(r: &DeploymentFacts, all: &[DeploymentFacts]) -> Change {
    let owner = r
        .labels
        .get("app")
        .cloned()
        .unwrap_or_else(|| r.name.clone());
    let previous = r.owner.as_ref().and_then(|o| {
        all.iter()
            .filter(|p| {
                p.owner.as_ref() == Some(o) && p.namespace == r.namespace && p.name != r.name
            })
            .filter(|p| match (revision_number(p), revision_number(r)) {
                (Some(a), Some(b)) => a < b,
                _ => p.created_at < r.created_at,
            })
            .max_by_key(|p| (revision_number(p), p.created_at))
    });
    // Its images are in its title already; what else its template changed follows them.
    let changed = previous.and_then(|p| what_changed(p, r, false));
    // The same images with another configuration: a configuration change rolled out, not a
    // release of new code.
    let kind = match (previous, &changed) {
        (Some(p), Some(_)) if p.images == r.images => ChangeKind::Config,
        _ => ChangeKind::Rollout,
    };
    let what = changed.map(|w| format!(": {w}")).unwrap_or_default();
    Change {
        kind,
        at: r.created_at,
        id: r
            .revision
            .as_ref()
            .map(|v| format!("revision {v}"))
            .unwrap_or_else(|| r.name.clone()),
        title: format!(
            "ReplicaSet {} ({}), {}/{} ready{what}",
            r.name,
            r.images.join(", "),
            r.ready_replicas,
            r.replicas
        ),
        author: None,
        target: format!("{}/{owner}", r.namespace),
        url: None,
    }
}

/// `(kind, name)` of the StatefulSet or DaemonSet a ControllerRevision belongs to.
fn revision_owner(r: &DeploymentFacts) -> Option<(&str, &str)> {
    r.owner
        .as_deref()
        .and_then(|o| o.split_once('/'))
        .filter(|(kind, name)| matches!(*kind, "StatefulSet" | "DaemonSet") && !name.is_empty())
}

fn revision_number(r: &DeploymentFacts) -> Option<i64> {
    r.revision.as_deref().and_then(|v| v.parse().ok())
}

/// `StatefulSet billing-pg revision 4 (postgres:16.3)`, then what differs from the owner's
/// previous listed revision: its images, else the ConfigMaps and Secrets it reads, else its
/// template's annotations (by key: their values are not repeated).
fn revision_title(r: &DeploymentFacts, kind: &str, owner: &str, all: &[DeploymentFacts]) -> String {
    let rev = r.revision.as_deref().unwrap_or("?");
    let head = if r.images.is_empty() {
        format!("{kind} {owner} revision {rev}")
    } else {
        format!("{kind} {owner} revision {rev} ({})", r.images.join(", "))
    };
    let previous = revision_number(r).and_then(|n| {
        all.iter()
            .filter(|o| o.namespace == r.namespace && revision_owner(o) == Some((kind, owner)))
            .filter_map(|o| Some((revision_number(o)?, o)))
            .filter(|(m, _)| *m < n)
            .max_by_key(|(m, _)| *m)
            .map(|(_, o)| o)
    });
    match previous.and_then(|p| what_changed(p, r, true)) {
        Some(what) => format!("{head}: {what}"),
        None => head,
    }
}

/// What one revision's template changed over the one before, most telling first; its images
/// only when `images` (a title that names them already leaves them out).
fn what_changed(before: &DeploymentFacts, after: &DeploymentFacts, images: bool) -> Option<String> {
    let apart = |a: &[String], b: &[String]| -> (Vec<String>, Vec<String>) {
        let gone = a.iter().filter(|x| !b.contains(x)).cloned().collect();
        let came = b.iter().filter(|x| !a.contains(x)).cloned().collect();
        (gone, came)
    };
    let moved = |what: &str, gone: Vec<String>, came: Vec<String>| -> String {
        match (gone.is_empty(), came.is_empty()) {
            (false, false) => format!("{what} {} → {}", gone.join(", "), came.join(", ")),
            (true, _) => format!("{what} {} added", came.join(", ")),
            (_, true) => format!("{what} {} removed", gone.join(", ")),
        }
    };
    let (gone, came) = apart(&before.images, &after.images);
    if images && (!gone.is_empty() || !came.is_empty()) {
        return Some(moved("image", gone, came));
    }
    let (gone, came) = apart(&before.config_refs, &after.config_refs);
    if !gone.is_empty() || !came.is_empty() {
        return Some(moved("config", gone, came));
    }
    // Literal environment values: `env DB_HOST orders-pg → orders-pg-ro`.
    let env = before.env_changes(after);
    if !env.is_empty() {
        return Some(format!("env {}", env.join(", ")));
    }
    let keys: Vec<&str> = before
        .template_annotations
        .keys()
        .chain(after.template_annotations.keys())
        .filter(|k| before.template_annotations.get(*k) != after.template_annotations.get(*k))
        .map(String::as_str)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    (!keys.is_empty()).then(|| format!("template annotations changed ({})", keys.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn revision(owner: &str, n: i64, images: &[&str], minute: u32) -> DeploymentFacts {
        let name = owner.rsplit('/').next().unwrap_or_default();
        DeploymentFacts {
            name: format!("{name}-{n}f8c9d"),
            namespace: "billing".into(),
            revision: Some(n.to_string()),
            owner: Some(owner.into()),
            images: images.iter().map(|i| i.to_string()).collect(),
            created_at: Utc.with_ymd_and_hms(2026, 4, 18, 10, minute, 0).single(),
            ..DeploymentFacts::default()
        }
    }

    #[test]
    fn a_statefulsets_revisions_are_its_rollouts_with_what_changed() {
        let old = revision("StatefulSet/billing-pg", 3, &["postgres:16.2"], 1);
        let new = revision("StatefulSet/billing-pg", 4, &["postgres:16.3"], 12);
        // Listed oldest first, as the API server may; another workload's revision between.
        let other = revision("DaemonSet/node-agent", 9, &["agent:2"], 5);
        let changes = rollout_changes(&[old.clone(), other, new.clone()]);
        assert_eq!(changes.len(), 3);
        let titles: Vec<&str> = changes.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "StatefulSet billing-pg revision 4 (postgres:16.3): image postgres:16.2 → postgres:16.3",
                "DaemonSet node-agent revision 9 (agent:2)",
                "StatefulSet billing-pg revision 3 (postgres:16.2)",
            ]
        );
        assert_eq!(changes[0].kind, ChangeKind::Rollout);
        assert_eq!(changes[0].target, "billing/billing-pg");
        assert_eq!(changes[0].id, "revision 4");
        assert_eq!(changes[0].at, new.created_at);
        assert_eq!(changes[1].target, "billing/node-agent");

        // Orphaned (its StatefulSet deleted, the revision kept): still a revision, not a ReplicaSet.
        let mut orphan = revision("StatefulSet/billing-pg", 2, &["postgres:16.1"], 0);
        orphan.owner = None;
        orphan.labels = [
            ("app".to_string(), "billing-pg".to_string()),
            (REVISION_HASH.to_string(), "6d5f8c7b2".to_string()),
        ]
        .into();
        let changes = rollout_changes(&[orphan]);
        assert_eq!(
            changes[0].title,
            "ControllerRevision billing-pg-2f8c9d revision 2 (postgres:16.1)"
        );
        assert_eq!(changes[0].target, "billing/billing-pg");

        // The same images: the config it reads, else its annotations, is what changed.
        let mut conf = new.clone();
        conf.images = old.images.clone();
        conf.config_refs = vec!["configmap/pg-conf-v2".into()];
        let mut before = old.clone();
        before.config_refs = vec!["configmap/pg-conf-v1".into()];
        let changes = rollout_changes(&[before.clone(), conf.clone()]);
        assert_eq!(
            changes[0].title,
            "StatefulSet billing-pg revision 4 (postgres:16.2): config configmap/pg-conf-v1 → configmap/pg-conf-v2"
        );
        conf.config_refs = before.config_refs.clone();
        conf.template_annotations = [(
            "kubectl.kubernetes.io/restartedAt".to_string(),
            "10:12".to_string(),
        )]
        .into();
        let changes = rollout_changes(&[before.clone(), conf.clone()]);
        assert_eq!(
            changes[0].title,
            "StatefulSet billing-pg revision 4 (postgres:16.2): template annotations changed (kubectl.kubernetes.io/restartedAt)"
        );
        // Nothing told apart: the revision alone.
        conf.template_annotations.clear();
        let changes = rollout_changes(&[before, conf]);
        assert_eq!(
            changes[0].title,
            "StatefulSet billing-pg revision 4 (postgres:16.2)"
        );
    }

    #[test]
    fn replica_sets_stay_changes_of_the_app_they_run() {
        let mut rs = revision("Deployment/checkout", 7, &["checkout:2.1"], 3);
        rs.name = "checkout-6f7b9c8d5".into();
        rs.labels = [("app".to_string(), "checkout-web".to_string())].into();
        rs.replicas = 3;
        rs.ready_replicas = 2;
        let changes = rollout_changes(&[rs]);
        assert_eq!(
            changes[0].title,
            "ReplicaSet checkout-6f7b9c8d5 (checkout:2.1), 2/3 ready"
        );
        assert_eq!(changes[0].target, "billing/checkout-web");
        assert_eq!(changes[0].id, "revision 7");
    }
}
