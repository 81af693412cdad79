//! Signing one request: canonical request, string to sign, signing key, `Authorization`.

use std::time::SystemTime;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::clock::UtcTime;
use crate::credentials::AwsCredentials;
use crate::provider::{CredentialsProvider, ProviderError};

/// Everything a signature covers, with the path and query exactly as sent on the wire.
#[derive(Debug, Clone)]
pub struct SigningInput<'a> {
    pub method: &'a str,
    /// Path as sent (already percent-encoded), e.g. `/my-index/_bulk`.
    pub path: &'a str,
    /// Query as sent, without `?` (may be empty).
    pub query: &'a str,
    /// Headers to sign (`host` and `x-amz-date` at least); names in any case, duplicates allowed.
    pub headers: &'a [(&'a str, &'a str)],
    /// Lower-case hex SHA-256 of the payload.
    pub payload_sha256: &'a str,
}

/// The intermediate and final results of signing, exposed so tests can check every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub canonical_request: String,
    pub string_to_sign: String,
    pub signed_headers: String,
    pub signature: String,
    pub authorization: String,
}

/// Sign `input` at `amz_date` (`YYYYMMDDTHHMMSSZ`).
pub fn sign(
    credentials: &AwsCredentials,
    region: &str,
    service: &str,
    amz_date: &str,
    input: &SigningInput<'_>,
) -> Signature {
    let date = &amz_date[..amz_date.len().min(8)];

    // Headers: lower-case names, values trimmed with inner runs of spaces collapsed,
    // duplicates joined with commas in their original order, sorted by name.
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in input.headers {
        let name = name.to_ascii_lowercase();
        let value = collapse_spaces(value);
        match headers.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => {
                v.push(',');
                v.push_str(&value);
            }
            None => headers.push((name, value)),
        }
    }
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    let signed_headers = headers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let mut canonical_headers = String::new();
    for (n, v) in &headers {
        canonical_headers.push_str(n);
        canonical_headers.push(':');
        canonical_headers.push_str(v);
        canonical_headers.push('\n');
    }

    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        input.method,
        canonical_uri(input.path, service),
        canonical_query(input.query),
        canonical_headers,
        signed_headers,
        input.payload_sha256
    );
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let mut key = hmac(
        format!("AWS4{}", credentials.secret_access_key).as_bytes(),
        date.as_bytes(),
    );
    for part in [region, service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex::encode(hmac(&key, string_to_sign.as_bytes()));
    let authorization = format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        credentials.access_key_id
    );
    Signature {
        canonical_request,
        string_to_sign,
        signed_headers,
        signature,
        authorization,
    }
}

/// Credentials bound to a region and service, ready to sign requests.
#[derive(Debug, Clone)]
pub struct Signer {
    pub credentials: AwsCredentials,
    pub region: String,
    /// The signing name: `es`, `aoss`, `dynamodb`, …
    pub service: &'static str,
}

impl Signer {
    /// The headers to add to one request: `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token` (with session credentials) and `authorization`.
    pub fn headers(
        &self,
        now: SystemTime,
        method: &str,
        host: &str,
        path_and_query: (&str, &str),
        body: &[u8],
    ) -> Vec<(&'static str, String)> {
        signed_headers(
            &self.credentials,
            &self.region,
            self.service,
            now,
            method,
            host,
            path_and_query,
            body,
        )
    }
}

/// A signer whose credentials come from a [`CredentialsProvider`] at each request, so
/// that refreshed credentials are used as soon as they are there.
#[derive(Debug, Clone)]
pub struct ProvidedSigner {
    pub provider: CredentialsProvider,
    pub region: String,
    /// The signing name: `es`, `aoss`, `dynamodb`, …
    pub service: &'static str,
}

impl ProvidedSigner {
    /// As [`Signer::headers`], with the provider's current credentials.
    pub async fn headers(
        &self,
        now: SystemTime,
        method: &str,
        host: &str,
        path_and_query: (&str, &str),
        body: &[u8],
    ) -> Result<Vec<(&'static str, String)>, ProviderError> {
        let credentials = self.provider.credentials().await?;
        Ok(signed_headers(
            &credentials,
            &self.region,
            self.service,
            now,
            method,
            host,
            path_and_query,
            body,
        ))
    }
}

/// The headers to add to one request signed with `credentials`: `x-amz-date`,
/// `x-amz-content-sha256`, `x-amz-security-token` (with session credentials) and
/// `authorization`.
#[allow(clippy::too_many_arguments)]
pub fn signed_headers(
    credentials: &AwsCredentials,
    region: &str,
    service: &str,
    now: SystemTime,
    method: &str,
    host: &str,
    path_and_query: (&str, &str),
    body: &[u8],
) -> Vec<(&'static str, String)> {
    let amz_date = UtcTime::from_system(now).amz_date();
    let payload = sha256_hex(body);
    let mut headers: Vec<(&str, &str)> = vec![
        ("host", host),
        ("x-amz-date", &amz_date),
        ("x-amz-content-sha256", &payload),
    ];
    if let Some(token) = &credentials.session_token {
        headers.push(("x-amz-security-token", token));
    }
    let sig = sign(
        credentials,
        region,
        service,
        &amz_date,
        &SigningInput {
            method,
            path: path_and_query.0,
            query: path_and_query.1,
            headers: &headers,
            payload_sha256: &payload,
        },
    );
    let mut out = vec![
        ("x-amz-date", amz_date.clone()),
        ("x-amz-content-sha256", payload.clone()),
    ];
    if let Some(token) = &credentials.session_token {
        out.push(("x-amz-security-token", token.clone()));
    }
    out.push(("authorization", sig.authorization));
    out
}

/// Lower-case hex SHA-256, as the payload hash and `x-amz-content-sha256` want it.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn collapse_spaces(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for word in value.trim().split(' ').filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Every service but S3 signs the wire path encoded once more (so `%2A` becomes `%252A`).
fn canonical_uri(path: &str, service: &str) -> String {
    let path = if path.is_empty() { "/" } else { path };
    if service == "s3" {
        path.to_string()
    } else {
        encode(path.as_bytes(), true)
    }
}

/// Parameters decoded, re-encoded strictly and sorted.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                encode(&percent_decode(k), false),
                encode(&percent_decode(v), false),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encode everything but RFC 3986 unreserved characters (and `/` when asked).
fn encode(bytes: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query name or value as bytes (an escape that is not two hex digits is kept).
fn percent_decode(s: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(s).collect()
}

#[cfg(test)]
mod tests {
    //! Vectors from the published AWS Signature Version 4 test suite: credentials
    //! AKIDEXAMPLE, date 20150830T123600Z, region us-east-1, service `service`.
    use super::*;

    /// name, method, path, query, extra headers, expected signature
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static str,
    );

    const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn creds() -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    fn vector(
        method: &str,
        path: &str,
        query: &str,
        extra: &[(&str, &str)],
        body: &str,
    ) -> Signature {
        let mut headers = vec![("Host", "example.amazonaws.com")];
        headers.extend_from_slice(extra);
        headers.push(("X-Amz-Date", "20150830T123600Z"));
        let payload = sha256_hex(body.as_bytes());
        sign(
            &creds(),
            "us-east-1",
            "service",
            "20150830T123600Z",
            &SigningInput {
                method,
                path,
                query,
                headers: &headers,
                payload_sha256: &payload,
            },
        )
    }

    #[test]
    fn get_vanilla() {
        let s = vector("GET", "/", "", &[], "");
        assert_eq!(
            s.canonical_request,
            format!(
                "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n{EMPTY_SHA256}"
            )
        );
        assert_eq!(
            s.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n\
             bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
        );
        assert_eq!(
            s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    #[test]
    fn published_signatures() {
        let cases: &[Case] = &[
            ("get-vanilla-query", "GET", "/", "", &[], "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
            ("get-vanilla-query-order-key-case", "GET", "/", "Param2=value2&Param1=value1", &[], "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
            ("get-vanilla-empty-query-key", "GET", "/", "Param1=value1", &[], "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"),
            ("get-vanilla-query-unreserved", "GET", "/", "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", &[], "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"),
            ("get-unreserved", "GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "", &[], "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
            ("get-header-key-duplicate", "GET", "/", "", &[("My-Header1", "value2"), ("My-Header1", "value2"), ("My-Header1", "value1")], "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"),
            ("get-header-value-trim", "GET", "/", "", &[("My-Header1", " value1"), ("My-Header2", " \"a   b   c\"")], "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"),
            ("post-vanilla", "POST", "/", "", &[], "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
            ("post-vanilla-query", "POST", "/", "Param1=value1", &[], "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"),
            ("post-vanilla-query-space", "POST", "/", "p=", &[], "e71688addb58a26418614085fb730ba3faa623b461c17f48f2fbdb9361b94a9b"),
            ("post-vanilla-query-nonunreserved", "POST", "/", "%40%23%24%25%5E=&%2B=%2F%2C%3F%3E%3C%60%22%3B%3A%5C%7C%5D%5B%7B%7D", &[], "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"),
            ("post-header-key-sort", "POST", "/", "", &[("My-Header1", "value1")], "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"),
            ("post-header-value-case", "POST", "/", "", &[("My-Header1", "VALUE1")], "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"),
        ];
        for (name, method, path, query, extra, expected) in cases {
            let s = vector(method, path, query, extra, "");
            assert_eq!(&s.signature, expected, "{name}\n{}", s.canonical_request);
        }
    }

    #[test]
    fn post_x_www_form_urlencoded() {
        let s = vector(
            "POST",
            "/",
            "",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            "Param1=value1",
        );
        assert_eq!(s.signed_headers, "content-type;host;x-amz-date");
        assert!(s
            .canonical_request
            .ends_with("9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"));
        assert_eq!(
            s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"
        );
    }

    #[test]
    fn es_paths_are_encoded_twice_and_session_tokens_signed() {
        let mut c = creds();
        c.session_token = Some("TOKEN".into());
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_440_938_160);
        let signer = Signer {
            credentials: c,
            region: "eu-west-1".into(),
            service: "es",
        };
        let h = signer.headers(
            t,
            "POST",
            "search.example.com",
            ("/logs-%2A/_search", "q=a%20b"),
            b"{}",
        );
        let get = |n: &str| h.iter().find(|(k, _)| *k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("x-amz-date"), Some("20150830T123600Z"));
        assert_eq!(get("x-amz-security-token"), Some("TOKEN"));
        assert_eq!(
            get("x-amz-content-sha256"),
            Some(sha256_hex(b"{}").as_str())
        );
        let auth = get("authorization").unwrap();
        assert!(
            auth.contains("/20150830/eu-west-1/es/aws4_request"),
            "{auth}"
        );
        assert!(
            auth.contains(
                "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
            ),
            "{auth}"
        );
        assert_eq!(
            canonical_uri("/logs-%2A/_search", "es"),
            "/logs-%252A/_search"
        );
        assert_eq!(canonical_query("q=a%20b&b=1"), "b=1&q=a%20b");
    }
}
