//! The lookup port's contract ([`connectors::lookup::Lookup`], how `verify` asks a target what
//! it holds), run over the lookup of every sink the registry opens by URL: `_mget` on the
//! test server (documents written with plain `_bulk` requests), the file sink's directory
//! (files written by hand, JSON lines and `_bulk` lines) and DynamoDB on `dynalite` (items
//! written with the official AWS SDK, an independent client). The same documents in each.
//!
//! What holds for every lookup: a present id holds exactly its source (equal to
//! [`Lookup::expected`] of the document sent); an absent id is reported absent, in its place
//! in the batch; the same id in two indices gives each index's own source, and an id of
//! one index is absent from the other, and an index that does not exist is said to be
//! missing (or, where the lookup cannot tell, holds none of them); a batch
//! larger than one request of the target (DynamoDB's `BatchGetItem` takes 100 keys) is
//! answered whole and in order; asking only whether documents are there gives the same
//! presence. A stored line that is not JSON is an error naming its file and line.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use connectors::lookup::{Held, Lookup, Wanted};
use connectors::{open_lookup, open_sink, Context, OpenedSource, Params, SourceShape};
use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

/// Documents of index `alpha`: more than one request of any target holds.
const MANY: usize = 260;

/// (index, id, source) of every document every target holds.
fn stored() -> Vec<(&'static str, String, Value)> {
    let mut out = Vec::new();
    for i in 0..MANY {
        out.push((
            "alpha",
            format!("a-{i}"),
            json!({"n": i, "name": format!("name é \" {i}"), "big": 9_007_199_254_740_993u64 + i as u64,
                   "ok": i % 2 == 0, "tags": ["x", i], "inner": {"k": format!("v{i}"), "none": null}}),
        ));
    }
    for i in 0..5 {
        out.push(("beta", format!("b-{i}"), json!({"beta": i})));
    }
    // The same id in both indices, with different sources.
    out.push(("alpha", "shared".into(), json!({"from": "alpha"})));
    out.push(("beta", "shared".into(), json!({"from": "beta"})));
    out
}

fn wanted(id: &str, source: &Value) -> Wanted {
    Wanted {
        id: id.to_string(),
        routing: None,
        source: Bytes::from(source.to_string()),
    }
}

/// The documents of `index` as verify would ask for them.
fn of(index: &str) -> Vec<Wanted> {
    stored()
        .into_iter()
        .filter(|(i, _, _)| *i == index)
        .map(|(_, id, s)| wanted(&id, &s))
        .collect()
}

/// `held` answers `docs` of `index`: each holds exactly its source, or is absent where
/// `absent` says so.
fn assert_holds(
    name: &str,
    lookup: &dyn Lookup,
    index: &str,
    docs: &[Wanted],
    held: &[Held],
    absent: &dyn Fn(&str) -> bool,
) {
    assert_eq!(
        held.len(),
        docs.len(),
        "{name} {index}: one answer per document"
    );
    for (d, h) in docs.iter().zip(held) {
        if absent(&d.id) {
            assert_eq!(h, &Held::Absent, "{name} {index}/{}: absent", d.id);
            continue;
        }
        let want = lookup
            .expected(index, d)
            .unwrap_or_else(|e| panic!("{name} {index}/{}: {e}", d.id));
        match h {
            Held::Holds(got) => assert_eq!(got, &want, "{name} {index}/{}", d.id),
            other => panic!("{name} {index}/{}: {other:?}", d.id),
        }
    }
}

/// The contract over one lookup of a target that holds [`stored`].
async fn contract(name: &str, lookup: &dyn Lookup) {
    for index in ["alpha", "beta"] {
        assert!(
            lookup.prepare(index).await.unwrap().is_some(),
            "{name}: {index} exists"
        );
    }
    let none = |_: &str| false;

    // Present ids, a batch larger than one request: each holds exactly its source.
    let alpha = of("alpha");
    assert!(alpha.len() > 250);
    let held = lookup.fetch("alpha", &alpha, true).await.unwrap();
    assert_holds(name, lookup, "alpha", &alpha, &held, &none);

    // Absent ids among present ones, each in its place; also without content.
    let mut mixed = Vec::new();
    for (i, d) in alpha.iter().take(120).enumerate() {
        mixed.push(d.clone());
        if i % 3 == 0 {
            mixed.push(wanted(&format!("missing-{i}"), &json!({"n": i})));
        }
    }
    let absent = |id: &str| id.starts_with("missing-");
    let held = lookup.fetch("alpha", &mixed, true).await.unwrap();
    assert_holds(name, lookup, "alpha", &mixed, &held, &absent);
    let presence = lookup.fetch("alpha", &mixed, false).await.unwrap();
    assert_eq!(presence.len(), mixed.len(), "{name}");
    for (d, h) in mixed.iter().zip(&presence) {
        match (absent(&d.id), h) {
            (true, Held::Absent) | (false, Held::Present | Held::Holds(_)) => {}
            other => panic!("{name}: alpha/{} without content: {other:?}", d.id),
        }
    }

    // Indices do not mix: `shared` is in both with each one's source; an id of one
    // index is absent from the other, and from an index that does not exist.
    let beta = of("beta");
    let held = lookup.fetch("beta", &beta, true).await.unwrap();
    assert_holds(name, lookup, "beta", &beta, &held, &none);
    let shared_alpha = wanted("shared", &json!({"from": "alpha"}));
    let shared_beta = wanted("shared", &json!({"from": "beta"}));
    let held = lookup
        .fetch("alpha", std::slice::from_ref(&shared_alpha), true)
        .await
        .unwrap();
    assert_holds(
        name,
        lookup,
        "alpha",
        std::slice::from_ref(&shared_alpha),
        &held,
        &none,
    );
    let held = lookup
        .fetch("beta", std::slice::from_ref(&shared_beta), true)
        .await
        .unwrap();
    assert_holds(name, lookup, "beta", &[shared_beta], &held, &none);
    // Alpha's source looked for in beta: held, and not equal to it.
    let held = lookup
        .fetch("beta", std::slice::from_ref(&shared_alpha), true)
        .await
        .unwrap();
    let alpha_form = lookup.expected("beta", &shared_alpha).unwrap();
    assert!(
        matches!(&held[..], [Held::Holds(got)] if *got != alpha_form),
        "{name}: beta/shared is beta's: {held:?}"
    );
    let crossed: Vec<Wanted> = alpha.iter().take(3).cloned().collect();
    let everywhere_absent = |_: &str| true;
    let held = lookup.fetch("beta", &crossed, true).await.unwrap();
    assert_holds(name, lookup, "beta", &crossed, &held, &everywhere_absent);
    // An index that does not exist: prepare says so, or (one DynamoDB table holds every
    // index, so the lookup cannot tell) its documents are absent.
    let gamma = "gamma-not-there";
    if lookup.prepare(gamma).await.unwrap().is_some() {
        let held = lookup.fetch(gamma, &crossed, true).await.unwrap();
        assert_holds(name, lookup, gamma, &crossed, &held, &everywhere_absent);
    }
}

fn shape() -> SourceShape {
    SourceShape {
        key_column: None,
        hints: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mget_lookup_keeps_the_contract() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    // Written with plain `_bulk` requests, not through rfs.
    let mut body = String::new();
    for (index, id, source) in stored() {
        body.push_str(&json!({"index": {"_index": index, "_id": id}}).to_string());
        body.push('\n');
        body.push_str(&source.to_string());
        body.push('\n');
    }
    let r = reqwest::Client::new()
        .post(format!("{}/_bulk?refresh=true", server.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    assert_eq!(server.documents("alpha").len(), MANY + 1);
    let opened = open_lookup(&server.url(), &Params::new(), &Context::default(), &shape())
        .await
        .unwrap();
    contract("mget", opened.lookup.as_ref()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_lookup_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    // `alpha` as JSON lines (one line rewritten later: the last one wins), `beta` as
    // `_bulk` lines, as the file sink writes them.
    let mut lines = String::new();
    let mut bulk = String::new();
    for (index, id, source) in stored() {
        if index == "alpha" {
            if id == "a-7" {
                let old = json!({"_index": index, "_id": id, "_source": {"old": true}});
                lines.push_str(&format!("{old}\n"));
            }
            let line = json!({"_index": index, "_id": id, "_source": source});
            lines.push_str(&format!("{line}\n"));
        } else {
            bulk.push_str(&format!(
                "{}\n{source}\n",
                json!({"index": {"_index": index, "_id": id}})
            ));
        }
    }
    std::fs::write(dir.path().join("alpha.jsonl"), lines).unwrap();
    std::fs::write(dir.path().join("beta.bulk"), bulk).unwrap();
    let url = format!("file://{}", dir.path().display());
    let opened = open_lookup(&url, &Params::new(), &Context::default(), &shape())
        .await
        .unwrap();
    contract("files", opened.lookup.as_ref()).await;

    // A stored line that is not JSON: an error naming the file and the line.
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(
        bad.path().join("alpha.jsonl"),
        "{\"_index\":\"alpha\",\"_id\":\"1\",\"_source\":{}}\n{\"_index\":\"alpha\",\"_id\":\"2\",\"_source\":{\"x\":\n",
    )
    .unwrap();
    let url = format!("file://{}", bad.path().display());
    let e = match open_lookup(&url, &Params::new(), &Context::default(), &shape()).await {
        Ok(_) => panic!("a broken line was read"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("alpha.jsonl") && e.contains("line 2"), "{e}");
    // A `_bulk` action without its source line: the same.
    std::fs::write(
        bad.path().join("alpha.jsonl"),
        "{\"_index\":\"alpha\",\"_id\":\"1\",\"_source\":{}}\n",
    )
    .unwrap();
    std::fs::write(
        bad.path().join("beta.bulk"),
        "{\"index\":{\"_index\":\"beta\",\"_id\":\"b-1\"}}\n",
    )
    .unwrap();
    let e = match open_lookup(&url, &Params::new(), &Context::default(), &shape()).await {
        Ok(_) => panic!("a broken _bulk file was read"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("beta.bulk") && e.contains("line 1"), "{e}");
}

#[test]
fn dynamodb_lookup_keeps_the_contract() {
    let Some(dynalite) = testkit::services::Dynalite::start("dynamodb_lookup_keeps_the_contract")
    else {
        return;
    };
    // The registry's lookup takes its credentials from the environment, as `rfs` does; no
    // other test of this binary reads them.
    std::env::set_var("AWS_ACCESS_KEY_ID", "AKIDLOOKUP");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "lookup-secret");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let endpoint = dynalite.endpoint();
        let url = format!("dynamodb://docs?region=us-east-1&endpoint={endpoint}");
        // The table as the sink creates it for documents (`_index`, `_id`); its items
        // written with the AWS SDK.
        let facts = OpenedSource {
            source: connectors::BoxedSource::new(Arc::new(Nothing)),
            kind: "documents",
            key_column: None,
            hints: Default::default(),
            groups: vec!["alpha".into(), "beta".into()],
            routed: None,
            removed: Vec::new(),
            notes: Vec::new(),
            metadata: None,
            key_check: None,
        };
        let creating = Params::new().with("create-table", "true");
        drop(
            open_sink(&url, &creating, &Context::default(), &facts)
                .await
                .unwrap(),
        );
        let sdk = testkit::dynamo_sdk::client(&endpoint).await;
        for (index, id, source) in stored() {
            let mut item: BTreeMap<String, testkit::dynamo_sdk::Av> = source
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), testkit::dynamo_sdk::json_av(v)))
                .collect();
            item.insert("_index".into(), testkit::dynamo_sdk::s(index));
            item.insert("_id".into(), testkit::dynamo_sdk::s(id));
            sdk.put_item()
                .table_name("docs")
                .set_item(Some(item.into_iter().collect()))
                .send()
                .await
                .unwrap();
        }
        let opened = open_lookup(&url, &Params::new(), &Context::default(), &shape())
            .await
            .unwrap();
        contract("dynamodb", opened.lookup.as_ref()).await;
    });
}

/// A source with nothing in it: the sink needs one to be opened.
struct Nothing;

impl engine::Source for Nothing {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Result<engine::Plan, engine::SourceError> {
        Ok(engine::Plan::default())
    }
    fn read(
        &self,
        _: &coordination::WorkItem,
        _: &coordination::Cursor,
        _: &mut dyn FnMut(engine::Read) -> bool,
    ) -> Result<(), engine::SourceError> {
        Ok(())
    }
}
