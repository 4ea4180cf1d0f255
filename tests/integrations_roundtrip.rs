//! Record an investigation against the real Prometheus and the loopback fakes, stop them all, replay the
//! recorded case: the facts (what evidence is built from) are identical. The recording holds no secret.

mod support;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sitrep::config::Config;
use sitrep::integrations::Direction;
use sitrep::model::WebhookPayload;
use sitrep::world::{Mode, World};
use std::path::Path;
use std::sync::{Arc, Mutex};
use support::Cluster;

/// A fixed investigation: every read a gather stage makes, with explicit times so both runs ask alike.
async fn investigate(
    w: &World,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
    changes_since: DateTime<Utc>,
    with_prometheus: bool,
) -> Value {
    let k = w.kubernetes();
    let pod = "payments-api-7f9dd8b6c4-x7gr9";
    let mut out = json!({
        "pods": k.list_pods("payments", Some("app=payments-api")).await.expect("pods"),
        "all_pods": k.list_pods(None, None).await.expect("all pods"),
        "pod": k.get_pod("payments", pod).await.expect("pod"),
        "logs": k.pod_logs("payments", pod, Some("api"), false, Some(50)).await.expect("logs"),
        "previous": k.pod_logs("payments", pod, Some("api"), true, Some(50)).await.expect("previous logs"),
        "events": k.events("payments", Some(pod), None).await.expect("events"),
        "deployments": k.deployments("payments").await.expect("deployments"),
        "replica_sets": k.replica_sets("payments").await.expect("replica sets"),
        "nodes": k.nodes().await.expect("nodes"),
        "loki": w.loki().query_range("{app=\"payments-api\"}", start, end, 100, Direction::Backward).await.expect("loki"),
        "deploys": w.github().deployments("acme/payments", changes_since, end).await.expect("deploys"),
        "commits": w.github().commits("acme/payments", changes_since, end).await.expect("commits"),
        "pulls": w.github().merged_pulls("acme/payments", changes_since, end).await.expect("pulls"),
    });
    if with_prometheus {
        out["metrics"] = json!(
            w.prometheus()
                .query_range("http_errors_ratio", start, end, 60)
                .await
                .expect("range")
        );
        out["instant"] = json!(
            w.prometheus()
                .query("max(http_errors_ratio)", end)
                .await
                .expect("query")
        );
        out["rules"] = json!(w.prometheus().rules().await.expect("rules"));
    }
    out
}

fn config(k8s: &str, loki: &str, github: &str, prometheus: Option<&str>) -> Config {
    let mut text = format!(
        "[integrations.kubernetes]\nurl = \"{k8s}\"\nnamespace = \"payments\"\n\
         [integrations.loki]\nurl = \"{loki}\"\n\
         [integrations.github]\nurl = \"{github}\"\nrepo = \"acme/payments\"\n"
    );
    if let Some(p) = prometheus {
        text.push_str(&format!(
            "[integrations.prometheus]\nurl = \"{p}\"\ntimeout_secs = 5\n"
        ));
    }
    Config::parse(&text, Path::new("test-config.toml")).expect("config parses")
}

fn alert() -> WebhookPayload {
    serde_json::from_value(json!({
        "version": "4", "status": "firing", "receiver": "sitrep",
        "alerts": [{"status": "firing", "labels": {"alertname": "PaymentsHighErrorRatio", "namespace": "payments"},
                    "annotations": {"summary": "errors above 10%"}}]
    }))
    .expect("payload")
}

#[tokio::test]
async fn a_recorded_investigation_replays_to_identical_facts() {
    let with_prometheus = support::have_binaries(&["prometheus", "promtool"]);
    let now = Utc::now().timestamp();
    let end_secs = now - now % 60 - 60;
    let (openmetrics, _) = support::metric_history(end_secs);
    let prom = if with_prometheus {
        Some(
            support::prometheus(&openmetrics, "groups: []\n")
                .await
                .expect("prometheus starts"),
        )
    } else {
        eprintln!("recording without Prometheus");
        None
    };
    let cluster = Arc::new(Mutex::new(Cluster::payments()));
    let k8s = support::kubernetes(cluster).await;
    let loki = support::loki(Arc::new(Mutex::new(Vec::new()))).await;
    let github = support::github(Arc::new(Mutex::new(support::Repo::default()))).await;

    let case_dir = tempfile::tempdir().expect("tempdir");
    let dir = case_dir.path().join("recorded-case");
    let cfg = config(
        &k8s.url,
        &loki.url,
        &github.url,
        prom.as_ref().map(|p| p.url.as_str()),
    );
    let end = DateTime::<Utc>::from_timestamp(end_secs, 0).expect("end");
    let start = end - chrono::Duration::hours(1);
    // The GitHub fake's changes are in April 2026; ask from then in both runs alike.
    let gh_start = DateTime::parse_from_rfc3339("2026-04-18T00:00:00Z")
        .expect("t")
        .with_timezone(&Utc);

    let recorded = {
        let w = World::record(&cfg, &dir, "payments errors", Some(&alert()))
            .await
            .expect("recording world");
        assert_eq!(w.mode(), Mode::Recording);
        investigate(&w, (start, end), gh_start, with_prometheus).await
    };

    // Everything live goes away; the replay must need none of it.
    drop((k8s, loki, github));
    if let Some(p) = prom {
        p.stop();
    }

    let replay = World::from_case_dir(&dir).expect("recorded case loads");
    assert_eq!(replay.mode(), Mode::Replay);
    let case = replay.case().expect("case");
    assert_eq!(case.id, "recorded-case");
    assert_eq!(case.title, "payments errors");
    assert_eq!(
        case.alert
            .as_ref()
            .map(|a| a.primary().name().to_string())
            .as_deref(),
        Some("PaymentsHighErrorRatio")
    );
    assert_eq!(replay.kubernetes().default_namespace(), "payments");
    let replayed = investigate(&replay, (start, end), gh_start, with_prometheus).await;
    assert_eq!(
        recorded, replayed,
        "replay gives the facts the live run saw"
    );
    assert!(recorded["pods"].as_array().is_some_and(|p| p.len() == 2));
    if with_prometheus {
        assert_eq!(
            recorded["metrics"][0]["points"].as_array().map(Vec::len),
            Some(61)
        );
    }

    // A replay is independent of the clock it runs at: a different window still finds the recordings.
    let later = end + chrono::Duration::days(3);
    let again = replay
        .loki()
        .query_range(
            "{app=\"payments-api\"}",
            later,
            later,
            100,
            Direction::Backward,
        )
        .await;
    assert_eq!(
        again.map(|l| l.len()).ok(),
        recorded["loki"].as_array().map(Vec::len)
    );

    let text = std::fs::read_to_string(dir.join("recordings.ndjson")).expect("recordings");
    for canary in support::ALL_CANARIES {
        assert!(
            !text.contains(canary),
            "canary {canary} reached the recording"
        );
        assert!(
            !recorded.to_string().contains(canary),
            "canary {canary} reached the facts"
        );
    }
    assert!(text.contains("[REDACTED]"));
}
