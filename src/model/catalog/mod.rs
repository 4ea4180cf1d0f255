//! The one table of tool and action kinds: integration, access, risk floor, parameters, operation text.
//!
//! Runbook validation, policy, the executor's dispatch, the console's help and the model's tool
//! schemas all read this table; nothing else lists kinds. Pure data: no I/O.

mod external;
mod operation;
mod table;

pub use external::ExternalTool;
pub use operation::Op;
pub use table::ENTRIES;

use super::Risk;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// Text of the catalog: borrowed from the built-in table, owned for kinds registered at run time.
pub type Text = Cow<'static, str>;

/// Parameters of a tool call or an action, as they travel in events.
pub type Params = BTreeMap<String, Value>;

/// What a parameter holds. Templated runbook params arrive as text, so numbers and booleans are
/// also accepted as their text form (`"6"`, `"true"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Boolean,
    /// RFC 3339 text or unix seconds.
    Time,
    /// A Kubernetes quantity such as `1Gi` or `500m`.
    Quantity,
    /// A JSON object of string values (`{"alertname": "X"}`).
    Object,
}

impl ParamType {
    pub fn name(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Boolean => "boolean",
            ParamType::Time => "time",
            ParamType::Quantity => "quantity",
            ParamType::Object => "object",
        }
    }

    /// The JSON Schema type a model's tool schema uses for it.
    pub fn json_type(self) -> &'static str {
        match self {
            ParamType::Integer => "integer",
            ParamType::Boolean => "boolean",
            ParamType::Object => "object",
            ParamType::String | ParamType::Time | ParamType::Quantity => "string",
        }
    }

    /// Whether `v` is acceptable for this type (text forms of numbers and booleans included).
    pub fn accepts(self, v: &Value) -> bool {
        match (self, v) {
            (_, Value::Null) => false,
            (ParamType::Object, v) => v.is_object(),
            (ParamType::Integer, Value::Number(n)) => n.is_u64() || n.is_i64(),
            (ParamType::Integer, Value::String(s)) => {
                s.trim().trim_start_matches('#').parse::<i64>().is_ok()
            }
            (ParamType::Boolean, Value::Bool(_)) => true,
            (ParamType::Boolean, Value::String(s)) => matches!(s.trim(), "true" | "false"),
            (ParamType::Time, Value::Number(_)) => true,
            (ParamType::Quantity, Value::Number(_)) => true,
            (ParamType::String | ParamType::Time | ParamType::Quantity, Value::String(s)) => {
                !s.trim().is_empty()
            }
            _ => false,
        }
    }
}

/// One parameter of a tool or action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub ty: ParamType,
    /// Required for the call to make sense. A target's name param may instead come from the
    /// target itself (see [`Target`]).
    pub required: bool,
    /// The value the executor uses when the param is absent (shown in the operation text).
    pub default: Option<&'static str>,
    pub description: &'static str,
}

const fn p(name: &'static str, ty: ParamType, description: &'static str) -> Param {
    Param {
        name,
        ty,
        required: false,
        default: None,
        description,
    }
}

const fn req(name: &'static str, ty: ParamType, description: &'static str) -> Param {
    Param {
        name,
        ty,
        required: true,
        default: None,
        description,
    }
}

const fn def(
    name: &'static str,
    ty: ParamType,
    default: &'static str,
    description: &'static str,
) -> Param {
    Param {
        name,
        ty,
        required: false,
        default: Some(default),
        description,
    }
}

/// How an action's target (`deployment/web`, `node/n1`) relates to its params.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Reads have no target.
    None,
    /// `{prefix}/{param}`: the named object (`deployment/{deployment}`).
    Named {
        prefix: &'static str,
        param: &'static str,
    },
    /// `alert/{alertname}` from the `matchers` object.
    Alert,
}

/// The read tools, one per executor arm in the agent's tool registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadTool {
    Pods,
    Events,
    Deployments,
    ReplicaSets,
    ControllerRevisions,
    Nodes,
    PodLogs,
    PromQuery,
    PromQueryRange,
    PromRules,
    PromAlerts,
    AlertmanagerAlerts,
    LokiQueryRange,
    GitHubDeployments,
    GitHubCommits,
    GitHubMergedPulls,
    PgActivity,
    PgConnections,
    PgLocks,
    PgLongQueries,
    PgStatements,
    PgReplication,
    PgDatabases,
    ConfigMaps,
    Secrets,
    PromSeries,
    PromMetadata,
    StatefulSets,
    DaemonSets,
    Jobs,
    CronJobs,
    RdsInstances,
    RdsEvents,
    CloudWatchMetrics,
    PiLoad,
    PiTopKeys,
    Services,
    Ingresses,
    DatadogQuery,
    DatadogMonitors,
    DatadogEvents,
    DatadogLogs,
}

impl ReadTool {
    pub const ALL: [ReadTool; 42] = [
        ReadTool::Pods,
        ReadTool::Events,
        ReadTool::Deployments,
        ReadTool::ReplicaSets,
        ReadTool::ControllerRevisions,
        ReadTool::Nodes,
        ReadTool::PodLogs,
        ReadTool::PromQuery,
        ReadTool::PromQueryRange,
        ReadTool::PromRules,
        ReadTool::PromAlerts,
        ReadTool::AlertmanagerAlerts,
        ReadTool::LokiQueryRange,
        ReadTool::GitHubDeployments,
        ReadTool::GitHubCommits,
        ReadTool::GitHubMergedPulls,
        ReadTool::PgActivity,
        ReadTool::PgConnections,
        ReadTool::PgLocks,
        ReadTool::PgLongQueries,
        ReadTool::PgStatements,
        ReadTool::PgReplication,
        ReadTool::PgDatabases,
        ReadTool::ConfigMaps,
        ReadTool::Secrets,
        ReadTool::PromSeries,
        ReadTool::PromMetadata,
        ReadTool::StatefulSets,
        ReadTool::DaemonSets,
        ReadTool::Jobs,
        ReadTool::CronJobs,
        ReadTool::RdsInstances,
        ReadTool::RdsEvents,
        ReadTool::CloudWatchMetrics,
        ReadTool::PiLoad,
        ReadTool::PiTopKeys,
        ReadTool::Services,
        ReadTool::Ingresses,
        ReadTool::DatadogQuery,
        ReadTool::DatadogMonitors,
        ReadTool::DatadogEvents,
        ReadTool::DatadogLogs,
    ];
}

/// The mutating actions, one per executor arm in the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActionKind {
    RolloutRestart,
    RolloutUndo,
    Scale,
    DeletePod,
    SetResources,
    Cordon,
    Drain,
    Silence,
    ExpireSilence,
    RevertPr,
    PagerDutyAcknowledge,
    PagerDutyResolve,
    PagerDutyAddNote,
    PostgresCancelBackend,
    PostgresTerminateBackend,
    JiraCreateIssue,
    ServiceNowCreateIncident,
}

impl ActionKind {
    pub const ALL: [ActionKind; 17] = [
        ActionKind::RolloutRestart,
        ActionKind::RolloutUndo,
        ActionKind::Scale,
        ActionKind::DeletePod,
        ActionKind::SetResources,
        ActionKind::Cordon,
        ActionKind::Drain,
        ActionKind::Silence,
        ActionKind::ExpireSilence,
        ActionKind::RevertPr,
        ActionKind::PagerDutyAcknowledge,
        ActionKind::PagerDutyResolve,
        ActionKind::PagerDutyAddNote,
        ActionKind::PostgresCancelBackend,
        ActionKind::PostgresTerminateBackend,
        ActionKind::JiraCreateIssue,
        ActionKind::ServiceNowCreateIncident,
    ];
}

/// Which executor carries a kind out: the executors match on these exhaustively, so an entry
/// cannot exist without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Handler {
    Read(ReadTool),
    Act(ActionKind),
    /// A kind registered at run time (an MCP server's tool): its integration's client runs it.
    External,
}

/// One tool or action kind.
#[derive(Clone)]
pub struct Entry {
    /// `<integration>.<verb>`.
    pub name: Text,
    pub integration: Text,
    /// Changes the world: needs policy's approval; refused in read-only mode.
    pub mutating: bool,
    /// The lowest risk an action of this kind may carry; declarations below it are raised to it.
    pub floor: Risk,
    /// One line: what it does.
    pub summary: Text,
    pub params: &'static [Param],
    pub target: Target,
    /// The operation text in general form, for help and tool schemas.
    pub usage: Text,
    /// The operation text for concrete params, as the approval modal shows it.
    pub render: fn(&Op) -> String,
    pub handler: Handler,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("mutating", &self.mutating)
            .field("floor", &self.floor)
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// The verb after the integration: `rollout_undo`.
    pub fn verb(&self) -> &str {
        self.name
            .split_once('.')
            .map(|(_, v)| v)
            .unwrap_or(&self.name)
    }

    pub fn param(&self, name: &str) -> Option<&'static Param> {
        self.params.iter().find(|p| p.name == name).or_else(|| {
            // Every Kubernetes read and action may name the cluster it runs against.
            (name == CLUSTER.name && self.integration == "kubernetes").then_some(&CLUSTER)
        })
    }

    /// The param that names the target (`deployment` for `deployment/NAME`), if any.
    pub fn target_param(&self) -> Option<&'static str> {
        match self.target {
            Target::Named { param, .. } => Some(param),
            Target::Alert => Some("matchers"),
            Target::None => None,
        }
    }

    /// A JSON Schema object for the params, as a model's tool definition carries it.
    pub fn json_schema(&self) -> Value {
        let properties: serde_json::Map<String, Value> = self
            .params
            .iter()
            .map(|p| {
                let mut prop = serde_json::Map::new();
                prop.insert("type".into(), Value::from(p.ty.json_type()));
                prop.insert("description".into(), Value::from(p.description));
                (p.name.to_string(), Value::Object(prop))
            })
            .collect();
        let required: Vec<Value> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| Value::from(p.name))
            .collect();
        serde_json::json!({"type": "object", "properties": properties, "required": required})
    }
}

/// The cluster a Kubernetes read or action runs against, when several are configured.
pub const CLUSTER: Param = p(
    "cluster",
    ParamType::String,
    "the cluster, by its configured name (default: the first configured)",
);

/// Whether actions of `kind` file a ticket (an issue or incident in another team's tracker):
/// they are proposed once the investigation is over, from its report, rather than as a fix.
pub fn is_ticket(kind: &str) -> bool {
    matches!(
        lookup(kind).map(|e| e.handler),
        Some(Handler::Act(
            ActionKind::JiraCreateIssue | ActionKind::ServiceNowCreateIncident
        ))
    )
}

/// The name after `kind/` in a target (`deployment/web` -> `web`), or the whole target.
pub fn name_of(target: &str) -> &str {
    target.split_once('/').map(|(_, n)| n).unwrap_or(target)
}

/// `alertname=X,namespace=y` (a silence target without a `matchers` param) as pairs; an
/// `alert/NAME` target means `alertname=NAME`.
pub fn matchers_of_target(target: &str) -> Vec<(String, String)> {
    if let Some(name) = target.strip_prefix("alert/") {
        return vec![("alertname".into(), name.trim().to_string())];
    }
    target
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .collect()
}

fn target_from(entry: &Entry, params: &Params) -> Option<String> {
    match entry.target {
        Target::None => None,
        Target::Named { prefix, param } => {
            let v = match params.get(param)? {
                Value::String(s) => s.trim().trim_start_matches('#').to_string(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            (!v.is_empty()).then(|| format!("{prefix}/{v}"))
        }
        Target::Alert => match params.get("matchers")? {
            Value::Object(m) => m
                .get("alertname")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(|n| format!("alert/{n}")),
            _ => None,
        },
    }
}

/// The built-in kinds alone: what the free functions below answer from.
static BUILTIN: Catalog = Catalog {
    external: Vec::new(),
};

/// The built-in catalog entry for `kind` (a run's [`Catalog`] also knows the kinds it registered).
pub fn lookup(kind: &str) -> Option<&'static Entry> {
    BUILTIN.lookup(kind)
}

/// [`Catalog::is_external`] over the built-in kinds.
pub fn is_external(kind: &str) -> bool {
    BUILTIN.is_external(kind)
}

/// [`Catalog::risk_floor`] over the built-in kinds.
pub fn risk_floor(kind: &str) -> Risk {
    BUILTIN.risk_floor(kind)
}

/// [`Catalog::risk_for`] over the built-in kinds.
pub fn risk_for(kind: &str, params: &Params) -> Risk {
    BUILTIN.risk_for(kind, params)
}

/// [`Catalog::effective_risk`] over the built-in kinds.
pub fn effective_risk(kind: &str, declared: Risk, params: &Params) -> Risk {
    BUILTIN.effective_risk(kind, declared, params)
}

/// [`Catalog::is_mutating`] over the built-in kinds.
pub fn is_mutating(kind: &str) -> bool {
    BUILTIN.is_mutating(kind)
}

/// [`Catalog::operation`] over the built-in kinds.
pub fn operation(kind: &str, target: &str, params: &Params) -> String {
    BUILTIN.operation(kind, target, params)
}

/// [`Catalog::target_of`] over the built-in kinds.
pub fn target_of(kind: &str, params: &Params) -> Option<String> {
    BUILTIN.target_of(kind, params)
}

/// [`Catalog::reconcile`] over the built-in kinds.
pub fn reconcile(kind: &str, target: &str, params: &mut Params) -> Result<(), String> {
    BUILTIN.reconcile(kind, target, params)
}

/// [`Catalog::admit`] over the built-in kinds.
pub fn admit(kind: &str, target: &str, params: &mut Params) -> Result<(), String> {
    BUILTIN.admit(kind, target, params)
}

/// [`Catalog::settle`] over the built-in kinds.
pub fn settle(action: &mut super::Action) {
    BUILTIN.settle(action)
}

/// [`Catalog::check_params`] over the built-in kinds.
pub fn check_params(kind: &str, params: &Params, has_target: bool) -> Vec<String> {
    BUILTIN.check_params(kind, params, has_target)
}

/// Built-in read tools, in catalog order.
pub fn reads() -> impl Iterator<Item = &'static Entry> {
    BUILTIN.reads()
}

/// Built-in mutating actions, in catalog order.
pub fn actions() -> impl Iterator<Item = &'static Entry> {
    BUILTIN.actions()
}

/// The kinds one run knows: the built-in table, then the kinds registered at run time (an MCP
/// server's tools), which the run's world hands to whoever checks, prices or offers a kind.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    external: Vec<external::External>,
}

impl Catalog {
    /// Add (or replace) a kind a server published.
    pub fn register(&mut self, tool: ExternalTool) {
        let added = external::External::new(tool);
        self.external.retain(|x| x.entry.name != added.entry.name);
        self.external.push(added);
    }

    /// The JSON Schema of `entry`'s params as a model's tool definition carries it: a server's
    /// own schema for its tools, else built from the params.
    pub fn json_schema(&self, entry: &Entry) -> Value {
        self.external
            .iter()
            .find(|x| x.entry.name == entry.name)
            .map(|x| x.schema.clone())
            .unwrap_or_else(|| entry.json_schema())
    }

    /// The catalog entry for `kind`.
    pub fn lookup(&self, kind: &str) -> Option<&Entry> {
        ENTRIES.iter().find(|e| e.name == kind).or_else(|| {
            self.external
                .iter()
                .find(|x| x.entry.name == kind)
                .map(|x| &x.entry)
        })
    }

    /// Whether `kind` was registered at run time (an MCP server's tool).
    pub fn is_external(&self, kind: &str) -> bool {
        self.lookup(kind)
            .is_some_and(|e| e.handler == Handler::External)
    }

    /// The lowest risk an action of `kind` may carry. Unknown kinds get the highest floor: whatever
    /// they are, nobody has said they are safe.
    pub fn risk_floor(&self, kind: &str) -> Risk {
        self.lookup(kind).map(|e| e.floor).unwrap_or(Risk::Critical)
    }

    /// The floor for these params: the kind's floor, raised where the params make it worse
    /// (scaling to zero replicas is an outage, not a capacity change).
    pub fn risk_for(&self, kind: &str, params: &Params) -> Risk {
        let floor = self.risk_floor(kind);
        let zero = |k: &str| match params.get(k) {
            Some(Value::Number(n)) => n.as_f64() == Some(0.0),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok() == Some(0.0),
            _ => false,
        };
        if kind == "kubernetes.scale" && zero("replicas") {
            return floor.max(Risk::High);
        }
        // Changing the cluster's own machinery can take every workload down with it.
        let system_namespace = matches!(
            params.get("namespace").and_then(Value::as_str),
            Some("kube-system" | "kube-public" | "kube-node-lease")
        );
        if kind.starts_with("kubernetes.") && self.is_mutating(kind) && system_namespace {
            return floor.max(Risk::Critical);
        }
        floor
    }

    /// The risk an action runs at: what was declared, never below the floor for its kind and params.
    pub fn effective_risk(&self, kind: &str, declared: Risk, params: &Params) -> Risk {
        declared.max(self.risk_for(kind, params))
    }

    /// Whether `kind` changes the world. Unknown kinds are mutating, so a new kind cannot slip past
    /// read-only mode.
    pub fn is_mutating(&self, kind: &str) -> bool {
        self.lookup(kind).is_none_or(|e| e.mutating)
    }

    /// The exact operation an action performs, as the approval modal shows it.
    pub fn operation(&self, kind: &str, target: &str, params: &Params) -> String {
        match self.lookup(kind) {
            Some(entry) => (entry.render)(&Op {
                target,
                params,
                entry,
            }),
            None => format!("{kind} {target} (no such action in the catalog)"),
        }
    }

    /// The target an action's params name (`deployment/web` from `deployment: web`); `None` when the
    /// kind is unknown or the params do not name one.
    pub fn target_of(&self, kind: &str, params: &Params) -> Option<String> {
        target_from(self.lookup(kind)?, params)
    }

    /// Fill the target's name param from the target when it is missing, so target and params agree
    /// (`deployment/web` -> `deployment: web`). Err when the two name different objects.
    pub fn reconcile(&self, kind: &str, target: &str, params: &mut Params) -> Result<(), String> {
        let Some(entry) = self.lookup(kind) else {
            return Ok(());
        };
        match entry.target {
            Target::None => Ok(()),
            Target::Named { prefix, param } => {
                let from_target = match target.split_once('/') {
                    Some((k, n)) if k == prefix || k == format!("{prefix}s") => n,
                    Some((k, _)) => {
                        return Err(format!("{kind} targets a {prefix}, not a {k} ({target})"));
                    }
                    None => target,
                }
                .trim()
                .trim_start_matches('#');
                match target_from(entry, params) {
                    Some(t) if from_target.is_empty() || name_of(&t) == from_target => Ok(()),
                    Some(t) => Err(format!(
                        "target {target} and param {param} ({t}) name different objects"
                    )),
                    None if from_target.is_empty() => Err(format!(
                        "{kind} needs a {prefix}: a `{param}` param or a {prefix}/NAME target"
                    )),
                    None => {
                        let value = match entry.param(param).map(|p| p.ty) {
                            Some(ParamType::Integer) => from_target
                                .parse::<u64>()
                                .map(Value::from)
                                .map_err(|_| format!("{kind}: `{from_target}` is not a number"))?,
                            _ => Value::from(from_target),
                        };
                        params.insert(param.to_string(), value);
                        Ok(())
                    }
                }
            }
            Target::Alert => {
                if params.get("matchers").is_some_and(Value::is_object) {
                    return Ok(());
                }
                let pairs = matchers_of_target(target);
                if pairs.is_empty() {
                    return Err(format!(
                        "{kind} needs `matchers` or a NAME=VALUE,... target, not {target:?}"
                    ));
                }
                let m: serde_json::Map<String, Value> = pairs
                    .into_iter()
                    .map(|(k, v)| (k, Value::from(v)))
                    .collect();
                params.insert("matchers".into(), Value::Object(m));
                Ok(())
            }
        }
    }

    /// Ready an action's params for proposal: the target's name param filled in from the target
    /// ([`reconcile`]), then every param checked against the schema ([`check_params`]). Err says
    /// what is wrong, in one line.
    pub fn admit(&self, kind: &str, target: &str, params: &mut Params) -> Result<(), String> {
        self.reconcile(kind, target, params)?;
        let problems = self.check_params(kind, params, true);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// After an action's params change (an edit): its target follows the params when they name one,
    /// its risk is raised to the floor for the new params (never lowered), and its operation text is
    /// rebuilt. The approval flow shows the result again before anyone approves it.
    pub fn settle(&self, action: &mut super::Action) {
        if let Some(t) = self.target_of(&action.kind, &action.params) {
            action.target = t;
        }
        action.risk = self.effective_risk(&action.kind, action.risk, &action.params);
        action.operation = self.operation(&action.kind, &action.target, &action.params);
    }

    /// Problems with `params` for `kind`: unknown names, wrong types, missing required ones (a
    /// target's name param counts as given when `has_target`).
    pub fn check_params(&self, kind: &str, params: &Params, has_target: bool) -> Vec<String> {
        let Some(entry) = self.lookup(kind) else {
            return vec![format!("{kind} is not in the catalog")];
        };
        if let Some(x) = self.external.iter().find(|x| x.entry.name == kind) {
            return x.check(params);
        }
        let mut out = Vec::new();
        for (k, v) in params {
            match entry.param(k) {
                None => out.push(format!(
                    "{k} is not a parameter of {kind} (expected one of {})",
                    param_names(entry)
                )),
                Some(p) if !p.ty.accepts(v) => {
                    out.push(format!("{k} must be of type {} for {kind}", p.ty.name()))
                }
                Some(_) => {}
            }
        }
        for p in entry.params.iter().filter(|p| p.required) {
            let by_target = has_target && entry.target_param() == Some(p.name);
            if !params.contains_key(p.name) && !by_target {
                out.push(format!("{kind} needs `{}` ({})", p.name, p.description));
            }
        }
        out
    }

    /// Read tools, in catalog order.
    pub fn reads(&self) -> impl Iterator<Item = &Entry> {
        self.all().filter(|e| !e.mutating)
    }

    /// Mutating actions, in catalog order.
    pub fn actions(&self) -> impl Iterator<Item = &Entry> {
        self.all().filter(|e| e.mutating)
    }

    /// The static table, then the kinds registered at run time.
    fn all(&self) -> impl Iterator<Item = &Entry> {
        ENTRIES.iter().chain(self.external.iter().map(|x| &x.entry))
    }
}

/// `namespace, deployment, replicas`.
pub fn param_names(entry: &Entry) -> String {
    entry
        .params
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The entry whose executor is `handler`.
pub fn entry_for(handler: Handler) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.handler == handler)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn unknown_kinds_are_mutating_and_never_low() {
        assert!(is_mutating("something.new"));
        assert!(is_mutating("kubernetes.pods_delete_all"));
        assert_eq!(risk_floor("something.new"), Risk::Critical);
        assert!(lookup("something.new").is_none());
        assert!(!is_mutating("kubernetes.pods"));
        assert!(is_mutating("kubernetes.rollout_undo"));
        assert!(operation("x.y", "t", &Params::new()).contains("no such action"));
    }

    #[test]
    fn effective_risk_raises_never_lowers() {
        let p = Params::new();
        assert_eq!(
            effective_risk("kubernetes.delete_pod", Risk::Low, &p),
            Risk::High
        );
        assert_eq!(
            effective_risk("kubernetes.delete_pod", Risk::Critical, &p),
            Risk::Critical
        );
        assert_eq!(
            effective_risk("alertmanager.silence", Risk::Low, &p),
            Risk::Medium
        );
        let zero = params(json!({"replicas": 0}));
        assert_eq!(risk_for("kubernetes.scale", &zero), Risk::High);
        assert_eq!(
            risk_for("kubernetes.scale", &params(json!({"replicas": "3"}))),
            Risk::Medium
        );
    }

    #[test]
    fn targets_come_from_params() {
        let p = params(json!({"namespace": "kube-system", "deployment": "dns"}));
        assert_eq!(
            target_of("kubernetes.rollout_undo", &p).as_deref(),
            Some("deployment/dns")
        );
        assert_eq!(
            target_of("kubernetes.drain", &params(json!({"node": "n3"}))).as_deref(),
            Some("node/n3")
        );
        assert_eq!(
            target_of("github.revert_pr", &params(json!({"pull": 7}))).as_deref(),
            Some("pull/7")
        );
        assert_eq!(
            target_of(
                "alertmanager.silence",
                &params(json!({"matchers": {"alertname": "A"}}))
            )
            .as_deref(),
            Some("alert/A")
        );
        assert_eq!(target_of("kubernetes.pods", &p), None);
        assert_eq!(target_of("kubernetes.scale", &Params::new()), None);
        assert_eq!(target_of("nope.nope", &p), None);
    }

    #[test]
    fn reconcile_fills_the_name_and_refuses_disagreement() {
        let mut p = params(json!({"namespace": "shop"}));
        reconcile("kubernetes.scale", "deployment/web", &mut p).unwrap();
        assert_eq!(p["deployment"], json!("web"));
        let mut p = params(json!({"deployment": "api"}));
        assert!(reconcile("kubernetes.scale", "deployment/web", &mut p).is_err());
        let mut p = Params::new();
        assert!(reconcile("kubernetes.delete_pod", "node/n1", &mut p).is_err());
        let mut p = Params::new();
        reconcile("alertmanager.silence", "alertname=A,namespace=b", &mut p).unwrap();
        assert_eq!(p["matchers"], json!({"alertname": "A", "namespace": "b"}));
        let mut p = Params::new();
        reconcile("github.revert_pr", "#12", &mut p).unwrap();
        assert_eq!(p["pull"], json!(12));
    }

    #[test]
    fn settle_follows_edited_params() {
        let mut a = crate::model::Action {
            kind: "kubernetes.scale".into(),
            target: "deployment/web".into(),
            params: params(json!({"namespace": "shop", "deployment": "web", "replicas": 4})),
            risk: Risk::Medium,
            id: "act-1".into(),
            rationale: String::new(),
            operation: String::new(),
            blast_radius: String::new(),
            evidence: Vec::new(),
        };
        a.params.insert("namespace".into(), json!("shop"));
        a.params.insert("deployment".into(), json!("web"));
        a.params.insert("replicas".into(), json!(0));
        settle(&mut a);
        assert_eq!(a.target, "deployment/web");
        assert_eq!(a.risk, Risk::High, "scaling to zero is an outage");
        assert_eq!(
            a.operation,
            "kubectl -n shop scale deployment/web --replicas=0"
        );
        // A lower declared risk never comes back down by editing.
        a.params.insert("replicas".into(), json!(3));
        settle(&mut a);
        assert_eq!(a.risk, Risk::High);
        // Retargeting into the cluster's own namespaces needs two people.
        a.params.insert("namespace".into(), json!("kube-system"));
        a.params.insert("deployment".into(), json!("coredns"));
        settle(&mut a);
        assert_eq!(a.target, "deployment/coredns");
        assert_eq!(a.risk, Risk::Critical);
    }

    #[test]
    fn admit_fills_and_checks() {
        let mut p = params(json!({"namespace": "shop", "replicas": "6"}));
        admit("kubernetes.scale", "deployment/web", &mut p).unwrap();
        assert_eq!(p["deployment"], json!("web"));
        let mut p = params(json!({"replicas": "lots"}));
        let e = admit("kubernetes.scale", "deployment/web", &mut p).unwrap_err();
        assert!(e.contains("replicas must be of type integer"), "{e}");
    }

    #[test]
    fn params_are_checked_against_the_schema() {
        let p = params(json!({"namespace": "x", "replica": "3"}));
        let errs = check_params("kubernetes.scale", &p, true);
        assert!(
            errs.iter()
                .any(|e| e.contains("replica is not a parameter")),
            "{errs:?}"
        );
        assert!(
            errs.iter().any(|e| e.contains("needs `replicas`")),
            "{errs:?}"
        );
        let p = params(json!({"replicas": "many"}));
        let errs = check_params("kubernetes.scale", &p, true);
        assert_eq!(
            errs,
            vec!["replicas must be of type integer for kubernetes.scale"]
        );
        assert!(
            check_params("kubernetes.scale", &params(json!({"replicas": "3"})), true).is_empty()
        );
        assert!(
            !check_params("kubernetes.scale", &params(json!({"replicas": "3"})), false).is_empty()
        );
    }

    #[test]
    fn tool_schemas_list_required_params() {
        let s = lookup("kubernetes.pod_logs").unwrap().json_schema();
        assert_eq!(s["required"], json!(["namespace", "pod"]));
        assert_eq!(s["properties"]["tail"]["type"], json!("integer"));
    }
}
