//! AWS: typed reads of RDS instances and events, CloudWatch metrics and Performance Insights,
//! every call a logical request of integration `aws` through the `Transport`.
//!
//! A request is `POST /{service}/{Action}`; the identifiers it is about go in the query (so a
//! replay matches on them), time bounds as `StartTime`/`EndTime` (RFC 3339, left out of
//! recordings), other parameters in a JSON body. Answers are JSON in AWS's own field names, lists
//! as arrays, timestamps RFC 3339 (Performance Insights keeps its epoch seconds). An AWS error is a
//! non-2xx answer `{"Code", "Message"}`. [`AwsBackend`] is the live side: it signs with SigV4 and
//! speaks each service's wire protocol.

pub mod backend;
pub mod credentials;
pub mod wire;

pub use backend::{AwsBackend, AwsSettings, NAME};

use super::error::{ErrorKind, IntegrationError};
use super::transport::{Body, Request, RequestBody, Transport};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;

// The facts these reads return are the model's own, so the analyzers take them as they are.
pub use crate::model::{MetricQuery, MetricSeries, PiKey, PiSeries, RdsEvent, RdsInstance};

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Sends a request and returns its JSON answer; an AWS error becomes an error with its code and
/// message.
async fn call(t: &dyn Transport, req: &Request) -> Result<Value, IntegrationError> {
    let resp = t.send(req).await?;
    if !resp.is_success() {
        let message = match &resp.body {
            Body::Json(v) => {
                let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
                match (text("Code"), text("Message").or_else(|| text("message"))) {
                    (Some(c), Some(m)) => format!("{c}: {m}"),
                    (Some(c), None) => c,
                    (None, Some(m)) => m,
                    (None, None) => v.to_string().chars().take(200).collect(),
                }
            }
            Body::Text(t) => t.lines().next().unwrap_or("").chars().take(200).collect(),
        };
        return Err(req.error(ErrorKind::Status {
            status: resp.status,
            message,
        }));
    }
    resp.json(req)
}

fn decode(req: &Request, what: String) -> IntegrationError {
    req.error(ErrorKind::Decode(what))
}

fn string(v: &Value, k: &str) -> Option<String> {
    match v.get(k)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn float(v: &Value, k: &str) -> Option<f64> {
    match v.get(k)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|f| f.is_finite())
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn list<'a>(req: &Request, v: &'a Value, k: &str) -> Result<&'a Vec<Value>, IntegrationError> {
    v.get(k)
        .and_then(Value::as_array)
        .ok_or_else(|| decode(req, format!("no {k} list in the answer")))
}

fn rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// An epoch-seconds timestamp (Performance Insights).
fn epoch(v: &Value) -> Option<DateTime<Utc>> {
    let secs = v.as_f64().filter(|f| f.is_finite())?;
    let whole = secs.floor();
    let nanos = ((secs - whole) * 1e9).round().clamp(0.0, 999_999_999.0) as u32;
    DateTime::from_timestamp(whole as i64, nanos)
}

fn dimensions(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `DescribeDBInstances`: one instance (`id`) or every instance of the account and region.
pub async fn describe_db_instances(
    t: &dyn Transport,
    id: Option<&str>,
) -> Result<Vec<RdsInstance>, IntegrationError> {
    let req = Request::new(NAME, "POST", "/rds/DescribeDBInstances")
        .query_opt("DBInstanceIdentifier", id);
    let v = call(t, &req).await?;
    Ok(list(&req, &v, "DBInstances")?
        .iter()
        .filter_map(|i| {
            Some(RdsInstance {
                id: string(i, "DBInstanceIdentifier")?,
                class: string(i, "DBInstanceClass"),
                engine: string(i, "Engine"),
                engine_version: string(i, "EngineVersion"),
                status: string(i, "DBInstanceStatus"),
                allocated_storage_gib: float(i, "AllocatedStorage"),
                max_allocated_storage_gib: float(i, "MaxAllocatedStorage"),
                storage_type: string(i, "StorageType"),
                iops: float(i, "Iops"),
                multi_az: i.get("MultiAZ").and_then(Value::as_bool),
                availability_zone: string(i, "AvailabilityZone"),
                secondary_availability_zone: string(i, "SecondaryAvailabilityZone"),
                replicas: strings(i, "ReadReplicaDBInstanceIdentifiers"),
                replica_source: string(i, "ReadReplicaSourceDBInstanceIdentifier"),
                resource_id: string(i, "DbiResourceId"),
                performance_insights: i.get("PerformanceInsightsEnabled").and_then(Value::as_bool),
            })
        })
        .collect())
}

/// `DescribeEvents` of one DB instance between `start` and `end`, oldest first.
pub async fn describe_events(
    t: &dyn Transport,
    id: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<RdsEvent>, IntegrationError> {
    let req = Request::new(NAME, "POST", "/rds/DescribeEvents")
        .query("SourceIdentifier", id)
        .query("SourceType", "db-instance")
        .query("StartTime", time(start))
        .query("EndTime", time(end));
    let v = call(t, &req).await?;
    let mut out: Vec<RdsEvent> = list(&req, &v, "Events")?
        .iter()
        .filter_map(|e| {
            Some(RdsEvent {
                at: rfc3339(&string(e, "Date")?)?,
                source: string(e, "SourceIdentifier").unwrap_or_else(|| id.to_string()),
                source_type: string(e, "SourceType").unwrap_or_default(),
                message: string(e, "Message").unwrap_or_default(),
                categories: strings(e, "EventCategories"),
            })
        })
        .collect();
    out.sort_by_key(|e| e.at);
    Ok(out)
}

/// CloudWatch `GetMetricData` for `AWS/RDS` metrics; `about` is the instance the call is about
/// (queries may cover its replicas too). One series per query, in the queries' order (Ids
/// `m0..mN`); a series CloudWatch has no points for stays empty.
pub async fn get_metric_data(
    t: &dyn Transport,
    about: &str,
    queries: &[MetricQuery],
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    period_secs: u32,
) -> Result<Vec<MetricSeries>, IntegrationError> {
    let body: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            json!({
                "Id": format!("m{i}"),
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/RDS",
                        "MetricName": q.metric,
                        "Dimensions": [{"Name": "DBInstanceIdentifier", "Value": q.instance}],
                    },
                    "Period": period_secs.max(1),
                    "Stat": q.stat,
                },
                "ReturnData": true,
            })
        })
        .collect();
    let req = Request::new(NAME, "POST", "/monitoring/GetMetricData")
        .query("DBInstanceIdentifier", about)
        .query("StartTime", time(start))
        .query("EndTime", time(end))
        .body(RequestBody::Json(json!({ "MetricDataQueries": body })));
    let v = call(t, &req).await?;
    let results = list(&req, &v, "MetricDataResults")?;
    let mut out = Vec::with_capacity(queries.len());
    for (i, q) in queries.iter().enumerate() {
        let id = format!("m{i}");
        let found = results
            .iter()
            .find(|r| r.get("Id").and_then(Value::as_str) == Some(id.as_str()));
        let mut points = Vec::new();
        if let Some(r) = found {
            let empty = Vec::new();
            let stamps = r
                .get("Timestamps")
                .and_then(Value::as_array)
                .unwrap_or(&empty);
            let values = r.get("Values").and_then(Value::as_array).unwrap_or(&empty);
            if stamps.len() != values.len() {
                return Err(decode(
                    &req,
                    format!("{id}: {} timestamps, {} values", stamps.len(), values.len()),
                ));
            }
            for (ts, val) in stamps.iter().zip(values) {
                let at = ts
                    .as_str()
                    .and_then(rfc3339)
                    .ok_or_else(|| decode(&req, format!("{id}: bad timestamp {ts}")))?;
                let value = val
                    .as_f64()
                    .filter(|f| f.is_finite())
                    .ok_or_else(|| decode(&req, format!("{id}: bad value {val}")))?;
                points.push((at, value));
            }
            points.sort_by_key(|p| p.0);
        }
        out.push(MetricSeries {
            instance: q.instance.clone(),
            metric: q.metric.clone(),
            stat: q.stat.clone(),
            complete: found
                .and_then(|r| r.get("StatusCode"))
                .and_then(Value::as_str)
                == Some("Complete"),
            points,
        });
    }
    Ok(out)
}

/// Performance Insights `GetResourceMetrics` of `db.load.avg` (average active sessions) for the
/// instance whose `DbiResourceId` is `resource_id`: the total and, with `group_by` (e.g.
/// `db.wait_event`), one series per group.
pub async fn pi_db_load(
    t: &dyn Transport,
    resource_id: &str,
    group_by: Option<&str>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    period_secs: u32,
) -> Result<Vec<PiSeries>, IntegrationError> {
    let mut query = json!({"Metric": "db.load.avg"});
    if let Some(g) = group_by {
        query["GroupBy"] = json!({"Group": g, "Limit": 10});
    }
    let req = Request::new(NAME, "POST", "/pi/GetResourceMetrics")
        .query("Identifier", resource_id)
        .query_opt("Group", group_by)
        .query("StartTime", time(start))
        .query("EndTime", time(end))
        .body(RequestBody::Json(json!({
            "ServiceType": "RDS",
            "MetricQueries": [query],
            "PeriodInSeconds": period_secs.max(1),
        })));
    let v = call(t, &req).await?;
    let metrics = list(&req, &v, "MetricList")?;
    let mut out = Vec::new();
    for m in metrics {
        let key = m.get("Key");
        let mut points: Vec<(DateTime<Utc>, f64)> = m
            .get("DataPoints")
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| {
                        // A point without a value is a gap, never a zero.
                        let v = p.get("Value")?.as_f64().filter(|f| f.is_finite())?;
                        Some((epoch(p.get("Timestamp")?)?, v))
                    })
                    .collect()
            })
            .unwrap_or_default();
        points.sort_by_key(|p| p.0);
        out.push(PiSeries {
            dimensions: dimensions(key.and_then(|k| k.get("Dimensions"))),
            points,
        });
    }
    Ok(out)
}

/// Performance Insights `DescribeDimensionKeys`: the top keys of `group` (`db.sql`,
/// `db.wait_event`, ...) by `db.load.avg`, each split by `partition_by` when given.
pub async fn pi_top_keys(
    t: &dyn Transport,
    resource_id: &str,
    group: &str,
    partition_by: Option<&str>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<PiKey>, IntegrationError> {
    let mut body = json!({
        "ServiceType": "RDS",
        "Metric": "db.load.avg",
        "GroupBy": {"Group": group, "Limit": 10},
        "MaxResults": 10,
    });
    if let Some(p) = partition_by {
        body["PartitionBy"] = json!({"Group": p});
    }
    let req = Request::new(NAME, "POST", "/pi/DescribeDimensionKeys")
        .query("Identifier", resource_id)
        .query("Group", group)
        .query("StartTime", time(start))
        .query("EndTime", time(end))
        .body(RequestBody::Json(body));
    let v = call(t, &req).await?;
    let keys = list(&req, &v, "Keys")?;
    let partition_keys: Vec<BTreeMap<String, String>> = v
        .get("PartitionKeys")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|p| dimensions(p.get("Dimensions"))).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for k in keys {
        let partitions = k
            .get("Partitions")
            .and_then(Value::as_array)
            .map(|ps| {
                partition_keys
                    .iter()
                    .zip(ps)
                    .filter_map(|(d, p)| Some((d.clone(), p.as_f64().filter(|f| f.is_finite())?)))
                    .collect()
            })
            .unwrap_or_default();
        out.push(PiKey {
            dimensions: dimensions(k.get("Dimensions")),
            total: float(k, "Total").unwrap_or(0.0),
            partitions,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::transport::{Recording, ReplayTransport};

    fn rec(path: &str, query: Value, status: u16, body: Value) -> Recording {
        Recording {
            integration: NAME.into(),
            method: "POST".into(),
            path: path.into(),
            query: serde_json::from_value(query).unwrap_or_default(),
            status,
            body: Body::Json(body),
            latency_ms: None,
        }
    }

    fn at(s: &str) -> DateTime<Utc> {
        rfc3339(s).unwrap_or_default()
    }

    #[test]
    fn config_takes_a_region_and_references_never_secrets() {
        let parse = |text: &str| {
            crate::config::Config::parse(
                &format!("[integrations.aws]\n{text}\n"),
                std::path::Path::new("config.toml"),
            )
            .map_err(|e| e.to_string())
        };
        let c = parse(
            "region = \"eu-west-1\"\nendpoint_url = \"http://127.0.0.1:5000\"\naccess_key_id = \"AKIAEXAMPLE\"\nsecret_access_key = \"op://ops/aws/secret\"\ntimeout_secs = 5",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let a = c.integrations.aws.clone().unwrap_or_else(|| panic!("aws"));
        assert_eq!(a.secret_access_key.as_deref(), Some("op://ops/aws/secret"));
        assert!(c.integrations.configured().contains(&"aws"));
        assert!(parse("region = \"us-east-1\"\nprofile = \"oncall\"").is_ok());
        for (text, key) in [
            (
                "region = \"eu-west-1\"\naccess_key_id = \"AKIAEXAMPLE\"\nsecret_access_key = \"wJalrXUtnFEMIK7MDENGbPxRfiCY\"",
                "integrations.aws.secret_access_key",
            ),
            (
                "region = \"eu-west-1\"\nsecret_access_key = \"env:AWS_SECRET\"",
                "integrations.aws",
            ),
            ("region = \"Europe West\"", "integrations.aws.region"),
            (
                "region = \"eu-west-1\"\nendpoint_url = \"localhost:5000\"",
                "integrations.aws.endpoint_url",
            ),
            (
                "region = \"eu-west-1\"\ntimeout_secs = 0",
                "integrations.aws.timeout_secs",
            ),
        ] {
            let err = parse(text).err().unwrap_or_default();
            assert!(err.contains(key), "{text}: {err}");
            assert!(!err.contains("wJalr"), "{err}");
        }
        assert!(parse("region = \"eu-west-1\"\nsecret_key = \"x\"").is_err());
    }

    #[tokio::test]
    async fn typed_reads_parse_the_logical_answers() {
        let t = ReplayTransport::new(vec![
            rec(
                "/rds/DescribeDBInstances",
                json!({"DBInstanceIdentifier": "orders"}),
                200,
                json!({"DBInstances": [{"DBInstanceIdentifier": "orders", "AllocatedStorage": 100,
                    "MultiAZ": true, "ReadReplicaDBInstanceIdentifiers": ["orders-r1"],
                    "DbiResourceId": "db-X", "PerformanceInsightsEnabled": true}]}),
            ),
            rec(
                "/rds/DescribeDBInstances",
                json!({"DBInstanceIdentifier": "gone"}),
                404,
                json!({"Code": "DBInstanceNotFound", "Message": "DBInstance gone not found."}),
            ),
            rec(
                "/rds/DescribeDBInstances",
                json!({"DBInstanceIdentifier": "broken"}),
                200,
                json!({"DBInstance": 3}),
            ),
            rec(
                "/monitoring/GetMetricData",
                json!({"DBInstanceIdentifier": "orders"}),
                200,
                json!({"MetricDataResults": [
                    {"Id": "m1", "StatusCode": "Complete", "Timestamps": [], "Values": []},
                    {"Id": "m0", "StatusCode": "PartialData", "Label": "CPUUtilization",
                     "Timestamps": ["2026-11-20T10:01:00Z", "2026-11-20T10:00:00Z"], "Values": [80.5, 12]}]}),
            ),
            rec(
                "/pi/DescribeDimensionKeys",
                json!({"Identifier": "db-X", "Group": "db.sql"}),
                200,
                json!({"PartitionKeys": [{"Dimensions": {"db.wait_event.name": "CPU"}},
                    {"Dimensions": {"db.wait_event.name": "IO:DataFileRead"}}],
                    "Keys": [{"Dimensions": {"db.sql.statement": "SELECT 1"}, "Total": 2.5, "Partitions": [2.0, 0.5]}]}),
            ),
            rec(
                "/pi/GetResourceMetrics",
                json!({"Identifier": "db-X"}),
                200,
                json!({"MetricList": [{"Key": {"Metric": "db.load.avg"},
                    "DataPoints": [{"Timestamp": 1_795_600_860.0, "Value": 3.0}, {"Timestamp": 1_795_600_800.0}]}]}),
            ),
        ]);
        let got = describe_db_instances(&t, Some("orders"))
            .await
            .unwrap_or_default();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].allocated_storage_gib, Some(100.0));
        assert_eq!(got[0].multi_az, Some(true));
        assert_eq!(got[0].replicas, vec!["orders-r1"]);
        assert_eq!(got[0].max_allocated_storage_gib, None);
        let err = describe_db_instances(&t, Some("gone")).await.err();
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("DBInstanceNotFound: DBInstance gone not found."),
            "{text}"
        );
        let err = describe_db_instances(&t, Some("broken")).await.err();
        assert!(matches!(err.map(|e| e.kind), Some(ErrorKind::Decode(_))));

        let queries = [
            MetricQuery {
                instance: "orders".into(),
                metric: "CPUUtilization".into(),
                stat: "Average".into(),
            },
            MetricQuery {
                instance: "orders-r1".into(),
                metric: "CPUUtilization".into(),
                stat: "Average".into(),
            },
            MetricQuery {
                instance: "orders".into(),
                metric: "FreeStorageSpace".into(),
                stat: "Minimum".into(),
            },
        ];
        let start = at("2026-11-20T09:00:00Z");
        let end = at("2026-11-20T11:00:00Z");
        let series = get_metric_data(&t, "orders", &queries, start, end, 60)
            .await
            .unwrap_or_default();
        assert_eq!(series.len(), 3);
        assert_eq!(
            series[0].points,
            vec![
                (at("2026-11-20T10:00:00Z"), 12.0),
                (at("2026-11-20T10:01:00Z"), 80.5)
            ]
        );
        assert!(!series[0].complete);
        assert!(series[1].complete && series[1].points.is_empty());
        assert!(!series[2].complete && series[2].points.is_empty());

        let keys = pi_top_keys(&t, "db-X", "db.sql", Some("db.wait_event"), start, end)
            .await
            .unwrap_or_default();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].total, 2.5);
        assert_eq!(keys[0].partitions.len(), 2);
        assert_eq!(keys[0].partitions[1].1, 0.5);
        let load = pi_db_load(&t, "db-X", None, start, end, 60)
            .await
            .unwrap_or_default();
        assert_eq!(load.len(), 1);
        assert!(load[0].dimensions.is_empty());
        assert_eq!(load[0].points.len(), 1, "a point without a value is a gap");
    }
}
