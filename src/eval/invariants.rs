//! Invariants every finished diagnosis keeps, whatever the incident: a check's status never
//! contradicts its own detail, `healthy` stands only on a cleared, by-design or within-limits
//! symptom with nothing failing on the subject, and a named cause stands on a failing check with
//! an evidenced edge to the subject.

use crate::model::{Category, CheckStatus, Incident, SymptomState};

/// Words that, quoted from evidence, report a failure.
const FAILURE_WORDS: &[&str] = &[
    "ran out",
    "out of storage",
    "out of memory",
    "oomkilled",
    "crashloopbackoff",
    "imagepullbackoff",
    "errimagepull",
    "connection refused",
    "timed out",
    "insufficient",
    "critically low",
    "storage-full",
    "back-off",
    "evicted",
    "failedscheduling",
    "failedmount",
];

/// The parts of `text` inside double quotes: what a detail quotes from the evidence. A label
/// matcher's value (`reason="CrashLoopBackOff"` in a query) is a query's words, not a quote.
fn quoted(text: &str) -> Vec<&str> {
    let parts: Vec<&str> = text.split('"').collect();
    parts
        .iter()
        .enumerate()
        .skip(1)
        .step_by(2)
        .filter(|(i, _)| !parts[i - 1].ends_with(['=', '~']))
        .map(|(_, q)| *q)
        .collect()
}

/// Every invariant the incident breaks, one line each; empty when it keeps them all.
pub fn violations(incident: &Incident) -> Vec<String> {
    let mut out = Vec::new();
    for c in &incident.checks {
        if c.status != CheckStatus::Ok {
            continue;
        }
        for q in quoted(&c.detail) {
            let lower = q.to_lowercase();
            if let Some(w) = FAILURE_WORDS.iter().find(|w| lower.contains(*w)) {
                out.push(format!(
                    "check \"{}\" is ok but its detail quotes a failure ({w}): {}",
                    c.check, c.detail
                ));
            }
        }
    }
    let category = incident.diagnosis.as_ref().map(|d| d.0);
    let state = incident.symptom.as_ref().map(|s| s.state);
    // A cause is a failing check on the subject or on something an evidenced edge ties to it;
    // checks are only recorded by diagnoses that took the three steps.
    let named_cause = category.is_some_and(|c| c != Category::Healthy && c != Category::Unknown);
    if named_cause
        && !incident.checks.is_empty()
        && !incident
            .checks
            .iter()
            .any(|c| c.status == CheckStatus::Failing && c.relation != "no evidenced edge")
    {
        out.push(format!(
            "the cause ({}) stands on no failing check with an evidenced edge to the subject",
            category.map(|c| c.name()).unwrap_or_default()
        ));
    }
    if category == Some(Category::Healthy) {
        if !matches!(
            state,
            Some(SymptomState::Cleared | SymptomState::ByDesign | SymptomState::WithinLimits)
        ) {
            out.push(format!(
                "healthy on a symptom that is {}",
                state
                    .map(|s| format!("{s:?}"))
                    .unwrap_or_else(|| "not measured".into())
            ));
        }
        for c in &incident.checks {
            if c.status == CheckStatus::Failing && c.relation == "subject" {
                out.push(format!(
                    "healthy with a failing check on the subject: {}: {}",
                    c.check, c.detail
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Check, Symptom};

    fn check(status: CheckStatus, relation: &str, detail: &str) -> Check {
        Check {
            object: String::new(),
            relation: relation.into(),
            check: "storage".into(),
            status,
            detail: detail.into(),
            since: None,
            until: None,
            evidence: vec![],
        }
    }

    #[test]
    fn an_ok_check_quoting_a_failure_and_a_healthy_verdict_on_a_present_symptom_are_caught() {
        let mut inc = Incident {
            checks: vec![check(
                CheckStatus::Ok,
                "subject",
                "free storage 1–2 GB; event \"The instance ran out of storage space\"",
            )],
            diagnosis: Some((Category::Healthy, "fine".into(), 0.5)),
            symptom: Some(Symptom {
                state: SymptomState::Confirmed,
                ..Symptom::default()
            }),
            ..Incident::default()
        };
        let v = violations(&inc);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].contains("quotes a failure (ran out)"), "{v:?}");
        assert!(
            v[1].contains("healthy on a symptom that is Confirmed"),
            "{v:?}"
        );
        inc.checks = vec![check(
            CheckStatus::Ok,
            "subject",
            "not OOMKilled: no container terminated with it",
        )];
        inc.symptom = Some(Symptom {
            state: SymptomState::Cleared,
            ..Symptom::default()
        });
        assert!(violations(&inc).is_empty(), "{:?}", violations(&inc));
        // A query's label matcher is not a quote from the evidence.
        inc.checks = vec![check(
            CheckStatus::Ok,
            "subject",
            "back under threshold: max_over_time(kube_pod_container_status_waiting_reason{reason=\"CrashLoopBackOff\"}[5m]) is 0 now",
        )];
        assert!(violations(&inc).is_empty(), "{:?}", violations(&inc));
    }

    #[test]
    fn a_cause_needs_a_failing_check_with_an_edge_to_the_subject() {
        let mut inc = Incident {
            checks: vec![
                check(
                    CheckStatus::Failing,
                    "no evidenced edge",
                    "node other NotReady",
                ),
                check(CheckStatus::Ok, "subject", "pods Ready"),
            ],
            diagnosis: Some((Category::Infrastructure, "node down".into(), 0.7)),
            ..Incident::default()
        };
        let v = violations(&inc);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("no failing check with an evidenced edge"),
            "{v:?}"
        );
        inc.checks[0].relation = "node of the subject".into();
        assert!(violations(&inc).is_empty(), "{:?}", violations(&inc));
    }
}
