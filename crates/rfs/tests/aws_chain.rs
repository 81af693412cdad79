//! The AWS credential chain end to end: `rfs copy` from an S3 repository into DynamoDB
//! with no static keys in rfs's environment, against moto (`testkit::services::Moto`):
//! web identity, an assume-role profile over `credential_process`, container credentials
//! refreshed mid-run; and what S3 refusing a credential looks like.
//!
//! What moto (5.1.18) cannot enforce here, and how the tests make up for it: with request
//! authentication on it refuses object_store's correctly signed S3 listings
//! (`SignatureDoesNotMatch`), every DynamoDB request (its handler parses the body before
//! the signature is checked, `moto/dynamodb/responses.py` `call_action`) and an unsigned
//! `AssumeRoleWithWebIdentity` (a 500), and it never checks a web identity token. So
//! authentication stays off in the runs that must succeed, and moto's request recorder
//! shows which key signed every S3 and DynamoDB request, with its session token and
//! `X-Amz-Date`: the tests check those against the keys STS or the container endpoint
//! issued during the run (and their expiry). The refusal test turns authentication on.

mod common;
mod dynamo;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use common::{copy, demo, expected_documents, run, SNAPSHOT};
use dynamo::{assert_item, json_av, s, Av, Sdk, SdkItem};
use serde_json::Value;
use sigv4::AwsCredentials;

/// The environment of an rfs process with no AWS credentials of the machine's user: no
/// keys, no profile files, no instance metadata.
fn no_aws(c: &mut std::process::Command) {
    for k in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ROLE_ARN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "AWS_ENDPOINT_URL",
    ] {
        c.env_remove(k);
    }
    c.env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
        .env("AWS_CONFIG_FILE", "/nonexistent/config")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1");
}

/// Every file under `dir`, by its path relative to `dir`.
fn files_under(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, p));
            }
        }
    }
    out.sort();
    out
}

/// S3 refusing the credentials (a wrong secret key, from the environment) is an error
/// naming the credentials' source and S3's refusal — not a location said to hold
/// "neither a snapshot repository nor a directory of *.jsonl files" (issue 39). moto
/// checks S3 signatures once authentication is on.
#[test]
fn refused_s3_credentials_are_named_not_taken_for_an_empty_location() {
    let Some(aws) = Aws::start("aws_refused_s3_credentials") else {
        return;
    };
    aws.aws.reset_auth(0);
    let dir = tempfile::tempdir().unwrap();
    let secret = "wrong-SECRET-wJalrXUtnFEMI";
    let r = aws.copy(
        dir.path(),
        &[
            ("AWS_ACCESS_KEY_ID", &aws.admin.access_key_id),
            ("AWS_SECRET_ACCESS_KEY", secret),
        ],
        &[],
    );
    assert_ne!(r.code, Some(0), "{r}");
    let all = r.all();
    assert!(!all.contains("neither a snapshot repository"), "{r}");
    assert!(all.contains("refused"), "{r}");
    assert!(all.contains("the environment (AWS_ACCESS_KEY_ID)"), "{r}");
    assert!(
        all.contains("The request signature we calcul"),
        "S3's answer: {r}"
    );
    assert!(!all.contains(secret), "{r}");
}

// ---------------------------------------------------------------------------------------
// moto: IAM, STS and S3 on one server with authentication on; DynamoDB on another.

const ROLE: &str = "arn:aws:iam::123456789012:role/rfs";
const ALLOW_ALL: &str =
    r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#;

/// `application/x-www-form-urlencoded` value.
fn form(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The text of the first `<tag>…</tag>` of an XML answer.
fn xml_field(xml: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let from = xml
        .find(&open)
        .unwrap_or_else(|| panic!("no <{tag}> in {xml}"))
        + open.len();
    let to = xml[from..].find(&format!("</{tag}>")).unwrap() + from;
    xml[from..to].to_string()
}

/// One SigV4-signed request to moto (the test's own signing, with keys the test holds).
fn signed(
    port: u16,
    service: &'static str,
    creds: &AwsCredentials,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, String) {
    let host = format!("127.0.0.1:{port}");
    let signer = sigv4::Signer {
        credentials: creds.clone(),
        region: "us-east-1".into(),
        service,
    };
    let (p, q) = path.split_once('?').unwrap_or((path, ""));
    let http = reqwest::blocking::Client::new();
    let mut req = http.request(
        reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
        format!("http://{host}{path}"),
    );
    for (k, v) in signer.headers(SystemTime::now(), method, &host, (p, q), &body) {
        req = req.header(k, v);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.body(body).send().unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().unwrap())
}

/// An IAM or STS query action; panics unless it succeeds.
fn query(
    port: u16,
    service: &'static str,
    creds: &AwsCredentials,
    params: &[(&str, &str)],
) -> String {
    let version = if service == "iam" {
        "2010-05-08"
    } else {
        "2011-06-15"
    };
    let mut body = format!("Version={version}");
    for (k, v) in params {
        body.push_str(&format!("&{k}={}", form(v)));
    }
    let (status, text) = signed(
        port,
        service,
        creds,
        "POST",
        "/",
        &[("content-type", "application/x-www-form-urlencoded")],
        body.into_bytes(),
    );
    assert_eq!(status, 200, "{service} {params:?}: {text}");
    text
}

fn keys(access_key_id: &str, secret: &str) -> AwsCredentials {
    AwsCredentials {
        access_key_id: access_key_id.into(),
        secret_access_key: secret.into(),
        session_token: None,
    }
}

/// A new access key of IAM user `user`.
fn access_key(port: u16, admin: &AwsCredentials, user: &str) -> AwsCredentials {
    let xml = query(
        port,
        "iam",
        admin,
        &[("Action", "CreateAccessKey"), ("UserName", user)],
    );
    keys(
        &xml_field(&xml, "AccessKeyId"),
        &xml_field(&xml, "SecretAccessKey"),
    )
}

/// moto for IAM, STS and S3 (the demo repository in `s3://snap/repos/demo`), with
/// authentication still off; moto for DynamoDB; both recording. Returns the admin's keys
/// and those of user `source` (both allowed everything).
struct Aws {
    aws: testkit::services::Moto,
    ddb: testkit::services::Moto,
    admin: AwsCredentials,
    source: AwsCredentials,
}

impl Aws {
    fn start(test: &str) -> Option<Aws> {
        let aws = testkit::services::Moto::start(test, None)?;
        let ddb = testkit::services::Moto::start(test, None)?;
        let port = aws.port();
        let setup = keys("AKIDSETUP", "setup-secret");
        let user = |name: &str| {
            query(
                port,
                "iam",
                &setup,
                &[("Action", "CreateUser"), ("UserName", name)],
            );
            if name == "pod" {
                // its keys come from the container endpoint, two at most
                return keys("", "");
            }
            query(
                port,
                "iam",
                &setup,
                &[
                    ("Action", "PutUserPolicy"),
                    ("UserName", name),
                    ("PolicyName", "all"),
                    ("PolicyDocument", ALLOW_ALL),
                ],
            );
            access_key(port, &setup, name)
        };
        let admin = user("admin");
        let source = user("source");
        user("pod");
        query(
            port,
            "iam",
            &setup,
            &[
                ("Action", "CreateRole"),
                ("RoleName", "rfs"),
                (
                    "AssumeRolePolicyDocument",
                    r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":["sts:AssumeRole","sts:AssumeRoleWithWebIdentity"]}]}"#,
                ),
            ],
        );
        query(
            port,
            "iam",
            &setup,
            &[
                ("Action", "PutRolePolicy"),
                ("RoleName", "rfs"),
                ("PolicyName", "all"),
                ("PolicyDocument", ALLOW_ALL),
            ],
        );
        let (status, text) = signed(port, "s3", &setup, "PUT", "/snap", &[], Vec::new());
        assert_eq!(status, 200, "create bucket: {text}");
        for (rel, p) in files_under(&demo()) {
            let (status, text) = signed(
                port,
                "s3",
                &setup,
                "PUT",
                &format!("/snap/repos/demo/{rel}"),
                &[],
                std::fs::read(p).unwrap(),
            );
            assert_eq!(status, 200, "put {rel}: {text}");
        }
        aws.start_recording();
        ddb.start_recording();
        Some(Aws {
            aws,
            ddb,
            admin,
            source,
        })
    }

    /// `rfs copy` of the demo from moto's S3 into moto's DynamoDB (table `docs`), with no
    /// AWS credentials in the environment but what `env` adds.
    fn copy(&self, dir: &Path, env: &[(&str, &str)], extra: &[&str]) -> common::Ran {
        let to = format!(
            "dynamodb://docs?region=us-east-1&endpoint={}",
            self.ddb.endpoint()
        );
        let mut args = vec!["--snapshot", SNAPSHOT, "--create-table", "--s3-endpoint"];
        let ep = self.aws.endpoint();
        args.push(&ep);
        args.extend(["--s3-region", "us-east-1"]);
        args.extend(extra);
        let mut c = copy(dir, "s3://snap/repos/demo", &to, &args);
        no_aws(&mut c);
        c.env("AWS_ENDPOINT_URL_STS", self.aws.endpoint());
        for (k, v) in env {
            c.env(k, v);
        }
        run(c)
    }

    /// The sessions STS issued for role `rfs`: (access key id, session token).
    fn sessions(&self) -> Vec<(String, String)> {
        let data = self.aws.data();
        data["sts"]["AssumedRole"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|s| s["role_arn"] == ROLE)
            .map(|s| {
                (
                    s["access_key_id"].as_str().unwrap().to_string(),
                    s["session_token"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// The access key ids that signed the recorded S3 requests (to bucket `snap`) and
    /// DynamoDB requests, with the session tokens the DynamoDB requests carried.
    fn signers(&self) -> (Vec<String>, Vec<(String, Option<String>)>) {
        let s3 = self
            .aws
            .recording()
            .iter()
            .filter(|r| r["url"].as_str().unwrap_or_default().contains("/snap"))
            .map(|r| credential_of(r).0)
            .collect();
        let ddb = self.ddb.recording().iter().map(credential_of).collect();
        (s3, ddb)
    }
}

/// The access key id in a recorded request's `Authorization` and its
/// `X-Amz-Security-Token` (moto records the headers as a Python dict's text).
fn credential_of(r: &Value) -> (String, Option<String>) {
    let (key, token, _) = signature_of(r);
    (key, token)
}

/// As [`credential_of`], with the request's `X-Amz-Date`.
fn signature_of(r: &Value) -> (String, Option<String>, String) {
    let h = &r["headers"];
    let header = |name: &str| {
        h.as_object()
            .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
            .and_then(|(_, v)| v.as_str())
            .map(str::to_string)
    };
    let key = header("Authorization")
        .and_then(|a| {
            a.split("Credential=")
                .nth(1)
                .and_then(|s| s.split('/').next())
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("an unsigned request: {r}"));
    (
        key,
        header("X-Amz-Security-Token"),
        header("X-Amz-Date").unwrap_or_default(),
    )
}

/// The demo's documents, each an item of `docs` read back with the AWS SDK.
fn assert_demo_in_dynamodb(aws: &Aws) {
    let sdk = Sdk::new(&aws.ddb.endpoint());
    let items = sdk.scan("docs");
    let expected = expected_documents();
    assert_eq!(items.len(), expected.len());
    let by_id: BTreeMap<String, &SdkItem> = items
        .iter()
        .map(|i| match &i["_id"] {
            Av::S(id) => (id.clone(), i),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(by_id.len(), expected.len());
    for ((index, id), source) in &expected {
        let mut want: SdkItem = source
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), json_av(v)))
            .collect();
        want.insert("_id".into(), s(id.clone()));
        want.insert("_index".into(), s(index.clone()));
        assert_item(id, by_id[id], &want);
    }
}

/// Every S3 and DynamoDB request of the run was signed with `key` (and the DynamoDB ones
/// carried `token`).
fn assert_signed_with(aws: &Aws, key: &str, token: Option<&str>) {
    let (s3, ddb) = aws.signers();
    assert!(!s3.is_empty() && !ddb.is_empty(), "{s3:?} {ddb:?}");
    assert!(
        s3.iter().all(|k| k == key),
        "S3 signers {s3:?}, issued {key}"
    );
    for (k, t) in &ddb {
        assert_eq!(k, key, "a DynamoDB request signed by another key");
        assert_eq!(
            t.as_deref(),
            token,
            "the session token of a DynamoDB request"
        );
    }
}

/// (a) IRSA: `AWS_ROLE_ARN` + `AWS_WEB_IDENTITY_TOKEN_FILE`, STS `AssumeRoleWithWebIdentity`
/// at moto (`AWS_ENDPOINT_URL_STS`); every S3 and DynamoDB request is signed with the
/// session STS issued (a key that did not exist before the run) and carries its token.
#[test]
fn web_identity_copy_from_s3_into_dynamodb() {
    let Some(aws) = Aws::start("aws_web_identity") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    // A JWT's shape (header.payload.signature); its content is not checked by moto.
    std::fs::write(
        &token,
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6cmZzOnJmcyJ9.c2ln",
    )
    .unwrap();
    let r = aws.copy(
        dir.path(),
        &[
            ("AWS_ROLE_ARN", ROLE),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{r}");
    let sessions = aws.sessions();
    assert_eq!(sessions.len(), 1, "one STS session issued: {sessions:?}");
    assert_signed_with(&aws, &sessions[0].0, Some(&sessions[0].1));
    assert!(
        !r.all().contains(&sessions[0].1),
        "the session token never shows"
    );
    assert_demo_in_dynamodb(&aws);
}

/// (b) An assume-role profile (`role_arn` + `source_profile`) whose source profile gets
/// its keys from `credential_process`: the STS `AssumeRole` call is signed with those keys
/// and authenticated by moto, as are the S3 requests signed with the session it issues.
#[test]
fn assume_role_profile_over_credential_process() {
    let Some(aws) = Aws::start("aws_assume_role_profile") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("creds.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho '{{\"Version\": 1, \"AccessKeyId\": \"{}\", \"SecretAccessKey\": \"{}\"}}'\necho called >> {}\n",
            aws.source.access_key_id,
            aws.source.secret_access_key,
            dir.path().join("process-calls").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[profile migrate]\nrole_arn = {ROLE}\nsource_profile = base\nregion = us-east-1\n\n\
             [profile base]\ncredential_process = {}\n",
            script.display()
        ),
    )
    .unwrap();
    let r = aws.copy(
        dir.path(),
        &[
            ("AWS_PROFILE", "migrate"),
            ("AWS_CONFIG_FILE", config.to_str().unwrap()),
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{r}");
    assert!(
        dir.path().join("process-calls").exists(),
        "credential_process ran"
    );
    let sessions = aws.sessions();
    assert_eq!(sessions.len(), 1, "one STS session issued: {sessions:?}");
    assert_signed_with(&aws, &sessions[0].0, Some(&sessions[0].1));
    assert!(!r.all().contains(&aws.source.secret_access_key), "{r}");
    assert_demo_in_dynamodb(&aws);
}

/// A container-credentials endpoint on loopback, as EKS Pod Identity serves one: it wants
/// `Authorization: <the token file's content>`, and hands out a new access key of IAM user
/// `pod` at each call, valid `life`; keys whose `Expiration` passed are deleted from IAM
/// (so S3 refuses them from then on).
///
/// Real endpoints hand out session credentials; these are an IAM user's keys (with an
/// empty `Token`, which the chain takes as none) because moto can revoke only those
/// (`DeleteAccessKey`), which makes their expiry real.
struct PodIdentity {
    url: String,
    /// Every key handed out, in order, with its expiry as `X-Amz-Date` writes it.
    issued: Arc<Mutex<Vec<(String, String)>>>,
    /// Calls without the right token.
    refused: Arc<Mutex<usize>>,
}

impl PodIdentity {
    fn start(aws: &Aws, token: &str, life: Duration) -> PodIdentity {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/credentials", listener.local_addr().unwrap());
        let issued: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let refused: Arc<Mutex<usize>> = Arc::default();
        let (port, admin, token) = (aws.aws.port(), aws.admin.clone(), token.to_string());
        let (log, refusals) = (issued.clone(), refused.clone());
        std::thread::spawn(move || {
            // Keys not deleted yet, with their expiry.
            let mut live: Vec<(String, SystemTime)> = Vec::new();
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut auth = None;
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    let l = line.trim_end().to_string();
                    line.clear();
                    if l.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = l.split_once(':') {
                        if k.eq_ignore_ascii_case("authorization") {
                            auth = Some(v.trim().to_string());
                        }
                    }
                }
                let (status, body) = if auth.as_deref() != Some(token.as_str()) {
                    *refusals.lock().unwrap() += 1;
                    ("403 Forbidden", "{}".to_string())
                } else {
                    let now = SystemTime::now();
                    // Expired keys are deleted; IAM allows two keys per user, so the older
                    // of two live ones goes too (it expires within moments: the chain asks
                    // again only past half of a key's life, and stops using it before).
                    let mut gone: Vec<String> = Vec::new();
                    live.retain(|(k, e)| {
                        let keep = *e > now;
                        if !keep {
                            gone.push(k.clone());
                        }
                        keep
                    });
                    if live.len() >= 2 {
                        gone.push(live.remove(0).0);
                    }
                    for k in gone {
                        query(
                            port,
                            "iam",
                            &admin,
                            &[
                                ("Action", "DeleteAccessKey"),
                                ("UserName", "pod"),
                                ("AccessKeyId", &k),
                            ],
                        );
                    }
                    let key = access_key(port, &admin, "pod");
                    let expiry = now + life;
                    live.push((key.access_key_id.clone(), expiry));
                    log.lock().unwrap().push((
                        key.access_key_id.clone(),
                        sigv4::UtcTime::from_system(expiry).amz_date(),
                    ));
                    (
                        "200 OK",
                        serde_json::json!({
                            "AccessKeyId": key.access_key_id,
                            "SecretAccessKey": key.secret_access_key,
                            "Token": "",
                            "Expiration": sigv4::UtcTime::from_system(expiry).rfc3339(),
                        })
                        .to_string(),
                    )
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        PodIdentity {
            url,
            issued,
            refused,
        }
    }
}

/// (c) and (d): container credentials as EKS Pod Identity sets them up
/// (`AWS_CONTAINER_CREDENTIALS_FULL_URI` on loopback, `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`),
/// each valid 10 s, in a run slowed to take about 18 s: the chain asks the endpoint again
/// before each key expires, S3 and DynamoDB requests move to the new key, expired keys are
/// deleted (S3 would refuse them), and the run finishes with every document.
#[test]
fn pod_identity_credentials_refreshed_mid_run() {
    let Some(aws) = Aws::start("aws_pod_identity") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let token = "pod-identity-TOKEN-5f2c";
    let token_file = dir.path().join("eks-pod-identity-token");
    std::fs::write(&token_file, token).unwrap();
    let pod = PodIdentity::start(&aws, token, Duration::from_secs(10));
    let r = aws.copy(
        dir.path(),
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &pod.url),
            (
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                token_file.to_str().unwrap(),
            ),
        ],
        &["--max-docs-per-sec", "100"],
    );
    assert_eq!(r.code, Some(0), "{r}");
    assert!(!r.all().contains(token), "{r}");
    let issued = pod.issued.lock().unwrap().clone();
    assert_eq!(
        *pod.refused.lock().unwrap(),
        0,
        "the token file's token was sent"
    );
    assert!(
        issued.len() >= 2,
        "the endpoint was asked again: {issued:?}"
    );
    // Every request signed with a key the endpoint handed out, before that key expired.
    let expiry: BTreeMap<&String, &String> = issued.iter().map(|(k, e)| (k, e)).collect();
    let requests: Vec<Value> = aws
        .aws
        .recording()
        .into_iter()
        .filter(|r| r["url"].as_str().unwrap_or_default().contains("/snap"))
        .chain(aws.ddb.recording())
        .collect();
    assert!(requests.len() > 3, "{requests:?}");
    let mut used = BTreeSet::new();
    for r in &requests {
        let (key, token, date) = signature_of(r);
        let until = expiry
            .get(&key)
            .unwrap_or_else(|| panic!("{key} was not handed out by the endpoint ({issued:?})"));
        assert!(
            date.as_str() < until.as_str(),
            "{key} used at {date}, expired {until}"
        );
        assert_eq!(token, None, "no session token");
        used.insert(key);
    }
    assert!(
        used.len() >= 2,
        "requests moved to a refreshed key: {used:?}"
    );
    assert_demo_in_dynamodb(&aws);
}
