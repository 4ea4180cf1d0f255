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
        if tool == "kubernetes.replica_sets"
            && let ToolOutput::Deployments(rs) = &output
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

/// ReplicaSets as rollout changes, newest first, so a deploy can be lined up with an onset.
pub fn rollout_changes(rs: &[DeploymentFacts]) -> Vec<Change> {
    let mut out: Vec<Change> = rs
        .iter()
        .map(|r| {
            let owner = r
                .labels
                .get("app")
                .cloned()
                .unwrap_or_else(|| r.name.clone());
            Change {
                kind: ChangeKind::Rollout,
                at: r.created_at,
                id: r
                    .revision
                    .as_ref()
                    .map(|v| format!("revision {v}"))
                    .unwrap_or_else(|| r.name.clone()),
                title: format!(
                    "ReplicaSet {} ({}), {}/{} ready",
                    r.name,
                    r.images.join(", "),
                    r.ready_replicas,
                    r.replicas
                ),
                author: None,
                target: format!("{}/{owner}", r.namespace),
                url: None,
            }
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.at));
    out
}
