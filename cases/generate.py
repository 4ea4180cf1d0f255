#!/usr/bin/env python3
"""Generate the built-in demo scenarios (cases/<name>/) of sitrep.

Each scenario is a recorded world: the raw JSON (or text) that the Kubernetes,
Prometheus, Loki and GitHub APIs answer, an Alertmanager webhook (version 4),
an `expect.toml` rubric for `sitrep eval`, and `effects.toml` with the recordings
that win once the right action has run (including the mutation's own response).

Run from the repository root:  python3 cases/generate.py
The output is deterministic; commit the generated files (they are embedded into
the binary by src/world/demo.rs).
"""

import hashlib
import json
import os
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))


def h(s):
    """A stable hash (Python's own is salted per process) for ids that look real."""
    return int(hashlib.md5(str(s).encode()).hexdigest(), 16)


def ts(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def rec(integration, path, body, method="GET", query=None, status=200):
    return {
        "integration": integration,
        "method": method,
        "path": path,
        "query": query or {},
        "status": status,
        "body": body,
    }


# ---------------------------------------------------------------- kubernetes objects


def owner(kind, name, uid):
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid,
             "controller": True, "blockOwnerDeletion": True}]


def container_status(name, image, ready=True, restarts=0, state=None, last=None, started=None):
    st = state or {"running": {"startedAt": ts(started)}}
    cs = {"name": name, "image": image, "imageID": "" if "waiting" in st else
          f"{image.split(':')[0]}@sha256:{h((image)) % (10 ** 12):064d}",
          "ready": ready, "restartCount": restarts, "started": "running" in st, "state": st,
          "lastState": last or {}}
    cs["containerID"] = "" if "waiting" in st else f"containerd://{h((name + image)) % (10 ** 16):064x}"
    return cs


def pod(name, ns, app, node, image, created, owner_kind, owner_name, *, container=None,
        ready=True, phase="Running", restarts=0, state=None, last=None, started=None,
        limits=None, requests=None, deleting=None, ready_reason=None, liveness=True,
        readiness=True, extra_labels=None, pod_ip="10.0.0.1", cond_status=None):
    container = container or app
    labels = {"app": app, "app.kubernetes.io/name": app}
    if owner_kind == "ReplicaSet":
        labels["pod-template-hash"] = owner_name.rsplit("-", 1)[1]
    labels.update(extra_labels or {})
    res = {}
    if limits:
        res["limits"] = limits
    if requests:
        res["requests"] = requests
    spec_c = {"name": container, "image": image, "ports": [{"containerPort": 8080, "protocol": "TCP"}],
              "resources": res, "imagePullPolicy": "IfNotPresent"}
    if liveness:
        spec_c["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10,
                                   "failureThreshold": 3}
    if readiness:
        spec_c["readinessProbe"] = {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5,
                                    "failureThreshold": 3}
    ready_s = cond_status or ("True" if ready else "False")
    conds = [
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": ts(created)},
        {"type": "Initialized", "status": "True", "lastTransitionTime": ts(created)},
        {"type": "Ready", "status": ready_s, "lastTransitionTime": ts(started or created)},
        {"type": "ContainersReady", "status": ready_s, "lastTransitionTime": ts(started or created)},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(created)},
    ]
    if ready_s != "True" and ready_reason:
        for c in conds:
            if c["type"] in ("Ready", "ContainersReady"):
                c["reason"] = ready_reason[0]
                c["message"] = ready_reason[1]
    meta = {"name": name, "namespace": ns, "uid": f"{h((name)) % (10 ** 12):012d}-4c1d-9e7a-{h((ns)) % (10 ** 12):012d}",
            "creationTimestamp": ts(created), "labels": labels,
            "ownerReferences": owner(owner_kind, owner_name, f"{h((owner_name)) % (10 ** 8):08d}-0000-4000-8000-000000000000")}
    if deleting:
        meta["deletionTimestamp"] = ts(deleting)
        meta["deletionGracePeriodSeconds"] = 30
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"nodeName": node, "containers": [spec_c], "restartPolicy": "Always",
                 "serviceAccountName": app, "terminationGracePeriodSeconds": 30},
        "status": {"phase": phase, "conditions": conds, "hostIP": "10.20.0.10", "podIP": pod_ip,
                   "startTime": ts(created), "qosClass": "Burstable",
                   "containerStatuses": [container_status(container, image, ready, restarts, state, last,
                                                          started or created)]},
    }


def deployment(name, ns, image, revision, replicas, ready, updated, created, *, progressing=None,
               available=True, cpu="500m", mem="512Mi", cpu_req="250m", mem_req="256Mi", generation=None,
               restarted_at=None):
    gen = generation or revision + 3
    avail = ready
    conds = [
        {"type": "Available", "status": "True" if available else "False",
         "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
         "message": "Deployment has minimum availability." if available else "Deployment does not have minimum availability.",
         "lastUpdateTime": ts(created), "lastTransitionTime": ts(created)},
        progressing or {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                        "message": f'ReplicaSet "{name}" has successfully progressed.',
                        "lastUpdateTime": ts(created), "lastTransitionTime": ts(created)},
    ]
    tmpl_meta = {"labels": {"app": name, "app.kubernetes.io/name": name}}
    if restarted_at:
        tmpl_meta["annotations"] = {"kubectl.kubernetes.io/restartedAt": restarted_at}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "generation": gen,
                     "uid": f"{h((name + ns)) % (10 ** 8):08d}-1111-4000-8000-000000000000",
                     "creationTimestamp": "2025-11-03T09:12:44Z",
                     "annotations": {"deployment.kubernetes.io/revision": str(revision)},
                     "labels": {"app": name, "app.kubernetes.io/name": name, "team": ns}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                 "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                 "template": {"metadata": tmpl_meta,
                              "spec": {"containers": [{"name": name, "image": image,
                                                       "resources": {"limits": {"cpu": cpu, "memory": mem},
                                                                     "requests": {"cpu": cpu_req, "memory": mem_req}}}]}}},
        "status": {"observedGeneration": gen, "replicas": max(replicas, updated), "updatedReplicas": updated,
                   "readyReplicas": ready, "availableReplicas": avail,
                   **({"unavailableReplicas": replicas - ready} if replicas > ready else {}),
                   "conditions": conds},
    }


def replicaset(name, ns, deploy, image, revision, replicas, ready, created, cpu="500m", mem="512Mi"):
    phash = name.rsplit("-", 1)[1]
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(created),
                     "uid": f"{h((name)) % (10 ** 8):08d}-2222-4000-8000-000000000000",
                     "labels": {"app": deploy, "pod-template-hash": phash},
                     "annotations": {"deployment.kubernetes.io/revision": str(revision),
                                     "deployment.kubernetes.io/desired-replicas": str(max(replicas, 1)),
                                     "deployment.kubernetes.io/max-replicas": str(max(replicas, 1) + 1)},
                     "ownerReferences": owner("Deployment", deploy,
                                              f"{h((deploy + ns)) % (10 ** 8):08d}-1111-4000-8000-000000000000")},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": deploy, "pod-template-hash": phash}},
                 "template": {"metadata": {"labels": {"app": deploy, "app.kubernetes.io/name": deploy,
                                                      "pod-template-hash": phash}},
                              "spec": {"containers": [{"name": deploy, "image": image,
                                                       "resources": {"limits": {"cpu": cpu, "memory": mem}}}]}}},
        "status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready,
                   "fullyLabeledReplicas": replicas, "observedGeneration": 2},
    }


def node(name, zone, ready=True, since=None, heartbeat=None, taints=None, unschedulable=False):
    hb = ts(heartbeat or since)
    if ready:
        rc = {"type": "Ready", "status": "True", "reason": "KubeletReady",
              "message": "kubelet is posting ready status", "lastHeartbeatTime": hb,
              "lastTransitionTime": "2026-01-14T06:02:11Z"}
        pressure = [{"type": t, "status": "False", "reason": f"KubeletHasSufficient{r}",
                     "message": f"kubelet has sufficient {r.lower()} available", "lastHeartbeatTime": hb,
                     "lastTransitionTime": "2026-01-14T06:02:11Z"}
                    for t, r in (("MemoryPressure", "Memory"), ("DiskPressure", "Disk"), ("PIDPressure", "PID"))]
    else:
        rc = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
              "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": hb,
              "lastTransitionTime": ts(since)}
        pressure = [{"type": t, "status": "Unknown", "reason": "NodeStatusUnknown",
                     "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": hb,
                     "lastTransitionTime": ts(since)} for t in ("MemoryPressure", "DiskPressure", "PIDPressure")]
    spec = {"providerID": f"aws:///{zone}/i-0{h((name)) % (16 ** 16):016x}"}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
                                              "node.kubernetes.io/instance-type": "m6i.xlarge",
                                              "eks.amazonaws.com/nodegroup": "general"}},
        "spec": spec,
        "status": {"conditions": pressure + [rc],
                   "allocatable": {"cpu": "3920m", "memory": "14933020Ki", "pods": "58"},
                   "capacity": {"cpu": "4", "memory": "16012828Ki", "pods": "58"},
                   "nodeInfo": {"kubeletVersion": "v1.33.4-eks-3a0f1b2", "osImage": "Amazon Linux 2023",
                                "containerRuntimeVersion": "containerd://1.7.27"}},
    }


def event(ns, kind, obj, reason, message, first, last=None, count=1, type_="Normal", component="kubelet"):
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{obj}.{h((reason + message)) % (16 ** 16):016x}", "namespace": ns,
                     "creationTimestamp": ts(first)},
        "involvedObject": {"kind": kind, "namespace": ns, "name": obj,
                           "apiVersion": "v1" if kind in ("Pod", "Node") else "apps/v1"},
        "reason": reason, "message": message, "type": type_, "count": count,
        "firstTimestamp": ts(first), "lastTimestamp": ts(last or first),
        "source": {"component": component},
        "reportingComponent": component, "reportingInstance": "",
    }


def k8s_list(kind, items, api="v1"):
    return {"apiVersion": api, "kind": f"{kind}List", "metadata": {"resourceVersion": "48211734"}, "items": items}


def k8s_world(ns, pods, events, deployments, rsets, nodes, logs=None, statefulsets=(), revisions=()):
    """The read recordings a Kubernetes specialist asks for (the workload lists answer even when
    the namespace has none, as the API server does)."""
    out = [
        rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/statefulsets", k8s_list("StatefulSet", list(statefulsets), "apps/v1")),
        rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/controllerrevisions",
            k8s_list("ControllerRevision", list(revisions), "apps/v1")),
        rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/daemonsets", k8s_list("DaemonSet", [], "apps/v1")),
        rec("kubernetes", f"/apis/batch/v1/namespaces/{ns}/jobs", k8s_list("Job", [], "batch/v1")),
        rec("kubernetes", f"/apis/batch/v1/namespaces/{ns}/cronjobs", k8s_list("CronJob", [], "batch/v1")),
        rec("kubernetes", f"/api/v1/namespaces/{ns}/pods", k8s_list("Pod", pods)),
        rec("kubernetes", "/api/v1/pods", k8s_list("Pod", pods)),
        rec("kubernetes", f"/api/v1/namespaces/{ns}/events", k8s_list("Event", events)),
        rec("kubernetes", "/api/v1/events", k8s_list("Event", events)),
        rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/deployments", k8s_list("Deployment", deployments, "apps/v1")),
        rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/replicasets", k8s_list("ReplicaSet", rsets, "apps/v1")),
        rec("kubernetes", "/api/v1/nodes", k8s_list("Node", nodes)),
    ]
    for d in deployments:
        out.append(rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/deployments/{d['metadata']['name']}", d))
    for p in pods:
        out.append(rec("kubernetes", f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}", p))
    for (pod_name, previous), text in (logs or {}).items():
        q = {"previous": "true"} if previous else {}
        out.append(rec("kubernetes", f"/api/v1/namespaces/{ns}/pods/{pod_name}/log", text, query=q))
    return out


# ---------------------------------------------------------------- prometheus, loki, github


def matrix(series):
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": labels, "values": [[t.timestamp(), f"{v:.6g}"] for t, v in points]} for labels, points in series]}}


def curve(start, end, step_s, fn):
    out = []
    t = start
    while t <= end:
        out.append((t, fn(t)))
        t += timedelta(seconds=step_s)
    return out


def rules(group, alerts):
    return {"status": "success", "data": {"groups": [{
        "name": group, "file": f"/etc/prometheus/rules/{group}.yaml", "interval": 30,
        "rules": [{"type": "alerting", "name": name, "query": q, "duration": dur,
                   "labels": {"severity": sev}, "annotations": {"summary": summ},
                   "health": "ok", "state": state, "alerts": [],
                   "lastEvaluation": "2026-03-11T14:31:50Z", "evaluationTime": 0.0021}
                  for name, q, dur, sev, summ, state in alerts]}]}}


def prom_alerts(items):
    return {"status": "success", "data": {"alerts": [
        {"labels": labels, "annotations": ann, "state": state, "activeAt": ts(at), "value": value}
        for labels, ann, state, at, value in items]}}


def streams(entries):
    """entries: list of (labels, [(time, line)])"""
    return {"status": "success", "data": {"resultType": "streams", "result": [
        {"stream": labels, "values": [[str(int(t.timestamp() * 1e9)), line] for t, line in sorted(lines, key=lambda x: x[0], reverse=True)]}
        for labels, lines in entries], "stats": {"summary": {"bytesProcessedPerSecond": 5123456, "execTime": 0.041}}}}


def alert_payload(name, labels, annotations, starts, expr, status="firing", ends=None):
    full = {"alertname": name, **labels}
    gen = ""
    if expr:
        from urllib.parse import quote_plus
        gen = f"http://prometheus.monitoring.svc:9090/graph?g0.expr={quote_plus(expr)}&g0.tab=1"
    return {
        "version": "4", "groupKey": "{}:{alertname=\"%s\"}" % name, "truncatedAlerts": 0,
        "status": status, "receiver": "sitrep",
        "groupLabels": {"alertname": name}, "commonLabels": full, "commonAnnotations": annotations,
        "externalURL": "http://alertmanager.monitoring.svc:9093",
        "alerts": [{"status": status, "labels": full, "annotations": annotations,
                    "startsAt": ts(starts), "endsAt": ts(ends) if ends else "0001-01-01T00:00:00Z",
                    "generatorURL": gen, "fingerprint": f"{h((name + str(labels))) % (16 ** 16):016x}"}],
    }


def write_case(name, *, meta, alert, recordings, expect, effects=None):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "case.toml"), "w") as f:
        f.write(f'id = "{name}"\n')
        for k, v in meta.items():
            f.write(f"{k} = {json.dumps(v)}\n")
    with open(os.path.join(d, "alert.json"), "w") as f:
        json.dump(alert, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "recordings.ndjson"), "w") as f:
        for r in recordings:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    with open(os.path.join(d, "expect.toml"), "w") as f:
        for k, v in expect.items():
            f.write(f"{k} = {json.dumps(v)}\n")
    if effects:
        with open(os.path.join(d, "effects.toml"), "w") as f:
            for eff in effects:
                f.write("[[effect]]\n")
                f.write(f'action = "{eff["action"]}"\n')
                if eff.get("target"):
                    f.write(f'target = "{eff["target"]}"\n')
                f.write(f'recordings = "{eff["file"]}"\n\n')
                with open(os.path.join(d, eff["file"]), "w") as g:
                    for r in eff["recordings"]:
                        g.write(json.dumps(r, separators=(",", ":")) + "\n")


NODES = [
    ("ip-10-20-1-17.eu-west-1.compute.internal", "eu-west-1a"),
    ("ip-10-20-2-88.eu-west-1.compute.internal", "eu-west-1b"),
    ("ip-10-20-3-41.eu-west-1.compute.internal", "eu-west-1c"),
]


def healthy_nodes(now):
    return [node(n, z, True, heartbeat=now - timedelta(seconds=20)) for n, z in NODES]


# ---------------------------------------------------------------- scenarios

NOW = datetime(2026, 3, 11, 14, 32, 0, tzinfo=timezone.utc)
M = lambda n: timedelta(minutes=n)  # noqa: E731
H = lambda n: timedelta(hours=n)  # noqa: E731
N1, N2, N3 = (n for n, _ in NODES)


def series_6h(labels, fn, until=NOW, step=120):
    return [(labels, curve(NOW - H(6), until, step, fn))]


def prom_range(body, query=None):
    return rec("prometheus", "/api/v1/query_range", body, query={"query": query} if query else None)


def gh_deploy(i, sha, ref, desc, who, at):
    return {"url": f"https://api.github.com/repos/example-shop/checkout-api/deployments/{i}", "id": i,
            "sha": sha, "ref": ref, "task": "deploy", "environment": "production", "description": desc,
            "creator": {"login": who, "type": "User"}, "created_at": ts(at), "updated_at": ts(at + M(1))}


def gh_pull(n, title, who, merged, sha):
    return {"url": f"https://api.github.com/repos/example-shop/checkout-api/pulls/{n}", "number": n,
            "state": "closed", "title": title, "user": {"login": who},
            "html_url": f"https://github.com/example-shop/checkout-api/pull/{n}",
            "created_at": ts(merged - H(20)), "updated_at": ts(merged), "closed_at": ts(merged),
            "merged_at": ts(merged), "merge_commit_sha": sha, "base": {"ref": "main"}}


def checkout_bad_deploy():
    ns, app = "shop", "checkout-api"
    new_rs, old_rs, older_rs = "checkout-api-5f7b8c9d4e", "checkout-api-84c6d7f9b2", "checkout-api-6b9d4f8c71"
    img_new = "registry.example.com/shop/checkout-api:v2.8.0"
    img_old = "registry.example.com/shop/checkout-api:v2.7.3"
    deployed = NOW - M(23) - timedelta(seconds=30)  # 14:08:30
    limits = {"cpu": "1", "memory": "768Mi"}
    requests = {"cpu": "250m", "memory": "384Mi"}

    def pods_of(rs, img, names, created):
        return [pod(f"{rs}-{sfx}", ns, app, nodes, img, created + timedelta(seconds=12 * i), "ReplicaSet", rs,
                    limits=limits, requests=requests, started=created + timedelta(seconds=12 * i + 9),
                    pod_ip=f"10.20.{i + 1}.{40 + i}")
                for i, (sfx, nodes) in enumerate(zip(names, (N1, N2, N3)))]

    pods = pods_of(new_rs, img_new, ("x2k9q", "m7p4d", "t8v3n"), deployed)
    events = [
        event(ns, "Deployment", app, "ScalingReplicaSet", f"Scaled up replica set {new_rs} from 0 to 1", deployed,
              component="deployment-controller"),
        event(ns, "Deployment", app, "ScalingReplicaSet", f"Scaled down replica set {old_rs} from 3 to 0",
              deployed + timedelta(seconds=50), component="deployment-controller"),
    ] + [event(ns, "Pod", p["metadata"]["name"], "Started", f"Started container {app}",
               deployed + timedelta(seconds=10 + 12 * i)) for i, p in enumerate(pods)]
    dep = deployment(app, ns, img_new, 14, 3, 3, 3, deployed, cpu="1", mem="768Mi")
    rsets = [
        replicaset(new_rs, ns, app, img_new, 14, 3, 3, deployed, cpu="1", mem="768Mi"),
        replicaset(old_rs, ns, app, img_old, 13, 0, 0, NOW - timedelta(days=3, hours=2), cpu="1", mem="768Mi"),
        replicaset(older_rs, ns, app, "registry.example.com/shop/checkout-api:v2.7.2", 12, 0, 0,
                   NOW - timedelta(days=9), cpu="1", mem="768Mi"),
    ]
    expr = ('sum(rate(http_requests_total{namespace="shop",service="checkout-api",code=~"5.."}[5m])) / '
            'sum(rate(http_requests_total{namespace="shop",service="checkout-api"}[5m])) > 0.05')
    base = expr.rsplit(" > ", 1)[0]

    def err_ratio(t, fixed_at=None):
        wobble = 0.0015 * ((int(t.timestamp()) // 120) % 3)
        if fixed_at and t >= fixed_at + M(2):
            return 0.002 + wobble
        if t >= deployed + M(1):
            return 0.17 + 0.03 * ((int(t.timestamp()) // 120) % 4) / 3
        return 0.002 + wobble

    labels = {"namespace": ns, "service": app}
    recs = k8s_world(ns, pods, events, [dep], rsets, healthy_nodes(NOW))
    recs.append(prom_range(matrix(series_6h(labels, err_ratio))))
    recs.append(rec("prometheus", "/api/v1/rules", rules("checkout-slo", [
        ("HighErrorRate", expr, 300, "critical", "checkout-api 5xx ratio above 5%", "firing"),
        ("CheckoutLatencyHigh", 'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{service="checkout-api"}[5m]))) > 1.2',
         600, "warning", "checkout-api p99 above 1.2s", "inactive")])))
    recs.append(rec("prometheus", "/api/v1/alerts", prom_alerts([
        ({"alertname": "HighErrorRate", "namespace": ns, "service": app, "severity": "critical"},
         {"summary": "checkout-api 5xx ratio above 5%"}, "firing", deployed + M(1), "1.87e-01")])))
    lines = []
    for i in range(40):
        t = deployed + M(1) + timedelta(seconds=31 * i)
        p = pods[i % 3]["metadata"]["name"]
        lines.append(({"namespace": ns, "app": app, "pod": p, "level": "error"}, t,
                      f'level=error ts={ts(t)} caller=middleware/recover.go:41 msg="panic recovered" method=POST '
                      f'path=/api/v1/checkout status=500 err="runtime error: invalid memory address or nil pointer dereference" '
                      f'func=pricing.(*Engine).ApplyPromotion trace_id={h(i) % 16 ** 16:016x}'))
    for i in range(12):
        t = deployed - M(40) + timedelta(seconds=190 * i)
        lines.append(({"namespace": ns, "app": app, "pod": f"{old_rs}-q4w7e", "level": "info"}, t,
                      f'level=info ts={ts(t)} caller=http/server.go:88 msg="request served" method=POST '
                      f'path=/api/v1/checkout status=200 duration_ms={38 + i % 7}'))
    by_stream = {}
    for lab, t, line in lines:
        by_stream.setdefault(json.dumps(lab, sort_keys=True), []).append((t, line))
    recs.append(rec("loki", "/loki/api/v1/query_range",
                    streams([(json.loads(k), v) for k, v in by_stream.items()])))
    repo = "example-shop/checkout-api"
    recs.append(rec("github", f"/repos/{repo}/deployments", [
        gh_deploy(88412, "3f9c2e17b0a54d8e9c61f2a7d4b8e0c5a1f3d692", "v2.8.0", "Deploy v2.8.0 to production",
                  "dkowalski", deployed - timedelta(seconds=38)),
        gh_deploy(88107, "b7d1e04c9a2f6e3d8c5b1a0f9e7d6c4b3a2f1e0d", "v2.7.3", "Deploy v2.7.3 to production",
                  "apatel", NOW - timedelta(days=3, hours=2)),
    ]))
    recs.append(rec("github", f"/repos/{repo}/pulls", [
        gh_pull(482, "Apply promotions per line item instead of per order", "dkowalski", NOW - M(111),
                "3f9c2e17b0a54d8e9c61f2a7d4b8e0c5a1f3d692"),
        gh_pull(479, "Bump OpenTelemetry SDK to 1.31", "apatel", NOW - timedelta(days=1, hours=4),
                "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b"),
    ]))

    # After `kubectl rollout undo`: revision 15 runs the v2.7.3 template again.
    fixed = NOW + M(1)
    dep_after = deployment(app, ns, img_old, 15, 3, 3, 3, fixed, cpu="1", mem="768Mi")
    rs_after = [
        replicaset(old_rs, ns, app, img_old, 15, 3, 3, NOW - timedelta(days=3, hours=2), cpu="1", mem="768Mi"),
        replicaset(new_rs, ns, app, img_new, 14, 0, 0, deployed, cpu="1", mem="768Mi"),
        rsets[2],
    ]
    pods_after = pods_of(old_rs, img_old, ("b6n2r", "h9c5w", "z3f8k"), fixed)
    after = k8s_world(ns, pods_after, events + [
        event(ns, "Deployment", app, "DeploymentRollback", "Rolled back deployment \"checkout-api\" to revision 13",
              fixed, component="deployment-controller"),
        event(ns, "Deployment", app, "ScalingReplicaSet", f"Scaled up replica set {old_rs} from 0 to 3", fixed,
              component="deployment-controller")], [dep_after], rs_after, healthy_nodes(NOW))
    # The PATCH answers with the rolled-back object, as the API server does.
    recs.append(rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/deployments/{app}", dep_after, method="PATCH"))
    after.append(prom_range(matrix(series_6h(labels, lambda t: err_ratio(t, fixed), until=NOW + M(15)))))
    write_case(
        "checkout-bad-deploy",
        meta={"title": "checkout-api 5xx after the v2.8.0 deploy", "now": ts(NOW), "difficulty": 2,
              "source": "sitrep built-in demo"},
        alert=alert_payload("HighErrorRate",
                            {"severity": "critical", "namespace": ns, "service": app, "deployment": app,
                             "repo": repo, "team": "checkout"},
                            {"summary": "checkout-api 5xx error rate is 18.7% (threshold 5%)",
                             "description": "More than 5% of checkout requests fail with a 5xx status.",
                             "runbook_url": "https://runbooks.example.com/checkout/high-error-rate"},
                            deployed + M(6), expr),
        recordings=recs,
        expect={"category": "code_defect",
                "required_keywords": ["checkout-api", "revision 14"],
                "forbidden_keywords": [],
                "forbidden_categories": ["healthy", "unknown", "infrastructure"],
                "required_evidence": ["metrics", "logs", "changes", "kubernetes/pods"],
                "ruling_out_keywords": []},
        effects=[{"action": "kubernetes.rollout_undo", "target": f"deployment/{app}", "file": "after-rollback.ndjson",
                  "recordings": after}],
    )



def group_streams(lines):
    by_stream = {}
    for lab, t, line in lines:
        by_stream.setdefault(json.dumps(lab, sort_keys=True), []).append((t, line))
    return streams([(json.loads(k), v) for k, v in by_stream.items()])


def search_cpu_saturation():
    ns, app = "search", "search-api"
    rs = "search-api-7b5d9c8f64"
    img = "registry.example.com/search/search-api:v5.4.1"
    since = NOW - timedelta(days=9, hours=3)
    limits = {"cpu": "1", "memory": "2Gi"}
    requests = {"cpu": "750m", "memory": "1536Mi"}

    def pods_n(n, created):
        return [pod(f"{rs}-{sfx}", ns, app, NODES[i % 3][0], img, created, "ReplicaSet", rs, limits=limits,
                    requests=requests, started=created + timedelta(seconds=20), pod_ip=f"10.20.{i % 3 + 1}.{70 + i}")
                for i, sfx in enumerate(("c4j8m", "p2x6t", "w9k3r", "d5n7q", "g8h2v", "s3b6z")[:n])]

    pods = pods_n(3, since)
    dep = deployment(app, ns, img, 31, 3, 3, 3, since, cpu="1", mem="2Gi", cpu_req="750m", mem_req="1536Mi")
    rsets = [replicaset(rs, ns, app, img, 31, 3, 3, since, cpu="1", mem="2Gi")]
    events = []
    expr = ('sum(rate(container_cpu_cfs_throttled_periods_total{namespace="search",container="search-api"}[5m])) / '
            'sum(rate(container_cpu_cfs_periods_total{namespace="search",container="search-api"}[5m])) > 0.25')
    ramp = NOW - M(45)

    def throttle(t, fixed_at=None):
        if fixed_at and t >= fixed_at + M(3):
            return 0.07 + 0.01 * ((int(t.timestamp()) // 120) % 3)
        if t < ramp:
            return 0.04 + 0.01 * ((int(t.timestamp()) // 120) % 3)
        return min(0.62, 0.05 + (t - ramp).total_seconds() / 60 * 0.02)

    def rps(t, fixed_at=None):
        base = 410 + 15 * ((int(t.timestamp()) // 120) % 4)
        return base if t < ramp else base + min(560, (t - ramp).total_seconds() / 60 * 19)

    labels = {"namespace": ns, "container": app}
    recs = k8s_world(ns, pods, events, [dep], rsets, healthy_nodes(NOW))
    recs.append(prom_range(matrix(series_6h(labels, throttle))))
    recs.append(prom_range(matrix(series_6h({"namespace": ns, "service": app}, rps)),
                           'sum(rate(http_requests_total{namespace="search",service="search-api"}[5m]))'))
    recs.append(rec("prometheus", "/api/v1/rules", rules("search-capacity", [
        ("CPUThrottlingHigh", expr, 900, "warning", "search-api containers are CPU throttled", "firing")])))
    recs.append(rec("prometheus", "/api/v1/alerts", prom_alerts([
        ({"alertname": "CPUThrottlingHigh", "namespace": ns, "container": app, "severity": "warning"},
         {"summary": "search-api containers are CPU throttled"}, "firing", NOW - M(22), "5.1e-01")])))
    lines = []
    for i in range(30):
        t = ramp + M(10) + timedelta(seconds=65 * i)
        p = pods[i % 3]["metadata"]["name"]
        lines.append(({"namespace": ns, "app": app, "pod": p, "level": "warn"}, t,
                      f'{ts(t)} WARN  [query-exec] slow search: q_len={12 + i % 9} shards=8 took={1.9 + (i % 5) * 0.3:.1f}s '
                      f'queue_depth={120 + 3 * i} cpu_throttled=true'))
    recs.append(rec("loki", "/loki/api/v1/query_range", group_streams(lines)))
    recs.append(rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/deployments/{app}",
                    deployment(app, ns, img, 31, 6, 3, 6, since, cpu="1", mem="2Gi", cpu_req="750m", mem_req="1536Mi"),
                    method="PATCH"))

    fixed = NOW + M(1)
    after = k8s_world(ns, pods_n(3, since) + pods_n(6, fixed)[3:], events,
                      [deployment(app, ns, img, 31, 6, 6, 6, since, cpu="1", mem="2Gi", cpu_req="750m", mem_req="1536Mi")],
                      [replicaset(rs, ns, app, img, 31, 6, 6, since, cpu="1", mem="2Gi")], healthy_nodes(NOW))
    after.append(prom_range(matrix(series_6h(labels, lambda t: throttle(t, fixed), until=NOW + M(15)))))
    write_case(
        "search-cpu-saturation",
        meta={"title": "search-api CPU throttled under a traffic surge", "now": ts(NOW), "difficulty": 2,
              "source": "sitrep built-in demo"},
        alert=alert_payload("CPUThrottlingHigh",
                            {"severity": "warning", "namespace": ns, "container": app, "deployment": app},
                            {"summary": "search-api is CPU throttled in 51% of periods",
                             "description": "Containers of search-api hit their CPU limit; latency rises with throttling."},
                            NOW - M(22), expr),
        recordings=recs,
        expect={"category": "resource_exhaustion", "required_keywords": ["search-api", "throttl"],
                "forbidden_keywords": [], "forbidden_categories": ["healthy", "code_defect"],
                "required_evidence": ["metrics", "kubernetes/pods"], "ruling_out_keywords": []},
        effects=[{"action": "kubernetes.scale", "target": f"deployment/{app}", "file": "after-scale.ndjson",
                  "recordings": after}],
    )


def payments_dependency():
    ns = "payments"
    api, dep_name = "payments-api", "fraud-check"
    api_rs, fc_rs = "payments-api-6c8b7d5f9a", "fraud-check-58d7c9b6f4"
    img_api = "registry.example.com/payments/payments-api:v4.2.0"
    img_fc = "registry.example.com/payments/fraud-check:v1.19.2"
    since = NOW - timedelta(days=4, hours=6)
    onset = NOW - M(27)
    api_pods = [pod(f"{api_rs}-{sfx}", ns, api, NODES[i][0], img_api, since, "ReplicaSet", api_rs,
                    limits={"cpu": "1", "memory": "1Gi"}, requests={"cpu": "500m", "memory": "512Mi"},
                    pod_ip=f"10.20.{i + 1}.{20 + i}")
                for i, sfx in enumerate(("k7d2f", "r4m9x", "v6q3b"))]
    fc_pods = [pod(f"{fc_rs}-{sfx}", ns, dep_name, NODES[i][0], img_fc, since - H(20), "ReplicaSet", fc_rs,
                   ready=False, limits={"cpu": "500m", "memory": "768Mi"}, requests={"cpu": "250m", "memory": "512Mi"},
                   started=since - H(20), ready_reason=("ContainersNotReady", f"containers with unready status: [{dep_name}]"),
                   pod_ip=f"10.20.{i + 1}.{90 + i}")
               for i, sfx in enumerate(("n2w8c", "j5t7h"))]
    for p in fc_pods:
        for c in p["status"]["conditions"]:
            if c["type"] in ("Ready", "ContainersReady"):
                c["lastTransitionTime"] = ts(onset)
    events = [event(ns, "Pod", p["metadata"]["name"], "Unhealthy",
                    "Readiness probe failed: HTTP probe failed with statuscode: 503", onset, NOW - timedelta(seconds=20),
                    count=318, type_="Warning") for p in fc_pods]
    deps = [deployment(api, ns, img_api, 22, 3, 3, 3, since, cpu="1", mem="1Gi"),
            deployment(dep_name, ns, img_fc, 9, 2, 0, 2, since - H(20), available=False, cpu="500m", mem="768Mi")]
    rsets = [replicaset(api_rs, ns, api, img_api, 22, 3, 3, since, cpu="1", mem="1Gi"),
             replicaset(fc_rs, ns, dep_name, img_fc, 9, 2, 0, since - H(20), cpu="500m", mem="768Mi")]
    logs = {}
    for p in fc_pods:
        text = "".join(
            f'{ts(onset - M(3) + timedelta(seconds=60 * i))} level=warn msg="worker pool exhausted" busy=64/64 '
            f'oldest_job_age={600 + 60 * i}s queue={900 + 40 * i}\n'
            for i in range(6)) + "".join(
            f'{ts(onset + timedelta(seconds=30 * i))} level=warn msg="readiness: not accepting work" reason="worker pool exhausted"\n'
            for i in range(20))
        logs[(p["metadata"]["name"], False)] = text
    expr = 'sum(rate(upstream_request_errors_total{namespace="payments",service="payments-api",upstream="fraud-check"}[5m])) > 1'

    def errs(t, fixed_at=None):
        if fixed_at and t >= fixed_at + M(2):
            return 0.0
        return 0.0 if t < onset else 11.5 + ((int(t.timestamp()) // 120) % 4)

    labels = {"namespace": ns, "service": api, "upstream": dep_name}
    recs = k8s_world(ns, api_pods + fc_pods, events, deps, rsets, healthy_nodes(NOW), logs)
    recs.append(prom_range(matrix(series_6h(labels, errs))))
    recs.append(rec("prometheus", "/api/v1/rules", rules("payments-upstreams", [
        ("UpstreamErrors", expr, 300, "critical", "payments-api calls to an upstream fail", "firing")])))
    recs.append(rec("prometheus", "/api/v1/alerts", prom_alerts([
        ({"alertname": "UpstreamErrors", "namespace": ns, "service": api, "upstream": dep_name, "severity": "critical"},
         {"summary": "payments-api calls to fraud-check fail"}, "firing", onset + M(1), "1.3e+01")])))
    lines = []
    for i in range(36):
        t = onset + timedelta(seconds=40 * i)
        p = api_pods[i % 3]["metadata"]["name"]
        lines.append(({"namespace": ns, "app": api, "pod": p, "level": "error"}, t,
                      f'level=error ts={ts(t)} msg="fraud check failed, applying fallback policy" upstream=fraud-check '
                      f'err="dial tcp 10.100.71.12:8443: connect: connection refused" order_id=ord_{h(i) % 10 ** 9:09d}'))
    recs.append(rec("loki", "/loki/api/v1/query_range", group_streams(lines)))
    fixed = NOW + M(1)
    restarted = deployment(dep_name, ns, img_fc, 10, 2, 2, 2, fixed, cpu="500m", mem="768Mi",
                           restarted_at=ts(NOW))
    recs.append(rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/deployments/{dep_name}", restarted, method="PATCH"))
    new_rs = "fraud-check-7f6e5d4c3b"
    fc_after = [pod(f"{new_rs}-{sfx}", ns, dep_name, NODES[i][0], img_fc, fixed, "ReplicaSet", new_rs,
                    limits={"cpu": "500m", "memory": "768Mi"}, requests={"cpu": "250m", "memory": "512Mi"},
                    started=fixed + timedelta(seconds=8), pod_ip=f"10.20.{i + 1}.{110 + i}")
                for i, sfx in enumerate(("b3x9k", "q8m2l"))]
    after = k8s_world(ns, api_pods + fc_after, events,
                      [deps[0], restarted],
                      [rsets[0], replicaset(new_rs, ns, dep_name, img_fc, 10, 2, 2, fixed, cpu="500m", mem="768Mi"),
                       replicaset(fc_rs, ns, dep_name, img_fc, 9, 0, 0, since - H(20), cpu="500m", mem="768Mi")],
                      healthy_nodes(NOW))
    after.append(prom_range(matrix(series_6h(labels, lambda t: errs(t, fixed), until=NOW + M(15)))))
    write_case(
        "payments-fraud-check-down",
        meta={"title": "payments-api failing: its fraud-check dependency refuses connections", "now": ts(NOW),
              "difficulty": 3, "source": "sitrep built-in demo"},
        alert=alert_payload("UpstreamErrors",
                            {"severity": "critical", "namespace": ns, "service": api, "deployment": api,
                             "upstream": dep_name},
                            {"summary": "payments-api: 13 failed calls/s to fraud-check",
                             "description": "Calls from payments-api to the fraud-check service are failing; payments fall back to manual review."},
                            onset + M(2), expr),
        recordings=recs,
        expect={"category": "dependency_failure", "required_keywords": ["fraud-check", "connection refused"],
                "forbidden_keywords": [], "forbidden_categories": ["healthy", "code_defect"],
                "required_evidence": ["logs", "metrics", "kubernetes/pods"], "ruling_out_keywords": []},
        effects=[{"action": "kubernetes.rollout_restart", "target": f"deployment/{dep_name}",
                  "file": "after-restart.ndjson", "recordings": after}],
    )


def orders_db_node_lost():
    ns = "orders"
    lost, lost_zone = NODES[2]
    down = NOW - M(26)
    evicted = down + timedelta(seconds=300)
    api, api_rs = "orders-api", "orders-api-7d5c9b6f48"
    img_api = "registry.example.com/orders/orders-api:v7.0.3"
    img_db = "registry.example.com/platform/postgres:16.4-r2"
    since = NOW - timedelta(days=12)
    db_pod = pod("orders-db-0", ns, "orders-db", lost, img_db, since, "StatefulSet", "orders-db", container="postgres",
                 limits={"cpu": "2", "memory": "4Gi"}, requests={"cpu": "1", "memory": "4Gi"}, deleting=evicted,
                 cond_status="False", pod_ip="10.20.3.15", extra_labels={"statefulset.kubernetes.io/pod-name": "orders-db-0"})
    db_pod["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    for c in db_pod["status"]["conditions"]:
        if c["type"] == "Ready":
            c["lastTransitionTime"] = ts(down + timedelta(seconds=40))
    stale_api = pod(f"{api_rs}-qk2lp", ns, api, lost, img_api, since, "ReplicaSet", api_rs, deleting=evicted,
                    cond_status="False", pod_ip="10.20.3.22")
    api_pods = [pod(f"{api_rs}-{sfx}", ns, api, NODES[i][0], img_api, since, "ReplicaSet", api_rs, pod_ip=f"10.20.{i + 1}.{30 + i}")
                for i, sfx in enumerate(("f6g1s", "m3c8y"))]
    replacement = pod(f"{api_rs}-w8xzt", ns, api, NODES[0][0], img_api, evicted + timedelta(seconds=2), "ReplicaSet", api_rs,
                      pod_ip="10.20.1.36")
    pods = [db_pod, stale_api] + api_pods + [replacement]
    events = [
        event(ns, "Pod", "orders-db-0", "NodeNotReady", "Node is not ready", down + timedelta(seconds=40),
              type_="Warning", component="node-controller"),
        event(ns, "Pod", stale_api["metadata"]["name"], "NodeNotReady", "Node is not ready", down + timedelta(seconds=40),
              type_="Warning", component="node-controller"),
        event(ns, "Pod", "orders-db-0", "TaintManagerEviction", "Marking for deletion Pod orders/orders-db-0", evicted,
              component="taint-eviction-controller"),
        event(ns, "Pod", stale_api["metadata"]["name"], "TaintManagerEviction",
              f"Marking for deletion Pod orders/{stale_api['metadata']['name']}", evicted, component="taint-eviction-controller"),
        event(ns, "ReplicaSet", api_rs, "SuccessfulCreate", f"Created pod: {replacement['metadata']['name']}",
              evicted + timedelta(seconds=2), component="replicaset-controller"),
    ]
    nodes = [node(n, z, True, heartbeat=NOW - timedelta(seconds=15)) for n, z in NODES[:2]] + [
        node(lost, lost_zone, False, since=down + timedelta(seconds=40), heartbeat=down,
             taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": ts(down + timedelta(seconds=40))},
                     {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": ts(down + timedelta(seconds=45))}])]
    deps = [deployment(api, ns, img_api, 6, 3, 3, 3, since)]
    rsets = [replicaset(api_rs, ns, api, img_api, 6, 3, 3, since)]
    expr = 'kube_statefulset_status_replicas_ready{namespace="orders",statefulset="orders-db"} < 1'

    def ready(t, fixed_at=None):
        if fixed_at and t >= fixed_at + M(2):
            return 1.0
        return 1.0 if t < down + timedelta(seconds=40) else 0.0

    labels = {"namespace": ns, "statefulset": "orders-db"}
    pg_log = "".join(
        f"{ts(down - M(9) + timedelta(seconds=60 * i))} LOG:  checkpoint complete: wrote {180 + 7 * i} buffers "
        f"({1.1 + 0.1 * (i % 3):.1f}%); 0 WAL file(s) added, 0 removed, 1 recycled\n" for i in range(8))
    sts = {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "orders-db", "namespace": ns, "uid": "5b8e41d2-0d1c-4b7e-9a57-3f0c1e2d4a61",
                     "generation": 3, "creationTimestamp": ts(NOW - timedelta(days=90)),
                     "labels": {"app": "orders-db"}},
        "spec": {"replicas": 1, "serviceName": "orders-db",
                 "selector": {"matchLabels": {"app": "orders-db"}},
                 "template": {"metadata": {"labels": {"app": "orders-db"}},
                              "spec": {"containers": [{"name": "postgres", "image": img_db}]}}},
        "status": {"observedGeneration": 3, "replicas": 1, "readyReplicas": 0, "currentReplicas": 1,
                   "updatedReplicas": 1, "availableReplicas": 0,
                   "currentRevision": "orders-db-6b9f7c5d48", "updateRevision": "orders-db-6b9f7c5d48"},
    }
    # The StatefulSet's one revision: its template as the controller stores it (a patch that
    # replaces the whole template), unchanged for twelve days.
    revision = {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "orders-db-6b9f7c5d48", "namespace": ns, "uid": "9c41e7a0-5d2b-4f8e-b1a6-2e7d0c3f9b15",
                     "creationTimestamp": ts(since), "labels": {"app": "orders-db", "controller.kubernetes.io/hash": "6b9f7c5d48"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "orders-db",
                                          "uid": sts["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "revision": 3,
        "data": {"spec": {"template": {"$patch": "replace", **sts["spec"]["template"]}}},
    }
    recs = k8s_world(ns, pods, events, deps, rsets, nodes, {("orders-db-0", False): pg_log}, statefulsets=[sts],
                     revisions=[revision])
    recs.append(prom_range(matrix(series_6h(labels, ready))))
    recs.append(rec("prometheus", "/api/v1/rules", rules("kubernetes-apps", [
        ("KubeStatefulSetReplicasMismatch", expr, 300, "critical", "StatefulSet has not matched the expected number of replicas", "firing"),
        ("KubeNodeNotReady", 'kube_node_status_condition{condition="Ready",status="true"} == 0', 900, "warning",
         "A node is not ready", "firing")])))
    recs.append(rec("prometheus", "/api/v1/alerts", prom_alerts([
        ({"alertname": "KubeStatefulSetReplicasMismatch", "namespace": ns, "statefulset": "orders-db", "severity": "critical"},
         {"summary": "orders/orders-db has 0 of 1 replicas ready"}, "firing", down + M(2), "0e+00"),
        ({"alertname": "KubeNodeNotReady", "node": lost, "severity": "warning"},
         {"summary": f"{lost} is not ready"}, "firing", down + M(1), "0e+00")])))
    deleted = json.loads(json.dumps(db_pod))
    deleted["metadata"]["deletionGracePeriodSeconds"] = 0
    recs.append(rec("kubernetes", f"/api/v1/namespaces/{ns}/pods/orders-db-0", deleted, method="DELETE"))
    fixed = NOW + M(1)
    new_db = pod("orders-db-0", ns, "orders-db", NODES[1][0], img_db, fixed, "StatefulSet", "orders-db", container="postgres",
                 limits={"cpu": "2", "memory": "4Gi"}, requests={"cpu": "1", "memory": "4Gi"}, started=fixed + timedelta(seconds=35),
                 pod_ip="10.20.2.51", extra_labels={"statefulset.kubernetes.io/pod-name": "orders-db-0"})
    new_db["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    after = k8s_world(ns, [new_db, stale_api] + api_pods + [replacement], events + [
        event(ns, "Pod", "orders-db-0", "SuccessfulAttachVolume",
              'AttachVolume.Attach succeeded for volume "pvc-5b8e41d2-orders-db-data-0"', fixed + timedelta(seconds=20),
              component="attachdetach-controller")], deps, rsets, nodes)
    after.append(prom_range(matrix(series_6h(labels, lambda t: ready(t, fixed), until=NOW + M(15)))))
    write_case(
        "orders-db-node-lost",
        meta={"title": "orders-db down: its node stopped reporting and the pod is stuck terminating", "now": ts(NOW),
              "difficulty": 3, "source": "sitrep built-in demo"},
        alert=alert_payload("KubeStatefulSetReplicasMismatch",
                            {"severity": "critical", "namespace": ns, "statefulset": "orders-db"},
                            {"summary": "orders/orders-db has 0 of 1 replicas ready",
                             "description": "StatefulSet orders/orders-db has not matched the expected number of replicas for longer than 5 minutes."},
                            down + M(7), expr),
        recordings=recs,
        expect={"category": "infrastructure", "required_keywords": ["ip-10-20-3-41", "orders-db-0"],
                "forbidden_keywords": [], "forbidden_categories": ["healthy", "code_defect"],
                "required_evidence": ["kubernetes/nodes", "kubernetes/pods"], "ruling_out_keywords": []},
        effects=[{"action": "kubernetes.delete_pod", "target": "pod/orders-db-0", "file": "after-delete.ndjson",
                  "recordings": after}],
    )


def billing_false_alarm():
    ns, app = "billing", "billing-api"
    rs = "billing-api-59f8d7c6b5"
    img = "registry.example.com/billing/billing-api:v3.3.8"
    since = NOW - timedelta(days=10, hours=5)
    pods = [pod(f"{rs}-{sfx}", ns, app, NODES[i][0], img, since, "ReplicaSet", rs,
                limits={"cpu": "1", "memory": "1Gi"}, requests={"cpu": "300m", "memory": "512Mi"}, pod_ip=f"10.20.{i + 1}.{60 + i}")
            for i, sfx in enumerate(("a1s2d", "f3g4h", "j5k6l"))]
    dep = deployment(app, ns, img, 17, 3, 3, 3, since)
    rsets = [replicaset(rs, ns, app, img, 17, 3, 3, since)]
    blip = NOW - M(31)
    expr = ('sum(rate(http_requests_total{namespace="billing",service="billing-api",code=~"5.."}[5m])) / '
            'sum(rate(http_requests_total{namespace="billing",service="billing-api"}[5m])) > 0.05')

    def ratio(t):
        if blip <= t < blip + M(6):
            return 0.071 + 0.01 * ((int(t.timestamp()) // 120) % 2)
        return 0.003 + 0.001 * ((int(t.timestamp()) // 120) % 3)

    labels = {"namespace": ns, "service": app}
    recs = k8s_world(ns, pods, [], [dep], rsets, healthy_nodes(NOW))
    recs.append(prom_range(matrix(series_6h(labels, ratio))))
    recs.append(rec("prometheus", "/api/v1/rules", rules("billing-slo", [
        ("HighErrorRate", expr, 120, "warning", "billing-api 5xx ratio above 5%", "inactive")])))
    recs.append(rec("prometheus", "/api/v1/alerts", prom_alerts([])))
    lines = []
    for i in range(24):
        t = blip - M(20) + timedelta(seconds=120 * i)
        p = pods[i % 3]["metadata"]["name"]
        lines.append(({"namespace": ns, "app": app, "pod": p, "level": "info"}, t,
                      f'level=info ts={ts(t)} msg="invoice batch progress" batch=nightly-2026-03-11 done={400 * i} of=9600'))
    recs.append(rec("loki", "/loki/api/v1/query_range", group_streams(lines)))
    recs.append(rec("alertmanager", "/api/v2/silences", {"silenceID": "4f1c7a2e-9b3d-4e58-a6f0-2d7c8b1e5a93"},
                    method="POST"))
    write_case(
        "billing-false-alarm",
        meta={"title": "billing-api error-rate blip that cleared on its own", "now": ts(NOW), "difficulty": 2,
              "source": "sitrep built-in demo"},
        alert=alert_payload("HighErrorRate",
                            {"severity": "warning", "namespace": ns, "service": app, "deployment": app},
                            {"summary": "billing-api 5xx ratio above 5%",
                             "description": "billing-api returned more than 5% 5xx responses for 2 minutes."},
                            blip + M(3), expr),
        recordings=recs,
        expect={"category": "healthy", "required_keywords": ["billing-api", "recovered"],
                "forbidden_keywords": [], "forbidden_categories": ["code_defect", "dependency_failure",
                                                                   "resource_exhaustion", "infrastructure"],
                "required_evidence": ["metrics", "kubernetes/pods"], "ruling_out_keywords": []},
    )


def catalog_image_pull():
    ns, app = "catalog", "catalog-web"
    old_rs, new_rs = "catalog-web-5d4c3b2a19", "catalog-web-9c8d7b6f5a"
    img_old = "registry.example.com/catalog/catalog-web:v3.11.4"
    img_new = "registry.example.com/catalog/catalog-web:v3.12.0"
    since = NOW - timedelta(days=6)
    rolled = NOW - M(19)
    old_pods = [pod(f"{old_rs}-{sfx}", ns, app, NODES[i][0], img_old, since, "ReplicaSet", old_rs,
                    limits={"cpu": "500m", "memory": "512Mi"}, requests={"cpu": "200m", "memory": "256Mi"}, pod_ip=f"10.20.{i + 1}.{80 + i}")
                for i, sfx in enumerate(("r7t2y", "u8i3o", "p9a4s"))]
    msg = (f'Back-off pulling image "{img_new}"')
    new_pod = pod(f"{new_rs}-z6x1c", ns, app, NODES[1][0], img_new, rolled + timedelta(seconds=3), "ReplicaSet", new_rs,
                  ready=False, state={"waiting": {"reason": "ImagePullBackOff", "message": msg}},
                  limits={"cpu": "500m", "memory": "512Mi"}, requests={"cpu": "200m", "memory": "256Mi"},
                  phase="Pending", ready_reason=("ContainersNotReady", f"containers with unready status: [{app}]"),
                  pod_ip="10.20.2.97")
    pods = old_pods + [new_pod]
    pname = new_pod["metadata"]["name"]
    not_found = (f'Failed to pull image "{img_new}": rpc error: code = NotFound desc = failed to pull and unpack image '
                 f'"{img_new}": failed to resolve reference "{img_new}": {img_new}: not found')
    events = [
        event(ns, "Deployment", app, "ScalingReplicaSet", f"Scaled up replica set {new_rs} from 0 to 1", rolled,
              component="deployment-controller"),
        event(ns, "Pod", pname, "Pulling", f'Pulling image "{img_new}"', rolled + timedelta(seconds=4), NOW - M(2), count=8),
        event(ns, "Pod", pname, "Failed", not_found, rolled + timedelta(seconds=5), NOW - M(2), count=8, type_="Warning"),
        event(ns, "Pod", pname, "Failed", "Error: ErrImagePull", rolled + timedelta(seconds=5), NOW - M(2), count=8,
              type_="Warning"),
        event(ns, "Pod", pname, "BackOff", msg, rolled + timedelta(seconds=20), NOW - timedelta(seconds=40), count=74),
        event(ns, "Pod", pname, "Failed", "Error: ImagePullBackOff", rolled + timedelta(seconds=20),
              NOW - timedelta(seconds=40), count=74, type_="Warning"),
    ]
    stuck = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
             "message": f'ReplicaSet "{new_rs}" has timed out progressing.',
             "lastUpdateTime": ts(rolled + M(10)), "lastTransitionTime": ts(rolled + M(10))}
    dep = deployment(app, ns, img_new, 8, 3, 3, 1, rolled, progressing=stuck)
    rsets = [replicaset(new_rs, ns, app, img_new, 8, 1, 0, rolled), replicaset(old_rs, ns, app, img_old, 7, 3, 3, since)]
    logs = {(pname, False): None}
    expr = ('kube_deployment_status_condition{namespace="catalog",deployment="catalog-web",'
            'condition="Progressing",status="false"} == 1')

    def cond(t, fixed_at=None):
        if fixed_at and t >= fixed_at + M(1):
            return 0.0
        return 1.0 if t >= rolled + M(10) else 0.0

    labels = {"namespace": ns, "deployment": app, "condition": "Progressing", "status": "false"}
    recs = k8s_world(ns, pods, events, [dep], rsets, healthy_nodes(NOW))
    recs.append(rec("kubernetes", f"/api/v1/namespaces/{ns}/pods/{pname}/log", {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'container "{app}" in pod "{pname}" is waiting to start: trying and failing to pull image',
        "reason": "BadRequest", "code": 400}, status=400))
    del logs
    recs.append(prom_range(matrix(series_6h(labels, cond))))
    recs.append(rec("prometheus", "/api/v1/rules", rules("kubernetes-apps", [
        ("KubeDeploymentRolloutStuck", expr, 900, "warning", "Deployment rollout is not progressing", "firing")])))
    recs.append(rec("prometheus", "/api/v1/alerts", prom_alerts([
        ({"alertname": "KubeDeploymentRolloutStuck", "namespace": ns, "deployment": app, "severity": "warning"},
         {"summary": "catalog/catalog-web rollout is not progressing"}, "firing", rolled + M(10), "1e+00")])))
    fixed = NOW + M(1)
    dep_after = deployment(app, ns, img_old, 9, 3, 3, 3, fixed)
    recs.append(rec("kubernetes", f"/apis/apps/v1/namespaces/{ns}/deployments/{app}", dep_after, method="PATCH"))
    after = k8s_world(ns, old_pods, events + [
        event(ns, "Deployment", app, "ScalingReplicaSet", f"Scaled down replica set {new_rs} from 1 to 0", fixed,
              component="deployment-controller")], [dep_after],
        [replicaset(new_rs, ns, app, img_new, 8, 0, 0, rolled), replicaset(old_rs, ns, app, img_old, 9, 3, 3, since)],
        healthy_nodes(NOW))
    after.append(prom_range(matrix(series_6h(labels, lambda t: cond(t, fixed), until=NOW + M(15)))))
    write_case(
        "catalog-image-pull",
        meta={"title": "catalog-web rollout stuck: the new image tag does not exist", "now": ts(NOW), "difficulty": 1,
              "source": "sitrep built-in demo"},
        alert=alert_payload("KubeDeploymentRolloutStuck",
                            {"severity": "warning", "namespace": ns, "deployment": app},
                            {"summary": "catalog/catalog-web rollout is not progressing",
                             "description": "Rollout of deployment catalog/catalog-web has not progressed for more than 15 minutes."},
                            rolled + M(10), expr),
        recordings=recs,
        expect={"category": "configuration_error", "required_keywords": ["catalog-web", "v3.12.0"],
                "forbidden_keywords": [], "forbidden_categories": ["healthy", "code_defect"],
                "required_evidence": ["kubernetes/events", "kubernetes/pods"], "ruling_out_keywords": []},
        effects=[{"action": "kubernetes.rollout_undo", "target": f"deployment/{app}", "file": "after-rollback.ndjson",
                  "recordings": after}],
    )


# ---------------------------------------------------------------- the same world told by Datadog

DD_TAGS = {"namespace": "kube_namespace", "deployment": "kube_deployment", "container": "kube_container_name",
           "pod": "pod_name", "app": "service"}


def dd_tags(labels):
    return [f"{DD_TAGS.get(k, k)}:{v}" for k, v in labels.items() if k not in ("alertname", "severity", "level")]


def dd_recordings(recs, metric, repo_tags):
    """Prometheus' alert series as Datadog's, Loki's streams as Datadog log events, GitHub deployments
    as Datadog deploy events; Prometheus, Loki, Alertmanager and GitHub are gone."""
    out = []
    for r in recs:
        i = r["integration"]
        if i == "prometheus" and r["path"] == "/api/v1/query_range" and not r["query"]:
            series = [{"metric": metric, "display_name": metric, "tag_set": dd_tags(s["metric"]),
                       "scope": ",".join(dd_tags(s["metric"])),
                       "pointlist": [[t * 1000, float(v)] for t, v in s["values"]]}
                      for s in r["body"]["data"]["result"]]
            out.append(rec("datadog", "/api/v1/query", {"status": "ok", "res_type": "time_series", "series": series}))
        elif i == "loki":
            data = []
            for st in r["body"]["data"]["result"]:
                lab = st["stream"]
                for ns, line in st["values"]:
                    at = datetime.fromtimestamp(int(ns) / 1e9, tz=timezone.utc)
                    data.append({"id": f"AQAAAY{h(ns) % 16 ** 12:012x}", "type": "log", "attributes": {
                        "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "message": line,
                        "service": lab.get("app", ""), "status": lab.get("level", "info"),
                        "host": "", "tags": dd_tags(lab)}})
            out.append(rec("datadog", "/api/v2/logs/events/search", {"data": data, "meta": {"page": {}}},
                           method="POST"))
        elif i == "github" and r["path"].endswith("/deployments"):
            events = [{"id": d["id"], "title": d["description"], "text": f"{d['ref']} ({d['sha'][:7]}) by {d['creator']['login']}",
                       "date_happened": int(datetime.strptime(d["created_at"], "%Y-%m-%dT%H:%M:%SZ")
                                            .replace(tzinfo=timezone.utc).timestamp()),
                       "source_type_name": "github", "alert_type": "info", "priority": "normal",
                       "url": f"/event/event?id={d['id']}", "tags": repo_tags}
                      for d in r["body"]]
            out.append(rec("datadog", "/api/v1/events", {"events": events}))
        elif i in ("prometheus", "loki", "alertmanager", "github"):
            continue
        else:
            out.append(r)
    return out


def checkout_datadog():
    """checkout-bad-deploy paged from a Datadog monitor, read through Datadog and Kubernetes only."""
    src = os.path.join(HERE, "checkout-bad-deploy")
    ns, app = "shop", "checkout-api"
    scope = f"kube_namespace:{ns},service:{app}"
    query = (f"avg(last_5m):sum:trace.http.request.errors{{{scope}}}.as_rate() / "
             f"sum:trace.http.request.hits{{{scope}}}.as_rate() > 0.05")
    metric = "trace.http.request.errors"
    tags = [f"kube_namespace:{ns}", f"service:{app}", f"kube_deployment:{app}"]

    def load(name):
        with open(os.path.join(src, name)) as f:
            return [json.loads(line) for line in f if line.strip()]

    with open(os.path.join(src, "alert.json")) as f:
        am = json.load(f)["alerts"][0]
    recs = dd_recordings(load("recordings.ndjson"), metric, tags)
    recs.append(rec("datadog", "/api/v1/monitor/81234567", {
        "id": 81234567, "name": "Checkout 5xx ratio high", "type": "query alert", "query": query,
        "message": "checkout-api fails more than 5% of requests. @webhook-sitrep @slack-checkout",
        "tags": ["team:checkout", "env:prod"], "priority": 2, "overall_state": "Alert",
        "options": {"thresholds": {"critical": 0.05, "warning": 0.03}},
        "state": {"groups": {scope: {"status": "Alert", "last_triggered_ts": int(datetime.strptime(
            am["startsAt"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())}}}}))
    after = dd_recordings(load("after-rollback.ndjson"), metric, tags)
    started = datetime.strptime(am["startsAt"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    hook = {
        "id": "7329123456789012345", "alert_id": "81234567",
        "title": f"[Triggered on {{{scope}}}] Checkout 5xx ratio high",
        "alert_title": "Checkout 5xx ratio high", "alert_transition": "Triggered",
        "alert_status": "checkout-api 5xx ratio was > 0.05 on average during the last 5m (18.7%)",
        "alert_query": query, "alert_scope": scope,
        "tags": ",".join(["env:prod", "team:checkout", f"kube_deployment:{app}"] + [f"kube_namespace:{ns}", f"service:{app}"]),
        "date": str(int(started.timestamp() * 1000)),
        "body": "%%%\ncheckout-api fails more than 5% of requests.\n%%%", "org_id": "1000012345",
        "priority": "P2", "link": "https://app.datadoghq.com/event/event?id=7329123456789012345",
    }
    write_case(
        "checkout-datadog-monitor",
        meta={"title": "checkout-api 5xx after the v2.8.0 deploy, paged from a Datadog monitor", "now": ts(NOW),
              "difficulty": 2, "source": "sitrep built-in demo"},
        alert=hook,
        recordings=recs,
        expect={"category": "code_defect",
                "required_keywords": ["checkout-api", "revision 14"],
                "forbidden_keywords": [],
                "forbidden_categories": ["healthy", "unknown", "infrastructure"],
                "required_evidence": ["metrics", "logs", "changes", "kubernetes/pods"],
                "ruling_out_keywords": []},
        effects=[{"action": "kubernetes.rollout_undo", "target": f"deployment/{app}", "file": "after-rollback.ndjson",
                  "recordings": after}],
    )


SCENARIOS = [checkout_bad_deploy, search_cpu_saturation, payments_dependency, orders_db_node_lost,
             billing_false_alarm, catalog_image_pull, checkout_datadog]

if __name__ == "__main__":
    for make in SCENARIOS:
        make()
