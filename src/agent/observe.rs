//! The reasoning's inputs as a fold of the session log: `Observed` facts, grouped by the lane
//! that gathered them, become the [`Observations`] that Diagnose reads, live and from a file.
//!
//! It folds only what the [`Incident`] leaves out: the facts, Triage's clock, integrations and
//! lane order, and where Diagnose began. The alert, the problem, the tool calls with their
//! outcomes and the evidence it reads from the incident folded from the same events, so each of
//! those is derived once.

use super::evidence::TRIGGER_KIND;
use super::specialists::{self, Scope};
use crate::model::{Event, EvidenceId, Facts, Incident, Stage, ToolCallState};
use crate::reason::Observations;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// One `Observed` record, resolved to the call that produced it.
#[derive(Clone, Debug)]
struct Fact {
    /// Position of the call in [`Incident::tools`].
    call: usize,
    kind: String,
    evidence_id: EvidenceId,
    output: Facts,
}

/// What the incident held when Diagnose began: later reads (verification) are not inputs.
#[derive(Clone, Debug, Default)]
struct Seal {
    /// Every tool call before Diagnose, with its outcome as it stood: what each integration
    /// answered.
    tools: Vec<ToolCallState>,
    /// How many evidence items had arrived.
    evidence: usize,
}

/// The fold. Feed it every event in order, each after the incident beside it has folded that
/// event ([`ObservationLog::apply`]); ask it, with that incident, for the observations as
/// Diagnose saw them ([`ObservationLog::observations`]).
#[derive(Clone, Debug, Default)]
pub struct ObservationLog {
    /// The world's clock, from `Triaged`; `None` before Triage or in sessions that predate it.
    pub now: Option<DateTime<Utc>>,
    /// Whether `Triaged` was seen at all.
    pub triaged: bool,
    /// Lane order: Triage's specialists, then any other lane (a runbook's) as first seen.
    lanes: Vec<String>,
    /// Facts per lane, in the order each lane learned them.
    facts: BTreeMap<String, Vec<Fact>>,
    /// How many `Observed` records were folded (unknown kinds included).
    pub observed: usize,
    /// Set once Diagnose starts: later reads (verification) are not inputs to the verdict.
    pub sealed: bool,
    seal: Seal,
    /// `Observed` records that could not be tied to a tool call (a damaged or hand-made log).
    pub orphans: Vec<EvidenceId>,
    /// The integrations the run had configured (from `Triaged`); `None` in older sessions.
    pub integrations: Option<Vec<String>>,
}

impl ObservationLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold one event; `incident` has already folded it.
    pub fn apply(&mut self, event: &Event, incident: &Incident) {
        match event {
            Event::Triaged {
                specialists,
                now,
                integrations,
                ..
            } => {
                self.triaged = true;
                self.now = *now;
                self.integrations = integrations.clone();
                for s in specialists {
                    if !self.lanes.contains(s) {
                        self.lanes.push(s.clone());
                    }
                }
            }
            Event::StageStarted {
                stage: Stage::Diagnose,
            } => {
                if !self.sealed {
                    self.seal = Seal {
                        tools: incident.tools.clone(),
                        evidence: incident.evidence.len(),
                    };
                }
                self.sealed = true;
            }
            _ if self.sealed => {}
            Event::Observed {
                evidence_id,
                kind,
                facts,
            } => {
                self.observed += 1;
                if matches!(facts, Facts::Text(_) | Facts::Other) {
                    return;
                }
                let Some(call) = incident
                    .evidence(evidence_id)
                    .and_then(|e| e.call_id.as_deref())
                    .and_then(|id| incident.tool_index(id))
                else {
                    self.orphans.push(evidence_id.clone());
                    return;
                };
                let lane = incident.tools[call].specialist.clone().unwrap_or_default();
                if !self.lanes.contains(&lane) {
                    self.lanes.push(lane.clone());
                }
                self.facts.entry(lane).or_default().push(Fact {
                    call,
                    kind: kind.clone(),
                    evidence_id: evidence_id.clone(),
                    output: facts.clone(),
                });
            }
            _ => {}
        }
    }

    /// The tool calls Diagnose saw: those made before it began, or all of them until it does.
    fn tools<'a>(&'a self, incident: &'a Incident) -> &'a [ToolCallState] {
        if self.sealed {
            &self.seal.tools
        } else {
            &incident.tools
        }
    }

    /// What Triage worked out, rebuilt from the trigger and the recorded clock; a described
    /// problem is matched again to the firing alerts Triage read, as the live run did.
    pub fn scope(&self, incident: &Incident) -> Option<Scope> {
        let now = self.now?;
        Some(match (&incident.alert, &incident.problem) {
            (Some(a), _) => Scope::from_alert(a, now),
            (None, Some(p)) => {
                let read = |tool: &str| -> Vec<&Facts> {
                    self.facts
                        .get(specialists::TRIAGE_LANE)
                        .into_iter()
                        .flatten()
                        .filter(|f| incident.tools[f.call].tool == tool)
                        .map(|f| &f.output)
                        .collect()
                };
                let mut alerts = Vec::new();
                for tool in ["alertmanager.alerts", "prometheus.alerts"] {
                    for out in read(tool) {
                        if let Facts::Alerts(v) = out {
                            alerts.extend(v.iter().cloned());
                        }
                    }
                }
                let mut rules = Vec::new();
                for out in read("prometheus.rules") {
                    if let Facts::Rules(v) = out {
                        rules.extend(v.iter().cloned());
                    }
                }
                specialists::match_problem(&Scope::from_problem(p, now), &alerts, &rules)
            }
            (None, None) => Scope {
                now,
                onset: now,
                ..Scope::default()
            },
        })
    }

    /// The observations Diagnose reasons over: each lane's facts folded in the order that lane
    /// learned them, lanes in Triage's order, so the interleaving of parallel lanes in the log
    /// never changes the verdict. `incident` is the fold of the same events.
    pub fn observations(&self, incident: &Incident) -> Observations {
        let mut obs = Observations::default();
        let before_seal = if self.sealed {
            &incident.evidence[..self.seal.evidence.min(incident.evidence.len())]
        } else {
            &incident.evidence[..]
        };
        // The item holding the triggering alert, recorded at Triage (the latest, should there
        // be several).
        if let Some(trigger) = before_seal
            .iter()
            .rev()
            .find(|e| e.call_id.is_none() && e.kind == TRIGGER_KIND)
        {
            obs.evidence
                .entry(TRIGGER_KIND.to_string())
                .or_default()
                .push(trigger.id.clone());
        }
        for lane in &self.lanes {
            for f in self.facts.get(lane).into_iter().flatten() {
                let call = &incident.tools[f.call];
                specialists::absorb(
                    &mut obs,
                    &call.tool,
                    &call.params,
                    &f.output,
                    &f.kind,
                    &f.evidence_id,
                );
            }
        }
        match self.scope(incident) {
            // A problem matched to a firing alert is investigated as that alert.
            Some(scope) => {
                obs.alert = scope.alert;
                obs.now = scope.now;
            }
            None => obs.alert = incident.alert.clone(),
        }
        obs.problem = incident.problem.clone();
        if let Some(configured) = &self.integrations {
            obs.coverage = specialists::coverage(configured, self.tools(incident));
        }
        obs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::Params;
    use crate::model::{Evidence, EvidenceBody, PodFacts};

    /// The two folds of `events`, as the journal keeps them.
    fn fold(events: &[Event]) -> (Incident, ObservationLog) {
        let mut incident = Incident::new();
        let mut log = ObservationLog::new();
        for e in events {
            incident.apply(0.0, e);
            log.apply(e, &incident);
        }
        (incident, log)
    }

    fn pod(name: &str, phase: &str) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "shop".into(),
            phase: phase.into(),
            ..PodFacts::default()
        }
    }

    /// A tool call by `lane` that produced evidence `ev` holding `pods`.
    fn read(lane: &str, n: usize, pods: Vec<PodFacts>) -> Vec<Event> {
        let call_id = format!("call-{n}");
        let evidence_id = format!("ev-{n}");
        vec![
            Event::ToolCalled {
                call_id: call_id.clone(),
                tool: "kubernetes.pods".into(),
                specialist: Some(lane.into()),
                params: Params::new(),
            },
            Event::EvidenceAdded {
                evidence: Evidence {
                    id: evidence_id.clone(),
                    kind: "kubernetes/pods".into(),
                    title: "Pods".into(),
                    source: "kubernetes.pods".into(),
                    call_id: Some(call_id),
                    body: EvidenceBody::Json {
                        value: serde_json::Value::Null,
                    },
                },
            },
            Event::Observed {
                evidence_id,
                kind: "kubernetes/pods".into(),
                facts: Facts::Pods(pods),
            },
        ]
    }

    fn triaged(lanes: &[&str]) -> Event {
        Event::Triaged {
            summary: String::new(),
            runbook: None,
            specialists: lanes.iter().map(|s| s.to_string()).collect(),
            now: Some(Utc::now()),
            integrations: None,
        }
    }

    #[test]
    fn lanes_fold_in_triage_order_whatever_the_interleaving() {
        // `b` answered first in the log, but Triage listed `a` first; `a` read web-1 twice.
        let mut events = vec![triaged(&["a", "b"])];
        events.extend(read(
            "b",
            1,
            vec![pod("web-1", "Pending"), pod("db-0", "Running")],
        ));
        events.extend(read("a", 2, vec![pod("web-1", "Running")]));
        events.extend(read("a", 3, vec![pod("web-2", "Running")]));
        let (incident, log) = fold(&events);
        let obs = log.observations(&incident);
        let names: Vec<(&str, &str)> = obs
            .pods
            .iter()
            .map(|p| (p.name.as_str(), p.phase.as_str()))
            .collect();
        // Lane a's pods first; lane b's later read of web-1 wins, as the live merge of lanes does.
        assert_eq!(
            names,
            vec![
                ("web-1", "Pending"),
                ("web-2", "Running"),
                ("db-0", "Running")
            ]
        );
        assert_eq!(
            obs.evidence_of("kubernetes/pods"),
            vec!["ev-2", "ev-3", "ev-1"]
        );

        // The same as each lane's own absorb, merged in lane order.
        let lane = |reads: &[(usize, Vec<PodFacts>)]| {
            let mut o = Observations::default();
            for (n, pods) in reads {
                specialists::absorb(
                    &mut o,
                    "kubernetes.pods",
                    &Params::new(),
                    &Facts::Pods(pods.clone()),
                    "kubernetes/pods",
                    &format!("ev-{n}"),
                );
            }
            o
        };
        let mut merged = lane(&[
            (2, vec![pod("web-1", "Running")]),
            (3, vec![pod("web-2", "Running")]),
        ]);
        specialists::merge(
            &mut merged,
            lane(&[(1, vec![pod("web-1", "Pending"), pod("db-0", "Running")])]),
        );
        assert_eq!(merged.pods, obs.pods);
        assert_eq!(merged.evidence, obs.evidence);
    }

    #[test]
    fn reads_after_diagnose_starts_are_not_inputs() {
        let mut events = vec![triaged(&["a"])];
        events.extend(read("a", 1, vec![pod("web-1", "Pending")]));
        events.push(Event::StageStarted {
            stage: Stage::Diagnose,
        });
        events.extend(read("verify", 2, vec![pod("web-1", "Running")]));
        let (incident, log) = fold(&events);
        assert_eq!(log.observed, 1);
        assert_eq!(
            log.observations(&incident).pods,
            vec![pod("web-1", "Pending")]
        );
    }

    #[test]
    fn facts_of_unknown_kind_or_evidence_are_skipped_and_counted() {
        let line = r#"{"type":"observed","evidence_id":"ev-9","kind":"kubernetes/config_maps",
                       "facts":{"type":"config_maps","items":[{"name":"x"}]}}"#;
        let event: Event = serde_json::from_str(line).expect("a newer facts kind still parses");
        assert!(matches!(
            &event,
            Event::Observed {
                facts: Facts::Other,
                ..
            }
        ));
        let orphan = Event::Observed {
            evidence_id: "ev-7".into(),
            kind: "kubernetes/pods".into(),
            facts: Facts::Pods(vec![pod("web-1", "Running")]),
        };
        let (incident, log) = fold(&[triaged(&["a"]), event, orphan]);
        assert_eq!(log.observed, 2);
        assert_eq!(log.orphans, vec!["ev-7".to_string()]);
        assert!(log.observations(&incident).pods.is_empty());
    }

    #[test]
    fn old_triage_records_have_no_clock_and_no_scope() {
        let old = r#"{"type":"triaged","summary":"s","runbook":"crashloop","specialists":["kubernetes"]}"#;
        let event: Event = serde_json::from_str(old).expect("old Triaged still parses");
        let (incident, log) = fold(&[event]);
        assert!(log.triaged);
        assert!(log.now.is_none() && log.scope(&incident).is_none());
    }

    #[test]
    fn facts_round_trip_through_the_session_format() {
        let facts = Facts::Series(vec![crate::model::Series {
            name: "up".into(),
            labels: Default::default(),
            points: vec![(1.0, 1.0), (2.0, f64::NAN)],
        }]);
        let text = serde_json::to_string(&facts).expect("serialize");
        // JSON has no NaN: it is written as null and read back as NaN, not a broken line.
        let back: Facts = serde_json::from_str(&text).expect("deserialize");
        let Facts::Series(s) = back else {
            panic!("series expected, got {back:?}")
        };
        assert_eq!(s[0].points[0], (1.0, 1.0));
        assert!(s[0].points[1].1.is_nan());
        // A fact written before a field existed loads with that field's default.
        let pods: Facts =
            serde_json::from_str(r#"{"type":"pods","items":[{"name":"web-1"}]}"#).expect("pods");
        assert_eq!(
            pods,
            Facts::Pods(vec![PodFacts {
                name: "web-1".into(),
                ..PodFacts::default()
            }])
        );
    }
}
