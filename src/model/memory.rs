//! Memory's plain data: one past incident as an index and a recall hold it, operator notes, and
//! the "seen before" summary a recall reads as. No I/O: the index lives in `session::memory`.

use super::diagnosis::SubjectObject;
use super::event::Outcome;
use super::incident::{Incident, TimelineKind};
use super::types::Category;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A note an operator attached to a session (`/note TEXT`): every later recall shows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OperatorNote {
    pub text: String,
    #[serde(default)]
    pub by: String,
    pub at: DateTime<Utc>,
}

/// One action of a past session: what it was, who decided, what it did, whether it was verified.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct PastAction {
    pub kind: String,
    pub target: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, serde_json::Value>,
    /// `executed`, `denied`, `failed`, `skipped`, ... ([`ActionStatus::name`]).
    pub status: String,
    /// Who approved or denied it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decided_by: Vec<String>,
    /// What running it returned, or its error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub result: String,
    /// Whether the re-query after it passed; `None` when it was not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_at: Option<DateTime<Utc>>,
}

impl PastAction {
    /// Executed and verified as a fix.
    pub fn fixed(&self) -> bool {
        self.verified == Some(true)
    }
}

/// One past session as memory holds it: what fired, about what, the verdict, what was done and
/// how it ended, and what the operators noted.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct PastIncident {
    pub id: String,
    pub started: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub alertname: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subject: Vec<SubjectObject>,
    /// The Kubernetes cluster the subject was read in, when the session names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub root_cause: String,
    #[serde(default)]
    pub actions: Vec<PastAction>,
    /// Every verification passed (`true`), one failed (`false`), or nothing was verified.
    #[serde(default)]
    pub verified: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<OperatorNote>,
    /// Seconds from the start to the last event.
    #[serde(default)]
    pub duration: f64,
    /// Why a recall picked it: `same alert fingerprint`, `same alert and subject`, ...
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub matched: String,
}

impl PastIncident {
    /// What memory keeps of a folded session.
    pub fn from_incident(inc: &Incident) -> PastIncident {
        let started = inc.started.unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
        let at = |t: f64| started + chrono::Duration::milliseconds((t * 1000.0) as i64);
        let verified_at = |id: &str| {
            inc.timeline.iter().rev().find_map(|item| match &item.kind {
                TimelineKind::Verification { action_id: Some(a) } if a == id => Some(at(item.t)),
                _ => None,
            })
        };
        let actions = inc
            .actions
            .iter()
            .map(|a| {
                let result = match &a.result {
                    Some(Ok(r)) => r.clone(),
                    Some(Err(e)) => e.clone(),
                    None => a
                        .decisions
                        .iter()
                        .rev()
                        .find(|d| !d.approved)
                        .map(|d| d.reason.clone())
                        .unwrap_or_default(),
                };
                let verified = a
                    .verification
                    .as_ref()
                    .filter(|v| !v.unknown)
                    .map(|v| v.passed);
                PastAction {
                    kind: a.action.kind.clone(),
                    target: a.action.target.clone(),
                    params: a.action.params.clone(),
                    status: a.status.name().to_string(),
                    decided_by: a.decisions.iter().map(|d| d.by.clone()).collect(),
                    result,
                    verified,
                    verified_at: verified.and_then(|_| verified_at(&a.action.id.to_string())),
                }
            })
            .collect();
        let checked: Vec<bool> = inc
            .verifications
            .iter()
            .filter(|v| !v.unknown)
            .map(|v| v.passed)
            .collect();
        let alert = inc.alert.as_ref();
        PastIncident {
            id: inc.id.clone(),
            started,
            title: inc.title.clone(),
            fingerprint: alert
                .map(super::alert::Alert::fingerprint_or_computed)
                .unwrap_or_default(),
            alertname: alert
                .and_then(|a| a.labels.get("alertname").cloned())
                .unwrap_or_default(),
            labels: alert.map(|a| a.labels.clone()).unwrap_or_default(),
            subject: inc.subject.clone(),
            cluster: inc.cluster.clone(),
            category: inc.diagnosis.as_ref().map(|d| d.0),
            root_cause: inc
                .diagnosis
                .as_ref()
                .map(|d| d.1.clone())
                .unwrap_or_default(),
            actions,
            verified: if checked.is_empty() {
                None
            } else {
                Some(checked.iter().all(|p| *p))
            },
            outcome: inc.outcome,
            notes: inc.notes.clone(),
            duration: inc.now,
            matched: String::new(),
        }
    }

    /// Whether an action of this kind and target ran here and was verified as a fix.
    pub fn fixed_by(&self, kind: &str, target: &str) -> Option<&PastAction> {
        self.actions
            .iter()
            .find(|a| a.kind == kind && a.target == target && a.fixed())
    }

    /// The session's actions that were verified as fixes.
    pub fn fixes(&self) -> impl Iterator<Item = &PastAction> {
        self.actions.iter().filter(|a| a.fixed())
    }

    /// Whether this session's subject names `name` (a workload, pod, database, ...).
    pub fn about(&self, name: &str) -> bool {
        !name.is_empty()
            && self
                .subject
                .iter()
                .any(|o| o.name.eq_ignore_ascii_case(name))
    }
}

/// `2 days`, `5 hours`, `12 minutes`: how long a span is, roughly.
fn span_text(secs: i64) -> String {
    let plural = |n: u64, unit: &str| {
        if n == 1 {
            format!("1 {unit}")
        } else {
            format!("{n} {unit}s")
        }
    };
    match secs.max(0).unsigned_abs() {
        s if s >= 2 * 86_400 => plural(s.div_ceil(86_400), "day"),
        s if s >= 2 * 3600 => plural(s.div_ceil(3600), "hour"),
        s => plural(s.div_ceil(60).max(1), "minute"),
    }
}

fn times(n: usize) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

/// The "seen before" panel's lines: how often it fired, what it was diagnosed as, what fixed
/// it (and when that was verified), then the operators' notes. `total` is how many past sessions
/// matched (at least `sessions.len()`); `now` is this session's start.
pub fn seen_before(
    sessions: &[PastIncident],
    total: usize,
    now: Option<DateTime<Utc>>,
) -> Vec<String> {
    if sessions.is_empty() {
        return vec!["not seen before".into()];
    }
    let total = total.max(sessions.len());
    let mut out = Vec::new();
    let first = sessions.iter().map(|s| s.started).min();
    let span = match (first, now) {
        (Some(f), Some(n)) => format!(" in {}", span_text((n - f).num_seconds())),
        _ => String::new(),
    };
    out.push(format!("fired {} before this one{span}", times(total)));
    // Verdicts, most frequent first.
    let mut verdicts: Vec<(Category, usize, &str)> = Vec::new();
    for s in sessions {
        let Some(c) = s.category else { continue };
        match verdicts.iter_mut().find(|v| v.0 == c) {
            Some(v) => v.1 += 1,
            None => verdicts.push((c, 1, s.root_cause.as_str())),
        }
    }
    verdicts.sort_by_key(|v| std::cmp::Reverse(v.1));
    for (c, n, cause) in verdicts {
        out.push(format!("{} diagnosed as {c}: {cause}", times(n)));
    }
    // Fixes: kind and target, with the times each was verified.
    let mut fixes: Vec<(String, Vec<String>)> = Vec::new();
    for s in sessions {
        for a in s.fixes() {
            let key = format!("{} {}", a.kind, a.target);
            let when = a
                .verified_at
                .map(|t| t.format("%m-%d %H:%M").to_string())
                .unwrap_or_else(|| s.started.format("%m-%d").to_string());
            match fixes.iter_mut().find(|f| f.0 == key) {
                Some(f) => f.1.push(when),
                None => fixes.push((key, vec![when])),
            }
        }
    }
    for (key, when) in &fixes {
        out.push(format!(
            "`{key}` fixed it {} (verified {})",
            times(when.len()),
            when.join(", ")
        ));
    }
    if fixes.is_empty() {
        out.push("no verified fix on record".into());
    }
    for s in sessions {
        for n in &s.notes {
            let by = if n.by.is_empty() { "operator" } else { &n.by };
            out.push(format!(
                "note ({by}, {}): {}",
                n.at.format("%m-%d %H:%M"),
                n.text
            ));
        }
    }
    out
}

/// One line per recalled session: when, verdict, what was done, how it ended.
pub fn recalled_line(s: &PastIncident) -> String {
    let verdict = match s.category {
        Some(c) => format!("{c}: {}", s.root_cause),
        None => "no verdict".into(),
    };
    let acts: Vec<String> = s
        .actions
        .iter()
        .map(|a| {
            let v = match a.verified {
                Some(true) => ", verified",
                Some(false) => ", verification failed",
                None => "",
            };
            format!("{} {} ({}{v})", a.kind, a.target, a.status)
        })
        .collect();
    let acts = if acts.is_empty() {
        "no action".to_string()
    } else {
        acts.join("; ")
    };
    let outcome = s.outcome.map(|o| o.name()).unwrap_or("unfinished");
    format!(
        "{} {} - {verdict} - {acts} - {outcome}",
        s.started.format("%Y-%m-%d %H:%M"),
        s.id
    )
}
