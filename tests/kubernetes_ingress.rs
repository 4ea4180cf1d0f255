//! An Ingress read end to end against a fake API server on loopback: "the shop website returns
//! 503" resolves to the shop's Ingress, whose rule routes to a Service that does not exist, and
//! the verdict says so (`configuration_error`); the Ingress's TLS Secret is checked by name only,
//! its value never read; the recorded case replays, and without its Ingress recordings it still
//! runs and stops claiming the Ingress.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use support::Cluster;

/// What a Secret's value would look like if it leaked: base64 of a PEM header.
const KEY_B64: &str = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCnNob3AtY2FudGFyeQ==";

/// Namespace `shop`: Deployment `storefront` with two Ready pods behind Service `storefront`,
/// and Ingress `shop` for shop.example.com whose rule names Service `storefront-web`, which
/// does not exist. Its IngressClass exists and is the default; its TLS Secret exists.
fn shop() -> Cluster {
    let pod = |name: &str| {
        json!({
            "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                         "creationTimestamp": "2026-11-28T09:00:00Z",
                         "labels": {"app": "storefront", "pod-template-hash": "5d8f7c9b6"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "storefront-5d8f7c9b6", "uid": "rs", "controller": true}]},
            "spec": {"nodeName": "ip-10-0-1-42", "containers": [{
                "name": "web", "image": "registry/storefront:v4",
                "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0,
                                              "image": "registry/storefront:v4", "imageID": "",
                                              "state": {"running": {"startedAt": "2026-11-28T09:00:10Z"}}}]}
        })
    };
    let pods = ["storefront-5d8f7c9b6-a1b2c", "storefront-5d8f7c9b6-d3e4f"];
    Cluster {
        workload_apis: true,
        network_apis: true,
        pods: pods.iter().map(|p| pod(p)).collect(),
        deployments: vec![json!({
            "metadata": {"name": "storefront", "namespace": "shop", "generation": 3,
                         "annotations": {"deployment.kubernetes.io/revision": "3"},
                         "creationTimestamp": "2026-10-01T00:00:00Z"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "storefront"}},
                     "template": {"metadata": {"labels": {"app": "storefront", "pod-template-hash": "5d8f7c9b6"}},
                                  "spec": {"containers": [{"name": "web", "image": "registry/storefront:v4"}]}}},
            "status": {"observedGeneration": 3, "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2,
                       "availableReplicas": 2}
        })],
        replicasets: vec![json!({
            "metadata": {"name": "storefront-5d8f7c9b6", "namespace": "shop",
                         "annotations": {"deployment.kubernetes.io/revision": "3"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "storefront", "uid": "d"}]},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "storefront"}}},
            "status": {"replicas": 2, "readyReplicas": 2}
        })],
        nodes: vec![json!({
            "metadata": {"name": "ip-10-0-1-42"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                       "allocatable": {"cpu": "3920m", "memory": "15Gi"}}
        })],
        services: vec![json!({
            "metadata": {"name": "storefront", "namespace": "shop"},
            "spec": {"selector": {"app": "storefront"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        })],
        endpoints: vec![json!({
            "metadata": {"name": "storefront", "namespace": "shop"},
            "subsets": [{"addresses": pods.iter().enumerate().map(|(i, p)| json!({
                "ip": format!("10.244.1.{}", i + 10),
                "targetRef": {"kind": "Pod", "name": p, "namespace": "shop"}})).collect::<Vec<_>>(),
                         "ports": [{"name": "http", "port": 8080}]}]
        })],
        ingresses: vec![json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "shop", "namespace": "shop", "creationTimestamp": "2026-11-28T13:40:00Z"},
            "spec": {
                "ingressClassName": "nginx",
                "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
                "rules": [{"host": "shop.example.com", "http": {"paths": [
                    {"path": "/", "pathType": "Prefix",
                     "backend": {"service": {"name": "storefront-web", "port": {"number": 80}}}}]}}]
            },
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}}
        })],
        ingress_classes: vec![json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
            "spec": {"controller": "k8s.io/ingress-nginx"}
        })],
        secrets: vec![json!({
            "metadata": {"name": "shop-tls", "namespace": "shop", "creationTimestamp": "2026-11-01T00:00:00Z"},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": KEY_B64, "tls.key": KEY_B64}
        })],
        ..Cluster::default()
    }
}

/// Runs `sitrep investigate` (see [`support::investigate`]).
fn run(args: &[&str], config: &Path, data: &Path) -> (String, Vec<Value>) {
    support::investigate(args, config, data)
}

fn diagnosis(records: &[Value]) -> Value {
    records
        .iter()
        .find(|r| r["event"]["type"] == "diagnosis")
        .map(|r| r["event"].clone())
        .expect("a diagnosis")
}

/// The tools called, by name.
fn tools(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["event"]["type"] == "tool_called")
        .filter_map(|r| r["event"]["tool"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_website_503_is_the_ingress_routing_to_a_service_that_does_not_exist() {
    let shared = Arc::new(Mutex::new(shop()));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, Some("shop"));
    let data = tmp.path().join("data");
    let case = tmp.path().join("recorded");
    let problem = "the shop website returns 503";
    let args = [
        "--problem".to_string(),
        problem.to_string(),
        "--record".to_string(),
        case.display().to_string(),
    ];
    let (config_c, data_c) = (config.clone(), data.clone());
    let (text, live) = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args, &config_c, &data_c)
    })
    .await
    .expect("live run");

    let called = tools(&live);
    for tool in [
        "kubernetes.services",
        "kubernetes.ingresses",
        "kubernetes.secrets",
    ] {
        assert!(called.iter().any(|t| t == tool), "{tool} read: {called:?}");
    }
    let seen = shared.lock().map(|c| c.seen.clone()).unwrap_or_default();
    for path in [
        "GET /apis/networking.k8s.io/v1/namespaces/shop/ingresses?",
        "GET /apis/networking.k8s.io/v1/ingressclasses?",
        "GET /api/v1/namespaces/shop/secrets",
    ] {
        assert!(
            seen.iter().any(|s| s.starts_with(path)),
            "{path} asked: {seen:?}"
        );
    }
    // The Secret list is asked for metadata only: its value never reaches the output.
    assert!(!text.contains(KEY_B64), "a Secret's value leaked");

    let d = diagnosis(&live);
    let cause = d["root_cause"].as_str().unwrap_or_default();
    assert_eq!(d["category"], "configuration_error", "{d}");
    assert!(
        cause.contains(
            "Ingress shop routes shop.example.com/ to Service storefront-web, which does not exist in shop"
        ) && cause.contains("the closest existing Service is storefront"),
        "{cause}"
    );
    // The TLS Secret the Ingress names exists: that check passes, whatever else fails.
    let failing: Vec<String> = live
        .iter()
        .filter(|r| r["event"]["type"] == "checks")
        .flat_map(|r| r["event"]["checks"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["status"] == "failing")
        .filter_map(|c| c["check"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        failing,
        ["Ingress routes to a Service that exists"],
        "only the backend fails"
    );
    let subject: Vec<String> = live
        .iter()
        .filter(|r| r["event"]["type"] == "subject")
        .flat_map(|r| {
            r["event"]["objects"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|o| Some(format!("{}/{}", o["kind"].as_str()?, o["name"].as_str()?)))
        .collect();
    assert!(
        subject.contains(&"Ingress/shop".to_string())
            && subject.contains(&"Service/storefront-web".to_string()),
        "{subject:?}"
    );

    // The recorded case replays to the same verdict with nothing live.
    drop(k8s);
    let (config_r, data_r, case_r) = (config.clone(), data.clone(), case.clone());
    let (_, replayed) = tokio::task::spawn_blocking(move || {
        run(
            &[
                "--problem",
                problem,
                "--case",
                &case_r.display().to_string(),
            ],
            &config_r,
            &data_r,
        )
    })
    .await
    .expect("replay run");
    assert_eq!(diagnosis(&replayed)["root_cause"], d["root_cause"]);

    // Without the Ingress recordings the case still runs; the Ingress is no longer claimed.
    let recordings = case.join("recordings.ndjson");
    let kept: Vec<String> = std::fs::read_to_string(&recordings)
        .expect("recordings")
        .lines()
        .filter(|l| !l.contains("ingress"))
        .map(str::to_string)
        .collect();
    std::fs::write(&recordings, kept.join("\n") + "\n").expect("rewrite recordings");
    let (_, without) = tokio::task::spawn_blocking(move || {
        run(
            &["--problem", problem, "--case", &case.display().to_string()],
            &config,
            &data,
        )
    })
    .await
    .expect("replay without ingresses");
    let d = diagnosis(&without);
    let cause = d["root_cause"].as_str().unwrap_or_default();
    assert!(!cause.contains("Ingress shop"), "{cause}");
    assert_ne!(d["category"], "healthy", "{d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_warning_is_the_ingress_naming_a_tls_secret_that_does_not_exist() {
    let mut cluster = shop();
    // The backend is right; the TLS entry names a Secret of another name than the one there.
    cluster.ingresses[0]["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] =
        json!("storefront");
    cluster.ingresses[0]["spec"]["tls"][0]["secretName"] = json!("shop-tls-v2");
    let shared = Arc::new(Mutex::new(cluster));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, None);
    let data = tmp.path().join("data");
    let (text, live) = tokio::task::spawn_blocking(move || {
        run(
            &[
                "--problem",
                "the portal at shop.example.com shows a certificate warning",
            ],
            &config,
            &data,
        )
    })
    .await
    .expect("live run");
    assert!(!text.contains(KEY_B64), "a Secret's value leaked");
    let d = diagnosis(&live);
    let cause = d["root_cause"].as_str().unwrap_or_default();
    assert_eq!(d["category"], "configuration_error", "{d}");
    assert!(
        cause.contains(
            "Ingress shop wants TLS Secret shop-tls-v2 for shop.example.com, which does not exist in shop"
        ) && cause.contains("self-signed certificate")
            && cause.contains("a Secret named shop-tls exists"),
        "{cause}"
    );
    // No namespace in the words or the configuration: every namespace's Ingresses were read
    // to find the one whose host the problem names.
    let seen = shared.lock().map(|c| c.seen.clone()).unwrap_or_default();
    assert!(
        seen.iter()
            .any(|s| s.starts_with("GET /apis/networking.k8s.io/v1/ingresses?")),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_named_outright_is_its_ingress_not_a_workload_sharing_a_word() {
    let mut cluster = shop();
    // Another namespace runs the ingress controller, whose name shares the word "ingress" with
    // the problem.
    let mut proxy = cluster.pods[0].clone();
    proxy["metadata"]["name"] = json!("ingress-nginx-controller-7f6e5d4c3-p1q2r");
    proxy["metadata"]["namespace"] = json!("ingress-nginx");
    proxy["metadata"]["labels"] =
        json!({"app": "ingress-nginx-controller", "pod-template-hash": "7f6e5d4c3"});
    proxy["metadata"]["ownerReferences"][0]["name"] = json!("ingress-nginx-controller-7f6e5d4c3");
    cluster.pods.push(proxy);
    let mut deployment = cluster.deployments[0].clone();
    deployment["metadata"]["name"] = json!("ingress-nginx-controller");
    deployment["metadata"]["namespace"] = json!("ingress-nginx");
    deployment["spec"]["selector"] = json!({"matchLabels": {"app": "ingress-nginx-controller"}});
    deployment["status"] = json!({"observedGeneration": 3, "replicas": 1, "readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1});
    cluster.deployments.push(deployment);
    let shared = Arc::new(Mutex::new(cluster));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, None);
    let data = tmp.path().join("data");
    let (_, live) = tokio::task::spawn_blocking(move || {
        run(
            &[
                "--problem",
                "shop.example.com returns 503 for every page since the ingress change",
            ],
            &config,
            &data,
        )
    })
    .await
    .expect("live run");
    let d = diagnosis(&live);
    let cause = d["root_cause"].as_str().unwrap_or_default();
    assert_eq!(d["category"], "configuration_error", "{d}");
    assert!(
        cause.contains("Ingress shop") && cause.contains("storefront-web"),
        "{cause}"
    );
}
