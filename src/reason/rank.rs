//! Ranks analyzer signals into hypotheses, a category, a root cause, what was ruled out, and suggested actions.

use super::checks::Role;
use super::logs::{self, Sig};
use super::pods::last_termination;
use super::{Analysis, Ctx, Signal, actions, list_names, pod_deployment, pod_rs, walk};
use crate::model::{Action, Category, Hypothesis, RuledOut};
use std::collections::BTreeMap;

/// How an object a signal is about relates to the subject; `None` when no evidenced edge links
/// them (the failure is reported under "also noticed", never as the root cause).
pub(crate) fn relation(ctx: &Ctx, object: &str) -> Option<&'static str> {
    let s = &ctx.subject;
    if !s.resolved {
        return Some("subject");
    }
    let Some((kind, name)) = object.split_once('/') else {
        return Some("subject");
    };
    match kind.to_ascii_lowercase().as_str() {
        "node" if s.nodes.iter().any(|n| n == name) => {
            return Some(
                if s.objects.iter().any(|o| o.kind == "Node" && o.name == name) {
                    "subject"
                } else {
                    "node of the subject"
                },
            );
        }
        "replicaset" => {
            let owns_subject_pod = ctx
                .pods()
                .iter()
                .any(|p| s.has_pod(p) && p.owner.as_deref() == Some(&format!("ReplicaSet/{name}")));
            let owned_by_subject = ctx
                .obs
                .replica_sets
                .iter()
                .find(|r| r.name == name)
                .and_then(|r| r.owner.as_deref())
                .is_some_and(|o| s.covers(o));
            let named_by_controller = s.workloads.iter().any(|(k, d)| {
                k == "Deployment"
                    && name
                        .strip_prefix(d.as_str())
                        .is_some_and(|h| h.starts_with('-') && !h[1..].contains('-'))
            });
            if owns_subject_pod || owned_by_subject || named_by_controller {
                return Some("subject");
            }
        }
        "backend" | "application" | "database" => return Some("database of the subject"),
        "pod" if super::subject::unlisted_pod_of_subject(ctx.obs, s, name) => {
            return Some("subject");
        }
        // A Service whose selector takes the subject's pods stands in front of it.
        "service"
            if ctx.obs.services.iter().any(|svc| {
                svc.name == name
                    && !svc.selector.is_empty()
                    && ctx.pods().iter().any(|p| {
                        s.has_pod(p)
                            && super::subject::selector_matches(&svc.selector, &[], &p.labels)
                    })
            }) =>
        {
            return Some("service of the subject");
        }
        // A Service the alert or problem names, or named as the subject's workload is.
        "service"
            if ctx.obs.services.iter().any(|svc| {
                svc.name == name && super::checks::service_endpoints::named(ctx, svc)
            }) =>
        {
            return Some("service named for the subject");
        }
        // A Service the subject's failing calls dial, by name or address.
        "service" if super::checks::service_endpoints::dialled_by_subject(ctx, name) => {
            return Some("service the subject's failing calls dial");
        }
        _ if s.covers(object) => return Some("subject"),
        _ => {}
    }
    // A dependency down along an edge (its own pods too).
    if let Some(d) = ctx
        .dependencies_down()
        .iter()
        .find(|d| d.is(kind, name) || ctx.pod_named(name).is_some_and(|p| d.has_pod(p)))
    {
        return Some(d.relation());
    }
    // A dependency the subject's own logs name (its workload's name, or the pod's).
    let owner = ctx
        .pods()
        .into_iter()
        .find(|p| p.name == name)
        .and_then(|p| ctx.workload_of(p))
        .map(|(_, n)| n);
    let named = |n: &str| {
        ctx.recent_subject_lines()
            .iter()
            .any(|l| super::subject::line_names(&l.line, n))
    };
    if named(name) || owner.as_deref().is_some_and(named) {
        return Some("dependency named in its logs");
    }
    if super::subject::mentions(ctx.alert_names(), name) {
        return Some("dependency named by the alert");
    }
    // The cluster's DNS, when the subject's own lookups fail: its pods answer every name the
    // subject resolves.
    if kind.eq_ignore_ascii_case("pod")
        && ctx
            .pod_named(name)
            .is_some_and(super::checks::cluster_dns::is_cluster_dns)
        && ctx
            .subject_hits()
            .iter()
            .any(|h| h.sig == super::logs::Sig::Dns)
    {
        return Some("cluster DNS the subject's lookups fail against");
    }
    None
}

/// Failures on objects with no evidenced edge to the subject are context, not causes.
fn set_aside_unrelated(ctx: &Ctx, signals: &mut [Signal]) {
    for s in signals.iter_mut() {
        if s.cause.is_none() || s.benign || s.objects.is_empty() {
            continue;
        }
        if s.objects.iter().all(|o| relation(ctx, o).is_none()) {
            s.set_aside();
        }
    }
}

/// The alert's own expression breaching is the symptom, not its cause: when an analyzer found a
/// mechanism, the breach steps back to be the effect it explains.
fn symptom_is_not_a_cause(ctx: &Ctx, signals: &mut [Signal]) {
    // kube-state-metrics series restate the objects' state that the Kubernetes checks read
    // directly: their level and their step are the symptom, never its cause.
    let state_metric = super::metrics::parsed_alert(ctx)
        .and_then(|p| p.primary().and_then(|s| s.metric.clone()))
        .is_some_and(|m| m.starts_with("kube_"));
    if state_metric {
        for s in signals.iter_mut() {
            if s.decl().reads_series()
                && !s.benign
                && (s.summary.contains("kube_") || s.detail.contains("kube_"))
            {
                s.cause = None;
                s.actions.clear();
                s.explained = true;
            }
        }
    }
    let mechanism = signals
        .iter()
        .any(|s| s.decl().role != Role::Symptom && walk::can_be_cause(s));
    if !mechanism {
        return;
    }
    for s in signals.iter_mut() {
        if s.decl().role == Role::Symptom && !s.benign && s.category != Category::ResourceExhaustion
        {
            s.explained = true;
            s.detail
                .push_str("; the alert's own condition: the symptom the cause explains");
        }
    }
}

pub(crate) fn rank(ctx: &Ctx, mut signals: Vec<Signal>) -> Analysis {
    let symptom = super::symptom::measure(ctx);
    set_aside_unrelated(ctx, &mut signals);
    symptom_is_not_a_cause(ctx, &mut signals);
    walk::walk(ctx, &symptom, &mut signals);
    // The most links evidenced first; among equals, the stronger kind of evidence.
    signals.sort_by_key(|s| std::cmp::Reverse((s.weight, s.basis)));
    let findings = signals.iter().map(Signal::finding).collect();

    let active: Vec<&Signal> = signals
        .iter()
        .filter(|s| s.cause.is_some() && !s.benign)
        .collect();
    let benign: Vec<&Signal> = signals
        .iter()
        .filter(|s| s.cause.is_some() && s.benign)
        .collect();
    let top_active = active.iter().copied().find(|s| walk::can_be_cause(s));
    let top_benign = benign.first().copied();
    // A failure seen to end outweighs a live one it is better evidenced than; finding nothing
    // wrong elsewhere clears no failure that was found.
    let top: Option<&Signal> = match (top_active, top_benign) {
        (Some(a), Some(b)) if b.weight > a.weight && b.decl().role != Role::Absence => Some(b),
        (Some(a), _) => Some(a),
        (None, Some(b)) => Some(b),
        (None, None) => active.first().copied(),
    };

    let mut hypotheses: Vec<Hypothesis> = Vec::new();
    let mut push = |s: &Signal| {
        let statement = s.cause.clone().unwrap_or_default();
        if !hypotheses.iter().any(|h| h.statement == statement) {
            hypotheses.push(Hypothesis {
                category: s.category,
                statement,
                confidence: s.confidence,
                evidence: s.evidence.clone(),
            });
        }
    };
    if let Some(t) = top {
        push(t);
    }
    for s in active.iter().chain(benign.iter()) {
        push(s);
    }
    hypotheses.truncate(5);

    let covered = super::coverage::fraction(ctx);
    let (category, root_cause, confidence) = match top {
        Some(t) if t.benign => (
            t.category,
            t.cause.clone().unwrap_or_default(),
            // A verdict of health is only as good as what could be looked at.
            t.confidence * (0.6 + 0.4 * covered as f32),
        ),
        Some(t) => {
            // The walk reached it from the subject's own failing state: the chain is stated from
            // the cause to its effect, and the evidenced edge between them is one more link.
            let cause = t.cause.clone().unwrap_or_default();
            match walk::effect_of(&signals, t) {
                Some(effect) if !cause.contains(&effect.summary) => (
                    t.category,
                    format!("{}; so {}", cause.trim_end_matches('.'), effect.summary),
                    walk::confidence(t.weight + 1),
                ),
                _ => (t.category, cause, t.confidence),
            }
        }
        None => {
            let gaps = super::coverage::gaps(ctx);
            let text = if gaps.is_empty() {
                "No analyzer found a cause in the gathered evidence: the signals present do not match a known failure mode".to_string()
            } else {
                format!("insufficient evidence: {}", gaps.join("; "))
            };
            (Category::Unknown, text, 0.1 + 0.2 * covered as f32)
        }
    };

    let mut ruled_out: Vec<RuledOut> = Vec::new();
    for s in &signals {
        if s.benign == (category == Category::Healthy) || s.benign {
            for r in &s.ruled_out {
                if !ruled_out.iter().any(|x| x.reason == r.reason) {
                    ruled_out.push(r.clone());
                }
            }
        }
    }
    ruled_out.extend(general_ruled_out(ctx, &signals, top));
    ruled_out.extend(super::checks::ingress::ruled_out(ctx, &signals));
    // A hypothesis is ruled out by evidence or not at all.
    ruled_out.retain(|r| !r.evidence.is_empty());

    let mut suggested_actions: Vec<Action> = top.map(|t| t.actions.clone()).unwrap_or_default();
    if category == Category::Healthy
        && let Some(silence) = top.and_then(|t| silence_if_checked(ctx, t))
    {
        suggested_actions.push(silence);
    }

    let mut verdict = Verdict {
        category,
        root_cause,
        confidence,
        suggested_actions,
    };
    super::verdict::settle(ctx, &symptom, top, &mut verdict);
    let checks = super::verdict::checks(ctx, &signals, &ruled_out);
    Analysis {
        findings,
        hypotheses,
        ruled_out,
        category: verdict.category,
        root_cause: verdict.root_cause,
        confidence: verdict.confidence,
        suggested_actions: verdict.suggested_actions,
        subject: ctx.subject.objects.clone(),
        symptom,
        checks,
    }
}

/// The verdict being settled: what the symptom step can still change.
pub(crate) struct Verdict {
    pub category: Category,
    pub root_cause: String,
    pub confidence: f32,
    pub suggested_actions: Vec<Action>,
}

/// A silence for a still-firing alert, only when a benign signal checked the alert's own condition
/// (its expression back under its threshold) or the very object the alert is about (a pod, node
/// or deployment it names) and found it recovered. The rationale is built from that signal's
/// values and times and cites its evidence; with no such check there is nothing to justify
/// hiding the page, so nothing is proposed.
fn silence_if_checked(ctx: &Ctx, top: &Signal) -> Option<Action> {
    let alert = ctx
        .obs
        .alert
        .as_ref()
        .filter(|_| !ctx.obs.alert_resolved())?;
    if !top.benign || top.evidence.is_empty() {
        return None;
    }
    let about_alert = |o: &String| match o.split_once('/') {
        Some(("pod", n)) => ctx.focus_pods.iter().any(|p| p == n),
        Some(("node", n)) => ctx.focus_nodes.iter().any(|x| x == n),
        Some(("deployment", n)) => ctx.focus_deployment.as_deref() == Some(n),
        _ => false,
    };
    let checked = if top.reads_symptom {
        "its expression".to_string()
    } else {
        top.objects.iter().find(|o| about_alert(o))?.clone()
    };
    let matchers: BTreeMap<String, String> = alert
        .labels
        .iter()
        .filter(|(k, _)| {
            ["alertname", "namespace", "pod", "deployment", "service"].contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut evidence = top.evidence.clone();
    let since = alert
        .starts_at
        .filter(|t| t.timestamp() > 0)
        .map(|t| format!(" since {}", t.format("%H:%M UTC")))
        .unwrap_or_default();
    let rule = ctx
        .obs
        .rules
        .iter()
        .find(|r| r.name == alert.name() && r.rule_type == "alerting");
    let rule_state = match rule.and_then(|r| r.state.as_deref()) {
        Some(state) => {
            let ids = ctx.ev(&["alert_rules"]);
            let cite = if ids.is_empty() {
                String::new()
            } else {
                format!(" [{}]", ids.join(", "))
            };
            evidence.extend(ids);
            format!("; Prometheus reports its rule {state}{cite}")
        }
        None => String::new(),
    };
    let checked_ids = top.evidence.join(", ");
    evidence.extend(ctx.ev(&["alerts"]));
    let mut seen = std::collections::BTreeSet::new();
    evidence.retain(|id| seen.insert(id.clone()));
    Some(actions::silence(
        alert.name(),
        &matchers,
        format!(
            "{} is firing in the alert{since}{rule_state}; {checked} was checked at {} and has recovered: {} [{checked_ids}]. Silencing these labels stops repeat notifications of this episode; other alerts are unaffected.",
            alert.name(),
            ctx.obs.now.format("%H:%M UTC"),
            top.summary,
        ),
        evidence,
    ))
}

fn has(signals: &[Signal], analyzer: &str) -> bool {
    signals.iter().any(|s| {
        s.analyzer == analyzer && (s.cause.is_some() || s.analyzer == "crash_loop") && !s.unrelated
    })
}

/// Checks an SRE makes before trusting a diagnosis, each stated with the concrete fact that rules it out.
fn general_ruled_out(ctx: &Ctx, signals: &[Signal], top: Option<&Signal>) -> Vec<RuledOut> {
    let mut out = Vec::new();
    let pods: Vec<_> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p))
        .collect();
    let top_category = top.map(|t| t.category).unwrap_or(Category::Unknown);
    let pod_ev = ctx.ev(&["kubernetes/pods", "kubernetes/events"]);

    // OOM.
    if !has(signals, "oom_killed") && !pods.is_empty() {
        let codes: Vec<String> = pods
            .iter()
            .flat_map(|p| p.containers.iter().map(move |c| (p, c)))
            .filter_map(|(p, c)| last_termination(ctx, p, c).1.map(|n| n.to_string()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let last = match codes.as_slice() {
            [] => "no container has a recorded termination".to_string(),
            [one] => format!("last exit code {one}"),
            many => format!("last exit codes {}", many.join(", ")),
        };
        out.push(RuledOut {
            statement: "Not OOM (not an OOM kill)".into(),
            reason: format!("not OOMKilled: no container terminated with reason OOMKilled or exit code 137; {last}"),
            evidence: pod_ev.clone(),
        });
    }

    // Image pulls.
    if !has(signals, "image_pull") && !pods.is_empty() {
        out.push(RuledOut {
            statement: "Bad image or registry failure".into(),
            reason: "no image pull errors: no ErrImagePull or ImagePullBackOff in pod states or events; the images were pulled".into(),
            evidence: pod_ev.clone(),
        });
    }

    // Probes.
    if !has(signals, "probe_failure") && !pods.is_empty() && !ctx.obs.events.is_empty() {
        out.push(RuledOut {
            statement: "Liveness or readiness probe failures".into(),
            reason: "no Unhealthy events: kubelet reports no failed liveness or readiness probe"
                .into(),
            evidence: ctx.ev(&["kubernetes/events"]),
        });
    }

    // The pod the top (non-benign) hypothesis is about, compared below with its siblings.
    // Its own pod, or the pod of the effect the walk reached it from.
    let failing_pod = top
        .filter(|t| !t.benign)
        .and_then(|t| {
            let effect = walk::effect_of(signals, t).map(|e| e.objects.iter());
            t.objects
                .iter()
                .chain(effect.into_iter().flatten())
                .find_map(|o| o.strip_prefix("pod/"))
        })
        .and_then(|name| pods.iter().find(|p| p.name == name));

    // The failing pod versus its siblings.
    if let Some(pod) = failing_pod {
        let rs = pod_rs(pod);
        let same: Vec<String> = super::checks::pods::unaffected_siblings(ctx, pod)
            .into_iter()
            .filter(|p| pod_rs(p) == rs)
            .map(|p| p.name.clone())
            .collect();
        // Ruled out only when the healthy siblings are at least as many as the pods of that
        // ReplicaSet that are not: one Ready pod of five does not make the failure the pod's own.
        let failing_alike = ctx
            .siblings(pod)
            .into_iter()
            .filter(|p| pod_rs(p) == rs && !p.deleting && !same.contains(&p.name))
            .count()
            + 1;
        if !same.is_empty() && same.len() >= failing_alike {
            let dep = pod_deployment(pod).unwrap_or_default();
            out.push(RuledOut {
                statement: format!("Deployment-wide failure of {dep}"),
                reason: format!(
                    "sibling pods healthy: {} of the same ReplicaSet run the same image and are Running and Ready, so the fault is specific to pod {}",
                    list_names(&same, 3),
                    pod.name
                ),
                evidence: ctx.ev(&["kubernetes/pods"]),
            });
        }
    }

    // Old versus new ReplicaSet during a rollout.
    if let Some(pod) = failing_pod {
        let rs = pod_rs(pod);
        let old: Vec<_> = ctx
            .siblings(pod)
            .into_iter()
            .filter(|p| p.ready() && pod_rs(p) != rs)
            .collect();
        if let Some(first) = old.first() {
            let old_rs = pod_rs(first).unwrap_or_default();
            let images: Vec<String> = first.containers.iter().map(|c| c.image.clone()).collect();
            out.push(RuledOut {
                statement: format!("Old ReplicaSet {old_rs} at fault"),
                reason: format!(
                    "old ReplicaSet {old_rs} pods ({}) run {} and are Running and Ready; only the new ReplicaSet's pods fail",
                    list_names(&old.iter().map(|p| p.name.clone()).collect::<Vec<_>>(), 3),
                    images.join(", ")
                ),
                evidence: ctx.ev(&["kubernetes/pods", "kubernetes/deployments"]),
            });
        }
    }

    // Nodes.
    let node_fault = has(signals, "node_not_ready") || has(signals, "node_pressure");
    let ready_nodes: Vec<&str> = {
        let mut v: Vec<&str> = ctx
            .obs
            .nodes
            .iter()
            .filter(|n| n.ready())
            .map(|n| n.name.as_str())
            .collect();
        v.dedup();
        v
    };
    if !node_fault && !ctx.obs.nodes.is_empty() {
        let hosting: Vec<String> = {
            let mut v: Vec<String> = pods.iter().filter_map(|p| p.node.clone()).collect();
            v.sort();
            v.dedup();
            v
        };
        let named = if hosting.is_empty() {
            list_names(&ready_nodes, 3)
        } else {
            list_names(&hosting, 3)
        };
        out.push(RuledOut {
            statement: "Node failure".into(),
            reason: format!(
                "node Ready: {named} report Ready with no memory, disk or PID pressure"
            ),
            evidence: ctx.ev(&["kubernetes/nodes"]),
        });
    } else if top_category == Category::Infrastructure && !ready_nodes.is_empty() {
        let healthy_pods: Vec<String> = pods
            .iter()
            .filter(|p| p.ready() && p.node.as_deref().is_some_and(|n| ready_nodes.contains(&n)))
            .map(|p| p.name.clone())
            .collect();
        out.push(RuledOut {
            statement: "Application defect".into(),
            reason: format!(
                "application not at fault: on the healthy node {} its pods ({}) are Running and Ready with the same image; only pods on the failed node are affected",
                list_names(&ready_nodes, 2),
                if healthy_pods.is_empty() { "none in scope".to_string() } else { list_names(&healthy_pods, 3) }
            ),
            evidence: ctx.ev(&["kubernetes/nodes", "kubernetes/pods"]),
        });
    }

    // Deploys.
    // A rollout shows as pods of more than one ReplicaSet, pods being replaced, or replicas not yet updated.
    let mut replica_sets: Vec<String> = pods.iter().filter_map(|p| pod_rs(p)).collect();
    replica_sets.sort();
    replica_sets.dedup();
    let updating = super::rollout::deployments_in_scope(ctx)
        .iter()
        .any(|d| d.updated_replicas < d.replicas);
    let rollout = replica_sets.len() > 1 || pods.iter().any(|p| p.deleting) || updating;
    let recent_changes = ctx
        .changes
        .iter()
        .any(|c| c.at.is_some_and(|t| ctx.minutes_ago(t) < 6.0 * 60.0) || c.id == "rollback");
    if !recent_changes
        && !rollout
        && !has(signals, "rollout_stuck")
        && !has(signals, "image_pull")
        && !pods.is_empty()
    {
        let rs = match replica_sets.as_slice() {
            [one] => format!("every pod runs ReplicaSet {one}"),
            _ => "no pod is being replaced".to_string(),
        };
        out.push(RuledOut {
            statement: "Bad deploy".into(),
            reason: format!("no recent deploy: no change recorded in the last 6 hours and {rs} (no rollout in progress)"),
            evidence: ctx.ev(&["changes", "kubernetes/deployments"]),
        });
    }

    // Scheduling and capacity: claimed only when no pod in scope is Pending.
    if !has(signals, "failed_scheduling")
        && !has(signals, "quota_exceeded")
        && !has(signals, "limit_range")
        && !ctx.obs.events.is_empty()
        && !pods.is_empty()
        && pods
            .iter()
            .all(|p| p.phase != "Pending" && p.node.is_some())
    {
        out.push(RuledOut {
            statement: "Scheduling or quota limits".into(),
            reason:
                "no FailedScheduling or exceeded-quota events: every pod was scheduled and created"
                    .into(),
            evidence: ctx.ev(&["kubernetes/events"]),
        });
    }

    // Dependencies, from logs.
    let lines = logs::scoped_lines(ctx);
    let dependency_errors = ctx.subject_hits().iter().any(|h| {
        matches!(
            h.sig,
            Sig::Dns | Sig::NoSuchName | Sig::ConnRefused | Sig::Unreachable | Sig::Timeout
        )
    });
    if top_category != Category::DependencyFailure && !lines.is_empty() && !dependency_errors {
        out.push(RuledOut {
            statement: "Dependency failure".into(),
            reason: format!(
                "no dependency errors: {} log lines show no DNS failures, connection refused or timeouts",
                lines.len()
            ),
            evidence: ctx.ev(&["kubernetes/pod_logs", "logs"]),
        });
    }

    // Monitors.
    let alerting: Vec<_> = ctx
        .obs
        .rules
        .iter()
        .filter(|r| r.rule_type == "alerting" || r.rule_type.is_empty())
        .collect();
    let quiet: Vec<&str> = alerting
        .iter()
        .filter(|r| {
            r.state
                .as_deref()
                .is_none_or(|s| s == "inactive" || s == "ok")
        })
        .map(|r| r.name.as_str())
        .collect();
    if !quiet.is_empty() {
        let firing: Vec<&str> = alerting
            .iter()
            .filter(|r| r.state.as_deref() == Some("firing"))
            .map(|r| r.name.as_str())
            .collect();
        out.push(RuledOut {
            statement: "User-facing impact".into(),
            reason: format!(
                "monitors are OK: {} of {} alerting rules are inactive ({}){}",
                quiet.len(),
                alerting.len(),
                list_names(&quiet, 3),
                if firing.is_empty() {
                    String::new()
                } else {
                    format!("; firing: {}", firing.join(", "))
                }
            ),
            evidence: ctx.ev(&["alert_rules"]),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::model::{Category, ContainerFacts, NodeFacts, PodFacts};
    use crate::reason::{Observations, analyze};
    use chrono::Utc;
    use std::collections::BTreeMap;

    fn pod(name: &str, rs: &str, ready: bool, c: ContainerFacts) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "n".into(),
            phase: "Running".into(),
            node: Some("node-1".into()),
            owner: Some(format!("ReplicaSet/{rs}")),
            created_at: Some(Utc::now() - chrono::Duration::days(3)),
            conditions: BTreeMap::from([(
                "Ready".into(),
                if ready { "True" } else { "False" }.into(),
            )]),
            containers: vec![c],
            ..PodFacts::default()
        }
    }

    /// The evidence a Gather stage would have recorded for these observations.
    fn gathered() -> BTreeMap<String, Vec<String>> {
        ["kubernetes/pods", "kubernetes/events", "kubernetes/nodes"]
            .iter()
            .enumerate()
            .map(|(i, k)| (k.to_string(), vec![format!("ev-{i}")]))
            .collect()
    }

    fn node() -> NodeFacts {
        NodeFacts {
            name: "node-1".into(),
            conditions: BTreeMap::from([("Ready".into(), "True".into())]),
            ..NodeFacts::default()
        }
    }

    #[test]
    fn nothing_wrong_is_healthy_and_rules_out_the_usual_suspects() {
        let ok = ContainerFacts {
            name: "c".into(),
            ready: true,
            state: "running".into(),
            ..ContainerFacts::default()
        };
        let obs = Observations {
            now: Utc::now(),
            pods: vec![pod("a-1-x", "a-1", true, ok)],
            nodes: vec![node()],
            evidence: gathered(),
            ..Observations::default()
        };
        let a = analyze(&obs);
        assert_eq!(a.category, Category::Healthy);
        assert!(a.ruled_out.iter().all(|r| !r.evidence.is_empty()));
        assert!(
            a.root_cause.contains("No failure found"),
            "{}",
            a.root_cause
        );
        let text: String = a
            .ruled_out
            .iter()
            .map(|r| format!("{} {}\n", r.statement, r.reason))
            .collect();
        assert!(
            text.contains("not OOMKilled")
                && text.contains("no image pull errors")
                && text.contains("node Ready"),
            "{text}"
        );
    }

    #[test]
    fn oom_beats_crash_loop_and_rules_out_siblings_and_pulls() {
        let bad = ContainerFacts {
            name: "c".into(),
            state: "waiting".into(),
            reason: Some("CrashLoopBackOff".into()),
            last_reason: Some("OOMKilled".into()),
            last_exit_code: Some(137),
            restart_count: 6,
            memory_limit: Some("128Mi".into()),
            ..ContainerFacts::default()
        };
        let ok = ContainerFacts {
            name: "c".into(),
            ready: true,
            state: "running".into(),
            ..ContainerFacts::default()
        };
        let obs = Observations {
            now: Utc::now(),
            pods: vec![
                pod("a-1-x", "a-1", false, bad),
                pod("a-1-y", "a-1", true, ok),
            ],
            nodes: vec![node()],
            evidence: gathered(),
            ..Observations::default()
        };
        let a = analyze(&obs);
        assert_eq!(a.category, Category::ResourceExhaustion);
        assert!(a.root_cause.contains("exit code 137") && a.root_cause.contains("128Mi"));
        assert!(a.confidence >= 0.8, "{}", a.confidence);
        let text: String = a
            .ruled_out
            .iter()
            .map(|r| format!("{} {}\n", r.statement, r.reason))
            .collect();
        assert!(
            text.contains("sibling pods healthy") && text.contains("no image pull errors"),
            "{text}"
        );
        assert!(!text.contains("not OOMKilled"), "{text}");
        assert_eq!(
            a.suggested_actions.first().map(|x| x.kind.as_str()),
            Some("kubernetes.set_resources")
        );
        assert!(
            a.suggested_actions
                .iter()
                .all(|x| x.id.is_empty() && !x.operation.is_empty())
        );
    }

    #[test]
    fn probe_timeouts_are_a_symptom_of_cpu_saturation() {
        use crate::model::{Alert, K8sEventFacts, Series};
        let ok = ContainerFacts {
            name: "c".into(),
            ready: true,
            state: "running".into(),
            ..ContainerFacts::default()
        };
        let alert = Alert {
            labels: BTreeMap::from([
                ("alertname".into(), "Throttled".into()),
                ("deployment".into(), "a".into()),
            ]),
            generator_url: "http://p/graph?g0.expr=cpu_throttled_ratio+%3E+0.25".into(),
            ..Alert::default()
        };
        let obs = Observations {
            now: Utc::now(),
            alert: Some(alert),
            pods: vec![pod("a-1-x", "a-1", true, ok)],
            events: vec![K8sEventFacts {
                event_type: "Warning".into(),
                reason: "Unhealthy".into(),
                object: "Pod/a-1-x".into(),
                message: "Readiness probe failed: Get \"http://10.0.0.1:8080/ready\": context deadline exceeded".into(),
                count: 4,
                ..K8sEventFacts::default()
            }],
            metrics: vec![Series { name: "cpu_throttled_ratio".into(), points: vec![(0.0, 0.1), (60.0, 0.6)], ..Series::default() }],
            nodes: vec![node()],
            ..Observations::default()
        };
        let a = analyze(&obs);
        assert_eq!(a.category, Category::ResourceExhaustion, "{a:#?}");
        assert!(a.root_cause.contains("CPU limit"), "{}", a.root_cause);
        assert!(
            a.hypotheses
                .iter()
                .any(|h| h.category == Category::ConfigurationError && h.confidence < 0.4),
            "{:?}",
            a.hypotheses
        );
    }

    #[test]
    fn unexplained_unready_pod_is_unknown() {
        let c = ContainerFacts {
            name: "c".into(),
            state: "running".into(),
            ..ContainerFacts::default()
        };
        let obs = Observations {
            now: Utc::now(),
            pods: vec![pod("a-1-x", "a-1", false, c)],
            ..Observations::default()
        };
        assert_eq!(analyze(&obs).category, Category::Unknown);
    }
}
