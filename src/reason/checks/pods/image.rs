//! Image pulls: pods that cannot pull their image, grouped by image, with the registry's answer
//! read for why (a tag that does not exist, refused credentials, a rate limit, a registry out of
//! reach).

use super::{live_pods, namespace};
use crate::model::{Category, PodFacts};
use crate::reason::checks::Basis;
use crate::reason::logs;
use crate::reason::{Ctx, Signal, actions, list_names, pod_deployment, pod_rs};

pub(super) fn pull_mechanism(msg: &str) -> &'static str {
    let m = msg.to_lowercase();
    if m.contains("toomanyrequests") || m.contains("rate limit") || m.contains("429 too many") {
        "the registry rate-limits the node's pulls (toomanyrequests, pull rate limit reached): authenticated pulls or a mirror lift it"
    } else if m.contains("no match for platform") || m.contains("no matching manifest for") {
        "the image has no build for the node's platform (no match for platform in manifest): it was built for another CPU architecture than the node's"
    } else if m.contains("manifest unknown")
        || m.contains("not found")
        || m.contains("does not exist")
    {
        "the tag does not exist in the registry (manifest unknown): the deployed image reference is wrong"
    } else if m.contains("unauthorized")
        || m.contains("denied")
        || m.contains("authentication required")
        || m.contains("forbidden")
    {
        "the registry refuses the pull (unauthorized): imagePullSecrets or registry credentials are wrong"
    } else if m.contains("invalidimagename") || m.contains("invalid reference format") {
        "the image reference is malformed (InvalidImageName)"
    } else if m.contains("timeout")
        || m.contains("no such host")
        || m.contains("connection refused")
    {
        "the registry is unreachable from the node"
    } else {
        "the image cannot be pulled"
    }
}

/// Pods failing to pull one image: (image, pods, messages, state reasons).
type PullGroup<'a> = (String, Vec<&'a PodFacts>, Vec<String>, Vec<String>);

/// ErrImagePull / ImagePullBackOff, with the image and the registry's answer.
pub(crate) fn image_pull(ctx: &Ctx) -> Vec<Signal> {
    const PULL: [&str; 4] = [
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
    ];
    // image -> (pods, messages, state reasons)
    let mut by_image: Vec<PullGroup> = Vec::new();
    for pod in live_pods(ctx) {
        for c in &pod.containers {
            let reason = c.reason.clone().filter(|r| PULL.contains(&r.as_str()));
            let events: Vec<String> = ctx
                .events_for(&pod.name)
                .into_iter()
                .filter(|e| {
                    e.message.contains("pull image")
                        || e.message.contains("pulling image")
                        || PULL.contains(&e.reason.as_str())
                })
                .map(|e| e.message.clone())
                .collect();
            if reason.is_none() && (events.is_empty() || c.ready) {
                continue;
            }
            let slot = match by_image.iter().position(|(i, ..)| i == &c.image) {
                Some(i) => &mut by_image[i],
                None => {
                    by_image.push((c.image.clone(), Vec::new(), Vec::new(), Vec::new()));
                    let last = by_image.len() - 1;
                    &mut by_image[last]
                }
            };
            if !slot.1.iter().any(|p| p.name == pod.name) {
                slot.1.push(pod);
            }
            slot.2.extend(c.message.iter().cloned());
            slot.2.extend(events);
            slot.3.push(reason.unwrap_or_else(|| "ErrImagePull".into()));
        }
    }
    let mut out = Vec::new();
    for (image, pods, messages, reasons) in by_image {
        let Some(first) = pods.first() else { continue };
        let reason = if reasons.iter().any(|r| r == "ImagePullBackOff") {
            "ImagePullBackOff"
        } else {
            reasons[0].as_str()
        };
        // The shortest message that still says why (after the image reference) reads best.
        let message = messages
            .iter()
            .filter(|m| {
                m.rsplit_once("\":")
                    .is_some_and(|(_, why)| !why.trim().is_empty())
            })
            .min_by_key(|m| m.len())
            .or_else(|| messages.first())
            .map(|m| logs::short(m))
            .unwrap_or_default();
        let all = messages.join(" ");
        let mechanism = pull_mechanism(&format!("{all} {reason}"));
        // For a build of the wrong architecture, the architecture of the nodes it landed on.
        let mut arches: Vec<&str> = pods
            .iter()
            .filter_map(|p| p.node.as_deref())
            .filter_map(|n| ctx.obs.nodes.iter().find(|x| x.name == n))
            .filter_map(|n| {
                n.labels
                    .get("kubernetes.io/arch")
                    .or_else(|| n.labels.get("beta.kubernetes.io/arch"))
                    .map(String::as_str)
            })
            .collect();
        arches.sort_unstable();
        arches.dedup();
        let mechanism = if mechanism.contains("platform") && !arches.is_empty() {
            format!("{mechanism} (its nodes are {})", arches.join(", "))
        } else {
            mechanism.to_string()
        };
        let category = if mechanism.contains("unreachable") || mechanism.contains("rate-limits") {
            Category::DependencyFailure
        } else {
            Category::ConfigurationError
        };
        let names: Vec<String> = pods.iter().map(|p| p.name.clone()).collect();
        let dep = pod_deployment(first);
        let rs = pod_rs(first);
        let old_ready: Vec<String> = ctx
            .siblings(first)
            .into_iter()
            .filter(|p| p.ready() && pod_rs(p) != rs)
            .map(|p| p.name.clone())
            .collect();
        let rollout = match (&dep, &rs) {
            (Some(d), Some(r)) if !old_ready.is_empty() => format!(
                "; the new ReplicaSet {r} of deployment {d} cannot start any pod while the old ReplicaSet's pods ({}) keep serving, so the rollout is stuck",
                list_names(&old_ready, 3)
            ),
            (Some(d), _) => format!("; deployment {d} cannot bring these replicas up"),
            _ => String::new(),
        };
        let evidence = ctx.ev(&[
            "kubernetes/pods",
            "kubernetes/events",
            "kubernetes/deployments",
        ]);
        let mut sig = Signal {
            analyzer: "image_pull",
            summary: format!(
                "{} pod(s) in {reason}: image \"{image}\" cannot be pulled ({message})",
                pods.len()
            ),
            detail: format!("pods: {}", list_names(&names, 5)),
            category,
            basis: Basis::Stated,
            links: 2,
            evidence: evidence.clone(),
            cause: Some(format!(
                "Pods {} are in {reason}: kubelet cannot pull image \"{image}\" because {mechanism} (registry said: {message}){rollout}",
                list_names(&names, 3)
            )),
            objects: names.iter().map(|n| format!("pod/{n}")).collect(),
            ..Signal::default()
        };
        if let Some(d) = dep {
            sig.actions.push(actions::rollout_undo(
                namespace(first),
                &d,
                format!("deployment/{d} points at image \"{image}\", which cannot be pulled; rolling back restores the last image that ran"),
                evidence,
            ));
        }
        out.push(sig);
    }
    out
}
