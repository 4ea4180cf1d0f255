//! AWS wire formats: the Query protocol's form parameters and its XML answers, turned into the
//! logical JSON responses the `aws` recordings hold.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

/// An XML answer that could not be read; the text says what was expected.
pub type WireError = String;

/// One page of a paged RDS answer: its items and the `Marker` of the next page.
pub type Page = (Vec<Value>, Option<String>);

/// Flattens a JSON value into Query-protocol parameters: objects become `A.B`, lists
/// `A.member.N` (1-based), booleans `true`/`false`, numbers as written.
pub fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&key(k), v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten(&key(&format!("member.{}", i + 1)), v, out);
            }
        }
        Value::Null => {}
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        Value::Bool(b) => out.push((prefix.to_string(), b.to_string())),
        Value::Number(n) => out.push((prefix.to_string(), n.to_string())),
    }
}

fn parse(xml: &str) -> Result<roxmltree::Document<'_>, WireError> {
    roxmltree::Document::parse(xml).map_err(|e| format!("malformed XML: {e}"))
}

fn children<'a, 'i>(
    node: roxmltree::Node<'a, 'i>,
    name: &'a str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> + 'a {
    node.children()
        .filter(move |n| n.is_element() && n.tag_name().name() == name)
}

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &'a str) -> Option<roxmltree::Node<'a, 'i>> {
    children(node, name).next()
}

fn child_text(node: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
    let text = child(node, name)?.text()?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The first element named `name` anywhere in the document.
fn find<'a, 'i>(doc: &'a roxmltree::Document<'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    doc.descendants()
        .find(|n| n.is_element() && n.tag_name().name() == name)
}

/// The texts of a list element's items (`<A><member>x</member></A>` or `<A><Item>x</Item></A>`).
fn list_texts(node: roxmltree::Node<'_, '_>) -> Vec<String> {
    node.children()
        .filter(|n| n.is_element())
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

/// An ISO 8601 timestamp as RFC 3339 in UTC; kept as written when it does not parse.
pub fn rfc3339(text: &str) -> String {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| {
            t.with_timezone(&Utc)
                .to_rfc3339_opts(SecondsFormat::AutoSi, true)
        })
        .unwrap_or_else(|_| text.trim().to_string())
}

/// A timestamp of a logical request (`StartTime`, `EndTime`).
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn number(text: &str) -> Option<Value> {
    let f: f64 = text.trim().parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    if let Ok(i) = text.trim().parse::<i64>() {
        return Some(json!(i));
    }
    serde_json::Number::from_f64(f).map(Value::Number)
}

fn boolean(text: &str) -> Option<Value> {
    match text.trim() {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        _ => None,
    }
}

/// An AWS error answer (`<ErrorResponse><Error><Code>…`): (code, message).
pub fn query_error(xml: &str) -> Option<(String, String)> {
    let doc = parse(xml).ok()?;
    let err = find(&doc, "Error")?;
    let code = child_text(err, "Code")?;
    let message = child_text(err, "Message").unwrap_or_default();
    Some((code, message))
}

/// The pagination token of a Query answer (`Marker` for RDS, `NextToken` for CloudWatch).
fn token(doc: &roxmltree::Document<'_>, name: &str) -> Option<String> {
    let result = doc
        .root_element()
        .children()
        .find(|n| n.is_element() && n.tag_name().name().ends_with("Result"))?;
    child_text(result, name)
}

const INSTANCE_TEXT: [&str; 10] = [
    "DBInstanceIdentifier",
    "DBInstanceClass",
    "Engine",
    "EngineVersion",
    "DBInstanceStatus",
    "StorageType",
    "AvailabilityZone",
    "SecondaryAvailabilityZone",
    "ReadReplicaSourceDBInstanceIdentifier",
    "DbiResourceId",
];
const INSTANCE_NUMBERS: [&str; 3] = ["AllocatedStorage", "MaxAllocatedStorage", "Iops"];
const INSTANCE_BOOLS: [&str; 2] = ["MultiAZ", "PerformanceInsightsEnabled"];

/// One page of `DescribeDBInstances`: the logical instances and the next `Marker`.
pub fn db_instances(xml: &str) -> Result<Page, WireError> {
    let doc = parse(xml)?;
    let list =
        find(&doc, "DBInstances").ok_or("no DBInstances in the DescribeDBInstances answer")?;
    let mut out = Vec::new();
    for inst in list.children().filter(|n| n.is_element()) {
        let mut m = Map::new();
        for k in INSTANCE_TEXT {
            if let Some(v) = child_text(inst, k) {
                m.insert(k.to_string(), Value::String(v));
            }
        }
        for k in INSTANCE_NUMBERS {
            if let Some(v) = child_text(inst, k).as_deref().and_then(number) {
                m.insert(k.to_string(), v);
            }
        }
        for k in INSTANCE_BOOLS {
            if let Some(v) = child_text(inst, k).as_deref().and_then(boolean) {
                m.insert(k.to_string(), v);
            }
        }
        let replicas = child(inst, "ReadReplicaDBInstanceIdentifiers")
            .map(list_texts)
            .unwrap_or_default();
        m.insert(
            "ReadReplicaDBInstanceIdentifiers".into(),
            Value::Array(replicas.into_iter().map(Value::String).collect()),
        );
        out.push(Value::Object(m));
    }
    Ok((out, token(&doc, "Marker")))
}

/// One page of `DescribeEvents`: the logical events and the next `Marker`.
pub fn events(xml: &str) -> Result<Page, WireError> {
    let doc = parse(xml)?;
    let list = find(&doc, "Events").ok_or("no Events in the DescribeEvents answer")?;
    let mut out = Vec::new();
    for ev in list.children().filter(|n| n.is_element()) {
        let mut m = Map::new();
        for k in ["SourceIdentifier", "SourceType", "Message", "SourceArn"] {
            if let Some(v) = child_text(ev, k) {
                m.insert(k.to_string(), Value::String(v));
            }
        }
        if let Some(d) = child_text(ev, "Date") {
            m.insert("Date".into(), Value::String(rfc3339(&d)));
        }
        let categories = child(ev, "EventCategories")
            .map(list_texts)
            .unwrap_or_default();
        m.insert(
            "EventCategories".into(),
            Value::Array(categories.into_iter().map(Value::String).collect()),
        );
        out.push(Value::Object(m));
    }
    Ok((out, token(&doc, "Marker")))
}

/// One CloudWatch result as read from one page.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricPage {
    pub id: String,
    pub label: Option<String>,
    pub status: Option<String>,
    pub points: Vec<(String, Value)>,
}

/// One page of `GetMetricData`: its results and the next `NextToken`.
pub fn metric_data(xml: &str) -> Result<(Vec<MetricPage>, Option<String>), WireError> {
    let doc = parse(xml)?;
    let list = find(&doc, "MetricDataResults")
        .ok_or("no MetricDataResults in the GetMetricData answer")?;
    let mut out = Vec::new();
    for r in list.children().filter(|n| n.is_element()) {
        let Some(id) = child_text(r, "Id") else {
            continue;
        };
        let stamps = child(r, "Timestamps").map(list_texts).unwrap_or_default();
        let values = child(r, "Values").map(list_texts).unwrap_or_default();
        if stamps.len() != values.len() {
            return Err(format!(
                "result {id}: {} timestamps but {} values",
                stamps.len(),
                values.len()
            ));
        }
        let mut points = Vec::new();
        for (t, v) in stamps.iter().zip(values.iter()) {
            let v = number(v).ok_or_else(|| format!("result {id}: value {v:?} is not a number"))?;
            points.push((rfc3339(t), v));
        }
        out.push(MetricPage {
            id,
            label: child_text(r, "Label"),
            status: child_text(r, "StatusCode"),
            points,
        });
    }
    Ok((out, token(&doc, "NextToken")))
}

/// Pages of `GetMetricData` merged into the logical answer: one result per Id, points in
/// ascending time order, the status of the last page.
pub fn merge_metric_pages(pages: Vec<MetricPage>) -> Value {
    let mut merged: Vec<MetricPage> = Vec::new();
    for p in pages {
        match merged.iter_mut().find(|m| m.id == p.id) {
            Some(m) => {
                m.points.extend(p.points);
                if p.status.is_some() {
                    m.status = p.status;
                }
                if m.label.is_none() {
                    m.label = p.label;
                }
            }
            None => merged.push(p),
        }
    }
    let results: Vec<Value> = merged
        .into_iter()
        .map(|mut m| {
            m.points.sort_by_key(|(t, _)| parse_time(t));
            m.points.dedup_by(|a, b| a.0 == b.0);
            let mut o = Map::new();
            o.insert("Id".into(), Value::String(m.id));
            if let Some(l) = m.label {
                o.insert("Label".into(), Value::String(l));
            }
            if let Some(s) = m.status {
                o.insert("StatusCode".into(), Value::String(s));
            }
            let (stamps, values): (Vec<Value>, Vec<Value>) = m
                .points
                .into_iter()
                .map(|(t, v)| (Value::String(t), v))
                .unzip();
            o.insert("Timestamps".into(), Value::Array(stamps));
            o.insert("Values".into(), Value::Array(values));
            Value::Object(o)
        })
        .collect();
    json!({ "MetricDataResults": results })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_read_with_their_types() {
        let xml = r#"<DescribeDBInstancesResponse xmlns="http://rds.amazonaws.com/doc/2014-10-31/">
  <DescribeDBInstancesResult>
    <DBInstances>
      <DBInstance>
        <DBInstanceIdentifier>orders-db</DBInstanceIdentifier>
        <DBInstanceClass>db.r6g.large</DBInstanceClass>
        <Engine>postgres</Engine>
        <DBInstanceStatus>available</DBInstanceStatus>
        <AllocatedStorage>100</AllocatedStorage>
        <MultiAZ>true</MultiAZ>
        <PerformanceInsightsEnabled>false</PerformanceInsightsEnabled>
        <ReadReplicaDBInstanceIdentifiers>
          <ReadReplicaDBInstanceIdentifier>orders-db-r1</ReadReplicaDBInstanceIdentifier>
        </ReadReplicaDBInstanceIdentifiers>
        <DbiResourceId>db-ABC</DbiResourceId>
      </DBInstance>
    </DBInstances>
    <Marker>next-page</Marker>
  </DescribeDBInstancesResult>
</DescribeDBInstancesResponse>"#;
        let (items, marker) = db_instances(xml).unwrap_or_default();
        assert_eq!(marker.as_deref(), Some("next-page"));
        assert_eq!(
            items,
            vec![json!({
                "DBInstanceIdentifier": "orders-db", "DBInstanceClass": "db.r6g.large",
                "Engine": "postgres", "DBInstanceStatus": "available", "AllocatedStorage": 100,
                "MultiAZ": true, "PerformanceInsightsEnabled": false,
                "ReadReplicaDBInstanceIdentifiers": ["orders-db-r1"], "DbiResourceId": "db-ABC"
            })]
        );
        assert!(db_instances("<html>").is_err());
        assert!(db_instances("<a/>").is_err());
    }

    #[test]
    fn errors_and_events_and_metrics_read() {
        let err = r#"<ErrorResponse><Error><Type>Sender</Type><Code>DBInstanceNotFound</Code><Message>DBInstance x not found.</Message></Error><RequestId>r</RequestId></ErrorResponse>"#;
        assert_eq!(
            query_error(err),
            Some((
                "DBInstanceNotFound".into(),
                "DBInstance x not found.".into()
            ))
        );
        let ev = r#"<DescribeEventsResponse><DescribeEventsResult><Events><Event><SourceIdentifier>db1</SourceIdentifier><SourceType>db-instance</SourceType><Message>Multi-AZ instance failover started.</Message><EventCategories><EventCategory>failover</EventCategory></EventCategories><Date>2026-11-20T10:00:00.123Z</Date></Event></Events></DescribeEventsResult></DescribeEventsResponse>"#;
        let (events, marker) = events(ev).unwrap_or_default();
        assert_eq!(marker, None);
        assert_eq!(events[0]["Date"], "2026-11-20T10:00:00.123Z");
        assert_eq!(events[0]["EventCategories"], json!(["failover"]));
        let md = r#"<GetMetricDataResponse><GetMetricDataResult><MetricDataResults><member><Id>m0</Id><Label>CPUUtilization</Label><StatusCode>Complete</StatusCode><Timestamps><member>2026-11-20T10:01:00Z</member><member>2026-11-20T10:00:00Z</member></Timestamps><Values><member>2.5</member><member>1</member></Values></member><member><Id>m1</Id><StatusCode>Complete</StatusCode><Timestamps/><Values/></member></MetricDataResults><NextToken>t</NextToken></GetMetricDataResult></GetMetricDataResponse>"#;
        let (pages, next) = metric_data(md).unwrap_or_default();
        assert_eq!(next.as_deref(), Some("t"));
        let merged = merge_metric_pages(pages);
        assert_eq!(
            merged,
            json!({"MetricDataResults": [
                {"Id": "m0", "Label": "CPUUtilization", "StatusCode": "Complete",
                 "Timestamps": ["2026-11-20T10:00:00Z", "2026-11-20T10:01:00Z"], "Values": [1, 2.5]},
                {"Id": "m1", "StatusCode": "Complete", "Timestamps": [], "Values": []}
            ]})
        );
    }

    #[test]
    fn bodies_flatten_into_query_parameters() {
        let mut out = Vec::new();
        flatten(
            "MetricDataQueries",
            &json!([{"Id": "m0", "MetricStat": {"Metric": {"Dimensions": [{"Name": "DBInstanceIdentifier", "Value": "x"}]}, "Period": 60}, "ReturnData": true}]),
            &mut out,
        );
        assert!(out.contains(&(
            "MetricDataQueries.member.1.MetricStat.Metric.Dimensions.member.1.Name".into(),
            "DBInstanceIdentifier".into()
        )));
        assert!(out.contains(&(
            "MetricDataQueries.member.1.MetricStat.Period".into(),
            "60".into()
        )));
        assert!(out.contains(&(
            "MetricDataQueries.member.1.ReturnData".into(),
            "true".into()
        )));
    }
}
