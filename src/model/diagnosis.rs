//! The three recorded steps of a diagnosis as plain data: the subject, the symptom, the checks.

use super::types::EvidenceId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One object the alert or problem is about, and how it was found.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct SubjectObject {
    /// `Pod`, `Deployment`, `StatefulSet`, `DaemonSet`, `Job`, `CronJob`, `ReplicaSet`, `Node`,
    /// `Namespace`, `Container`, `Service`, `HorizontalPodAutoscaler`, `PersistentVolumeClaim`,
    /// `Database`.
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// How it was found: `label deployment=checkout`, `selector app=checkout`,
    /// `ownerReferences ReplicaSet/checkout-7f9d`, `job-name label`, `named in the problem`.
    pub how: String,
}

impl SubjectObject {
    /// `Kind/name`.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

/// Whether what the alert claims is happening, as measured.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SymptomState {
    /// Measured and present now.
    Confirmed,
    /// Measured back to normal, or the alert resolved.
    Cleared,
    /// Nothing available could measure it.
    #[default]
    Unmeasurable,
    /// The alert fires by design (a watchdog or dead man's switch): firing is the normal state.
    ByDesign,
    /// Measured: the value the alert watches stays within the resource's hard limit and has not
    /// departed from its own level; a warning threshold crossed with nothing failing.
    WithinLimits,
}

impl SymptomState {
    pub fn name(self) -> &'static str {
        match self {
            SymptomState::Confirmed => "confirmed",
            SymptomState::Cleared => "cleared",
            SymptomState::Unmeasurable => "unmeasurable",
            SymptomState::ByDesign => "by design",
            SymptomState::WithinLimits => "within limits",
        }
    }
}

/// The symptom step: what the alert claims, and what measuring it found.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct Symptom {
    pub state: SymptomState,
    /// What the alert or problem claims, in words (`payments-api 5xx error rate above 1/s`).
    pub claim: String,
    /// What was measured (values and times), or what is missing when unmeasurable.
    pub detail: String,
    /// When the symptom began, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onset: Option<DateTime<Utc>>,
    /// When it cleared, for a cleared symptom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleared_at: Option<DateTime<Utc>>,
    pub evidence: Vec<EvidenceId>,
}

/// The outcome of one check.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Ok,
    Failing,
    /// A failure that ended before the subject recovered.
    History,
    #[default]
    Unknown,
}

impl CheckStatus {
    pub fn name(self) -> &'static str {
        match self {
            CheckStatus::Ok => "ok",
            CheckStatus::Failing => "failing",
            CheckStatus::History => "history",
            CheckStatus::Unknown => "unknown",
        }
    }
}

/// One check of the cause step, on the subject or a neighbour along an evidenced edge.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct Check {
    /// The object checked (`pod/x`, `node/y`, `deployment/z`), or empty for the subject as a whole.
    pub object: String,
    /// How the object relates to the subject: `subject`, `node of the subject`, `dependency named
    /// in its logs`, `change to it`, or `no evidenced edge` (reported under "also noticed").
    pub relation: String,
    /// What was checked (`container restarts`, `image pull`, `node Ready`, ...).
    pub check: String,
    pub status: CheckStatus,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// When the failure ended, for one that did (history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    pub evidence: Vec<EvidenceId>,
}

/// The three steps as text, one line each (markdown list items): what `sitrep diagnose`, the
/// report and the export print before the findings.
pub fn steps_text(
    subject: &[SubjectObject],
    symptom: Option<&Symptom>,
    checks: &[Check],
) -> String {
    let mut out = String::new();
    out.push_str("\nsubject:\n");
    if subject.is_empty() {
        out.push_str("- nothing resolved from the alert's labels or the problem's words\n");
    }
    for o in subject {
        let ns = if o.namespace.is_empty() {
            String::new()
        } else {
            format!(" in {}", o.namespace)
        };
        out.push_str(&format!("- {}{ns} ({})\n", o.reference(), o.how));
    }
    if let Some(s) = symptom {
        out.push_str(&format!(
            "\nsymptom: {}\n- claim: {}\n- {}\n",
            s.state.name(),
            s.claim,
            s.detail
        ));
        if let Some(t) = s.onset {
            out.push_str(&format!("- onset: {}\n", t.format("%Y-%m-%d %H:%M:%S UTC")));
        }
        if let Some(t) = s.cleared_at {
            out.push_str(&format!(
                "- cleared: {}\n",
                t.format("%Y-%m-%d %H:%M:%S UTC")
            ));
        }
    }
    if !checks.is_empty() {
        out.push_str("\nchecks:\n");
        for c in checks {
            let on = if c.object.is_empty() {
                String::new()
            } else {
                format!(" on {} ({})", c.object, c.relation)
            };
            let window = match (c.since, c.until) {
                (Some(a), Some(b)) => {
                    format!(
                        " (from {} to {})",
                        a.format("%H:%M UTC"),
                        b.format("%H:%M UTC")
                    )
                }
                (Some(a), None) => format!(" (since {})", a.format("%H:%M UTC")),
                (None, Some(b)) => format!(" (until {})", b.format("%H:%M UTC")),
                (None, None) => String::new(),
            };
            out.push_str(&format!(
                "- [{}] {}{on}{window}: {}\n",
                c.status.name(),
                c.check,
                c.detail
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_check_shows_when_it_failed_and_when_that_ended() {
        let at = |h, m| Utc.with_ymd_and_hms(2026, 3, 11, h, m, 0).single();
        let check = |since, until| Check {
            object: "pod/web-1".into(),
            relation: "subject".into(),
            check: "probe history".into(),
            status: CheckStatus::History,
            detail: "flapped".into(),
            since,
            until,
            evidence: vec![],
        };
        let text = steps_text(&[], None, &[check(at(14, 5), at(14, 9))]);
        assert!(
            text.contains("(subject) (from 14:05 UTC to 14:09 UTC): flapped"),
            "{text}"
        );
        let text = steps_text(&[], None, &[check(at(14, 5), None)]);
        assert!(text.contains("(since 14:05 UTC): flapped"), "{text}");
        let text = steps_text(&[], None, &[check(None, None)]);
        assert!(text.contains("(subject): flapped"), "{text}");
    }
}
