//! Kubernetes objects read into model facts: pods, events, workloads, nodes, config changes,
//! selectors and log text.

use super::*;

pub(super) fn labels(meta: &ObjectMeta) -> BTreeMap<String, String> {
    meta.labels.clone().unwrap_or_default()
}

/// The controlling owner as `Kind/name`: the ownerReference with `controller: true`, else the
/// first one (objects written by hand or by old controllers may not set the flag).
pub(super) fn controller_owner(meta: &ObjectMeta) -> Option<String> {
    let refs = meta.owner_references.as_deref().unwrap_or_default();
    refs.iter()
        .find(|o| o.controller == Some(true))
        .or_else(|| refs.first())
        .map(|o| format!("{}/{}", o.kind, o.name))
}

/// A label selector as its `matchLabels` and its `matchExpressions`, each expression written
/// `key In (a,b)`, `key NotIn (a)`, `key Exists` or `key DoesNotExist`.
pub fn selector_parts(sel: Option<&LabelSelector>) -> (BTreeMap<String, String>, Vec<String>) {
    let Some(sel) = sel else {
        return (BTreeMap::new(), Vec::new());
    };
    let expressions = sel
        .match_expressions
        .iter()
        .flatten()
        .map(|e| match e.values.as_deref() {
            Some(values) if !values.is_empty() => {
                format!("{} {} ({})", e.key, e.operator, values.join(","))
            }
            _ => format!("{} {}", e.key, e.operator),
        })
        .collect();
    (sel.match_labels.clone().unwrap_or_default(), expressions)
}

/// The pod template's `spec.nodeSelector`.
pub(super) fn template_node_selector(t: Option<&PodTemplateSpec>) -> BTreeMap<String, String> {
    t.and_then(|t| t.spec.as_ref())
        .and_then(|s| s.node_selector.clone())
        .unwrap_or_default()
}

/// A status count (`Option<i32>` in the API) as a count; negative or absent is 0.
pub(super) fn count(v: Option<i32>) -> u32 {
    v.and_then(|v| u32::try_from(v).ok()).unwrap_or(0)
}

/// One status condition as (type, status, reason, message).
pub(super) type ConditionRow<'a> = (
    &'a String,
    &'a String,
    Option<&'a String>,
    Option<&'a String>,
);

/// Conditions as type -> (status, reason, message), the shape deployment and workload facts keep.
pub(super) fn full_conditions<'a>(
    conditions: impl Iterator<Item = ConditionRow<'a>>,
) -> BTreeMap<String, (String, String, String)> {
    conditions
        .map(|(kind, status, reason, message)| {
            (
                kind.clone(),
                (
                    status.clone(),
                    reason.cloned().unwrap_or_default(),
                    message.cloned().unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// A workload's selector (its `matchLabels` and its `matchExpressions` as [`selector_parts`]
/// writes them) in the API's `labelSelector` syntax: `a=b,k in (x,y),k notin (z),k,!k`. None
/// for an empty selector, which selects nothing on a controller and must not become "every pod",
/// and for an operator the API does not define.
pub fn label_selector(
    match_labels: &BTreeMap<String, String>,
    expressions: &[String],
) -> Option<String> {
    if match_labels.is_empty() && expressions.is_empty() {
        return None;
    }
    let mut terms: Vec<String> = match_labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in expressions {
        let mut parts = e.splitn(3, ' ');
        let (key, op, values) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default().trim(),
        );
        terms.push(match op {
            "In" => format!("{key} in {values}"),
            "NotIn" => format!("{key} notin {values}"),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        });
    }
    Some(terms.join(","))
}

/// The terms of a `labelSelector`, split at the commas outside a set's parentheses.
pub(super) fn selector_terms(selector: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(selector[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(selector[start..].trim());
    terms.into_iter().filter(|t| !t.is_empty()).collect()
}

/// Client-side check of a label selector (`a=b,c!=d,e,!f,g in (x,y),h notin (z)`) with the API
/// server's meaning, so a replayed list recorded without the selector is filtered to what the
/// server would have answered.
pub fn selector_matches(selector: &str, labels: &BTreeMap<String, String>) -> bool {
    selector_terms(selector).into_iter().all(|term| {
        let set = |op: &str| {
            let (k, rest) = term.split_once(op)?;
            let values: Vec<&str> = rest
                .trim()
                .strip_prefix('(')?
                .strip_suffix(')')?
                .split(',')
                .map(str::trim)
                .collect();
            Some((k.trim(), values))
        };
        if let Some((k, values)) = set(" notin ") {
            labels.get(k).is_none_or(|v| !values.contains(&v.as_str()))
        } else if let Some((k, values)) = set(" in ") {
            labels.get(k).is_some_and(|v| values.contains(&v.as_str()))
        } else if let Some((k, v)) = term.split_once("!=") {
            labels.get(k.trim()).map(String::as_str) != Some(v.trim())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            labels.get(k.trim()).map(String::as_str) == Some(v.trim())
        } else if let Some(k) = term.strip_prefix('!') {
            !labels.contains_key(k.trim())
        } else {
            labels.contains_key(term)
        }
    })
}

pub(super) fn container_facts(spec: &Container, pod: &Pod) -> ContainerFacts {
    container_facts_of(spec, pod, false)
}

/// Init containers that have not completed successfully: the reason a pod stays in `Init:`.
pub(super) fn unfinished_init_containers(pod: &Pod) -> Vec<ContainerFacts> {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_ref())
        .into_iter()
        .flatten()
        .map(|c| container_facts_of(c, pod, true))
        .filter(|c| !(c.state == "terminated" && c.exit_code == Some(0)))
        .collect()
}

/// The port a probe targets, as its spec gives it (a number or a port's name).
pub(super) fn probe_port(probe: &k8s_openapi::api::core::v1::Probe) -> Option<String> {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let text = |p: &IntOrString| match p {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    };
    probe
        .http_get
        .as_ref()
        .map(|h| text(&h.port))
        .or_else(|| probe.tcp_socket.as_ref().map(|t| text(&t.port)))
        .or_else(|| probe.grpc.as_ref().map(|g| g.port.to_string()))
}

/// Whether a command-line token sizes a runtime's heap: the JVM's `-Xmx` and `MaxHeapSize`,
/// Node's `--max-old-space-size`.
fn sizes_memory(token: &str) -> bool {
    crate::model::HEAP_FLAGS
        .iter()
        .filter_map(|(p, _)| token.strip_prefix(p))
        .any(|size| {
            size.starts_with(|c: char| c.is_ascii_digit())
                && size.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

/// The memory-sizing flags a container sets, from its literal environment values, command and
/// arguments. Only the flag tokens are kept: an environment value may hold anything else.
fn memory_flags(spec: &Container) -> Vec<String> {
    let mut out = Vec::new();
    for e in spec.env.iter().flatten() {
        let Some(value) = e.value.as_deref() else {
            continue;
        };
        if e.name == "GOMEMLIMIT" {
            let v = value.trim();
            if !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric()) {
                out.push(format!("GOMEMLIMIT={v}"));
            }
            continue;
        }
        for token in value.split_whitespace().filter(|t| sizes_memory(t)) {
            out.push(format!("{}: {token}", e.name));
        }
    }
    for (place, words) in [("command", &spec.command), ("args", &spec.args)] {
        for word in words.iter().flatten() {
            for token in word.split_whitespace().filter(|t| sizes_memory(t)) {
                out.push(format!("{place}: {token}"));
            }
        }
    }
    out
}

/// Whether the LimitRanger admission plugin's annotation (`LimitRanger plugin set: cpu, memory
/// request for container app; cpu, memory limit for container app`) says it set `resource`'s
/// limit for the container.
fn limit_ranger_set(annotation: &str, resource: &str, container: &str) -> bool {
    let text = annotation
        .strip_prefix("LimitRanger plugin set:")
        .unwrap_or(annotation);
    text.split(';').any(|part| {
        let part = part.trim();
        let Some((what, whom)) = part.split_once(" limit for ") else {
            return false;
        };
        let named = whom
            .strip_prefix("init container ")
            .or_else(|| whom.strip_prefix("container "))
            .is_some_and(|n| n.trim() == container);
        named && what.split(',').any(|r| r.trim() == resource)
    })
}

pub(super) fn container_facts_of(spec: &Container, pod: &Pod, init: bool) -> ContainerFacts {
    let resources = spec.resources.as_ref();
    let q =
        |m: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
         k: &str| { m.and_then(|m| m.get(k)).map(|q| q.0.clone()) };
    let limits = resources.and_then(|r| r.limits.as_ref());
    let requests = resources.and_then(|r| r.requests.as_ref());
    let mut c = ContainerFacts {
        name: spec.name.clone(),
        image: spec.image.clone().unwrap_or_default(),
        state: "unknown".into(),
        memory_limit: q(limits, "memory"),
        memory_request: q(requests, "memory"),
        cpu_limit: q(limits, "cpu"),
        cpu_request: q(requests, "cpu"),
        has_liveness_probe: spec.liveness_probe.is_some(),
        has_readiness_probe: spec.readiness_probe.is_some(),
        init,
        ..ContainerFacts::default()
    };
    for p in spec.ports.iter().flatten() {
        let Ok(port) = u16::try_from(p.container_port) else {
            continue;
        };
        c.ports.push(port);
        if let Some(host) = p.host_port.and_then(|h| u16::try_from(h).ok()) {
            c.host_ports.push(host);
        }
        if let Some(name) = &p.name {
            c.port_names.insert(name.clone(), port);
        }
    }
    c.memory_flags = memory_flags(spec);
    c.memory_limit_defaulted = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubernetes.io/limit-ranger"))
        .is_some_and(|v| limit_ranger_set(v, "memory", &spec.name));
    for (kind, probe) in [
        ("liveness", &spec.liveness_probe),
        ("readiness", &spec.readiness_probe),
        ("startup", &spec.startup_probe),
    ] {
        if let Some(port) = probe.as_ref().and_then(probe_port) {
            c.probe_ports.insert(kind.to_string(), port);
        }
        if let Some(path) = probe
            .as_ref()
            .and_then(|p| p.http_get.as_ref())
            .and_then(|h| h.path.clone())
        {
            c.probe_paths.insert(kind.to_string(), path);
        }
    }
    let status = pod
        .status
        .as_ref()
        .and_then(|s| {
            if init {
                s.init_container_statuses.as_ref()
            } else {
                s.container_statuses.as_ref()
            }
        })
        .and_then(|all| all.iter().find(|cs| cs.name == spec.name));
    if let Some(cs) = status {
        c.ready = cs.ready;
        c.restart_count = u32::try_from(cs.restart_count).unwrap_or(0);
        if !cs.image.is_empty() && c.image.is_empty() {
            c.image = cs.image.clone();
        }
        if let Some(st) = &cs.state {
            if st.running.is_some() {
                c.state = "running".into();
            } else if let Some(w) = &st.waiting {
                c.state = "waiting".into();
                c.reason = w.reason.clone();
                c.message = w.message.clone();
            } else if let Some(t) = &st.terminated {
                c.state = "terminated".into();
                c.reason = t.reason.clone();
                c.message = t.message.clone();
                c.exit_code = Some(t.exit_code);
            }
        }
        if let Some(t) = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref()) {
            c.last_reason = t.reason.clone();
            c.last_exit_code = Some(t.exit_code);
            c.last_finished_at = t.finished_at.as_ref().and_then(time);
            c.last_message = t.message.clone().filter(|m| !m.trim().is_empty());
        }
    }
    c
}

/// Conditions as type -> status, plus "reason: message" for the abnormal ones.
pub(super) fn fold_conditions<'a>(
    conditions: impl Iterator<Item = (&'a String, &'a String, Option<&'a str>, Option<&'a str>)>,
    abnormal: impl Fn(&str, &str) -> bool,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut statuses = BTreeMap::new();
    let mut messages = BTreeMap::new();
    for (kind, status, reason, message) in conditions {
        statuses.insert(kind.clone(), status.clone());
        if abnormal(kind, status) {
            let text = [reason, message]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(": ");
            if !text.is_empty() {
                messages.insert(kind.clone(), text);
            }
        }
    }
    (statuses, messages)
}

/// A Pod as facts.
pub fn pod_facts(pod: &Pod) -> PodFacts {
    let meta = &pod.metadata;
    let status = pod.status.as_ref();
    let (conditions, condition_messages) = fold_conditions(
        status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    &c.type_,
                    &c.status,
                    c.reason.as_deref(),
                    c.message.as_deref(),
                )
            }),
        // Every pod condition is healthy when True.
        |_, status| status != "True",
    );
    let spec = pod.spec.as_ref();
    let mut containers: Vec<ContainerFacts> = spec
        .map(|s| {
            s.containers
                .iter()
                .map(|c| container_facts(c, pod))
                .collect()
        })
        .unwrap_or_default();
    containers.extend(unfinished_init_containers(pod));
    PodFacts {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".into()),
        node: spec.and_then(|s| s.node_name.clone()),
        created_at: meta.creation_timestamp.as_ref().and_then(time),
        deleting: meta.deletion_timestamp.is_some(),
        labels: labels(meta),
        owner: controller_owner(meta),
        conditions,
        condition_messages,
        containers,
        uid: meta.uid.clone().unwrap_or_default(),
        node_selector: spec
            .and_then(|s| s.node_selector.clone())
            .unwrap_or_default(),
        status_reason: status.and_then(|s| s.reason.clone()),
        status_message: status.and_then(|s| s.message.clone()),
        claims: crate::integrations::k8s_storage::claim_names(spec),
    }
}

/// An Event as facts.
pub fn event_facts(e: &Event) -> K8sEventFacts {
    let obj = &e.involved_object;
    let last = e
        .last_timestamp
        .as_ref()
        .and_then(time)
        .or_else(|| {
            e.event_time.as_ref().and_then(|t| {
                let nanos = u32::try_from(t.0.subsec_nanosecond()).unwrap_or(0);
                Utc.timestamp_opt(t.0.as_second(), nanos).single()
            })
        })
        .or_else(|| e.first_timestamp.as_ref().and_then(time));
    K8sEventFacts {
        event_type: e.type_.clone().unwrap_or_else(|| "Normal".into()),
        reason: e.reason.clone().unwrap_or_default(),
        message: e.message.clone().unwrap_or_default(),
        object: format!(
            "{}/{}",
            obj.kind.clone().unwrap_or_default(),
            obj.name.clone().unwrap_or_default()
        ),
        namespace: obj
            .namespace
            .clone()
            .or_else(|| e.metadata.namespace.clone())
            .unwrap_or_default(),
        count: e.count.and_then(|c| u32::try_from(c).ok()).unwrap_or(1),
        first_seen: e.first_timestamp.as_ref().and_then(time).or(last),
        last_seen: last,
    }
}

pub(super) fn template_images(t: Option<&PodTemplateSpec>) -> Vec<String> {
    t.and_then(|t| t.spec.as_ref())
        .map(|s| {
            s.containers
                .iter()
                .filter_map(|c| c.image.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The literal environment values a pod template's containers set, by name (the first container
/// that sets a name wins), leaving out names that say they are secret and values longer than a
/// line.
pub(super) fn template_env(t: Option<&PodTemplateSpec>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(spec) = t.and_then(|t| t.spec.as_ref()) else {
        return out;
    };
    for c in &spec.containers {
        for e in c.env.iter().flatten() {
            let Some(v) = e.value.as_ref() else { continue };
            if crate::policy::redact::is_secret_env_name(&e.name) || v.len() > 200 {
                continue;
            }
            out.entry(e.name.clone()).or_insert_with(|| v.clone());
        }
    }
    out
}

/// The ConfigMaps and Secrets a pod template reads, through env, envFrom and volumes (projected
/// ones included), init containers too: `configmap/NAME`, `secret/NAME`, sorted, once each.
pub(super) fn template_config_refs(t: Option<&PodTemplateSpec>) -> Vec<String> {
    let mut out = std::collections::BTreeSet::new();
    let Some(spec) = t.and_then(|t| t.spec.as_ref()) else {
        return Vec::new();
    };
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    for c in containers {
        for e in c.env.iter().flatten() {
            let from = e.value_from.as_ref();
            if let Some(r) = from.and_then(|f| f.config_map_key_ref.as_ref()) {
                out.insert(format!("configmap/{}", r.name));
            }
            if let Some(r) = from.and_then(|f| f.secret_key_ref.as_ref()) {
                out.insert(format!("secret/{}", r.name));
            }
        }
        for e in c.env_from.iter().flatten() {
            if let Some(r) = &e.config_map_ref {
                out.insert(format!("configmap/{}", r.name));
            }
            if let Some(r) = &e.secret_ref {
                out.insert(format!("secret/{}", r.name));
            }
        }
    }
    for v in spec.volumes.iter().flatten() {
        if let Some(cm) = &v.config_map {
            out.insert(format!("configmap/{}", cm.name));
        }
        if let Some(name) = v.secret.as_ref().and_then(|s| s.secret_name.as_ref()) {
            out.insert(format!("secret/{name}"));
        }
        for src in v
            .projected
            .as_ref()
            .and_then(|p| p.sources.as_ref())
            .into_iter()
            .flatten()
        {
            if let Some(cm) = &src.config_map {
                out.insert(format!("configmap/{}", cm.name));
            }
            if let Some(sec) = &src.secret {
                out.insert(format!("secret/{}", sec.name));
            }
        }
    }
    out.into_iter().filter(|r| !r.ends_with('/')).collect()
}

pub(super) fn template_annotations(t: Option<&PodTemplateSpec>) -> BTreeMap<String, String> {
    t.and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default()
}

/// ConfigMaps or Secrets from a metadata-only list, as changes: when each was last written
/// (`metadata.managedFields[].time`, else its creation) and by which manager.
pub fn config_changes(v: &Value, kind: &str) -> Result<Vec<Change>, String> {
    let items = match v.get("items") {
        Some(Value::Array(items)) => items.as_slice(),
        Some(Value::Null) | None => &[],
        Some(_) => return Err("`items` is not an array".into()),
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        // Only `metadata` is read: whatever else a server sends (a Secret's data) is never parsed.
        let meta = item
            .get("metadata")
            .cloned()
            .map(serde_json::from_value::<ObjectMeta>)
            .transpose()
            .map_err(|e| format!("{kind} item {i}: {e}"))?
            .unwrap_or_default();
        let Some(name) = meta.name.clone() else {
            continue;
        };
        let created = meta.creation_timestamp.as_ref().and_then(time);
        let latest = meta
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|f| {
                f.time
                    .as_ref()
                    .and_then(time)
                    .map(|t| (t, f.manager.clone()))
            })
            .max_by_key(|(t, _)| *t);
        let (at, author, verb) = match (latest, created) {
            (Some((t, who)), Some(c)) if t > c => (Some(t), who, "updated"),
            (Some((t, who)), None) => (Some(t), who, "updated"),
            (_, c) => (c, None, "created"),
        };
        let ns = meta.namespace.clone().unwrap_or_default();
        out.push(Change {
            kind: ChangeKind::Config,
            at,
            id: name.clone(),
            title: format!("{kind} {name} {verb}"),
            author,
            target: format!("{ns}/{}/{name}", kind.replace('-', "")),
            url: None,
        });
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.at));
    Ok(out)
}

/// A Deployment as facts.
pub fn deployment_facts(d: &Deployment) -> DeploymentFacts {
    let meta = &d.metadata;
    let spec = d.spec.as_ref();
    let status = d.status.as_ref();
    let n = count;
    let conditions = full_conditions(
        status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| (&c.type_, &c.status, c.reason.as_ref(), c.message.as_ref())),
    );
    let (selector, selector_expressions) = selector_parts(spec.map(|s| &s.selector));
    DeploymentFacts {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        replicas: spec.map(|s| n(s.replicas.or(Some(1)))).unwrap_or(1),
        ready_replicas: n(status.and_then(|s| s.ready_replicas)),
        updated_replicas: n(status.and_then(|s| s.updated_replicas)),
        available_replicas: n(status.and_then(|s| s.available_replicas)),
        unavailable_replicas: n(status.and_then(|s| s.unavailable_replicas)),
        generation: meta.generation.unwrap_or(0),
        observed_generation: status.and_then(|s| s.observed_generation).unwrap_or(0),
        revision: meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION).cloned()),
        images: template_images(spec.map(|s| &s.template)),
        conditions,
        labels: labels(meta),
        created_at: meta.creation_timestamp.as_ref().and_then(time),
        config_refs: template_config_refs(spec.map(|s| &s.template)),
        template_env: template_env(spec.map(|s| &s.template)),
        template_annotations: template_annotations(spec.map(|s| &s.template)),
        selector,
        selector_expressions,
        owner: controller_owner(meta),
        node_selector: template_node_selector(spec.map(|s| &s.template)),
        autoscaler: None,
        paused: spec.and_then(|s| s.paused).unwrap_or(false),
    }
}

/// A ReplicaSet in the shape of deployment facts (replicas, revision, images), which is what
/// "which revision is running" questions need.
pub fn replica_set_facts(rs: &ReplicaSet) -> DeploymentFacts {
    let meta = &rs.metadata;
    let spec = rs.spec.as_ref();
    let status = rs.status.as_ref();
    let n = count;
    let template = spec.and_then(|s| s.template.as_ref());
    let (selector, selector_expressions) = selector_parts(spec.map(|s| &s.selector));
    DeploymentFacts {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        replicas: n(spec.and_then(|s| s.replicas)),
        ready_replicas: n(status.and_then(|s| s.ready_replicas)),
        available_replicas: n(status.and_then(|s| s.available_replicas)),
        generation: meta.generation.unwrap_or(0),
        observed_generation: status.and_then(|s| s.observed_generation).unwrap_or(0),
        revision: meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION).cloned()),
        images: template_images(template),
        labels: labels(meta),
        created_at: meta.creation_timestamp.as_ref().and_then(time),
        config_refs: template_config_refs(template),
        template_env: template_env(template),
        template_annotations: template_annotations(template),
        selector,
        selector_expressions,
        owner: controller_owner(meta),
        node_selector: template_node_selector(template),
        ..DeploymentFacts::default()
    }
}

/// A ControllerRevision (a StatefulSet's or DaemonSet's stored template) in the shape
/// ReplicaSets are read in: its revision number, owner, and the images, config references and
/// annotations of the template it records. `data` is a patch of the owner's spec and may hold
/// any part of it, or none: what it lacks is left empty, never an error. Nothing else of the
/// template (env values among it) is kept.
pub fn controller_revision_facts(r: &ControllerRevision) -> DeploymentFacts {
    let meta = &r.metadata;
    let raw = r
        .data
        .as_ref()
        .and_then(|d| d.0.pointer("/spec/template"))
        .filter(|t| t.is_object());
    let template: Option<PodTemplateSpec> =
        raw.and_then(|t| serde_json::from_value(t.clone()).ok());
    let (images, config_refs, template_annotations) = match (&template, raw) {
        (Some(t), _) => {
            let mut images = template_images(Some(t));
            let init = t.spec.as_ref().and_then(|s| s.init_containers.as_ref());
            for image in init.into_iter().flatten().filter_map(|c| c.image.as_ref()) {
                if !images.contains(image) {
                    images.push(image.clone());
                }
            }
            (
                images,
                template_config_refs(Some(t)),
                template_annotations(Some(t)),
            )
        }
        // A template that does not parse whole (a patch leaves out a container's name) still
        // says which images it runs and how it is annotated.
        (None, Some(raw)) => (raw_images(raw), Vec::new(), raw_annotations(raw)),
        (None, None) => Default::default(),
    };
    DeploymentFacts {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        generation: meta.generation.unwrap_or(0),
        revision: Some(r.revision.to_string()),
        images,
        labels: labels(meta),
        created_at: meta.creation_timestamp.as_ref().and_then(time),
        config_refs,
        template_annotations,
        owner: controller_owner(meta),
        ..DeploymentFacts::default()
    }
}

/// `spec.containers[].image` then `spec.initContainers[].image` of a template as raw JSON.
fn raw_images(template: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for list in ["/spec/containers", "/spec/initContainers"] {
        let images = template
            .pointer(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("image").and_then(Value::as_str));
        for image in images {
            if !out.iter().any(|i| i == image) {
                out.push(image.to_string());
            }
        }
    }
    out
}

/// `metadata.annotations` of a template as raw JSON, the string-valued ones.
fn raw_annotations(template: &Value) -> BTreeMap<String, String> {
    template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect()
}

/// What every workload kind shares: identity, owner, selector, template images and nodeSelector.
pub(super) fn workload_base(
    kind: &str,
    meta: &ObjectMeta,
    selector: Option<&LabelSelector>,
    template: Option<&PodTemplateSpec>,
) -> WorkloadFacts {
    let (selector, selector_expressions) = selector_parts(selector);
    WorkloadFacts {
        kind: kind.to_string(),
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        labels: labels(meta),
        created_at: meta.creation_timestamp.as_ref().and_then(time),
        owner: controller_owner(meta),
        selector,
        selector_expressions,
        images: template_images(template),
        node_selector: template_node_selector(template),
        generation: meta.generation.unwrap_or(0),
        ..WorkloadFacts::default()
    }
}

/// A StatefulSet as facts: replicas (desired, ready, updated, available) and its current and
/// update revisions, which differ while a rolling update is under way or stuck.
pub fn stateful_set_facts(s: &StatefulSet) -> WorkloadFacts {
    let spec = s.spec.as_ref();
    let status = s.status.as_ref();
    let mut w = workload_base(
        "StatefulSet",
        &s.metadata,
        spec.map(|s| &s.selector),
        spec.map(|s| &s.template),
    );
    // The API server defaults `replicas` to 1.
    w.desired = spec.map_or(1, |s| count(s.replicas.or(Some(1))));
    w.ready = count(status.and_then(|s| s.ready_replicas));
    w.updated = count(status.and_then(|s| s.updated_replicas));
    w.available = count(status.and_then(|s| s.available_replicas));
    w.unavailable = w.desired.saturating_sub(w.available);
    w.current_revision = status.and_then(|s| s.current_revision.clone());
    w.update_revision = status.and_then(|s| s.update_revision.clone());
    w.observed_generation = status.and_then(|s| s.observed_generation).unwrap_or(0);
    w.conditions = full_conditions(
        status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| (&c.type_, &c.status, c.reason.as_ref(), c.message.as_ref())),
    );
    w
}

/// A DaemonSet as facts: how many nodes should run it, and how many do (ready, updated,
/// available, unavailable), and how many run it where they should not (misscheduled).
pub fn daemon_set_facts(d: &DaemonSet) -> WorkloadFacts {
    let spec = d.spec.as_ref();
    let status = d.status.as_ref();
    let mut w = workload_base(
        "DaemonSet",
        &d.metadata,
        spec.map(|s| &s.selector),
        spec.map(|s| &s.template),
    );
    w.desired = count(status.map(|s| s.desired_number_scheduled));
    w.ready = count(status.map(|s| s.number_ready));
    w.updated = count(status.and_then(|s| s.updated_number_scheduled));
    w.available = count(status.and_then(|s| s.number_available));
    w.unavailable = count(status.and_then(|s| s.number_unavailable));
    w.misscheduled = count(status.map(|s| s.number_misscheduled));
    w.observed_generation = status.and_then(|s| s.observed_generation).unwrap_or(0);
    w.current_revision = status
        .and_then(|s| s.observed_generation)
        .map(|g| g.to_string());
    w.conditions = full_conditions(
        status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| (&c.type_, &c.status, c.reason.as_ref(), c.message.as_ref())),
    );
    w
}

/// A Job as facts: its pods (active, ready, succeeded, failed) against its completions and
/// backoff limit, when it started and finished, and its `Complete`/`Failed` conditions with
/// their reasons (`BackoffLimitExceeded`, `DeadlineExceeded`).
pub fn job_facts(j: &Job) -> WorkloadFacts {
    let spec = j.spec.as_ref();
    let status = j.status.as_ref();
    let mut w = workload_base(
        "Job",
        &j.metadata,
        spec.and_then(|s| s.selector.as_ref()),
        spec.map(|s| &s.template),
    );
    // Unset completions: any one pod's success completes the Job, `parallelism` run at once.
    w.desired = spec.map_or(1, |s| count(s.completions.or(s.parallelism).or(Some(1))));
    w.ready = count(status.and_then(|s| s.ready));
    w.active = count(status.and_then(|s| s.active));
    w.succeeded = count(status.and_then(|s| s.succeeded));
    w.failed = count(status.and_then(|s| s.failed));
    w.backoff_limit = spec
        .and_then(|s| s.backoff_limit)
        .and_then(|b| u32::try_from(b).ok());
    w.suspend = spec.and_then(|s| s.suspend).unwrap_or(false);
    w.start_time = status.and_then(|s| s.start_time.as_ref()).and_then(time);
    w.completion_time = status
        .and_then(|s| s.completion_time.as_ref())
        .and_then(time);
    w.conditions = full_conditions(
        status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| (&c.type_, &c.status, c.reason.as_ref(), c.message.as_ref())),
    );
    w
}

/// A CronJob as facts: its schedule, whether it is suspended, when it last ran and last
/// succeeded, and the Jobs it has running now.
pub fn cron_job_facts(c: &CronJob) -> WorkloadFacts {
    let spec = c.spec.as_ref();
    let status = c.status.as_ref();
    let job = spec.and_then(|s| s.job_template.spec.as_ref());
    let mut w = workload_base(
        "CronJob",
        &c.metadata,
        job.and_then(|j| j.selector.as_ref()),
        job.map(|j| &j.template),
    );
    w.schedule = spec.map(|s| s.schedule.clone()).filter(|s| !s.is_empty());
    w.suspend = spec.and_then(|s| s.suspend).unwrap_or(false);
    w.backoff_limit = job
        .and_then(|j| j.backoff_limit)
        .and_then(|b| u32::try_from(b).ok());
    w.last_schedule = status
        .and_then(|s| s.last_schedule_time.as_ref())
        .and_then(time);
    w.last_success = status
        .and_then(|s| s.last_successful_time.as_ref())
        .and_then(time);
    w.active_jobs = status
        .and_then(|s| s.active.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|r| r.name.clone())
        .collect();
    w.active = u32::try_from(w.active_jobs.len()).unwrap_or(u32::MAX);
    w
}

/// A Node as facts.
pub fn node_facts(node: &Node) -> NodeFacts {
    let meta = &node.metadata;
    let status = node.status.as_ref();
    let (conditions, condition_messages) = fold_conditions(
        status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    &c.type_,
                    &c.status,
                    c.reason.as_deref(),
                    c.message.as_deref(),
                )
            }),
        // Ready is healthy when True; the pressure conditions when False.
        |kind, status| (kind == "Ready") != (status == "True"),
    );
    let condition_since = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c.type_.clone(), time(c.last_transition_time.as_ref()?)?)))
        .collect();
    let spec = node.spec.as_ref();
    let alloc = status.and_then(|s| s.allocatable.as_ref());
    NodeFacts {
        name: meta.name.clone().unwrap_or_default(),
        conditions,
        condition_messages,
        condition_since,
        unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
        taints: spec
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .map(|t| match &t.value {
                Some(v) => format!("{}={}:{}", t.key, v, t.effect),
                None => format!("{}:{}", t.key, t.effect),
            })
            .collect(),
        allocatable_cpu: alloc.and_then(|a| a.get("cpu")).map(|q| q.0.clone()),
        allocatable_memory: alloc.and_then(|a| a.get("memory")).map(|q| q.0.clone()),
        labels: labels(meta),
    }
}

/// Splits pod log text into lines, taking a leading RFC 3339 timestamp as the line's time.
pub fn parse_log_text(text: &str, labels: &BTreeMap<String, String>) -> Vec<LogLine> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (at, rest) = match l.split_once(' ') {
                Some((first, rest)) => match DateTime::parse_from_rfc3339(first) {
                    Ok(t) => (Some(t.with_timezone(&Utc)), rest),
                    // The line is kept whole: its own stamp is part of what it says.
                    Err(_) => (stamped_at(l), l),
                },
                None => (None, l),
            };
            LogLine {
                at,
                labels: labels.clone(),
                line: rest.to_string(),
            }
        })
        .collect()
}

/// The time a line carries of its own, whoever shipped it: an opening RFC 3339 stamp, the
/// logging libraries' default layout, or a structured line's time field.
pub fn stamped_at(line: &str) -> Option<DateTime<Utc>> {
    line.split_once(' ')
        .and_then(|(first, _)| DateTime::parse_from_rfc3339(first).ok())
        .map(|t| t.with_timezone(&Utc))
        .or_else(|| logged_at(line))
        .or_else(|| structured_at(line))
}

/// The time a line opens with in the layout most logging libraries default to (logback, log4j,
/// Python's logging): `2026-03-11 14:26:40.146` or `2026-03-11 14:26:40,146`, read as UTC, the
/// zone containers run in unless told otherwise.
fn logged_at(line: &str) -> Option<DateTime<Utc>> {
    let stamp = line.get(..23).or_else(|| line.get(..19))?;
    let stamp = stamp.replace(',', ".");
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M:%S"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(&stamp, f).ok())
        .map(|t| t.and_utc())
}

/// The time a structured line carries in its own field: a JSON object's `time`, `ts`,
/// `timestamp` or `@timestamp` (RFC 3339, or seconds or milliseconds since the epoch), or a
/// logfmt line's `ts=` / `time=`.
fn structured_at(line: &str) -> Option<DateTime<Utc>> {
    const KEYS: [&str; 4] = ["time", "ts", "timestamp", "@timestamp"];
    let from_text = |t: &str| {
        DateTime::parse_from_rfc3339(t.trim_matches('"'))
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    let line = line.trim();
    if line.starts_with('{') {
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        return KEYS.iter().find_map(|k| match value.get(*k)? {
            serde_json::Value::String(t) => from_text(t),
            serde_json::Value::Number(n) => {
                let n = n.as_f64()?;
                // Milliseconds from 2001 on are above 1e12; seconds stay below it until 33658.
                let millis = if n >= 1e12 { n } else { n * 1000.0 };
                DateTime::from_timestamp_millis(millis as i64)
            }
            _ => None,
        });
    }
    line.split_whitespace().find_map(|field| {
        let (k, v) = field.split_once('=')?;
        KEYS.contains(&k).then(|| from_text(v)).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::{limit_ranger_set, parse_log_text, structured_at, template_env};
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use std::collections::BTreeMap;

    #[test]
    fn a_structured_line_keeps_the_time_in_its_own_field() {
        let at = |l: &str| structured_at(l).map(|t| t.to_rfc3339()).unwrap_or_default();
        assert_eq!(
            at(r#"{"level":"info","ts":1774617645.0,"msg":"change for flagKey x"}"#),
            "2026-03-27T13:20:45+00:00"
        );
        assert_eq!(
            at(r#"{"time":1769107098000,"msg":"charge failed"}"#),
            "2026-01-22T18:38:18+00:00"
        );
        assert_eq!(
            at(r#"{"time":"2026-03-27T13:34:08.980Z","level":"ERROR"}"#),
            "2026-03-27T13:34:08.980+00:00"
        );
        assert_eq!(
            at(r#"level=error ts=2026-03-11T14:28:40Z caller=x.go:57 msg="upstream call failed""#),
            "2026-03-11T14:28:40+00:00"
        );
        // No time field, a field that is no time, and text that is not JSON: no time.
        assert_eq!(at(r#"{"msg":"hello","ts":"soon"}"#), "");
        assert_eq!(at("{broken json"), "");
        assert_eq!(at("plain words ts= nothing"), "");
    }

    #[test]
    fn a_line_in_the_logging_libraries_default_layout_keeps_its_time() {
        let lines = parse_log_text(
            "2026-03-11 14:26:40.146 ERROR 1 --- [exec-1] cannot execute UPDATE\n2026-03-11 14:26:41,002 INFO started\nno time here\n",
            &BTreeMap::new(),
        );
        let at: Vec<String> = lines
            .iter()
            .map(|l| l.at.map(|t| t.to_rfc3339()).unwrap_or_default())
            .collect();
        assert_eq!(
            at,
            [
                "2026-03-11T14:26:40.146+00:00",
                "2026-03-11T14:26:41.002+00:00",
                ""
            ]
        );
        // Kept whole: the stamp is part of the line.
        assert!(lines[0].line.starts_with("2026-03-11 14:26:40.146 ERROR"));
    }

    #[test]
    fn a_templates_literal_environment_leaves_out_what_its_names_say_is_secret() {
        let t: PodTemplateSpec = serde_json::from_value(serde_json::json!({
            "spec": {"containers": [{"name": "app", "env": [
                {"name": "DB_HOST", "value": "orders-pg-ro"},
                {"name": "DB_PASSWORD", "value": "hunter2hunter2"},
                {"name": "API_TOKEN", "value": "abc123abc123"},
                {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
            ]}]}
        }))
        .unwrap_or_default();
        let env = template_env(Some(&t));
        assert_eq!(
            env,
            BTreeMap::from([("DB_HOST".to_string(), "orders-pg-ro".to_string())])
        );
    }

    #[test]
    fn the_limit_ranger_annotation_says_which_limits_it_set_for_which_container() {
        let a = "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; memory limit for init container setup";
        assert!(limit_ranger_set(a, "memory", "app"));
        assert!(limit_ranger_set(a, "cpu", "app"));
        assert!(limit_ranger_set(a, "memory", "setup"));
        assert!(!limit_ranger_set(a, "cpu", "setup"));
        assert!(!limit_ranger_set(a, "memory", "sidecar"));
        // Requests only: no limit was set.
        assert!(!limit_ranger_set(
            "LimitRanger plugin set: memory request for container app",
            "memory",
            "app"
        ));
    }
}
