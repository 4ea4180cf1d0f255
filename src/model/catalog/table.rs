//! The built-in kinds, written as a table: one block per tool or action, in catalog order.
//!
//! The table is data: each block names its integration and verb, the executor arm that runs it,
//! its risk floor, summary, params and usage, and (for an action) its target and the function
//! that writes its operation text ([`super::operation`]). The `table!` macro turns the blocks into
//! [`Entry`] values at compile time, so the table needs no parsing and no state at run time; the
//! checks below keep every entry well-formed.

use super::ParamType::{Boolean, Integer, Object, Quantity, String as Str, Time};
use super::operation;
use super::{ActionKind, Entry, Handler, Param, ReadTool, Risk, Target, def, p, req};
use std::borrow::Cow;

/// Builds the table's static from its blocks.
///
/// - `read INTEGRATION.VERB => TOOL { summary, params, usage }`: a read, run by [`ReadTool`]`::TOOL`;
///   its floor is low and its operation text the call with its params.
/// - `act INTEGRATION.VERB => KIND { floor, summary, params, target, usage, operation }`: a
///   mutating action, run by [`ActionKind`]`::KIND`, its operation text written by
///   `operation::OPERATION`.
///
/// The kind's name is the dotted path as written (`datadog.metrics.query`); its integration is the
/// first part. `params` is an array of [`Param`]s.
macro_rules! table {
    (
        $(#[$attr:meta])*
        pub static $table:ident;
        $($what:ident $integration:ident $(. $verb:ident)+ => $handler:ident { $($field:tt)* })*
    ) => {
        $(#[$attr])*
        pub static $table: &[Entry] = &[$(
            table!(@$what [$integration $(. $verb)+] $handler { $($field)* })
        ),*];
    };
    (@read [$integration:ident $(. $verb:ident)+] $tool:ident {
        summary: $summary:literal,
        params: $params:expr,
        usage: $usage:literal $(,)?
    }) => {
        Entry {
            name: Cow::Borrowed(concat!(stringify!($integration) $(, ".", stringify!($verb))+)),
            integration: Cow::Borrowed(stringify!($integration)),
            mutating: false,
            // Reads change nothing, so they never wait for anyone.
            floor: Risk::Low,
            summary: Cow::Borrowed($summary),
            params: &$params,
            target: Target::None,
            usage: Cow::Borrowed($usage),
            render: operation::read_call,
            handler: Handler::Read(ReadTool::$tool),
        }
    };
    (@act [$integration:ident $(. $verb:ident)+] $kind:ident {
        floor: $floor:ident,
        summary: $summary:literal,
        params: $params:expr,
        target: $target:expr,
        usage: $usage:literal,
        operation: $render:ident $(,)?
    }) => {
        Entry {
            name: Cow::Borrowed(concat!(stringify!($integration) $(, ".", stringify!($verb))+)),
            integration: Cow::Borrowed(stringify!($integration)),
            mutating: true,
            floor: Risk::$floor,
            summary: Cow::Borrowed($summary),
            params: &$params,
            target: $target,
            usage: Cow::Borrowed($usage),
            render: operation::$render,
            handler: Handler::Act(ActionKind::$kind),
        }
    };
}

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
const END: Param = p("end", Time, "window end (default: now)");

const PG_SIGNAL: [Param; 4] = [
    req(
        "pid",
        Integer,
        "the backend's process id (or given by a backend/PID target)",
    ),
    p("application_name", Str, "the backend's application (shown)"),
    p("state", Str, "the backend's state (shown)"),
    p("query", Str, "the backend's statement (shown)"),
];

table! {
    /// Every tool and action. Floors, and why each is where it is:
    /// - reads: low — they change nothing.
    /// - `rollout_restart`, `scale`, `set_resources`: medium — a rolling, reversible change to one
    ///   workload; capacity dips while pods are replaced, nothing is lost. (Scaling to zero is an
    ///   outage: [`risk_for`](super::risk_for) raises it to high.)
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
    pub static ENTRIES;

    read kubernetes.pods => Pods {
        summary: "list pods with their containers' states",
        params: [
            NS_READ,
            p("label_selector", Str, "label selector, e.g. app=web"),
            p("node", Str, "only pods scheduled on this node"),
        ],
        usage: "kubectl -n NS get pods [-l SELECTOR] [--field-selector spec.nodeName=NODE]",
    }

    read kubernetes.events => Events {
        summary: "list events, optionally for one object or of one type",
        params: [
            NS_READ,
            p("involved", Str, "name of the involved object"),
            p("type", Str, "only events of this type: Warning or Normal"),
        ],
        usage: "kubectl -n NS get events [--field-selector involvedObject.name=NAME,type=TYPE]",
    }

    read kubernetes.deployments => Deployments {
        summary: "list deployments with replicas and images",
        params: [NS_READ],
        usage: "kubectl -n NS get deployments",
    }

    read kubernetes.replica_sets => ReplicaSets {
        summary: "list ReplicaSets (rollout history)",
        params: [NS_READ],
        usage: "kubectl -n NS get replicasets",
    }

    read kubernetes.controller_revisions => ControllerRevisions {
        summary: "list ControllerRevisions (StatefulSet and DaemonSet rollout history)",
        params: [NS_READ],
        usage: "kubectl -n NS get controllerrevisions",
    }

    read kubernetes.statefulsets => StatefulSets {
        summary: "list StatefulSets with replicas and current/update revisions",
        params: [NS_READ],
        usage: "kubectl -n NS get statefulsets",
    }

    read kubernetes.daemonsets => DaemonSets {
        summary: "list DaemonSets with desired, ready, unavailable and misscheduled pods",
        params: [NS_READ],
        usage: "kubectl -n NS get daemonsets",
    }

    read kubernetes.jobs => Jobs {
        summary: "list Jobs with active, succeeded and failed pods and why a Job failed",
        params: [NS_READ],
        usage: "kubectl -n NS get jobs",
    }

    read kubernetes.cronjobs => CronJobs {
        summary: "list CronJobs with schedule, last run and last success",
        params: [NS_READ],
        usage: "kubectl -n NS get cronjobs",
    }

    read kubernetes.nodes => Nodes {
        summary: "list nodes with conditions and taints",
        params: [],
        usage: "kubectl get nodes",
    }

    read kubernetes.services => Services {
        summary: "list Services with their selectors, ports, the pods their Endpoints list, the Ingress rules routing to them and the NetworkPolicies shutting their pods off",
        params: [NS_READ],
        usage: "kubectl get services,endpoints,ingresses,networkpolicies",
    }

    read kubernetes.ingresses => Ingresses {
        summary: "list Ingresses with their class, hosts, rules and backends, TLS secrets and load-balancer addresses, and the cluster's IngressClasses",
        params: [NS_READ],
        usage: "kubectl get ingresses,ingressclasses",
    }

    read kubernetes.config_maps => ConfigMaps {
        summary: "when each ConfigMap was last written (metadata only)",
        params: [req("namespace", Str, "namespace of the ConfigMaps")],
        usage: "kubectl -n NS get configmaps --show-managed-fields -o metadata",
    }

    read kubernetes.secrets => Secrets {
        summary: "when each Secret was last written (metadata only, never values)",
        params: [req("namespace", Str, "namespace of the Secrets")],
        usage: "kubectl -n NS get secrets --show-managed-fields -o metadata",
    }

    read kubernetes.pod_logs => PodLogs {
        summary: "a pod's container logs",
        params: [
            req("namespace", Str, "namespace of the pod"),
            req("pod", Str, "pod name"),
            p("container", Str, "container name"),
            p("previous", Boolean, "the previous (crashed) run"),
            p("tail", Integer, "last N lines (1-10000)"),
        ],
        usage: "kubectl -n NS logs POD [-c CONTAINER] [--previous] [--tail N]",
    }

    read prometheus.query => PromQuery {
        summary: "an instant PromQL query",
        params: [
            req("query", Str, "PromQL expression"),
            p("time", Time, "evaluation time (default: now)"),
        ],
        usage: "GET /api/v1/query?query=Q",
    }

    read prometheus.query_range => PromQueryRange {
        summary: "a PromQL range query",
        params: [
            req("query", Str, "PromQL expression"),
            START,
            END,
            def("step", Integer, "60", "resolution in seconds"),
        ],
        usage: "GET /api/v1/query_range?query=Q&start=S&end=E&step=N",
    }

    read prometheus.rules => PromRules {
        summary: "alerting and recording rules with their state",
        params: [],
        usage: "GET /api/v1/rules",
    }

    read prometheus.alerts => PromAlerts {
        summary: "alerts Prometheus has pending or firing",
        params: [],
        usage: "GET /api/v1/alerts",
    }

    read prometheus.series => PromSeries {
        summary: "the series (metric names and labels) a selector matches",
        params: [
            req("match", Str, "series selectors, one per line, e.g. {job=\"checkout\"}"),
            START,
            END,
        ],
        usage: "GET /api/v1/series?match[]=SELECTOR&start=S&end=E",
    }

    read prometheus.metadata => PromMetadata {
        summary: "metric types and help text",
        params: [p("metric", Str, "only this metric")],
        usage: "GET /api/v1/metadata[?metric=NAME]",
    }

    read alertmanager.alerts => AlertmanagerAlerts {
        summary: "alerts Alertmanager holds",
        params: [p("alertname", Str, "only this alert")],
        usage: "amtool alert query [alertname=NAME]",
    }

    read loki.query_range => LokiQueryRange {
        summary: "a LogQL range query",
        params: [
            req("query", Str, "LogQL expression"),
            START,
            END,
            def("limit", Integer, "500", "most lines returned (1-5000)"),
            def("direction", Str, "backward", "forward or backward"),
        ],
        usage: "logcli query Q --from S --to E --limit N",
    }

    read datadog.metrics.query => DatadogQuery {
        summary: "a Datadog metric query's timeseries",
        params: [
            req("query", Str, "metric query, e.g. avg:kubernetes.cpu.usage.total{kube_namespace:shop} by {pod_name}"),
            START,
            END,
        ],
        usage: "GET /api/v1/query?query=Q&from=S&to=E",
    }

    read datadog.monitors => DatadogMonitors {
        summary: "Datadog monitors: query, thresholds and the state of each group",
        params: [
            p("id", Str, "one monitor by ID"),
            p("tags", Str, "monitor tags, comma-separated (all must match)"),
            p("name", Str, "only monitors whose name contains this"),
        ],
        usage: "GET /api/v1/monitor[/ID]?monitor_tags=T&name=N",
    }

    read datadog.events => DatadogEvents {
        summary: "Datadog events (deploys, config changes, forwarded Kubernetes events) in a window",
        params: [p("tags", Str, "event tags, comma-separated (all must match)"), START, END],
        usage: "GET /api/v1/events?start=S&end=E&tags=T",
    }

    read datadog.logs.search => DatadogLogs {
        summary: "Datadog log events matching a search query, newest first",
        params: [
            req("query", Str, "log search query, e.g. kube_namespace:shop service:checkout-api status:error"),
            START,
            END,
            def("limit", Integer, "500", "most lines returned (1-5000)"),
        ],
        usage: "POST /api/v2/logs/events/search",
    }

    read github.deployments => GitHubDeployments {
        summary: "deployments of the repository in a window",
        params: [REPO, SINCE, UNTIL],
        usage: "gh api repos/OWNER/NAME/deployments",
    }

    read github.commits => GitHubCommits {
        summary: "commits in a window",
        params: [REPO, SINCE, UNTIL],
        usage: "gh api repos/OWNER/NAME/commits?since=S&until=U",
    }

    read github.merged_pulls => GitHubMergedPulls {
        summary: "pull requests merged in a window",
        params: [REPO, SINCE, UNTIL],
        usage: "gh pr list --state merged",
    }

    read postgres.activity => PgActivity {
        summary: "client sessions by state: active, idle in transaction and for how long, what each waits for",
        params: [],
        usage: "SELECT pid, application_name, state, now() - xact_start, query FROM pg_stat_activity",
    }

    read postgres.connections => PgConnections {
        summary: "connections per application and user against max_connections",
        params: [],
        usage: "SELECT application_name, usename, count(*) FROM pg_stat_activity GROUP BY 1, 2",
    }

    read postgres.locks => PgLocks {
        summary: "blocking chains: who waits for whom, lock modes, the blocker's query and age",
        params: [],
        usage: "SELECT pid, pg_blocking_pids(pid), mode FROM pg_stat_activity JOIN pg_locks USING (pid)",
    }

    read postgres.long_queries => PgLongQueries {
        summary: "statements running for longer than a threshold",
        params: [def("min_secs", Integer, "30", "shortest running time listed, in seconds")],
        usage: "SELECT pid, now() - query_start, query FROM pg_stat_activity WHERE state = 'active'",
    }

    read postgres.statements => PgStatements {
        summary: "top statements by total time (pg_stat_statements, when installed)",
        params: [],
        usage: "SELECT query, calls, total_exec_time FROM pg_stat_statements ORDER BY 3 DESC",
    }

    read postgres.replication => PgReplication {
        summary: "standbys and their replay lag",
        params: [],
        usage: "SELECT application_name, replay_lag FROM pg_stat_replication",
    }

    read postgres.databases => PgDatabases {
        summary: "databases: size and transaction-ID wraparound age",
        params: [],
        usage: "SELECT datname, pg_database_size(oid), age(datfrozenxid) FROM pg_database",
    }

    read aws.rds.describe_db_instances => RdsInstances {
        summary: "RDS instances: class, engine, storage, Multi-AZ, replicas",
        params: [p("instance", Str, "DB instance identifier (default: every instance)")],
        usage: "RDS DescribeDBInstances",
    }

    read aws.rds.describe_events => RdsEvents {
        summary: "RDS events of an instance: failover, reboot, storage, maintenance, parameter changes",
        params: [req("instance", Str, "DB instance identifier"), START, END],
        usage: "RDS DescribeEvents (SourceType db-instance)",
    }

    read aws.cloudwatch.get_metric_data => CloudWatchMetrics {
        summary: "CloudWatch metrics of an instance and its replicas (AWS/RDS)",
        params: [
            req("instance", Str, "DB instance identifier"),
            p("replicas", Str, "comma-separated replica identifiers to read ReplicaLag and CPU of"),
            p("metrics", Str, "comma-separated metric names (default: the standard RDS set)"),
            p("period", Integer, "seconds per point (default 60)"),
            START,
            END,
        ],
        usage: "CloudWatch GetMetricData, namespace AWS/RDS",
    }

    read aws.pi.get_resource_metrics => PiLoad {
        summary: "Performance Insights database load (db.load.avg), in total and by wait event",
        params: [req("resource_id", Str, "the instance's DbiResourceId (db-...)"), START, END],
        usage: "Performance Insights GetResourceMetrics",
    }

    read aws.pi.describe_dimension_keys => PiTopKeys {
        summary: "Performance Insights top SQL (or wait events) by load, split by wait event",
        params: [
            req("resource_id", Str, "the instance's DbiResourceId (db-...)"),
            def("group", Str, "db.sql", "dimension group: db.sql, db.wait_event, db.user or db.host"),
            START,
            END,
        ],
        usage: "Performance Insights DescribeDimensionKeys",
    }

    act kubernetes.rollout_restart => RolloutRestart {
        floor: Medium,
        summary: "restart every pod of a deployment, one by one",
        params: [NS_ACT, DEPLOYMENT],
        target: Target::Named { prefix: "deployment", param: "deployment" },
        usage: "kubectl -n NS rollout restart deployment/NAME",
        operation: rollout_restart,
    }

    act kubernetes.rollout_undo => RolloutUndo {
        floor: High,
        summary: "roll a deployment back to its previous revision",
        params: [NS_ACT, DEPLOYMENT],
        target: Target::Named { prefix: "deployment", param: "deployment" },
        usage: "kubectl -n NS rollout undo deployment/NAME",
        operation: rollout_undo,
    }

    act kubernetes.scale => Scale {
        floor: Medium,
        summary: "set a deployment's replica count",
        params: [NS_ACT, DEPLOYMENT, req("replicas", Integer, "the new replica count")],
        target: Target::Named { prefix: "deployment", param: "deployment" },
        usage: "kubectl -n NS scale deployment/NAME --replicas=N",
        operation: scale,
    }

    act kubernetes.delete_pod => DeletePod {
        floor: High,
        summary: "delete one pod (its controller, if any, replaces it)",
        params: [
            NS_ACT,
            req("pod", Str, "pod name (or given by a pod/NAME target)"),
            p("grace_period_seconds", Integer, "seconds the pod gets to stop (default: its own)"),
            p("force", Boolean, "do not wait for the kubelet to confirm (grace period 0)"),
        ],
        target: Target::Named { prefix: "pod", param: "pod" },
        usage: "kubectl -n NS delete pod/NAME [--grace-period=N] [--force]",
        operation: delete_pod,
    }

    act kubernetes.set_resources => SetResources {
        floor: Medium,
        summary: "change a deployment's container limits or requests (rolling update)",
        params: [
            NS_ACT,
            DEPLOYMENT,
            p("container", Str, "container name (default: the only container)"),
            p("memory_limit", Quantity, "memory limit, e.g. 1Gi"),
            p("memory_request", Quantity, "memory request, e.g. 512Mi"),
            p("cpu_limit", Quantity, "CPU limit, e.g. 1 or 500m"),
            p("cpu_request", Quantity, "CPU request, e.g. 250m"),
            p("limits", Object, "limits by resource, e.g. {\"memory\": \"1Gi\"}"),
            p("requests", Object, "requests by resource"),
        ],
        target: Target::Named { prefix: "deployment", param: "deployment" },
        usage: "kubectl -n NS set resources deployment/NAME [-c C] --limits=memory=Q,cpu=Q --requests=...",
        operation: set_resources,
    }

    act kubernetes.cordon => Cordon {
        floor: Medium,
        summary: "mark a node unschedulable; running pods stay",
        params: [req("node", Str, "node name (or given by a node/NAME target)")],
        target: Target::Named { prefix: "node", param: "node" },
        usage: "kubectl cordon NODE",
        operation: cordon,
    }

    act kubernetes.drain => Drain {
        floor: High,
        summary: "cordon a node and evict every pod on it",
        params: [req("node", Str, "node name (or given by a node/NAME target)")],
        target: Target::Named { prefix: "node", param: "node" },
        usage: "kubectl drain NODE --ignore-daemonsets --delete-emptydir-data",
        operation: drain,
    }

    act alertmanager.silence => Silence {
        floor: Medium,
        summary: "mute notifications for alerts matching the labels",
        params: [
            req("matchers", Object, "label matchers, e.g. {\"alertname\": \"X\", \"namespace\": \"y\"} (or a NAME=VALUE,... target)"),
            def("duration_minutes", Integer, "60", "how long, in minutes (1 to 10080)"),
            def("created_by", Str, "sitrep", "author recorded on the silence"),
        ],
        target: Target::Alert,
        usage: "amtool silence add NAME=VALUE... --duration=Nm",
        operation: silence,
    }

    act github.revert_pr => RevertPr {
        floor: High,
        summary: "open a pull request that reverts a merged one",
        params: [REPO, req("pull", Integer, "pull request number (or given by a pull/N target)")],
        target: Target::Named { prefix: "pull", param: "pull" },
        usage: "gh pr revert N --repo OWNER/NAME",
        operation: revert_pr,
    }

    // Ending a silence lets its alerts page again: medium, a visible countdown, like creating one.
    act alertmanager.expire_silence => ExpireSilence {
        floor: Medium,
        summary: "end a silence now, so its alerts notify again",
        params: [req("silence_id", Str, "the silence's id (or given by a silence/ID target)")],
        target: Target::Named { prefix: "silence", param: "silence_id" },
        usage: "amtool silence expire ID",
        operation: expire_silence,
    }

    // Acknowledging stops the escalation policy from paging the next responder: medium.
    act pagerduty.acknowledge => PagerDutyAcknowledge {
        floor: Medium,
        summary: "acknowledge a PagerDuty incident (stops its escalation)",
        params: [req("incident_id", Str, "the incident's id (or given by an incident/ID target)")],
        target: Target::Named { prefix: "incident", param: "incident_id" },
        usage: "PUT /incidents/ID {status: acknowledged} (From: the configured email)",
        operation: pagerduty_acknowledge,
    }

    // Resolving closes the page for everyone on it; if the problem is not over, nobody is paged.
    act pagerduty.resolve => PagerDutyResolve {
        floor: High,
        summary: "resolve a PagerDuty incident",
        params: [req("incident_id", Str, "the incident's id (or given by an incident/ID target)")],
        target: Target::Named { prefix: "incident", param: "incident_id" },
        usage: "PUT /incidents/ID {status: resolved} (From: the configured email)",
        operation: pagerduty_resolve,
    }

    // A note changes nobody's pager, but it is written where every responder reads it: like any
    // write to the outside world, it gets a visible veto window.
    act pagerduty.add_note => PagerDutyAddNote {
        floor: Medium,
        summary: "add a note to a PagerDuty incident's timeline",
        params: [
            req("incident_id", Str, "the incident's id (or given by an incident/ID target)"),
            req("content", Str, "the note's text"),
        ],
        target: Target::Named { prefix: "incident", param: "incident_id" },
        usage: "POST /incidents/ID/notes {content} (From: the configured email)",
        operation: pagerduty_add_note,
    }

    // Cancelling stops one statement; the client sees an error and may retry. The session and
    // its other work stay.
    act postgres.cancel_backend => PostgresCancelBackend {
        floor: Medium,
        summary: "cancel a PostgreSQL backend's running statement",
        params: PG_SIGNAL,
        target: Target::Named { prefix: "backend", param: "pid" },
        usage: "SELECT pg_cancel_backend(PID)",
        operation: postgres_cancel_backend,
    }

    // Terminating ends the session: its open transaction rolls back, whatever it had written in
    // it is lost, and the application sees a dropped connection.
    act postgres.terminate_backend => PostgresTerminateBackend {
        floor: High,
        summary: "terminate a PostgreSQL backend (its open transaction rolls back)",
        params: PG_SIGNAL,
        target: Target::Named { prefix: "backend", param: "pid" },
        usage: "SELECT pg_terminate_backend(PID)",
        operation: postgres_terminate_backend,
    }

    // A ticket changes nothing running, but it is written where other teams read and act on it,
    // under the configured account: like any write to the outside world, a visible veto window.
    act jira.create_issue => JiraCreateIssue {
        floor: Medium,
        summary: "open a Jira issue with the investigation's summary, verdict, evidence and actions",
        params: [
            req("summary", Str, "the issue's title (at most 255 characters)"),
            req("description", Str, "the issue's text; each line becomes a paragraph (Atlassian Document Format)"),
            req("project", Str, "project key (or given by a project/KEY target)"),
            p("issue_type", Str, "issue type name (default: the configured one)"),
            p("labels", Str, "comma-separated labels"),
        ],
        target: Target::Named { prefix: "project", param: "project" },
        usage: "POST /rest/api/3/issue {fields: project, issuetype, summary, description, labels}",
        operation: jira_create_issue,
    }

    // Same as a Jira issue: another team's queue, written under the configured account.
    act servicenow.create_incident => ServiceNowCreateIncident {
        floor: Medium,
        summary: "open a ServiceNow incident with the investigation's summary, verdict, evidence and actions",
        params: [
            req("short_description", Str, "the incident's title (at most 160 characters)"),
            req("description", Str, "the incident's text"),
            def("urgency", Integer, "2", "1 (high), 2 (medium) or 3 (low)"),
            def("impact", Integer, "2", "1 (high), 2 (medium) or 3 (low)"),
            req("category", Str, "incident category, e.g. software (or given by a category/NAME target)"),
        ],
        target: Target::Named { prefix: "category", param: "category" },
        usage: "POST /api/now/table/incident {short_description, description, urgency, impact, category}",
        operation: servicenow_create_incident,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::catalog::{actions, reads, risk_floor};

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
    fn every_entry_is_well_formed() {
        for e in ENTRIES {
            assert!(
                !e.name.contains(' ') && e.name == e.name.to_lowercase(),
                "{}",
                e.name
            );
            // A default is what the executor uses when the param is absent: it must be a value
            // the param accepts, and a required param has none.
            for p in e.params {
                if let Some(d) = p.default {
                    assert!(
                        !p.required,
                        "{}.{}: required with a default",
                        e.name, p.name
                    );
                    assert!(
                        p.ty.accepts(&d.into()),
                        "{}.{}: default {d:?}",
                        e.name,
                        p.name
                    );
                }
            }
            // Reads have no target; every action names the object it works on, through a
            // required param of the target's name (or the `matchers` object for a silence).
            match e.target {
                Target::None => assert!(!e.mutating, "{}: an action without a target", e.name),
                Target::Named { prefix, param } => {
                    assert!(e.mutating && !prefix.is_empty(), "{}", e.name);
                    let p = e
                        .param(param)
                        .unwrap_or_else(|| panic!("{}: no {param}", e.name));
                    assert!(p.required, "{}.{param} names the target", e.name);
                }
                Target::Alert => {
                    let p = e.param("matchers").expect("a silence's matchers");
                    assert!(e.mutating && p.required && p.ty == Object, "{}", e.name);
                }
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
}
