//! The DynamoDB sink against a real DynamoDB-API server (`dynalite`, started on loopback),
//! directly and through the fault proxy, with documents made as the table source makes
//! them (one JSON object per row, a column-kind hint per column). Everything written is
//! read back with the official AWS SDK for Rust — an independent client — and compared
//! attribute by attribute with values written out by hand here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::{BillingMode, KeyType, ScalarAttributeType};
use bytes::Bytes;
use connectors::dynamodb::{BatchLimits, DynamoSink, DynamoSinkOptions, DynamoUrl};
use coordination::{Config, Cursor, Position, WorkItem};
use engine::{
    Document, FailureLog, Job, JobEnd, JobOptions, Op, PipelineOptions, Plan, Read, Refusal,
    Severity, Sink, SinkError, SinkWriter, Source, SourceError, Totals, WorkerOptions,
};
use futures::StreamExt;
use pacing::RetryPolicy;
use programs::routes::Rename;
use sigv4::AwsCredentials;
use testkit::dynamo_proxy::{DynamoFaultProxy, DynamoFaults};
use testkit::dynamo_sdk::{self, assert_item, b, by_key, m, n, s, Av, Client, SdkItem};
use testkit::services::Dynalite;

const SECRET: &str = "sink-test-SECRET-wJalrXUtnFEMI";
const TOKEN: &str = "sink-test-session-TOKEN";

fn credentials() -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDSINKTEST".into(),
        secret_access_key: SECRET.into(),
        session_token: Some(TOKEN.into()),
    }
}

/// The column kinds the table source gives for `room_events`-like rows.
fn hints() -> dynamo::ColumnHints {
    use dynamo::ColumnHint::*;
    [
        ("id", String),
        ("room_id", String),
        ("seq", Number),
        ("small", Number),
        ("big_int", Number),
        ("ratio", Number),
        ("amount", Number),
        ("ok", Bool),
        ("note", String),
        ("payload", Binary),
        ("empty_bytes", Binary),
        ("at", Time),
        ("data", Json),
        ("list", Json),
        ("scalar_json", Json),
        ("empty_text", String),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn options(create_table: bool, attempts: u32) -> DynamoSinkOptions {
    DynamoSinkOptions {
        create_table,
        key_column: Some("id".into()),
        hints: hints(),
        credentials: Some(credentials()),
        max_in_flight: 8,
        retry: RetryPolicy {
            max_attempts: attempts,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
            max_retry_after: Duration::from_secs(1),
        },
        batch: BatchLimits {
            max_docs: 100,
            max_bytes: 1 << 20,
        },
        ..DynamoSinkOptions::default()
    }
}

fn url(table: &str, endpoint: &str, extra: &str) -> DynamoUrl {
    DynamoUrl::parse(&format!(
        "dynamodb://{table}?region=us-east-1&endpoint={endpoint}{extra}"
    ))
    .unwrap()
}

/// Every item of `table`, by `id`, through the SDK's scan (one item per key asserted).
async fn scan(sdk: &Client, table: &str) -> BTreeMap<String, SdkItem> {
    by_key(dynamo_sdk::scan(sdk, table).await, "id")
}

/// One row with every type of the mapping, as JSON and as the item it must become.
fn every_type_row() -> (String, SdkItem) {
    let json = r#"{"id":"01J9ZK3V8Q6R2M4N5P7S9T0W1X","room_id":"0b6f3c1e-8a5e-4f0e-9d43-7c2a1b9e5f10","seq":42,"small":-7,"big_int":9223372036854775807,"ratio":1.25e-4,"amount":12345678901234567890.123456789012345678,"ok":true,"note":null,"payload":"AAEC/w==","empty_bytes":"","at":"2024-10-20T13:45:07.123456Z","data":{"kind":"message","text":"h\u00e9 \"quoted\"\n\tline \ud83d\ude00","tags":["a","b"],"meta":{"n":1.50,"deep":[[1],[2,[3]]],"none":null,"yes":false}},"list":[1,"two",false,null,{"x":[]}],"scalar_json":"just a string","empty_text":""}"#;
    let want = [
        ("id", s("01J9ZK3V8Q6R2M4N5P7S9T0W1X")),
        ("room_id", s("0b6f3c1e-8a5e-4f0e-9d43-7c2a1b9e5f10")),
        ("seq", n("42")),
        ("small", n("-7")),
        ("big_int", n("9223372036854775807")),
        ("ratio", n("0.000125")),
        ("amount", n("12345678901234567890.123456789012345678")),
        ("ok", Av::Bool(true)),
        ("note", Av::Null(true)),
        ("payload", b(&[0, 1, 2, 255])),
        ("empty_bytes", b(&[])),
        ("at", s("2024-10-20T13:45:07.123456Z")),
        (
            "data",
            m(&[
                ("kind", s("message")),
                ("text", s("hé \"quoted\"\n\tline 😀")),
                ("tags", Av::L(vec![s("a"), s("b")])),
                (
                    "meta",
                    m(&[
                        ("n", n("1.5")),
                        (
                            "deep",
                            Av::L(vec![
                                Av::L(vec![n("1")]),
                                Av::L(vec![n("2"), Av::L(vec![n("3")])]),
                            ]),
                        ),
                        ("none", Av::Null(true)),
                        ("yes", Av::Bool(false)),
                    ]),
                ),
            ]),
        ),
        (
            "list",
            Av::L(vec![
                n("1"),
                s("two"),
                Av::Bool(false),
                Av::Null(true),
                m(&[("x", Av::L(vec![]))]),
            ]),
        ),
        ("scalar_json", s("just a string")),
        ("empty_text", s("")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    (json.to_string(), want)
}

fn row_id(i: u64) -> String {
    format!("01J9ZK{i:020}")
}

/// Generated row `i`, as JSON and as the item it must become.
fn row(i: u64) -> (String, SdkItem) {
    let id = row_id(i);
    let bytes: Vec<u8> = (0..(i % 40) as u8)
        .map(|k| k.wrapping_mul(37).wrapping_add(i as u8))
        .collect();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let json = format!(
        r#"{{"id":"{id}","room_id":"room-{r}","seq":{i},"amount":{i}.{c:02},"ok":{ok},"note":{note},"payload":"{b64}","data":{{"i":{i},"text":"row {i}","tags":["t{r}",null]}}}}"#,
        r = i % 7,
        c = i % 100,
        ok = i.is_multiple_of(2),
        note = if i.is_multiple_of(3) {
            "null".to_string()
        } else {
            format!("\"note {i}\"")
        },
    );
    let want = [
        ("id", s(&id)),
        ("room_id", s(format!("room-{}", i % 7))),
        ("seq", n(i.to_string())),
        ("amount", n(format!("{i}.{:02}", i % 100))),
        ("ok", Av::Bool(i.is_multiple_of(2))),
        (
            "note",
            if i.is_multiple_of(3) {
                Av::Null(true)
            } else {
                s(format!("note {i}"))
            },
        ),
        ("payload", b(&bytes)),
        (
            "data",
            m(&[
                ("i", n(i.to_string())),
                ("text", s(format!("row {i}"))),
                (
                    "tags",
                    Av::L(vec![s(format!("t{}", i % 7)), Av::Null(true)]),
                ),
            ]),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    (json, want)
}

fn doc(id: &str, json: String) -> Document {
    Document {
        position: Position::Key(id.to_string()),
        op: Op::Index,
        index: "room_events".into(),
        id: id.to_string(),
        doc_type: None,
        routing: None,
        source: Bytes::from(json),
    }
}

fn delete(id: &str, source: &str) -> Document {
    Document {
        op: Op::Delete,
        source: Bytes::from(source.to_string()),
        ..doc(id, String::new())
    }
}

/// Frames `docs` with one writer and sends the batches four at a time, as the pipeline
/// does: (delivered, refused before sending, refused by DynamoDB).
async fn deliver(
    sink: &DynamoSink,
    docs: Vec<Document>,
) -> Result<(u64, Vec<Refusal>, Vec<Refusal>), SinkError> {
    let mut w = sink.writer();
    let mut batches = Vec::new();
    let mut local = Vec::new();
    for d in docs {
        match w.push(d) {
            Ok(Some(batch)) => batches.push(batch),
            Ok(None) => {}
            Err(r) => local.push(*r),
        }
    }
    batches.extend(w.finish());
    let results: Vec<_> = futures::stream::iter(batches.into_iter().map(|b| sink.send(b)))
        .buffer_unordered(4)
        .collect()
        .await;
    let (mut delivered, mut refused) = (0, Vec::new());
    for r in results {
        let r = r?;
        delivered += r.delivered;
        refused.extend(r.refused);
    }
    Ok((delivered, local, refused))
}

fn no_secret(what: &str) {
    assert!(!what.contains(SECRET) && !what.contains(TOKEN), "{what}");
}

#[tokio::test]
async fn every_column_type_arrives_attribute_by_attribute() {
    let Some(d) = Dynalite::start("every_column_type_arrives_attribute_by_attribute") else {
        return;
    };
    let sink = DynamoSink::connect(&url("room_events", &d.endpoint(), ""), options(true, 3))
        .await
        .unwrap();
    no_secret(&sink.identity());
    let (json, want_special) = every_type_row();
    let mut docs = vec![doc("01J9ZK3V8Q6R2M4N5P7S9T0W1X", json)];
    let mut want = BTreeMap::new();
    want.insert("01J9ZK3V8Q6R2M4N5P7S9T0W1X".to_string(), want_special);
    for i in 0..500 {
        let (json, item) = row(i);
        docs.push(doc(&row_id(i), json));
        want.insert(row_id(i), item);
    }
    let (delivered, local, refused) = deliver(&sink, docs).await.unwrap();
    assert_eq!(
        (delivered, local.len(), refused.len()),
        (501, 0, 0),
        "{local:?} {refused:?}"
    );

    let sdk = dynamo_sdk::client(&d.endpoint()).await;
    let table = sdk
        .describe_table()
        .table_name("room_events")
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    assert_eq!(
        table.billing_mode_summary.and_then(|b| b.billing_mode),
        Some(BillingMode::PayPerRequest)
    );
    let key = table.key_schema.unwrap();
    assert_eq!(
        (key.len(), key[0].attribute_name(), key[0].key_type()),
        (1, "id", &KeyType::Hash)
    );
    assert_eq!(
        table.attribute_definitions.unwrap()[0].attribute_type(),
        &ScalarAttributeType::S
    );

    let got = scan(&sdk, "room_events").await;
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (id, w) in &want {
        assert_item(id, &got[id], w);
    }
    let one = sdk
        .get_item()
        .table_name("room_events")
        .key("id", s("01J9ZK3V8Q6R2M4N5P7S9T0W1X"))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert_item(
        "special",
        &one.into_iter().collect(),
        &want["01J9ZK3V8Q6R2M4N5P7S9T0W1X"],
    );
}

#[tokio::test]
async fn through_the_fault_proxy_every_row_arrives_exactly_once() {
    let Some(d) = Dynalite::start("through_the_fault_proxy_every_row_arrives_exactly_once") else {
        return;
    };
    let proxy = DynamoFaultProxy::start(
        d.port(),
        // tried in this order, each rate makes about one request in ten fail that way
        DynamoFaults {
            drop_before: 0.1,
            throttling: 0.11,
            provisioned: 0.125,
            server_error: 0.14,
            unprocessed: 0.17,
            drop_after: 0.2,
            // control calls (DescribeTable, CreateTable) are faulted too
            ..DynamoFaults::default()
        },
        5,
    );
    let sink = DynamoSink::connect(
        &url("room_events", &proxy.endpoint(), ""),
        options(true, 40),
    )
    .await
    .unwrap();
    let mut docs = Vec::new();
    let mut want = BTreeMap::new();
    for i in 0..2000 {
        let (json, item) = row(i);
        docs.push(doc(&row_id(i), json));
        want.insert(row_id(i), item);
    }
    let (delivered, local, refused) = deliver(&sink, docs).await.unwrap();
    assert_eq!((delivered, local.len(), refused.len()), (2000, 0, 0));
    let counts = proxy.counts();
    for (what, n) in [
        ("dropped before", counts.dropped_before),
        ("throttling", counts.throttling),
        ("provisioned", counts.provisioned),
        ("500", counts.server_error),
        ("unprocessed", counts.unprocessed_writes),
        ("dropped after", counts.dropped_after),
    ] {
        assert!(n > 0, "no {what} fault injected: {counts:?}");
    }
    let stats = sink.client().stats();
    assert_eq!(
        stats.retries,
        counts.faults(),
        "every fault retried once: {stats:?} {counts:?}"
    );
    assert!(stats.throttled > 0);

    // read from the server directly, not through the proxy
    let got = scan(&dynamo_sdk::client(&d.endpoint()).await, "room_events").await;
    assert_eq!(got.len(), 2000);
    for (id, w) in &want {
        assert_item(id, &got[id], w);
    }
}

/// A table source in memory: one slot of rows, positions are the keys.
struct Rows(Vec<(String, String)>);

impl Source for Rows {
    fn identity(&self) -> BTreeMap<String, String> {
        [("table".to_string(), "room_events".to_string())].into()
    }
    fn plan(&self) -> Result<Plan, SourceError> {
        Ok(Plan {
            items: vec![WorkItem::whole("room_events", 0)],
            totals: Totals {
                docs: self.0.len() as u64,
                ..Totals::default()
            },
        })
    }
    fn read(
        &self,
        _item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        for (id, json) in &self.0 {
            if after
                .as_ref()
                .is_some_and(|p| Position::Key(id.clone()) <= *p)
            {
                continue;
            }
            if !emit(Read::Doc(doc(id, json.clone()))) {
                break;
            }
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_rows_reach_the_failure_log_with_their_key_and_the_rest_is_written() {
    let Some(d) = Dynalite::start(
        "refused_rows_reach_the_failure_log_with_their_key_and_the_rest_is_written",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("failures.jsonl");
    let mut rows: Vec<(String, String)> = (0..300).map(|i| (row_id(i), row(i).0)).collect();
    // an item over 400 KB
    let big = row_id(1000);
    rows.push((
        big.clone(),
        format!(
            r#"{{"id":"{big}","data":{{"text":"{}"}}}}"#,
            "x".repeat(410_000)
        ),
    ));
    // a row whose key column is null
    let null_key = row_id(1001);
    rows.push((null_key.clone(), r#"{"id":null,"seq":1}"#.to_string()));
    // a numeric DynamoDB cannot hold (39 significant digits)
    let precise = row_id(1002);
    rows.push((
        precise.clone(),
        format!(r#"{{"id":"{precise}","amount":123456789012345678901234567890123456789}}"#),
    ));
    // a key DynamoDB refuses (partition keys are at most 2048 bytes): found by the server
    let long = format!("{}{}", row_id(1003), "k".repeat(3000));
    rows.push((long.clone(), format!(r#"{{"id":"{long}","seq":3}}"#)));
    rows.sort();

    let sink = DynamoSink::connect(&url("room_events", &d.endpoint(), ""), options(true, 3))
        .await
        .unwrap();
    let store_url = format!("sqlite://{}", dir.path().join("state.db").display());
    let job = Job::new(
        Arc::new(Rows(rows)),
        Arc::new(Rename::default()),
        Arc::new(sink),
        coordination::open_store(&store_url).await.unwrap(),
        Arc::new(FailureLog::open(&log).unwrap()),
        JobOptions {
            parallel: 1,
            worker: WorkerOptions {
                pipeline: PipelineOptions {
                    checkpoint_every: Duration::from_millis(100),
                    control_every: Duration::from_millis(50),
                    ..PipelineOptions::default()
                },
                wait_for_leases: true,
                poll: Duration::from_millis(50),
                max_items: None,
                failed_item_pause: Duration::from_millis(500),
            },
            coordination: Config {
                poll_interval: Duration::from_millis(50),
                ..Config::default()
            },
            memory_budget: 64 << 20,
            migration: None,
            fleet_limits: Default::default(),
        },
    );
    let report = tokio::time::timeout(Duration::from_secs(120), job.run())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.end, JobEnd::Finished);
    let status = report.status.unwrap();
    assert_eq!(
        (status.docs_done, status.docs_refused, status.docs_skipped),
        (300, 4, 0)
    );

    let mut logged: BTreeMap<String, (String, u16)> = BTreeMap::new();
    for r in FailureLog::read(&log).unwrap() {
        no_secret(&r.reason);
        logged.insert(r.id.clone(), (r.error_type.clone(), r.status));
    }
    let expected: BTreeMap<String, (String, u16)> = [
        (big, ("item_too_large".to_string(), 0)),
        (null_key, ("missing_key".to_string(), 0)),
        (precise, ("bad_number".to_string(), 0)),
        (long, ("ValidationException".to_string(), 400)),
    ]
    .into();
    assert_eq!(logged, expected);

    let got = scan(&dynamo_sdk::client(&d.endpoint()).await, "room_events").await;
    assert_eq!(got.len(), 300);
    for i in 0..300 {
        assert_item(&row_id(i), &got[&row_id(i)], &row(i).1);
    }
}

#[tokio::test]
async fn create_table_maps_keys_and_types_and_refuses_a_table_that_does_not_fit() {
    let Some(d) =
        Dynalite::start("create_table_maps_keys_and_types_and_refuses_a_table_that_does_not_fit")
    else {
        return;
    };
    let sdk = dynamo_sdk::client(&d.endpoint()).await;
    // partition key room_id (text), sort key seq (a number column)
    let keyed = url(
        "by_room",
        &d.endpoint(),
        "&partition-key=room_id&sort-key=seq",
    );
    let sink = DynamoSink::connect(&keyed, options(true, 3)).await.unwrap();
    let t = sdk
        .describe_table()
        .table_name("by_room")
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    let keys: Vec<(String, KeyType)> = t
        .key_schema
        .unwrap()
        .into_iter()
        .map(|k| (k.attribute_name, k.key_type))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("room_id".to_string(), KeyType::Hash),
            ("seq".to_string(), KeyType::Range)
        ]
    );
    let types: BTreeMap<String, ScalarAttributeType> = t
        .attribute_definitions
        .unwrap()
        .into_iter()
        .map(|a| (a.attribute_name, a.attribute_type))
        .collect();
    assert_eq!(types["room_id"], ScalarAttributeType::S);
    assert_eq!(types["seq"], ScalarAttributeType::N);

    // rows of one room land as separate items; deletes with the row's key remove one
    let docs: Vec<Document> = (0..40).map(|i| doc(&row_id(i), row(i).0)).collect();
    let (delivered, local, refused) = deliver(&sink, docs).await.unwrap();
    assert_eq!((delivered, local.len(), refused.len()), (40, 0, 0));
    let deletes = vec![
        delete(&row_id(7), r#"{"room_id":"room-0","seq":7}"#),
        // a delete by id alone cannot name the sort key: refused before sending
        delete(&row_id(8), ""),
    ];
    let (delivered, local, _) = deliver(&sink, deletes).await.unwrap();
    assert_eq!(delivered, 1);
    assert_eq!(local.len(), 1);
    assert_eq!(
        (
            local[0].id.as_str(),
            local[0].error_type.as_str(),
            local[0].delete
        ),
        (row_id(8).as_str(), "missing_key", true)
    );
    let count = sdk
        .scan()
        .table_name("by_room")
        .select(aws_sdk_dynamodb::types::Select::Count)
        .send()
        .await
        .unwrap()
        .count;
    assert_eq!(count, 39);
    let gone = sdk
        .get_item()
        .table_name("by_room")
        .key("room_id", s("room-0"))
        .key("seq", n("7"))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    assert!(gone.item.is_none());

    // the same table asked for with another key
    let e = DynamoSink::connect(&url("by_room", &d.endpoint(), ""), options(false, 3))
        .await
        .err()
        .unwrap();
    assert_eq!(e.severity, Severity::Fatal);
    assert!(
        e.message
            .contains("partition key room_id (S), sort key seq (N)")
            && e.message.contains("partition key id (S)"),
        "{}",
        e.message
    );
    // a table that does not exist, without --create-table
    let e = DynamoSink::connect(&url("missing_table", &d.endpoint(), ""), options(false, 3))
        .await
        .err()
        .unwrap();
    assert_eq!(e.severity, Severity::Fatal);
    assert!(
        e.message.contains("does not exist") && e.message.contains("--create-table"),
        "{}",
        e.message
    );
    // an existing table whose key the sink takes as it is (no key named anywhere)
    let plain = DynamoSinkOptions {
        key_column: None,
        ..options(false, 3)
    };
    let s2 = DynamoSink::connect(&url("by_room", &d.endpoint(), ""), plain)
        .await
        .unwrap();
    assert_eq!(s2.key().partition.name, "room_id");
}

#[tokio::test]
async fn deletes_by_id_and_last_write_wins_within_a_batch() {
    let Some(d) = Dynalite::start("deletes_by_id_and_last_write_wins_within_a_batch") else {
        return;
    };
    let sink = DynamoSink::connect(&url("room_events", &d.endpoint(), ""), options(true, 3))
        .await
        .unwrap();
    let mut docs: Vec<Document> = (0..60).map(|i| doc(&row_id(i), row(i).0)).collect();
    // row 5 written twice in one batch (the later one wins), row 6 deleted after its write:
    // the overwritten writes are refused as key collisions, never counted as delivered
    docs.push(doc(
        &row_id(5),
        row(5).0.replace("\"seq\":5", "\"seq\":555"),
    ));
    docs.push(delete(&row_id(6), ""));
    let (delivered, local, refused) = deliver(&sink, docs).await.unwrap();
    assert_eq!((delivered, local.len(), refused.len()), (60, 0, 2));
    let mut collided: Vec<(&str, &str, bool)> = refused
        .iter()
        .map(|r| (r.id.as_str(), r.error_type.as_str(), r.delete))
        .collect();
    collided.sort();
    assert_eq!(
        collided,
        vec![
            (row_id(5).as_str(), "key_collision", false),
            (row_id(6).as_str(), "key_collision", false)
        ]
    );
    assert!(
        refused[0].reason.contains("same batch"),
        "{}",
        refused[0].reason
    );
    let got = scan(&dynamo_sdk::client(&d.endpoint()).await, "room_events").await;
    assert_eq!(got.len(), 59);
    assert!(!got.contains_key(&row_id(6)));
    assert_eq!(got[&row_id(5)]["seq"], n("555"));
    for i in (0..60).filter(|i| *i != 5 && *i != 6) {
        assert_item(&row_id(i), &got[&row_id(i)], &row(i).1);
    }
}

#[tokio::test]
async fn permanent_errors_stop_without_retries_and_no_error_shows_a_secret() {
    let Some(d) =
        Dynalite::start("permanent_errors_stop_without_retries_and_no_error_shows_a_secret")
    else {
        return;
    };
    let proxy = DynamoFaultProxy::start(d.port(), DynamoFaults::batch_writes(), 3);
    let sink = DynamoSink::connect(&url("room_events", &proxy.endpoint(), ""), options(true, 4))
        .await
        .unwrap();
    let docs = || {
        (0..10)
            .map(|i| doc(&row_id(i), row(i).0))
            .collect::<Vec<_>>()
    };

    proxy.set_faults(DynamoFaults {
        reject: Some((
            400,
            "AccessDeniedException".into(),
            format!("User is not authorized (token {TOKEN}); see x-amz-security-token:{TOKEN}"),
        )),
        ..DynamoFaults::batch_writes()
    });
    let e = deliver(&sink, docs()).await.err().unwrap();
    assert_eq!(e.severity, Severity::Fatal, "{e}");
    assert!(e.message.contains("AccessDeniedException"), "{e}");
    assert_eq!(
        proxy.counts().requests_of("BatchWriteItem"),
        1,
        "not retried"
    );
    no_secret(&e.to_string());
    no_secret(&format!("{e:?}"));

    proxy.set_faults(DynamoFaults {
        throttling: 1.0,
        ..DynamoFaults::batch_writes()
    });
    let e = deliver(&sink, docs()).await.err().unwrap();
    assert_eq!(
        e.severity,
        Severity::Item,
        "throttling past the budget fails the item: {e}"
    );
    assert!(
        e.message.contains("gave up after 4 attempts") && e.message.contains("ThrottlingException"),
        "{e}"
    );
    assert_eq!(proxy.counts().requests_of("BatchWriteItem"), 1 + 4);
    no_secret(&format!("{e:?}"));

    // a missing region or credentials: clear, and still nothing secret
    let e = DynamoSink::connect(
        &DynamoUrl::parse(&format!("dynamodb://room_events?endpoint={}", d.endpoint())).unwrap(),
        DynamoSinkOptions {
            credentials: Some(credentials()),
            ..DynamoSinkOptions::default()
        },
    )
    .await;
    if sigv4::region().unwrap().is_none() {
        let e = e.err().unwrap();
        assert!(e.message.contains("no region"), "{}", e.message);
    }
    let shown = url("room_events", "http://user:pw@127.0.0.1:1", "").display();
    assert!(!shown.contains("pw"), "{shown}");
}
