//! Configuration changes as change evidence, on synthetic worlds written for this file: the
//! ConfigMaps and Secrets a workload reads (when each was last written), pod-template annotation
//! changes between revisions, and a recorded world without those objects (absent, not a failure).

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use sitrep::agent::{ToolOutput, Tools, WorldTools};
use sitrep::model::{
    Alert, Category, Change, ChangeKind, DeploymentFacts, LogLine, PodFacts, Series,
};
use sitrep::reason::{Analysis, Observations, analyze};
use sitrep::world::World;
use std::collections::BTreeMap;
use std::sync::Arc;

const NS: &str = "till";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-06-03T14:00:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

/// When the error ratio steps up.
fn step_at() -> DateTime<Utc> {
    t0() + Duration::minutes(20)
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

const EXPR: &str = r#"sum(rate(pos_requests_total{namespace="till",service="register",status=~"5.."}[5m])) / sum(rate(pos_requests_total{namespace="till",service="register"}[5m])) > 0.05"#;

fn deployment(refs: &[&str]) -> DeploymentFacts {
    DeploymentFacts {
        name: "register".into(),
        namespace: NS.into(),
        replicas: 3,
        ready_replicas: 3,
        updated_replicas: 3,
        available_replicas: 3,
        config_refs: refs.iter().map(|s| s.to_string()).collect(),
        ..DeploymentFacts::default()
    }
}

fn rs(hash: &str, revision: u32, minutes: i64, annotations: &[(&str, &str)]) -> DeploymentFacts {
    DeploymentFacts {
        name: format!("register-{hash}"),
        namespace: NS.into(),
        replicas: 3,
        ready_replicas: 3,
        revision: Some(revision.to_string()),
        images: vec!["registry.local/register:7.1.0".into()],
        labels: BTreeMap::from([("app".to_string(), "register".to_string())]),
        created_at: Some(t0() + Duration::minutes(minutes)),
        config_refs: vec!["configmap/register-settings".into()],
        template_annotations: annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..DeploymentFacts::default()
    }
}

fn pod(name: &str) -> PodFacts {
    PodFacts {
        name: name.into(),
        namespace: NS.into(),
        phase: "Running".into(),
        owner: Some("ReplicaSet/register-7d5".into()),
        labels: BTreeMap::from([
            ("app".to_string(), "register".to_string()),
            ("pod-template-hash".to_string(), "7d5".to_string()),
        ]),
        conditions: BTreeMap::from([("Ready".to_string(), "True".to_string())]),
        created_at: Some(t0() - Duration::hours(4)),
        ..PodFacts::default()
    }
}

fn config_change(kind: &str, name: &str, at: DateTime<Utc>) -> Change {
    let short = kind.replace('-', "");
    Change {
        kind: ChangeKind::Config,
        at: Some(at),
        id: name.into(),
        title: format!("{kind} {name} updated"),
        author: Some("kubectl-edit".into()),
        target: format!("{NS}/{short}/{name}"),
        url: None,
    }
}

/// `register`'s 5xx ratio steps from 0.4% to 12% at `step_at`; the alert fired a minute later.
fn world(changes: Vec<Change>, refs: &[&str]) -> Observations {
    let base = sitrep::reason::promql::parse(EXPR)
        .map(|e| e.base)
        .unwrap_or_default();
    let points = (0..80)
        .map(|i| {
            let t = t0() + Duration::seconds(30 * i);
            (
                t.timestamp() as f64,
                if t < step_at() { 0.004 } else { 0.12 },
            )
        })
        .collect();
    let alert = Alert {
        labels: BTreeMap::from([
            ("alertname".to_string(), "RegisterErrors".to_string()),
            ("namespace".to_string(), NS.to_string()),
            ("service".to_string(), "register".to_string()),
        ]),
        starts_at: Some(step_at() + Duration::minutes(1)),
        generator_url: format!("http://prometheus:9090/graph?g0.expr={}", url_escape(EXPR)),
        ..Alert::default()
    };
    Observations {
        alert: Some(alert),
        now: t0() + Duration::minutes(40),
        deployments: vec![deployment(refs)],
        pods: vec![
            pod("register-7d5-a"),
            pod("register-7d5-b"),
            pod("register-7d5-c"),
        ],
        metrics: vec![Series {
            name: base,
            labels: BTreeMap::new(),
            points,
        }],
        changes,
        evidence: BTreeMap::from([
            ("metrics".to_string(), vec!["ev-m".to_string()]),
            ("changes".to_string(), vec!["ev-c".to_string()]),
            (
                "kubernetes/deployments".to_string(),
                vec!["ev-d".to_string()],
            ),
            ("kubernetes/pods".to_string(), vec!["ev-p".to_string()]),
        ]),
        ..Observations::default()
    }
}

fn text(a: &Analysis) -> String {
    format!(
        "{:?} | {} | {}",
        a.category,
        a.root_cause,
        a.findings
            .iter()
            .map(|f| f.summary.clone())
            .collect::<Vec<_>>()
            .join(" | ")
    )
}

#[test]
fn a_read_config_map_updated_just_before_the_step_is_the_suspect() {
    let obs = world(
        vec![config_change(
            "config-map",
            "register-settings",
            step_at() - Duration::seconds(30),
        )],
        &["configmap/register-settings", "secret/register-db"],
    );
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(
        a.root_cause.contains(
            "config-map register-settings updated 14:19:30 by kubectl-edit, 30 s before the onset"
        ),
        "{}",
        text(&a)
    );
    assert!(a.root_cause.contains("5xx ratio"), "{}", text(&a));
    let cites = a
        .hypotheses
        .first()
        .map(|h| h.evidence.clone())
        .unwrap_or_default();
    assert!(cites.contains(&"ev-c".to_string()), "{cites:?}");
}

#[test]
fn a_secret_it_reads_counts_and_one_it_does_not_read_does_not() {
    // The Secret it reads changed 2 min before the step; another Secret changed 10 s before.
    let obs = world(
        vec![
            config_change("secret", "register-db", step_at() - Duration::minutes(2)),
            config_change(
                "secret",
                "loyalty-api-key",
                step_at() - Duration::seconds(10),
            ),
        ],
        &["configmap/register-settings", "secret/register-db"],
    );
    let a = analyze(&obs);
    assert!(
        a.root_cause.contains("secret register-db updated"),
        "{}",
        text(&a)
    );
    assert!(!a.root_cause.contains("loyalty-api-key"), "{}", text(&a));

    // Nothing it reads changed: the unread Secret is no suspect, the step stays unexplained.
    let obs = world(
        vec![config_change(
            "secret",
            "loyalty-api-key",
            step_at() - Duration::seconds(10),
        )],
        &["configmap/register-settings"],
    );
    let a = analyze(&obs);
    assert!(!a.root_cause.contains("loyalty-api-key"), "{}", text(&a));
    assert_ne!(a.category, Category::Healthy, "{}", text(&a));
}

#[test]
fn a_pod_template_annotation_change_between_revisions_is_a_change() {
    let mut obs = world(Vec::new(), &["configmap/register-settings"]);
    obs.replica_sets = vec![
        rs("5c4", 6, -600, &[("checksum/config", "9f2c41d07be3aa01")]),
        // Same image, new config checksum: a configuration rollout 40 s before the step.
        rs("7d5", 7, 19, &[("checksum/config", "0b77e1c2d4a95f3e")]),
    ];
    obs.replica_sets[1].created_at = Some(step_at() - Duration::seconds(40));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(
        a.root_cause
            .contains("annotation checksum/config 9f2c41d07be3aa01 → 0b77e1c2d4a95f3e"),
        "{}",
        text(&a)
    );
    assert!(a.root_cause.contains("revision 7"), "{}", text(&a));
}

#[test]
fn a_missing_key_in_logs_after_a_config_map_update_names_both() {
    let mut obs = world(
        vec![config_change(
            "config-map",
            "register-settings",
            step_at() - Duration::seconds(50),
        )],
        &["configmap/register-settings"],
    );
    failing_from_step(&mut obs, "ERROR tax: setting TAX_REGION_TABLE is not set");
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(a.root_cause.contains("TAX_REGION_TABLE"), "{}", text(&a));
    assert!(
        a.root_cause
            .contains("config-map register-settings updated"),
        "{}",
        text(&a)
    );
}

/// With no metric, `register`'s pods log sales throughout and `error` from the step on.
fn failing_from_step(obs: &mut Observations, error: &str) {
    obs.metrics.clear();
    obs.evidence
        .insert("kubernetes/pod_logs".into(), vec!["ev-l".into()]);
    for m in -15..15 {
        let at = step_at() + Duration::minutes(m);
        obs.pod_logs.push(LogLine {
            at: Some(at),
            labels: BTreeMap::from([("pod".to_string(), "register-7d5-a".to_string())]),
            line: format!("INFO sale {} completed", 9000 + m),
        });
        if m >= 1 {
            obs.pod_logs.push(LogLine {
                at: Some(at),
                labels: BTreeMap::from([("pod".to_string(), "register-7d5-b".to_string())]),
                line: error.into(),
            });
        }
    }
}

/// `register`'s pods log writes refused by a read-only database from the step on.
fn read_only_writes(obs: &mut Observations) {
    failing_from_step(
        obs,
        "ERROR o.h.e.j.s.SqlExceptionHelper : ERROR: cannot execute INSERT in a read-only transaction",
    );
}

#[test]
fn writes_refused_by_a_reader_are_the_database_unless_a_change_pointed_there() {
    // Nothing changed: the database stopped taking writes (a failover), so it is the cause.
    let mut obs = world(Vec::new(), &["configmap/register-settings"]);
    read_only_writes(&mut obs);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::DependencyFailure, "{}", text(&a));
    assert!(a.root_cause.contains("read-only"), "{}", text(&a));

    // A revision that changed the datasource just before: that change pointed it at a reader.
    let mut obs = world(Vec::new(), &["configmap/register-settings"]);
    read_only_writes(&mut obs);
    let mut old = rs("5c4", 6, -600, &[]);
    old.template_env = BTreeMap::from([(
        "DB_URL".to_string(),
        "jdbc:postgresql://till-pg-rw:5432/till".to_string(),
    )]);
    let mut new = rs("7d5", 7, 19, &[]);
    new.template_env = BTreeMap::from([(
        "DB_URL".to_string(),
        "jdbc:postgresql://till-pg-ro:5432/till".to_string(),
    )]);
    new.created_at = Some(step_at() - Duration::minutes(3));
    obs.replica_sets = vec![old, new];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(a.root_cause.contains("till-pg-ro"), "{}", text(&a));
}

fn recording(path: &str, body: serde_json::Value) -> String {
    json!({"integration": "kubernetes", "method": "GET", "path": path, "query": {}, "status": 200, "body": body})
        .to_string()
}

#[tokio::test]
async fn recorded_config_maps_answer_and_missing_secrets_are_absent() {
    let cms = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "items": [
        {"kind": "PartialObjectMetadata", "metadata": {"name": "register-settings", "namespace": NS,
            "creationTimestamp": "2026-05-01T08:00:00Z",
            "managedFields": [
                {"manager": "helm", "operation": "Update", "time": "2026-05-01T08:00:00Z"},
                {"manager": "kubectl-edit", "operation": "Update", "time": "2026-06-03T14:19:30Z"}
            ]}},
        {"kind": "PartialObjectMetadata", "metadata": {"name": "kube-root-ca.crt", "namespace": NS,
            "creationTimestamp": "2026-01-01T00:00:00Z"}}
    ]});
    let files = vec![
        (
            "c/case.toml".to_string(),
            "id = \"c\"\ntitle = \"t\"\nnow = \"2026-06-03T14:40:00Z\"\n".to_string(),
        ),
        (
            "c/recordings.ndjson".to_string(),
            format!(
                "{}\n",
                recording(&format!("/api/v1/namespaces/{NS}/configmaps"), cms)
            ),
        ),
    ];
    let world = World::from_case_files("c", files).unwrap_or_else(|e| panic!("case: {e}"));
    let tools = WorldTools(Arc::new(world));
    let params = BTreeMap::from([("namespace".to_string(), json!(NS))]);
    let got = tools.call("kubernetes.config_maps", &params).await;
    let Ok(ToolOutput::Changes(changes)) = got else {
        panic!("config maps: {got:?}")
    };
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[0].title, "config-map register-settings updated");
    assert_eq!(changes[0].author.as_deref(), Some("kubectl-edit"));
    assert_eq!(
        changes[0].at.map(|t| t.to_rfc3339()),
        Some("2026-06-03T14:19:30+00:00".to_string())
    );
    assert_eq!(changes[1].title, "config-map kube-root-ca.crt created");
    // No recording of Secrets in this world: nothing to report, and no failure.
    let got = tools.call("kubernetes.secrets", &params).await;
    assert_eq!(got, Ok(ToolOutput::Changes(Vec::new())));
    // A bad namespace is still a clear error.
    let bad = BTreeMap::from([("namespace".to_string(), json!("../x"))]);
    assert!(tools.call("kubernetes.secrets", &bad).await.is_err());
}

#[tokio::test]
async fn secrets_are_asked_for_as_metadata_only() {
    use axum::http::{HeaderMap, StatusCode, Uri};
    use axum::response::IntoResponse;
    use sitrep::integrations::{Endpoint, LiveTransport, Transport};
    // A fake API server that refuses any request for Secrets that would carry their values.
    let app = axum::Router::new().fallback(|uri: Uri, headers: HeaderMap| async move {
        if uri.path() != format!("/api/v1/namespaces/{NS}/secrets") {
            return StatusCode::NOT_FOUND.into_response();
        }
        let accept = headers
            .get("accept")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let meta = json!({"name": "register-db", "namespace": NS,
            "creationTimestamp": "2026-05-01T08:00:00Z",
            "managedFields": [{"manager": "vault-sync", "operation": "Update", "time": "2026-06-03T14:18:00Z"}]});
        if !accept.contains("as=PartialObjectMetadataList") || accept.contains("application/json;q") {
            return (StatusCode::NOT_ACCEPTABLE, "values would be sent").into_response();
        }
        axum::Json(json!({"kind": "PartialObjectMetadataList", "items": [{"kind": "PartialObjectMetadata", "metadata": meta}]}))
            .into_response()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("addr: {e}"));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let live = LiveTransport::new()
        .unwrap_or_else(|e| panic!("client: {e}"))
        .with_endpoint("kubernetes", Endpoint::new(format!("http://{addr}")));
    let transport: Arc<dyn Transport> = Arc::new(live);
    let world = World::with_transport(transport, sitrep::world::Mode::Live, NS, None);
    let got = world
        .kubernetes()
        .secrets(NS)
        .await
        .unwrap_or_else(|e| panic!("secrets: {e}"));
    server.abort();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].title, "secret register-db updated");
    assert_eq!(got[0].kind, ChangeKind::Config);
}
