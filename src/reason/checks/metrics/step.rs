//! Step changes: the largest level shift in a series, dated, and the change (a deploy, a
//! version in a build-info series) that lines up with it.

use super::{category_for, error_label, fmt, hhmm, parsed_alert, pct, series_label};
use crate::model::{Category, Change};
use crate::reason::checks::Basis;
use crate::reason::promql;
use crate::reason::{Ctx, Signal, actions};
use chrono::DateTime;

/// The largest level shift in a series: (index of the first point after it, mean before, mean after).
pub(crate) fn step(points: &[(f64, f64)]) -> Option<(usize, f64, f64)> {
    if points.len() < 8 {
        return None;
    }
    let mean = |xs: &[(f64, f64)]| xs.iter().map(|(_, v)| v).sum::<f64>() / xs.len() as f64;
    let sd = |xs: &[(f64, f64)], m: f64| {
        (xs.iter().map(|(_, v)| (v - m).powi(2)).sum::<f64>() / xs.len() as f64).sqrt()
    };
    let mut best: Option<(usize, f64, f64, f64)> = None;
    for i in 3..=points.len() - 3 {
        let (a, b) = points.split_at(i);
        let (ma, mb) = (mean(a), mean(b));
        let noise = sd(a, ma).max(sd(b, mb)).max(1e-9);
        let score = (mb - ma).abs() / noise;
        if best.is_none_or(|(_, _, _, s)| score > s) {
            best = Some((i, ma, mb, score));
        }
    }
    let (i, ma, mb, score) = best?;
    let ratio = if ma.abs() < 1e-9 {
        f64::INFINITY
    } else {
        (mb / ma).abs()
    };
    if score < 3.0 || (0.5..=2.0).contains(&ratio) {
        return None;
    }
    // A rate over a window ramps up rather than jumps: the onset is where the series first leaves
    // its old level, not the middle of the ramp the best split lands in.
    let left = |v: f64| {
        if mb > ma {
            v > ma + 0.1 * (mb - ma)
        } else {
            v < ma - 0.1 * (ma - mb)
        }
    };
    let mut onset = i;
    while onset > 1 && left(points[onset - 1].1) {
        onset -= 1;
    }
    // Levels are medians: robust to the ramp's first points on either side.
    let median = |xs: &[(f64, f64)]| {
        let mut v: Vec<f64> = xs.iter().map(|p| p.1).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Some((onset, median(&points[..onset]), median(&points[i..])))
}

fn hhmmss(t: f64) -> String {
    DateTime::from_timestamp(t as i64, 0)
        .map(|d| d.format("%H:%M:%S").to_string())
        .unwrap_or_default()
}

/// Labels that carry a build's identity in `*_build_info`.
const VERSION_LABELS: [&str; 7] = [
    "version",
    "revision",
    "git_commit",
    "commit",
    "image",
    "tag",
    "build",
];

/// Version changes seen in `*_build_info` series: for each subject, when a new version first
/// reported, and which one it replaced.
pub(crate) fn build_info_changes(ctx: &Ctx) -> Vec<Change> {
    // subject (metric + identity labels) -> version -> first time seen
    let mut seen: std::collections::BTreeMap<(String, String), Vec<(f64, String)>> =
        Default::default();
    for s in ctx
        .obs
        .metrics
        .iter()
        .filter(|s| s.name.ends_with("_build_info"))
    {
        let Some(version) = VERSION_LABELS
            .iter()
            .find_map(|k| s.labels.get(*k).filter(|v| !v.is_empty()))
        else {
            continue;
        };
        let subject = [
            "service",
            "job",
            "app",
            "deployment",
            "namespace",
            "container",
        ]
        .iter()
        .find_map(|k| s.labels.get(*k))
        .cloned()
        .unwrap_or_else(|| s.name.trim_end_matches("_build_info").to_string());
        let Some(first) = s.points.iter().find(|(_, v)| *v > 0.0).map(|(t, _)| *t) else {
            continue;
        };
        let slot = seen.entry((s.name.clone(), subject)).or_default();
        match slot.iter_mut().find(|(_, v)| v == version) {
            Some(e) => e.0 = e.0.min(first),
            None => slot.push((first, version.clone())),
        }
    }
    let mut out = Vec::new();
    for ((_, subject), mut versions) in seen {
        versions.sort_by(|a, b| a.0.total_cmp(&b.0));
        for pair in versions.windows(2) {
            let (_, old) = &pair[0];
            let (at, new) = &pair[1];
            out.push(Change {
                kind: crate::model::ChangeKind::Deployment,
                at: DateTime::from_timestamp(*at as i64, 0),
                id: new.clone(),
                title: format!("{subject} {old} → {new}"),
                author: None,
                target: subject.clone(),
                url: None,
            });
        }
    }
    out
}

/// The change that best explains a shift at `at`: it precedes it closely (or lands within two
/// minutes after, for clock skew) and, better, touches the subject. Returns it with its lead in seconds.
fn correlate(ctx: &Ctx, changes: &[Change], at: f64, subject: &[String]) -> Option<(Change, f64)> {
    changes
        .iter()
        .filter_map(|c| c.at.map(|t| (c, at - t.timestamp() as f64)))
        .filter(|(_, lead)| *lead >= -120.0 && *lead <= 20.0 * 60.0)
        .map(|(c, lead)| {
            let touches = subject.iter().any(|s| {
                !s.is_empty()
                    && (c.target.contains(s.as_str())
                        || c.title.contains(s.as_str())
                        || ctx
                            .focus_deployment
                            .as_deref()
                            .is_some_and(|d| c.target.contains(d)))
            });
            // Closeness in minutes, halved when the change touches the failing service.
            // A rollout and the template change it carries are one event: the template's
            // own account (what it changed) wins the tie.
            let score = lead.abs() / 60.0 * if touches { 0.5 } else { 1.0 }
                + if touches { 0.0 } else { 5.0 }
                + if c.kind == crate::model::ChangeKind::Config {
                    0.0
                } else {
                    0.01
                };
            (c, lead, score)
        })
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(c, lead, _)| (c.clone(), lead))
}

/// How an event stands to a change `lead` seconds before it: "11 min after", "30 s before".
pub(crate) fn lag_text(lead: f64) -> String {
    if lead < 0.0 {
        format!("{:.0} s before", -lead)
    } else if lead < 120.0 {
        format!("{lead:.0} s after")
    } else {
        format!("{:.0} min after", lead / 60.0)
    }
}

/// Level shifts in the alert's series and its siblings (error ratio, latency, throttling); when
/// one lines up with a change (a version in `*_build_info`, a rollout, a deploy), that change is the suspect.
pub(crate) fn step_changes(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    let parsed = parsed_alert(ctx);
    let roles: Vec<(promql::Role, String)> =
        parsed.as_ref().map(promql::siblings).unwrap_or_default();
    let base_is_ratio = parsed
        .as_ref()
        .is_some_and(|p| p.counts_errors() && p.base.contains('/'));
    let mut subject: Vec<String> = parsed
        .as_ref()
        .map(|p| p.subject().into_iter().map(|m| m.value).collect())
        .unwrap_or_default();
    subject.extend(ctx.focus_deployment.clone());
    // Config objects count only when the workload reads them (`config::changes` keeps those).
    // An autoscaler's rescale, or any scale-up, answers the load: it follows a shift, never
    // sets one off (the pods it adds run the same template).
    let mut changes: Vec<Change> = ctx
        .changes
        .iter()
        .filter(|c| {
            // A revision that rolled out only configuration is the workload's own change.
            (c.kind != crate::model::ChangeKind::Config || c.id.starts_with("revision "))
                && c.id != "rescale"
                && c.id != "scale up"
        })
        .cloned()
        .collect();
    changes.extend(build_info_changes(ctx));
    changes.extend(crate::reason::config::changes(ctx));
    let evidence = ctx.ev(&["metrics", "changes"]);
    let base_points = parsed.as_ref().and_then(|p| {
        ctx.obs
            .metrics
            .iter()
            .find(|s| s.name == p.base)
            .map(|s| &s.points)
    });
    for s in &ctx.obs.metrics {
        if s.name.ends_with("_build_info") {
            continue;
        }
        let is_base = parsed.as_ref().is_some_and(|p| p.base == s.name);
        // A discovered query says what it measures by its shape.
        let role = roles
            .iter()
            .find(|(_, q)| *q == s.name)
            .map(|(r, _)| *r)
            .or_else(|| (!is_base).then(|| promql::role_of(&s.name)).flatten());
        let own = promql::parse(&s.name).ok();
        // Replica counts move on purpose (hpa_at_max reads them); versions are changes, not levels.
        if matches!(
            role,
            Some(promql::Role::HpaCurrent | promql::Role::HpaMax | promql::Role::BuildInfo)
        ) || s.name.starts_with("kube_horizontalpodautoscaler_")
        {
            continue;
        }
        // A sibling that answers with exactly the alert's own series is no independent evidence
        // (a recording that ignores the query, a proxy that caches by path).
        if role.is_some() && base_points.is_some_and(|b| s.points.iter().all(|p| b.contains(p))) {
            continue;
        }
        // The alert's own error ratio already says what the ratio sibling would.
        if role == Some(promql::Role::ErrorRatio) && base_is_ratio {
            continue;
        }
        let Some((i, before, after)) = step(&s.points) else {
            continue;
        };
        let at = s.points[i].0;
        let (name, ratio) = match (role, &parsed) {
            (Some(promql::Role::ErrorRatio), p) => (
                own.as_ref()
                    .or(p.as_ref())
                    .map(error_label)
                    .unwrap_or_default(),
                true,
            ),
            (Some(promql::Role::Latency), _) => ("p99 latency".to_string(), false),
            (Some(promql::Role::Saturation), _) if s.name.contains("cfs_throttled") => {
                ("CPU throttling ratio".to_string(), true)
            }
            (Some(promql::Role::Saturation), _) => (
                format!(
                    "{} saturation",
                    own.as_ref()
                        .and_then(|o| o.primary())
                        .and_then(|p| p.metric.clone())
                        .unwrap_or_default()
                ),
                true,
            ),
            (_, Some(p)) if is_base && p.counts_errors() => (error_label(p), base_is_ratio),
            _ => crate::reason::checks::monitor::series_words(ctx, s)
                .unwrap_or_else(|| (series_label(s), false)),
        };
        let show = |v: f64| if ratio { pct(v) } else { fmt(v) };
        let category = match role {
            Some(promql::Role::ErrorRatio) => Category::CodeDefect,
            Some(promql::Role::Latency) => Category::DependencyFailure,
            Some(promql::Role::Saturation) => Category::ResourceExhaustion,
            _ if is_base && parsed.as_ref().is_some_and(|p| p.counts_errors()) => {
                Category::CodeDefect
            }
            _ => category_for(&s.name),
        };
        let level = |v: f64| {
            if role == Some(promql::Role::Latency) {
                format!("{}s", fmt(v))
            } else {
                show(v)
            }
        };
        let last = s.points.last().map(|p| p.1).unwrap_or(after);
        let still = if (after > before) == (last > (before + after) / 2.0) {
            format!(
                "; {} at {} (end of range)",
                level(last),
                hhmm(s.points.last().map(|p| p.0).unwrap_or(at))
            )
        } else {
            format!(
                "; back to {} by {}",
                level(last),
                hhmm(s.points.last().map(|p| p.0).unwrap_or(at))
            )
        };
        let mut sig = Signal {
            analyzer: "metric_step",
            since: DateTime::from_timestamp(at as i64, 0),
            symptom_of: (role == Some(promql::Role::Latency))
                .then_some(Category::ResourceExhaustion),
            summary: format!(
                "{name} {} → {} at {}{still}",
                level(before),
                level(after),
                hhmm(at)
            ),
            category,
            basis: Basis::Context,
            links: 1,
            evidence: evidence.clone(),
            ..Signal::default()
        };
        let worse = match category {
            Category::Unknown => true,
            _ => after > before,
        };
        // A discovered query names its own subject (`job="ledger"`), which a change may touch.
        let mut subject = subject.clone();
        if role.is_some()
            && let Some(o) = &own
        {
            subject.extend(o.subject().into_iter().map(|m| m.value));
        }
        let change = correlate(ctx, &changes, at, &subject);
        match change {
            Some((c, lead)) if worse && c.kind == crate::model::ChangeKind::Config => {
                let what = crate::reason::config::describe(&c, lead);
                sig.summary = format!(
                    "{name} {} → {} at {}, after {what}",
                    level(before),
                    level(after),
                    hhmmss(at)
                );
                sig.category = Category::ConfigurationError;
                sig.basis = Basis::Measured;
                sig.links = u8::from(role.is_some() || is_base);
                sig.cause = Some(format!(
                    "Configuration change: {what}; {name} {} → {} at {}{still}",
                    level(before),
                    level(after),
                    hhmmss(at)
                ));
            }
            Some((c, lead)) if worse => {
                let lag = lag_text(lead);
                let what = if c.title.contains('→') {
                    c.title.clone()
                } else {
                    format!("change {} \"{}\" on {}", c.id, c.title, c.target)
                };
                sig.summary = format!(
                    "{name} {} → {} at {}, {lag} {what}",
                    level(before),
                    level(after),
                    hhmmss(at)
                );
                // What the change did, when the subject's own lines say it: connections or
                // memory used up, a setting or credential wrong. That is the failure's class;
                // the change is what set it off.
                let did = ctx.subject_hits().iter().find(|h| {
                    h.count >= 2
                        && matches!(
                            h.sig.category(),
                            Category::ResourceExhaustion | Category::ConfigurationError
                        )
                });
                sig.category = match did {
                    Some(h) => h.sig.category(),
                    // Fewer replicas serving the same load: capacity, not code.
                    None if category == Category::ResourceExhaustion || c.id == "scale down" => {
                        Category::ResourceExhaustion
                    }
                    None => Category::CodeDefect,
                };
                let said = did
                    .map(|h| {
                        format!(
                            "; {} {} in the subject's logs, e.g. \"{}\"",
                            h.count,
                            h.sig.label(),
                            h.example
                        )
                    })
                    .unwrap_or_default();
                sig.basis = Basis::Measured;
                sig.links = u8::from(role.is_some() || is_base);
                let from = if did.is_some() {
                    "Set off by"
                } else {
                    "Regression from"
                };
                sig.cause = Some(format!(
                    "{from} {what} (at {}): {name} {} → {} at {}, {lag} it{still}{said}",
                    c.at.map(|t| t.format("%H:%M:%S").to_string())
                        .unwrap_or_default(),
                    level(before),
                    level(after),
                    hhmmss(at)
                ));
                if let Some(d) = ctx.focus_deployment.as_deref() {
                    let ns = ctx
                        .deployment(d)
                        .map(|x| x.namespace.as_str())
                        .filter(|n| !n.is_empty())
                        .unwrap_or("default");
                    sig.actions.push(actions::rollout_undo(
                        ns,
                        d,
                        format!("{name} shifted right after {what}; rolling back to the previous revision removes it"),
                        evidence.clone(),
                    ));
                }
            }
            // A step in errors with no change before it is what the failing requests' own
            // errors explain: when the subject's lines show a known failure, that check is the
            // cause and this step its measure.
            _ if worse
                && (role.is_some() || is_base)
                && category == Category::CodeDefect
                && !ctx.subject_hits().is_empty() =>
            {
                sig.basis = Basis::Observed;
                sig.links = 1;
            }
            _ if worse && (role.is_some() || is_base) && category != Category::Unknown => {
                // A step with no change before it: still the alert's subject getting worse.
                sig.basis = Basis::Observed;
                sig.links = 1;
                let why = match category {
                    Category::DependencyFailure => {
                        "requests wait on something slower downstream (no change recorded before it)"
                    }
                    Category::ResourceExhaustion if name.starts_with("CPU") => {
                        "the containers hit their CPU limit (no change recorded before it)"
                    }
                    Category::ResourceExhaustion => {
                        "it is used to capacity, so requests wait for it (no change recorded before it)"
                    }
                    _ => {
                        "no change was recorded before it, so the failing requests' own errors say why"
                    }
                };
                sig.cause = Some(format!(
                    "{name} stepped {} → {} at {}{still}; {why}",
                    level(before),
                    level(after),
                    hhmmss(at)
                ));
            }
            _ => {}
        }
        out.push(sig);
    }
    out
}
