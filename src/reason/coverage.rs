//! What each integration gave the investigation (configured, answered, empty, failed, absent), and what is missing for a verdict.

use super::{Ctx, Signal};
use crate::model::Category;

/// One finding listing every integration's state, so the timeline and the report say what was looked at.
pub(crate) fn report(ctx: &Ctx) -> Option<Signal> {
    let cov = &ctx.obs.coverage;
    if cov.is_empty() {
        return None;
    }
    let parts: Vec<String> = cov
        .iter()
        .map(|(name, c)| {
            let n = c.answered + c.failed;
            match c.status() {
                "absent" => format!("{name}: absent (not configured)"),
                "failed" => format!(
                    "{name}: failed ({} of {n} calls: {})",
                    c.failed,
                    c.error.as_deref().unwrap_or("error")
                ),
                "empty" => format!("{name}: answered with no data ({n} calls)"),
                "not asked" => format!("{name}: configured, not asked"),
                _ if c.failed > 0 => format!(
                    "{name}: answered {} of {n} calls ({} failed: {})",
                    c.answered,
                    c.failed,
                    c.error.as_deref().unwrap_or("error")
                ),
                _ => format!("{name}: answered ({n} calls)"),
            }
        })
        .collect();
    let configured = cov.values().filter(|c| c.configured).count();
    let answering = cov.values().filter(|c| c.status() == "answered").count();
    Some(Signal {
        analyzer: "coverage",
        summary: format!(
            "integrations: {answering} of {configured} configured answered with data; {}",
            parts.join("; ")
        ),
        detail: "what the verdict can stand on: an absent or failed integration is missing evidence, never evidence of health".into(),
        category: Category::Unknown,
        evidence: ctx.obs.evidence.values().flatten().cloned().collect(),
        ..Signal::default()
    })
}

/// Share of the integrations that matter here that answered with data (1.0 when coverage is not known).
pub(crate) fn fraction(ctx: &Ctx) -> f64 {
    let cov = &ctx.obs.coverage;
    if cov.is_empty() {
        return 1.0;
    }
    let relevant: Vec<_> = cov
        .iter()
        .filter(|(name, c)| c.configured || ["kubernetes", "prometheus"].contains(&name.as_str()))
        .collect();
    if relevant.is_empty() {
        return 0.0;
    }
    relevant
        .iter()
        .filter(|(_, c)| c.status() == "answered")
        .count() as f64
        / relevant.len() as f64
}

/// What is missing, one phrase per integration that could not contribute.
pub(crate) fn gaps(ctx: &Ctx) -> Vec<String> {
    let cov = &ctx.obs.coverage;
    let mut out = Vec::new();
    if cov.is_empty() {
        if ctx.obs.pods.is_empty() && ctx.obs.metrics.is_empty() {
            out.push("no pods and no metrics for the alert's subject were gathered".into());
        }
        return out;
    }
    if cov.values().all(|c| !c.configured) {
        out.push(format!(
            "no integration is configured ({} absent), so nothing about the subject could be checked",
            cov.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
        return out;
    }
    if let Some(p) = super::metrics::parsed_alert(ctx)
        && cov.get("prometheus").is_some_and(|c| c.configured)
        && super::metrics::own_series(ctx, &p).is_empty()
    {
        out.push(format!(
            "the alert's own expression returned no data ({})",
            p.base
        ));
    }
    for (name, c) in cov {
        match c.status() {
            "failed" => out.push(format!(
                "{name} failed ({})",
                c.error.as_deref().unwrap_or("error")
            )),
            "empty" => out.push(format!("{name} answered with no data")),
            "absent" if ["kubernetes", "prometheus"].contains(&name.as_str()) => {
                out.push(format!("{name} is not configured"))
            }
            _ => {}
        }
    }
    out
}
