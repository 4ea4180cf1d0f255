//! `sitrep runbooks check`: the shipped runbooks are valid; broken ones point at file:line:column.

use sitrep::runbook;
use std::path::Path;

#[test]
fn shipped_runbooks_pass() {
    let names = runbook::check(Path::new("runbooks")).expect("shipped runbooks are valid");
    assert!(names.len() >= 6, "{names:?}");
    assert!(names.contains(&"bad-deploy".to_string()));
}

#[test]
fn errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("broken.yaml");
    std::fs::write(
        &file,
        "name: broken\nmatch:\n  keywords: [disk]\nsteps:\n  - action:\n      tool: kubernetes.rollout_undo\n      target: \"deployment/{{ scope.workload }\"\n      risk: extreme\n      rationale: x\n",
    )
    .expect("write");
    let errors = runbook::check(&file).expect_err("invalid");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        text.iter().any(|e| e.contains("broken.yaml:8:13: a risk")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|e| e.contains("broken.yaml:7:15: a valid template")),
        "{text:?}"
    );
}

#[test]
fn yaml_syntax_errors_have_a_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.yaml"), "name: a\nmatch: [\n").expect("write");
    let errors = runbook::check(dir.path()).expect_err("invalid");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].line >= 2, "{}", errors[0]);
}

#[test]
fn a_missing_path_is_a_clear_error() {
    let errors = runbook::check(Path::new("/nonexistent/runbooks")).expect_err("missing");
    assert!(
        errors[0].to_string().contains("readable runbook"),
        "{}",
        errors[0]
    );
}
