//! Metric discovery: from the series Prometheus itself lists for a subject (`/api/v1/series`) and
//! its metadata (`/api/v1/metadata`), the queries that measure that subject's error ratio, latency,
//! saturation and versions, built from the names and label values found, never from guessed names.

use super::promql::{LabelMatch, Role};
use crate::model::Series;
use std::collections::{BTreeMap, BTreeSet};

/// Labels that name what a series measures, in the order a service is usually named by.
pub const SUBJECT_KEYS: [&str; 6] = ["service", "job", "app", "deployment", "container", "pod"];

/// Labels that carry an HTTP-like status code.
const CODE_LABELS: [&str; 6] = [
    "code",
    "status",
    "status_code",
    "response_code",
    "http_status",
    "http_status_code",
];

/// Labels that carry a request's outcome in words.
const OUTCOME_WORD_LABELS: [&str; 3] = ["outcome", "result", "error"];

/// The most queries of one role: enough to see the subject, few enough to stay quick.
const PER_ROLE: usize = 2;

/// `/api/v1/series` selectors for a subject named by one of `candidates` (words of a problem,
/// or a known workload) under any of the usual subject labels, optionally within a namespace.
pub fn selectors(candidates: &[String], namespace: Option<&str>) -> Vec<String> {
    let names: Vec<String> = candidates
        .iter()
        .filter(|c| !c.is_empty())
        .map(|c| regex::escape(&c.to_lowercase()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if names.is_empty() {
        return Vec::new();
    }
    let alternatives = names.join("|");
    let ns = namespace
        .map(|n| format!(", namespace=\"{}\"", escape(n)))
        .unwrap_or_default();
    let mut out: Vec<String> = SUBJECT_KEYS
        .iter()
        .filter(|k| **k != "pod")
        .map(|k| format!("{{{k}=~\"{}\"{ns}}}", escape(&alternatives)))
        .collect();
    // Container metrics (cAdvisor) name pods, not services: `name-<hash>-<id>`.
    if namespace.is_some() {
        out.push(format!("{{pod=~\"({})-.+\"{ns}}}", escape(&alternatives)));
    }
    out
}

/// A subject's selectors for `/api/v1/series`, from an alert's subject matchers; with the
/// namespace and workload known, container metrics of its pods too.
pub fn subject_selectors(
    subject: &[LabelMatch],
    namespace: Option<&str>,
    workload: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    if !subject.is_empty() {
        out.push(format!("{{{}}}", render(subject)));
    }
    if let (Some(ns), Some(w)) = (namespace, workload) {
        out.push(format!(
            "{{namespace=\"{}\", pod=~\"{}-.+\"}}",
            escape(ns),
            escape(&regex::escape(w))
        ));
    }
    out
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

fn render(matchers: &[LabelMatch]) -> String {
    matchers
        .iter()
        .map(|m| format!("{}{}\"{}\"", m.name, m.op, escape(&m.value)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn eq(name: &str, value: &str) -> LabelMatch {
    LabelMatch {
        name: name.to_string(),
        op: "=",
        value: value.to_string(),
    }
}

/// Which subject the discovered series are about: the (label, value) naming one of the
/// candidates on the most series, plus the namespace when they carry it.
pub fn subject(
    series: &[Series],
    candidates: &[String],
    namespace: Option<&str>,
) -> Vec<Vec<LabelMatch>> {
    let wanted: BTreeSet<String> = candidates.iter().map(|c| c.to_lowercase()).collect();
    let mut counts: BTreeMap<(usize, String, String), usize> = BTreeMap::new();
    for s in series {
        for (i, key) in SUBJECT_KEYS
            .iter()
            .enumerate()
            .filter(|(_, k)| **k != "pod")
        {
            if let Some(v) = s.labels.get(*key)
                && wanted.contains(&v.to_lowercase())
            {
                *counts.entry((i, key.to_string(), v.clone())).or_default() += 1;
            }
        }
    }
    let best = counts
        .iter()
        .max_by_key(|((i, _, _), n)| (**n, std::cmp::Reverse(*i)))
        .map(|((_, k, v), _)| (k.clone(), v.clone()));
    let mut out = Vec::new();
    if let Some((k, v)) = &best {
        let mut m = vec![eq(k, v)];
        if let Some(ns) = namespace
            && series.iter().any(|s| {
                s.labels.get(k) == Some(v)
                    && s.labels.get("namespace").map(String::as_str) == Some(ns)
            })
        {
            m.push(eq("namespace", ns));
        }
        out.push(m);
    }
    // Pods of the subject, for container metrics.
    if let Some(ns) = namespace {
        let named = best.as_ref().map(|(_, v)| v.clone()).into_iter();
        for v in named.chain(wanted.iter().cloned()) {
            let pods = LabelMatch {
                name: "pod".into(),
                op: "=~",
                value: format!("{}-.+", regex::escape(&v)),
            };
            if series.iter().any(|s| {
                s.labels.get("namespace").map(String::as_str) == Some(ns)
                    && pods.matches(s.labels.get("pod").map(String::as_str))
            }) {
                out.push(vec![eq("namespace", ns), pods]);
                break;
            }
        }
    }
    out
}

/// What Prometheus says a metric is (`counter`, `gauge`, `histogram`, `summary`), else what its
/// name says by convention.
fn metric_type(name: &str, metadata: &[Series]) -> String {
    let family = ["_bucket", "_count", "_sum", "_total"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    let declared = metadata
        .iter()
        .find(|m| m.name == name || m.name == family)
        .and_then(|m| m.labels.get("type").cloned());
    match declared.as_deref() {
        Some("histogram") if name.ends_with("_count") => "counter".into(),
        Some(t) if !t.is_empty() && t != "unknown" => t.to_string(),
        _ if name.ends_with("_bucket") => "histogram".into(),
        _ if name.ends_with("_total") || name.ends_with("_count") => "counter".into(),
        _ => "gauge".into(),
    }
}

/// One metric's labels and the values seen for each.
type LabelValues = BTreeMap<String, BTreeSet<String>>;

/// The discovered metrics: name -> label -> values seen.
type Labels = BTreeMap<String, LabelValues>;

fn labels_by_metric(series: &[Series]) -> Labels {
    let mut out: Labels = BTreeMap::new();
    for s in series {
        let slot = out.entry(s.name.clone()).or_default();
        for (k, v) in &s.labels {
            slot.entry(k.clone()).or_default().insert(v.clone());
        }
    }
    out
}

/// The first subject whose every label the metric carries (with a value it matches).
fn scope_for<'a>(
    labels: &BTreeMap<String, BTreeSet<String>>,
    subjects: &'a [Vec<LabelMatch>],
) -> Option<&'a [LabelMatch]> {
    subjects
        .iter()
        .find(|subj| {
            !subj.is_empty()
                && subj.iter().all(|m| {
                    labels
                        .get(&m.name)
                        .is_some_and(|vals| vals.iter().any(|v| m.matches(Some(v))))
                })
        })
        .map(Vec::as_slice)
}

/// Preference among names of one role: request-shaped names first, then shorter names.
fn rank_names<'a>(mut names: Vec<&'a String>, prefer: &[&str]) -> Vec<&'a String> {
    names.sort_by_key(|n| {
        (
            !prefer.iter().any(|p| n.contains(p)),
            n.len(),
            n.to_string(),
        )
    });
    names.truncate(PER_ROLE);
    names
}

/// The error condition a metric's labels can express, as a matcher: 5xx codes, or error words.
fn error_matcher(labels: &BTreeMap<String, BTreeSet<String>>) -> Option<LabelMatch> {
    for key in CODE_LABELS {
        let Some(values) = labels.get(key) else {
            continue;
        };
        if values
            .iter()
            .any(|v| v.len() == 3 && v.starts_with('5') && v.chars().all(|c| c.is_ascii_digit()))
        {
            return Some(LabelMatch {
                name: key.into(),
                op: "=~",
                value: "5..".into(),
            });
        }
        if values.iter().any(|v| v.eq_ignore_ascii_case("5xx")) {
            let v = values
                .iter()
                .find(|v| v.eq_ignore_ascii_case("5xx"))
                .cloned()
                .unwrap_or_default();
            return Some(eq(key, &v));
        }
    }
    for key in OUTCOME_WORD_LABELS {
        let Some(values) = labels.get(key) else {
            continue;
        };
        let bad: Vec<&String> = values
            .iter()
            .filter(|v| {
                let v = v.to_lowercase();
                ["error", "failure", "failed", "fail", "server_error"].contains(&v.as_str())
            })
            .collect();
        if !bad.is_empty() {
            return Some(LabelMatch {
                name: key.into(),
                op: "=~",
                value: bad
                    .iter()
                    .map(|v| regex::escape(v))
                    .collect::<Vec<_>>()
                    .join("|"),
            });
        }
    }
    None
}

/// Suffix pairs (in use, capacity) of gauges that together say how full something is.
const SATURATION_PAIRS: [(&str, &str); 6] = [
    ("_active", "_max"),
    ("_in_use", "_max"),
    ("_used", "_limit"),
    ("_busy", "_size"),
    ("_in_use", "_capacity"),
    ("_used", "_capacity"),
];

/// The queries to run for a subject, from what was discovered about it.
pub fn plan(
    series: &[Series],
    metadata: &[Series],
    subjects: &[Vec<LabelMatch>],
) -> Vec<(Role, String)> {
    let metrics = labels_by_metric(series);
    let scoped: BTreeMap<&String, (&LabelValues, &[LabelMatch])> = metrics
        .iter()
        .filter_map(|(name, labels)| scope_for(labels, subjects).map(|s| (name, (labels, s))))
        .collect();
    let mut out = Vec::new();

    // Error ratio: a request counter whose labels say which requests failed.
    let counters: Vec<&String> = scoped
        .iter()
        .filter(|(n, (l, _))| metric_type(n, metadata) == "counter" && error_matcher(l).is_some())
        .map(|(n, _)| *n)
        .collect();
    for name in rank_names(counters, &["request", "http", "grpc", "call", "response"]) {
        let (labels, subj) = scoped[name];
        let Some(bad) = error_matcher(labels) else {
            continue;
        };
        let all = render(subj);
        let failed = render(&[subj.to_vec(), vec![bad]].concat());
        out.push((
            Role::ErrorRatio,
            format!("sum(rate({name}{{{failed}}}[5m])) / sum(rate({name}{{{all}}}[5m]))"),
        ));
    }

    // Latency: histograms (buckets with `le`).
    let histograms: Vec<&String> = scoped
        .iter()
        .filter(|(n, (l, _))| n.ends_with("_bucket") && l.contains_key("le"))
        .map(|(n, _)| *n)
        .collect();
    for name in rank_names(histograms, &["duration", "latency", "seconds"]) {
        let (_, subj) = scoped[name];
        out.push((
            Role::Latency,
            format!(
                "histogram_quantile(0.99, sum by (le) (rate({name}{{{}}}[5m])))",
                render(subj)
            ),
        ));
    }

    // Saturation: CPU throttling of its containers, and gauges in use against their capacity.
    let throttled = "container_cpu_cfs_throttled_periods_total".to_string();
    let periods = "container_cpu_cfs_periods_total".to_string();
    if let (Some((_, subj)), true) = (scoped.get(&throttled), scoped.contains_key(&periods)) {
        let s = render(subj);
        out.push((
            Role::Saturation,
            format!("sum(rate({throttled}{{{s}}}[5m])) / sum(rate({periods}{{{s}}}[5m]))"),
        ));
    }
    let mut pairs = Vec::new();
    for (name, (_, subj)) in &scoped {
        for (used, cap) in SATURATION_PAIRS {
            if let Some(stem) = name.strip_suffix(used) {
                let capacity = format!("{stem}{cap}");
                if scoped.contains_key(&capacity) && metric_type(name, metadata) == "gauge" {
                    let s = render(subj);
                    pairs.push((
                        Role::Saturation,
                        format!("max({name}{{{s}}}) / max({capacity}{{{s}}})"),
                    ));
                }
            }
        }
    }
    pairs.truncate(PER_ROLE);
    out.extend(pairs);

    // Versions: build info series, read raw so each version is its own series.
    for (name, (labels, subj)) in &scoped {
        let versioned = name.ends_with("_build_info")
            || (name.ends_with("_info") && labels.contains_key("version"));
        if versioned {
            out.push((Role::BuildInfo, format!("{name}{{{}}}", render(subj))));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, labels: &[(&str, &str)]) -> Series {
        Series {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            points: Vec::new(),
        }
    }

    #[test]
    fn selectors_try_every_subject_label_and_escape() {
        let sel = selectors(&["pay.ments".into(), "Pay.ments".into()], Some("fin"));
        assert!(
            sel.contains(&r#"{job=~"pay\\.ments", namespace="fin"}"#.to_string()),
            "{sel:?}"
        );
        assert!(
            sel.iter().all(|q| promql_parser::parser::parse(q).is_ok()),
            "{sel:?}"
        );
        assert!(selectors(&[], None).is_empty());
    }

    #[test]
    fn queries_come_from_discovered_names_and_label_values() {
        let series = vec![
            s(
                "ledger_rpc_handled_total",
                &[("job", "ledger"), ("status_code", "200")],
            ),
            s(
                "ledger_rpc_handled_total",
                &[("job", "ledger"), ("status_code", "503")],
            ),
            s(
                "ledger_rpc_seconds_bucket",
                &[("job", "ledger"), ("le", "0.1")],
            ),
            s("ledger_db_pool_active", &[("job", "ledger")]),
            s("ledger_db_pool_max", &[("job", "ledger")]),
            s(
                "ledger_build_info",
                &[("job", "ledger"), ("version", "2.0.1")],
            ),
            s("ledger_queue_depth", &[("job", "ledger")]),
            s("up", &[("job", "other")]),
        ];
        let subj = subject(&series, &["ledger".into(), "errors".into()], None);
        assert_eq!(subj, vec![vec![eq("job", "ledger")]]);
        let q: Vec<(Role, String)> = plan(&series, &[], &subj);
        let roles: Vec<Role> = q.iter().map(|(r, _)| *r).collect();
        assert_eq!(
            roles,
            vec![
                Role::ErrorRatio,
                Role::Latency,
                Role::Saturation,
                Role::BuildInfo
            ]
        );
        assert_eq!(
            q[0].1,
            r#"sum(rate(ledger_rpc_handled_total{job="ledger", status_code=~"5.."}[5m])) / sum(rate(ledger_rpc_handled_total{job="ledger"}[5m]))"#
        );
        assert!(q[1].1.contains("ledger_rpc_seconds_bucket"));
        assert_eq!(
            q[2].1,
            r#"max(ledger_db_pool_active{job="ledger"}) / max(ledger_db_pool_max{job="ledger"})"#
        );
        for (_, query) in &q {
            assert!(promql_parser::parser::parse(query).is_ok(), "{query}");
        }
    }

    #[test]
    fn metadata_overrides_names_and_nothing_is_guessed() {
        // Declared a gauge despite `_total`: no error ratio; no code label: no error ratio either.
        let series = vec![
            s("jobs_total", &[("service", "batch"), ("code", "500")]),
            s("batch_requests", &[("service", "batch")]),
        ];
        let meta = vec![s("jobs_total", &[("type", "gauge")])];
        let subj = subject(&series, &["batch".into()], None);
        assert!(plan(&series, &meta, &subj).is_empty());
        assert!(!plan(&series, &[], &subj).is_empty());
        // Nothing named after the subject: no queries at all.
        assert!(subject(&series, &["orders".into()], None).is_empty());
    }

    #[test]
    fn container_metrics_are_scoped_to_the_subjects_pods() {
        let series = vec![
            s(
                "http_requests_total",
                &[("service", "web"), ("namespace", "shop"), ("code", "502")],
            ),
            s(
                "container_cpu_cfs_throttled_periods_total",
                &[("namespace", "shop"), ("pod", "web-6f9-abcde")],
            ),
            s(
                "container_cpu_cfs_periods_total",
                &[("namespace", "shop"), ("pod", "web-6f9-abcde")],
            ),
        ];
        let subj = subject(&series, &["web".into()], Some("shop"));
        assert_eq!(subj.len(), 2, "{subj:?}");
        let q = plan(&series, &[], &subj);
        let sat = q
            .iter()
            .find(|(r, _)| *r == Role::Saturation)
            .map(|(_, q)| q.clone())
            .unwrap_or_default();
        assert!(
            sat.contains(r#"pod=~"web-.+""#) && sat.contains(r#"namespace="shop""#),
            "{sat}"
        );
        let ratio = &q[0].1;
        assert!(
            ratio.contains(r#"service="web", namespace="shop", code=~"5..""#),
            "{ratio}"
        );
    }
}
