//! Canary secrets fed through every client: none survives into facts (what evidence is built from)
//! or into a recording.

mod support;

use chrono::{DateTime, Duration, Utc};
use secrecy::SecretString;
use serde_json::{Value, json};
use sitrep::config::ResolvedAuth;
use sitrep::integrations::{
    AlertFilter, Direction, Endpoint, LiveTransport, RecordingTransport, Transport,
};
use sitrep::world::{Mode, World};
use std::sync::{Arc, Mutex};
use support::Cluster;

/// A credential with no recognisable shape: only exact-value masking can catch it.
const PLAIN_CREDENTIAL: &str = "zq8plaincredential77";

fn assert_clean(what: &str, text: &str) {
    for canary in support::ALL_CANARIES.iter().chain([&PLAIN_CREDENTIAL]) {
        assert!(!text.contains(canary), "{what}: canary {canary} survived");
    }
}

#[tokio::test]
async fn no_canary_survives_any_client_or_the_recording() {
    let mut cluster = Cluster::payments();
    cluster.token = Some(PLAIN_CREDENTIAL.into());
    // The API server echoes the credential in an annotation (as a misconfigured webhook might).
    cluster.pods[0]["metadata"]["annotations"] = json!({"debug/last-auth": PLAIN_CREDENTIAL});
    let k8s = support::kubernetes(Arc::new(Mutex::new(cluster))).await;
    let loki = support::loki(Arc::new(Mutex::new(Vec::new()))).await;
    let github = support::github(Arc::new(Mutex::new(support::Repo::default()))).await;

    let bearer = || {
        Some(ResolvedAuth::Bearer(SecretString::from(
            PLAIN_CREDENTIAL.to_string(),
        )))
    };
    let mut live = LiveTransport::new()
        .expect("client")
        .with_endpoint("kubernetes", Endpoint::new(&k8s.url).auth(bearer()))
        .with_endpoint("loki", Endpoint::new(&loki.url))
        .with_endpoint("github", Endpoint::new(&github.url));

    // Real Prometheus and Alertmanager when installed, with canaries in a label and an annotation.
    let real = support::have_binaries(&["prometheus", "promtool", "prometheus-alertmanager"]);
    let now = Utc::now().timestamp();
    let end = now - now % 60 - 60;
    let mut procs = Vec::new();
    if real {
        let history = format!(
            "# TYPE db_up gauge\ndb_up{{dsn=\"postgres://app:{}@db:5432/pay\"}} 1 {end}\n# EOF\n",
            support::CANARY_PASSWORD
        );
        let prom = support::prometheus(&history, "groups: []\n")
            .await
            .expect("prometheus");
        let am = support::alertmanager().await.expect("alertmanager");
        let posted = reqwest::Client::new()
            .post(format!("{}/api/v2/alerts", am.url))
            .json(&json!([{"labels": {"alertname": "Leaky"},
                           "annotations": {"description": format!("auth: Bearer {}", support::CANARY_TOKEN),
                                           "aws": support::CANARY_AWS}}]))
            .send()
            .await
            .expect("post alert");
        assert!(posted.status().is_success());
        live = live
            .with_endpoint("prometheus", Endpoint::new(&prom.url))
            .with_endpoint("alertmanager", Endpoint::new(&am.url));
        procs.push(prom);
        procs.push(am);
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let recording = RecordingTransport::new(Arc::new(live), dir.path()).expect("recording");
    let transport: Arc<dyn Transport> = Arc::new(recording);
    let w = World::with_transport(
        transport,
        Mode::Recording,
        "payments",
        Some("acme/payments".into()),
    );
    let t = |s: &str| {
        DateTime::parse_from_rfc3339(s)
            .expect("t")
            .with_timezone(&Utc)
    };
    let (since, until) = (t("2026-04-18T00:00:00Z"), t("2026-04-19T00:00:00Z"));
    let pod = "payments-api-7f9dd8b6c4-x7gr9";
    let k = w.kubernetes();

    let mut facts = vec![
        json!(k.list_pods("payments", None).await.expect("pods")),
        json!(k.get_pod("payments", pod).await.expect("pod")),
        json!(
            k.pod_logs("payments", pod, None, false, None)
                .await
                .expect("logs")
        ),
        json!(k.events("payments", None, None).await.expect("events")),
        json!(k.deployments("payments").await.expect("deployments")),
        json!(k.nodes().await.expect("nodes")),
        json!(
            w.loki()
                .query_range(
                    "{app=\"payments-api\"}",
                    since,
                    until,
                    100,
                    Direction::Forward
                )
                .await
                .expect("loki")
        ),
        json!(
            w.github()
                .commits("acme/payments", since, until)
                .await
                .expect("commits")
        ),
        json!(
            w.github()
                .deployments("acme/payments", since, until)
                .await
                .expect("deployments")
        ),
    ];
    // The fakes did carry the canaries: the masks are there instead.
    let joined: String = facts.iter().map(Value::to_string).collect();
    assert!(joined.contains("token=[REDACTED]"));
    assert!(
        joined.contains("\"debug/last-auth\":\"[REDACTED]\"")
            || !joined.contains("debug/last-auth")
    );

    if real {
        let at = DateTime::<Utc>::from_timestamp(end, 0).expect("end");
        let series = w
            .prometheus()
            .query_range("db_up", at - Duration::minutes(5), at, 60)
            .await
            .expect("range");
        assert!(!series.is_empty());
        facts.push(json!(series));
        let alerts = w
            .alertmanager()
            .alerts(&AlertFilter::default().label("alertname", "Leaky"))
            .await
            .expect("alerts");
        assert_eq!(alerts.len(), 1);
        assert!(alerts[0].annotations["description"].contains("Bearer [REDACTED]"));
        facts.push(json!(alerts));
    }

    for (i, f) in facts.iter().enumerate() {
        assert_clean(&format!("facts #{i}"), &f.to_string());
    }
    let recorded =
        std::fs::read_to_string(dir.path().join("recordings.ndjson")).expect("recordings");
    assert!(recorded.lines().count() >= facts.len());
    assert_clean("recordings.ndjson", &recorded);
    // The raw pod (with its env) is in the recording: the DSN keeps its host, loses its password.
    assert!(recorded.contains("postgres://app:[REDACTED]@db:5432/pay"));

    // The failing request's error does not leak the credential either.
    let e = w
        .kubernetes()
        .get_pod("payments", "missing")
        .await
        .expect_err("404");
    assert_clean("error", &e.to_string());
    drop(procs);
}
