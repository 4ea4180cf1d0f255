//! Reads an alert's PromQL with a real parser: its measured expression, threshold, selectors and the sibling queries around it.

use promql_parser::label::MatchOp;
use promql_parser::parser::{self, Expr};
use std::collections::BTreeMap;

/// An alert expression's comparison: `expr > 0.05` fires while the value is above 0.05.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    pub op: &'static str,
    pub value: f64,
}

impl Threshold {
    /// Whether `v` keeps the alert firing.
    pub fn breached(&self, v: f64) -> bool {
        match self.op {
            ">" => v > self.value,
            ">=" => v >= self.value,
            "<" => v < self.value,
            "<=" => v <= self.value,
            "==" => (v - self.value).abs() < f64::EPSILON,
            _ => (v - self.value).abs() >= f64::EPSILON,
        }
    }

    /// Whether the alert fires on high values.
    pub fn above(&self) -> bool {
        matches!(self.op, ">" | ">=")
    }
}

/// One label matcher, with every PromQL kind: `=`, `!=`, `=~`, `!~`.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelMatch {
    pub name: String,
    pub op: &'static str,
    pub value: String,
}

impl LabelMatch {
    /// Whether a label value satisfies the matcher (regexes are anchored, as in Prometheus).
    pub fn matches(&self, value: Option<&str>) -> bool {
        let v = value.unwrap_or("");
        let re = || regex::Regex::new(&format!("^(?:{})$", self.value)).ok();
        match self.op {
            "=" => v == self.value,
            "!=" => v != self.value,
            "=~" => re().is_some_and(|r| r.is_match(v)),
            _ => re().is_none_or(|r| !r.is_match(v)),
        }
    }

    fn render(&self) -> String {
        format!(
            "{}{}\"{}\"",
            self.name,
            self.op,
            self.value.replace('\\', "\\\\").replace('"', "\\\"")
        )
    }
}

/// A vector selector: the metric name and its matchers.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Selector {
    pub metric: Option<String>,
    pub matchers: Vec<LabelMatch>,
}

impl Selector {
    /// Whether a series (name and labels) is selected.
    pub fn matches(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.metric.as_deref().is_none_or(|m| m == name)
            && self
                .matchers
                .iter()
                .all(|m| m.matches(labels.get(&m.name).map(String::as_str)))
    }

    /// Matchers on labels that say what the outcome of a request was (`code=~"5.."`).
    pub fn outcome_matchers(&self) -> Vec<&LabelMatch> {
        self.matchers
            .iter()
            .filter(|m| OUTCOME_LABELS.contains(&m.name.as_str()))
            .collect()
    }

    /// Equality matchers on labels that name what is measured (service, job, namespace, ...).
    pub fn subject_matchers(&self) -> Vec<&LabelMatch> {
        self.matchers
            .iter()
            .filter(|m| m.op == "=" && !m.value.is_empty())
            .filter(|m| !OUTCOME_LABELS.contains(&m.name.as_str()) && m.name != "__name__")
            .collect()
    }

    /// Whether the selector counts failed requests: a status matcher that keeps 5xx (or errors).
    pub fn counts_errors(&self) -> bool {
        // kube-state-metrics series state an object's condition (`status="false"` on a
        // Deployment's Progressing condition): a state, not the outcome of requests.
        if self
            .metric
            .as_deref()
            .is_some_and(|m| m.starts_with("kube_"))
        {
            return false;
        }
        self.outcome_matchers().iter().any(|m| {
            let five = ["500", "502", "503", "504"]
                .iter()
                .any(|c| m.matches(Some(c)));
            let ok = m.matches(Some("200"));
            let error_word = ["error", "failure", "failed", "false"]
                .iter()
                .any(|w| m.matches(Some(w)));
            (five && !ok) || (error_word && !m.matches(Some("success")))
        })
    }
}

/// Labels that classify a request's result rather than name its subject.
const OUTCOME_LABELS: [&str; 10] = [
    "code",
    "status",
    "status_code",
    "response_code",
    "http_status",
    "result",
    "outcome",
    "error",
    "le",
    "quantile",
];

/// An alert expression taken apart.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertExpr {
    /// The measured expression, without its threshold (PromQL text as the parser prints it).
    pub base: String,
    pub threshold: Option<Threshold>,
    /// Every vector selector read by the expression, in order.
    pub selectors: Vec<Selector>,
}

impl AlertExpr {
    /// The first selector that names a metric.
    pub fn primary(&self) -> Option<&Selector> {
        self.selectors
            .iter()
            .find(|s| s.metric.is_some())
            .or(self.selectors.first())
    }

    /// Subject matchers common to the expression (from the primary selector).
    pub fn subject(&self) -> Vec<LabelMatch> {
        self.primary()
            .map(|s| s.subject_matchers().into_iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether the expression measures failed requests.
    pub fn counts_errors(&self) -> bool {
        self.selectors.iter().any(Selector::counts_errors)
    }

    /// Whether it measures latency (a histogram, a summary or a duration metric).
    pub fn measures_latency(&self) -> bool {
        self.base.contains("histogram_quantile")
            || self.selectors.iter().any(|s| {
                s.metric.as_deref().is_some_and(|m| {
                    ["duration", "latency", "_bucket"]
                        .iter()
                        .any(|k| m.contains(k))
                })
            })
    }
}

/// Parses an alert expression. A clear error (never a panic) when it is not PromQL.
pub fn parse(expr: &str) -> Result<AlertExpr, String> {
    let ast = parser::parse(expr.trim()).map_err(|e| format!("not PromQL ({e}): {expr}"))?;
    let (base, threshold) = split(&ast);
    let mut selectors = Vec::new();
    collect(&ast, &mut selectors);
    Ok(AlertExpr {
        base: base.to_string(),
        threshold,
        selectors,
    })
}

fn unparen(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => unparen(&p.expr),
        other => other,
    }
}

/// The measured side of the (first) comparison against a number, and that comparison.
fn split(e: &Expr) -> (&Expr, Option<Threshold>) {
    if let Expr::Binary(b) = unparen(e) {
        let op = b.op.to_string();
        let returns_bool = b.modifier.as_ref().is_some_and(|m| m.return_bool);
        if b.op.is_comparison_operator() && !returns_bool {
            let op: &'static str = match op.as_str() {
                ">" => ">",
                ">=" => ">=",
                "<" => "<",
                "<=" => "<=",
                "==" => "==",
                _ => "!=",
            };
            if let Expr::NumberLiteral(n) = unparen(&b.rhs) {
                return (&b.lhs, Some(Threshold { op, value: n.val }));
            }
            if let Expr::NumberLiteral(n) = unparen(&b.lhs) {
                let flipped = match op {
                    ">" => "<",
                    ">=" => "<=",
                    "<" => ">",
                    "<=" => ">=",
                    other => other,
                };
                return (
                    &b.rhs,
                    Some(Threshold {
                        op: flipped,
                        value: n.val,
                    }),
                );
            }
        }
        // `a > 1 and b > 2`, `a > 1 unless on() maintenance`: the left side is what is measured.
        if matches!(op.as_str(), "and" | "unless" | "or") {
            let (base, t) = split(&b.lhs);
            if t.is_some() {
                return (base, t);
            }
        }
    }
    (e, None)
}

fn collect(e: &Expr, out: &mut Vec<Selector>) {
    match e {
        Expr::VectorSelector(v) => out.push(selector(v)),
        Expr::MatrixSelector(m) => out.push(selector(&m.vs)),
        Expr::Aggregate(a) => {
            collect(&a.expr, out);
            if let Some(p) = &a.param {
                collect(p, out);
            }
        }
        Expr::Unary(u) => collect(&u.expr, out),
        Expr::Binary(b) => {
            collect(&b.lhs, out);
            collect(&b.rhs, out);
        }
        Expr::Paren(p) => collect(&p.expr, out),
        Expr::Subquery(s) => collect(&s.expr, out),
        Expr::Call(c) => {
            for a in &c.args.args {
                collect(a, out);
            }
        }
        _ => {}
    }
}

fn selector(v: &promql_parser::parser::VectorSelector) -> Selector {
    let matchers = v
        .matchers
        .matchers
        .iter()
        .filter(|m| m.name != "__name__" || v.name.is_none())
        .map(|m| LabelMatch {
            name: m.name.clone(),
            op: match &m.op {
                MatchOp::Equal => "=",
                MatchOp::NotEqual => "!=",
                MatchOp::Re(_) => "=~",
                MatchOp::NotRe(_) => "!~",
            },
            value: m.value.clone(),
        })
        .collect();
    Selector {
        metric: v.name.clone(),
        matchers,
    }
}

fn braces(matchers: &[LabelMatch]) -> String {
    matchers
        .iter()
        .map(LabelMatch::render)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a sibling query measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    ErrorRatio,
    Latency,
    Saturation,
    BuildInfo,
    HpaCurrent,
    HpaMax,
}

impl Role {
    pub fn describe(self) -> &'static str {
        match self {
            Role::ErrorRatio => "error ratio",
            Role::Latency => "p99 latency",
            Role::Saturation => "CPU throttling",
            Role::BuildInfo => "build info",
            Role::HpaCurrent => "HPA current replicas",
            Role::HpaMax => "HPA max replicas",
        }
    }
}

/// Queries next to the alert's own that its expression alone determines: the error ratio of the
/// metric it counts failures of, and the HPA of its workload (kube-state-metrics' own names).
/// Latency, saturation and versions come from discovery (`reason::discover`), not guessed names.
pub fn siblings(e: &AlertExpr) -> Vec<(Role, String)> {
    let mut out = Vec::new();
    let subject = e.subject();
    if let Some(sel) = e
        .selectors
        .iter()
        .find(|s| s.counts_errors() && s.metric.is_some())
        && let Some(metric) = &sel.metric
    {
        let keep: Vec<LabelMatch> = sel
            .matchers
            .iter()
            .filter(|m| !OUTCOME_LABELS.contains(&m.name.as_str()))
            .cloned()
            .collect();
        out.push((
            Role::ErrorRatio,
            format!(
                "sum(rate({metric}{{{}}}[5m])) / sum(rate({metric}{{{}}}[5m]))",
                braces(&sel.matchers),
                braces(&keep)
            ),
        ));
    }
    if subject.is_empty() {
        return out;
    }
    if let Some(ns) = subject.iter().find(|m| m.name == "namespace")
        && let Some(w) = subject.iter().find(|m| {
            [
                "deployment",
                "service",
                "app",
                "workload",
                "container",
                "job",
            ]
            .contains(&m.name.as_str())
        })
    {
        let hpa = format!(
            "namespace=\"{}\", horizontalpodautoscaler=~\"{}.*\"",
            ns.value,
            regex::escape(&w.value)
        );
        out.push((
            Role::HpaCurrent,
            format!("kube_horizontalpodautoscaler_status_current_replicas{{{hpa}}}"),
        ));
        out.push((
            Role::HpaMax,
            format!("kube_horizontalpodautoscaler_spec_max_replicas{{{hpa}}}"),
        ));
    }
    out
}

/// What a query measures, read from its structure: the shapes discovery and [`siblings`] build,
/// so the reasoning knows a discovered series' role from its query text alone.
pub fn role_of(query: &str) -> Option<Role> {
    let e = parse(query).ok()?;
    let names: Vec<&str> = e
        .selectors
        .iter()
        .filter_map(|s| s.metric.as_deref())
        .collect();
    if names
        .iter()
        .any(|n| n.starts_with("kube_horizontalpodautoscaler_"))
    {
        return Some(if names.iter().any(|n| n.contains("max_replicas")) {
            Role::HpaMax
        } else {
            Role::HpaCurrent
        });
    }
    if e.base.contains("histogram_quantile") {
        return Some(Role::Latency);
    }
    let ratio = e.selectors.len() == 2 && e.base.contains('/');
    if ratio && e.counts_errors() {
        return Some(Role::ErrorRatio);
    }
    if ratio
        && names.last().is_some_and(|n| {
            ["_max", "_limit", "_size", "_capacity", "cfs_periods_total"]
                .iter()
                .any(|s| n.ends_with(s))
        })
    {
        return Some(Role::Saturation);
    }
    if e.selectors.len() == 1 && names.first().is_some_and(|n| n.ends_with("_info")) {
        return Some(Role::BuildInfo);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_series_condition_is_not_a_count_of_errors() {
        let state = parse(
            r#"kube_deployment_status_condition{namespace="shop",condition="Progressing",status="false"} == 1"#,
        )
        .expect("parses");
        assert!(!state.counts_errors());
        let requests = parse(r#"sum(rate(grpc_server_handled_total{status="false"}[5m])) > 1"#)
            .expect("parses");
        assert!(requests.counts_errors());
    }

    #[test]
    fn splits_threshold_and_reads_every_matcher_kind() {
        let e = parse(
            r#"sum(rate(http_requests_total{service="checkout",code=~"5..",method!="OPTIONS",path!~"/health.*"}[5m])) / sum(rate(http_requests_total{service="checkout"}[5m])) > 0.05"#,
        )
        .expect("parses");
        let t = e.threshold.expect("threshold");
        assert_eq!((t.op, t.value), (">", 0.05));
        assert!(t.breached(0.06) && !t.breached(0.05));
        assert!(!e.base.contains("0.05"), "{}", e.base);
        let ops: Vec<&str> = e.selectors[0].matchers.iter().map(|m| m.op).collect();
        for op in ["=", "=~", "!=", "!~"] {
            assert!(ops.contains(&op), "{ops:?}");
        }
        assert!(e.counts_errors());
        assert_eq!(e.subject()[0].value, "checkout");
        let mut labels = BTreeMap::from([
            ("service".to_string(), "checkout".to_string()),
            ("code".to_string(), "503".to_string()),
            ("method".to_string(), "GET".to_string()),
            ("path".to_string(), "/pay".to_string()),
        ]);
        assert!(e.selectors[0].matches("http_requests_total", &labels));
        labels.insert("path".into(), "/healthz".into());
        assert!(!e.selectors[0].matches("http_requests_total", &labels));
        labels.insert("path".into(), "/pay".into());
        labels.insert("code".into(), "200".into());
        assert!(!e.selectors[0].matches("http_requests_total", &labels));
    }

    #[test]
    fn number_on_the_left_flips_the_comparison() {
        let e = parse("0.5 < rate(errors_total[5m])").expect("parses");
        assert_eq!(e.threshold.map(|t| t.op), Some(">"));
        assert_eq!(e.base, "rate(errors_total[5m])");
        let e = parse("(up{job=\"api\"} == 0) and on() vector(1)").expect("parses");
        assert_eq!(e.threshold.map(|t| (t.op, t.value)), Some(("==", 0.0)));
        assert!(parse("up{").is_err());
        assert_eq!(parse("up").map(|e| e.threshold), Ok(None));
    }

    #[test]
    fn siblings_measure_the_same_subject() {
        let e = parse(r#"rate(http_requests_total{namespace="shop",service="checkout",status=~"5.."}[5m]) > 1"#)
            .expect("parses");
        let q: BTreeMap<&str, String> = siblings(&e)
            .into_iter()
            .map(|(r, q)| (r.describe(), q))
            .collect();
        let ratio = &q["error ratio"];
        assert!(
            ratio.contains(r#"status=~"5..""#) && ratio.matches("status").count() == 1,
            "{ratio}"
        );
        assert!(parser::parse(ratio).is_ok(), "{ratio}");
        for query in q.values() {
            assert!(parser::parse(query).is_ok(), "{query}");
            assert!(query.contains("checkout"), "{query}");
        }
        // Nothing is guessed: latency, saturation and versions come from discovery.
        assert!(!q.contains_key("p99 latency") && !q.contains_key("build info"));
        assert_eq!(role_of(ratio), Some(Role::ErrorRatio));
        assert_eq!(
            role_of("histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket{a=\"b\"}[5m])))"),
            Some(Role::Latency)
        );
        assert_eq!(
            role_of("max(p_active{a=\"b\"}) / max(p_max{a=\"b\"})"),
            Some(Role::Saturation)
        );
        assert_eq!(role_of("web_build_info{a=\"b\"}"), Some(Role::BuildInfo));
        assert_eq!(role_of("sum(rate(x_total[5m]))"), None);
        let ok_only = parse(r#"rate(http_requests_total{code="200"}[5m]) < 1"#).expect("parses");
        assert!(!ok_only.counts_errors());
    }
}
