//! The Recommend stage: a runbook's actions and the analyzers' suggestions, one proposal per
//! kind and target, each with the exact operation it performs; what memory recalled informs
//! the order and the rationale (a fix verified before for the same cause comes first) and is
//! weighed against this session's verdict, never in place of it.

use super::journal::Journal;
use super::runbook_steps;
use super::specialists::lock;
use crate::model::catalog::Catalog;
use crate::model::{Action, Category, Event, Finding, Incident, Outcome, PastIncident, catalog};
use crate::reason::{Analysis, Observations};
use crate::runbook::Runbook;
use crate::world::TicketSink;
use std::sync::Mutex;

/// Propose the actions: ids assigned, `ActionProposed` emitted, in proposal order.
pub fn propose(
    journal: &Mutex<Journal>,
    analysis: &Analysis,
    recalled: &[PastIncident],
    runbook: Option<&Runbook>,
    ctx: &serde_json::Value,
    obs: &Observations,
    // The operator's own proposals, the cluster Kubernetes actions run against, and the run's
    // kinds (the built-in table and the tools its world registered).
    (proposals, cluster, catalog): (&[Action], Option<&str>, &Catalog),
) -> Vec<Action> {
    // The operator's own proposals (from the inbox) come first.
    let mut out: Vec<Action> = proposals.to_vec();
    if let Some(rb) = runbook {
        for step in runbook_steps::actions(rb, ctx, obs) {
            match step {
                Ok(a) => out.push(a),
                Err(message) => lock(journal).emit(Event::Warning { message }),
            }
        }
    }
    for a in &analysis.suggested_actions {
        let mut a = a.clone();
        match catalog.admit(&a.kind, &a.target, &mut a.params) {
            Ok(()) => out.push(a),
            Err(e) => lock(journal).emit(Event::Warning {
                message: format!("not proposing {} {}: {e}", a.kind, a.target),
            }),
        }
    }
    for finding in weigh(recalled, analysis.category, &analysis.root_cause) {
        lock(journal).emit(Event::Finding { finding });
    }
    let operators = proposals.len();
    for (i, fix) in past_fixes(recalled, analysis.category)
        .into_iter()
        .enumerate()
    {
        let history = fix.history();
        let at = operators + i;
        match out
            .iter()
            .skip(operators)
            .position(|a| a.kind == fix.kind && a.target == fix.target)
        {
            Some(k) => {
                let mut a = out.remove(operators + k);
                a.rationale = format!("{} {history}", a.rationale.trim_end());
                out.insert(at.min(out.len()), a);
            }
            None => {
                let mut params = fix.params.clone();
                match catalog.admit(&fix.kind, &fix.target, &mut params) {
                    Ok(()) => out.insert(
                        at.min(out.len()),
                        Action {
                            id: String::new(),
                            kind: fix.kind.clone(),
                            target: fix.target.clone(),
                            params,
                            risk: crate::model::Risk::Low,
                            rationale: history,
                            operation: String::new(),
                            blast_radius: String::new(),
                            evidence: Vec::new(),
                        },
                    ),
                    Err(e) => lock(journal).emit(Event::Warning {
                        message: format!(
                            "not proposing {} {} again from memory: {e}",
                            fix.kind, fix.target
                        ),
                    }),
                }
            }
        }
    }
    // One proposal per (kind, target): a runbook and an analyzer often agree.
    let mut seen = Vec::new();
    out.retain(|a| {
        let key = (a.kind.clone(), a.target.clone());
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
    let mut j = lock(journal);
    for a in out.iter_mut() {
        a.id = j.next_id("act");
        // A Kubernetes action runs against the cluster its evidence came from, and says so.
        if let Some(c) = cluster
            && a.kind.starts_with("kubernetes.")
        {
            a.params
                .entry("cluster".to_string())
                .or_insert_with(|| serde_json::Value::String(c.to_string()));
        }
        // A runbook or an analyzer may raise an action's risk, never take it below the floor;
        // target and operation text are the catalog's reading of the params.
        catalog.settle(a);
        j.emit(Event::ActionProposed { action: a.clone() });
    }
    out
}

/// At the end of the investigation, whether or not a fix ran: one ticket per configured tracker,
/// filled from what the report holds (summary, verdict, evidence, actions and their results).
/// Ids assigned, `ActionProposed` emitted; they go through the same policy and approval.
pub fn tickets(journal: &Mutex<Journal>, sinks: &[TicketSink], outcome: Outcome) -> Vec<Action> {
    if sinks.is_empty() {
        return Vec::new();
    }
    let (title, description, urgency) = {
        let j = lock(journal);
        ticket_text(&j.incident, outcome)
    };
    let mut out = Vec::new();
    for sink in sinks {
        let Some(entry) = catalog::lookup(&sink.kind) else {
            continue;
        };
        let mut params = sink.params.clone();
        // Whatever the kind calls its title, text and urgency.
        for (name, value) in [
            ("summary", title.clone()),
            ("short_description", title.clone()),
            ("description", description.clone()),
            ("urgency", urgency.to_string()),
            ("impact", urgency.to_string()),
        ] {
            if entry.param(name).is_some() && !params.contains_key(name) {
                let value = match entry.param(name).map(|p| p.ty) {
                    Some(catalog::ParamType::Integer) => serde_json::Value::from(urgency),
                    _ => serde_json::Value::String(value),
                };
                params.insert(name.to_string(), value);
            }
        }
        let mut a = Action {
            id: String::new(),
            kind: sink.kind.clone(),
            target: sink.target.clone(),
            params,
            risk: entry.floor,
            rationale: format!(
                "File the investigation in {}: the report's summary, verdict, evidence and actions.",
                entry.integration
            ),
            operation: String::new(),
            blast_radius: "a new ticket in the tracker, visible to its project's members".into(),
            evidence: Vec::new(),
        };
        match catalog::admit(&a.kind, &a.target, &mut a.params) {
            Ok(()) => out.push(a),
            Err(e) => lock(journal).emit(Event::Warning {
                message: format!("not proposing {} {}: {e}", a.kind, a.target),
            }),
        }
    }
    let mut j = lock(journal);
    for a in out.iter_mut() {
        a.id = j.next_id("act");
        catalog::settle(a);
        j.emit(Event::ActionProposed { action: a.clone() });
    }
    out
}

/// The ticket's title, text and urgency (1 high to 3 low, from the alert's severity), from the
/// folded incident: every value in it already went through the session's redaction.
fn ticket_text(inc: &Incident, outcome: Outcome) -> (String, String, u8) {
    let one = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = |s: String, n: usize| -> String {
        if s.chars().count() > n {
            let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
            t.push('…');
            t
        } else {
            s
        }
    };
    let subject = if inc.title.trim().is_empty() {
        "investigation".to_string()
    } else {
        one(&inc.title)
    };
    let title = match &inc.diagnosis {
        Some((category, _, _)) => format!("[sitrep] {subject}: {category}"),
        None => format!("[sitrep] {subject}"),
    };
    let mut lines: Vec<String> = Vec::new();
    lines.push(format!("Summary: {subject}"));
    if let Some(alert) = &inc.alert {
        lines.push(format!(
            "Alert: {} (severity {})",
            one(alert.name()),
            one(alert.severity())
        ));
    }
    if let Some(problem) = &inc.problem {
        lines.push(format!("Problem: {}", cut(one(problem), 500)));
    }
    if let Some(triage) = &inc.triage {
        lines.push(format!("Triage: {}", cut(one(triage), 500)));
    }
    match &inc.diagnosis {
        Some((category, root_cause, confidence)) => lines.push(format!(
            "Verdict: {category} ({:.0}% confidence): {}",
            confidence * 100.0,
            cut(one(root_cause), 1000)
        )),
        None => lines.push("Verdict: no diagnosis was reached".into()),
    }
    lines.push(format!("Outcome: {}", outcome.name()));
    const MAX_EVIDENCE: usize = 20;
    lines.push(format!("Evidence ({} items):", inc.evidence.len()));
    for e in inc.evidence.iter().take(MAX_EVIDENCE) {
        lines.push(format!(
            "- {} {}: {}",
            e.id,
            one(&e.kind),
            cut(one(&e.title), 200)
        ));
    }
    if inc.evidence.len() > MAX_EVIDENCE {
        lines.push(format!(
            "- and {} more (see the session)",
            inc.evidence.len() - MAX_EVIDENCE
        ));
    }
    let actions: Vec<_> = inc
        .actions
        .iter()
        .filter(|a| !catalog::is_ticket(&a.action.kind))
        .collect();
    if actions.is_empty() {
        lines.push("Actions: none proposed".into());
    } else {
        lines.push("Actions:".into());
    }
    for a in actions {
        let op = if a.action.operation.trim().is_empty() {
            format!("{} {}", a.action.kind, a.action.target)
        } else {
            one(&a.action.operation)
        };
        let mut line = format!(
            "- {} ({} risk): {}",
            cut(op, 200),
            a.action.risk,
            a.status.name()
        );
        match &a.result {
            Some(Ok(r)) | Some(Err(r)) if !r.trim().is_empty() => {
                line.push_str(&format!(": {}", cut(one(r), 300)));
            }
            _ => {}
        }
        if let Some(v) = &a.verification {
            let mark = if v.passed { "passed" } else { "failed" };
            line.push_str(&format!("; verification {mark}"));
        }
        lines.push(line);
    }
    if !inc.id.is_empty() {
        lines.push(format!(
            "Session: {} (sitrep replay, sitrep export)",
            inc.id
        ));
    }
    let urgency = match inc
        .alert
        .as_ref()
        .map(|a| a.severity().to_ascii_lowercase())
    {
        Some(s) if s == "critical" || s == "page" || s == "error" => 1,
        Some(s) if s == "warning" || s == "high" => 2,
        Some(_) => 3,
        None => 2,
    };
    (title, lines.join("\n"), urgency)
}

/// An action that fixed the same cause before: where and when it was verified.
struct PastFix {
    kind: String,
    target: String,
    params: catalog::Params,
    /// (session id, when verified), newest first.
    verified: Vec<(String, String)>,
}

impl PastFix {
    fn history(&self) -> String {
        let when: Vec<String> = self
            .verified
            .iter()
            .map(|(id, at)| format!("{at} in session {id}"))
            .collect();
        format!(
            "Memory: verified as the fix for the same cause before ({}).",
            when.join("; ")
        )
    }
}

/// Actions verified as the fix in past sessions with the same verdict category, most often
/// verified first. A healthy or unknown verdict has no cause to fix.
fn past_fixes(recalled: &[PastIncident], category: Category) -> Vec<PastFix> {
    if matches!(category, Category::Healthy | Category::Unknown) {
        return Vec::new();
    }
    let mut out: Vec<PastFix> = Vec::new();
    for s in recalled.iter().filter(|s| s.category == Some(category)) {
        for a in s.fixes() {
            let when = a
                .verified_at
                .unwrap_or(s.started)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string();
            match out
                .iter_mut()
                .find(|f| f.kind == a.kind && f.target == a.target)
            {
                Some(f) => f.verified.push((s.id.clone(), when)),
                None => out.push(PastFix {
                    kind: a.kind.clone(),
                    target: a.target.clone(),
                    params: a.params.clone(),
                    verified: vec![(s.id.clone(), when)],
                }),
            }
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.verified.len()));
    out
}

/// What memory says about this verdict: a recurring alert that cleared itself each time is
/// context for a flapping verdict; a past verdict for the same alert that this one contradicts
/// is named as such.
fn weigh(recalled: &[PastIncident], category: Category, root_cause: &str) -> Vec<Finding> {
    let finding = |summary: String, detail: String| Finding {
        analyzer: super::diagnose::MEMORY_ANALYZER.into(),
        summary,
        detail,
        category,
        confidence: 0.0,
        evidence: Vec::new(),
    };
    let mut out = Vec::new();
    let same_alert: Vec<&PastIncident> = recalled
        .iter()
        .filter(|s| s.matched != "same subject and verdict")
        .collect();
    let cleared = same_alert
        .iter()
        .filter(|s| s.category == Some(Category::Healthy))
        .count();
    if cleared >= 2 && cleared == same_alert.len() {
        out.push(finding(
            format!(
                "recurring: fired {} times before and cleared by itself each time (flapping?)",
                cleared
            ),
            "memory is context, not evidence: this session's verdict stands on its own checks"
                .into(),
        ));
    }
    if category != Category::Unknown {
        for s in &same_alert {
            match s.category {
                Some(c) if c != category && c != Category::Unknown => out.push(finding(
                    format!(
                        "contradicts session {}: it diagnosed {c} ({}); this session's evidence says {category}: {root_cause}",
                        s.id, s.root_cause
                    ),
                    String::new(),
                )),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PastAction;

    fn past(id: &str, category: Category, fixed: bool) -> PastIncident {
        PastIncident {
            id: id.into(),
            category: Some(category),
            root_cause: format!("cause of {id}"),
            actions: vec![PastAction {
                kind: "kubernetes.rollout_undo".into(),
                target: "deployment/checkout-api".into(),
                status: "executed".into(),
                verified: Some(fixed),
                ..PastAction::default()
            }],
            matched: "same alert fingerprint".into(),
            ..PastIncident::default()
        }
    }

    #[test]
    fn a_fix_verified_for_the_same_cause_comes_with_its_history() {
        let recalled = [
            past("a", Category::CodeDefect, true),
            past("b", Category::CodeDefect, true),
            past("c", Category::ResourceExhaustion, true),
            past("d", Category::CodeDefect, false),
        ];
        let fixes = past_fixes(&recalled, Category::CodeDefect);
        assert_eq!(fixes.len(), 1);
        assert_eq!(fixes[0].verified.len(), 2);
        let history = fixes[0].history();
        assert!(history.contains("session a") && history.contains("session b"));
        assert!(past_fixes(&recalled, Category::Healthy).is_empty());
    }

    #[test]
    fn memory_names_flapping_and_contradicted_verdicts_without_deciding() {
        let cleared = [
            past("a", Category::Healthy, false),
            past("b", Category::Healthy, false),
        ];
        let f = weigh(&cleared, Category::Healthy, "back to normal");
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("flapping"), "{}", f[0].summary);
        let f = weigh(
            &[past("a", Category::ResourceExhaustion, true)],
            Category::CodeDefect,
            "bad deploy",
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("contradicts session a"));
        // The finding carries this session's verdict, never the past one.
        assert_eq!(f[0].category, Category::CodeDefect);
    }
}
