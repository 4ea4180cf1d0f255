//! Metric analyzers: threshold breaches (against the alert rule's threshold) and step changes that line up with a change.

use super::{Basis, Decl, Role};
use crate::model::{Category, RuledOut, Series};
use crate::reason::{Ctx, Signal, actions, promql};
use chrono::DateTime;
use regex::Regex;
use std::sync::LazyLock;

mod limit;
mod step;
pub(crate) use limit::at_limit;
pub(crate) use step::{lag_text, step, step_changes};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "metric_threshold",
        title: "the alert's expression over its threshold",
        concern: "metrics",
        role: Role::Symptom,
        reads: &[],
    },
    Decl {
        id: "metric_within_bounds",
        title: "series back within bounds",
        concern: "metrics",
        role: Role::Clearance,
        reads: &[],
    },
    Decl {
        id: "limit_reached",
        title: "usage at its configured maximum",
        concern: "metrics",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "metric_step",
        title: "level shift in a series",
        concern: "metrics",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "hpa_at_max",
        title: "autoscaler at its maximum",
        concern: "autoscaling",
        role: Role::Failure,
        reads: &[],
    },
];

static COMPARISON: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(>=|<=|>|<|==|!=)\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*\)?\s*$").ok()
});

/// A rule threshold: the comparison and its value, from `expr > 0.5` (every comparison PromQL has).
pub(crate) use promql::Threshold;

pub(crate) fn parse_threshold(expr: &str) -> Option<(String, Threshold)> {
    let re = COMPARISON.as_ref()?;
    let caps = re.captures(expr)?;
    let op = caps.get(1)?.as_str();
    let value: f64 = caps.get(2)?.as_str().parse().ok()?;
    let lhs = expr[..caps.get(0)?.start()].trim().to_string();
    let op = match op {
        ">" => ">",
        ">=" => ">=",
        "<" => "<",
        "<=" => "<=",
        "==" => "==",
        _ => "!=",
    };
    Some((lhs, Threshold { op, value }))
}

/// The alert's own expression: `g0.expr` of its generator URL, else its rule's query.
pub(crate) fn alert_expr(ctx: &Ctx) -> Option<String> {
    let Some(alert) = ctx.obs.alert.as_ref() else {
        return ctx.obs.expr.clone().filter(|e| !e.trim().is_empty());
    };
    alert.expr().filter(|e| !e.trim().is_empty()).or_else(|| {
        ctx.obs
            .rules
            .iter()
            .filter(|r| r.name == alert.name() && !r.query.is_empty())
            .map(|r| r.query.clone())
            .next()
    })
}

/// The alert's expression and threshold: PromQL through the parser, other monitor languages by their trailing comparison.
fn alert_threshold(ctx: &Ctx) -> Option<(String, Threshold)> {
    let expr = alert_expr(ctx)?;
    if let Ok(e) = promql::parse(&expr) {
        return Some((e.base, e.threshold?));
    }
    parse_threshold(&expr)
}

/// The series the alert's own expression returned: named by the expression (aggregations drop
/// the metric name) or, for a bare selector, the metric it selects.
pub(crate) fn own_series<'a>(ctx: &Ctx<'a>, p: &promql::AlertExpr) -> Vec<&'a Series> {
    ctx.obs
        .metrics
        .iter()
        .filter(|s| !s.points.is_empty())
        .filter(|s| {
            s.name == p.base
                || (p.selectors.len() == 1
                    && p.primary()
                        .is_some_and(|sel| sel.matches(&s.name, &s.labels)))
        })
        .collect()
}

/// The alert's expression parsed as PromQL.
pub(crate) fn parsed_alert(ctx: &Ctx) -> Option<promql::AlertExpr> {
    alert_expr(ctx).and_then(|e| promql::parse(&e).ok())
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

fn mechanism_for(text: &str, scope: &str, series: &Series) -> String {
    let t = text.to_lowercase();
    if is_cpu(&t) {
        format!(
            "{scope}'s containers hit their CPU limit and are throttled, so requests queue and slow down; the load exceeds the capacity of the current replicas"
        )
    } else if t.contains("memory") {
        format!("{scope} is running out of memory headroom against its limits")
    } else if t.contains("volume_stats") {
        // A volume's series names its claim: that is what fills.
        let of_claim = series
            .labels
            .get("persistentvolumeclaim")
            .map(|c| format!(" of claim {c}"))
            .unwrap_or_default();
        format!("the volume{of_claim} is filling up: writes to it fail once it is full")
    } else if t.contains("disk") || t.contains("filesystem") || t.contains("free_bytes") {
        "the disk is filling up".to_string()
    } else if ["latency", "duration"].iter().any(|k| t.contains(k)) {
        format!("{scope} answers slowly, which points at a slow downstream dependency")
    } else {
        format!("{scope} is failing requests")
    }
}

/// The CPU limits and replica count of the subject's pods, quoted: what the throttling is against.
fn cpu_limits(ctx: &Ctx) -> String {
    let pods: Vec<_> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p) && !p.deleting)
        .collect();
    let mut limits: Vec<String> = pods
        .iter()
        .flat_map(|p| p.containers.iter())
        .filter(|c| ctx.subject.containers.is_empty() || ctx.subject.containers.contains(&c.name))
        .filter_map(|c| {
            c.cpu_limit
                .as_ref()
                .map(|l| format!("{} limit {l}", c.name))
        })
        .collect();
    limits.sort();
    limits.dedup();
    if limits.is_empty() {
        return String::new();
    }
    format!(" ({} running replicas, {})", pods.len(), limits.join(", "))
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
        "volume_stats",
        "available_bytes",
        "free_bytes",
        "inodes",
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
    let parsed = parsed_alert(ctx);
    let siblings: Vec<String> = parsed
        .as_ref()
        .map(|p| promql::siblings(p).into_iter().map(|(_, q)| q).collect())
        .unwrap_or_default();
    let applies = |s: &Series| {
        if siblings.contains(&s.name) || s.name.ends_with("_build_info") {
            return false;
        }
        // Discovered queries are compared with their own past, not with the alert's threshold.
        if s.name != lhs && promql::role_of(&s.name).is_some() {
            return false;
        }
        s.name.is_empty()
            || s.name == lhs
            || lhs.contains(&s.name)
            || s.name.contains(&lhs)
            || ctx.obs.metrics.len() == 1
    };
    // A Datadog monitor's query, in its words.
    let monitor = ctx
        .obs
        .alert
        .as_ref()
        .and_then(|a| a.monitor_query())
        .and_then(|_| super::monitor::describe(&lhs));
    let is_ratio = parsed
        .as_ref()
        .is_some_and(|p| p.counts_errors() && p.base.contains('/'))
        || monitor.as_ref().is_some_and(|m| m.1);
    let show = |v: f64| if is_ratio { pct(v) } else { fmt(v) };
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
                Some(m.map_or(v, |m| if th.above() { m.max(v) } else { m.min(v) }))
            });
        let op = th.op;
        let name = match &parsed {
            Some(p) if is_ratio && s.name == p.base => {
                let subject: Vec<String> = p
                    .subject()
                    .iter()
                    .map(|m| format!("{}=\"{}\"", m.name, m.value))
                    .collect();
                format!("{} {{{}}}", error_label(p), subject.join(","))
            }
            _ => monitor
                .as_ref()
                .map_or_else(|| series_label(s), |m| m.0.clone()),
        };
        if th.breached(last) {
            let since = breaches.first().map(|(t, _)| hhmm(*t)).unwrap_or_default();
            let text = format!("{} {lhs}", s.name);
            let category = match &parsed {
                Some(p) if p.counts_errors() => Category::CodeDefect,
                Some(p) if p.measures_latency() => Category::DependencyFailure,
                _ => match category_for(&text) {
                    Category::Unknown => ctx
                        .obs
                        .alert
                        .as_ref()
                        .map(|a| category_for(a.name()))
                        .unwrap_or(Category::Unknown),
                    c => c,
                },
            };
            let both = parsed.as_ref().and_then(two_metric_ratio);
            let metric = match (&parsed, both) {
                (Some(p), _) if p.counts_errors() => error_label(p),
                _ if monitor.is_some() => name.clone(),
                (_, Some(both)) => both,
                _ => metric_name(&lhs).unwrap_or_else(|| name.clone()),
            };
            let scope = ctx.scope_name("the service");
            let whose = if monitor.is_some() {
                "the monitor's"
            } else {
                "the alert"
            };
            let mut mechanism = mechanism_for(&text, &scope, s);
            if is_cpu(&text) {
                mechanism.push_str(&cpu_limits(ctx));
            }
            let mut sig = Signal {
                analyzer: "metric_threshold",
                reads_symptom: true,
                summary: format!(
                    "{name} = {} breaches the alert threshold {op} {} (since {since})",
                    show(last),
                    show(th.value)
                ),
                detail: format!("expression: {lhs} {op} {}", fmt(th.value)),
                category,
                basis: Basis::Logged,
                evidence: evidence.clone(),
                // Slow answers are a saturated service's symptom when saturation is found alongside.
                symptom_of: (category == Category::DependencyFailure)
                    .then_some(Category::ResourceExhaustion),
                // Breaching now is a live failure even when no mechanism is known: never health.
                cause: Some(if category != Category::Unknown {
                    format!(
                        "{scope}: {metric} is at {} against {whose} threshold {op} {} since {since} (peak {}); {mechanism}",
                        show(last),
                        show(th.value),
                        show(peak.unwrap_or(last))
                    )
                } else {
                    format!(
                        "{scope}: the alert's own expression {metric} is breaching now ({} against {op} {}, since {since}); the failure is real, but no analyzer found its mechanism in the gathered evidence",
                        show(last),
                        show(th.value)
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
                let ns = crate::reason::namespace_or_default(&d.namespace);
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
        } else if peak.is_none() && ctx.obs.alert.is_none() && s.points.len() >= 3 {
            // Problem mode: the service's own alert rule never fired in the window.
            out.push(Signal {
                analyzer: "metric_within_bounds",
                reads_symptom: true,
                summary: format!(
                    "{name} stayed within the rule's threshold {op} {} over {} points ({} at {})",
                    show(th.value),
                    s.points.len(),
                    show(last),
                    hhmm(t_last)
                ),
                category: Category::Healthy,
                basis: Basis::Timed,
                links: 1,
                evidence: evidence.clone(),
                benign: true,
                cause: Some(format!(
                    "No sign of the reported problem in the service's own alert expression: {name} stayed within {op} {} from {} to {} ({} now)",
                    show(th.value),
                    s.points.first().map(|p| hhmm(p.0)).unwrap_or_default(),
                    hhmm(t_last),
                    show(last)
                )),
                ruled_out: vec![RuledOut {
                    statement: format!("A breach of {lhs}"),
                    reason: format!(
                        "metric within threshold: {name} never crossed {op} {} in the window",
                        show(th.value)
                    ),
                    evidence: evidence.clone(),
                }],
                ..Signal::default()
            });
        } else if let Some(peak) = peak {
            let back = s
                .points
                .iter()
                .rev()
                .take_while(|(_, v)| !th.breached(*v))
                .count();
            let evidence = evidence.clone();
            // Episodes over the threshold: many short ones with the series back under is flapping.
            let mut episodes: Vec<(f64, f64)> = Vec::new();
            let mut open: Option<f64> = None;
            for (t, v) in &s.points {
                match (th.breached(*v), open) {
                    (true, None) => open = Some(*t),
                    (false, Some(start)) => {
                        episodes.push((start, *t));
                        open = None;
                    }
                    _ => {}
                }
            }
            let breaching_share = breaches.len() as f64 / s.points.len().max(1) as f64;
            let flapping = episodes.len() >= 3 && breaching_share < 0.5;
            let recovered_at = episodes
                .last()
                .map(|(_, end)| hhmm(*end))
                .unwrap_or_default();
            let (summary, cause) = if flapping {
                let longest = episodes
                    .iter()
                    .map(|(a, b)| (b - a) / 60.0)
                    .fold(0.0f64, f64::max);
                (
                    format!(
                        "{name} flaps around the threshold {op} {}: {} short breaches (longest {longest:.0} min, {:.0}% of the range), under it now at {} ({})",
                        show(th.value),
                        episodes.len(),
                        breaching_share * 100.0,
                        show(last),
                        hhmm(t_last)
                    ),
                    format!(
                        "Flapping alert, no sustained impact: {name} crossed {op} {} {} times for at most {longest:.0} min each and is back at {} since {recovered_at}; the threshold or its `for` duration is too tight for this signal's noise",
                        show(th.value),
                        episodes.len(),
                        show(last)
                    ),
                )
            } else {
                (
                    format!(
                        "{name} peaked at {} (threshold {op} {}) and is back under it since {recovered_at}: {} at {} ({back} points in range)",
                        show(peak),
                        show(th.value),
                        show(last),
                        hhmm(t_last)
                    ),
                    format!(
                        "The alert's metric has recovered: {name} crossed {op} {} (peak {}) but is back within bounds since {recovered_at} ({} now); the condition is resolved",
                        show(th.value),
                        show(peak),
                        show(last)
                    ),
                )
            };
            out.push(Signal {
                analyzer: if flapping {
                    "metric_flapping"
                } else {
                    "metric_recovered"
                },
                history: true,
                reads_symptom: true,
                since: episodes
                    .first()
                    .and_then(|(start, _)| DateTime::from_timestamp(*start as i64, 0)),
                until: episodes
                    .last()
                    .and_then(|(_, end)| DateTime::from_timestamp(*end as i64, 0)),
                summary,
                category: Category::Healthy,
                basis: if back >= 3 {
                    Basis::Logged
                } else {
                    Basis::Timed
                },
                links: if back >= 3 { 1 } else { 0 },
                evidence: evidence.clone(),
                benign: true,
                cause: Some(cause),
                ruled_out: vec![RuledOut {
                    statement: format!("Ongoing breach of {lhs}"),
                    reason: format!(
                        "metric back under threshold: {name} is {} now vs threshold {op} {}",
                        fmt(last),
                        fmt(th.value)
                    ),
                    evidence,
                }],
                ..Signal::default()
            });
        }
    }
    out
}

/// HorizontalPodAutoscalers pinned at their maximum (kube-state-metrics series): they cannot add capacity.
pub(crate) fn hpa_at_max(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    let key = |s: &Series| {
        (
            s.labels.get("namespace").cloned().unwrap_or_default(),
            s.labels
                .get("horizontalpodautoscaler")
                .cloned()
                .unwrap_or_default(),
        )
    };
    for cur in ctx
        .obs
        .metrics
        .iter()
        .filter(|s| s.name == "kube_horizontalpodautoscaler_status_current_replicas")
    {
        let Some(max) = ctx
            .obs
            .metrics
            .iter()
            .find(|s| {
                s.name == "kube_horizontalpodautoscaler_spec_max_replicas" && key(s) == key(cur)
            })
            .and_then(|s| s.points.last().map(|p| p.1))
        else {
            continue;
        };
        let pinned = cur
            .points
            .iter()
            .rev()
            .take_while(|(_, v)| *v >= max)
            .count();
        if pinned < 3 || max <= 0.0 {
            continue;
        }
        let since = cur.points[cur.points.len() - pinned].0;
        let (_, hpa) = key(cur);
        out.push(Signal {
            analyzer: "hpa_at_max",
            summary: format!(
                "HPA {hpa} at its maximum of {} replicas since {} ({pinned} points)",
                fmt(max),
                hhmm(since)
            ),
            category: Category::ResourceExhaustion,
            basis: Basis::Observed,
            links: 1,
            evidence: ctx.ev(&["metrics"]),
            cause: Some(format!(
                "Capacity ceiling: HorizontalPodAutoscaler {hpa} has been at its maxReplicas of {} since {}, so it cannot add pods; load beyond what {} replicas serve saturates them (raise maxReplicas or the per-pod capacity)",
                fmt(max),
                hhmm(since),
                fmt(max)
            )),
            objects: vec![format!("horizontalpodautoscaler/{hpa}")],
            ..Signal::default()
        });
    }
    out
}

/// A ratio of two metrics (what is used over its limit), named by both: `a / b`.
fn two_metric_ratio(p: &promql::AlertExpr) -> Option<String> {
    let mut metrics: Vec<&str> = p
        .selectors
        .iter()
        .filter_map(|s| s.metric.as_deref())
        .collect();
    metrics.dedup();
    match metrics.as_slice() {
        [a, b] if p.base.contains('/') => Some(format!("{a} / {b}")),
        _ => None,
    }
}

/// `5xx ratio` or `error ratio`, from the outcome matcher of an error-counting expression.
/// The alert's expression in words, never as raw PromQL: what it measures (`5xx ratio`, `p99
/// latency`, or the metric it reads) and for whom (its subject matchers' values).
pub(crate) fn describe(p: &promql::AlertExpr) -> (String, bool) {
    let ratio = p.counts_errors() && p.base.contains('/');
    let what = if p.counts_errors() && ratio {
        error_label(p)
    } else if p.base.contains("histogram_quantile") {
        let q = QUANTILE
            .as_ref()
            .and_then(|re| re.captures(&p.base))
            .and_then(|c| c.get(1))
            .and_then(|m| m.as_str().parse::<f64>().ok())
            .map(|q| format!("p{}", (q * 100.0).round()))
            .unwrap_or_else(|| "quantile".into());
        format!("{q} latency")
    } else if let Some(both) = two_metric_ratio(p) {
        both
    } else {
        p.primary()
            .and_then(|s| s.metric.clone())
            .or_else(|| metric_name(&p.base))
            .unwrap_or_else(|| "the alert's expression".into())
    };
    // The scrape's own labels (`job="kube-state-metrics"`, `instance`) say who measured, not whom.
    let whom: Vec<String> = p
        .subject()
        .iter()
        .filter(|m| m.op == "=")
        .filter(|m| !["job", "instance", "endpoint", "prometheus"].contains(&m.name.as_str()))
        .filter(|m| !m.value.contains("kube-state-metrics"))
        .map(|m| m.value.clone())
        .collect();
    let text = if whom.is_empty() {
        what
    } else {
        format!("{what} of {}", whom.join("/"))
    };
    (text, ratio)
}

/// A value as the description shows it: a ratio as a percentage.
pub(crate) fn show(v: f64, ratio: bool) -> String {
    if ratio { pct(v) } else { fmt(v) }
}

static QUANTILE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"histogram_quantile\s*\(\s*([0-9.]+)").ok());

fn error_label(p: &promql::AlertExpr) -> String {
    let five = p.selectors.iter().any(|s| {
        s.outcome_matchers()
            .iter()
            .any(|m| m.matches(Some("503")) && !m.matches(Some("404")))
    });
    if five { "5xx ratio" } else { "error ratio" }.to_string()
}

/// A ratio as a percentage (`0.18` -> `18%`, `0.002` -> `0.2%`).
fn pct(v: f64) -> String {
    let p = v * 100.0;
    let text = if p.abs() >= 10.0 {
        format!("{p:.0}")
    } else if p.abs() >= 1.0 {
        format!("{p:.1}")
    } else {
        format!("{p:.2}")
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}%")
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
                op: ">",
                value: 0.05
            })
        );
        assert_eq!(
            parse_threshold("up < 1").map(|t| t.1),
            Some(Threshold {
                op: "<",
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
