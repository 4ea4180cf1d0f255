//! The PersistentVolumeClaims that hold the subject's pods: a claim that does not exist, one
//! Pending on a StorageClass the cluster lacks, or one whose volume is Lost. Read from the objects
//! themselves, so the cause stands when the events that told it have expired.

use super::{Basis, Decl, Role};
use crate::model::{Category, ClaimFacts, PodFacts};
use crate::reason::{Ctx, Signal, list_names};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "claim_missing",
        title: "PersistentVolumeClaim the pod mounts exists",
        concern: "claims",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "claim_class_missing",
        title: "StorageClass a Pending claim asks for exists",
        concern: "claims",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "claim_lost",
        title: "claim's volume is not Lost",
        concern: "claims",
        role: Role::Failure,
        reads: &[],
    },
];

/// What is wrong with one claim, as (check id, category, statement); `None` when nothing read
/// says it holds the pod.
pub(crate) fn fault(c: &ClaimFacts) -> Option<(&'static str, Category, String)> {
    if !c.read {
        return None;
    }
    if c.missing {
        return Some((
            "claim_missing",
            Category::ConfigurationError,
            format!("PersistentVolumeClaim {} does not exist", c.name),
        ));
    }
    match (c.phase.as_str(), &c.storage_class, c.class_exists) {
        ("Pending", Some(class), Some(false)) => Some((
            "claim_class_missing",
            Category::ConfigurationError,
            format!(
                "PersistentVolumeClaim {} is Pending on StorageClass \"{class}\", which the cluster does not have",
                c.name
            ),
        )),
        ("Lost", _, _) => Some((
            "claim_lost",
            Category::Infrastructure,
            format!(
                "PersistentVolumeClaim {} is Lost: the volume bound to it no longer exists",
                c.name
            ),
        )),
        _ => None,
    }
}

/// Check: do the claims the subject's held pods mount exist, and can they be bound?
pub(crate) fn claims(ctx: &Ctx) -> Vec<Signal> {
    if !ctx.subject.resolved {
        return Vec::new();
    }
    // One signal per fault, with every pod it holds.
    let mut found: Vec<(&'static str, Category, String, Vec<&PodFacts>)> = Vec::new();
    for p in ctx.pods().into_iter().filter(|p| {
        ctx.subject.has_pod(p)
            && !p.deleting
            && !matches!(p.phase.as_str(), "Running" | "Succeeded")
    }) {
        for (id, category, statement) in p.claims.iter().filter_map(fault) {
            match found.iter_mut().find(|f| f.2 == statement) {
                Some(f) => f.3.push(p),
                None => found.push((id, category, statement, vec![p])),
            }
        }
    }
    found
        .into_iter()
        .map(|(id, category, statement, pods)| {
            let names: Vec<String> = pods.iter().map(|p| p.name.clone()).collect();
            let summary = format!(
                "{statement}; pod(s) {} mount it and stay {}",
                list_names(&names, 3),
                pods.first().map(|p| p.phase.as_str()).unwrap_or("Pending")
            );
            let remedy = match id {
                "claim_missing" => "create the claim or fix the name the pod mounts",
                "claim_class_missing" => {
                    "give the claim a StorageClass the cluster has, or create that class"
                }
                _ => "restore the volume or recreate the claim from a backup",
            };
            Signal {
                analyzer: id,
                summary: summary.clone(),
                detail: "a pod cannot start until every PersistentVolumeClaim it mounts is bound"
                    .into(),
                category,
                basis: Basis::Stated,
                // The claim and what it asks for, read from the API.
                links: 1,
                evidence: ctx.ev(&["kubernetes/pods"]),
                cause: Some(format!("{summary}: {remedy}")),
                objects: names.iter().map(|n| format!("pod/{n}")).collect(),
                ..Signal::default()
            }
        })
        .collect()
}
