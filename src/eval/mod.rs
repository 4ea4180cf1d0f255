//! Scores finished sessions against a case's expect.toml, and runs case directories headless to do so.

pub mod invariants;
pub mod metamorphic;
pub mod opensre;
mod runner;

use crate::model::{Category, Incident};
use crate::world::Expect;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use runner::{find_cases, run, run_case};

/// How `sitrep eval` runs.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// Longest one case may take before it counts as failed.
    pub case_timeout: Duration,
    /// Print a row per case (and the totals) to stdout as cases finish.
    pub print: bool,
    /// The model that reasons after the rules (`--reasoner llm`); `None` is the rules alone.
    pub model: Option<crate::agent::llm::Model>,
    /// Each case's model answers from its recorded exchanges (`llm.ndjson`), offline.
    pub replay_llm: bool,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            case_timeout: Duration::from_secs(120),
            model: None,
            replay_llm: false,
            print: true,
        }
    }
}

/// How one session measured up against one rubric.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Score {
    pub category: Option<Category>,
    pub expected: Option<Category>,
    /// Why the case failed; empty when it passed.
    pub failures: Vec<String>,
    /// Ruling-out keywords found in the ruled-out text.
    pub ruling_hits: usize,
    pub ruling_total: usize,
    /// Ruling-out keywords that were not found.
    pub ruling_missed: Vec<String>,
    /// Required keywords found only elsewhere in the report (its evidence titles, the alert's
    /// words), not in what was concluded: they fail the case, and the lenient score forgives them.
    pub report_only: Vec<String>,
    /// The only failure is required keywords that the report holds elsewhere.
    pub lenient_pass: bool,
}

impl Score {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// Whether the case would pass if keywords anywhere in the report counted, as they once did.
    pub fn passed_lenient(&self) -> bool {
        self.failures.is_empty() || self.lenient_pass
    }

    /// Share of ruling-out keywords found; None when the rubric lists none.
    pub fn recall(&self) -> Option<f32> {
        (self.ruling_total > 0).then(|| self.ruling_hits as f32 / self.ruling_total as f32)
    }
}

/// The report text keywords are checked against: the session's own report, else the export of the fold.
pub fn report_text(incident: &Incident) -> String {
    match &incident.report {
        Some(r) if !r.trim().is_empty() => r.clone(),
        _ => crate::session::export::markdown(incident),
    }
}

/// What sitrep concluded, as one text: the root cause, every hypothesis and what was ruled out.
/// Required keywords are judged here, never against the case's name, the alert's own words or
/// the evidence titles that the report also quotes.
pub fn concluded_text(incident: &Incident) -> String {
    let mut out = String::new();
    if let Some((_, cause, _)) = &incident.diagnosis {
        out.push_str(cause);
        out.push('\n');
    }
    for h in &incident.hypotheses {
        out.push_str(&h.statement);
        out.push('\n');
    }
    out.push_str(&ruled_out_text(incident));
    out
}

/// What was ruled out, as one text: each statement and its reason.
pub fn ruled_out_text(incident: &Incident) -> String {
    incident
        .ruled_out
        .iter()
        .map(|r| format!("{}: {}", r.statement, r.reason))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Scores a finished incident against a rubric. Pure: no I/O.
pub fn score(expect: &Expect, incident: &Incident) -> Score {
    let mut s = Score {
        category: incident.diagnosis.as_ref().map(|d| d.0),
        expected: expect.category,
        ..Score::default()
    };
    let got = s.category;
    match (expect.category, got) {
        (Some(want), Some(got)) if want != got => {
            s.failures.push(format!("category {got}, expected {want}"))
        }
        (Some(want), None) => s
            .failures
            .push(format!("no diagnosis, expected category {want}")),
        _ => {}
    }
    if let Some(got) = got
        && expect.forbidden_categories.contains(&got)
    {
        s.failures.push(format!("category {got} is forbidden"));
    }
    let concluded = concluded_text(incident).to_lowercase();
    let report = report_text(incident).to_lowercase();
    let missing: Vec<&str> = expect
        .required_keywords
        .iter()
        .filter(|k| !concluded.contains(&k.to_lowercase()))
        .map(String::as_str)
        .collect();
    let mut lenient_only = false;
    if !missing.is_empty() {
        s.report_only = missing
            .iter()
            .filter(|k| report.contains(&k.to_lowercase()))
            .map(|k| k.to_string())
            .collect();
        lenient_only = s.failures.is_empty() && s.report_only.len() == missing.len();
        s.failures
            .push(format!("diagnosis lacks {}", quote_all(&missing)));
    }
    let present: Vec<&str> = expect
        .forbidden_keywords
        .iter()
        .filter(|k| !k.is_empty() && report.contains(&k.to_lowercase()))
        .map(String::as_str)
        .collect();
    if !present.is_empty() {
        s.failures
            .push(format!("report contains forbidden {}", quote_all(&present)));
    }
    let cause = incident
        .diagnosis
        .as_ref()
        .map(|d| d.1.to_lowercase())
        .unwrap_or_default();
    let stated: Vec<&str> = expect
        .forbidden_cause_keywords
        .iter()
        .filter(|k| !k.is_empty() && cause.contains(&k.to_lowercase()))
        .map(String::as_str)
        .collect();
    if !stated.is_empty() {
        s.failures.push(format!(
            "root cause states forbidden {}",
            quote_all(&stated)
        ));
    }
    let kinds = incident.evidence_kinds();
    let unconsulted: Vec<&str> = expect
        .required_evidence
        .iter()
        .filter(|k| !kinds.contains(&k.as_str()))
        .map(String::as_str)
        .collect();
    if !unconsulted.is_empty() {
        s.failures.push(format!(
            "evidence not consulted: {}",
            unconsulted.join(", ")
        ));
    }
    let ruled = ruled_out_text(incident).to_lowercase();
    s.lenient_pass = lenient_only && s.failures.len() == 1;
    s.ruling_total = expect.ruling_out_keywords.len();
    for k in &expect.ruling_out_keywords {
        if ruled.contains(&k.to_lowercase()) {
            s.ruling_hits += 1;
        } else {
            s.ruling_missed.push(k.clone());
        }
    }
    s
}

fn quote_all(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One case's result.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub id: String,
    pub dir: PathBuf,
    pub score: Score,
    /// A case that could not run at all (bad case dir, agent error, timeout).
    pub error: Option<String>,
    pub elapsed: Duration,
    /// Model steps (investigation requests) and tokens in/out; zero with the rules alone.
    pub model_steps: u32,
    pub tokens: (u64, u64),
    /// The verdict's root-cause sentence, when the investigation reached one.
    pub root_cause: Option<String>,
    /// Invariants the diagnosis broke (see [`invariants`]); a case that breaks one fails.
    pub broken: Vec<String>,
    /// The evidence kinds the leading hypothesis cites: what its verdict stands on.
    pub cited_kinds: Vec<String>,
    /// Evidence kinds gathered that no hypothesis, ruled-out statement, check or symptom cites:
    /// what the diagnosis does not use.
    pub unused_kinds: Vec<String>,
}

impl CaseResult {
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.score.passed() && self.broken.is_empty()
    }
}

impl fmt::Display for CaseResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = if self.passed() { "PASS" } else { "FAIL" };
        let got = self.score.category.map(|c| c.name()).unwrap_or("-");
        let recall = match self.score.recall() {
            Some(r) => format!(
                "{}/{} ({:.0}%)",
                self.score.ruling_hits,
                self.score.ruling_total,
                r * 100.0
            ),
            None => "n/a".into(),
        };
        write!(
            f,
            "{mark}  {:<44} {:<20} ruling-out recall {recall}",
            self.id, got
        )?;
        if self.model_steps > 0 {
            write!(
                f,
                " model steps {} tokens {}/{}",
                self.model_steps, self.tokens.0, self.tokens.1
            )?;
        }
        if let Some(e) = &self.error {
            write!(f, "\n      error: {e}")?;
        }
        for reason in &self.score.failures {
            write!(f, "\n      - {reason}")?;
        }
        for broken in &self.broken {
            write!(f, "\n      - invariant: {broken}")?;
        }
        if !self.score.ruling_missed.is_empty() {
            write!(
                f,
                "\n      ruling-out missed: {}",
                quote_all(
                    &self
                        .score
                        .ruling_missed
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                )
            )?;
        }
        Ok(())
    }
}

/// Every case's result, and the totals.
#[derive(Clone, Debug, Default)]
pub struct EvalSummary {
    pub results: Vec<CaseResult>,
}

impl EvalSummary {
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.passed()).count()
    }

    pub fn failed(&self) -> usize {
        self.results.len() - self.passed()
    }

    /// Mean ruling-out recall over the cases whose rubric lists ruling-out keywords.
    pub fn mean_recall(&self) -> Option<f32> {
        let r: Vec<f32> = self
            .results
            .iter()
            .filter_map(|r| r.score.recall())
            .collect();
        (!r.is_empty()).then(|| r.iter().sum::<f32>() / r.len() as f32)
    }

    /// The pass rate, and with a model its steps and tokens in/out over all cases.
    pub fn rates(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.results.is_empty() {
            out.push(format!(
                "pass rate {:.0}% ({}/{})",
                self.passed() as f64 * 100.0 / self.results.len() as f64,
                self.passed(),
                self.results.len()
            ));
            let lenient = self
                .results
                .iter()
                .filter(|r| r.error.is_none() && r.score.passed_lenient())
                .count();
            if lenient != self.passed() {
                out.push(format!(
                    "({lenient}/{} if keywords anywhere in the report counted)",
                    self.results.len()
                ));
            }
        }
        let steps: u32 = self.results.iter().map(|r| r.model_steps).sum();
        if steps > 0 {
            let (tin, tout) = self
                .results
                .iter()
                .fold((0, 0), |(a, b), r| (a + r.tokens.0, b + r.tokens.1));
            out.push(format!(
                "model steps {steps} tokens in/out {tin}/{tout} in all"
            ));
        }
        out
    }

    /// The closing line: `N passed, M failed`.
    pub fn totals(&self) -> String {
        format!("{} passed, {} failed", self.passed(), self.failed())
    }
}

impl fmt::Display for EvalSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.results {
            writeln!(f, "{r}")?;
        }
        if let Some(m) = self.mean_recall() {
            writeln!(f, "mean ruling-out recall {:.0}%", m * 100.0)?;
        }
        for line in self.rates() {
            writeln!(f, "{line}")?;
        }
        write!(f, "{}", self.totals())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Evidence, EvidenceBody, RuledOut};

    fn expect() -> Expect {
        Expect {
            category: Some(Category::ResourceExhaustion),
            required_keywords: vec!["exit code 137".into(), "Memory".into()],
            forbidden_keywords: vec!["rollback".into()],
            forbidden_categories: vec![Category::Healthy],
            forbidden_cause_keywords: vec!["cpu saturation".into()],
            required_evidence: vec!["kubernetes/pods".into()],
            ruling_out_keywords: vec!["no image pull".into(), "sibling".into()],
        }
    }

    fn incident(
        category: Category,
        report: &str,
        kinds: &[&str],
        ruled: &[(&str, &str)],
    ) -> Incident {
        Incident {
            diagnosis: Some((category, report.into(), 0.9)),
            report: Some(report.into()),
            evidence: kinds
                .iter()
                .enumerate()
                .map(|(i, k)| Evidence {
                    id: format!("e{i}"),
                    kind: k.to_string(),
                    title: String::new(),
                    source: String::new(),
                    call_id: None,
                    body: EvidenceBody::Text {
                        language: "text".into(),
                        text: String::new(),
                    },
                })
                .map(std::sync::Arc::new)
                .collect(),
            ruled_out: ruled
                .iter()
                .map(|(s, r)| RuledOut {
                    statement: s.to_string(),
                    reason: r.to_string(),
                    evidence: vec![],
                })
                .collect(),
            ..Incident::default()
        }
    }

    #[test]
    fn a_good_session_passes_with_full_recall() {
        let inc = incident(
            Category::ResourceExhaustion,
            "OOMKilled with EXIT CODE 137 at the memory limit",
            &["kubernetes/pods", "kubernetes/events"],
            &[
                ("Bad image", "No image pull errors"),
                ("Deployment-wide", "Sibling pods healthy"),
            ],
        );
        let s = score(&expect(), &inc);
        assert!(s.passed(), "{:?}", s.failures);
        assert_eq!(s.recall(), Some(1.0));
    }

    #[test]
    fn each_failure_has_its_reason() {
        let inc = incident(
            Category::Healthy,
            "do a rollback",
            &["metrics"],
            &[("x", "no image pull errors")],
        );
        let s = score(&expect(), &inc);
        assert!(!s.passed());
        let all = s.failures.join("\n");
        assert!(
            all.contains("category healthy, expected resource_exhaustion"),
            "{all}"
        );
        assert!(all.contains("category healthy is forbidden"), "{all}");
        assert!(
            all.contains("diagnosis lacks \"exit code 137\", \"Memory\""),
            "{all}"
        );
        assert!(all.contains("forbidden \"rollback\""), "{all}");
        assert!(
            all.contains("evidence not consulted: kubernetes/pods"),
            "{all}"
        );
        assert_eq!((s.ruling_hits, s.ruling_total), (1, 2));
        assert_eq!(s.ruling_missed, vec!["sibling".to_string()]);
    }

    #[test]
    fn a_forbidden_cause_counts_only_in_the_root_cause() {
        let mut inc = incident(
            Category::ResourceExhaustion,
            "OOMKilled with exit code 137 at the memory limit; CPU saturation ruled out",
            &["kubernetes/pods"],
            &[("CPU saturation", "CPU at 20%")],
        );
        inc.diagnosis = Some((
            Category::ResourceExhaustion,
            "OOMKilled with exit code 137 at the memory limit".into(),
            0.9,
        ));
        assert!(score(&expect(), &inc).passed());
        inc.diagnosis = Some((
            Category::ResourceExhaustion,
            "CPU saturation on db1".into(),
            0.9,
        ));
        let s = score(&expect(), &inc);
        assert!(
            s.failures
                .iter()
                .any(|f| f.contains("root cause states forbidden \"cpu saturation\"")),
            "{:?}",
            s.failures
        );
    }

    #[test]
    fn keywords_count_only_in_what_was_concluded() {
        let mut inc = incident(
            Category::ResourceExhaustion,
            "OOMKilled with exit code 137 at the memory limit",
            &["kubernetes/pods"],
            &[],
        );
        inc.report = Some("# memory alert\nevidence: exit code 137".into());
        inc.diagnosis = Some((Category::ResourceExhaustion, "the pod restarts".into(), 0.9));
        let s = score(&expect(), &inc);
        assert!(!s.passed());
        assert!(s.passed_lenient(), "{:?}", s.failures);
        // A keyword in a hypothesis or in what was ruled out counts.
        inc.hypotheses = vec![crate::model::Hypothesis {
            category: Category::ResourceExhaustion,
            statement: "exit code 137: the memory limit".into(),
            confidence: 0.5,
            evidence: vec![],
        }];
        assert!(score(&expect(), &inc).passed());
        // A keyword nowhere is not forgiven by the lenient score either.
        inc.hypotheses.clear();
        inc.report = None;
        assert!(!score(&expect(), &inc).passed_lenient());
    }

    #[test]
    fn missing_diagnosis_fails_and_empty_rubric_passes() {
        let mut inc = incident(Category::Unknown, "", &[], &[]);
        inc.diagnosis = None;
        let s = score(&expect(), &inc);
        assert!(s.failures.iter().any(|f| f.contains("no diagnosis")));
        let s = score(&Expect::default(), &inc);
        assert!(s.passed());
        assert_eq!(s.recall(), None);
    }

    #[test]
    fn summary_ends_with_totals() {
        let ok = CaseResult {
            id: "a".into(),
            dir: PathBuf::new(),
            score: Score::default(),
            error: None,
            elapsed: Duration::ZERO,
            model_steps: 0,
            tokens: (0, 0),
            root_cause: None,
            broken: vec![],
            cited_kinds: vec![],
            unused_kinds: vec![],
        };
        let bad = CaseResult {
            error: Some("timed out".into()),
            id: "b".into(),
            ..ok.clone()
        };
        let sum = EvalSummary {
            results: vec![ok, bad],
        };
        let text = sum.to_string();
        assert!(text.ends_with("1 passed, 1 failed"), "{text}");
        assert!(text.contains("error: timed out"));
    }
}
