//! Value types shared by events and the fold: stages, risks, categories, evidence, actions.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

pub type ActionId = String;
pub type EvidenceId = String;
pub type CallId = String;

/// The investigation pipeline, in order.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Triage,
    Gather,
    Diagnose,
    Recommend,
    Approve,
    Execute,
    Verify,
    Report,
}

impl Stage {
    pub const ALL: [Stage; 8] = [
        Stage::Triage,
        Stage::Gather,
        Stage::Diagnose,
        Stage::Recommend,
        Stage::Approve,
        Stage::Execute,
        Stage::Verify,
        Stage::Report,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Stage::Triage => "triage",
            Stage::Gather => "gather",
            Stage::Diagnose => "diagnose",
            Stage::Recommend => "recommend",
            Stage::Approve => "approve",
            Stage::Execute => "execute",
            Stage::Verify => "verify",
            Stage::Report => "report",
        }
    }

    pub fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|st| st.name() == s)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How dangerous an action is; decides the approval rule (see `policy`).
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    #[default]
    Low,
    Medium,
    High,
    Critical,
}

impl Risk {
    pub fn name(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }

    pub fn parse(s: &str) -> Option<Risk> {
        match s.to_ascii_lowercase().as_str() {
            "low" => Some(Risk::Low),
            "medium" => Some(Risk::Medium),
            "high" => Some(Risk::High),
            "critical" => Some(Risk::Critical),
            _ => None,
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Diagnosis categories, shared with the eval cases' `expect.toml`.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Healthy,
    ResourceExhaustion,
    ConfigurationError,
    Infrastructure,
    DependencyFailure,
    CodeDefect,
    DataQuality,
    #[default]
    Unknown,
}

impl Category {
    /// The rule that puts a verdict in this category: the one taxonomy, applied everywhere and
    /// written out in `docs/diagnosis.md`.
    pub fn rule(self) -> &'static str {
        match self {
            Category::Healthy => {
                "the symptom was measured back to normal, or the alert resolved, or it fires by design, or the value it watches was measured within its hard limit with nothing failing (a warning threshold crossed); never because something else looks fine"
            }
            Category::ResourceExhaustion => {
                "a limit or a capacity is reached: a memory or CPU limit, a quota, a full disk, a connection pool, nodes without room, a lock everyone waits on"
            }
            Category::ConfigurationError => {
                "what was deployed or configured is wrong: an image tag or manifest that does not exist, a missing key, file or executable, a name that resolves nowhere, a selector no node matches, a probe pointed at the wrong place"
            }
            Category::Infrastructure => {
                "the platform under the workload fails: a node NotReady or under pressure, a kubelet that stopped reporting, a volume or network that is gone"
            }
            Category::DependencyFailure => {
                "something the subject calls exists but refuses, times out or errors, or has no ready replica"
            }
            Category::CodeDefect => {
                "the application's own code fails: a crash, panic or exception from its code, a release that brought errors, a script that does not parse"
            }
            Category::DataQuality => {
                "the system runs but the data it works on is wrong: bad input, missing rows, a broken contract between producer and consumer"
            }
            Category::Unknown => {
                "the symptom is present or could not be measured and no cause was found in the evidence; says what is missing"
            }
        }
    }

    /// One example verdict of this category.
    pub fn example(self) -> &'static str {
        match self {
            Category::Healthy => {
                "KubePodCrashLooping fired for one restart 40 minutes ago; every pod is Ready and none restarted since"
            }
            Category::ResourceExhaustion => {
                "payments-api is OOMKilled (exit code 137) at its 256Mi memory limit"
            }
            Category::ConfigurationError => {
                "catalog-web's new pods are in ImagePullBackOff: the tag v3.12.0 does not exist (manifest unknown)"
            }
            Category::Infrastructure => {
                "node ip-10-0-3-41 is NotReady (Kubelet stopped posting node status); orders-db-0 on it is unreachable"
            }
            Category::DependencyFailure => {
                "fraud-check has 0 of 2 replicas ready, so payments-api's calls to 10.100.71.12:8443 are refused"
            }
            Category::CodeDefect => {
                "checkout-api v2.8.0 panics on checkout; its 5xx ratio went 0.3% to 19% 90 s after the rollout"
            }
            Category::DataQuality => {
                "the nightly import loads a file with a changed column order and writes nulls into prices"
            }
            Category::Unknown => {
                "a latency alert with no latency metric readable (Prometheus is not configured) and no failing check"
            }
        }
    }

    pub const ALL: [Category; 8] = [
        Category::Healthy,
        Category::ResourceExhaustion,
        Category::ConfigurationError,
        Category::Infrastructure,
        Category::DependencyFailure,
        Category::CodeDefect,
        Category::DataQuality,
        Category::Unknown,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Healthy => "healthy",
            Category::ResourceExhaustion => "resource_exhaustion",
            Category::ConfigurationError => "configuration_error",
            Category::Infrastructure => "infrastructure",
            Category::DependencyFailure => "dependency_failure",
            Category::CodeDefect => "code_defect",
            Category::DataQuality => "data_quality",
            Category::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A marker drawn on a time-series chart (an action, a deploy, the alert onset).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Marker {
    /// Unix seconds.
    pub at: f64,
    pub label: String,
}

/// How a piece of evidence is shown. Redacted before it is built.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "format", rename_all = "snake_case")]
pub enum EvidenceBody {
    /// Logs, YAML, JSON text, markdown. `language` picks the highlighter: `log`, `json`, `yaml`, `markdown`, `text`.
    Text {
        language: String,
        text: String,
    },
    Table {
        columns: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    TimeSeries {
        series: Vec<super::facts::Series>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unit: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        markers: Vec<Marker>,
    },
    Json {
        value: serde_json::Value,
    },
}

impl EvidenceBody {
    /// Number of display lines/rows, for sizing and scrolling.
    pub fn len_hint(&self) -> usize {
        match self {
            EvidenceBody::Text { text, .. } => text.lines().count(),
            EvidenceBody::Table { rows, .. } => rows.len(),
            EvidenceBody::TimeSeries { series, .. } => series.len(),
            EvidenceBody::Json { .. } => 1,
        }
    }
}

/// One piece of evidence: what a tool call returned, in display form.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Evidence {
    pub id: EvidenceId,
    /// Evidence kind from DESIGN.md: `kubernetes/pods`, `metrics`, `logs`, `changes`, ...
    pub kind: String,
    pub title: String,
    /// The tool that produced it, `<integration>.<verb>`.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<CallId>,
    pub body: EvidenceBody,
}

/// Something an analyzer concluded from evidence.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Finding {
    /// Analyzer name, e.g. `oom_killed`.
    pub analyzer: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    pub category: Category,
    /// 0.0 ..= 1.0
    pub confidence: f32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceId>,
}

/// A ranked candidate root cause.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Hypothesis {
    pub category: Category,
    pub statement: String,
    pub confidence: f32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceId>,
}

/// A candidate that was considered and rejected, and why.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RuledOut {
    pub statement: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceId>,
}

/// A proposed remediation or read step.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Action {
    pub id: ActionId,
    /// `<integration>.<verb>`, e.g. `kubernetes.rollout_undo`.
    pub kind: String,
    /// e.g. `deployment/payments-api`.
    pub target: String,
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    pub risk: Risk,
    pub rationale: String,
    /// The exact operation it will perform: an API call or the equivalent command.
    #[serde(default)]
    pub operation: String,
    /// What else it affects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub blast_radius: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceId>,
}

impl Action {
    /// What an approval binds to: SHA-256 (hex) over the canonical JSON of kind, target and
    /// parameters, so a decision given for one version of an action never counts for another.
    pub fn digest(&self) -> String {
        action_digest(&self.kind, &self.target, &self.params)
    }
}

/// [`Action::digest`] from its parts.
pub fn action_digest(
    kind: &str,
    target: &str,
    params: &BTreeMap<String, serde_json::Value>,
) -> String {
    use sha2::{Digest, Sha256};
    let mut canon = String::new();
    canon.push_str("{\"kind\":");
    canonical(&serde_json::Value::String(kind.to_string()), &mut canon);
    canon.push_str(",\"params\":{");
    for (i, (k, v)) in params.iter().enumerate() {
        if i > 0 {
            canon.push(',');
        }
        canonical(&serde_json::Value::String(k.clone()), &mut canon);
        canon.push(':');
        canonical(v, &mut canon);
    }
    canon.push_str("},\"target\":");
    canonical(&serde_json::Value::String(target.to_string()), &mut canon);
    canon.push('}');
    let hash = Sha256::digest(canon.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The first 12 hex digits of a digest: enough to tell versions apart on screen.
pub fn short_digest(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// JSON with object keys sorted at every depth, whatever map order serde_json was built with.
fn canonical(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(&serde_json::Value::String(k.clone()), out);
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The result of re-querying after an action.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Verification {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_id: Option<ActionId>,
    pub passed: bool,
    /// The re-query that would tell could not be made: neither passed nor failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unknown: bool,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<EvidenceId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<EvidenceId>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    Operator,
    Agent,
    System,
}
