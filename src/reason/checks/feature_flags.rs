//! Feature flags: a flag turned on is configuration. Lines that fail because of one say so
//! ("Feature Flag Enabled"), and the flag service's own line (flagd's "configuration change
//! (write) for flagKey X", an SDK's "flag X updated") names the flag and dates the change.

use super::{Basis, Decl, Role};
use crate::model::{Category, LogLine};
use crate::reason::{Ctx, Signal, list_names};
use chrono::{DateTime, Utc};
use regex::Regex;
use std::sync::LazyLock;

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "feature_flag_on",
    title: "failures a feature flag turned on",
    concern: "config",
    role: Role::Failure,
    reads: &[],
}];

/// A line announcing that a flag changed, capturing the flag's key.
static FLAG_CHANGED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r#"(?i)configuration change \((?:write|update|create)\) for flag ?key[:= ]*["']?([A-Za-z][\w.-]+)"#,
        r#"(?i)\bflag ["']?([A-Za-z][\w.-]{2,})["']? (?:was |has been )?(?:updated|changed|toggled|enabled|turned on|switched on)\b"#,
        r#"(?i)\b(?:enabled|turned on|toggled on|switched on) (?:the )?(?:feature )?flag ["']?([A-Za-z][\w.-]{2,})"#,
    ]
    .into_iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// A failure that says a feature flag is what made it fail.
static FLAG_FAILURE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)feature[ _-]?flag (?:is )?(?:enabled|on|active|set)\b|failure (?:injected|enabled|triggered) by (?:a |the )?(?:feature )?flag|\bflag ['\x22]?[\w.-]+['\x22]? (?:is )?(?:enabled|on)[,:;] (?:failing|rejecting|returning)",
    )
    .ok()
});

/// The key of the flag a line says changed.
fn changed_flag(line: &str) -> Option<String> {
    FLAG_CHANGED.iter().find_map(|re| {
        re.captures(line)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().to_string())
    })
}

fn says_flag_failed(line: &str) -> bool {
    FLAG_FAILURE.as_ref().is_some_and(|re| re.is_match(line))
}

/// Check: do failures say a feature flag made them, and which flag changed before they began?
/// Failing when at least two failure lines, one of them the subject's own, blame a flag; the
/// flag service's change line names the flag and dates it.
pub(crate) fn flag_turned_on(ctx: &Ctx) -> Vec<Signal> {
    let all: Vec<&LogLine> = ctx.obs.pod_logs.iter().chain(&ctx.obs.logs).collect();
    let failures: Vec<&LogLine> = all
        .iter()
        .copied()
        .filter(|l| says_flag_failed(&l.line))
        .collect();
    let own = super::logs::scoped_lines(ctx)
        .into_iter()
        .any(|l| says_flag_failed(&l.line));
    if failures.len() < 2 || !own {
        return Vec::new();
    }
    let first_failure = failures.iter().filter_map(|l| l.at).min();
    // The latest flag change before the failures began (any change, when they carry no time).
    let change: Option<(String, Option<DateTime<Utc>>, &str)> = all
        .iter()
        .filter_map(|l| Some((changed_flag(&l.line)?, l.at, l.line.as_str())))
        .filter(|(_, at, _)| match (at, first_failure) {
            (Some(at), Some(first)) => *at <= first,
            _ => true,
        })
        .max_by_key(|(_, at, _)| *at);
    let mut workloads: Vec<String> = failures
        .iter()
        .filter_map(|l| super::logs::line_owner(ctx, l))
        .collect();
    workloads.sort_unstable();
    workloads.dedup();
    let example = super::logs::short(&failures[0].line);
    let from = if workloads.is_empty() {
        String::new()
    } else {
        format!(" from {}", list_names(&workloads, 4))
    };
    let summary = format!(
        "{} failure line(s){from} say a feature flag made them fail, e.g. \"{example}\"",
        failures.len()
    );
    let (cause, links) = match &change {
        Some((flag, at, line)) => {
            let when = at
                .map(|t| format!(" at {}", t.format("%H:%M:%S UTC")))
                .unwrap_or_default();
            (
                format!(
                    "Feature flag {flag} was changed{when} (\"{}\"), and then {summary}: the flag turned the failure on; turn it off",
                    super::logs::short(line)
                ),
                2,
            )
        }
        None => (
            format!(
                "{summary}: a feature flag turned the failure on; find the flag that changed and turn it off"
            ),
            1,
        ),
    };
    vec![Signal {
        analyzer: "feature_flag_on",
        summary,
        detail: "a flag turned on is configuration; the failing lines blame it".into(),
        category: Category::ConfigurationError,
        basis: Basis::Logged,
        links,
        evidence: ctx.ev(&["kubernetes/pod_logs", "logs"]),
        cause: Some(cause),
        since: change.and_then(|(_, at, _)| at).or(first_failure),
        ..Signal::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_service_names_the_flag_it_changed() {
        assert_eq!(
            changed_flag(
                "configuration change (write) for flagKey productCatalogFailure (file:/etc/flagd/demo.flagd.json)"
            )
            .as_deref(),
            Some("productCatalogFailure")
        );
        assert_eq!(
            changed_flag("flag 'new-checkout-flow' was toggled by alice").as_deref(),
            Some("new-checkout-flow")
        );
        assert_eq!(changed_flag("flag parsing done in 3ms"), None);
    }

    #[test]
    fn a_failure_blaming_a_flag_is_told_from_one_that_mentions_flags() {
        assert!(says_flag_failed(
            "rpc error: code = Internal desc = Error: Product Catalog Fail Feature Flag Enabled"
        ));
        assert!(!says_flag_failed("loaded 14 feature flags from flagd"));
        assert!(!says_flag_failed("unknown flag --verbose"));
    }
}
