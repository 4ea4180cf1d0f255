//! The operation text: what an action will do, written as the command or request it amounts to
//! (`kubectl -n shop scale deployment/web --replicas=6`), for the approval modal, help and tool
//! schemas. One function per action kind; the table names which.

use super::{Entry, Params, matchers_of_target, name_of, target_from};
use serde_json::Value;
use std::collections::BTreeMap;

/// What the operation text is built from.
pub struct Op<'a> {
    pub target: &'a str,
    pub params: &'a Params,
    pub entry: &'a Entry,
}

impl Op<'_> {
    /// A param as text (strings unquoted), its catalog default when absent, `None` when neither.
    pub fn get(&self, name: &str) -> Option<String> {
        match self.params.get(name) {
            Some(Value::Null) | None => self
                .entry
                .param(name)
                .and_then(|p| p.default)
                .map(str::to_string),
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.to_string()),
        }
    }

    /// `{prefix}{value}` when the param has a value, empty otherwise.
    fn opt(&self, prefix: &str, name: &str) -> String {
        self.get(name)
            .map(|v| format!("{prefix}{v}"))
            .unwrap_or_default()
    }

    /// A required param, or `<name>` so a missing one is visible in the modal.
    fn must(&self, name: &str) -> String {
        self.get(name).unwrap_or_else(|| format!("<{name}>"))
    }

    fn truthy(&self, name: &str) -> bool {
        matches!(self.params.get(name), Some(Value::Bool(true)))
            || matches!(self.params.get(name), Some(Value::String(s)) if s.trim() == "true")
    }

    /// ` -n NS`, or nothing: the executor then uses the world's default namespace, as kubectl does.
    /// ` --context CLUSTER -n NS`: which cluster and namespace a kubectl command runs against.
    fn ns(&self) -> String {
        format!(
            "{}{}",
            self.opt(" --context ", "cluster"),
            self.opt(" -n ", "namespace")
        )
    }

    /// The object the action works on: the target, or one rebuilt from params.
    fn target(&self) -> String {
        if self.target.trim().is_empty() {
            target_from(self.entry, self.params).unwrap_or_else(|| "<target>".into())
        } else {
            self.target.to_string()
        }
    }

    /// `k="v" k2="v2"` from an object param.
    fn matchers(&self, name: &str) -> Option<String> {
        let Some(Value::Object(m)) = self.params.get(name) else {
            return None;
        };
        let parts: Vec<String> = m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}=\"{s}\""),
                other => format!("{k}=\"{other}\""),
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

/// A read: its name and params, `kubernetes.pods namespace=shop`.
pub(super) fn read_call(op: &Op) -> String {
    let args: Vec<String> = op
        .params
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    if args.is_empty() {
        op.entry.name.to_string()
    } else {
        format!("{} {}", op.entry.name, args.join(" "))
    }
}

/// The operation text of `kubernetes.rollout_restart`.
pub(super) fn rollout_restart(op: &Op) -> String {
    format!("kubectl{} rollout restart {}", op.ns(), op.target())
}

/// The operation text of `kubernetes.rollout_undo`.
pub(super) fn rollout_undo(op: &Op) -> String {
    format!("kubectl{} rollout undo {}", op.ns(), op.target())
}

/// The operation text of `kubernetes.scale`.
pub(super) fn scale(op: &Op) -> String {
    format!(
        "kubectl{} scale {} --replicas={}",
        op.ns(),
        op.target(),
        op.must("replicas")
    )
}

/// The operation text of `kubernetes.delete_pod`.
pub(super) fn delete_pod(op: &Op) -> String {
    let grace = if op.truthy("force") {
        " --grace-period=0 --force".to_string()
    } else {
        op.opt(" --grace-period=", "grace_period_seconds")
    };
    format!("kubectl{} delete {}{grace}", op.ns(), op.target())
}

/// The operation text of `kubernetes.set_resources`.
pub(super) fn set_resources(op: &Op) -> String {
    let list = |flat: [(&str, &str); 2], object: &str| {
        let mut parts: BTreeMap<String, String> = BTreeMap::new();
        if let Some(Value::Object(m)) = op.params.get(object) {
            for (k, v) in m {
                let v = v
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string());
                parts.insert(k.clone(), v);
            }
        }
        for (param, resource) in flat {
            if let Some(v) = op.get(param) {
                parts.insert(resource.to_string(), v);
            }
        }
        parts
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let limits = list([("cpu_limit", "cpu"), ("memory_limit", "memory")], "limits");
    let requests = list(
        [("cpu_request", "cpu"), ("memory_request", "memory")],
        "requests",
    );
    let mut s = format!(
        "kubectl{} set resources {}{}",
        op.ns(),
        op.target(),
        op.opt(" -c ", "container")
    );
    if !limits.is_empty() {
        s.push_str(&format!(" --limits={limits}"));
    }
    if !requests.is_empty() {
        s.push_str(&format!(" --requests={requests}"));
    }
    s
}

/// The operation text of `kubernetes.cordon`.
pub(super) fn cordon(op: &Op) -> String {
    let node = op
        .get("node")
        .unwrap_or_else(|| name_of(op.target).to_string());
    format!("kubectl cordon {node}")
}

/// The operation text of `kubernetes.drain`.
pub(super) fn drain(op: &Op) -> String {
    let node = op
        .get("node")
        .unwrap_or_else(|| name_of(op.target).to_string());
    format!("kubectl drain {node} --ignore-daemonsets --delete-emptydir-data")
}

/// The operation text of `alertmanager.silence`.
pub(super) fn silence(op: &Op) -> String {
    let matchers = op.matchers("matchers").unwrap_or_else(|| {
        matchers_of_target(op.target)
            .iter()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect::<Vec<_>>()
            .join(" ")
    });
    format!(
        "amtool silence add {matchers} --duration={}m",
        op.must("duration_minutes")
    )
}

/// The operation text of `github.revert_pr`.
pub(super) fn revert_pr(op: &Op) -> String {
    let pull = op
        .get("pull")
        .unwrap_or_else(|| name_of(op.target).trim_start_matches('#').to_string());
    format!("gh pr revert {pull}{}", op.opt(" --repo ", "repo"))
}

/// The operation text of `alertmanager.expire_silence`.
pub(super) fn expire_silence(op: &Op) -> String {
    format!("amtool silence expire {}", op.must("silence_id"))
}

/// The operation text of `pagerduty.acknowledge`.
pub(super) fn pagerduty_acknowledge(op: &Op) -> String {
    format!(
        "PUT /incidents/{} status=acknowledged",
        op.must("incident_id")
    )
}

/// The operation text of `pagerduty.resolve`.
pub(super) fn pagerduty_resolve(op: &Op) -> String {
    format!("PUT /incidents/{} status=resolved", op.must("incident_id"))
}

/// The operation text of `pagerduty.add_note`.
pub(super) fn pagerduty_add_note(op: &Op) -> String {
    format!("POST /incidents/{}/notes", op.must("incident_id"))
}

/// The operation text of `postgres.cancel_backend`.
pub(super) fn postgres_cancel_backend(op: &Op) -> String {
    pg_signal(op, "pg_cancel_backend")
}

/// The operation text of `postgres.terminate_backend`.
pub(super) fn postgres_terminate_backend(op: &Op) -> String {
    pg_signal(op, "pg_terminate_backend")
}

/// The operation text of `jira.create_issue`.
pub(super) fn jira_create_issue(op: &Op) -> String {
    let project = op
        .get("project")
        .unwrap_or_else(|| name_of(op.target).to_string());
    format!(
        "POST /rest/api/3/issue project={project}{}: {}",
        op.opt(" type=", "issue_type"),
        ticket_title(&op.must("summary"))
    )
}

/// The operation text of `servicenow.create_incident`.
pub(super) fn servicenow_create_incident(op: &Op) -> String {
    format!(
        "POST /api/now/table/incident category={} urgency={} impact={}: {}",
        op.get("category")
            .unwrap_or_else(|| name_of(op.target).to_string()),
        op.must("urgency"),
        op.must("impact"),
        ticket_title(&op.must("short_description"))
    )
}

/// `SELECT pg_terminate_backend(4242) -- billing-worker, idle in transaction: UPDATE ...`.
fn pg_signal(op: &Op, func: &str) -> String {
    let pid = op
        .get("pid")
        .or_else(|| op.target.strip_prefix("backend/").map(str::to_string))
        .unwrap_or_else(|| "<pid>".into());
    let mut about: Vec<String> = Vec::new();
    if let Some(app) = op.get("application_name") {
        about.push(format!("application {app}"));
    }
    if let Some(state) = op.get("state") {
        about.push(state);
    }
    let mut out = format!("SELECT {func}({pid})");
    if !about.is_empty() {
        out.push_str(&format!(" -- {}", about.join(", ")));
    }
    if let Some(q) = op.get("query") {
        let q: String = q.split_whitespace().collect::<Vec<_>>().join(" ");
        let short: String = q.chars().take(120).collect();
        out.push_str(&format!(": {short}"));
        if q.chars().count() > 120 {
            out.push('…');
        }
    }
    out
}

/// A ticket's title as the operation text quotes it: one line, at most 100 characters.
fn ticket_title(title: &str) -> String {
    let one: String = title.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut short: String = one.chars().take(100).collect();
    if one.chars().count() > 100 {
        short.push('…');
    }
    format!("\"{short}\"")
}

#[cfg(test)]
mod tests {
    use crate::model::catalog::{Params, operation};
    use serde_json::{Value, json};

    fn params(v: Value) -> Params {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn operations_read_like_the_commands() {
        let p = params(json!({"namespace": "shop", "replicas": 6, "deployment": "web"}));
        assert_eq!(
            operation("kubernetes.scale", "deployment/web", &p),
            "kubectl -n shop scale deployment/web --replicas=6"
        );
        assert_eq!(
            operation("kubernetes.rollout_undo", "deployment/web", &p),
            "kubectl -n shop rollout undo deployment/web"
        );
        let p = params(json!({"namespace": "db", "force": "true"}));
        assert_eq!(
            operation("kubernetes.delete_pod", "pod/db-0", &p),
            "kubectl -n db delete pod/db-0 --grace-period=0 --force"
        );
        let p = params(json!({"grace_period_seconds": 5}));
        assert_eq!(
            operation("kubernetes.delete_pod", "pod/db-0", &p),
            "kubectl delete pod/db-0 --grace-period=5"
        );
        let p = params(json!({"node": "n1"}));
        assert_eq!(
            operation("kubernetes.drain", "node/n1", &p),
            "kubectl drain n1 --ignore-daemonsets --delete-emptydir-data"
        );
        assert_eq!(
            operation("kubernetes.cordon", "node/n2", &Params::new()),
            "kubectl cordon n2"
        );
        let p = params(json!({"matchers": {"alertname": "Foo", "namespace": "shop"}}));
        assert_eq!(
            operation("alertmanager.silence", "alert/Foo", &p),
            "amtool silence add alertname=\"Foo\" namespace=\"shop\" --duration=60m"
        );
        assert_eq!(
            operation(
                "alertmanager.silence",
                "alertname=Foo",
                &params(json!({"duration_minutes": 120}))
            ),
            "amtool silence add alertname=\"Foo\" --duration=120m"
        );
        let p = params(json!({"namespace": "shop", "container": "app",
            "memory_limit": "1Gi", "limits": {"cpu": "2"}, "cpu_request": "500m"}));
        assert_eq!(
            operation("kubernetes.set_resources", "deployment/web", &p),
            "kubectl -n shop set resources deployment/web -c app --limits=cpu=2,memory=1Gi --requests=cpu=500m"
        );
        assert_eq!(
            operation(
                "github.revert_pr",
                "pull/42",
                &params(json!({"repo": "o/r"}))
            ),
            "gh pr revert 42 --repo o/r"
        );
        // A missing required value shows as a placeholder rather than vanishing.
        assert_eq!(
            operation("kubernetes.scale", "deployment/web", &Params::new()),
            "kubectl scale deployment/web --replicas=<replicas>"
        );
    }
}
