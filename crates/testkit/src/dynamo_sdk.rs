//! The official AWS SDK for Rust pointed at a test's DynamoDB-API server (`dynalite`): the
//! independent client that reads back, and tampers with, what rfs wrote. Nothing here goes
//! through rfs's own `dynamo` crate. Values compare as DynamoDB means them: numbers by value
//! (`1.50`, `15e-1` and `1.5` are equal), everything else exactly.
//!
//! Behind the `dynamo-sdk` feature, so that only the tests that read DynamoDB build the SDK.

use std::collections::{BTreeMap, BTreeSet};

pub use aws_sdk_dynamodb::types::AttributeValue as Av;
pub use aws_sdk_dynamodb::Client;
use serde_json::Value;

/// An item as the SDK gives it, attributes by name.
pub type SdkItem = BTreeMap<String, Av>;

/// A client of `endpoint` with static credentials of its own (not the ones under test), in
/// region `us-east-1`, with no profile or config file of the machine's user.
pub async fn client(endpoint: &str) -> Client {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let conf = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "AKIDSDK",
            "sdk-secret",
            None,
            None,
            "test",
        ))
        .endpoint_url(endpoint)
        .http_client(http)
        .load()
        .await;
    Client::new(&conf)
}

/// Every item of `table` through a 4-segment parallel scan with consistent reads, in the
/// order the scan gives them. DynamoDB holds one item per key, so duplicates cannot show
/// here: callers that key the items count them.
pub async fn scan(client: &Client, table: &str) -> Vec<SdkItem> {
    let mut all = Vec::new();
    for segment in 0..4 {
        let mut pages = client
            .scan()
            .table_name(table)
            .segment(segment)
            .total_segments(4)
            .consistent_read(true)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.unwrap_or_else(|e| panic!("scan {table}: {e:?}"));
            for item in page.items.unwrap_or_default() {
                all.push(item.into_iter().collect());
            }
        }
    }
    all
}

/// `items` by the string attribute `key`, asserting that no key comes twice.
pub fn by_key(items: Vec<SdkItem>, key: &str) -> BTreeMap<String, SdkItem> {
    let mut all = BTreeMap::new();
    for item in items {
        let id = item[key]
            .as_s()
            .unwrap_or_else(|_| panic!("{key} of {item:?}"))
            .clone();
        assert!(
            all.insert(id.clone(), item).is_none(),
            "{id}: one item per key"
        );
    }
    all
}

/// The SDK on a runtime of its own, for synchronous tests (not usable inside a runtime:
/// async tests call [`client`] and [`scan`]).
pub struct Sdk {
    pub rt: tokio::runtime::Runtime,
    pub client: Client,
}

impl Sdk {
    pub fn new(endpoint: &str) -> Sdk {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(client(endpoint));
        Sdk { rt, client }
    }

    /// Every item of `table`, as [`scan`] reads them.
    pub fn scan(&self, table: &str) -> Vec<SdkItem> {
        self.rt.block_on(scan(&self.client, table))
    }

    /// The key schema: (attribute, HASH|RANGE, S|N|B) in schema order.
    pub fn key_schema(&self, table: &str) -> Vec<(String, String, String)> {
        self.rt.block_on(async {
            let t = self
                .client
                .describe_table()
                .table_name(table)
                .send()
                .await
                .unwrap_or_else(|e| panic!("describe {table}: {e:?}"))
                .table
                .unwrap();
            let types: BTreeMap<String, String> = t
                .attribute_definitions()
                .iter()
                .map(|d| {
                    (
                        d.attribute_name().to_string(),
                        d.attribute_type().as_str().to_string(),
                    )
                })
                .collect();
            t.key_schema()
                .iter()
                .map(|k| {
                    let name = k.attribute_name().to_string();
                    let ty = types.get(&name).cloned().unwrap_or_default();
                    (name, k.key_type().as_str().to_string(), ty)
                })
                .collect()
        })
    }

    pub fn put(&self, table: &str, item: SdkItem) {
        self.rt
            .block_on(
                self.client
                    .put_item()
                    .table_name(table)
                    .set_item(Some(item.into_iter().collect()))
                    .send(),
            )
            .unwrap_or_else(|e| panic!("put into {table}: {e:?}"));
    }

    pub fn delete(&self, table: &str, key: SdkItem) {
        self.rt
            .block_on(
                self.client
                    .delete_item()
                    .table_name(table)
                    .set_key(Some(key.into_iter().collect()))
                    .send(),
            )
            .unwrap_or_else(|e| panic!("delete from {table}: {e:?}"));
    }
}

/// A decimal as (negative, significant digits, power of ten of the first digit), computed
/// here without rfs's code, so `1.50`, `15e-1` and `1.5` compare equal.
pub fn decimal(text: &str) -> (bool, String, i64) {
    let (neg, t) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text),
    };
    let (mantissa, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i64>().unwrap()),
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int}{frac}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all
        .trim_start_matches('0')
        .trim_end_matches('0')
        .to_string();
    if digits.is_empty() {
        return (false, String::new(), 0);
    }
    (neg, digits, int.len() as i64 - lead as i64 - 1 + exp)
}

/// Equal as DynamoDB means it: numbers by value, the rest exactly.
pub fn same(a: &Av, b: &Av) -> bool {
    match (a, b) {
        (Av::N(x), Av::N(y)) => decimal(x) == decimal(y),
        (Av::M(x), Av::M(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Av::L(x), Av::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w)),
        _ => a == b,
    }
}

/// Attribute by attribute: the same names, each value the same.
pub fn assert_item(id: &str, got: &SdkItem, want: &SdkItem) {
    let names: BTreeSet<&String> = got.keys().chain(want.keys()).collect();
    for name in names {
        match (got.get(name), want.get(name)) {
            (Some(g), Some(w)) => assert!(same(g, w), "{id}.{name}: got {g:?}, want {w:?}"),
            (g, w) => panic!("{id}.{name}: got {g:?}, want {w:?}"),
        }
    }
}

pub fn s(v: impl Into<String>) -> Av {
    Av::S(v.into())
}

pub fn n(v: impl Into<String>) -> Av {
    Av::N(v.into())
}

pub fn b(bytes: &[u8]) -> Av {
    Av::B(aws_sdk_dynamodb::primitives::Blob::new(bytes))
}

/// A map attribute of `pairs`.
pub fn m(pairs: &[(&str, Av)]) -> Av {
    Av::M(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

/// JSON as the attribute DynamoDB should hold for it: objects M, arrays L, numbers N,
/// strings S, booleans BOOL, null NULL.
pub fn json_av(v: &Value) -> Av {
    match v {
        Value::Null => Av::Null(true),
        Value::Bool(b) => Av::Bool(*b),
        Value::Number(x) => Av::N(x.to_string()),
        Value::String(x) => Av::S(x.clone()),
        Value::Array(a) => Av::L(a.iter().map(json_av).collect()),
        Value::Object(o) => Av::M(o.iter().map(|(k, v)| (k.clone(), json_av(v))).collect()),
    }
}

/// An attribute as the JSON it was written from (the inverse of [`json_av`]; a binary or
/// set attribute has no JSON form and fails the test).
pub fn json_of(v: &Av) -> Value {
    match v {
        Av::S(s) => Value::String(s.clone()),
        Av::N(n) => serde_json::from_str(n).unwrap_or_else(|_| panic!("number {n}")),
        Av::Bool(b) => Value::Bool(*b),
        Av::Null(_) => Value::Null,
        Av::L(l) => Value::Array(l.iter().map(json_of).collect()),
        Av::M(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), json_of(v))).collect()),
        other => panic!("unexpected attribute {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_by_value_and_the_rest_exactly() {
        assert!(same(&n("1.50"), &n("15e-1")));
        assert!(same(&n("-0.000125"), &n("-1.25E-4")));
        assert!(same(&n("0"), &n("0.00")));
        assert!(!same(&n("1.5"), &n("-1.5")));
        assert!(!same(&n("150"), &n("15")));
        assert!(!same(&s("1.5"), &n("1.5")));
        let nested = m(&[("a", Av::L(vec![n("2.0"), s("x")]))]);
        assert!(same(&nested, &m(&[("a", Av::L(vec![n("2"), s("x")]))])));
        assert!(!same(&nested, &m(&[("a", Av::L(vec![n("2")]))])));
    }

    #[test]
    fn json_goes_to_attributes_and_back() {
        let v = serde_json::json!({"a": [1, "two", null, true, {"b": 2.5}], "c": {}});
        assert_eq!(json_of(&json_av(&v)), v);
    }
}
