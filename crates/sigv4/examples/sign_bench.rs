//! Time to sign one request, the sigv4 crate's signer against `aws-sigv4` (the signer of
//! the official AWS SDK for Rust), on one thread:
//!
//!   cargo run --release -p sigv4 --example sign_bench [N]     # N requests of each kind (50000)
//!   ROUNDS=3                                                  # best of
//!
//! - dynamodb: a `BatchWriteItem` POST of 25 items, ~8 KB of body (the payload's SHA-256
//!   is most of the work).
//! - s3: a GET of an object, no body.
//!
//! Both sign the same headers (`host`, `x-amz-date`, `x-amz-content-sha256`, a session
//! token) and return the headers to add; both hash the body. The signatures are checked to
//! be equal first (tests/agrees_with_aws_sigv4.rs checks many more requests). Per request:
//! wall-clock µs and CPU µs of this process (one thread: the two agree on a quiet machine).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_smithy_runtime_api::client::identity::Identity;
use sigv4::AwsCredentials;

struct Req {
    name: &'static str,
    service: &'static str,
    method: &'static str,
    host: &'static str,
    path: &'static str,
    body: Vec<u8>,
}

fn creds() -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDBENCH".into(),
        secret_access_key: "bench-secret-key-of-forty-characters-xxxx".into(),
        session_token: Some("FQoGZXIvYXdzEJr//////////wEaDBENCHSESSIONTOKEN".into()),
    }
}

fn ours(c: &AwsCredentials, r: &Req, now: SystemTime) -> Vec<(&'static str, String)> {
    sigv4::signed_headers(
        c,
        "eu-west-1",
        r.service,
        now,
        r.method,
        r.host,
        (r.path, ""),
        &r.body,
    )
}

/// As the SDK signs a request: parameters and signable request built per request.
fn theirs(identity: &Identity, r: &Req, now: SystemTime) -> Vec<(String, String)> {
    let mut settings = SigningSettings::default();
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    if r.service == "s3" {
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    }
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(identity)
        .region("eu-west-1")
        .name(r.service)
        .time(now)
        .settings(settings)
        .build()
        .expect("signing params")
        .into();
    let request = SignableRequest::new(
        r.method,
        format!("https://{}{}", r.host, r.path),
        std::iter::empty(),
        SignableBody::Bytes(&r.body),
    )
    .expect("signable request");
    let (instructions, _) = aws_sigv4::http_request::sign(request, &params)
        .expect("aws-sigv4 signs")
        .into_parts();
    instructions
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn dynamo_body() -> Vec<u8> {
    let mut body = br#"{"RequestItems":{"room_events":["#.to_vec();
    for i in 0..25 {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(
            format!(
                r#"{{"PutRequest":{{"Item":{{"id":{{"S":"01J9ZK{i:020}"}},"seq":{{"N":"{i}"}},"text":{{"S":"hello from row {i} {pad}"}},"ok":{{"BOOL":true}}}}}}}}"#,
                pad = "x".repeat(230)
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(b"]}}");
    body
}

/// CPU seconds (user + system) this process has used.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}

/// (wall, CPU seconds) of `n` calls of `f`.
fn time(n: usize, mut f: impl FnMut()) -> (Duration, f64) {
    let cpu = cpu_seconds();
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    (start.elapsed(), cpu_seconds() - cpu)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(50_000, |a| a.parse().expect("N"));
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let c = creds();
    let identity: Identity = aws_credential_types::Credentials::new(
        &c.access_key_id,
        &c.secret_access_key,
        c.session_token.clone(),
        None,
        "bench",
    )
    .into();
    let requests = [
        Req {
            name: "dynamodb",
            service: "dynamodb",
            method: "POST",
            host: "dynamodb.eu-west-1.amazonaws.com",
            path: "/",
            body: dynamo_body(),
        },
        Req {
            name: "s3",
            service: "s3",
            method: "GET",
            host: "rfs-snapshots.s3.eu-west-1.amazonaws.com",
            path: "/indices/Zx3_aB7kQ0eJ1/0/__Hk7sA2QeTfW9x",
            body: Vec::new(),
        },
    ];
    println!("signing {n} requests per measurement, best of {rounds} rounds, one thread");
    for r in &requests {
        // the same signature from both, or the timing means nothing
        let now = SystemTime::now();
        let a: BTreeMap<String, String> = ours(&c, r, now)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let b: BTreeMap<String, String> = theirs(&identity, r, now).into_iter().collect();
        assert_eq!(a, b, "{}: the signers disagree", r.name);
        let mut best = [(Duration::MAX, 0.0); 2];
        for _ in 0..rounds {
            let m = [
                time(n, || {
                    black_box(ours(&c, black_box(r), SystemTime::now()));
                }),
                time(n, || {
                    black_box(theirs(&identity, black_box(r), SystemTime::now()));
                }),
            ];
            for (b, m) in best.iter_mut().zip(m) {
                if m.0 < b.0 {
                    *b = m;
                }
            }
        }
        let us = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
        for (who, (wall, cpu)) in ["sigv4", "aws-sigv4"].iter().zip(best) {
            println!(
                "sign {:<8} {:>5} B  {who:<9} {:>8.2} µs per request  {:>9.0} requests/s  CPU {:>8.2} µs per request",
                r.name,
                r.body.len(),
                us(wall),
                n as f64 / wall.as_secs_f64(),
                cpu * 1e6 / n as f64,
            );
        }
        println!(
            "sign {:<8} aws-sigv4/sigv4: {:.2}× the time per request",
            r.name,
            best[1].0.as_secs_f64() / best[0].0.as_secs_f64()
        );
    }
}
