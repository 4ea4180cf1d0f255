//! Kubernetes lists are read in pages (limit, then continue with each page's token), and a
//! recording or server that does not page still answers them whole.

use serde_json::{Value, json};
use sitrep::integrations::transport::{Body, Recording, ReplayTransport, Transport};
use sitrep::world::{Mode, World};
use std::collections::BTreeMap;
use std::sync::Arc;

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "shop"}, "status": {"phase": "Running"}})
}

fn page(query: &[(&str, &str)], names: &[&str], next: Option<&str>) -> Recording {
    let mut meta = json!({});
    if let Some(t) = next {
        meta["continue"] = json!(t);
    }
    Recording {
        integration: "kubernetes".into(),
        method: "GET".into(),
        path: "/api/v1/namespaces/shop/pods".into(),
        query: query
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect::<BTreeMap<_, _>>(),
        status: 200,
        body: Body::Json(json!({
            "kind": "PodList",
            "metadata": meta,
            "items": names.iter().map(|n| pod(n)).collect::<Vec<_>>(),
        })),
        latency_ms: None,
    }
}

fn world(recordings: Vec<Recording>) -> (World, Arc<ReplayTransport>) {
    let replay = Arc::new(ReplayTransport::new(recordings));
    let transport: Arc<dyn Transport> = replay.clone();
    (
        World::with_transport(transport, Mode::Replay, "shop", None),
        replay,
    )
}

fn names(pods: &[sitrep::model::PodFacts]) -> Vec<&str> {
    pods.iter().map(|p| p.name.as_str()).collect()
}

#[tokio::test]
async fn every_page_is_read_by_its_token() {
    let (w, replay) = world(vec![
        // What a client that does not page would get: never asked for.
        page(&[], &["whole"], None),
        page(&[("limit", "500")], &["a", "b"], Some("t1")),
        page(&[("limit", "500"), ("continue", "t1")], &["c"], Some("t2")),
        page(&[("limit", "500"), ("continue", "t2")], &["d"], None),
    ]);
    let pods = w.kubernetes().list_pods("shop", None).await.expect("pods");
    assert_eq!(names(&pods), ["a", "b", "c", "d"]);
    assert_eq!(replay.traffic().0, 3, "three pages, three requests");
}

#[tokio::test]
async fn an_unpaged_answer_is_the_whole_list() {
    let (w, replay) = world(vec![page(&[], &["a", "b"], None)]);
    let pods = w.kubernetes().list_pods("shop", None).await.expect("pods");
    assert_eq!(names(&pods), ["a", "b"]);
    assert_eq!(replay.traffic().0, 1);
}

#[tokio::test]
async fn a_token_handed_back_again_is_an_error_not_a_loop() {
    let (w, _) = world(vec![
        page(&[("limit", "500")], &["a"], Some("t1")),
        page(&[("limit", "500"), ("continue", "t1")], &["b"], Some("t1")),
    ]);
    let err = w
        .kubernetes()
        .list_pods("shop", None)
        .await
        .expect_err("no end");
    assert!(err.to_string().contains("did not end"), "{err}");
}

/// One page of a `networking.k8s.io/v1` list at `path`.
fn networking_page(
    path: &str,
    kind: &str,
    query: &[(&str, &str)],
    items: Vec<Value>,
    next: Option<&str>,
) -> Recording {
    let mut meta = json!({});
    if let Some(t) = next {
        meta["continue"] = json!(t);
    }
    Recording {
        integration: "kubernetes".into(),
        method: "GET".into(),
        path: path.into(),
        query: query
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect::<BTreeMap<_, _>>(),
        status: 200,
        body: Body::Json(json!({
            "apiVersion": "networking.k8s.io/v1", "kind": format!("{kind}List"),
            "metadata": meta, "items": items,
        })),
        latency_ms: None,
    }
}

fn ingress(name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "shop"},
           "spec": {"rules": [{"host": format!("{name}.example.com"), "http": {"paths": [
               {"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}]}})
}

#[tokio::test]
async fn ingresses_are_read_page_by_page_with_the_cluster_classes() {
    let path = "/apis/networking.k8s.io/v1/namespaces/shop/ingresses";
    let classes = "/apis/networking.k8s.io/v1/ingressclasses";
    let (w, _) = world(vec![
        networking_page(
            path,
            "Ingress",
            &[("limit", "500")],
            vec![ingress("shop")],
            Some("t1"),
        ),
        networking_page(
            path,
            "Ingress",
            &[("limit", "500"), ("continue", "t1")],
            vec![ingress("docs")],
            None,
        ),
        networking_page(
            classes,
            "IngressClass",
            &[("limit", "500")],
            vec![json!({"metadata": {"name": "nginx",
                         "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
                         "spec": {"controller": "k8s.io/ingress-nginx"}})],
            None,
        ),
    ]);
    let read = w.kubernetes().ingresses("shop").await.expect("ingresses");
    let names: Vec<&str> = read.ingresses.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["shop", "docs"]);
    assert_eq!(read.ingresses[1].hosts, ["docs.example.com"]);
    let classes = read.classes.expect("classes read");
    assert!(classes[0].is_default && classes[0].controller == "k8s.io/ingress-nginx");

    // A cluster (or recording) without the IngressClass list still gives the Ingresses, with
    // their classes unknown rather than none.
    let (w, _) = world(vec![networking_page(
        path,
        "Ingress",
        &[("limit", "500")],
        vec![ingress("shop")],
        None,
    )]);
    let read = w.kubernetes().ingresses("shop").await.expect("ingresses");
    assert_eq!(read.ingresses.len(), 1);
    assert!(read.classes.is_none());
    // No Ingress list at all is an error the caller sees.
    let (w, _) = world(Vec::new());
    assert!(w.kubernetes().ingresses("shop").await.is_err());
}
