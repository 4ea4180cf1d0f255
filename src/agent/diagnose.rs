//! The Diagnose stage as a pure function of the observations (analyzers, then the runbook's
//! diagnose steps), and its re-run on a saved session (`sitrep diagnose`): both go through
//! [`diagnose`], so a live verdict and a re-diagnosis cannot drift.

use super::observe::ObservationLog;
use super::runbook_steps;
use super::specialists::Scope;
use crate::model::{
    Category, Check, Event, EvidenceId, Finding, Hypothesis, Incident, RuledOut, SubjectObject,
    Symptom,
};
use crate::reason::{self, Analysis, Observations};
use crate::runbook::Runbook;
use serde::{Deserialize, Serialize};

/// The analyzer name of findings that come from past sessions rather than this one's evidence.
pub const MEMORY_ANALYZER: &str = "memory";

/// What a diagnosis concluded, as recorded in the session and as `sitrep diagnose` prints it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Verdict {
    pub category: Category,
    /// 0.0 ..= 1.0
    pub confidence: f32,
    pub root_cause: String,
    /// Analyzers' findings, then the runbook's, in the order they were emitted.
    pub findings: Vec<Finding>,
    /// Best first.
    pub hypotheses: Vec<Hypothesis>,
    pub ruled_out: Vec<RuledOut>,
    /// Diagnosis step 1: the subject's objects and how each was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subject: Vec<SubjectObject>,
    /// Diagnosis step 2: the symptom as measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symptom: Option<Symptom>,
    /// Diagnosis step 3: the checks, failing first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
}

impl Verdict {
    /// The verdict a session recorded; `None` when it never reached a diagnosis.
    pub fn recorded(incident: &Incident) -> Option<Verdict> {
        let (category, root_cause, confidence) = incident.diagnosis.clone()?;
        Some(Verdict {
            category,
            confidence,
            root_cause,
            // Memory's context (a recurring alert, a past verdict contradicted) is recorded beside
            // the verdict, not part of it: it rests on other sessions, not this one's evidence.
            findings: incident
                .findings
                .iter()
                .filter(|f| f.analyzer != MEMORY_ANALYZER)
                .cloned()
                .collect(),
            hypotheses: incident.hypotheses.clone(),
            ruled_out: incident.ruled_out.clone(),
            subject: incident.subject.clone(),
            symptom: incident.symptom.clone(),
            checks: incident.checks.clone(),
        })
    }

    /// Every evidence id the verdict cites, with what cites it (`finding 2`, `ruled out 1`, ...).
    pub fn citations(&self) -> Vec<(String, EvidenceId)> {
        let mut out = Vec::new();
        for (n, f) in self.findings.iter().enumerate() {
            for id in &f.evidence {
                out.push((format!("finding {} ({})", n + 1, f.analyzer), id.clone()));
            }
        }
        for (n, h) in self.hypotheses.iter().enumerate() {
            for id in &h.evidence {
                out.push((format!("hypothesis {}", n + 1), id.clone()));
            }
        }
        for (n, r) in self.ruled_out.iter().enumerate() {
            for id in &r.evidence {
                out.push((format!("ruled out {}", n + 1), id.clone()));
            }
        }
        out
    }
}

/// The Diagnose stage's result: the analysis (for Recommend), the runbook template context, and
/// the runbook's steps in order (a finding, or a warning for a step that could not run).
pub struct Diagnosed {
    pub analysis: Analysis,
    pub ctx: serde_json::Value,
    pub runbook_steps: Vec<Result<Finding, String>>,
    /// The Kubernetes cluster the subject was read in, as the scope names it.
    pub cluster: Option<String>,
}

impl Diagnosed {
    pub fn verdict(&self) -> Verdict {
        let a = &self.analysis;
        let mut findings = a.findings.clone();
        findings.extend(self.runbook_steps.iter().filter_map(|s| s.clone().ok()));
        Verdict {
            category: a.category,
            confidence: a.confidence,
            root_cause: a.root_cause.clone(),
            findings,
            hypotheses: a.hypotheses.clone(),
            ruled_out: a.ruled_out.clone(),
            subject: a.subject.clone(),
            symptom: Some(a.symptom.clone()),
            checks: a.checks.clone(),
        }
    }

    /// The events Diagnose records, in order.
    pub fn events(&self) -> Vec<Event> {
        let a = &self.analysis;
        let mut out: Vec<Event> = a
            .findings
            .iter()
            .map(|f| Event::Finding { finding: f.clone() })
            .collect();
        out.extend(self.runbook_steps.iter().map(|s| match s {
            Ok(f) => Event::Finding { finding: f.clone() },
            Err(message) => Event::Warning {
                message: message.clone(),
            },
        }));
        out.push(Event::Subject {
            objects: a.subject.clone(),
            cluster: self.cluster.clone(),
        });
        out.push(Event::Symptom {
            symptom: a.symptom.clone(),
        });
        out.push(Event::Checks {
            checks: a.checks.clone(),
        });
        out.push(Event::HypothesesRanked {
            hypotheses: a.hypotheses.clone(),
            ruled_out: a.ruled_out.clone(),
        });
        out.push(Event::Diagnosis {
            category: a.category,
            root_cause: a.root_cause.clone(),
            confidence: a.confidence,
        });
        out
    }
}

/// Diagnose: run the analyzers, then the runbook's diagnose steps.
pub fn diagnose(obs: &Observations, scope: &Scope, runbook: Option<&Runbook>) -> Diagnosed {
    let analysis = reason::analyze(obs);
    let ctx = runbook_steps::context(scope, obs, Some(&analysis));
    let runbook_steps = runbook
        .map(|rb| runbook_steps::findings(rb, &ctx, obs))
        .unwrap_or_default();
    Diagnosed {
        analysis,
        ctx,
        runbook_steps,
        cluster: scope.cluster.clone(),
    }
}

/// A saved session diagnosed again.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Rediagnosis {
    pub verdict: Verdict,
    /// What the session itself concluded, when it got that far.
    pub recorded: Option<Verdict>,
    /// Facts records folded into the observations.
    pub facts: usize,
    /// Evidence items the observations rest on.
    pub evidence: usize,
    /// Anything that makes this re-diagnosis differ from the live one (a runbook not found, facts
    /// not tied to a call, steps that could not run).
    pub notes: Vec<String>,
    /// Who reasoned in the re-run: `rules`, or the rules then the model replayed from the
    /// session's recorded exchanges (offline).
    pub reasoner: String,
}

impl Rediagnosis {
    /// Whether the re-run reached exactly the recorded verdict.
    pub fn matches_recorded(&self) -> bool {
        let Some(r) = self.recorded.as_ref() else {
            return false;
        };
        let v = &self.verdict;
        // A session written before the steps were recorded is compared on the verdict alone.
        let steps_recorded = r.symptom.is_some();
        r.category == v.category
            && r.confidence == v.confidence
            && r.root_cause == v.root_cause
            && r.findings == v.findings
            && r.hypotheses == v.hypotheses
            && r.ruled_out == v.ruled_out
            && (!steps_recorded
                || (r.subject == v.subject && r.symptom == v.symptom && r.checks == v.checks))
    }
}

/// Why a session cannot be diagnosed again.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RediagnoseError {
    #[error("the session stops before Triage: there is nothing to diagnose")]
    NotTriaged,
    #[error(
        "the session was written before sitrep recorded the facts it reasons over \
         (no world clock in its Triage); it replays and exports, but cannot be re-diagnosed"
    )]
    NoFacts,
}

/// Re-run Diagnose on a session's events, against these runbooks (the recorded runbook is looked
/// up by name among them).
pub fn rediagnose(events: &[Event], runbooks: &[Runbook]) -> Result<Rediagnosis, RediagnoseError> {
    rediagnose_stream(events, runbooks)
}

/// [`rediagnose`] over events as they are read, in one pass: only the folds are kept, never the
/// log, so a session file of any length re-diagnoses in the space of its facts.
pub fn rediagnose_stream<E: std::borrow::Borrow<Event>>(
    events: impl IntoIterator<Item = E>,
    runbooks: &[Runbook],
) -> Result<Rediagnosis, RediagnoseError> {
    let mut log = ObservationLog::new();
    let mut incident = Incident::new();
    let mut trace = super::model::ModelTrace::default();
    for e in events {
        let e = e.borrow();
        trace.observe(e, &incident);
        incident.apply(0.0, e);
        log.apply(e, &incident);
    }
    if !log.triaged {
        return Err(RediagnoseError::NotTriaged);
    }
    let scope = log.scope(&incident).ok_or(RediagnoseError::NoFacts)?;
    let obs = log.observations(&incident);
    let mut notes = Vec::new();
    let runbook = match &incident.runbook {
        Some(name) => {
            let found = runbooks.iter().find(|r| &r.name == name);
            if found.is_none() {
                notes.push(format!(
                    "runbook {name} is not available here: its diagnose steps were not re-run"
                ));
            }
            found
        }
        None => None,
    };
    if !log.orphans.is_empty() {
        notes.push(format!(
            "{} facts record(s) name evidence no tool call produced, and were left out: {}",
            log.orphans.len(),
            log.orphans.join(", ")
        ));
    }
    let mut diagnosed = diagnose(&obs, &scope, runbook);
    // An LLM session: its recorded exchanges replayed through the same loop, offline.
    let reasoner = match super::model::rediagnose(trace, &incident, &mut diagnosed.analysis) {
        None => "rules".to_string(),
        Some(r) => {
            if !r.requests_match {
                notes.push(
                    "the model's requests built again differ from the recorded ones (the rules' \
                     findings or the evidence changed); its answers were replayed as recorded"
                        .into(),
                );
            }
            if let Some(e) = &r.failed {
                notes.push(format!(
                    "the replayed model gave no answer ({e}): the rules' verdict stands"
                ));
            }
            format!(
                "rules, then the model {} replayed from {} recorded exchange(s), offline",
                r.model, r.exchanges
            )
        }
    };
    notes.extend(
        diagnosed
            .runbook_steps
            .iter()
            .filter_map(|s| s.clone().err()),
    );
    Ok(Rediagnosis {
        verdict: diagnosed.verdict(),
        recorded: Verdict::recorded(&incident),
        facts: log.observed,
        evidence: obs.evidence.values().map(Vec::len).sum(),
        notes,
        reasoner,
    })
}
