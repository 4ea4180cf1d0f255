//! Neighbours along evidenced edges: a workload the subject's logs or its alert name, audited for
//! readiness, with the decisive detail of why its pods are down quoted.

use super::{Basis, Decl, Role};
use crate::model::{Category, LogLine, PodFacts};
use crate::reason::logs::{self, Sig};
use crate::reason::{Ctx, Signal, actions, list_names, subject};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "dependency_down",
    title: "dependency down",
    concern: "dependencies",
    role: Role::Failure,
    reads: &[],
}];

/// What keeps a pod from running, quoted from its own status and events: a container's waiting
/// reason and message, its last termination, the scheduler's reason.
pub(crate) fn pod_trouble(ctx: &Ctx, pod: &PodFacts) -> Option<String> {
    for c in &pod.containers {
        if let Some(reason) = c.reason.as_deref().filter(|r| *r != "ContainerCreating") {
            let last = match (c.last_reason.as_deref(), c.last_exit_code) {
                (Some(r), Some(code)) => format!(", last exit {r} (code {code})"),
                (None, Some(code)) => format!(", last exit code {code}"),
                _ => String::new(),
            };
            let message = c
                .message
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(|m| format!(": \"{}\"", logs::short(m)))
                .unwrap_or_default();
            return Some(format!("{} {reason}{message}{last}", c.name));
        }
    }
    if pod.phase == "Pending"
        && let Some(msg) = pod.condition_messages.get("PodScheduled")
    {
        return Some(format!("Pending: \"{}\"", logs::short(msg)));
    }
    let warning = ctx
        .events_for(&pod.name)
        .into_iter()
        .filter(|e| e.event_type == "Warning")
        .max_by_key(|e| e.last_seen.or(e.first_seen))?;
    Some(format!(
        "{}: \"{}\"",
        warning.reason,
        logs::short(&warning.message)
    ))
}

/// When the pods' trouble began: the first warning event on them.
fn trouble_since(ctx: &Ctx, pods: &[&PodFacts]) -> Option<DateTime<Utc>> {
    pods.iter()
        .flat_map(|p| ctx.events_for(&p.name))
        .filter(|e| e.event_type == "Warning")
        .filter_map(|e| e.first_seen.or(e.last_seen))
        .min()
}

/// How the subject is known to depend on a workload.
#[derive(Clone, Copy)]
pub(crate) enum Edge<'a> {
    /// The subject's line names it, or a Service in front of it by name or address.
    Named(&'a LogLine),
    /// The alert's labels or expression name it.
    Alert,
    /// The subject's failing line speaks the protocol of the software its image runs
    /// (`AMQPConnector ... Connection refused` and a `rabbitmq` image).
    Speaks(&'a LogLine, &'static str),
    /// The subject's calls to a peer its lines do not name fail, and this is the one workload
    /// down beside it.
    OnlyOneDown,
}

/// A workload the subject depends on (its logs or its alert name it) that has fewer replicas
/// ready than it wants.
pub(crate) struct Down<'a> {
    kind: String,
    name: String,
    namespace: String,
    ready: u32,
    desired: u32,
    edge: Edge<'a>,
    pods: Vec<&'a PodFacts>,
}

impl Down<'_> {
    /// Whether it is the workload `kind/name` (kind in any case).
    pub(crate) fn is(&self, kind: &str, name: &str) -> bool {
        self.kind.eq_ignore_ascii_case(kind) && self.name == name
    }

    /// Whether the pod is one of its own.
    pub(crate) fn has_pod(&self, pod: &PodFacts) -> bool {
        self.pods
            .iter()
            .any(|p| std::ptr::eq(*p, pod) || p.name == pod.name)
    }

    /// How it relates to the subject, as the diagnosis names relations.
    pub(crate) fn relation(&self) -> &'static str {
        match self.edge {
            Edge::Named(_) => "dependency named in its logs",
            Edge::Alert => "dependency named by the alert",
            Edge::Speaks(..) => "dependency its failing calls speak to",
            Edge::OnlyOneDown => "the one workload down beside it",
        }
    }

    /// The names of its pods that are not ready.
    pub(crate) fn pods_not_ready(&self) -> Vec<String> {
        self.pods
            .iter()
            .filter(|p| !p.ready())
            .map(|p| p.name.clone())
            .collect()
    }
}

/// Software a client's failing line names by its protocol or library, and the words its
/// server's image or name carries.
const PROTOCOLS: &[(&str, &[&str], &[&str])] = &[
    ("RabbitMQ", &["amqp", "pika", "rabbitmq"], &["rabbitmq"]),
    ("ZooKeeper", &["zookeeper"], &["zookeeper"]),
    (
        "PostgreSQL",
        &[
            "postgres", "psql", "libpq", "psycopg", "pgx", "asyncpg", "npgsql",
        ],
        &["postgres", "postgis", "timescaledb"],
    ),
    (
        "MySQL",
        &["mysql", "mariadb"],
        &["mysql", "mariadb", "percona"],
    ),
    ("Redis", &["redis"], &["redis", "valkey", "keydb"]),
    ("MongoDB", &["mongo"], &["mongo"]),
    ("Kafka", &["kafka"], &["kafka", "redpanda"]),
    (
        "Elasticsearch",
        &["elasticsearch", "opensearch"],
        &["elasticsearch", "opensearch"],
    ),
    ("memcached", &["memcache"], &["memcached"]),
    (
        "Cassandra",
        &["cassandra", "datastax"],
        &["cassandra", "scylla"],
    ),
];

/// Signatures of a call to a peer that failed.
fn unreachable(sig: Sig) -> bool {
    matches!(
        sig,
        Sig::ConnRefused
            | Sig::Unreachable
            | Sig::Timeout
            | Sig::Dns
            | Sig::Reset
            | Sig::Http5xx
            | Sig::Upstream5xx
            | Sig::Throttled
    )
}

/// The protocol a failing line and a workload share: the line names the software's protocol
/// or client library, the workload's name or an image of its pods names the software.
pub(crate) fn shared_protocol(line: &str, name: &str, pods: &[&PodFacts]) -> Option<&'static str> {
    let line = line.to_ascii_lowercase();
    PROTOCOLS.iter().find_map(|(software, said, runs)| {
        let speaks = said.iter().any(|w| line.contains(w));
        let serves = runs.iter().any(|w| {
            name.contains(w)
                || pods
                    .iter()
                    .flat_map(|p| &p.containers)
                    .any(|c| c.image.to_ascii_lowercase().contains(w))
        });
        (speaks && serves).then_some(*software)
    })
}

/// The down dependencies along evidenced edges: every Deployment, StatefulSet or DaemonSet short
/// of ready that the subject's recent lines or its alert name, or whose software the subject's
/// failing lines speak; failing that, when the subject's calls to a peer it does not name fail,
/// the one workload down in its namespace.
pub(crate) fn down<'a>(ctx: &Ctx<'a>) -> Vec<Down<'a>> {
    if !ctx.subject.resolved {
        return Vec::new();
    }
    let alert_text = ctx.alert_names();
    type Candidate<'s> = (
        String,
        String,
        String,
        u32,
        u32,
        &'s BTreeMap<String, String>,
    );
    let mut candidates: Vec<Candidate> = ctx
        .obs
        .deployments
        .iter()
        .map(|d| {
            (
                "Deployment".to_string(),
                d.name.clone(),
                d.namespace.clone(),
                d.ready_replicas,
                d.replicas,
                &d.selector,
            )
        })
        .collect();
    candidates.extend(
        ctx.obs
            .workloads
            .iter()
            .filter(|w| matches!(w.kind.as_str(), "StatefulSet" | "DaemonSet"))
            .map(|w| {
                (
                    w.kind.clone(),
                    w.name.clone(),
                    w.namespace.clone(),
                    w.ready,
                    w.desired,
                    &w.selector,
                )
            }),
    );
    let lines = ctx.recent_subject_lines();
    let failing: Vec<&LogLine> = lines
        .iter()
        .copied()
        .filter(|l| logs::classify(&l.line).into_iter().any(unreachable))
        .collect();
    let subject_ns: Vec<&str> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.subject.has_pod(p))
        .map(|p| p.namespace.as_str())
        .collect();
    let mut out = Vec::new();
    let mut unnamed = Vec::new();
    for (kind, name, namespace, ready, desired, selector) in candidates {
        // Scaled to zero, it is down only for a caller whose lines name it (below).
        let scaled_to_zero = desired == 0 && kind != "DaemonSet";
        if ctx.subject.covers(&format!("{kind}/{name}")) || (!scaled_to_zero && ready >= desired) {
            continue;
        }
        let pods: Vec<&PodFacts> = ctx
            .pods()
            .into_iter()
            .filter(|p| !p.deleting && subject::pod_belongs(ctx.owners(), ctx.obs, p, &kind, &name))
            .collect();
        // A line names the workload, or a Service in front of its pods by name or by the
        // address clients dial (`connect ECONNREFUSED 10.96.88.14:5432`).
        let fronts: Vec<&str> = ctx
            .obs
            .services
            .iter()
            .filter(|s| s.namespace == namespace && !s.selector.is_empty())
            .filter(|s| {
                pods.iter()
                    .any(|p| subject::selector_matches(&s.selector, &[], &p.labels))
                    // With no pod to match, the labels its selector asks of its pods.
                    || (pods.is_empty()
                        && !selector.is_empty()
                        && subject::selector_matches(&s.selector, &[], selector))
            })
            .flat_map(|s| std::iter::once(s.name.as_str()).chain(s.cluster_ip.as_deref()))
            .collect();
        let named = lines.iter().copied().find(|l| {
            subject::line_names(&l.line, &name)
                || fronts.iter().any(|f| subject::line_names(&l.line, f))
        });
        let edge = match named {
            Some(l) => Some(Edge::Named(l)),
            None if scaled_to_zero => continue,
            None if subject::mentions(alert_text, &name) => Some(Edge::Alert),
            None => failing
                .iter()
                .find_map(|l| shared_protocol(&l.line, &name, &pods).map(|sw| Edge::Speaks(l, sw))),
        };
        let down = Down {
            kind,
            name,
            namespace,
            ready,
            desired,
            edge: edge.unwrap_or(Edge::OnlyOneDown),
            pods,
        };
        match edge {
            Some(_) => out.push(down),
            None if subject_ns.contains(&down.namespace.as_str()) => unnamed.push(down),
            None => {}
        }
    }
    // Calls failing to a peer no line names, and one workload down beside the subject: that
    // one. Failing lines that name a target mean some other peer.
    let names_a_target = failing.iter().any(|l| logs::target(&l.line).is_some());
    if out.is_empty() && !failing.is_empty() && !names_a_target && unnamed.len() == 1 {
        out.extend(unnamed);
    }
    out
}

/// Why the dependency's own pods fail: killed at their memory limit, or what their own logs
/// say, as the category and the words that quote it. The logs give the decisive signature of
/// the lines read from its pods that are not ready (a database out of disk, a server that cannot
/// parse its configuration), quoting the last line that shows it. A process that died is read
/// from its last telling line, as a crash is; one still running but not ready only from lines it
/// logged as errors, since its warnings describe the state it is in (busy, waiting), not why.
/// Any set of pods is read so: a dependency's, those behind a webhook's Service, a node's agent.
pub(crate) fn own_failure_of(ctx: &Ctx, pods: &[&PodFacts]) -> Option<(Category, String)> {
    let not_ready = || pods.iter().filter(|p| !p.ready());
    let killed = not_ready().find_map(|p| {
        p.containers
            .iter()
            .find(|c| c.last_reason.as_deref() == Some("OOMKilled"))
            .map(|c| (p, c))
    });
    if let Some((p, c)) = killed {
        let limit = c
            .memory_limit
            .as_deref()
            .map(|l| format!(" at its memory limit of {l}"))
            .unwrap_or_default();
        return Some((
            Category::ResourceExhaustion,
            format!(
                ": its own container {} in {} was OOMKilled{limit}",
                c.name, p.name
            ),
        ));
    }
    not_ready().find_map(|p| {
        let died = p.restarts() > 0;
        let lines: Vec<_> = logs::pod_lines(ctx, &p.name)
            .into_iter()
            .filter(|l| died || logs::is_error(l))
            .collect();
        let hits = logs::scan(lines.iter().copied());
        let h = logs::decisive(&lines, &hits)?;
        // The last line of it that names what is wrong (a setting, a peer), else its last.
        let of_hit = || h.lines.iter().rev().filter_map(|&i| lines.get(i));
        let quote = of_hit()
            .find(|l| logs::detail_of(h.sig, &l.line).is_some())
            .or_else(|| of_hit().next())
            .map(|l| logs::short(&l.line))
            .unwrap_or_else(|| h.example.clone());
        Some((
            h.sig.category(),
            format!(": its own logs show {} (\"{quote}\")", h.sig.label()),
        ))
    })
}

pub(crate) fn unhealthy(ctx: &Ctx) -> Vec<Signal> {
    let hits = ctx.subject_hits();
    let refused: Vec<&logs::Hits> = hits.iter().filter(|h| unreachable(h.sig)).collect();
    let subject_name = ctx
        .subject
        .workloads
        .first()
        .map(|(_, n)| n.clone())
        .unwrap_or_else(|| "the subject".into());
    let mut out = Vec::new();
    for dep in ctx.dependencies_down() {
        let own = own_failure_of(ctx, &dep.pods);
        let Down {
            kind,
            name,
            namespace,
            ready,
            desired,
            edge,
            pods,
        } = dep;
        let (ready, desired, edge) = (*ready, *desired, *edge);
        let in_logs = match edge {
            Edge::Named(l) | Edge::Speaks(l, _) => Some(l),
            Edge::Alert | Edge::OnlyOneDown => None,
        };
        let troubles: Vec<String> = pods
            .iter()
            .filter(|p| !p.ready())
            .filter_map(|p| pod_trouble(ctx, p).map(|t| format!("{}: {t}", p.name)))
            .collect();
        let since = trouble_since(ctx, pods);
        let target = refused
            .iter()
            .flat_map(|h| h.targets.iter())
            .find(|t| {
                in_logs.is_some_and(|l| l.line.contains(t.as_str())) || t.contains(name.as_str())
            })
            .or_else(|| refused.iter().flat_map(|h| h.targets.iter()).next())
            .cloned();
        let how = refused
            .first()
            .map(|h| h.sig.label().to_string())
            .unwrap_or_else(|| "errors".into());
        let why = if troubles.is_empty() {
            String::new()
        } else {
            format!(" ({})", list_names(&troubles, 2))
        };
        let when = since
            .map(|t| format!(" since {}", t.format("%H:%M UTC")))
            .unwrap_or_default();
        let calls = match &target {
            Some(t) => format!("{subject_name}'s calls to {t} fail ({how})"),
            None if !refused.is_empty() => format!("{subject_name}'s calls to it fail ({how})"),
            None => format!("{subject_name}, which depends on it, is affected"),
        };
        let quote = |l: &LogLine| logs::short(&l.line);
        let edge_text = match edge {
            Edge::Named(l) => format!("{subject_name}'s logs name it: \"{}\"", quote(l)),
            Edge::Speaks(l, software) => format!(
                "{subject_name}'s failing calls speak {software} (\"{}\") and {name} runs {software}",
                quote(l)
            ),
            Edge::Alert => format!("the alert names it as {subject_name}'s dependency"),
            Edge::OnlyOneDown => format!(
                "{subject_name}'s calls to a peer its logs do not name fail, and {name} is the one workload down beside it"
            ),
        };
        // Its own lines say why it is down: that is the cause, and its category is theirs. A
        // dependency scaled to zero runs nothing to fail: its spec is the cause.
        let (category, own_words) = if desired == 0 {
            (Category::ConfigurationError, String::new())
        } else {
            own.clone()
                .unwrap_or((Category::DependencyFailure, String::new()))
        };
        let state = if desired == 0 {
            format!(
                "{name} is scaled to 0 replicas{}, so no pod of it runs",
                super::scaled_to_zero::scale_down_text(super::scaled_to_zero::scale_down(
                    ctx, name
                ))
            )
        } else {
            format!("{name} has {ready} of {desired} replicas ready{why}{when}{own_words}")
        };
        let lower = kind.to_lowercase();
        let evidence = ctx.ev(&[
            "kubernetes/deployments",
            "kubernetes/workloads",
            "kubernetes/pods",
            "kubernetes/events",
            "kubernetes/pod_logs",
            "logs",
        ]);
        let mut sig = Signal {
            analyzer: "dependency_down",
            summary: if desired == 0 {
                format!("dependency {lower} {name} is scaled to 0 replicas")
            } else {
                format!("dependency {lower} {name} has {ready} of {desired} replicas ready{why}")
            },
            detail: format!("{edge_text}{own_words}"),
            category,
            basis: if refused.is_empty() {
                Basis::Logged
            } else {
                Basis::Stated
            },
            // Inferred from being the only one down, the edge itself is no evidenced link.
            links: u8::from(!refused.is_empty() && !matches!(edge, Edge::OnlyOneDown))
                + u8::from(own.is_some() || desired == 0),
            evidence: evidence.clone(),
            cause: Some(format!("{state}, so {calls}")),
            objects: vec![format!("{lower}/{name}")],
            ..Signal::default()
        };
        if kind == "Deployment" {
            sig.actions.push(actions::rollout_restart(
                crate::reason::namespace_or_default(namespace),
                name,
                format!(
                    "{name} has no ready replica to serve {subject_name}; restarting its pods clears a stuck state once the reason above is addressed"
                ),
                evidence,
            ));
        }
        out.push(sig);
    }
    out
}
