//! The client against a real OpenSearch-API server, `osmem-server` (PyPI): detection, index
//! and template calls, bulk indexing read back document by document, create conflicts.

use bytes::Bytes;
use cluster::{
    BulkDoc, BulkOptions, BulkSender, Client, ClientConfig, Created, Distribution, OpType,
    TemplateKind,
};
use serde_json::{json, Value};
use testkit::services::Osmem;

fn source(i: usize) -> Value {
    json!({ "title": format!("book {i}"), "n": i, "tags": ["a", "b"], "nested": { "x": i * 2, "s": "q\"uote\\ ü" } })
}

fn id(i: usize) -> String {
    // Ids with characters that need escaping in action lines and encoding in URLs.
    match i % 4 {
        0 => format!("plain-{i}"),
        1 => format!("with space/{i}"),
        2 => format!("quote\"back\\slash-{i}"),
        _ => format!("ünï-{i}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_template_and_bulk_calls_against_osmem() {
    let Some(server) = Osmem::start("index_template_and_bulk_calls_against_osmem") else {
        return;
    };
    let client = Client::connect(ClientConfig::new(server.url()))
        .await
        .unwrap();
    let target = client.target().unwrap().clone();
    assert_eq!(target.distribution(), Distribution::OpenSearch);
    assert!(target.version.major >= 2, "{target}");

    // Indices.
    let body = json!({
        "settings": { "number_of_shards": 1, "number_of_replicas": 0 },
        "mappings": { "properties": { "title": { "type": "text" }, "n": { "type": "integer" } } },
        "aliases": { "library": {} }
    });
    assert!(!client.index_exists("books").await.unwrap());
    assert_eq!(client.get_index("books").await.unwrap(), None);
    assert_eq!(
        client.create_index("books", &body).await.unwrap(),
        Created::Created
    );
    assert_eq!(
        client.create_index("books", &body).await.unwrap(),
        Created::AlreadyExists
    );
    assert!(client.index_exists("books").await.unwrap());
    let got = client
        .get_index("books")
        .await
        .unwrap()
        .expect("index exists");
    assert_eq!(got["mappings"]["properties"]["title"]["type"], "text");
    assert_eq!(got["mappings"]["properties"]["n"]["type"], "integer");
    assert!(got["aliases"].get("library").is_some(), "{got}");

    // Templates of each kind: created once, read back, never overwritten.
    let legacy = json!({ "index_patterns": ["legacy-*"], "order": 3, "settings": { "number_of_shards": 2 } });
    assert_eq!(
        client
            .get_template(TemplateKind::Legacy, "t-legacy")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        client
            .put_template(TemplateKind::Legacy, "t-legacy", &legacy)
            .await
            .unwrap(),
        Created::Created
    );
    let back = client
        .get_template(TemplateKind::Legacy, "t-legacy")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(back["index_patterns"], json!(["legacy-*"]));
    assert_eq!(back["order"], 3);
    assert!(client
        .template_exists(TemplateKind::Legacy, "t-legacy")
        .await
        .unwrap());

    let component =
        json!({ "template": { "mappings": { "properties": { "ts": { "type": "date" } } } } });
    assert_eq!(
        client
            .put_template(TemplateKind::Component, "t-comp", &component)
            .await
            .unwrap(),
        Created::Created
    );
    let back = client
        .get_template(TemplateKind::Component, "t-comp")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        back["template"]["mappings"]["properties"]["ts"]["type"],
        "date"
    );
    let index_t = json!({ "index_patterns": ["comp-*"], "composed_of": ["t-comp"], "priority": 5 });
    assert_eq!(
        client
            .put_template(TemplateKind::Index, "t-index", &index_t)
            .await
            .unwrap(),
        Created::Created
    );
    let back = client
        .get_template(TemplateKind::Index, "t-index")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(back["composed_of"], json!(["t-comp"]));
    assert!(!client
        .template_exists(TemplateKind::Index, "absent")
        .await
        .unwrap());
    let changed = json!({ "index_patterns": ["other-*"], "priority": 9 });
    assert_eq!(
        client
            .put_template(TemplateKind::Index, "t-index", &changed)
            .await
            .unwrap(),
        Created::AlreadyExists
    );
    let back = client
        .get_template(TemplateKind::Index, "t-index")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        back["index_patterns"],
        json!(["comp-*"]),
        "an existing template is not modified"
    );

    // Bulk: bodies of 64 documents, several at once.
    let opts = BulkOptions {
        max_in_flight: 3,
        ..BulkOptions::default()
    };
    let sender = BulkSender::new(client.clone(), opts).unwrap();
    let n = 400;
    let docs: Vec<BulkDoc> = (0..n)
        .map(|i| {
            let mut d = BulkDoc::new(
                "books",
                id(i),
                Bytes::from(serde_json::to_vec(&source(i)).unwrap()),
            );
            if i % 5 == 0 {
                d.routing = Some(format!("r{}", i % 3));
            }
            d
        })
        .collect();
    let results = futures::future::join_all(docs.chunks(64).map(|b| sender.send(b.to_vec()))).await;
    let (mut indexed, mut refused, mut requests) = (0, 0, 0);
    for r in results {
        let r = r.unwrap();
        indexed += r.indexed;
        refused += r.refused.len();
        requests += r.requests;
    }
    assert_eq!(indexed, n as u64);
    assert_eq!(refused, 0);
    assert_eq!(requests, n.div_ceil(64) as u64);
    client.refresh("books").await.unwrap();
    assert_eq!(client.count("books").await.unwrap(), n as u64);

    // Every document read back and compared.
    let plain: Vec<usize> = (0..n).filter(|i| i % 5 != 0).collect();
    let ids: Vec<String> = plain.iter().map(|&i| id(i)).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let got = client.mget("books", &refs).await.unwrap();
    for (&i, d) in plain.iter().zip(&got) {
        let d = d.as_ref().unwrap_or_else(|| panic!("{} missing", id(i)));
        assert_eq!(d.id, id(i));
        assert_eq!(d.source.as_ref().unwrap(), &source(i), "{}", id(i));
    }
    let one = client.get_doc("books", &id(7)).await.unwrap().unwrap();
    assert_eq!(one.source.unwrap(), source(7));
    assert!(one.seq_no.is_some());
    assert_eq!(client.get_doc("books", "nope").await.unwrap(), None);
    let hits = client
        .search(
            "books",
            &json!({ "query": { "ids": { "values": [id(0), id(5)] } } }),
        )
        .await
        .unwrap();
    let mut found: Vec<Value> = hits["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_source"].clone())
        .collect();
    found.sort_by_key(|v| v["n"].as_u64());
    assert_eq!(found, vec![source(0), source(5)]);

    // op_type=create over existing ids: conflicts are failures unless accepted.
    let create = BulkOptions {
        op_type: OpType::Create,
        accept_error_types: vec!["version_conflict_engine_exception".into()],
        ..BulkOptions::default()
    };
    let sender = BulkSender::new(client.clone(), create.clone()).unwrap();
    let out = sender.send(docs[..50].to_vec()).await.unwrap();
    assert_eq!((out.accepted, out.indexed, out.refused.len()), (50, 0, 0));

    let strict = BulkOptions {
        accept_error_types: vec![],
        ..create
    };
    let sender = BulkSender::new(client.clone(), strict).unwrap();
    let mut batch = docs[..10].to_vec();
    batch.push(BulkDoc::new(
        "books",
        "fresh",
        Bytes::from_static(b"{\"title\":\"new\"}"),
    ));
    let out = sender.send(batch).await.unwrap();
    assert_eq!((out.indexed, out.refused.len()), (1, 10));
    for (r, i) in out.refused.iter().zip(0..) {
        assert_eq!(r.meta.id, id(i));
        assert_eq!(&*r.meta.index, "books");
        assert_eq!(r.error.error_type, "version_conflict_engine_exception");
        assert_eq!(r.error.status, 409);
        assert_eq!(r.attempts, 1);
        assert!(!r.error.reason.is_empty());
    }
    assert_eq!(sender.stats().refused, 10);
}
