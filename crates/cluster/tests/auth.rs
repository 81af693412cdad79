//! Authentication headers as they arrive at a server: basic, API key, and SigV4 recomputed
//! from the received request (method, path, query, Host header, body) by the signer's rules.

use std::collections::BTreeMap;

use cluster::{Auth, AwsService, Client, ClientConfig, Method, RequestCompression, SigV4Config};
use sha2::{Digest, Sha256};
use sigv4::{AwsCredentials, SigningInput};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

struct Captured {
    method: String,
    target: String,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// Answer every request as OpenSearch 2.11.0 and pass what arrived to the test.
async fn capture_server() -> (u16, mpsc::UnboundedReceiver<Captured>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let n = tcp.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break p + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let mut lines = head.split("\r\n");
                let mut first = lines.next().unwrap().split(' ');
                let (method, target) = (
                    first.next().unwrap().to_string(),
                    first.next().unwrap().to_string(),
                );
                let headers: BTreeMap<String, String> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                let len: usize = headers
                    .get("content-length")
                    .map_or(0, |v| v.parse().unwrap());
                while buf.len() < head_end + len {
                    let n = tcp.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body = buf[head_end..].to_vec();
                let _ = tx.send(Captured {
                    method,
                    target,
                    headers,
                    body,
                });
                let reply =
                    r#"{"version":{"distribution":"opensearch","number":"2.11.0"},"count":0}"#;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
                let _ = tcp.write_all(resp.as_bytes()).await;
            });
        }
    });
    (port, rx)
}

fn config(port: u16, auth: Auth) -> ClientConfig {
    let mut c = ClientConfig::new(format!("http://127.0.0.1:{port}"));
    c.auth = auth;
    c.compression = RequestCompression::Off;
    c
}

#[tokio::test]
async fn basic_and_api_key_headers() {
    let (port, mut rx) = capture_server().await;
    let basic = Auth::Basic {
        username: "elastic".into(),
        password: "pa:ss".into(),
    };
    Client::connect(config(port, basic)).await.unwrap();
    let got = rx.recv().await.unwrap();
    // base64("elastic:pa:ss")
    assert_eq!(got.headers["authorization"], "Basic ZWxhc3RpYzpwYTpzcw==");

    Client::connect(config(
        port,
        Auth::ApiKey("VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw==".into()),
    ))
    .await
    .unwrap();
    let got = rx.recv().await.unwrap();
    assert_eq!(
        got.headers["authorization"],
        "ApiKey VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw=="
    );
}

#[tokio::test]
async fn sigv4_signature_matches_the_received_request() {
    let (port, mut rx) = capture_server().await;
    let credentials = AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: Some("SESSION".into()),
    };
    for service in [AwsService::Es, AwsService::Aoss] {
        let auth = Auth::SigV4(SigV4Config {
            region: Some("eu-west-3".into()),
            service,
            credentials: Some(credentials.clone()),
        });
        let mut cfg = config(port, auth);
        cfg.compression = RequestCompression::On; // the signature covers the compressed bytes
        let client = Client::new(cfg).unwrap();
        let body = serde_json::json!({ "query": { "match": { "msg": "x".repeat(2000) } } });
        client
            .request(
                Method::POST,
                "/logs-%2A,other/_search?size=0&q=a%20b",
                Some(&body),
            )
            .await
            .unwrap();
        let got = rx.recv().await.unwrap();

        assert_eq!(got.headers["content-encoding"], "gzip");
        let payload = hex::encode(Sha256::digest(&got.body));
        assert_eq!(got.headers["x-amz-content-sha256"], payload);
        assert_eq!(got.headers["x-amz-security-token"], "SESSION");
        let (path, query) = got.target.split_once('?').unwrap_or((&got.target, ""));
        let date = got.headers["x-amz-date"].clone();
        let signed = [
            ("host", got.headers["host"].as_str()),
            ("x-amz-content-sha256", payload.as_str()),
            ("x-amz-date", date.as_str()),
            ("x-amz-security-token", "SESSION"),
        ];
        let expected = sigv4::sign(
            &credentials,
            "eu-west-3",
            service.name(),
            &date,
            &SigningInput {
                method: &got.method,
                path,
                query,
                headers: &signed,
                payload_sha256: &payload,
            },
        );
        assert_eq!(
            got.headers["authorization"], expected.authorization,
            "{}",
            expected.canonical_request
        );
        assert!(expected
            .authorization
            .contains(&format!("/eu-west-3/{}/aws4_request", service.name())));
    }
}
