//! YAML runbooks: parse, validate with file:line:column errors, match alerts, render params.
//!
//! A runbook names what it applies to (`match` on alert labels or problem keywords) and lists
//! steps: `gather` (a read tool and templated params), `diagnose` (a finding when a condition
//! holds) and `action` (a remediation with a risk, proposed when its `when` holds). Templates are
//! minijinja with strict undefined, so a typo in `{{ alert.labels.namespac }}` is an error, not
//! an empty string.

use crate::model::catalog;
use crate::model::{Alert, Category, Risk};
use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Deserialize;
use serde_saphyr::{Location, Spanned};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The runbooks shipped in the binary.
const BUILTIN: &[(&str, &str)] = &[
    (
        "runbooks/bad-deploy.yaml",
        include_str!("../../runbooks/bad-deploy.yaml"),
    ),
    (
        "runbooks/image-pull.yaml",
        include_str!("../../runbooks/image-pull.yaml"),
    ),
    (
        "runbooks/cpu-saturation.yaml",
        include_str!("../../runbooks/cpu-saturation.yaml"),
    ),
    (
        "runbooks/dependency-down.yaml",
        include_str!("../../runbooks/dependency-down.yaml"),
    ),
    (
        "runbooks/node-not-ready.yaml",
        include_str!("../../runbooks/node-not-ready.yaml"),
    ),
    (
        "runbooks/crashloop-oom.yaml",
        include_str!("../../runbooks/crashloop-oom.yaml"),
    ),
];

/// A validation problem, pointing at the file, line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunbookError {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    /// What was expected there.
    pub expected: String,
}

impl fmt::Display for RunbookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.expected
        )
    }
}

impl std::error::Error for RunbookError {}

/// One YAML runbook.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runbook {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "match")]
    pub matcher: Match,
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// What a runbook applies to: every listed label matches one of its values, or any keyword
/// appears in the problem text or the alert's name and summary.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    #[serde(default)]
    pub labels: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub keywords: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    Gather(GatherStep),
    Diagnose(DiagnoseStep),
    Action(ActionStep),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatherStep {
    pub tool: Spanned<String>,
    #[serde(default)]
    pub params: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub when: Option<Spanned<String>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiagnoseStep {
    /// Condition over the context (`findings`, `facts`, `diagnosis`, ...).
    pub when: Spanned<String>,
    pub summary: Spanned<String>,
    pub category: Spanned<String>,
    #[serde(default)]
    pub confidence: Option<f32>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionStep {
    pub tool: Spanned<String>,
    pub target: Spanned<String>,
    #[serde(default)]
    pub params: BTreeMap<String, Spanned<String>>,
    pub risk: Spanned<String>,
    #[serde(default)]
    pub when: Option<Spanned<String>>,
    pub rationale: Spanned<String>,
    #[serde(default)]
    pub blast_radius: String,
}

/// A template that failed to render or evaluate.
#[derive(Debug, thiserror::Error)]
#[error("runbook {runbook}: {what}: {message}")]
pub struct TemplateError {
    pub runbook: String,
    pub what: String,
    pub message: String,
}

fn env() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env
}

/// Render one templated string against `ctx`.
pub fn render(template: &str, ctx: &serde_json::Value) -> Result<String, String> {
    env()
        .render_str(template, to_value(ctx))
        .map_err(|e| describe(&e))
}

/// Evaluate a `when` condition against `ctx`.
pub fn eval_when(expr: &str, ctx: &serde_json::Value) -> Result<bool, String> {
    let env = env();
    let compiled = env.compile_expression(expr).map_err(|e| describe(&e))?;
    compiled
        .eval(to_value(ctx))
        .map(|v| v.is_true())
        .map_err(|e| describe(&e))
}

/// JSON context -> template values (minijinja is built without its serde feature).
fn to_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::from(()),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(f)) => Value::from(f),
            _ => Value::from(()),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => a.iter().map(to_value).collect(),
        serde_json::Value::Object(m) => Value::from_object(
            m.iter()
                .map(|(k, v)| (Value::from(k.as_str()), to_value(v)))
                .collect::<BTreeMap<Value, Value>>(),
        ),
    }
}

fn describe(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(d) => format!("{}: {d}", e.kind()),
        None => e.kind().to_string(),
    }
}

/// Rendered params: numbers and booleans become JSON numbers and booleans.
pub fn render_params(
    params: &BTreeMap<String, Spanned<String>>,
    ctx: &serde_json::Value,
) -> Result<BTreeMap<String, serde_json::Value>, String> {
    params
        .iter()
        .map(|(k, v)| {
            let text = render(&v.value, ctx).map_err(|e| format!("param {k}: {e}"))?;
            let value = if let Ok(n) = text.trim().parse::<i64>() {
                serde_json::Value::from(n)
            } else if text == "true" || text == "false" {
                serde_json::Value::Bool(text == "true")
            } else {
                serde_json::Value::String(text)
            };
            Ok((k.clone(), value))
        })
        .collect()
}

impl Runbook {
    /// How well this runbook fits; `None` when it does not apply.
    pub fn score(&self, alert: Option<&Alert>, problem: Option<&str>) -> Option<u32> {
        let m = &self.matcher;
        let labels_ok = !m.labels.is_empty()
            && alert.is_some_and(|a| {
                m.labels.iter().all(|(k, vals)| {
                    a.label(k)
                        .is_some_and(|v| vals.iter().any(|want| want == v || want == "*"))
                })
            });
        let mut text = String::new();
        if let Some(p) = problem {
            text.push_str(p);
        }
        if let Some(a) = alert {
            text.push(' ');
            text.push_str(a.name());
            text.push(' ');
            text.push_str(a.annotation("summary").unwrap_or(""));
        }
        let text = text.to_lowercase();
        let hits = m
            .keywords
            .iter()
            .filter(|k| !k.is_empty() && text.contains(&k.to_lowercase()))
            .count() as u32;
        match (labels_ok, hits) {
            (false, 0) => None,
            (true, h) => Some(10 * m.labels.len() as u32 + h),
            (false, h) => Some(h),
        }
    }

    pub fn risk_of(step: &ActionStep) -> Risk {
        Risk::parse(&step.risk.value).unwrap_or(Risk::Critical)
    }
}

/// Parse one runbook's text; errors carry the file's line and column.
pub fn parse(file: &Path, text: &str) -> Result<Runbook, Vec<RunbookError>> {
    let rb: Runbook = serde_saphyr::from_str(text).map_err(|e| {
        let loc = e.location();
        vec![RunbookError {
            file: file.to_path_buf(),
            line: loc.map(|l| l.line()).unwrap_or(1),
            column: loc.map(|l| l.column()).unwrap_or(1),
            expected: first_line(&e.without_snippet().to_string()),
        }]
    })?;
    let errors = validate(file, &rb);
    if errors.is_empty() {
        Ok(rb)
    } else {
        Err(errors)
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).trim().to_string()
}

fn at(file: &Path, loc: Location, expected: String) -> RunbookError {
    RunbookError {
        file: file.to_path_buf(),
        line: loc.line(),
        column: loc.column(),
        expected,
    }
}

/// Checks beyond the YAML shape: known tools, risks and categories, templates that compile.
fn validate(file: &Path, rb: &Runbook) -> Vec<RunbookError> {
    let mut errors = Vec::new();
    let env = env();
    let template = |s: &Spanned<String>, errors: &mut Vec<RunbookError>| {
        if let Err(e) = env.template_from_str(&s.value) {
            errors.push(at(
                file,
                s.referenced,
                format!("a valid template ({})", describe(&e)),
            ));
        }
    };
    let condition = |s: &Spanned<String>, errors: &mut Vec<RunbookError>| {
        if let Err(e) = env.compile_expression(&s.value) {
            errors.push(at(
                file,
                s.referenced,
                format!("a valid condition ({})", describe(&e)),
            ));
        }
    };
    if rb.name.trim().is_empty() {
        errors.push(RunbookError {
            file: file.to_path_buf(),
            line: 1,
            column: 1,
            expected: "a non-empty `name`".into(),
        });
    }
    if rb.matcher.labels.is_empty() && rb.matcher.keywords.is_empty() {
        errors.push(RunbookError {
            file: file.to_path_buf(),
            line: 1,
            column: 1,
            expected: "`match` with `labels` or `keywords`".into(),
        });
    }
    for step in &rb.steps {
        match step {
            Step::Gather(g) => {
                match catalog::lookup(&g.tool.value) {
                    Some(e) if !e.mutating => {
                        param_names(file, e, &g.tool, &g.params, false, &mut errors)
                    }
                    _ => errors.push(at(
                        file,
                        g.tool.referenced,
                        format!("a read tool, one of {}", names(catalog::reads())),
                    )),
                }
                g.params.values().for_each(|p| template(p, &mut errors));
                if let Some(w) = &g.when {
                    condition(w, &mut errors);
                }
            }
            Step::Diagnose(d) => {
                condition(&d.when, &mut errors);
                template(&d.summary, &mut errors);
                if Category::parse(&d.category.value).is_none() {
                    errors.push(at(
                        file,
                        d.category.referenced,
                        format!(
                            "a category, one of {}",
                            Category::ALL.map(|c| c.name()).join(", ")
                        ),
                    ));
                }
                if d.confidence.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
                    errors.push(at(
                        file,
                        d.category.referenced,
                        "a confidence between 0 and 1".into(),
                    ));
                }
            }
            Step::Action(a) => {
                let entry = catalog::lookup(&a.tool.value).filter(|e| e.mutating);
                match entry {
                    Some(e) => param_names(file, e, &a.tool, &a.params, true, &mut errors),
                    None => errors.push(at(
                        file,
                        a.tool.referenced,
                        format!("an action, one of {}", names(catalog::actions())),
                    )),
                }
                match (Risk::parse(&a.risk.value), entry) {
                    (None, _) => errors.push(at(
                        file,
                        a.risk.referenced,
                        "a risk: low, medium, high or critical".into(),
                    )),
                    // A runbook may raise an action's risk, never lower it.
                    (Some(risk), Some(e)) if risk < e.floor => errors.push(at(
                        file,
                        a.risk.referenced,
                        format!(
                            "a risk of at least {} ({} is never below {}; declared {})",
                            e.floor, e.name, e.floor, risk
                        ),
                    )),
                    _ => {}
                }
                template(&a.target, &mut errors);
                template(&a.rationale, &mut errors);
                a.params.values().for_each(|p| template(p, &mut errors));
                if let Some(w) = &a.when {
                    condition(w, &mut errors);
                }
            }
        }
    }
    errors
}

/// `a, b, c` from catalog entries.
fn names<'a>(entries: impl Iterator<Item = &'a catalog::Entry>) -> String {
    entries
        .map(|e| e.name.as_ref())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every param must be in the kind's schema; required ones must be there (an action's target
/// may stand in for the param that names it). Values are templates, so types are checked when
/// the step renders, not here.
fn param_names(
    file: &Path,
    entry: &catalog::Entry,
    tool: &Spanned<String>,
    params: &BTreeMap<String, Spanned<String>>,
    has_target: bool,
    errors: &mut Vec<RunbookError>,
) {
    for (name, value) in params {
        if entry.param(name).is_none() {
            errors.push(at(
                file,
                value.referenced,
                format!(
                    "a parameter of {}, one of {} (not `{name}`)",
                    entry.name,
                    catalog::param_names(entry)
                ),
            ));
        }
    }
    for p in entry.params.iter().filter(|p| p.required) {
        let by_target = has_target && entry.target_param() == Some(p.name);
        if !params.contains_key(p.name) && !by_target {
            errors.push(at(
                file,
                tool.referenced,
                format!(
                    "`{}` among the params of {} ({})",
                    p.name, entry.name, p.description
                ),
            ));
        }
    }
}

/// `sitrep runbooks check [PATH]`: validate one file or every `*.yaml`/`*.yml` in a directory.
/// Ok holds the names of the valid runbooks; Err every problem found.
pub fn check(path: &Path) -> Result<Vec<String>, Vec<RunbookError>> {
    let files = match yaml_files(path) {
        Ok(f) => f,
        Err(e) => {
            return Err(vec![RunbookError {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                expected: format!("a readable runbook file or directory ({e})"),
            }]);
        }
    };
    let mut names: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                errors.push(RunbookError {
                    file: file.clone(),
                    line: 0,
                    column: 0,
                    expected: format!("a readable UTF-8 file ({e})"),
                });
                continue;
            }
        };
        match parse(&file, &text) {
            Ok(rb) if names.contains(&rb.name) => errors.push(RunbookError {
                file: file.clone(),
                line: 1,
                column: 1,
                expected: format!("a unique name (`{}` is used twice)", rb.name),
            }),
            Ok(rb) => names.push(rb.name),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(names)
    } else {
        Err(errors)
    }
}

fn yaml_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yaml") | Some("yml")
                )
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The built-in runbooks (a broken one is left out; a test keeps them all valid).
pub fn builtin() -> Vec<Runbook> {
    BUILTIN
        .iter()
        .filter_map(|(file, text)| parse(Path::new(file), text).ok())
        .collect()
}

/// Built-in runbooks plus those in `dir`; problems in `dir` come back alongside.
pub fn load(dir: Option<&Path>) -> (Vec<Runbook>, Vec<RunbookError>) {
    let mut books = builtin();
    let mut errors = Vec::new();
    if let Some(dir) = dir {
        match yaml_files(dir) {
            Ok(files) => {
                for f in files {
                    match std::fs::read_to_string(&f) {
                        Ok(text) => match parse(&f, &text) {
                            Ok(rb) => {
                                books.retain(|b| b.name != rb.name);
                                books.push(rb);
                            }
                            Err(mut e) => errors.append(&mut e),
                        },
                        Err(e) => errors.push(RunbookError {
                            file: f.clone(),
                            line: 0,
                            column: 0,
                            expected: format!("a readable UTF-8 file ({e})"),
                        }),
                    }
                }
            }
            Err(e) => errors.push(RunbookError {
                file: dir.to_path_buf(),
                line: 0,
                column: 0,
                expected: format!("a readable runbook directory ({e})"),
            }),
        }
    }
    (books, errors)
}

/// The best-matching runbook for an alert or problem.
pub fn best<'a>(
    books: &'a [Runbook],
    alert: Option<&Alert>,
    problem: Option<&str>,
) -> Option<&'a Runbook> {
    books
        .iter()
        .filter_map(|b| b.score(alert, problem).map(|s| (s, b)))
        .max_by_key(|(s, _)| *s)
        .map(|(_, b)| b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOOD: &str = r#"name: demo
description: test
match:
  labels:
    alertname: [HighErrorRate]
  keywords: [error rate]
steps:
  - gather:
      tool: kubernetes.pods
      params:
        namespace: "{{ alert.labels.namespace }}"
  - action:
      tool: kubernetes.scale
      target: "deployment/{{ scope.workload }}"
      params:
        replicas: "6"
      risk: medium
      when: "diagnosis.category == 'resource_exhaustion'"
      rationale: more replicas
"#;

    #[test]
    fn a_good_runbook_parses_and_renders() {
        let rb = parse(Path::new("x.yaml"), GOOD).unwrap();
        assert_eq!(rb.steps.len(), 2);
        let ctx = json!({"alert": {"labels": {"namespace": "shop"}}, "scope": {"workload": "web"},
                         "diagnosis": {"category": "resource_exhaustion"}});
        let Step::Gather(g) = &rb.steps[0] else {
            panic!("first step is gather")
        };
        let p = render_params(&g.params, &ctx).unwrap();
        assert_eq!(p["namespace"], json!("shop"));
        let Step::Action(a) = &rb.steps[1] else {
            panic!("second step is an action")
        };
        assert_eq!(render(&a.target.value, &ctx).unwrap(), "deployment/web");
        assert_eq!(
            render_params(&a.params, &ctx).unwrap()["replicas"],
            json!(6)
        );
        assert!(eval_when(a.when.as_ref().unwrap().value.as_str(), &ctx).unwrap());
    }

    #[test]
    fn strict_undefined_is_an_error() {
        let ctx = json!({"alert": {"labels": {}}});
        assert!(render("{{ alert.labels.namespace }}", &ctx).is_err());
        assert!(eval_when("diagnosis.category == 'x'", &ctx).is_err());
    }

    #[test]
    fn unknown_tool_points_at_its_line_and_column() {
        let text = GOOD.replace("tool: kubernetes.pods", "tool: kubernetes.podz");
        let errs = parse(Path::new("x.yaml"), &text).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!((errs[0].line, errs[0].column), (9, 13));
        assert!(errs[0].to_string().starts_with("x.yaml:9:13: a read tool"));
    }

    #[test]
    fn yaml_errors_carry_a_location() {
        let text = GOOD.replace("risk: medium", "risk: [medium");
        let errs = parse(Path::new("x.yaml"), &text).unwrap_err();
        assert!(errs[0].line > 1, "{errs:?}");
    }

    #[test]
    fn matching_prefers_labels_over_keywords() {
        let rb = parse(Path::new("x.yaml"), GOOD).unwrap();
        let mut alert = Alert::default();
        alert
            .labels
            .insert("alertname".into(), "HighErrorRate".into());
        assert_eq!(rb.score(Some(&alert), None), Some(10));
        assert_eq!(rb.score(None, Some("the Error Rate is up")), Some(1));
        assert_eq!(rb.score(None, Some("disk full")), None);
    }

    #[test]
    fn builtin_runbooks_are_all_valid() {
        for (file, text) in BUILTIN {
            if let Err(e) = parse(Path::new(file), text) {
                panic!("{file}: {e:?}");
            }
        }
        assert!(BUILTIN.len() >= 6);
    }
}
