//! The sigv4 crate's signatures against those of `aws-sigv4` (the signer of the official
//! AWS SDK for Rust), request by request, with fixed credentials and a fixed time: the
//! headers our signer adds (`authorization` above all) must be the ones the SDK's signer
//! computes for the same request. An independent check of our canonical request (paths
//! encoded twice but for S3, queries sorted and re-encoded, headers), string to sign and
//! signing key, on requests like the ones rfs sends.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_smithy_runtime_api::client::identity::Identity;
use sigv4::{sha256_hex, AwsCredentials, SigningInput};

/// 2026-11-29T08:35:17Z
fn at() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_795_941_317)
}

fn creds(token: Option<&str>) -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: token.map(str::to_string),
    }
}

/// One request as both signers see it.
struct Req<'a> {
    service: &'static str,
    region: &'a str,
    method: &'a str,
    /// `host[:port]`
    host: &'a str,
    /// As sent: already percent-encoded.
    path: &'a str,
    query: &'a str,
    body: &'a [u8],
}

/// The headers `aws-sigv4` adds, by name, with the settings that match what rfs signs:
/// `x-amz-content-sha256` signed, and for S3 the path encoded once and not normalized.
fn theirs(c: &AwsCredentials, r: &Req<'_>, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let identity: Identity = aws_credential_types::Credentials::new(
        &c.access_key_id,
        &c.secret_access_key,
        c.session_token.clone(),
        None,
        "test",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    if r.service == "s3" {
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    }
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(r.region)
        .name(r.service)
        .time(at())
        .settings(settings)
        .build()
        .expect("signing params")
        .into();
    let uri = if r.query.is_empty() {
        format!("https://{}{}", r.host, r.path)
    } else {
        format!("https://{}{}?{}", r.host, r.path, r.query)
    };
    let request = SignableRequest::new(
        r.method,
        uri,
        extra.iter().copied(),
        SignableBody::Bytes(r.body),
    )
    .expect("signable request");
    let (instructions, _) = aws_sigv4::http_request::sign(request, &params)
        .expect("aws-sigv4 signs")
        .into_parts();
    instructions
        .headers()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect()
}

/// The headers our `signed_headers` adds (the function every rfs client calls), by name.
fn ours(c: &AwsCredentials, r: &Req<'_>) -> BTreeMap<String, String> {
    sigv4::signed_headers(
        c,
        r.region,
        r.service,
        at(),
        r.method,
        r.host,
        (r.path, r.query),
        r.body,
    )
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A DynamoDB `BatchWriteItem` body of about 8 KB (25 items).
fn dynamo_body() -> Vec<u8> {
    let mut body = br#"{"RequestItems":{"room_events":["#.to_vec();
    for i in 0..25 {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(
            format!(
                r#"{{"PutRequest":{{"Item":{{"id":{{"S":"01J9ZK{i:020}"}},"seq":{{"N":"{i}"}},"text":{{"S":"hello from row {i} {pad}"}},"ok":{{"BOOL":true}}}}}}}}"#,
                pad = "x".repeat(200)
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(b"]}}");
    body
}

fn check(c: &AwsCredentials, r: &Req<'_>) {
    let ours = ours(c, r);
    let theirs = theirs(c, r, &[]);
    assert!(
        ours["authorization"].starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/"),
        "{}",
        ours["authorization"]
    );
    assert_eq!(
        ours, theirs,
        "{} {} {}?{} (ours, then aws-sigv4's)",
        r.service, r.method, r.path, r.query
    );
}

#[test]
fn dynamodb_batch_write_signs_alike() {
    let body = dynamo_body();
    assert!((7_000..9_000).contains(&body.len()), "{}", body.len());
    for token in [None, Some("FQoGZXIvYXdzEJr//////////wEaDOSESSIONTOKEN+/=")] {
        for host in ["dynamodb.eu-west-1.amazonaws.com", "127.0.0.1:8000"] {
            check(
                &creds(token),
                &Req {
                    service: "dynamodb",
                    region: "eu-west-1",
                    method: "POST",
                    host,
                    path: "/",
                    query: "",
                    body: &body,
                },
            );
        }
    }
}

#[test]
fn s3_requests_sign_alike() {
    let c = creds(Some("SESSIONTOKEN"));
    let cases: &[(&str, &str, &str)] = &[
        ("GET", "/rfs-snapshots/indices/Zx3_aB/0/__Hk7sA2Qe", ""),
        ("GET", "/rfs-snapshots/index-42", ""),
        (
            "GET",
            "/rfs-snapshots",
            "list-type=2&prefix=indices%2FZx3_aB%2F&max-keys=1000",
        ),
        (
            "GET",
            "/rfs-snapshots",
            "prefix=a%20b%2Bc&list-type=2&continuation-token=1%2Fx%3D%3D",
        ),
        // S3 signs the path as sent: an encoded space or slash stays encoded once
        ("GET", "/bucket/dir%20name/file%2Fpart.json", ""),
        ("HEAD", "/bucket/a/../b", ""),
        ("GET", "/bucket", "uploads"),
    ];
    for (method, path, query) in cases {
        check(
            &c,
            &Req {
                service: "s3",
                region: "us-east-1",
                method,
                host: "rfs-snapshots.s3.us-east-1.amazonaws.com",
                path,
                query,
                body: b"",
            },
        );
    }
    // a PUT with a body
    check(
        &c,
        &Req {
            service: "s3",
            region: "eu-central-1",
            method: "PUT",
            host: "s3.eu-central-1.amazonaws.com",
            path: "/bucket/failures/part-00001.jsonl",
            query: "",
            body: b"{\"id\":\"1\",\"error\":\"mapper_parsing_exception\"}\n",
        },
    );
}

#[test]
fn opensearch_paths_and_queries_sign_alike() {
    let c = creds(None);
    let cases: &[(&str, &str, &str, &[u8])] = &[
        ("POST", "/logs-%2A/_search", "q=a%20b&size=10", b"{}"),
        (
            "POST",
            "/_bulk",
            "refresh=false",
            b"{\"index\":{}}\n{\"a\":1}\n",
        ),
        (
            "GET",
            "/_cat/indices",
            "format=json&h=index,docs.count&bytes=b",
            b"",
        ),
        (
            "PUT",
            "/my-index",
            "",
            b"{\"settings\":{\"number_of_shards\":1}}",
        ),
        ("GET", "/", "", b""),
        ("GET", "/_snapshot/repo/snap-%3Cnow%2Fd%3E", "", b""),
        ("GET", "/-._~azAZ09/x", "b=2&a=1&a=0&c=", b""),
    ];
    for service in ["es", "aoss"] {
        for (method, path, query, body) in cases {
            check(
                &c,
                &Req {
                    service,
                    region: "eu-west-1",
                    method,
                    host: "search-rfs-abc.eu-west-1.es.amazonaws.com",
                    path,
                    query,
                    body,
                },
            );
        }
    }
}

/// `sign` with extra signed headers (what a DynamoDB call carries: `content-type` and
/// `x-amz-target`) against `aws-sigv4` told to sign the same headers.
#[test]
fn extra_signed_headers_sign_alike() {
    let c = creds(None);
    let body = dynamo_body();
    let payload = sha256_hex(&body);
    let r = Req {
        service: "dynamodb",
        region: "us-east-1",
        method: "POST",
        host: "dynamodb.us-east-1.amazonaws.com",
        path: "/",
        query: "",
        body: &body,
    };
    let extra = [
        ("content-type", "application/x-amz-json-1.0"),
        ("x-amz-target", "DynamoDB_20120810.BatchWriteItem"),
    ];
    let theirs = theirs(&c, &r, &extra);
    let date = &theirs["x-amz-date"];
    assert_eq!(date, "20261129T083517Z");
    let mut headers: Vec<(&str, &str)> = vec![
        ("Host", r.host),
        ("X-Amz-Date", date),
        ("X-Amz-Content-Sha256", &payload),
    ];
    headers.extend_from_slice(&extra);
    let ours = sigv4::sign(
        &c,
        r.region,
        r.service,
        date,
        &SigningInput {
            method: r.method,
            path: r.path,
            query: r.query,
            headers: &headers,
            payload_sha256: &payload,
        },
    );
    assert_eq!(
        ours.signed_headers,
        "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-target"
    );
    assert_eq!(ours.authorization, theirs["authorization"]);
}
