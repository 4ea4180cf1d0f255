//! The one table of tool and action kinds: integration, access, risk floor, parameters, operation text.
//!
//! Runbook validation, policy, the executor's dispatch, the console's help and the model's tool
//! schemas all read this table; nothing else lists kinds. Pure data: no I/O.

mod external;

pub use external::ExternalTool;

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
    DatadogQuery,
    DatadogMonitors,
    DatadogEvents,
    DatadogLogs,
}

impl ReadTool {
    pub const ALL: [ReadTool; 40] = [
        ReadTool::Pods,
        ReadTool::Events,
        ReadTool::Deployments,
        ReadTool::ReplicaSets,
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

use ParamType::{Boolean, Integer, Object, Quantity, String as Str, Time};

const NS_READ: Param = p(
    "namespace",
    Str,
    "Kubernetes namespace (default: the configured one)",
);
const NS_ACT: Param = p(
    "namespace",
    Str,
    "Kubernetes namespace of the object (default: the configured one)",
);
const DEPLOYMENT: Param = req(
    "deployment",
    Str,
    "deployment name (or given by a deployment/NAME target)",
);
const REPO: Param = p(
    "repo",
    Str,
    "GitHub owner/name (default: the configured one)",
);
const SINCE: Param = p("since", Time, "window start (default: a day before now)");
const UNTIL: Param = p("until", Time, "window end (default: now)");
const START: Param = p("start", Time, "window start (default: an hour before end)");
/// The cluster a Kubernetes read or action runs against, when several are configured.
pub const CLUSTER: Param = p(
    "cluster",
    Str,
    "the cluster, by its configured name (default: the first configured)",
);
const END: Param = p("end", Time, "window end (default: now)");

const fn read(
    name: &'static str,
    integration: &'static str,
    tool: ReadTool,
    summary: &'static str,
    params: &'static [Param],
    usage: &'static str,
) -> Entry {
    Entry {
        name: Cow::Borrowed(name),
        integration: Cow::Borrowed(integration),
        mutating: false,
        // Reads change nothing, so they never wait for anyone.
        floor: Risk::Low,
        summary: Cow::Borrowed(summary),
        params,
        target: Target::None,
        usage: Cow::Borrowed(usage),
        render: |op| {
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
        },
        handler: Handler::Read(tool),
    }
}

/// Every tool and action. Floors, and why each is where it is:
/// - reads: low — they change nothing.
/// - `rollout_restart`, `scale`, `set_resources`: medium — a rolling, reversible change to one
///   workload; capacity dips while pods are replaced, nothing is lost. (Scaling to zero is an
///   outage: [`risk_for`] raises it to high.)
/// - `cordon`: medium — only stops new pods landing on a node; nothing running is touched, and
///   `uncordon` reverses it.
/// - `silence`: medium — hiding a page can hide an outage from everyone else on call; the
///   operator must at least get the chance to veto it.
/// - `rollout_undo`: high — every pod of the workload is replaced, and whatever shipped since the
///   previous revision (fixes, migrations' counterparts) is gone.
/// - `delete_pod`: high — for a StatefulSet or a bare pod the replacement is not automatic or not
///   equivalent, and force deletion can leave two writers on one volume.
/// - `drain`: high — evicts every pod on a node at once; emptyDir data is lost.
/// - `revert_pr`: high — writes to the production repository with the operator's credentials;
///   CI/CD may ship it without anyone else looking.
/// - `jira.create_issue`, `servicenow.create_incident`: medium — nothing running changes, but the
///   text lands in another team's queue under the configured account.
pub static ENTRIES: &[Entry] = &[
    read(
        "kubernetes.pods",
        "kubernetes",
        ReadTool::Pods,
        "list pods with their containers' states",
        &[
            NS_READ,
            p("label_selector", Str, "label selector, e.g. app=web"),
            p("node", Str, "only pods scheduled on this node"),
        ],
        "kubectl -n NS get pods [-l SELECTOR] [--field-selector spec.nodeName=NODE]",
    ),
    read(
        "kubernetes.events",
        "kubernetes",
        ReadTool::Events,
        "list events, optionally for one object or of one type",
        &[
            NS_READ,
            p("involved", Str, "name of the involved object"),
            p("type", Str, "only events of this type: Warning or Normal"),
        ],
        "kubectl -n NS get events [--field-selector involvedObject.name=NAME,type=TYPE]",
    ),
    read(
        "kubernetes.deployments",
        "kubernetes",
        ReadTool::Deployments,
        "list deployments with replicas and images",
        &[NS_READ],
        "kubectl -n NS get deployments",
    ),
    read(
        "kubernetes.replica_sets",
        "kubernetes",
        ReadTool::ReplicaSets,
        "list ReplicaSets (rollout history)",
        &[NS_READ],
        "kubectl -n NS get replicasets",
    ),
    read(
        "kubernetes.statefulsets",
        "kubernetes",
        ReadTool::StatefulSets,
        "list StatefulSets with replicas and current/update revisions",
        &[NS_READ],
        "kubectl -n NS get statefulsets",
    ),
    read(
        "kubernetes.daemonsets",
        "kubernetes",
        ReadTool::DaemonSets,
        "list DaemonSets with desired, ready, unavailable and misscheduled pods",
        &[NS_READ],
        "kubectl -n NS get daemonsets",
    ),
    read(
        "kubernetes.jobs",
        "kubernetes",
        ReadTool::Jobs,
        "list Jobs with active, succeeded and failed pods and why a Job failed",
        &[NS_READ],
        "kubectl -n NS get jobs",
    ),
    read(
        "kubernetes.cronjobs",
        "kubernetes",
        ReadTool::CronJobs,
        "list CronJobs with schedule, last run and last success",
        &[NS_READ],
        "kubectl -n NS get cronjobs",
    ),
    read(
        "kubernetes.nodes",
        "kubernetes",
        ReadTool::Nodes,
        "list nodes with conditions and taints",
        &[],
        "kubectl get nodes",
    ),
    read(
        "kubernetes.services",
        "kubernetes",
        ReadTool::Services,
        "list Services with their selectors, ports, the pods their Endpoints list, the Ingress rules routing to them and the NetworkPolicies shutting their pods off",
        &[NS_READ],
        "kubectl get services,endpoints,ingresses,networkpolicies",
    ),
    read(
        "kubernetes.config_maps",
        "kubernetes",
        ReadTool::ConfigMaps,
        "when each ConfigMap was last written (metadata only)",
        &[req("namespace", Str, "namespace of the ConfigMaps")],
        "kubectl -n NS get configmaps --show-managed-fields -o metadata",
    ),
    read(
        "kubernetes.secrets",
        "kubernetes",
        ReadTool::Secrets,
        "when each Secret was last written (metadata only, never values)",
        &[req("namespace", Str, "namespace of the Secrets")],
        "kubectl -n NS get secrets --show-managed-fields -o metadata",
    ),
    read(
        "kubernetes.pod_logs",
        "kubernetes",
        ReadTool::PodLogs,
        "a pod's container logs",
        &[
            req("namespace", Str, "namespace of the pod"),
            req("pod", Str, "pod name"),
            p("container", Str, "container name"),
            p("previous", Boolean, "the previous (crashed) run"),
            p("tail", Integer, "last N lines (1-10000)"),
        ],
        "kubectl -n NS logs POD [-c CONTAINER] [--previous] [--tail N]",
    ),
    read(
        "prometheus.query",
        "prometheus",
        ReadTool::PromQuery,
        "an instant PromQL query",
        &[
            req("query", Str, "PromQL expression"),
            p("time", Time, "evaluation time (default: now)"),
        ],
        "GET /api/v1/query?query=Q",
    ),
    read(
        "prometheus.query_range",
        "prometheus",
        ReadTool::PromQueryRange,
        "a PromQL range query",
        &[
            req("query", Str, "PromQL expression"),
            START,
            END,
            def("step", Integer, "60", "resolution in seconds"),
        ],
        "GET /api/v1/query_range?query=Q&start=S&end=E&step=N",
    ),
    read(
        "prometheus.rules",
        "prometheus",
        ReadTool::PromRules,
        "alerting and recording rules with their state",
        &[],
        "GET /api/v1/rules",
    ),
    read(
        "prometheus.alerts",
        "prometheus",
        ReadTool::PromAlerts,
        "alerts Prometheus has pending or firing",
        &[],
        "GET /api/v1/alerts",
    ),
    read(
        "prometheus.series",
        "prometheus",
        ReadTool::PromSeries,
        "the series (metric names and labels) a selector matches",
        &[
            req(
                "match",
                Str,
                "series selectors, one per line, e.g. {job=\"checkout\"}",
            ),
            START,
            END,
        ],
        "GET /api/v1/series?match[]=SELECTOR&start=S&end=E",
    ),
    read(
        "prometheus.metadata",
        "prometheus",
        ReadTool::PromMetadata,
        "metric types and help text",
        &[p("metric", Str, "only this metric")],
        "GET /api/v1/metadata[?metric=NAME]",
    ),
    read(
        "alertmanager.alerts",
        "alertmanager",
        ReadTool::AlertmanagerAlerts,
        "alerts Alertmanager holds",
        &[p("alertname", Str, "only this alert")],
        "amtool alert query [alertname=NAME]",
    ),
    read(
        "loki.query_range",
        "loki",
        ReadTool::LokiQueryRange,
        "a LogQL range query",
        &[
            req("query", Str, "LogQL expression"),
            START,
            END,
            def("limit", Integer, "500", "most lines returned (1-5000)"),
            def("direction", Str, "backward", "forward or backward"),
        ],
        "logcli query Q --from S --to E --limit N",
    ),
    read(
        "datadog.metrics.query",
        "datadog",
        ReadTool::DatadogQuery,
        "a Datadog metric query's timeseries",
        &[
            req(
                "query",
                Str,
                "metric query, e.g. avg:kubernetes.cpu.usage.total{kube_namespace:shop} by {pod_name}",
            ),
            START,
            END,
        ],
        "GET /api/v1/query?query=Q&from=S&to=E",
    ),
    read(
        "datadog.monitors",
        "datadog",
        ReadTool::DatadogMonitors,
        "Datadog monitors: query, thresholds and the state of each group",
        &[
            p("id", Str, "one monitor by ID"),
            p(
                "tags",
                Str,
                "monitor tags, comma-separated (all must match)",
            ),
            p("name", Str, "only monitors whose name contains this"),
        ],
        "GET /api/v1/monitor[/ID]?monitor_tags=T&name=N",
    ),
    read(
        "datadog.events",
        "datadog",
        ReadTool::DatadogEvents,
        "Datadog events (deploys, config changes, forwarded Kubernetes events) in a window",
        &[
            p("tags", Str, "event tags, comma-separated (all must match)"),
            START,
            END,
        ],
        "GET /api/v1/events?start=S&end=E&tags=T",
    ),
    read(
        "datadog.logs.search",
        "datadog",
        ReadTool::DatadogLogs,
        "Datadog log events matching a search query, newest first",
        &[
            req(
                "query",
                Str,
                "log search query, e.g. kube_namespace:shop service:checkout-api status:error",
            ),
            START,
            END,
            def("limit", Integer, "500", "most lines returned (1-5000)"),
        ],
        "POST /api/v2/logs/events/search",
    ),
    read(
        "github.deployments",
        "github",
        ReadTool::GitHubDeployments,
        "deployments of the repository in a window",
        &[REPO, SINCE, UNTIL],
        "gh api repos/OWNER/NAME/deployments",
    ),
    read(
        "github.commits",
        "github",
        ReadTool::GitHubCommits,
        "commits in a window",
        &[REPO, SINCE, UNTIL],
        "gh api repos/OWNER/NAME/commits?since=S&until=U",
    ),
    read(
        "github.merged_pulls",
        "github",
        ReadTool::GitHubMergedPulls,
        "pull requests merged in a window",
        &[REPO, SINCE, UNTIL],
        "gh pr list --state merged",
    ),
    read(
        "postgres.activity",
        "postgres",
        ReadTool::PgActivity,
        "client sessions by state: active, idle in transaction and for how long, what each waits for",
        &[],
        "SELECT pid, application_name, state, now() - xact_start, query FROM pg_stat_activity",
    ),
    read(
        "postgres.connections",
        "postgres",
        ReadTool::PgConnections,
        "connections per application and user against max_connections",
        &[],
        "SELECT application_name, usename, count(*) FROM pg_stat_activity GROUP BY 1, 2",
    ),
    read(
        "postgres.locks",
        "postgres",
        ReadTool::PgLocks,
        "blocking chains: who waits for whom, lock modes, the blocker's query and age",
        &[],
        "SELECT pid, pg_blocking_pids(pid), mode FROM pg_stat_activity JOIN pg_locks USING (pid)",
    ),
    read(
        "postgres.long_queries",
        "postgres",
        ReadTool::PgLongQueries,
        "statements running for longer than a threshold",
        &[def(
            "min_secs",
            Integer,
            "30",
            "shortest running time listed, in seconds",
        )],
        "SELECT pid, now() - query_start, query FROM pg_stat_activity WHERE state = 'active'",
    ),
    read(
        "postgres.statements",
        "postgres",
        ReadTool::PgStatements,
        "top statements by total time (pg_stat_statements, when installed)",
        &[],
        "SELECT query, calls, total_exec_time FROM pg_stat_statements ORDER BY 3 DESC",
    ),
    read(
        "postgres.replication",
        "postgres",
        ReadTool::PgReplication,
        "standbys and their replay lag",
        &[],
        "SELECT application_name, replay_lag FROM pg_stat_replication",
    ),
    read(
        "postgres.databases",
        "postgres",
        ReadTool::PgDatabases,
        "databases: size and transaction-ID wraparound age",
        &[],
        "SELECT datname, pg_database_size(oid), age(datfrozenxid) FROM pg_database",
    ),
    read(
        "aws.rds.describe_db_instances",
        "aws",
        ReadTool::RdsInstances,
        "RDS instances: class, engine, storage, Multi-AZ, replicas",
        &[p(
            "instance",
            Str,
            "DB instance identifier (default: every instance)",
        )],
        "RDS DescribeDBInstances",
    ),
    read(
        "aws.rds.describe_events",
        "aws",
        ReadTool::RdsEvents,
        "RDS events of an instance: failover, reboot, storage, maintenance, parameter changes",
        &[req("instance", Str, "DB instance identifier"), START, END],
        "RDS DescribeEvents (SourceType db-instance)",
    ),
    read(
        "aws.cloudwatch.get_metric_data",
        "aws",
        ReadTool::CloudWatchMetrics,
        "CloudWatch metrics of an instance and its replicas (AWS/RDS)",
        &[
            req("instance", Str, "DB instance identifier"),
            p(
                "replicas",
                Str,
                "comma-separated replica identifiers to read ReplicaLag and CPU of",
            ),
            p(
                "metrics",
                Str,
                "comma-separated metric names (default: the standard RDS set)",
            ),
            p("period", Integer, "seconds per point (default 60)"),
            START,
            END,
        ],
        "CloudWatch GetMetricData, namespace AWS/RDS",
    ),
    read(
        "aws.pi.get_resource_metrics",
        "aws",
        ReadTool::PiLoad,
        "Performance Insights database load (db.load.avg), in total and by wait event",
        &[
            req("resource_id", Str, "the instance's DbiResourceId (db-...)"),
            START,
            END,
        ],
        "Performance Insights GetResourceMetrics",
    ),
    read(
        "aws.pi.describe_dimension_keys",
        "aws",
        ReadTool::PiTopKeys,
        "Performance Insights top SQL (or wait events) by load, split by wait event",
        &[
            req("resource_id", Str, "the instance's DbiResourceId (db-...)"),
            def(
                "group",
                Str,
                "db.sql",
                "dimension group: db.sql, db.wait_event, db.user or db.host",
            ),
            START,
            END,
        ],
        "Performance Insights DescribeDimensionKeys",
    ),
    Entry {
        name: Cow::Borrowed("kubernetes.rollout_restart"),
        integration: Cow::Borrowed("kubernetes"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed("restart every pod of a deployment, one by one"),
        params: &[NS_ACT, DEPLOYMENT],
        target: Target::Named {
            prefix: "deployment",
            param: "deployment",
        },
        usage: Cow::Borrowed("kubectl -n NS rollout restart deployment/NAME"),
        render: |op| format!("kubectl{} rollout restart {}", op.ns(), op.target()),
        handler: Handler::Act(ActionKind::RolloutRestart),
    },
    Entry {
        name: Cow::Borrowed("kubernetes.rollout_undo"),
        integration: Cow::Borrowed("kubernetes"),
        mutating: true,
        floor: Risk::High,
        summary: Cow::Borrowed("roll a deployment back to its previous revision"),
        params: &[NS_ACT, DEPLOYMENT],
        target: Target::Named {
            prefix: "deployment",
            param: "deployment",
        },
        usage: Cow::Borrowed("kubectl -n NS rollout undo deployment/NAME"),
        render: |op| format!("kubectl{} rollout undo {}", op.ns(), op.target()),
        handler: Handler::Act(ActionKind::RolloutUndo),
    },
    Entry {
        name: Cow::Borrowed("kubernetes.scale"),
        integration: Cow::Borrowed("kubernetes"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed("set a deployment's replica count"),
        params: &[
            NS_ACT,
            DEPLOYMENT,
            req("replicas", Integer, "the new replica count"),
        ],
        target: Target::Named {
            prefix: "deployment",
            param: "deployment",
        },
        usage: Cow::Borrowed("kubectl -n NS scale deployment/NAME --replicas=N"),
        render: |op| {
            format!(
                "kubectl{} scale {} --replicas={}",
                op.ns(),
                op.target(),
                op.must("replicas")
            )
        },
        handler: Handler::Act(ActionKind::Scale),
    },
    Entry {
        name: Cow::Borrowed("kubernetes.delete_pod"),
        integration: Cow::Borrowed("kubernetes"),
        mutating: true,
        floor: Risk::High,
        summary: Cow::Borrowed("delete one pod (its controller, if any, replaces it)"),
        params: &[
            NS_ACT,
            req("pod", Str, "pod name (or given by a pod/NAME target)"),
            p(
                "grace_period_seconds",
                Integer,
                "seconds the pod gets to stop (default: its own)",
            ),
            p(
                "force",
                Boolean,
                "do not wait for the kubelet to confirm (grace period 0)",
            ),
        ],
        target: Target::Named {
            prefix: "pod",
            param: "pod",
        },
        usage: Cow::Borrowed("kubectl -n NS delete pod/NAME [--grace-period=N] [--force]"),
        render: |op| {
            let grace = if op.truthy("force") {
                " --grace-period=0 --force".to_string()
            } else {
                op.opt(" --grace-period=", "grace_period_seconds")
            };
            format!("kubectl{} delete {}{grace}", op.ns(), op.target())
        },
        handler: Handler::Act(ActionKind::DeletePod),
    },
    Entry {
        name: Cow::Borrowed("kubernetes.set_resources"),
        integration: Cow::Borrowed("kubernetes"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed(
            "change a deployment's container limits or requests (rolling update)",
        ),
        params: &[
            NS_ACT,
            DEPLOYMENT,
            p(
                "container",
                Str,
                "container name (default: the only container)",
            ),
            p("memory_limit", Quantity, "memory limit, e.g. 1Gi"),
            p("memory_request", Quantity, "memory request, e.g. 512Mi"),
            p("cpu_limit", Quantity, "CPU limit, e.g. 1 or 500m"),
            p("cpu_request", Quantity, "CPU request, e.g. 250m"),
            p(
                "limits",
                Object,
                "limits by resource, e.g. {\"memory\": \"1Gi\"}",
            ),
            p("requests", Object, "requests by resource"),
        ],
        target: Target::Named {
            prefix: "deployment",
            param: "deployment",
        },
        usage: Cow::Borrowed(
            "kubectl -n NS set resources deployment/NAME [-c C] --limits=memory=Q,cpu=Q --requests=...",
        ),
        render: |op| {
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
        },
        handler: Handler::Act(ActionKind::SetResources),
    },
    Entry {
        name: Cow::Borrowed("kubernetes.cordon"),
        integration: Cow::Borrowed("kubernetes"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed("mark a node unschedulable; running pods stay"),
        params: &[req(
            "node",
            Str,
            "node name (or given by a node/NAME target)",
        )],
        target: Target::Named {
            prefix: "node",
            param: "node",
        },
        usage: Cow::Borrowed("kubectl cordon NODE"),
        render: |op| {
            let node = op
                .get("node")
                .unwrap_or_else(|| name_of(op.target).to_string());
            format!("kubectl cordon {node}")
        },
        handler: Handler::Act(ActionKind::Cordon),
    },
    Entry {
        name: Cow::Borrowed("kubernetes.drain"),
        integration: Cow::Borrowed("kubernetes"),
        mutating: true,
        floor: Risk::High,
        summary: Cow::Borrowed("cordon a node and evict every pod on it"),
        params: &[req(
            "node",
            Str,
            "node name (or given by a node/NAME target)",
        )],
        target: Target::Named {
            prefix: "node",
            param: "node",
        },
        usage: Cow::Borrowed("kubectl drain NODE --ignore-daemonsets --delete-emptydir-data"),
        render: |op| {
            let node = op
                .get("node")
                .unwrap_or_else(|| name_of(op.target).to_string());
            format!("kubectl drain {node} --ignore-daemonsets --delete-emptydir-data")
        },
        handler: Handler::Act(ActionKind::Drain),
    },
    Entry {
        name: Cow::Borrowed("alertmanager.silence"),
        integration: Cow::Borrowed("alertmanager"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed("mute notifications for alerts matching the labels"),
        params: &[
            req(
                "matchers",
                Object,
                "label matchers, e.g. {\"alertname\": \"X\", \"namespace\": \"y\"} (or a NAME=VALUE,... target)",
            ),
            def(
                "duration_minutes",
                Integer,
                "60",
                "how long, in minutes (1 to 10080)",
            ),
            def(
                "created_by",
                Str,
                "sitrep",
                "author recorded on the silence",
            ),
        ],
        target: Target::Alert,
        usage: Cow::Borrowed("amtool silence add NAME=VALUE... --duration=Nm"),
        render: |op| {
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
        },
        handler: Handler::Act(ActionKind::Silence),
    },
    Entry {
        name: Cow::Borrowed("github.revert_pr"),
        integration: Cow::Borrowed("github"),
        mutating: true,
        floor: Risk::High,
        summary: Cow::Borrowed("open a pull request that reverts a merged one"),
        params: &[
            REPO,
            req(
                "pull",
                Integer,
                "pull request number (or given by a pull/N target)",
            ),
        ],
        target: Target::Named {
            prefix: "pull",
            param: "pull",
        },
        usage: Cow::Borrowed("gh pr revert N --repo OWNER/NAME"),
        render: |op| {
            let pull = op
                .get("pull")
                .unwrap_or_else(|| name_of(op.target).trim_start_matches('#').to_string());
            format!("gh pr revert {pull}{}", op.opt(" --repo ", "repo"))
        },
        handler: Handler::Act(ActionKind::RevertPr),
    },
    // Ending a silence lets its alerts page again: medium, a visible countdown, like creating one.
    Entry {
        name: Cow::Borrowed("alertmanager.expire_silence"),
        integration: Cow::Borrowed("alertmanager"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed("end a silence now, so its alerts notify again"),
        params: &[req(
            "silence_id",
            Str,
            "the silence's id (or given by a silence/ID target)",
        )],
        target: Target::Named {
            prefix: "silence",
            param: "silence_id",
        },
        usage: Cow::Borrowed("amtool silence expire ID"),
        render: |op| format!("amtool silence expire {}", op.must("silence_id")),
        handler: Handler::Act(ActionKind::ExpireSilence),
    },
    // Acknowledging stops the escalation policy from paging the next responder: medium.
    Entry {
        name: Cow::Borrowed("pagerduty.acknowledge"),
        integration: Cow::Borrowed("pagerduty"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed("acknowledge a PagerDuty incident (stops its escalation)"),
        params: &[req(
            "incident_id",
            Str,
            "the incident's id (or given by an incident/ID target)",
        )],
        target: Target::Named {
            prefix: "incident",
            param: "incident_id",
        },
        usage: Cow::Borrowed(
            "PUT /incidents/ID {status: acknowledged} (From: the configured email)",
        ),
        render: |op| {
            format!(
                "PUT /incidents/{} status=acknowledged",
                op.must("incident_id")
            )
        },
        handler: Handler::Act(ActionKind::PagerDutyAcknowledge),
    },
    // Resolving closes the page for everyone on it; if the problem is not over, nobody is paged.
    Entry {
        name: Cow::Borrowed("pagerduty.resolve"),
        integration: Cow::Borrowed("pagerduty"),
        mutating: true,
        floor: Risk::High,
        summary: Cow::Borrowed("resolve a PagerDuty incident"),
        params: &[req(
            "incident_id",
            Str,
            "the incident's id (or given by an incident/ID target)",
        )],
        target: Target::Named {
            prefix: "incident",
            param: "incident_id",
        },
        usage: Cow::Borrowed("PUT /incidents/ID {status: resolved} (From: the configured email)"),
        render: |op| format!("PUT /incidents/{} status=resolved", op.must("incident_id")),
        handler: Handler::Act(ActionKind::PagerDutyResolve),
    },
    // A note changes nobody's pager, but it is written where every responder reads it: like any
    // write to the outside world, it gets a visible veto window.
    Entry {
        name: Cow::Borrowed("pagerduty.add_note"),
        integration: Cow::Borrowed("pagerduty"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed("add a note to a PagerDuty incident's timeline"),
        params: &[
            req(
                "incident_id",
                Str,
                "the incident's id (or given by an incident/ID target)",
            ),
            req("content", Str, "the note's text"),
        ],
        target: Target::Named {
            prefix: "incident",
            param: "incident_id",
        },
        usage: Cow::Borrowed("POST /incidents/ID/notes {content} (From: the configured email)"),
        render: |op| format!("POST /incidents/{}/notes", op.must("incident_id")),
        handler: Handler::Act(ActionKind::PagerDutyAddNote),
    },
    // Cancelling stops one statement; the client sees an error and may retry. The session and
    // its other work stay.
    Entry {
        name: Cow::Borrowed("postgres.cancel_backend"),
        integration: Cow::Borrowed("postgres"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed("cancel a PostgreSQL backend's running statement"),
        params: PG_SIGNAL,
        target: Target::Named {
            prefix: "backend",
            param: "pid",
        },
        usage: Cow::Borrowed("SELECT pg_cancel_backend(PID)"),
        render: |op| pg_signal(op, "pg_cancel_backend"),
        handler: Handler::Act(ActionKind::PostgresCancelBackend),
    },
    // Terminating ends the session: its open transaction rolls back, whatever it had written in
    // it is lost, and the application sees a dropped connection.
    Entry {
        name: Cow::Borrowed("postgres.terminate_backend"),
        integration: Cow::Borrowed("postgres"),
        mutating: true,
        floor: Risk::High,
        summary: Cow::Borrowed("terminate a PostgreSQL backend (its open transaction rolls back)"),
        params: PG_SIGNAL,
        target: Target::Named {
            prefix: "backend",
            param: "pid",
        },
        usage: Cow::Borrowed("SELECT pg_terminate_backend(PID)"),
        render: |op| pg_signal(op, "pg_terminate_backend"),
        handler: Handler::Act(ActionKind::PostgresTerminateBackend),
    },
    // A ticket changes nothing running, but it is written where other teams read and act on it,
    // under the configured account: like any write to the outside world, a visible veto window.
    Entry {
        name: Cow::Borrowed("jira.create_issue"),
        integration: Cow::Borrowed("jira"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed(
            "open a Jira issue with the investigation's summary, verdict, evidence and actions",
        ),
        params: &[
            req("summary", Str, "the issue's title (at most 255 characters)"),
            req(
                "description",
                Str,
                "the issue's text; each line becomes a paragraph (Atlassian Document Format)",
            ),
            req(
                "project",
                Str,
                "project key (or given by a project/KEY target)",
            ),
            p(
                "issue_type",
                Str,
                "issue type name (default: the configured one)",
            ),
            p("labels", Str, "comma-separated labels"),
        ],
        target: Target::Named {
            prefix: "project",
            param: "project",
        },
        usage: Cow::Borrowed(
            "POST /rest/api/3/issue {fields: project, issuetype, summary, description, labels}",
        ),
        render: |op| {
            let project = op
                .get("project")
                .unwrap_or_else(|| name_of(op.target).to_string());
            format!(
                "POST /rest/api/3/issue project={project}{}: {}",
                op.opt(" type=", "issue_type"),
                ticket_title(&op.must("summary"))
            )
        },
        handler: Handler::Act(ActionKind::JiraCreateIssue),
    },
    // Same as a Jira issue: another team's queue, written under the configured account.
    Entry {
        name: Cow::Borrowed("servicenow.create_incident"),
        integration: Cow::Borrowed("servicenow"),
        mutating: true,
        floor: Risk::Medium,
        summary: Cow::Borrowed(
            "open a ServiceNow incident with the investigation's summary, verdict, evidence and actions",
        ),
        params: &[
            req(
                "short_description",
                Str,
                "the incident's title (at most 160 characters)",
            ),
            req("description", Str, "the incident's text"),
            def("urgency", Integer, "2", "1 (high), 2 (medium) or 3 (low)"),
            def("impact", Integer, "2", "1 (high), 2 (medium) or 3 (low)"),
            req(
                "category",
                Str,
                "incident category, e.g. software (or given by a category/NAME target)",
            ),
        ],
        target: Target::Named {
            prefix: "category",
            param: "category",
        },
        usage: Cow::Borrowed(
            "POST /api/now/table/incident {short_description, description, urgency, impact, category}",
        ),
        render: |op| {
            format!(
                "POST /api/now/table/incident category={} urgency={} impact={}: {}",
                op.get("category")
                    .unwrap_or_else(|| name_of(op.target).to_string()),
                op.must("urgency"),
                op.must("impact"),
                ticket_title(&op.must("short_description"))
            )
        },
        handler: Handler::Act(ActionKind::ServiceNowCreateIncident),
    },
];

const PG_SIGNAL: &[Param] = &[
    req(
        "pid",
        Integer,
        "the backend's process id (or given by a backend/PID target)",
    ),
    p("application_name", Str, "the backend's application (shown)"),
    p("state", Str, "the backend's state (shown)"),
    p("query", Str, "the backend's statement (shown)"),
];

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
    fn names_are_unique_and_integration_dot_verb() {
        let mut seen = std::collections::BTreeSet::new();
        for e in ENTRIES {
            assert!(seen.insert(e.name.as_ref()), "{} listed twice", e.name);
            let (integration, verb) = e.name.split_once('.').unwrap();
            assert_eq!(integration, e.integration, "{}", e.name);
            assert_eq!(verb, e.verb());
            assert!(!e.summary.is_empty() && !e.usage.is_empty(), "{}", e.name);
            let mut params = std::collections::BTreeSet::new();
            for p in e.params {
                assert!(params.insert(p.name), "{}: {} twice", e.name, p.name);
                assert!(!p.description.is_empty(), "{}.{}", e.name, p.name);
            }
        }
    }

    #[test]
    fn every_handler_has_exactly_one_entry_and_every_entry_a_handler() {
        for r in ReadTool::ALL {
            let n = ENTRIES
                .iter()
                .filter(|e| e.handler == Handler::Read(r))
                .count();
            assert_eq!(n, 1, "{r:?}");
        }
        for a in ActionKind::ALL {
            let n = ENTRIES
                .iter()
                .filter(|e| e.handler == Handler::Act(a))
                .count();
            assert_eq!(n, 1, "{a:?}");
        }
        for e in ENTRIES {
            match e.handler {
                Handler::Read(r) => {
                    assert!(!e.mutating && ReadTool::ALL.contains(&r), "{}", e.name)
                }
                Handler::Act(a) => {
                    assert!(e.mutating && ActionKind::ALL.contains(&a), "{}", e.name)
                }
                Handler::External => panic!("{}: the static table has its own executors", e.name),
            }
        }
        assert_eq!(ENTRIES.len(), ReadTool::ALL.len() + ActionKind::ALL.len());
    }

    #[test]
    fn floors_reads_low_and_destructive_actions_high() {
        for e in reads() {
            assert_eq!(e.floor, Risk::Low, "{}", e.name);
        }
        for e in actions() {
            assert!(e.floor >= Risk::Medium, "{} floor below medium", e.name);
        }
        for k in [
            "kubernetes.rollout_undo",
            "kubernetes.delete_pod",
            "kubernetes.drain",
            "github.revert_pr",
        ] {
            assert_eq!(risk_floor(k), Risk::High, "{k}");
        }
        assert_eq!(risk_floor("alertmanager.silence"), Risk::Medium);
        assert_eq!(risk_floor("kubernetes.cordon"), Risk::Medium);
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
