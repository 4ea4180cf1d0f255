//! RDS connections: the instance at its connection limit, clients refused, and who holds the
//! sessions.

use super::stats::{count, num, pct};
use super::{NEAR_LIMIT, Rds};
use crate::model::Category;
use crate::reason::checks::{Basis, Decl, Role};
use crate::reason::{Ctx, Signal};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_connections",
    title: "connections at the instance's limit",
    concern: "cloud",
    role: Role::Failure,
    reads: &["DatabaseConnections>"],
};

/// A client-side refusal quoted by the alert or an RDS event (`too many clients`, `remaining
/// connection slots are reserved`).
pub(super) fn refusal(ctx: &Ctx, rds: &Rds) -> Option<String> {
    const SIGNS: [&str; 5] = [
        "remaining connection slots are reserved",
        "too many clients",
        "too many connections",
        "connection limit exceeded",
        "sorry, too many clients",
    ];
    let mut texts: Vec<String> = Vec::new();
    if let Some(a) = &ctx.obs.alert {
        texts.extend(a.annotations.values().cloned());
    }
    texts.extend(rds.events.iter().map(|e| e.message.clone()));
    texts.into_iter().find_map(|t| {
        let l = t.to_lowercase();
        SIGNS
            .iter()
            .find(|s| l.contains(*s))
            .map(|s| (*s).to_string())
    })
}

/// Connections at the limit, and who holds them.
pub(super) fn connections(ctx: &Ctx, rds: &Rds) -> Vec<Signal> {
    let Some(st) = rds.own("DatabaseConnections") else {
        // The refusal itself proves the limit was reached, whatever CloudWatch lacks.
        let Some(r) = refusal(ctx, rds) else {
            return Vec::new();
        };
        return vec![Signal {
            analyzer: "rds_connections",
            reads_symptom: true,
            summary: format!("{}: clients refused with \"{r}\"", rds.id),
            detail: "DatabaseConnections: no data in CloudWatch".into(),
            category: Category::ResourceExhaustion,
            basis: Basis::Measured,
            links: 1,
            evidence: rds.with_events(rds.metric_evidence()),
            cause: Some(format!(
                "Connection exhaustion on {}: clients are refused with \"{r}\", PostgreSQL's answer once max_connections is reached (DatabaseConnections: no data, not measured)",
                rds.id
            )),
            objects: vec![rds.object()],
            ..Signal::default()
        }];
    };
    let lim = rds.max_connections();
    let refused = refusal(ctx, rds);
    let near = lim.as_ref().is_some_and(|(l, _)| st.max >= NEAR_LIMIT * l);
    if !near && refused.is_none() {
        return Vec::new();
    }
    let limit_words = lim
        .as_ref()
        .map(|(l, why)| {
            format!(
                " of max_connections {} ({why}; {} used)",
                count(*l),
                pct(st.max / l * 100.0)
            )
        })
        .unwrap_or_else(|| " (max_connections not read)".to_string());
    let refused_words = refused
        .as_ref()
        .map(|r| format!("; clients are refused with \"{r}\""))
        .unwrap_or_default();
    let holders = match rds.top_wait() {
        Some((w, l)) if w.starts_with("Client:") => {
            let sql = rds
                .top_statement()
                .map(|t| format!("; top SQL {}", t.describe()))
                .unwrap_or_default();
            format!(
                "; the sessions are idle client sessions: Performance Insights' top wait is {w} ({}), the server waiting for clients that hold their connection open without sending work — a client pool that leaks or never returns its sessions{sql}",
                num(l)
            )
        }
        Some((w, l)) => format!(
            "; Performance Insights' top wait is {w} ({}): the sessions are busy, not idle",
            num(l)
        ),
        None => "; who holds them was not measured (no Performance Insights)".to_string(),
    };
    vec![Signal {
        analyzer: "rds_connections",
        reads_symptom: true,
        summary: format!(
            "{} connections at the limit: DatabaseConnections {}",
            rds.id,
            st.range(count)
        ),
        detail: format!("{limit_words}{refused_words}"),
        category: Category::ResourceExhaustion,
        basis: Basis::Stated,
        links: 1,
        evidence: rds.with_pi(rds.with_events(rds.metric_evidence())),
        cause: Some(format!(
            "Connection exhaustion on {}: DatabaseConnections reached {}{limit_words}{refused_words}{holders}",
            rds.id,
            count(st.max)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}
