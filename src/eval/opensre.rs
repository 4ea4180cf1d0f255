//! Imports scenarios in OpenSRE's synthetic RDS format as case directories: the alert as an
//! Alertmanager payload, the AWS reads the Cloud specialist makes answered from the scenario's
//! files (what a scenario lacks stays absent), and `expect.toml` from `answer.yml`.

use crate::agent::cloud::metric_queries;
use crate::integrations::transport::{Body, Recording};
use crate::model::Category;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a scenario could not be imported: the file, the field and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: {field}: {message}")]
    Field {
        file: String,
        field: String,
        message: String,
    },
    #[error("{file}: {message}")]
    File { file: String, message: String },
}

fn field_err(file: &Path, field: &str, message: impl Into<String>) -> ImportError {
    ImportError::Field {
        file: file.display().to_string(),
        field: field.to_string(),
        message: message.into(),
    }
}

fn file_err(file: &Path, message: impl Into<String>) -> ImportError {
    ImportError::File {
        file: file.display().to_string(),
        message: message.into(),
    }
}

fn read(path: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(path).map_err(|e| file_err(path, e.to_string()))
}

fn read_json(path: &Path) -> Result<Value, ImportError> {
    let text = read(path)?;
    serde_json::from_str(&text).map_err(|e| {
        file_err(
            path,
            format!("not JSON at line {} column {}: {e}", e.line(), e.column()),
        )
    })
}

fn read_yaml(path: &Path) -> Result<Value, ImportError> {
    let text = read(path)?;
    serde_saphyr::from_str::<Value>(&text).map_err(|e| file_err(path, format!("not YAML: {e}")))
}

fn time(path: &Path, field: &str, v: &Value) -> Result<DateTime<Utc>, ImportError> {
    v.as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| field_err(path, field, format!("expected an RFC 3339 time, found {v}")))
}

fn text_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// One CloudWatch series of a scenario.
#[derive(Clone, Debug)]
struct Metric {
    instance: String,
    name: String,
    points: Vec<(DateTime<Utc>, f64)>,
}

/// A scenario's files, read and checked.
struct Scenario {
    id: String,
    meta: Map<String, Value>,
    alert: Value,
    metrics: Vec<Metric>,
    window: Option<(DateTime<Utc>, DateTime<Utc>)>,
    events: Vec<Value>,
    insights: Option<Value>,
    answer: Option<Value>,
}

/// `scenario.yml`, over the one it names as `base` (fields of the scenario win).
fn scenario_meta(dir: &Path) -> Result<Map<String, Value>, ImportError> {
    let path = dir.join("scenario.yml");
    let own = match read_yaml(&path)? {
        Value::Object(m) => m,
        other => {
            return Err(field_err(
                &path,
                "(top)",
                format!("expected a mapping, found {other}"),
            ));
        }
    };
    let mut meta = Map::new();
    if let Some(base) = text_of(own.get("base")) {
        let base_dir = dir.parent().map(|p| p.join(&base)).unwrap_or_default();
        if base_dir != dir && base_dir.join("scenario.yml").is_file() {
            let inherited = scenario_meta(&base_dir)?;
            meta.extend(inherited);
        }
    }
    meta.extend(own);
    Ok(meta)
}

/// The metric files of a scenario: its own, else its base's.
fn metric_files(dir: &Path, meta: &Map<String, Value>) -> Vec<PathBuf> {
    let list = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                            n.starts_with("aws_cloudwatch_metrics") && n.ends_with(".json")
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let own = list(dir);
    if !own.is_empty() {
        return own;
    }
    match (text_of(meta.get("base")), dir.parent()) {
        (Some(base), Some(parent)) => list(&parent.join(base)),
        _ => Vec::new(),
    }
}

/// One series object (`metric_name`, `dimensions`, `timestamps`, `values`, `unit`).
fn parse_series(path: &Path, at: &str, v: &Value) -> Result<Metric, ImportError> {
    let name = text_of(v.get("metric_name"))
        .ok_or_else(|| field_err(path, &format!("{at}.metric_name"), "missing"))?;
    let instance = v
        .get("dimensions")
        .and_then(Value::as_array)
        .and_then(|d| {
            d.iter().find_map(|x| {
                (x.get("Name").and_then(Value::as_str) == Some("DBInstanceIdentifier"))
                    .then(|| text_of(x.get("Value")))
                    .flatten()
            })
        })
        .ok_or_else(|| {
            field_err(
                path,
                &format!("{at}.dimensions"),
                "expected a DBInstanceIdentifier dimension",
            )
        })?;
    let stamps = v
        .get("timestamps")
        .and_then(Value::as_array)
        .ok_or_else(|| field_err(path, &format!("{at}.timestamps"), "expected an array"))?;
    let values = v
        .get("values")
        .and_then(Value::as_array)
        .ok_or_else(|| field_err(path, &format!("{at}.values"), "expected an array"))?;
    if stamps.len() != values.len() {
        return Err(field_err(
            path,
            &format!("{at}.values"),
            format!("{} values for {} timestamps", values.len(), stamps.len()),
        ));
    }
    // CloudWatch reports RDS latencies in seconds.
    let scale = match text_of(v.get("unit")).as_deref() {
        Some("Milliseconds") if name.ends_with("Latency") => 0.001,
        _ => 1.0,
    };
    let mut points = Vec::with_capacity(stamps.len());
    for (i, (t, x)) in stamps.iter().zip(values).enumerate() {
        let t = time(path, &format!("{at}.timestamps[{i}]"), t)?;
        let x = x.as_f64().ok_or_else(|| {
            field_err(
                path,
                &format!("{at}.values[{i}]"),
                format!("expected a number, found {x}"),
            )
        })?;
        points.push((t, x * scale));
    }
    Ok(Metric {
        instance,
        name,
        points,
    })
}

fn load(dir: &Path) -> Result<Scenario, ImportError> {
    let meta = scenario_meta(dir)?;
    let id = text_of(meta.get("scenario_id")).unwrap_or_else(|| {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".into())
    });
    let alert_path = dir.join("alert.json");
    let alert = read_json(&alert_path)?;
    if !alert.is_object() {
        return Err(field_err(&alert_path, "(top)", "expected an object"));
    }
    let mut metrics = Vec::new();
    let mut window = None;
    for path in metric_files(dir, &meta) {
        let v = read_json(&path)?;
        if let (Some(s), Some(e)) = (v.get("start_time"), v.get("end_time")) {
            window = Some((time(&path, "start_time", s)?, time(&path, "end_time", e)?));
        }
        if let Some(results) = v.get("metric_data_results") {
            let list = results
                .as_array()
                .ok_or_else(|| field_err(&path, "metric_data_results", "expected an array"))?;
            for (i, r) in list.iter().enumerate() {
                metrics.push(parse_series(
                    &path,
                    &format!("metric_data_results[{i}]"),
                    r,
                )?);
            }
        } else if v.get("metric_name").is_some() {
            metrics.push(parse_series(&path, "(top)", &v)?);
        }
    }
    let events_path = dir.join("aws_rds_events.json");
    let events = if events_path.is_file() {
        let v = read_json(&events_path)?;
        let list = v
            .get("events")
            .and_then(Value::as_array)
            .ok_or_else(|| field_err(&events_path, "events", "expected an array"))?;
        for (i, e) in list.iter().enumerate() {
            time(
                &events_path,
                &format!("events[{i}].date"),
                e.get("date").unwrap_or(&Value::Null),
            )?;
            text_of(e.get("message")).ok_or_else(|| {
                field_err(&events_path, &format!("events[{i}].message"), "missing")
            })?;
        }
        list.clone()
    } else {
        Vec::new()
    };
    let pi_path = dir.join("aws_performance_insights.json");
    let insights = if pi_path.is_file() {
        Some(read_json(&pi_path)?)
    } else {
        None
    };
    let answer_path = dir.join("answer.yml");
    let answer = if answer_path.is_file() {
        Some(read_yaml(&answer_path)?)
    } else {
        None
    };
    Ok(Scenario {
        id,
        meta,
        alert,
        metrics,
        window,
        events,
        insights,
        answer,
    })
}

fn rfc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn recording(path: &str, query: &[(&str, &str)], body: Value) -> Recording {
    Recording {
        integration: "aws".into(),
        method: "POST".into(),
        path: path.into(),
        query: query
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect::<BTreeMap<_, _>>(),
        status: 200,
        body: Body::Json(body),
        latency_ms: None,
    }
}

/// A stable, opaque resource id for Performance Insights, from the instance's identifier.
fn resource_id(instance: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(instance.as_bytes());
    format!("db-{}", hex::encode_upper(&digest[..13]))
}

impl Scenario {
    fn annotations(&self) -> Map<String, Value> {
        self.alert
            .get("commonAnnotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }

    fn labels(&self) -> Map<String, Value> {
        self.alert
            .get("commonLabels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }

    fn instance(&self) -> Option<String> {
        let ann = self.annotations();
        let labels = self.labels();
        crate::reason::cloud::INSTANCE_KEYS
            .iter()
            .find_map(|k| text_of(labels.get(*k)).or_else(|| text_of(ann.get(*k))))
            .or_else(|| text_of(self.meta.get("db_instance_identifier")))
    }

    fn replicas(&self) -> Vec<String> {
        let ann = self.annotations();
        let mut out: Vec<String> = Vec::new();
        for v in [ann.get("read_replica"), self.meta.get("read_replica")] {
            if let Some(r) = text_of(v)
                && !out.contains(&r)
            {
                out.push(r);
            }
        }
        if let Some(list) = self.meta.get("read_replicas").and_then(Value::as_array) {
            for r in list.iter().filter_map(|r| text_of(Some(r))) {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
        out
    }

    /// The world's clock: the end of the metrics window, or the last event if it is later.
    fn now(&self) -> DateTime<Utc> {
        let mut now = self
            .window
            .map(|w| w.1)
            .or_else(|| {
                self.metrics
                    .iter()
                    .filter_map(|m| m.points.last().map(|p| p.0))
                    .max()
            })
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
        for e in &self.events {
            if let Some(t) = e
                .get("date")
                .and_then(Value::as_str)
                .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            {
                now = now.max(t.with_timezone(&Utc) + Duration::minutes(1));
            }
        }
        now
    }

    fn starts_at(&self) -> DateTime<Utc> {
        self.window
            .map(|w| w.0)
            .or_else(|| {
                self.metrics
                    .iter()
                    .filter_map(|m| m.points.first().map(|p| p.0))
                    .min()
            })
            .unwrap_or_else(|| self.now() - Duration::minutes(15))
    }

    fn alert_payload(&self) -> Value {
        let mut labels = self.labels();
        let annotations = self.annotations();
        let title = text_of(self.alert.get("title"));
        let name = text_of(labels.get("alertname"))
            .unwrap_or_else(|| title.clone().unwrap_or_else(|| "RDSAlert".into()));
        labels.insert("alertname".into(), Value::String(name));
        let state = text_of(self.alert.get("state")).unwrap_or_else(|| "alerting".into());
        let resolved = matches!(state.as_str(), "ok" | "normal" | "resolved" | "inactive");
        let status = if resolved { "resolved" } else { "firing" };
        let ends = if resolved {
            rfc(self.now())
        } else {
            "0001-01-01T00:00:00Z".to_string()
        };
        json!({
            "version": "4",
            "groupKey": format!("{{}}:{{alertname=\"{}\"}}", labels.get("alertname").and_then(Value::as_str).unwrap_or("")),
            "status": status,
            "receiver": "sitrep",
            "groupLabels": {"alertname": labels.get("alertname").cloned().unwrap_or(Value::Null)},
            "commonLabels": labels.clone(),
            "commonAnnotations": annotations.clone(),
            "externalURL": "",
            "alerts": [{
                "status": status,
                "labels": labels,
                "annotations": annotations,
                "startsAt": rfc(self.starts_at()),
                "endsAt": ends,
                "generatorURL": "",
            }],
        })
    }

    fn recordings(&self) -> Vec<Recording> {
        let mut out = Vec::new();
        let Some(id) = self.instance() else {
            return out;
        };
        let replicas = self.replicas();
        let rid = resource_id(&id);
        let mut instance = Map::new();
        instance.insert("DBInstanceIdentifier".into(), json!(id));
        for (field, key) in [
            ("DBInstanceClass", "instance_class"),
            ("Engine", "engine"),
            ("EngineVersion", "engine_version"),
            ("StorageType", "storage_type"),
            ("AvailabilityZone", "availability_zone"),
        ] {
            if let Some(v) = text_of(self.meta.get(key)) {
                instance.insert(field.into(), json!(v));
            }
        }
        for (field, key) in [
            ("AllocatedStorage", "allocated_storage_gb"),
            ("Iops", "iops"),
        ] {
            if let Some(v) = self.meta.get(key).and_then(Value::as_f64) {
                instance.insert(field.into(), json!(v));
            }
        }
        if let Some(v) = self.meta.get("multi_az").and_then(Value::as_bool) {
            instance.insert("MultiAZ".into(), json!(v));
        }
        instance.insert("DBInstanceStatus".into(), json!("available"));
        instance.insert("ReadReplicaDBInstanceIdentifiers".into(), json!(replicas));
        instance.insert("DbiResourceId".into(), json!(rid));
        instance.insert(
            "PerformanceInsightsEnabled".into(),
            json!(self.insights.is_some()),
        );
        let described = json!({"DBInstances": [Value::Object(instance)]});
        out.push(recording(
            "/rds/DescribeDBInstances",
            &[("DBInstanceIdentifier", &id)],
            described.clone(),
        ));
        out.push(recording("/rds/DescribeDBInstances", &[], described));

        // Each source's own events, as DescribeEvents filters them.
        let mut by_source: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        by_source.entry(id.clone()).or_default();
        for r in &replicas {
            by_source.entry(r.clone()).or_default();
        }
        for e in &self.events {
            let source = text_of(e.get("source_identifier")).unwrap_or_else(|| id.clone());
            by_source.entry(source.clone()).or_default().push(json!({
                "SourceIdentifier": source,
                "SourceType": text_of(e.get("source_type")).unwrap_or_else(|| "db-instance".into()),
                "Message": e.get("message").cloned().unwrap_or(Value::Null),
                "EventCategories": e.get("event_categories").cloned().unwrap_or(json!([])),
                "Date": e.get("date").cloned().unwrap_or(Value::Null),
            }));
        }
        for (source, events) in by_source {
            out.push(recording(
                "/rds/DescribeEvents",
                &[("SourceIdentifier", &source), ("SourceType", "db-instance")],
                json!({ "Events": events }),
            ));
        }

        // The queries the specialist makes, each answered from the scenario's series of that
        // instance and metric; one the scenario lacks comes back empty.
        let results: Vec<Value> = metric_queries(&id, &replicas, &[])
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let found = self
                    .metrics
                    .iter()
                    .find(|m| m.instance == q.instance && m.name == q.metric);
                let (stamps, values): (Vec<String>, Vec<f64>) = found
                    .map(|m| m.points.iter().map(|(t, v)| (rfc(*t), *v)).unzip())
                    .unwrap_or_default();
                json!({
                    "Id": format!("m{i}"),
                    "Label": q.metric,
                    "StatusCode": "Complete",
                    "Timestamps": stamps,
                    "Values": values,
                })
            })
            .collect();
        out.push(recording(
            "/monitoring/GetMetricData",
            &[("DBInstanceIdentifier", &id)],
            json!({ "MetricDataResults": results }),
        ));

        if let Some(pi) = &self.insights {
            out.extend(self.insights_recordings(pi, &rid));
        }
        out
    }

    fn insights_recordings(&self, pi: &Value, rid: &str) -> Vec<Recording> {
        let epoch = |t: &Value| {
            t.as_str()
                .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                .map(|t| t.timestamp())
        };
        let load = pi.get("db_load");
        let stamps: Vec<i64> = load
            .and_then(|l| l.get("timestamps"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(epoch).collect())
            .unwrap_or_default();
        let values: Vec<f64> = load
            .and_then(|l| l.get("values"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let mean_load = if values.is_empty() {
            None
        } else {
            Some(values.iter().sum::<f64>() / values.len() as f64)
        };
        let peak = values.iter().cloned().fold(0.0, f64::max);
        let points: Vec<Value> = stamps
            .iter()
            .zip(&values)
            .map(|(t, v)| json!({"Timestamp": t, "Value": v}))
            .collect();
        let mut out = vec![recording(
            "/pi/GetResourceMetrics",
            &[("Identifier", rid)],
            json!({
                "Identifier": rid,
                "MetricList": [{"Key": {"Metric": "db.load.avg"}, "DataPoints": points}],
            }),
        )];
        // Some exports give a key's load as a share of the total in percent rather than in
        // average active sessions: a set of keys whose loads add up past the highest load
        // measured cannot be sessions, and is converted with the mean load.
        let normalize = |list: &[Value]| -> f64 {
            let sum: f64 = list
                .iter()
                .filter_map(|k| k.get("db_load_avg").and_then(Value::as_f64))
                .sum();
            match mean_load {
                Some(m) if peak > 0.0 && sum > 1.5 * peak => m / 100.0,
                _ => 1.0,
            }
        };
        let empty = Vec::new();
        let top_sql = pi
            .get("top_sql")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let sql_scale = normalize(top_sql);
        let mut waits: Vec<String> = Vec::new();
        for s in top_sql {
            for w in s
                .get("wait_events")
                .and_then(Value::as_array)
                .unwrap_or(&empty)
            {
                if let Some(n) = text_of(w.get("name"))
                    && !waits.contains(&n)
                {
                    waits.push(n);
                }
            }
        }
        let keys: Vec<Value> = top_sql
            .iter()
            .map(|s| {
                let statement = text_of(s.get("statement")).unwrap_or_default();
                let partitions: Vec<f64> = waits
                    .iter()
                    .map(|w| {
                        s.get("wait_events")
                            .and_then(Value::as_array)
                            .and_then(|ws| {
                                ws.iter().find(|x| text_of(x.get("name")).as_deref() == Some(w))
                            })
                            .and_then(|x| x.get("db_load_avg").and_then(Value::as_f64))
                            .map(|v| v * sql_scale)
                            .unwrap_or(0.0)
                    })
                    .collect();
                json!({
                    "Dimensions": {
                        "db.sql.statement": statement,
                        "db.sql.id": resource_id(&statement),
                    },
                    "Total": s.get("db_load_avg").and_then(Value::as_f64).unwrap_or(0.0) * sql_scale,
                    "Partitions": partitions,
                })
            })
            .collect();
        out.push(recording(
            "/pi/DescribeDimensionKeys",
            &[("Identifier", rid), ("Group", "db.sql")],
            json!({
                "PartitionKeys": waits.iter().map(|w| json!({"Dimensions": {"db.wait_event.name": w}})).collect::<Vec<_>>(),
                "Keys": keys,
            }),
        ));
        let top_waits = pi
            .get("top_wait_events")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let wait_scale = normalize(top_waits);
        let keys: Vec<Value> = top_waits
            .iter()
            .map(|w| {
                json!({
                    "Dimensions": {
                        "db.wait_event.name": text_of(w.get("name")).unwrap_or_default(),
                        "db.wait_event.type": text_of(w.get("type")).unwrap_or_default(),
                    },
                    "Total": w.get("db_load_avg").and_then(Value::as_f64).unwrap_or(0.0) * wait_scale,
                })
            })
            .collect();
        out.push(recording(
            "/pi/DescribeDimensionKeys",
            &[("Identifier", rid), ("Group", "db.wait_event")],
            json!({ "Keys": keys }),
        ));
        out
    }

    /// `expect.toml` from `answer.yml`: categories OpenSRE has beyond sitrep's taxonomy
    /// (`cpu_saturation`) become words the root cause must not state.
    fn expect(&self, answer_path: &Path) -> Result<Option<String>, ImportError> {
        let Some(a) = &self.answer else {
            return Ok(None);
        };
        let strings = |k: &str| -> Result<Vec<String>, ImportError> {
            match a.get(k) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        text_of(Some(v)).ok_or_else(|| {
                            field_err(answer_path, &format!("{k}[{i}]"), "expected text")
                        })
                    })
                    .collect(),
                Some(other) => Err(field_err(
                    answer_path,
                    k,
                    format!("expected a list, found {other}"),
                )),
            }
        };
        let mut out = String::new();
        let q = |s: &str| toml::Value::String(s.to_string()).to_string();
        let list = |v: &[String]| {
            format!(
                "[{}]",
                v.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")
            )
        };
        if let Some(c) = text_of(a.get("root_cause_category")) {
            let cat = category(&c).ok_or_else(|| {
                field_err(
                    answer_path,
                    "root_cause_category",
                    format!("{c:?} is not a category sitrep knows"),
                )
            })?;
            out.push_str(&format!("category = {}\n", q(cat.name())));
        }
        let mut forbidden = Vec::new();
        let mut forbidden_causes = Vec::new();
        for c in strings("forbidden_categories")? {
            match Category::parse(&c) {
                Some(cat) => forbidden.push(cat.name().to_string()),
                None => forbidden_causes.push(c.replace('_', " ")),
            }
        }
        let evidence: Vec<String> = strings("required_evidence_sources")?
            .iter()
            .filter_map(|s| evidence_kind(s).map(str::to_string))
            .collect();
        out.push_str(&format!(
            "required_keywords = {}\n",
            list(&strings("required_keywords")?)
        ));
        out.push_str(&format!(
            "forbidden_keywords = {}\n",
            list(&strings("forbidden_keywords")?)
        ));
        out.push_str(&format!("forbidden_categories = {}\n", list(&forbidden)));
        out.push_str(&format!(
            "forbidden_cause_keywords = {}\n",
            list(&forbidden_causes)
        ));
        out.push_str(&format!("required_evidence = {}\n", list(&evidence)));
        out.push_str(&format!(
            "ruling_out_keywords = {}\n",
            list(&strings("ruling_out_keywords")?)
        ));
        Ok(Some(out))
    }
}

/// A sitrep category for an OpenSRE root-cause category; its sub-kinds fold into the category
/// they belong to.
fn category(name: &str) -> Option<Category> {
    Category::parse(name).or(match name {
        "cpu_saturation"
        | "connection_exhaustion"
        | "storage_full"
        | "memory_pressure"
        | "replication_lag" => Some(Category::ResourceExhaustion),
        "failover" | "network" => Some(Category::Infrastructure),
        _ => None,
    })
}

/// The evidence kind the Cloud specialist writes for an OpenSRE evidence source.
fn evidence_kind(source: &str) -> Option<&'static str> {
    use crate::reason::cloud::{EV_EVENTS, EV_INSTANCES, EV_METRICS, EV_PI};
    match source {
        "aws_rds_events" => Some(EV_EVENTS),
        "aws_performance_insights" => Some(EV_PI),
        "aws_cloudwatch_metrics" => Some(EV_METRICS),
        "aws_rds_instances" => Some(EV_INSTANCES),
        _ => None,
    }
}

/// Imports one scenario directory into `out/<scenario id>`; returns the case directory.
pub fn import(dir: &Path, out: &Path) -> Result<PathBuf, ImportError> {
    let scenario = load(dir)?;
    if scenario.instance().is_none() {
        return Err(field_err(
            &dir.join("alert.json"),
            "commonAnnotations.db_instance_identifier",
            "no RDS instance is named by the alert or scenario.yml",
        ));
    }
    let case_dir = out.join(&scenario.id);
    std::fs::create_dir_all(&case_dir).map_err(|e| file_err(&case_dir, e.to_string()))?;
    let write = |name: &str, text: String| {
        let p = case_dir.join(name);
        std::fs::write(&p, text).map_err(|e| file_err(&p, e.to_string()))
    };
    let title = text_of(scenario.alert.get("title")).unwrap_or_else(|| scenario.id.clone());
    let mut case = String::new();
    case.push_str(&format!(
        "id = {}\n",
        toml::Value::String(scenario.id.clone())
    ));
    case.push_str(&format!("title = {}\n", toml::Value::String(title)));
    case.push_str(&format!(
        "now = {}\n",
        toml::Value::String(rfc(scenario.now()))
    ));
    if let Some(d) = scenario
        .meta
        .get("scenario_difficulty")
        .and_then(Value::as_u64)
    {
        case.push_str(&format!("difficulty = {d}\n"));
    }
    case.push_str(&format!(
        "source = {}\n",
        toml::Value::String(format!(
            "imported from OpenSRE synthetic RDS scenario {}",
            scenario.id
        ))
    ));
    write("case.toml", case)?;
    let payload = serde_json::to_string_pretty(&scenario.alert_payload())
        .map_err(|e| file_err(dir, e.to_string()))?;
    write("alert.json", payload + "\n")?;
    let mut lines = String::new();
    for r in scenario.recordings() {
        let line = serde_json::to_string(&r).map_err(|e| file_err(dir, e.to_string()))?;
        lines.push_str(&line);
        lines.push('\n');
    }
    write("recordings.ndjson", lines)?;
    if let Some(expect) = scenario.expect(&dir.join("answer.yml"))? {
        write("expect.toml", expect)?;
    }
    Ok(case_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_kinds_fold_into_sitrep_categories() {
        assert_eq!(
            category("cpu_saturation"),
            Some(Category::ResourceExhaustion)
        );
        assert_eq!(category("healthy"), Some(Category::Healthy));
        assert_eq!(category("nonsense"), None);
    }

    #[test]
    fn a_malformed_series_names_file_and_field() {
        let v = json!({"metric_name": "CPUUtilization", "dimensions": [{"Name": "DBInstanceIdentifier", "Value": "db1"}], "timestamps": ["2026-01-01T00:00:00Z"], "values": ["high"]});
        let e = parse_series(Path::new("m.json"), "metric_data_results[0]", &v)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("m.json: metric_data_results[0].values[0]: expected a number"),
            "{e}"
        );
    }
}
