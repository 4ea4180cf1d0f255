//! Diagnosis step 3's conclusion: the verdict settled against the measured symptom (healthy only
//! when it cleared, never on an unmeasured one), read as one causal chain, and the checks listed.

use crate::model::{Category, Check, CheckStatus, RuledOut, Symptom, SymptomState};
use crate::reason::checks::{Basis, Role};
use crate::reason::rank::{Verdict, relation};
use crate::reason::symptom::{self, Claim};
use crate::reason::{Ctx, Signal, walk};

/// Settle the verdict against the symptom.
pub(crate) fn settle(ctx: &Ctx, symptom: &Symptom, top: Option<&Signal>, v: &mut Verdict) {
    match symptom.state {
        SymptomState::ByDesign => {
            v.category = Category::Healthy;
            // The alert's own rule states it fires by design, and the symptom step read it.
            v.confidence = walk::confidence(Basis::Stated.links() + 1);
            v.root_cause = format!("No failure: {}", symptom.detail);
            v.suggested_actions.clear();
        }
        SymptomState::WithinLimits
            if v.category == Category::Unknown && top.is_none_or(|t| t.benign) =>
        {
            v.category = Category::Healthy;
            v.confidence = v.confidence.max(walk::confidence(Basis::Measured.links()));
            v.root_cause = format!(
                "No failure: {}; no failing check in the gathered evidence",
                symptom.detail
            );
        }
        SymptomState::Cleared => {
            if let Some(change) = recovery(ctx, symptom) {
                v.root_cause = format!("{}; the recovery followed {change}", v.root_cause);
            }
            // These read the alert's own condition: the symptom step would say it twice.
            let same_reading = top.is_some_and(|t| t.reads_symptom);
            if v.category == Category::Healthy {
                if !same_reading && !v.root_cause.contains(&symptom.detail) {
                    v.root_cause = format!("{}; symptom cleared: {}", v.root_cause, symptom.detail);
                }
            } else if v.category == Category::Unknown && top.is_none_or(|t| t.benign) {
                v.category = Category::Healthy;
                v.confidence = v.confidence.max(walk::confidence(Basis::Measured.links()));
                v.root_cause = format!(
                    "Recovered: {}; no failing check remains in the gathered evidence",
                    symptom.detail
                );
            }
        }
        SymptomState::Confirmed | SymptomState::Unmeasurable if v.category == Category::Healthy => {
            let seen = top.map(|t| t.summary.clone()).unwrap_or_default();
            v.category = Category::Unknown;
            // The symptom is seen, and nothing says why.
            v.confidence = walk::confidence(Basis::Observed.links());
            v.suggested_actions.clear();
            v.root_cause = if symptom.state == SymptomState::Confirmed {
                format!(
                    "The symptom is present and no cause was found: {}. What could be checked shows no failure ({seen}), so the cause lies outside the gathered evidence",
                    symptom.detail
                )
            } else {
                format!(
                    "Cannot tell: {} ({}), so the symptom can be neither confirmed nor ruled out; nothing failing was found in what could be checked ({seen}), which does not show the symptom is gone",
                    symptom.detail, symptom.claim
                )
            };
        }
        // Nothing found and nothing measured: the verdict says what could not be measured too.
        SymptomState::Unmeasurable
            if v.category == Category::Unknown
                && top.is_none()
                && !v.root_cause.contains(&symptom.detail) =>
        {
            v.root_cause = format!(
                "{}; the symptom could not be measured: {} ({})",
                v.root_cause, symptom.detail, symptom.claim
            );
        }
        SymptomState::Confirmed if v.category != Category::Unknown => {
            let pod_state = matches!(
                symptom::claim(ctx),
                Claim::Restarts | Claim::Availability | Claim::JobFailed | Claim::NodeReady
            );
            let about_subject = top.is_some_and(|t| {
                t.objects.is_empty()
                    || t.objects
                        .iter()
                        .any(|o| relation(ctx, o) == Some("subject"))
            });
            // A cause read off the alert's own series already states the symptom.
            // So does an RDS check: it reads the instance's own CloudWatch series.
            let restates = top.is_some_and(|t| t.reads_symptom);
            if (!pod_state || !about_subject)
                && !restates
                && !v.root_cause.contains(&symptom.detail)
            {
                let cause = v.root_cause.trim_end_matches('.');
                v.root_cause = if cause.contains(", so ") {
                    format!("{cause}, and {}", symptom.detail)
                } else {
                    format!("{cause}; so {}", symptom.detail)
                };
            }
        }
        _ => {}
    }
}

/// A rollback, scale, config or image change that came before the symptom cleared and after it
/// began: what ended it.
fn recovery(ctx: &Ctx, symptom: &Symptom) -> Option<String> {
    let end = symptom.cleared_at.unwrap_or(ctx.obs.now);
    let start = symptom.onset;
    let fits = |c: &crate::model::Change| match c.at {
        // The last sample read is a scrape before the end: a change within a step of it counts.
        Some(t) => {
            t <= end + chrono::Duration::minutes(2)
                && start.is_none_or(|s| t >= s)
                && (end - t).num_minutes() <= 60
        }
        // A rollback seen only in the revisions has no time: it still ended the bad revision.
        None => c.id == "rollback",
    };
    // Only a change to the subject itself can be what ended its symptom.
    let to_subject = |c: &crate::model::Change| {
        let name = c.target.rsplit('/').next().unwrap_or_default();
        !ctx.subject.resolved || ctx.subject.workloads.iter().any(|(_, n)| n == name)
    };
    let c = ctx
        .changes
        .iter()
        .filter(|c| {
            fits(c)
                && to_subject(c)
                && (c.id == "rollback"
                    || c.id.starts_with("scale")
                    || c.id == "rescale"
                    || c.kind == crate::model::ChangeKind::Config)
        })
        .max_by_key(|c| c.at)?;
    let when =
        c.at.map(|t| format!(" at {}", t.format("%H:%M UTC")))
            .unwrap_or_default();
    Some(format!("{}{when}", c.title))
}

/// Every check made, failing first: the signals (on the subject or a neighbour, with the edge),
/// what was ruled out (ok), and what could not be looked at (unknown).
pub(crate) fn checks(ctx: &Ctx, signals: &[Signal], ruled_out: &[RuledOut]) -> Vec<Check> {
    let mut out: Vec<Check> = Vec::new();
    // The alert's own series, its level and its step, are the symptom step's, not checks.
    let own = crate::reason::metrics::parsed_alert(ctx).map(|p| p.base);
    let is_symptom = |s: &Signal| {
        let decl = s.decl();
        decl.role == Role::Symptom
            || (decl.reads_series() && own.as_deref().is_some_and(|b| s.summary.starts_with(b)))
    };
    let by_design = crate::reason::symptom::by_design(ctx);
    for s in signals {
        if is_symptom(s) {
            continue;
        }
        let noticed = s.unrelated;
        if s.cause.is_none() && !noticed {
            continue;
        }
        let object = s.objects.first().cloned().unwrap_or_default();
        let status = if noticed {
            CheckStatus::Failing
        } else if s.history {
            CheckStatus::History
        } else if !s.benign {
            CheckStatus::Failing
        } else {
            CheckStatus::Ok
        };
        // An alert that fires by design has no subject: nothing else is linked to it.
        let relation = if noticed || by_design {
            "no evidenced edge"
        } else if object.is_empty() {
            "subject"
        } else {
            relation(ctx, &object).unwrap_or("no evidenced edge")
        };
        out.push(Check {
            object,
            relation: relation.to_string(),
            check: match s.decl().title {
                "" => s.analyzer.replace('_', " "),
                title => title.to_string(),
            },
            status,
            detail: s.summary.clone(),
            since: s.since,
            until: s.until,
            evidence: s.evidence.clone(),
        });
    }
    for r in ruled_out {
        out.push(Check {
            object: String::new(),
            relation: "subject".to_string(),
            check: r.statement.clone(),
            status: CheckStatus::Ok,
            detail: r.reason.clone(),
            since: None,
            until: None,
            evidence: r.evidence.clone(),
        });
    }
    for gap in crate::reason::coverage::gaps(ctx) {
        out.push(Check {
            object: String::new(),
            relation: "subject".to_string(),
            check: "evidence".to_string(),
            status: CheckStatus::Unknown,
            detail: gap,
            since: None,
            until: None,
            evidence: Vec::new(),
        });
    }
    let order = |s: CheckStatus| match s {
        CheckStatus::Failing => 0,
        CheckStatus::History => 1,
        CheckStatus::Unknown => 2,
        CheckStatus::Ok => 3,
    };
    out.sort_by_key(|c| order(c.status));
    out
}
