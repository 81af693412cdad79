//! Shared helpers of the DynamoDB table tests: credentials for the `rfs` processes, and the
//! official AWS SDK for Rust (an independent client, never the sink's code) pointed at the
//! test's dynalite, to read back and to tamper with what `rfs table run` wrote. Values are
//! compared as DynamoDB means them: numbers by value, everything else exactly.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::process::Command;

pub use aws_sdk_dynamodb::types::AttributeValue as Av;
use serde_json::Value;

pub const ACCESS_KEY: &str = "AKIDRFSTABLETEST";
/// Must never show in anything rfs prints or writes.
pub const SECRET: &str = "rfs-table-test-SECRET-wJalrXUtnFEMI";

/// The AWS environment of an `rfs` process: static keys, no profile or config file of the
/// machine's user.
pub fn aws_env(c: &mut Command) {
    c.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
        .env("AWS_CONFIG_FILE", "/nonexistent/config");
}

/// The SDK on a runtime of its own (the tests are synchronous).
pub struct Sdk {
    pub rt: tokio::runtime::Runtime,
    pub client: aws_sdk_dynamodb::Client,
}

/// An item as the SDK gives it.
pub type SdkItem = BTreeMap<String, Av>;

impl Sdk {
    pub fn new(endpoint: &str) -> Sdk {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async {
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
            aws_sdk_dynamodb::Client::new(&conf)
        });
        Sdk { rt, client }
    }

    /// Every item of `table` through a 4-segment parallel scan with consistent reads, in
    /// the order the scan gives them (an item per key: DynamoDB has no duplicates to show,
    /// the caller counts).
    pub fn scan(&self, table: &str) -> Vec<SdkItem> {
        self.rt.block_on(async {
            let mut all = Vec::new();
            for segment in 0..4 {
                let mut pages = self
                    .client
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
        })
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
    let names: std::collections::BTreeSet<&String> = got.keys().chain(want.keys()).collect();
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

/// Embedded JSON (PostgreSQL's own text of a json/jsonb value, parsed here) as the
/// attribute DynamoDB should hold: objects M, arrays L, numbers N, strings S, booleans
/// BOOL, null NULL.
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
