//! Metric analyzers: threshold breaches (against the alert rule's threshold) and step changes that line up with a change.

use super::{Ctx, Signal, actions};
use crate::model::{Category, RuledOut, Series};
use chrono::DateTime;
use regex::Regex;
use std::sync::LazyLock;

static COMPARISON: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(>=|<=|>|<|==|!=)\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*\)?\s*$").ok()
});

/// A rule threshold: the comparison and its value, from `expr > 0.5`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Threshold {
    pub above: bool,
    pub value: f64,
}

impl Threshold {
    fn breached(self, v: f64) -> bool {
        if self.above {
            v > self.value
        } else {
            v < self.value
        }
    }
}

pub(crate) fn parse_threshold(expr: &str) -> Option<(String, Threshold)> {
    let re = COMPARISON.as_ref()?;
    let caps = re.captures(expr)?;
    let op = caps.get(1)?.as_str();
    let value: f64 = caps.get(2)?.as_str().parse().ok()?;
    let lhs = expr[..caps.get(0)?.start()].trim().to_string();
    let above = match op {
        ">" | ">=" => true,
        "<" | "<=" => false,
        _ => return None,
    };
    Some((lhs, Threshold { above, value }))
}

/// The alert's own expression and threshold: `g0.expr` of its generator URL, else its rule's query.
fn alert_threshold(ctx: &Ctx) -> Option<(String, Threshold)> {
    let alert = ctx.obs.alert.as_ref()?;
    if let Some(t) = alert.expr().and_then(|e| parse_threshold(&e)) {
        return Some(t);
    }
    ctx.obs
        .rules
        .iter()
        .filter(|r| r.name == alert.name())
        .find_map(|r| parse_threshold(&r.query))
}

static METRIC_NAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[\{\[]").ok());

/// The first metric a PromQL expression reads (`rate(x_total{..}[5m])` -> `x_total`).
fn metric_name(expr: &str) -> Option<String> {
    METRIC_NAME
        .as_ref()?
        .captures(expr)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string())
}

fn is_cpu(text: &str) -> bool {
    let t = text.to_lowercase();
    t.contains("cpu") || t.contains("throttl")
}

fn mechanism_for(text: &str, scope: &str) -> String {
    let t = text.to_lowercase();
    if is_cpu(&t) {
        format!(
            "{scope}'s containers hit their CPU limit and are throttled, so requests queue and slow down; the load exceeds the capacity of the current replicas"
        )
    } else if t.contains("memory") {
        format!("{scope} is running out of memory headroom against its limits")
    } else if t.contains("disk") || t.contains("filesystem") {
        "the disk is filling up".to_string()
    } else if ["latency", "duration"].iter().any(|k| t.contains(k)) {
        format!("{scope} answers slowly, which points at a slow downstream dependency")
    } else {
        format!("{scope} is failing requests")
    }
}

fn category_for(name: &str) -> Category {
    let n = name.to_lowercase();
    if [
        "memory",
        "oom",
        "cpu",
        "throttl",
        "disk",
        "filesystem",
        "saturation",
    ]
    .iter()
    .any(|k| n.contains(k))
    {
        Category::ResourceExhaustion
    } else if ["latency", "duration", "timeout", "upstream"]
        .iter()
        .any(|k| n.contains(k))
    {
        Category::DependencyFailure
    } else if ["error", "5xx", "fail", "exception"]
        .iter()
        .any(|k| n.contains(k))
    {
        Category::CodeDefect
    } else {
        Category::Unknown
    }
}

fn series_label(s: &Series) -> String {
    let labels: Vec<String> = s
        .labels
        .iter()
        .filter(|(k, _)| k.as_str() != "__name__")
        .take(3)
        .map(|(k, v)| format!("{k}=\"{v}\""))
        .collect();
    let name = if s.name.is_empty() {
        "series"
    } else {
        s.name.as_str()
    };
    if labels.is_empty() {
        name.to_string()
    } else {
        format!("{name}{{{}}}", labels.join(","))
    }
}

fn hhmm(t: f64) -> String {
    DateTime::from_timestamp(t as i64, 0)
        .map(|d| d.format("%H:%M").to_string())
        .unwrap_or_default()
}

fn fmt(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}").trim_end_matches('0').to_string()
    }
}

/// Series compared against the alert's threshold: breaching now, or back under it.
pub(crate) fn threshold_breaches(ctx: &Ctx) -> Vec<Signal> {
    let Some((lhs, th)) = alert_threshold(ctx) else {
        return Vec::new();
    };
    let applies = |s: &Series| {
        s.name.is_empty()
            || lhs.contains(&s.name)
            || s.name.contains(&lhs)
            || ctx.obs.metrics.len() == 1
    };
    let evidence = ctx.ev(&["metrics", "alert_rules"]);
    let mut out = Vec::new();
    for s in ctx
        .obs
        .metrics
        .iter()
        .filter(|s| applies(s) && !s.points.is_empty())
    {
        let Some(&(t_last, last)) = s.points.last() else {
            continue;
        };
        let breaches: Vec<&(f64, f64)> = s.points.iter().filter(|(_, v)| th.breached(*v)).collect();
        let peak = breaches
            .iter()
            .map(|(_, v)| *v)
            .fold(None, |m: Option<f64>, v| {
                Some(m.map_or(v, |m| if th.above { m.max(v) } else { m.min(v) }))
            });
        let op = if th.above { ">" } else { "<" };
        let name = series_label(s);
        if th.breached(last) {
            let since = breaches.first().map(|(t, _)| hhmm(*t)).unwrap_or_default();
            let text = format!("{} {lhs}", s.name);
            let category = category_for(&text);
            let metric = metric_name(&lhs).unwrap_or_else(|| name.clone());
            let scope = ctx
                .focus_deployment
                .clone()
                .unwrap_or_else(|| "the service".into());
            let mechanism = mechanism_for(&text, &scope);
            let mut sig = Signal {
                analyzer: "metric_threshold",
                summary: format!("{name} = {} breaches the alert threshold {op} {} (since {since})", fmt(last), fmt(th.value)),
                detail: format!("expression: {lhs} {op} {}", fmt(th.value)),
                category,
                confidence: 0.6,
                evidence: evidence.clone(),
                cause: (category != Category::Unknown).then(|| {
                    format!(
                        "{scope}: {metric} is at {} against the alert threshold {op} {} since {since} (peak {}); {mechanism}",
                        fmt(last),
                        fmt(th.value),
                        peak.map(fmt).unwrap_or_else(|| fmt(last))
                    )
                }),
                ..Signal::default()
            };
            if is_cpu(&text)
                && let Some(d) = ctx
                    .focus_deployment
                    .as_deref()
                    .and_then(|d| ctx.deployment(d))
                && d.replicas > 0
            {
                let target = d.replicas + (d.replicas / 2).max(1);
                let ns = super::namespace_or_default(&d.namespace);
                sig.actions.push(actions::scale(
                    ns,
                    &d.name,
                    target,
                    format!(
                        "{} replicas of {} are CPU-bound at their limit; {target} replicas spread the load so each pod stays under its CPU limit",
                        d.replicas, d.name
                    ),
                    evidence.clone(),
                ));
            }
            out.push(sig);
        } else if let Some(peak) = peak {
            let back = s
                .points
                .iter()
                .rev()
                .take_while(|(_, v)| !th.breached(*v))
                .count();
            let evidence = evidence.clone();
            out.push(Signal {
                analyzer: "metric_recovered",
                summary: format!(
                    "{name} peaked at {} (threshold {op} {}) and is back under it: {} at {} ({back} points in range)",
                    fmt(peak),
                    fmt(th.value),
                    fmt(last),
                    hhmm(t_last)
                ),
                category: Category::Healthy,
                confidence: if back >= 3 { 0.65 } else { 0.45 },
                evidence: evidence.clone(),
                benign: true,
                cause: Some(format!(
                    "The alert's metric has recovered: {name} crossed {op} {} (peak {}) but is back within bounds at {}; the condition is resolved",
                    fmt(th.value),
                    fmt(peak),
                    fmt(last)
                )),
                ruled_out: vec![RuledOut {
                    statement: format!("Ongoing breach of {lhs}"),
                    reason: format!("metric back under threshold: {name} is {} now vs threshold {op} {}", fmt(last), fmt(th.value)),
                    evidence,
                }],
                ..Signal::default()
            });
        }
    }
    out
}

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
    (score >= 3.0 && !(0.5..=2.0).contains(&ratio)).then_some((i, ma, mb))
}

/// Level shifts in any gathered series; when one lines up with a recorded change, that change is the suspect.
pub(crate) fn step_changes(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    let evidence = ctx.ev(&["metrics", "changes"]);
    for s in &ctx.obs.metrics {
        let Some((i, before, after)) = step(&s.points) else {
            continue;
        };
        let at = s.points[i].0;
        let name = series_label(s);
        let direction = if after > before { "rose" } else { "fell" };
        let change = ctx
            .obs
            .changes
            .iter()
            .filter_map(|c| c.at.map(|t| (c, t.timestamp() as f64)))
            .filter(|(_, t)| (at - t) >= -120.0 && (at - t) <= 20.0 * 60.0)
            .min_by(|a, b| (at - a.1).abs().total_cmp(&(at - b.1).abs()));
        let mut sig = Signal {
            analyzer: "metric_step",
            summary: format!(
                "{name} {direction} from {} to {} at {}",
                fmt(before),
                fmt(after),
                hhmm(at)
            ),
            category: category_for(&s.name),
            confidence: 0.3,
            evidence: evidence.clone(),
            ..Signal::default()
        };
        if let Some((c, t)) = change {
            let lag = ((at - t) / 60.0).max(0.0);
            sig.summary.push_str(&format!(
                ", {lag:.0} min after change {} \"{}\"",
                c.id, c.title
            ));
            let bad_direction = match category_for(&s.name) {
                Category::Unknown => true,
                _ => after > before,
            };
            if bad_direction {
                sig.category = Category::CodeDefect;
                sig.confidence = 0.7;
                sig.cause = Some(format!(
                    "Regression from change {} \"{}\" on {} at {}: {name} {direction} from {} to {} within {lag:.0} min of it",
                    c.id,
                    c.title,
                    c.target,
                    hhmm(t),
                    fmt(before),
                    fmt(after)
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
                        format!("{name} shifted right after change {}; rolling back to the previous revision removes it", c.id),
                        evidence.clone(),
                    ));
                }
            }
        }
        out.push(sig);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Alert, Change};
    use crate::reason::Observations;
    use chrono::{TimeZone, Utc};
    use std::collections::BTreeMap;

    fn series(name: &str, values: &[f64]) -> Series {
        Series {
            name: name.into(),
            labels: BTreeMap::new(),
            points: values
                .iter()
                .enumerate()
                .map(|(i, v)| (1_800_000_000.0 + 60.0 * i as f64, *v))
                .collect(),
        }
    }

    fn alert(expr: &str) -> Alert {
        Alert {
            labels: BTreeMap::from([("alertname".into(), "HighErrors".into())]),
            generator_url: format!(
                "http://prom/graph?g0.expr={}",
                expr.replace(' ', "+").replace('>', "%3E")
            ),
            ..Alert::default()
        }
    }

    #[test]
    fn parses_thresholds() {
        assert_eq!(
            parse_threshold("rate(x[5m]) > 0.05").map(|t| t.1),
            Some(Threshold {
                above: true,
                value: 0.05
            })
        );
        assert_eq!(
            parse_threshold("up < 1").map(|t| t.1),
            Some(Threshold {
                above: false,
                value: 1.0
            })
        );
        assert_eq!(parse_threshold("sum(x)").map(|t| t.1), None);
    }

    #[test]
    fn breach_now_versus_recovered() {
        let obs = Observations {
            alert: Some(alert("http_errors_ratio > 0.05")),
            metrics: vec![series("http_errors_ratio", &[0.01, 0.2, 0.3])],
            ..Observations::default()
        };
        let sigs = threshold_breaches(&Ctx::new(&obs));
        assert_eq!(sigs[0].analyzer, "metric_threshold");
        assert_eq!(sigs[0].category, Category::CodeDefect);
        let obs = Observations {
            alert: Some(alert("http_errors_ratio > 0.05")),
            metrics: vec![series("http_errors_ratio", &[0.01, 0.2, 0.01, 0.01, 0.02])],
            ..Observations::default()
        };
        let sigs = threshold_breaches(&Ctx::new(&obs));
        assert!(sigs[0].benign && sigs[0].ruled_out[0].reason.contains("back under threshold"));
    }

    #[test]
    fn step_after_deploy_blames_the_change() {
        let s = series(
            "http_errors_ratio",
            &[0.01, 0.012, 0.011, 0.01, 0.012, 0.2, 0.21, 0.19, 0.2, 0.22],
        );
        let deploy_at = Utc.timestamp_opt(1_800_000_000 + 60 * 5 - 90, 0).single();
        let obs = Observations {
            metrics: vec![s],
            changes: vec![Change {
                id: "abc123".into(),
                title: "new retry logic".into(),
                at: deploy_at,
                target: "org/shop".into(),
                ..Change::default()
            }],
            ..Observations::default()
        };
        let sigs = step_changes(&Ctx::new(&obs));
        assert_eq!(sigs[0].category, Category::CodeDefect);
        assert!(sigs[0].cause.as_deref().unwrap_or("").contains("abc123"));
    }

    #[test]
    fn flat_noise_is_not_a_step() {
        assert!(
            step(&[
                (0.0, 1.0),
                (1.0, 1.1),
                (2.0, 0.9),
                (3.0, 1.0),
                (4.0, 1.05),
                (5.0, 0.95),
                (6.0, 1.0),
                (7.0, 1.02)
            ])
            .is_none()
        );
    }
}
