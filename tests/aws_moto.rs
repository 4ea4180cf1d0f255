//! The AWS client through the real signing path: RDS and CloudWatch against moto's server, a
//! loopback Performance Insights fake that checks the wire, a closed port, record and replay, and
//! a canary secret key that must appear nowhere.

use axum::Json;
use axum::http::HeaderMap;
use chrono::{DateTime, Duration as ChronoDuration, DurationRound, Utc};
use serde_json::{Value, json};
use sitrep::integrations::ErrorKind;
use sitrep::integrations::aws::{self, AwsBackend, AwsSettings, MetricQuery};
use sitrep::integrations::transport::{
    LiveTransport, RecordingTransport, ReplayTransport, Transport, parse_recordings,
};
use sitrep::secrets::{Decision, Keyring};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

/// The secret key every test signs with: it must appear in no recording and no error.
#[path = "support/moto.rs"]
mod moto_server;

use moto_server::{free_port, start as moto};

const CANARY: &str = "canary-aws-secret-Zq8rT2vX9wL4mN7pK3";
const KEY_ID: &str = "AKIASITREPTEST0001";
const SECRET_REF: &str = "env:SITREP_AWS_TEST_SECRET";
const KEY_REF: &str = "env:SITREP_AWS_TEST_KEY_ID";

fn init_env() {
    static ONCE: Once = Once::new();
    // Set once, before any test of this binary reads the environment.
    ONCE.call_once(|| unsafe {
        std::env::set_var("SITREP_AWS_TEST_SECRET", CANARY);
        std::env::set_var("SITREP_AWS_TEST_KEY_ID", KEY_ID);
    });
}

/// A live transport whose AWS calls go to `url`, signed with the canary key read by reference
/// (approved, as the operator would).
fn live(url: &str, timeout: Duration) -> Arc<LiveTransport> {
    live_with(url, timeout, KEY_REF, SECRET_REF)
}

/// A live transport signing with this key ID (written out or a reference) and secret reference.
fn live_with(url: &str, timeout: Duration, key_id: &str, secret: &str) -> Arc<LiveTransport> {
    init_env();
    let keyring = Arc::new(Keyring::new());
    let mut settings = AwsSettings::new("eu-west-1");
    settings.endpoint_url = Some(url.to_string());
    settings.access_key_id = Some(key_id.to_string());
    settings.secret_access_key = Some(secret.to_string());
    settings.timeout = timeout;
    let backend =
        AwsBackend::new(settings, keyring.clone()).unwrap_or_else(|e| panic!("settings: {e}"));
    while let Some(r) = keyring.pending_for("aws") {
        keyring.decide(&r, Decision::Approved);
    }
    let t = LiveTransport::new()
        .unwrap_or_else(|e| panic!("{e}"))
        .with_keyring(keyring)
        .with_aws(backend);
    assert!(t.has("aws"));
    Arc::new(t)
}

/// A signed Query-protocol call moto must accept (setup only: not a transport path).
async fn setup_call(
    backend: &AwsBackend,
    service: &str,
    version: &str,
    params: &[(&str, &str)],
) -> String {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (status, body) = backend
        .signed_query(service, version, &params)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!((200..300).contains(&status), "{status}: {body}");
    body
}

/// The text of the first `<tag>` of an XML answer.
fn xml_text(xml: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    xml.split_once(&open)
        .and_then(|(_, rest)| rest.split_once(&format!("</{tag}>")))
        .map(|(v, _)| v.to_string())
        .unwrap_or_else(|| panic!("no {tag} in {xml}"))
}

fn setup_backend(url: &str) -> AwsBackend {
    init_env();
    let keyring = Arc::new(Keyring::new());
    let mut settings = AwsSettings::new("eu-west-1");
    settings.endpoint_url = Some(url.to_string());
    settings.access_key_id = Some(KEY_ID.to_string());
    settings.secret_access_key = Some(SECRET_REF.to_string());
    let backend = AwsBackend::new(settings, keyring.clone()).unwrap_or_else(|e| panic!("{e}"));
    keyring.decide(SECRET_REF, Decision::Approved);
    backend
}

fn cpu_and_connections(instance: &str) -> Vec<MetricQuery> {
    vec![
        MetricQuery {
            instance: instance.into(),
            metric: "CPUUtilization".into(),
            stat: "Average".into(),
        },
        MetricQuery {
            instance: instance.into(),
            metric: "DatabaseConnections".into(),
            stat: "Maximum".into(),
        },
        MetricQuery {
            instance: instance.into(),
            metric: "FreeStorageSpace".into(),
            stat: "Minimum".into(),
        },
    ]
}

fn recorded_text(rec: &RecordingTransport) -> String {
    std::fs::read_to_string(rec.path()).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_clean(text: &str) {
    for bad in [
        CANARY,
        "AWS4-HMAC-SHA256",
        "Signature=",
        "X-Amz-Date",
        "x-amz-date",
        "\"StartTime\"",
        "\"EndTime\"",
        KEY_ID,
    ] {
        assert!(!text.contains(bad), "{bad:?} leaked into: {text}");
    }
}

#[tokio::test]
async fn rds_and_cloudwatch_through_moto_record_and_replay() {
    let Some(moto) = moto() else { return };
    let setup = setup_backend(&moto.url);
    // An IAM user whose key pair the reads sign with once moto checks every signature. (moto
    // names CloudWatch's actions by the signing name, `monitoring:`.)
    const IAM: &str = "2010-05-08";
    setup_call(
        &setup,
        "iam",
        IAM,
        &[("Action", "CreateUser"), ("UserName", "sitrep")],
    )
    .await;
    let created = setup_call(
        &setup,
        "iam",
        IAM,
        &[("Action", "CreateAccessKey"), ("UserName", "sitrep")],
    )
    .await;
    let (moto_key_id, moto_secret) = (
        xml_text(&created, "AccessKeyId"),
        xml_text(&created, "SecretAccessKey"),
    );
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["rds:Describe*","cloudwatch:GetMetricData","monitoring:GetMetricData"],"Resource":"*"}]}"#;
    setup_call(
        &setup,
        "iam",
        IAM,
        &[
            ("Action", "PutUserPolicy"),
            ("UserName", "sitrep"),
            ("PolicyName", "read"),
            ("PolicyDocument", policy),
        ],
    )
    .await;
    setup_call(
        &setup,
        "rds",
        "2014-10-31",
        &[
            ("Action", "CreateDBInstance"),
            ("DBInstanceIdentifier", "orders-db"),
            ("DBInstanceClass", "db.r6g.large"),
            ("Engine", "postgres"),
            ("EngineVersion", "16.3"),
            ("AllocatedStorage", "100"),
            ("MaxAllocatedStorage", "500"),
            ("StorageType", "io1"),
            ("Iops", "3000"),
            ("MultiAZ", "true"),
            ("MasterUsername", "admin"),
            ("MasterUserPassword", "not-a-real-password-1"),
        ],
    )
    .await;
    setup_call(
        &setup,
        "rds",
        "2014-10-31",
        &[
            ("Action", "CreateDBInstanceReadReplica"),
            ("DBInstanceIdentifier", "orders-db-r1"),
            ("SourceDBInstanceIdentifier", "orders-db"),
        ],
    )
    .await;
    let now = Utc::now()
        .duration_trunc(ChronoDuration::minutes(1))
        .unwrap_or_else(|e| panic!("{e}"));
    let start = now - ChronoDuration::minutes(30);
    let end = now;
    // CPU at three minutes, connections at two; nothing for FreeStorageSpace.
    let put = [
        ("CPUUtilization", 5, "12.5"),
        ("CPUUtilization", 6, "47"),
        ("CPUUtilization", 7, "93.25"),
        ("DatabaseConnections", 5, "40"),
        ("DatabaseConnections", 7, "180"),
    ];
    let mut params: Vec<(String, String)> = vec![
        ("Action".into(), "PutMetricData".into()),
        ("Namespace".into(), "AWS/RDS".into()),
    ];
    for (i, (metric, minute, value)) in put.iter().enumerate() {
        let p = format!("MetricData.member.{}", i + 1);
        let at = (start + ChronoDuration::minutes(*minute)).to_rfc3339();
        params.push((format!("{p}.MetricName"), metric.to_string()));
        params.push((
            format!("{p}.Dimensions.member.1.Name"),
            "DBInstanceIdentifier".into(),
        ));
        params.push((format!("{p}.Dimensions.member.1.Value"), "orders-db".into()));
        params.push((format!("{p}.Timestamp"), at));
        params.push((format!("{p}.Value"), value.to_string()));
    }
    let refs: Vec<(&str, &str)> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    setup_call(&setup, "monitoring", "2010-08-01", &refs).await;

    // From here on moto checks every request's signature against the user's secret key.
    let reset = reqwest::Client::new()
        .post(format!("{}/moto-api/reset-auth", moto.url))
        .body("0")
        .send()
        .await
        .map(|r| r.status().is_success());
    assert!(matches!(reset, Ok(true)), "{reset:?}");
    // Set while no other test of this binary reads it.
    unsafe { std::env::set_var("SITREP_AWS_TEST_MOTO_SECRET", &moto_secret) };
    let forged = live_with(&moto.url, Duration::from_secs(20), &moto_key_id, SECRET_REF);
    let refused = aws::describe_db_instances(forged.as_ref(), None)
        .await
        .err()
        .unwrap_or_else(|| panic!("a wrong secret key must be refused"));
    assert!(
        refused.to_string().contains("SignatureDoesNotMatch"),
        "{refused}"
    );
    assert!(!refused.to_string().contains(CANARY), "{refused}");
    let live = live_with(
        &moto.url,
        Duration::from_secs(20),
        &moto_key_id,
        "env:SITREP_AWS_TEST_MOTO_SECRET",
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let rec = RecordingTransport::new(live.clone(), dir.path())
        .unwrap_or_else(|e| panic!("{e}"))
        .with_redactor(live.redactor().clone());

    let instances = aws::describe_db_instances(&rec, Some("orders-db"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(instances.len(), 1, "{instances:?}");
    let db = &instances[0];
    assert_eq!(db.id, "orders-db");
    assert_eq!(db.class.as_deref(), Some("db.r6g.large"));
    assert_eq!(db.engine.as_deref(), Some("postgres"));
    assert_eq!(db.allocated_storage_gib, Some(100.0));
    assert_eq!(db.multi_az, Some(true));
    assert_eq!(db.replicas, vec!["orders-db-r1".to_string()]);
    assert!(
        db.resource_id
            .as_deref()
            .is_some_and(|r| r.starts_with("db-")),
        "{db:?}"
    );
    let all = aws::describe_db_instances(&rec, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let replica = all.iter().find(|i| i.id == "orders-db-r1");
    assert_eq!(
        replica.and_then(|r| r.replica_source.as_deref()),
        Some("orders-db"),
        "{all:?}"
    );

    let missing = aws::describe_db_instances(&rec, Some("no-such-db")).await;
    let err = missing
        .err()
        .unwrap_or_else(|| panic!("a missing instance is an error"));
    assert!(
        matches!(&err.kind, ErrorKind::Status { status: 404, message } if message.starts_with("DBInstanceNotFound")),
        "{err}"
    );
    assert!(!err.to_string().contains(CANARY));

    let events = aws::describe_events(&rec, "orders-db", start, end + ChronoDuration::hours(1))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!events.is_empty(), "moto records the creation");
    assert!(events.iter().all(|e| e.source == "orders-db"), "{events:?}");

    let queries = cpu_and_connections("orders-db");
    let series = aws::get_metric_data(&rec, "orders-db", &queries, start, end, 60)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(series.len(), 3);
    let at = |m: i64| start + ChronoDuration::minutes(m);
    assert_eq!(series[0].metric, "CPUUtilization");
    assert_eq!(
        series[0].points,
        vec![(at(5), 12.5), (at(6), 47.0), (at(7), 93.25)]
    );
    assert_eq!(series[1].points, vec![(at(5), 40.0), (at(7), 180.0)]);
    assert!(
        series[2].points.is_empty(),
        "a metric without data stays empty"
    );

    // The recording holds the logical exchanges, and nothing of the signing or the clock.
    let text = recorded_text(&rec);
    assert_clean(&text);
    assert!(
        !text.contains(&moto_secret) && !text.contains(&moto_key_id),
        "{text}"
    );
    let recordings = parse_recordings("recordings.ndjson", &text).unwrap_or_else(|e| panic!("{e}"));
    assert!(recordings.iter().all(|r| r.integration == "aws"));
    assert!(
        recordings
            .iter()
            .any(|r| r.path == "/monitoring/GetMetricData"
                && r.query.get("DBInstanceIdentifier") == Some(&json!("orders-db"))),
        "{text}"
    );

    // A replay an hour later answers the same typed results.
    let replay = ReplayTransport::new(recordings);
    let shift = ChronoDuration::hours(1);
    let again = aws::describe_db_instances(&replay, Some("orders-db"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&again, &instances);
    let again = aws::get_metric_data(
        &replay,
        "orders-db",
        &queries,
        start + shift,
        end + shift,
        60,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, series);
    let again_events = aws::describe_events(&replay, "orders-db", start + shift, end + shift).await;
    assert_eq!(again_events.ok(), Some(events));
    let gone = aws::describe_db_instances(&replay, Some("no-such-db")).await;
    assert!(gone.err().is_some_and(|e| e.status() == Some(404)));
    drop(moto);
}

/// What the Performance Insights fake saw.
#[derive(Default)]
struct Seen {
    bodies: Vec<(String, Value)>,
    /// Each request's `Authorization` and `X-Amz-Security-Token`.
    auth: Vec<(String, String)>,
}

async fn pi_fake(seen: Arc<Mutex<Seen>>) -> (String, tokio::task::JoinHandle<()>) {
    let handler = move |headers: HeaderMap, body: String| {
        let seen = seen.clone();
        async move {
            let h = |k: &str| {
                headers
                    .get(k)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string()
            };
            let bad = |m: String| {
                (
                    axum::http::StatusCode::BAD_REQUEST,
                    Json(json!({"__type": "InvalidArgumentException", "message": m})),
                )
            };
            if h("content-type") != "application/x-amz-json-1.1" {
                return bad(format!("content type {}", h("content-type")));
            }
            let auth = h("authorization");
            if !(auth.starts_with("AWS4-HMAC-SHA256 Credential=")
                && auth.contains("/eu-west-1/pi/aws4_request")
                && auth.contains("Signature="))
            {
                return bad(format!("not signed for pi: {auth}"));
            }
            if h("x-amz-date").is_empty() {
                return bad("no x-amz-date".into());
            }
            let Ok(req) = serde_json::from_str::<Value>(&body) else {
                return bad("not JSON".into());
            };
            let target = h("x-amz-target");
            // The session token when one is sent, else the canary secret key.
            let echo = match h("x-amz-security-token") {
                t if t.is_empty() => CANARY.to_string(),
                t => t,
            };
            if let Ok(mut s) = seen.lock() {
                s.bodies.push((target.clone(), req.clone()));
                s.auth.push((auth.clone(), h("x-amz-security-token")));
            }
            if req["Identifier"] == "db-unknown" {
                return (
                    axum::http::StatusCode::NOT_FOUND,
                    Json(
                        json!({"__type": "NotAuthorizedException", "Message": "no such resource"}),
                    ),
                );
            }
            let t0 = req["StartTime"].as_f64().unwrap_or(0.0);
            let answer = match target.as_str() {
                "PerformanceInsightsv20180227.GetResourceMetrics" => json!({
                    "AlignedStartTime": t0, "AlignedEndTime": t0 + 180.0,
                    "Identifier": req["Identifier"],
                    "MetricList": [
                        {"Key": {"Metric": "db.load.avg"},
                         "DataPoints": [{"Timestamp": t0 + 60.0, "Value": 4.5}, {"Timestamp": t0, "Value": 1.25}, {"Timestamp": t0 + 120.0}]},
                        {"Key": {"Metric": "db.load.avg", "Dimensions": {"db.wait_event.name": "IO:DataFileRead", "db.wait_event.type": "IO"}},
                         "DataPoints": [{"Timestamp": t0, "Value": 0.75}]}
                    ]
                }),
                "PerformanceInsightsv20180227.DescribeDimensionKeys" => json!({
                    "AlignedStartTime": t0, "AlignedEndTime": t0 + 180.0,
                    "PartitionKeys": [
                        {"Dimensions": {"db.wait_event.name": "CPU"}},
                        {"Dimensions": {"db.wait_event.name": "Lock:transactionid"}}
                    ],
                    "Keys": [
                        {"Dimensions": {"db.sql.statement": "UPDATE accounts SET balance = balance - $1 WHERE id = $2", "db.sql.id": "A1"},
                         "Total": 3.5, "Partitions": [0.5, 3.0]},
                        // An answer echoing the secret key: it must come back masked.
                        {"Dimensions": {"db.sql.statement": format!("SELECT '{echo}'"), "db.sql.id": "B2"},
                         "Total": 0.25, "Partitions": [0.25, 0.0]}
                    ]
                }),
                other => return bad(format!("unknown target {other}")),
            };
            (axum::http::StatusCode::OK, Json(answer))
        }
    };
    let app = axum::Router::new().route("/", axum::routing::post(handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let url = format!(
        "http://{}",
        listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

#[tokio::test]
async fn performance_insights_is_signed_json_and_parses() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (url, server) = pi_fake(seen.clone()).await;
    let live = live(&url, Duration::from_secs(10));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let rec = RecordingTransport::new(live.clone(), dir.path())
        .unwrap_or_else(|e| panic!("{e}"))
        .with_redactor(live.redactor().clone());
    let start: DateTime<Utc> = "2026-11-20T10:00:00Z".parse().unwrap_or_default();
    let end = start + ChronoDuration::hours(1);

    let load = aws::pi_db_load(&rec, "db-ORDERS", Some("db.wait_event"), start, end, 60)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(load.len(), 2);
    assert!(load[0].dimensions.is_empty(), "the total comes first");
    let s = |secs: i64| start + ChronoDuration::seconds(secs);
    assert_eq!(
        load[0].points,
        vec![(s(0), 1.25), (s(60), 4.5)],
        "a gap is no zero"
    );
    assert_eq!(
        load[1]
            .dimensions
            .get("db.wait_event.name")
            .map(String::as_str),
        Some("IO:DataFileRead")
    );

    let keys = aws::pi_top_keys(
        &rec,
        "db-ORDERS",
        "db.sql",
        Some("db.wait_event"),
        start,
        end,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0].total, 3.5);
    assert_eq!(
        keys[0].partitions,
        vec![
            (
                [("db.wait_event.name".to_string(), "CPU".to_string())].into(),
                0.5
            ),
            (
                [(
                    "db.wait_event.name".to_string(),
                    "Lock:transactionid".to_string()
                )]
                .into(),
                3.0
            ),
        ]
    );
    let echoed = keys[1]
        .dimensions
        .get("db.sql.statement")
        .cloned()
        .unwrap_or_default();
    assert!(
        !echoed.contains(CANARY),
        "the secret key is masked: {echoed}"
    );

    let err = aws::pi_top_keys(&rec, "db-unknown", "db.sql", None, start, end)
        .await
        .err()
        .unwrap_or_else(|| panic!("an unknown resource is an error"));
    assert_eq!(err.status(), Some(404));
    assert!(err.to_string().contains("NotAuthorizedException"), "{err}");

    // The wire: the identifier, epoch-second bounds and the documented request fields.
    let bodies = seen.lock().map(|s| s.bodies.clone()).unwrap_or_default();
    let (target, body) = &bodies[0];
    assert_eq!(target, "PerformanceInsightsv20180227.GetResourceMetrics");
    assert_eq!(body["Identifier"], "db-ORDERS");
    assert_eq!(body["ServiceType"], "RDS");
    assert_eq!(body["StartTime"], json!(start.timestamp()));
    assert_eq!(body["EndTime"], json!(end.timestamp()));
    assert_eq!(body["PeriodInSeconds"], 60);
    assert_eq!(body["MetricQueries"][0]["Metric"], "db.load.avg");
    assert_eq!(
        body["MetricQueries"][0]["GroupBy"]["Group"],
        "db.wait_event"
    );
    let (target, body) = &bodies[1];
    assert_eq!(target, "PerformanceInsightsv20180227.DescribeDimensionKeys");
    assert_eq!(body["GroupBy"]["Group"], "db.sql");
    assert_eq!(body["PartitionBy"]["Group"], "db.wait_event");
    assert_eq!(body["Metric"], "db.load.avg");

    let text = recorded_text(&rec);
    assert_clean(&text);
    let recordings = parse_recordings("recordings.ndjson", &text).unwrap_or_else(|e| panic!("{e}"));
    let replay = ReplayTransport::new(recordings);
    let later = ChronoDuration::days(2);
    let again = aws::pi_db_load(
        &replay,
        "db-ORDERS",
        Some("db.wait_event"),
        start + later,
        end + later,
        60,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, load);
    let again = aws::pi_top_keys(
        &replay,
        "db-ORDERS",
        "db.sql",
        Some("db.wait_event"),
        start + later,
        end + later,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, keys);
    server.abort();
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error_for_every_read() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let t = live(&url, Duration::from_secs(5));
    let start: DateTime<Utc> = "2026-11-20T10:00:00Z".parse().unwrap_or_default();
    let end = start + ChronoDuration::hours(1);
    let errors = [
        aws::describe_db_instances(t.as_ref(), Some("orders-db"))
            .await
            .err(),
        aws::describe_events(t.as_ref(), "orders-db", start, end)
            .await
            .err(),
        aws::get_metric_data(
            t.as_ref(),
            "orders-db",
            &cpu_and_connections("orders-db"),
            start,
            end,
            60,
        )
        .await
        .err(),
        aws::pi_db_load(t.as_ref(), "db-X", None, start, end, 60)
            .await
            .err(),
        aws::pi_top_keys(t.as_ref(), "db-X", "db.sql", None, start, end)
            .await
            .err(),
    ];
    for e in errors {
        let e = e.unwrap_or_else(|| panic!("a closed port answers nothing"));
        assert!(matches!(e.kind, ErrorKind::Connect(_)), "{e}");
        assert_eq!(e.integration, "aws");
        assert!(!e.to_string().contains(CANARY), "{e}");
    }
}

#[tokio::test]
async fn an_unapproved_credential_is_never_read() {
    init_env();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (url, server) = pi_fake(seen.clone()).await;
    let keyring = Arc::new(Keyring::new());
    let mut settings = AwsSettings::new("eu-west-1");
    settings.endpoint_url = Some(url);
    settings.access_key_id = Some(KEY_ID.to_string());
    settings.secret_access_key = Some(SECRET_REF.to_string());
    let backend = AwsBackend::new(settings, keyring.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(keyring.pending_for("aws").as_deref(), Some(SECRET_REF));
    let t = LiveTransport::new()
        .unwrap_or_else(|e| panic!("{e}"))
        .with_keyring(keyring.clone())
        .with_aws(backend);
    let start: DateTime<Utc> = "2026-11-20T10:00:00Z".parse().unwrap_or_default();
    let end = start + ChronoDuration::hours(1);
    let err = aws::pi_db_load(&t, "db-X", None, start, end, 60)
        .await
        .err();
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("approval"), "{text}");
    keyring.decide(SECRET_REF, Decision::Denied("not for this incident".into()));
    let err = aws::pi_db_load(&t, "db-X", None, start, end, 60)
        .await
        .err();
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("denied"), "{text}");
    assert!(!text.contains(CANARY));
    assert!(
        seen.lock().map(|s| s.bodies.is_empty()).unwrap_or(false),
        "nothing was sent"
    );
    server.abort();
}

#[tokio::test]
async fn a_profile_of_the_shared_files_signs_with_its_session_token() {
    init_env();
    const TOKEN: &str = "profile-session-token-Qm4vX8rT1zK7pL2nW9";
    const SECRET: &str = "profile-secret-key-Hs6dF3gJ8kL1zX4cV7";
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let creds = dir.path().join("credentials");
    std::fs::write(
        &creds,
        format!(
            "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = other-secret-value-000\n\n[oncall]\naws_access_key_id = AKIAONCALLPROFILE\naws_secret_access_key = {SECRET}\naws_session_token = {TOKEN}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Only this test reads the shared-file variables.
    unsafe {
        std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", &creds);
        std::env::set_var("AWS_CONFIG_FILE", dir.path().join("config"));
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (url, server) = pi_fake(seen.clone()).await;
    let mut settings = AwsSettings::new("eu-west-1");
    settings.endpoint_url = Some(url);
    settings.profile = Some("oncall".into());
    let backend =
        AwsBackend::new(settings, Arc::new(Keyring::new())).unwrap_or_else(|e| panic!("{e}"));
    let t = LiveTransport::new()
        .unwrap_or_else(|e| panic!("{e}"))
        .with_aws(backend);
    let start: DateTime<Utc> = "2026-11-20T10:00:00Z".parse().unwrap_or_default();
    let end = start + ChronoDuration::hours(1);
    let keys = aws::pi_top_keys(&t, "db-ORDERS", "db.sql", None, start, end)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (auth, token) = seen
        .lock()
        .ok()
        .and_then(|s| s.auth.first().cloned())
        .unwrap_or_default();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIAONCALLPROFILE/"),
        "{auth}"
    );
    assert!(
        auth.contains("x-amz-security-token"),
        "the token is signed: {auth}"
    );
    assert_eq!(token, TOKEN);
    let text = serde_json::to_string(&keys).unwrap_or_default();
    assert!(!text.contains(TOKEN), "the session token is masked: {text}");
    assert!(!text.contains(SECRET), "{text}");
    server.abort();
}
