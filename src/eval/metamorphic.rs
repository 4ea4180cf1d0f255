//! Metamorphic rewrites of a case directory: the same incident with every object renamed, every
//! time shifted, or an unrelated broken neighbour added; a verdict that changes under them was
//! keyed on a name, a date or a bystander rather than on the evidence.

use anyhow::{Context, bail};
use chrono::{Duration, NaiveDateTime};
use regex::Regex;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::LazyLock;

/// One rewrite of a case.
#[derive(Clone, Debug)]
pub enum Rewrite {
    /// Every timestamp (RFC 3339 strings, epoch seconds and nanoseconds, log-line prefixes) moved
    /// by the same amount.
    ShiftTime(Duration),
    /// Every object name (and the stems its controllers derive names from) and every namespace
    /// other than `default` and `kube-*` replaced by another of the same shape.
    Rename,
    /// A crash-looping pod of an unrelated workload added to every pod list.
    AddNeighbour,
    /// The recordings behind these evidence kinds removed (`kubernetes/pod_logs`, `logs`, ...):
    /// the world without the evidence a verdict stood on.
    DropKinds(Vec<String>),
}

/// Whether a recording answers a read of this evidence kind; None for a kind this rewrite
/// cannot take out of a world.
pub fn recording_of_kind(kind: &str, integration: &str, path: &str) -> Option<bool> {
    let k8s = integration == "kubernetes" || integration.starts_with("kubernetes@");
    let datadog = integration == "datadog";
    Some(match kind {
        "kubernetes/pod_logs" => k8s && path.ends_with("/log"),
        "kubernetes/events" => k8s && path.ends_with("/events"),
        "kubernetes/pods" => {
            k8s && (path.ends_with("/pods") || path.contains("/pods/") && !path.ends_with("/log"))
        }
        "kubernetes/deployments" => {
            k8s && (path.ends_with("/deployments")
                || path.contains("/deployments/")
                || path.ends_with("/horizontalpodautoscalers"))
        }
        "kubernetes/nodes" => k8s && (path.ends_with("/nodes") || path.contains("/nodes/")),
        "kubernetes/services" => {
            k8s && ["/services", "/endpoints", "/ingresses", "/networkpolicies"]
                .iter()
                .any(|r| path.ends_with(r))
        }
        "kubernetes/ingresses" => {
            k8s && (path.ends_with("/ingresses") || path.ends_with("/ingressclasses"))
        }
        "kubernetes/revisions" => k8s && path.ends_with("/controllerrevisions"),
        "kubernetes/workloads" => {
            k8s && ["/statefulsets", "/daemonsets", "/jobs", "/cronjobs"]
                .iter()
                .any(|r| path.ends_with(r) || path.contains(&format!("{r}/")))
        }
        "logs" => integration == "loki" || (datadog && path.starts_with("/api/v2/logs")),
        "metrics" => {
            integration == "prometheus" && path.contains("query")
                || (datadog && path == "/api/v1/query")
        }
        "alert_rules" => {
            integration == "prometheus" && path.ends_with("/rules")
                || (datadog && path.starts_with("/api/v1/monitor"))
        }
        "changes" => integration == "github" || (datadog && path == "/api/v1/events"),
        _ => return None,
    })
}

/// What a rewrite did: the names it replaced (old -> new), to read a verdict back.
#[derive(Clone, Debug, Default)]
pub struct Rewritten {
    pub names: BTreeMap<String, String>,
}

impl Rewritten {
    /// `text` with the new names put back to the old ones.
    pub fn restore(&self, text: &str) -> String {
        if self.names.is_empty() {
            return text.to_string();
        }
        let back: BTreeMap<String, String> = self
            .names
            .iter()
            .map(|(a, b)| (b.clone(), a.clone()))
            .collect();
        match alternation(back.keys()) {
            Some(re) => replace_names(&re, &back, text),
            None => text.to_string(),
        }
    }
}

/// Writes `src` rewritten into `dst` (created; files other than the case's own are copied).
pub fn rewrite_case(src: &Path, dst: &Path, how: &Rewrite) -> anyhow::Result<Rewritten> {
    std::fs::create_dir_all(dst).with_context(|| format!("creating {}", dst.display()))?;
    let mut files: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(src).with_context(|| format!("reading {}", src.display()))? {
        let path = entry?.path();
        if !path.is_file() {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        files.push((name, text));
    }
    if !files.iter().any(|(n, _)| n == "case.toml") {
        bail!("{}: not a case directory (no case.toml)", src.display());
    }
    let mut out = Rewritten::default();
    let rename = match how {
        Rewrite::Rename => {
            let names = object_names(&files);
            // The suffixes controllers generate (hashes, ordinals) stay: labels such as
            // pod-template-hash repeat them, and they are not chosen names.
            out.names = names
                .iter()
                .map(|n| {
                    let st = stem(n);
                    (n.clone(), format!("{}{}", scramble(&st), &n[st.len()..]))
                })
                .collect();
            alternation(out.names.keys())
        }
        _ => None,
    };
    for (name, text) in &files {
        let new = match how {
            Rewrite::ShiftTime(d) => shift_file(name, text, *d)?,
            Rewrite::Rename => match &rename {
                Some(re) if name == "expect.toml" => rename_keywords(text, re, &out.names)?,
                Some(re) if name.ends_with(".json") || name.ends_with(".ndjson") => {
                    map_json(name, text, |v| rename_value(v, re, &out.names))?
                }
                Some(re) => replace_names(re, &out.names, text),
                None => text.clone(),
            },
            Rewrite::AddNeighbour if name.ends_with(".ndjson") => add_neighbour(text)?,
            Rewrite::AddNeighbour => text.clone(),
            Rewrite::DropKinds(kinds) if name.ends_with(".ndjson") => drop_kinds(text, kinds),
            Rewrite::DropKinds(_) => text.clone(),
        };
        std::fs::write(dst.join(name), new)
            .with_context(|| format!("writing {}", dst.join(name).display()))?;
    }
    Ok(out)
}

static RFC3339: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(\d{4}-\d{2}-\d{2})([T ])(\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})?")
        .unwrap_or_else(|e| unreachable!("static pattern: {e}"))
});

/// Plausible epoch seconds: 2001 to 2096.
fn epoch_secs(v: f64) -> bool {
    (1.0e9..4.0e9).contains(&v)
}

fn shift_text(text: &str, d: Duration) -> String {
    RFC3339
        .replace_all(text, |c: &regex::Captures| {
            let whole = &c[0];
            let frac = c.get(4).map(|m| m.as_str()).unwrap_or("");
            let zone = c.get(5).map(|m| m.as_str());
            let base = format!("{}T{}{}", &c[1], &c[3], frac);
            let Ok(naive) = NaiveDateTime::parse_from_str(&base, "%Y-%m-%dT%H:%M:%S%.f") else {
                return whole.to_string();
            };
            let moved = naive + d;
            let digits = frac.len().saturating_sub(1);
            let mut s = moved.format("%Y-%m-%d").to_string();
            s.push_str(&c[2]);
            s.push_str(&moved.format("%H:%M:%S").to_string());
            if digits > 0 {
                let nanos = format!("{:09}", moved.and_utc().timestamp_subsec_nanos());
                s.push('.');
                s.push_str(&nanos[..digits.min(9)]);
            }
            if let Some(z) = zone {
                s.push_str(z);
            }
            s
        })
        .into_owned()
}

fn shift_value(v: &mut Value, d: Duration) {
    let secs = d.num_seconds();
    match v {
        Value::String(s) => {
            let t = s.trim();
            if t.len() == 19 && t.bytes().all(|b| b.is_ascii_digit()) {
                // Loki's nanosecond timestamps.
                if let Ok(ns) = t.parse::<i128>()
                    && epoch_secs((ns / 1_000_000_000) as f64)
                {
                    *s = (ns + i128::from(secs) * 1_000_000_000).to_string();
                    return;
                }
            }
            // Epoch milliseconds as text (a Datadog notification's `$DATE`).
            if t.len() == 13
                && t.bytes().all(|b| b.is_ascii_digit())
                && let Ok(ms) = t.parse::<i64>()
                && epoch_secs((ms / 1000) as f64)
            {
                *s = (ms + secs * 1000).to_string();
                return;
            }
            if (10..=17).contains(&t.len())
                && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && let Ok(x) = t.parse::<f64>()
                && epoch_secs(x)
            {
                *s = match t.split_once('.') {
                    Some((_, frac)) => format!("{:.*}", frac.len(), x + secs as f64),
                    None => (x as i64 + secs).to_string(),
                };
                return;
            }
            *s = shift_text(s, d);
        }
        Value::Number(n) => {
            if let Some(x) = n.as_f64()
                && epoch_secs(x)
            {
                *v = if n.is_f64() {
                    json!(x + secs as f64)
                } else {
                    json!(x as i64 + secs)
                };
            } else if let Some(x) = n.as_i64()
                && epoch_secs((x / 1000) as f64)
                && x > 1_000_000_000_000
                && x < 4_000_000_000_000
            {
                // Epoch milliseconds (Datadog, CloudWatch).
                *v = json!(x + secs * 1000);
            } else if let Some(x) = n.as_f64().filter(|_| n.is_f64())
                && epoch_secs(x / 1000.0)
            {
                // Epoch milliseconds as a float (Datadog's `pointlist`).
                *v = json!(x + (secs * 1000) as f64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| shift_value(i, d)),
        Value::Object(map) => map.values_mut().for_each(|i| shift_value(i, d)),
        _ => {}
    }
}

/// Every JSON document of a `.json` file (one) or an `.ndjson` file (one a line), rewritten.
fn map_json(name: &str, text: &str, mut f: impl FnMut(&mut Value)) -> anyhow::Result<String> {
    let mut out = String::with_capacity(text.len());
    let docs: Vec<&str> = if name.ends_with(".ndjson") {
        text.lines().collect()
    } else {
        vec![text]
    };
    for doc in docs {
        if doc.trim().is_empty() {
            continue;
        }
        let mut v: Value =
            serde_json::from_str(doc).with_context(|| format!("{name}: not JSON: {}", cut(doc)))?;
        f(&mut v);
        out.push_str(&serde_json::to_string(&v)?);
        out.push('\n');
    }
    Ok(out)
}

fn shift_file(name: &str, text: &str, d: Duration) -> anyhow::Result<String> {
    if name.ends_with(".ndjson") || name.ends_with(".json") {
        return map_json(name, text, |v| shift_value(v, d));
    }
    Ok(shift_text(text, d))
}

/// Names renamed in string values only: keys are the APIs' vocabulary.
fn rename_value(v: &mut Value, re: &Regex, names: &BTreeMap<String, String>) {
    match v {
        Value::String(s) => *s = replace_names(re, names, s),
        Value::Array(items) => items.iter_mut().for_each(|i| rename_value(i, re, names)),
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                // The recording's own fields name the integration and method, not objects.
                if k != "integration" && k != "method" {
                    rename_value(x, re, names);
                }
            }
        }
        _ => {}
    }
}

fn cut(s: &str) -> String {
    s.chars().take(80).collect()
}

/// Names never rewritten: they are conventions, not chosen names.
fn conventional(name: &str) -> bool {
    name.len() < 4
        || name == "default"
        || name.starts_with("kube-")
        || name.starts_with("system:")
        || matches!(
            name,
            "local-path" | "standard" | "metrics-server" | "coredns"
        )
}

/// A pod's stem: its name without the suffixes its controllers add (`-<hash>`, `-<5 chars>`).
fn stem(name: &str) -> String {
    let mut parts: Vec<&str> = name.split('-').collect();
    while parts.len() > 1 {
        let last = parts[parts.len() - 1];
        let generated = last.len() == 5 && last.bytes().all(|b| b.is_ascii_alphanumeric())
            || (last.len() >= 6
                && last.bytes().any(|b| b.is_ascii_digit())
                && last.bytes().all(|b| b.is_ascii_alphanumeric()))
            || (last.bytes().all(|b| b.is_ascii_digit()) && last.len() <= 3);
        if !generated {
            break;
        }
        parts.pop();
    }
    parts.join("-")
}

/// Every object name and namespace the recordings list, with the stems controllers derive from.
fn object_names(files: &[(String, String)]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    fn walk(v: &Value, names: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                if let Some(meta) = map.get("metadata").and_then(Value::as_object) {
                    for key in ["name", "namespace", "generateName"] {
                        if let Some(n) = meta.get(key).and_then(Value::as_str) {
                            let n = n.trim_end_matches('-');
                            names.insert(n.to_string());
                            names.insert(stem(n));
                        }
                    }
                    for owner in meta
                        .get("ownerReferences")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(n) = owner.get("name").and_then(Value::as_str) {
                            names.insert(n.to_string());
                            names.insert(stem(n));
                        }
                    }
                }
                map.values().for_each(|x| walk(x, names));
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, names)),
            _ => {}
        }
    }
    for (name, text) in files {
        if !name.ends_with(".ndjson") {
            continue;
        }
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line)
                && v.get("integration").and_then(Value::as_str) == Some("kubernetes")
                && let Some(body) = v.get("body")
            {
                walk(body, &mut names);
            }
        }
    }
    names
        .into_iter()
        .filter(|n| {
            !conventional(n)
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
                && n.bytes().any(|b| b.is_ascii_lowercase())
        })
        .collect()
}

/// Another name of the same shape: each letter moved along the alphabet, digits kept.
fn scramble(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'a'..='z' => (b'a' + (c as u8 - b'a' + 7) % 26) as char,
            _ => c,
        })
        .collect()
}

/// One pattern of every name, longest first, matched only where a name starts and ends.
fn alternation<'a>(names: impl Iterator<Item = &'a String>) -> Option<Regex> {
    let mut list: Vec<&String> = names.collect();
    if list.is_empty() {
        return None;
    }
    list.sort_by_key(|n| std::cmp::Reverse(n.len()));
    let body = list
        .iter()
        .map(|n| regex::escape(n))
        .collect::<Vec<_>>()
        .join("|");
    // A name in a URL's query (`%22reports%22`) starts after its percent-escape.
    Regex::new(&format!("(^|[^A-Za-z0-9]|%[0-9A-Fa-f]{{2}})({body})")).ok()
}

fn replace_names(re: &Regex, names: &BTreeMap<String, String>, text: &str) -> String {
    // The regex crate has no look-ahead: check the character after each match by hand.
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut at = 0;
    while let Some(c) = re.captures_at(text, at) {
        let (Some(lead), Some(m)) = (c.get(1), c.get(2)) else {
            break;
        };
        let next = text[m.end()..].chars().next();
        if next.is_some_and(|ch| ch.is_ascii_alphanumeric()) {
            // Not a whole name: look again from the next character.
            at = text[lead.start()..]
                .char_indices()
                .nth(1)
                .map(|(i, _)| lead.start() + i)
                .unwrap_or(text.len());
            continue;
        }
        out.push_str(&text[last..m.start()]);
        out.push_str(
            names
                .get(m.as_str())
                .map(String::as_str)
                .unwrap_or(m.as_str()),
        );
        last = m.end();
        at = m.end();
    }
    out.push_str(&text[last..]);
    out
}

/// The rubric's keywords: a keyword inside a renamed name is renamed the same way.
fn rename_keywords(
    text: &str,
    re: &Regex,
    names: &BTreeMap<String, String>,
) -> anyhow::Result<String> {
    let mut doc: toml::Table = toml::from_str(text).context("expect.toml")?;
    for key in [
        "required_keywords",
        "forbidden_keywords",
        "ruling_out_keywords",
        "forbidden_cause_keywords",
    ] {
        if let Some(toml::Value::Array(items)) = doc.get_mut(key) {
            for item in items.iter_mut() {
                if let toml::Value::String(k) = item {
                    let lower = k.to_lowercase();
                    // Renaming keeps every character's place: a keyword inside a name is the
                    // same slice of its new name.
                    let inside = names.iter().find_map(|(old, new)| {
                        old.find(&lower).and_then(|i| new.get(i..i + lower.len()))
                    });
                    *k = match inside {
                        Some(slice) => slice.to_string(),
                        None => replace_names(re, names, k),
                    };
                }
            }
        }
    }
    Ok(toml::to_string(&doc)?)
}

fn drop_kinds(text: &str, kinds: &[String]) -> String {
    text.lines()
        .filter(|line| {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                return true;
            };
            let integration = v.get("integration").and_then(Value::as_str).unwrap_or("");
            let path = v.get("path").and_then(Value::as_str).unwrap_or("");
            !kinds
                .iter()
                .any(|k| recording_of_kind(k, integration, path) == Some(true))
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A crash-looping pod with no edge to anything else, in the namespace of each pod list.
fn neighbour(namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "zz-bystander-6d5f8b7c9-q2w3e",
            "namespace": namespace,
            "uid": "00000000-0000-4000-8000-00000000beef",
            "labels": {"app": "zz-bystander", "pod-template-hash": "6d5f8b7c9"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "zz-bystander-6d5f8b7c9", "uid": "00000000-0000-4000-8000-00000000bee0",
                "controller": true}]
        },
        "spec": {"containers": [{"name": "bystander", "image": "example/bystander:1.0"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{
                "name": "bystander", "ready": false, "restartCount": 14,
                "image": "example/bystander:1.0",
                "state": {"waiting": {"reason": "CrashLoopBackOff",
                    "message": "back-off 5m0s restarting failed container"}},
                "lastState": {"terminated": {"reason": "Error", "exitCode": 3}}
            }]
        }
    })
}

fn add_neighbour(text: &str) -> anyhow::Result<String> {
    let mut out = String::with_capacity(text.len() + 1024);
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let mut v: Value =
            serde_json::from_str(line).with_context(|| format!("not JSON: {}", cut(line)))?;
        let path = v
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let is_pod_list = v.get("integration").and_then(Value::as_str) == Some("kubernetes")
            && (path == "/api/v1/pods" || path.ends_with("/pods") && path.contains("/namespaces/"));
        if is_pod_list
            && let Some(items) = v
                .get_mut("body")
                .and_then(|b| b.get_mut("items"))
                .and_then(Value::as_array_mut)
        {
            let ns = path
                .split('/')
                .skip_while(|p| *p != "namespaces")
                .nth(1)
                .map(str::to_string)
                .or_else(|| {
                    items.first().and_then(|p| {
                        p.pointer("/metadata/namespace")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                })
                .unwrap_or_else(|| "default".to_string());
            items.push(neighbour(&ns));
        }
        out.push_str(&serde_json::to_string(&v)?);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingress_evidence_is_the_ingress_and_class_lists() {
        let of = |path: &str| recording_of_kind("kubernetes/ingresses", "kubernetes", path);
        assert_eq!(
            of("/apis/networking.k8s.io/v1/namespaces/shop/ingresses"),
            Some(true)
        );
        assert_eq!(of("/apis/networking.k8s.io/v1/ingressclasses"), Some(true));
        assert_eq!(of("/api/v1/namespaces/shop/services"), Some(false));
        assert_eq!(
            recording_of_kind(
                "kubernetes/ingresses",
                "prometheus",
                "/apis/networking.k8s.io/v1/ingresses"
            ),
            Some(false)
        );
    }

    #[test]
    fn times_move_by_the_same_amount_in_every_form() {
        let d = Duration::hours(49) + Duration::minutes(13);
        assert_eq!(
            shift_text("at 2026-03-11T14:05:00Z and 2026-03-11 23:59:30.123", d),
            "at 2026-03-13T15:18:00Z and 2026-03-14 01:12:30.123"
        );
        let mut v = json!({"value": [1773237720.5, "1"], "ns": "1773237720000000000",
            "start": "1773237720", "text": "ts=2026-03-11T14:05:00.000000000+01:00 boom"});
        shift_value(&mut v, d);
        let secs = d.num_seconds();
        assert_eq!(v["value"][0], json!(1773237720.5 + secs as f64));
        assert_eq!(v["value"][1], json!("1"));
        assert_eq!(
            v["ns"],
            json!((1773237720000000000i128 + secs as i128 * 1_000_000_000).to_string())
        );
        assert_eq!(v["start"], json!((1773237720 + secs).to_string()));
        assert_eq!(
            v["text"],
            json!("ts=2026-03-13T15:18:00.000000000+01:00 boom")
        );
        // Datadog's forms: float milliseconds in a pointlist, `$DATE` as millisecond text.
        let mut dd = json!({"pointlist": [[1773237720000.0, 0.5]], "date": "1773237720000"});
        shift_value(&mut dd, d);
        assert_eq!(
            dd["pointlist"][0][0],
            json!(1773237720000.0 + (secs * 1000) as f64)
        );
        assert_eq!(dd["pointlist"][0][1], json!(0.5));
        assert_eq!(dd["date"], json!((1773237720000 + secs * 1000).to_string()));
    }

    #[test]
    fn names_are_renamed_whole_and_read_back() {
        let names: BTreeMap<String, String> = ["checkout", "checkout-api", "shop"]
            .iter()
            .map(|n| (n.to_string(), scramble(n)))
            .collect();
        let re = alternation(names.keys()).unwrap_or_else(|| unreachable!());
        let text =
            "pod checkout-api-7f9d8-abcde in shop calls checkout; checkouts and apicheckout stay";
        let new = replace_names(&re, &names, text);
        assert!(!new.contains("checkout-api-7f9d8"), "{new}");
        assert!(new.contains("checkouts and apicheckout stay"), "{new}");
        assert!(new.contains(&format!("{}-7f9d8-abcde", scramble("checkout-api"))));
        let back = Rewritten { names }.restore(&new);
        assert_eq!(back, text);
    }

    #[test]
    fn stems_drop_only_generated_suffixes() {
        assert_eq!(stem("giant-narwhal-6958c5bdd8-69gtn"), "giant-narwhal");
        assert_eq!(stem("get-data-mldtn"), "get-data");
        assert_eq!(stem("orders-db-0"), "orders-db");
        assert_eq!(stem("payments-api"), "payments-api");
    }
}
