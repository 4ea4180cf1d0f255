//! The verdict's walk over the checks: from the subject's failing checks along evidenced edges to
//! the deepest failing check whose onset precedes the symptom's. A check's weight is the number
//! of links evidence holds for it: its own (its basis and the details it read), the edge that ties
//! its object to the subject, an onset before the symptom's, and an independent check that
//! agrees. A check that another failing check explains is a link in that chain, not its end.
//! Confidence is derived from the weight, never chosen by a check.

use crate::model::{Category, Symptom, SymptomState};
use crate::reason::checks::recovery::QUIET_MINUTES;
use crate::reason::checks::{Basis, Role};
use crate::reason::rank::relation;
use crate::reason::{Ctx, Signal};
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Below this many links of its own, a failure is not a cause on its own: seeing it, or timing
/// alone, does not say why.
pub(crate) const MIN_OWN: u8 = 2;

/// Whether a check can end the walk: a failure or change, with a cause, not explained by
/// another, and with enough evidence of its own.
pub(crate) fn can_be_cause(s: &Signal) -> bool {
    s.cause.is_some()
        && !s.benign
        && !s.history
        && !s.explained
        && !s.unrelated
        && s.own_links() >= MIN_OWN
}

/// Confidence from the links evidenced, `w / (w + 2)`: one link a third, four two thirds, capped
/// below certainty.
pub(crate) fn confidence(weight: u8) -> f32 {
    let w = f32::from(weight);
    (w / (w + 2.0)).min(0.95)
}

/// Weigh every check by its evidenced links and mark the ones another failing check explains.
pub(crate) fn walk(ctx: &Ctx, symptom: &Symptom, signals: &mut [Signal]) {
    onsets(ctx, signals);
    ended(ctx, symptom, signals);
    // Whether an evidenced edge ties each check's objects to the subject, asked once per check.
    let edged: Vec<bool> = signals
        .iter()
        .map(|s| s.objects.is_empty() || s.objects.iter().any(|o| relation(ctx, o).is_some()))
        .collect();
    // A check whose `symptom_of` names the category of a failing check beside it is that check's
    // effect (probe timeouts of a saturated CPU, connections piled behind it).
    let failing: Vec<(usize, Category)> = signals
        .iter()
        .enumerate()
        .filter(|(_, s)| can_be_cause(s))
        .map(|(i, s)| (i, s.category))
        .collect();
    for (i, s) in signals.iter_mut().enumerate() {
        if let Some(c) = s.symptom_of
            && s.cause.is_some()
            && !s.benign
            && failing.iter().any(|(j, cat)| *j != i && *cat == c)
        {
            s.explained = true;
            s.detail
                .push_str(&format!("; likely a symptom of the {c} found alongside"));
        }
    }
    // The subject's calls fail to a Service it dials, and a failing check on that Service says
    // why (its selector matches no pod, its targetPort is served by none): the calls' failure is
    // that check's effect.
    let dialled: Vec<String> = ctx
        .dialled_services()
        .iter()
        .map(|n| format!("service/{n}"))
        .collect();
    // Within a whole application, a Service of it failing such a check explains its parts'
    // failing calls to one another, whether or not the address they dial was matched to it.
    let own_service = |o: &String| {
        ctx.subject.application.is_some() && o.starts_with("service/") && relation(ctx, o).is_some()
    };
    let service_fault = signals.iter().any(|s| {
        can_be_cause(s)
            && s.category == Category::ConfigurationError
            && s.objects
                .iter()
                .any(|o| dialled.contains(o) || own_service(o))
    });
    if service_fault {
        for s in signals.iter_mut().filter(|s| {
            s.category == Category::DependencyFailure
                && s.objects.is_empty()
                && s.cause.is_some()
                && !s.benign
        }) {
            s.explained = true;
            s.detail
                .push_str("; the Service these calls dial fails a check of its own");
        }
    }
    // The subject's own failing state is the first link of a chain whose next link is a failure
    // of the same kind on the subject or on something an evidenced edge ties to it (the crash
    // loop whose logs name the dependency that refuses it): the walk goes on to that one.
    let deeper: Vec<(usize, Category, Option<DateTime<Utc>>)> = signals
        .iter()
        .enumerate()
        .filter(|(i, s)| s.decl().role == Role::Failure && can_be_cause(s) && edged[*i])
        // Log lines are a window, not an onset: a cause read from them is not dated by them.
        .map(|(i, s)| (i, s.category, s.since.filter(|_| s.basis != Basis::Logged)))
        .collect();
    for (i, s) in signals.iter_mut().enumerate() {
        // A failure that began after the effect did cannot be what caused it (both dated by
        // the same cluster's clock, so seconds apart is apart).
        let began_first = |at: &Option<DateTime<Utc>>| match (at, s.since) {
            (Some(cause), Some(effect)) => *cause <= effect + chrono::Duration::seconds(5),
            _ => true,
        };
        // An effect seen with nothing saying why (a rollout whose new pods never get ready) has
        // a category that is a guess: any deeper failure explains it.
        let guessed = matches!(s.basis, Basis::Observed | Basis::Timed);
        if s.decl().role == Role::Effect
            && s.cause.is_some()
            && !s.benign
            && !s.explained
            && deeper
                .iter()
                .any(|(j, c, at)| *j != i && (*c == s.category || guessed) && began_first(at))
        {
            s.explained = true;
        }
    }
    let agreeing: Vec<(Category, &'static str)> = signals
        .iter()
        .filter(|s| s.cause.is_some() && !s.benign && !s.unrelated && s.own_links() >= 1)
        .map(|s| (s.category, s.analyzer))
        .collect();
    for (s, on_subject) in signals.iter_mut().zip(edged) {
        let mut w = s.own_links();
        // A failure over before a cleared symptom is history: shown, never outweighing.
        if s.unrelated || s.explained || (s.history && !s.benign) {
            w = w.min(1);
        } else if s.cause.is_some() {
            if on_subject {
                w += 1;
            }
            if !s.benign {
                if precedes(s, symptom) {
                    w += 1;
                }
                if agreeing
                    .iter()
                    .any(|(c, id)| *c == s.category && *id != s.analyzer)
                {
                    w += 1;
                }
            }
        }
        s.weight = w;
        s.confidence = confidence(w);
    }
}

/// With the symptom measured back to normal, a failure whose own evidence ended long before now
/// (a pod Running and Ready again since its OOM kill) is history, not a live cause: it is shown
/// as such and cannot end the walk. A failure still going on keeps a cleared symptom from being
/// called healthy.
fn ended(ctx: &Ctx, symptom: &Symptom, signals: &mut [Signal]) {
    if symptom.state != SymptomState::Cleared {
        return;
    }
    let quiet = chrono::Duration::seconds((QUIET_MINUTES * 60.0) as i64);
    for s in signals.iter_mut() {
        if s.benign || s.cause.is_none() {
            continue;
        }
        if let Some(until) = s.until
            && ctx.minutes_ago(until) >= QUIET_MINUTES
            && symptom.cleared_at.is_none_or(|c| until <= c + quiet)
        {
            s.history = true;
        }
        // Log lines with no time cannot show the failure they report goes on after the symptom
        // cleared: with the subject's pods all Ready, they are its record.
        if s.since.is_none()
            && s.until.is_none()
            && s.decl().concern == "logs"
            && subject_ready(ctx)
        {
            s.history = true;
        }
    }
}

/// Whether the subject has pods and every one of them is Ready.
fn subject_ready(ctx: &Ctx) -> bool {
    let mine: Vec<_> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.subject.has_pod(p) && !p.deleting)
        .collect();
    !mine.is_empty() && mine.iter().all(|p| p.ready())
}

/// The subject's failing state that `cause` explains: the link before it in the walk.
pub(crate) fn effect_of<'s>(signals: &'s [Signal], cause: &Signal) -> Option<&'s Signal> {
    if cause.decl().role != Role::Failure {
        return None;
    }
    signals.iter().find(|s| {
        s.decl().role == Role::Effect
            && s.explained
            && !s.unrelated
            && s.category == cause.category
            && s.cause.is_some()
    })
}

/// A check that did not date its failure is dated by its objects' own record: the first warning
/// event about them, else the earliest of a pod's containers' last terminations. One pass over
/// the events and pods, whatever the number of checks.
fn onsets(ctx: &Ctx, signals: &mut [Signal]) {
    if signals
        .iter()
        .all(|s| s.since.is_some() || s.objects.is_empty() || s.benign)
    {
        return;
    }
    let mut first: HashMap<String, DateTime<Utc>> = HashMap::new();
    let mut note = |key: String, at: DateTime<Utc>| {
        first
            .entry(key)
            .and_modify(|t| *t = (*t).min(at))
            .or_insert(at);
    };
    for e in &ctx.obs.events {
        if e.event_type != "Warning" {
            continue;
        }
        if let Some(at) = e.first_seen.or(e.last_seen) {
            note(e.object.to_ascii_lowercase(), at);
        }
    }
    let mut terminated: HashMap<String, DateTime<Utc>> = HashMap::new();
    for p in &ctx.obs.pods {
        if let Some(at) = p.containers.iter().filter_map(|c| c.last_finished_at).min() {
            terminated.insert(format!("pod/{}", p.name), at);
        }
    }
    for s in signals.iter_mut() {
        if s.since.is_some() || s.benign {
            continue;
        }
        s.since = s
            .objects
            .iter()
            .filter_map(|o| {
                let key = o.to_ascii_lowercase();
                first.get(&key).or_else(|| terminated.get(&key)).copied()
            })
            .min();
    }
}

/// The check's failure began before the symptom did: a minute's grace, as an alert's onset is
/// read on scrapes and rule evaluations that lag what they measure.
fn precedes(s: &Signal, symptom: &Symptom) -> bool {
    match (s.since, symptom.onset) {
        (Some(since), Some(onset)) => since <= onset + chrono::Duration::minutes(1),
        _ => false,
    }
}
