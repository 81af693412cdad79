//! The client against a real DynamoDB-API server (`dynalite`), directly and through the
//! fault proxy: tables, writes under throttling / 5xx / unprocessed writes / lost
//! connections, refusals found by splitting, permanent errors not retried, no secret in
//! any error. (The sink's tests read back with the official AWS SDK; here the server's own
//! scan is the reference.)

use std::collections::BTreeMap;
use std::time::Duration;

use dynamo::{
    AttributeValue, BatchWriter, Client, ClientConfig, DynamoError, Item, KeyAttribute, KeySchema,
    KeyType, Scan, WriteRequest,
};
use pacing::RetryPolicy;
use sigv4::AwsCredentials;
use testkit::dynamo_proxy::{DynamoFaultProxy, DynamoFaults};
use testkit::services::Dynalite;

const SECRET: &str = "wJalrXUtnFEMI-client-test-SECRET";
const TOKEN: &str = "session-TOKEN-client-test";

fn credentials() -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDCLIENTTEST".into(),
        secret_access_key: SECRET.into(),
        session_token: Some(TOKEN.into()),
    }
}

fn client(endpoint: &str, attempts: u32) -> Client {
    Client::new(ClientConfig {
        endpoint: Some(endpoint.to_string()),
        retry: RetryPolicy {
            max_attempts: attempts,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
            max_retry_after: Duration::from_secs(1),
        },
        max_in_flight: 8,
        ..ClientConfig::new("us-east-1", credentials())
    })
    .unwrap()
}

fn id_key() -> KeySchema {
    KeySchema {
        partition: KeyAttribute {
            name: "id".into(),
            key_type: KeyType::S,
        },
        sort: None,
    }
}

fn item(id: &str, n: u64) -> Item {
    [
        ("id".to_string(), AttributeValue::S(id.into())),
        ("n".to_string(), AttributeValue::N(n.to_string())),
        (
            "doc".to_string(),
            AttributeValue::M(
                [(
                    "tags".to_string(),
                    AttributeValue::L(vec![
                        AttributeValue::S(format!("t{n}")),
                        AttributeValue::Null,
                    ]),
                )]
                .into(),
            ),
        ),
    ]
    .into()
}

async fn table(c: &Client, name: &str) {
    c.create_table(name, &id_key()).await.unwrap();
    c.wait_active(name, Duration::from_secs(30)).await.unwrap();
}

/// Every item of the table, by id, read from the server directly.
async fn contents(c: &Client, name: &str) -> BTreeMap<String, Item> {
    let mut all = BTreeMap::new();
    for s in 0..3 {
        let scan = Scan {
            segment: Some((s, 3)),
            consistent: true,
            ..Scan::default()
        };
        for i in c.scan_all(name, &scan).await.unwrap() {
            let Some(AttributeValue::S(id)) = i.get("id") else {
                panic!("an item without id: {i:?}")
            };
            assert!(all.insert(id.clone(), i).is_none(), "one item per key");
        }
    }
    all
}

fn no_secret(e: &impl std::fmt::Debug) {
    let shown = format!("{e:?}");
    assert!(!shown.contains(SECRET) && !shown.contains(TOKEN), "{shown}");
}

#[tokio::test]
async fn tables_are_created_described_and_created_again_without_error() {
    let Some(d) = Dynalite::start("tables_are_created_described_and_created_again_without_error")
    else {
        return;
    };
    let c = client(&d.endpoint(), 3);
    assert_eq!(c.describe_table("events").await.unwrap(), None);
    let key = KeySchema {
        partition: KeyAttribute {
            name: "room".into(),
            key_type: KeyType::B,
        },
        sort: Some(KeyAttribute {
            name: "seq".into(),
            key_type: KeyType::N,
        }),
    };
    c.create_table("events", &key).await.unwrap();
    let t = c
        .wait_active("events", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(t.status, "ACTIVE");
    assert_eq!(t.key, key);
    assert_eq!(t.item_count, Some(0));
    // someone else created it meanwhile: fine
    c.create_table("events", &key).await.unwrap();
    assert_eq!(c.count_items("events", 2).await.unwrap(), 0);

    // items of two partitions, counted per partition and in all
    let w = BatchWriter::new(c.clone(), "events", key.clone());
    let requests: Vec<WriteRequest> = (0..70u64)
        .map(|i| {
            let it: Item = [
                (
                    "room".to_string(),
                    AttributeValue::B(vec![(i % 2) as u8, 0xff]),
                ),
                ("seq".to_string(), AttributeValue::N(i.to_string())),
            ]
            .into();
            WriteRequest::put(&it, &key).unwrap()
        })
        .collect();
    assert_eq!(w.write(&requests).await.unwrap().written, 70);
    assert_eq!(
        c.query_count("events", "room", &AttributeValue::B(vec![1, 0xff]))
            .await
            .unwrap(),
        35
    );
    assert_eq!(
        c.query_count("events", "room", &AttributeValue::B(vec![7]))
            .await
            .unwrap(),
        0
    );
    assert_eq!(c.count_items("events", 3).await.unwrap(), 70);
}

#[tokio::test]
async fn writes_arrive_once_with_last_write_winning_and_deletes_applied() {
    let Some(d) = Dynalite::start("writes_arrive_once_with_last_write_winning_and_deletes_applied")
    else {
        return;
    };
    let c = client(&d.endpoint(), 3);
    table(&c, "tab1").await;
    let w = BatchWriter::new(c.clone(), "tab1", id_key());
    let mut requests: Vec<WriteRequest> = (0..60)
        .map(|i| WriteRequest::put(&item(&format!("k{i}"), i), &id_key()).unwrap())
        .collect();
    // k3 written again later in the same call (in another 25-write request), k4 deleted after its put
    requests.push(WriteRequest::put(&item("k3", 1000), &id_key()).unwrap());
    requests.push(WriteRequest::delete(&item("k4", 0), &id_key()).unwrap());
    let out = w.write(&requests).await.unwrap();
    assert_eq!(out.written, 62);
    assert_eq!(out.superseded, 2);
    assert!(out.refused.is_empty());
    let got = contents(&c, "tab1").await;
    assert_eq!(got.len(), 59);
    for i in 0..60u64 {
        let id = format!("k{i}");
        match i {
            3 => assert_eq!(got[&id], item("k3", 1000)),
            4 => assert!(!got.contains_key(&id)),
            _ => assert_eq!(got[&id], item(&id, i)),
        }
    }
    let key: Item = [("id".to_string(), AttributeValue::S("k7".into()))].into();
    assert_eq!(
        c.get_item("tab1", &key, true).await.unwrap(),
        Some(item("k7", 7))
    );
    let keys: Vec<Item> = (0..60)
        .map(|i| [("id".to_string(), AttributeValue::S(format!("k{i}")))].into())
        .collect();
    assert_eq!(c.batch_get("tab1", &keys, true).await.unwrap().len(), 59);
    // Key attributes only: the items found, each holding just its key.
    let keys_only = c
        .batch_get_projected("tab1", &keys, true, Some(&["id"]))
        .await
        .unwrap();
    assert_eq!(keys_only.len(), 59);
    assert!(keys_only
        .iter()
        .all(|i| i.len() == 1 && i.contains_key("id")));
    assert_eq!(c.count_items("tab1", 4).await.unwrap(), 59);
    assert_eq!(c.stats().retries, 0);
}

#[tokio::test]
async fn throttling_server_errors_unprocessed_writes_and_lost_connections_are_retried() {
    let Some(d) = Dynalite::start(
        "throttling_server_errors_unprocessed_writes_and_lost_connections_are_retried",
    ) else {
        return;
    };
    let direct = client(&d.endpoint(), 3);
    table(&direct, "tab2").await;
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
            ..DynamoFaults::batch_writes()
        },
        11,
    );
    let c = client(&proxy.endpoint(), 30);
    let w = BatchWriter::new(c.clone(), "tab2", id_key());
    let requests: Vec<WriteRequest> = (0..2000)
        .map(|i| WriteRequest::put(&item(&format!("k{i}"), i), &id_key()).unwrap())
        .collect();
    let sends = requests.chunks(250).map(|chunk| w.write(chunk));
    for out in futures::future::join_all(sends).await {
        let out = out.unwrap();
        assert_eq!(out.written, 250);
        assert!(out.refused.is_empty());
    }
    let counts = proxy.counts();
    assert!(counts.dropped_before > 0, "{counts:?}");
    assert!(counts.throttling > 0, "{counts:?}");
    assert!(counts.provisioned > 0, "{counts:?}");
    assert!(counts.server_error > 0, "{counts:?}");
    assert!(counts.unprocessed_writes > 0, "{counts:?}");
    assert!(counts.dropped_after > 0, "{counts:?}");
    let stats = c.stats();
    assert_eq!(
        stats.requests,
        counts.requests_of("BatchWriteItem"),
        "{stats:?}"
    );
    assert_eq!(
        stats.retries,
        counts.faults(),
        "one retry per fault: {stats:?} {counts:?}"
    );
    assert_eq!(stats.unprocessed, counts.unprocessed_writes);
    assert!(stats.throttled >= counts.throttling + counts.provisioned + counts.unprocessed_answers);
    assert!(
        counts.writes_forwarded >= 2000,
        "re-sent writes after a lost answer only overwrite"
    );
    let got = contents(&direct, "tab2").await;
    assert_eq!(got.len(), 2000);
    for i in 0..2000u64 {
        let id = format!("k{i}");
        assert_eq!(got[&id], item(&id, i));
    }
}

#[tokio::test]
async fn a_write_the_service_refuses_is_found_by_splitting_and_the_rest_is_written() {
    let Some(d) = Dynalite::start(
        "a_write_the_service_refuses_is_found_by_splitting_and_the_rest_is_written",
    ) else {
        return;
    };
    let c = client(&d.endpoint(), 3);
    table(&c, "tab3").await;
    let w = BatchWriter::new(c.clone(), "tab3", id_key());
    let bad = [7usize, 22, 40];
    let requests: Vec<WriteRequest> = (0..45)
        .map(|i| {
            let mut it = item(&format!("k{i}"), i as u64);
            if bad.contains(&i) {
                // built by hand, past the checks: DynamoDB stores no number this large
                it.insert("n".into(), AttributeValue::N("1e200".into()));
            }
            WriteRequest::put(&it, &id_key()).unwrap()
        })
        .collect();
    let out = w.write(&requests).await.unwrap();
    assert_eq!(out.refused.iter().map(|r| r.index).collect::<Vec<_>>(), bad);
    for r in &out.refused {
        assert_eq!(r.error_type, "ValidationException");
        assert!(r.reason.contains("Number overflow"), "{}", r.reason);
    }
    assert_eq!(out.written, 42);
    assert!(c.stats().splits > 0);
    let got = contents(&c, "tab3").await;
    assert_eq!(got.len(), 42);
    assert!(bad.iter().all(|i| !got.contains_key(&format!("k{i}"))));
}

#[tokio::test]
async fn permanent_errors_are_not_retried_and_hold_no_secret() {
    let Some(d) = Dynalite::start("permanent_errors_are_not_retried_and_hold_no_secret") else {
        return;
    };
    let direct = client(&d.endpoint(), 3);
    table(&direct, "tab4").await;
    let requests = vec![WriteRequest::put(&item("a", 1), &id_key()).unwrap()];

    // a table that does not exist: the server says so once
    let missing = BatchWriter::new(direct.clone(), "nope", id_key());
    let before = direct.stats().requests;
    let e = missing.write(&requests).await.unwrap_err();
    assert_eq!(e.error_type(), Some("ResourceNotFoundException"), "{e}");
    assert!(e.is_fatal());
    assert_eq!(direct.stats().requests - before, 1, "not retried");
    no_secret(&e);

    // credentials refused, with a message quoting the canonical request as AWS does
    let proxy = DynamoFaultProxy::start(
        d.port(),
        DynamoFaults {
            reject: Some((
                400,
                "InvalidSignatureException".into(),
                format!(
                    "The request signature we calculated does not match the signature you provided. \
                     The Canonical String for this request should have been 'POST\n/\n\nx-amz-security-token:{TOKEN}\n'"
                ),
            )),
            ..DynamoFaults::batch_writes()
        },
        1,
    );
    let c = client(&proxy.endpoint(), 5);
    let e = BatchWriter::new(c.clone(), "tab4", id_key())
        .write(&requests)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, DynamoError::Rejected { error_type, .. } if error_type == "InvalidSignatureException"),
        "{e}"
    );
    assert!(e.is_fatal());
    assert_eq!(
        proxy.counts().requests_of("BatchWriteItem"),
        1,
        "not retried"
    );
    no_secret(&e);
    no_secret(&e.to_string());

    // a server that keeps failing: retried, then given up, and still nothing secret
    proxy.set_faults(DynamoFaults {
        server_error: 1.0,
        ..DynamoFaults::batch_writes()
    });
    let e = BatchWriter::new(c.clone(), "tab4", id_key())
        .write(&requests)
        .await
        .unwrap_err();
    assert!(
        matches!(e, DynamoError::RetriesExhausted { attempts: 5, .. }),
        "{e}"
    );
    assert!(!e.is_fatal());
    no_secret(&e);
    no_secret(&e.to_string());

    // nobody listening
    let port = testkit::services::free_port();
    let e = BatchWriter::new(
        client(&format!("http://127.0.0.1:{port}"), 2),
        "tab4",
        id_key(),
    )
    .write(&requests)
    .await
    .unwrap_err();
    assert!(
        matches!(e, DynamoError::RetriesExhausted { attempts: 2, .. }),
        "{e}"
    );
    no_secret(&e);

    // the configuration itself
    let cfg = ClientConfig {
        endpoint: Some("http://user:pass@127.0.0.1:1".into()),
        ..ClientConfig::new("us-east-1", credentials())
    };
    no_secret(&cfg);
    let e = Client::new(cfg).err().unwrap();
    assert!(
        e.to_string().contains("credentials do not go in the URL"),
        "{e}"
    );
    assert!(!e.to_string().contains("pass"), "{e}");
    assert!(direct
        .get_item(
            "tab4",
            &[("id".to_string(), AttributeValue::S("a".into()))].into(),
            true
        )
        .await
        .unwrap()
        .is_none());
}
