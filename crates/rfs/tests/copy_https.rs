//! `rfs copy` from a live cluster behind HTTPS with a private CA and an API key, into
//! files, through a jq program: the source's connection options are spelled `--from-*`
//! (issue #37). The cluster is the project's test server; in front of it, a TLS proxy
//! written here (rustls, a certificate of a CA made here) that answers 401 to any request
//! without `Authorization: ApiKey <the expected key>`, as a secured cluster does
//! (Elasticsearch answers 401 `security_exception` to a request without credentials).
//! The files are read back with serde and compared document by document with what the
//! program makes of each source document.

mod common;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use common::{copy, run, Ran};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

/// The API key's secret part: it must never be shown.
const SECRET: &str = "s3cr3t-key-never-shown";
/// Documents in the source index.
const DOCS: usize = 240;
/// The program: every tenth document filtered out, the title upper-cased, a field
/// added from another, one deleted.
const PROGRAM: &str = "if ._source.n % 10 == 0 then empty \
    else (._source.title |= ascii_upcase | ._source.double = (._source.n * 2) | del(._source.tmp)) end";

/// A CA, and a server certificate for 127.0.0.1 signed by it; the CA in `dir/ca.pem`.
struct Pki {
    ca_pem: PathBuf,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: PrivatePkcs8KeyDer<'static>,
}

fn make_pki(dir: &Path) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "rfs copy test CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let mut sp =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    sp.distinguished_name
        .push(DnType::CommonName, "rfs copy test proxy");
    sp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_cert = sp.signed_by(&server_key, &issuer).unwrap();
    let ca_pem = dir.join("ca.pem");
    std::fs::write(&ca_pem, ca_cert.pem()).unwrap();
    Pki {
        ca_pem,
        server_chain: vec![server_cert.der().clone()],
        server_key: PrivatePkcs8KeyDer::from(server_key.serialize_der()),
    }
}

/// The HTTPS proxy: its port, and the requests it refused for want of the key.
struct Proxy {
    port: u16,
    refused: Arc<AtomicU64>,
    forwarded: Arc<AtomicU64>,
    _runtime: tokio::runtime::Runtime,
}

/// Terminates TLS with the server certificate of `pki`, checks every request's
/// `Authorization` header against `ApiKey <key>` (401 without it), and forwards the
/// others to `backend` (plain HTTP) as they came.
fn start_proxy(pki: &Pki, backend: String, key: String) -> Proxy {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        pki.server_chain.clone(),
        PrivateKeyDer::Pkcs8(pki.server_key.clone_key()),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let refused = Arc::new(AtomicU64::new(0));
    let forwarded = Arc::new(AtomicU64::new(0));
    let expected = Arc::new(format!("ApiKey {key}"));
    let http = reqwest::Client::new();
    let (r, f) = (refused.clone(), forwarded.clone());
    runtime.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let (backend, expected, http, r, f) = (
                backend.clone(),
                expected.clone(),
                http.clone(),
                r.clone(),
                f.clone(),
            );
            tokio::spawn(async move {
                // Without the CA the client gives up during the handshake.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req| {
                    handle(
                        req,
                        backend.clone(),
                        expected.clone(),
                        http.clone(),
                        r.clone(),
                        f.clone(),
                    )
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    Proxy {
        port,
        refused,
        forwarded,
        _runtime: runtime,
    }
}

async fn handle(
    req: Request<Incoming>,
    backend: String,
    expected: Arc<String>,
    http: reqwest::Client,
    refused: Arc<AtomicU64>,
    forwarded: Arc<AtomicU64>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let authorized = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        == Some(expected.as_str());
    if !authorized {
        refused.fetch_add(1, Ordering::Relaxed);
        let body = json!({"error": {"type": "security_exception",
            "reason": "missing authentication credentials for REST request"}, "status": 401});
        return Ok(Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header("content-type", "application/json")
            .header("www-authenticate", "ApiKey")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap());
    }
    forwarded.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = http.request(parts.method, format!("{backend}{path}"));
    for (k, v) in &parts.headers {
        if k != hyper::header::HOST && k != hyper::header::AUTHORIZATION {
            out = out.header(k, v);
        }
    }
    let answer = match out.body(body).send().await {
        Ok(a) => a,
        Err(e) => {
            return Ok(Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Full::new(Bytes::from(e.to_string())))
                .unwrap())
        }
    };
    let mut resp = Response::builder().status(answer.status());
    for (k, v) in answer.headers() {
        if k != hyper::header::CONTENT_LENGTH
            && k != hyper::header::TRANSFER_ENCODING
            && k != hyper::header::CONNECTION
        {
            resp = resp.header(k, v);
        }
    }
    let bytes = answer.bytes().await.unwrap_or_default();
    Ok(resp.body(Full::new(bytes)).unwrap())
}

/// Loads the source documents into `books` with a plain HTTP `_bulk`; the documents by id.
fn load(server: &TestServer) -> BTreeMap<String, Value> {
    let mut body = String::new();
    let mut docs = BTreeMap::new();
    for i in 0..DOCS {
        let id = format!("b{i:04}");
        let source = json!({"n": i, "title": format!("title é{i}"), "tmp": "drop me",
            "tags": ["x", i.to_string()]});
        body.push_str(&format!(
            "{}\n{source}\n",
            json!({"index": {"_index": "books", "_id": id}})
        ));
        docs.insert(id, source);
    }
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/_bulk?refresh=true", server.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    assert!(r.status().is_success());
    docs
}

/// What the program makes of each source document (written here without jq).
fn transformed(docs: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    docs.iter()
        .filter(|(_, s)| s["n"].as_u64().unwrap() % 10 != 0)
        .map(|(id, s)| {
            let n = s["n"].as_u64().unwrap();
            let title = s["title"].as_str().unwrap().to_ascii_uppercase();
            let out = json!({"n": n, "title": title, "tags": s["tags"], "double": n * 2});
            (id.clone(), out)
        })
        .collect()
}

/// Every document of the files under `out`, by id (each id once), with its index.
fn file_documents(out: &Path) -> BTreeMap<String, (String, Value)> {
    let mut held = BTreeMap::new();
    for f in std::fs::read_dir(out).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        for l in text.lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            let id = v["_id"].as_str().unwrap().to_string();
            let index = v["_index"].as_str().unwrap().to_string();
            assert!(
                held.insert(id.clone(), (index, v["_source"].clone()))
                    .is_none(),
                "{id} written twice"
            );
        }
    }
    held
}

/// Neither part of the key in what the run printed, in the failure log or in the store.
fn assert_key_not_shown(r: &Ran, dir: &Path, key: &str) {
    for text in [r.stdout.as_str(), r.stderr.as_str()] {
        assert!(
            !text.contains(SECRET) && !text.contains(key),
            "the key was shown:\n{r}"
        );
    }
    for f in ["failures.jsonl", "state.db"] {
        let bytes = std::fs::read(dir.join(f)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(SECRET) && !text.contains(key),
            "the key is in {f}"
        );
    }
}

#[test]
fn a_live_cluster_behind_https_with_a_private_ca_and_an_api_key_into_files_through_jq() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path());
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let docs = load(&source);
    let key = base64::engine::general_purpose::STANDARD.encode(format!("copy-test:{SECRET}"));
    let proxy = start_proxy(&pki, source.url(), key.clone());
    let from = format!("https://127.0.0.1:{}/books", proxy.port);
    let ca = pki.ca_pem.display().to_string();

    // Without the CA: the certificate is not trusted, and the error says so.
    let out = dir.path().join("no-ca");
    let run_dir = dir.path().join("run-no-ca");
    std::fs::create_dir_all(&run_dir).unwrap();
    let r = run(copy(
        &run_dir,
        &from,
        &format!("file://{}", out.display()),
        &["--from-api-key", &key, "--transform", PROGRAM],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    let said = r.all().to_lowercase();
    assert!(said.contains("certificate"), "{r}");
    assert_key_not_shown(&r, &run_dir, &key);
    assert_eq!(proxy.forwarded.load(Ordering::Relaxed), 0);

    // Without the key: 401, named.
    let run_dir = dir.path().join("run-no-key");
    std::fs::create_dir_all(&run_dir).unwrap();
    let r = run(copy(
        &run_dir,
        &from,
        &format!("file://{}", out.display()),
        &["--from-ca", &ca, "--transform", PROGRAM],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("401"), "{r}");
    assert!(proxy.refused.load(Ordering::Relaxed) > 0);
    assert_eq!(proxy.forwarded.load(Ordering::Relaxed), 0);

    // With a wrong key: 401 as well, and the wrong key is not shown either.
    let wrong = base64::engine::general_purpose::STANDARD.encode("copy-test:wrong-secret-x");
    let r = run(copy(
        &run_dir,
        &from,
        &format!("file://{}", out.display()),
        &["--from-ca", &ca, "--from-api-key", &wrong],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("401"), "{r}");
    assert!(
        !r.all().contains(&wrong) && !r.all().contains("wrong-secret-x"),
        "{r}"
    );
    assert_eq!(proxy.forwarded.load(Ordering::Relaxed), 0);

    // With both: every document through the program into files. The key from the
    // environment, the CA as a flag.
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let out = dir.path().join("out");
    let mut c = copy(
        &run_dir,
        &from,
        &format!("file://{}", out.display()),
        &["--from-ca", &ca, "--transform", PROGRAM, "--slices", "3"],
    );
    c.env("RFS_FROM_API_KEY", &key);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(proxy.forwarded.load(Ordering::Relaxed) > 0);
    assert_key_not_shown(&r, &run_dir, &key);
    let held = file_documents(&out);
    let want = transformed(&docs);
    assert_eq!(held.len(), want.len(), "{r}");
    for (id, doc) in &want {
        let (index, got) = held.get(id).unwrap_or_else(|| panic!("{id} missing:\n{r}"));
        assert_eq!(index, "books", "{id}");
        assert_eq!(got, doc, "{id}");
    }
    // The filtered documents are counted as such, not lost.
    let filtered = docs.len() - want.len();
    assert!(
        r.all()
            .contains(&format!("{filtered} documents were filtered out")),
        "{r}"
    );
}

/// `rfs verify --from` reaches the source as `rfs copy --from` does: through the HTTPS
/// proxy with `--from-ca` and `--from-api-key` it checks every copied document and its
/// own listing of the pattern, against the store copy recorded (exit 0); without the CA it
/// fails on the certificate; `--from-*` for a source that is no cluster is a usage error.
/// Failed before: verify had no `--from-*` flags, so such a copy could not be verified.
#[test]
fn verify_from_reaches_the_source_with_the_same_connection_flags() {
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path());
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    load(&source);
    let key = base64::engine::general_purpose::STANDARD.encode(format!("copy-test:{SECRET}"));
    let proxy = start_proxy(&pki, source.url(), key.clone());
    let from = format!("https://127.0.0.1:{}/books", proxy.port);
    let ca = pki.ca_pem.display().to_string();
    let out = format!("file://{}", dir.path().join("out").display());
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let r = run(copy(
        &run_dir,
        &from,
        &out,
        &["--from-ca", &ca, "--from-api-key", &key],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    let store = common::sqlite(&run_dir);
    let verify = |extra: &[&str]| {
        let mut c = common::rfs();
        c.arg("verify")
            .args(["--from", &from, "--to", &out, "--all", "--store", &store])
            .args(extra);
        run(c)
    };
    let r = verify(&["--from-ca", &ca, "--from-api-key", &key]);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.all().contains("holds migration"), "{r}");
    assert_key_not_shown(&r, &run_dir, &key);
    let r = verify(&["--from-api-key", &key]);
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().to_lowercase().contains("certificate"), "{r}");
    assert_key_not_shown(&r, &run_dir, &key);
    let mut c = common::rfs();
    c.arg("verify")
        .args(["--from", &out, "--to", &out, "--from-api-key", &key]);
    let r = run(c);
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("apply to a cluster source"), "{r}");
}

/// The connection options of one end given for an end that is no cluster do nothing:
/// a usage error naming the end, before anything is read.
#[test]
fn connection_flags_for_an_end_that_is_no_cluster_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    std::fs::create_dir_all(&lines).unwrap();
    std::fs::write(
        lines.join("a.jsonl"),
        "{\"_index\":\"a\",\"_id\":\"1\",\"_source\":{}}\n",
    )
    .unwrap();
    let out = format!("file://{}", dir.path().join("out").display());
    let r = run(copy(
        dir.path(),
        &lines.display().to_string(),
        &out,
        &["--from-api-key", "c2VjcmV0LWtleQ=="],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("--from-* connection options"), "{r}");
    assert!(!r.all().contains("c2VjcmV0LWtleQ=="), "{r}");
    let r = run(copy(
        dir.path(),
        &lines.display().to_string(),
        &out,
        &["--to-username", "u", "--to-password", "pw-secret"],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("--to-* connection options"), "{r}");
    assert!(!r.all().contains("pw-secret"), "{r}");
}

/// Loads `n` documents `{index}-{i}` into `index` of `server` with a plain HTTP `_bulk`.
fn load_index(server: &TestServer, index: &str, n: usize) -> BTreeMap<String, Value> {
    let mut body = String::new();
    let mut docs = BTreeMap::new();
    for i in 0..n {
        let id = format!("{index}-{i:03}");
        let source = json!({"n": i, "of": index});
        body.push_str(&format!(
            "{}\n{source}\n",
            json!({"index": {"_index": index, "_id": id}})
        ));
        docs.insert(id, source);
    }
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/_bulk?refresh=true", server.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    assert!(r.status().is_success());
    docs
}

/// A document of the target read back with a plain HTTP GET, or `None` (404).
fn get_doc(server: &TestServer, index: &str, id: &str) -> Option<Value> {
    let r = reqwest::blocking::Client::new()
        .get(format!("{}/{index}/_doc/{id}", server.url()))
        .send()
        .unwrap();
    if r.status() == reqwest::StatusCode::NOT_FOUND {
        return None;
    }
    let v: Value = r.json().unwrap();
    (v["found"] == json!(true)).then(|| v["_source"].clone())
}

/// `--index` / `--exclude-index` choose the live source's indices (the one left out is
/// named, and status counts nothing of it as missing); `--create-only` keeps a document
/// the target already holds (its conflict counted as done, as `rfs run --create-only`).
#[test]
fn copy_selects_indices_and_creates_only() {
    let dir = tempfile::tempdir().unwrap();
    let source = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let books = load_index(&source, "books", 50);
    let logs_a = load_index(&source, "logs-a", 30);
    load_index(&source, "logs-old", 20);
    load_index(&source, "reviews", 10);
    // Already on the target: kept by --create-only.
    let r = reqwest::blocking::Client::new()
        .put(format!(
            "{}/books/_doc/books-007?refresh=true",
            target.url()
        ))
        .json(&json!({"kept": true}))
        .send()
        .unwrap();
    assert!(r.status().is_success());
    let from = format!("{}/books,logs-*,reviews", source.url());
    let r = run(copy(
        dir.path(),
        &from,
        &target.url(),
        &[
            "--index",
            "books,logs-*",
            "--exclude-index",
            "logs-old",
            "--create-only",
        ],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert!(
        r.all()
            .contains("left out of the copy: logs-old: excluded by --exclude-index"),
        "{r}"
    );
    assert!(
        r.all()
            .contains("left out of the copy: reviews: not named by --index"),
        "{r}"
    );
    for (index, docs) in [("books", &books), ("logs-a", &logs_a)] {
        for (id, want) in docs {
            let got = get_doc(&target, index, id).unwrap_or_else(|| panic!("{id} missing"));
            if id == "books-007" {
                assert_eq!(got, json!({"kept": true}), "{id} overwritten");
            } else {
                assert_eq!(&got, want, "{id}");
            }
        }
    }
    assert_eq!(get_doc(&target, "logs-old", "logs-old-000"), None);
    assert_eq!(get_doc(&target, "reviews", "reviews-000"), None);
    // Status: the two indices copied, proved against the source's counts; nothing of
    // the ones left out.
    let st = common::status(dir.path());
    let per_index: Vec<&String> = st["per_index"].as_object().unwrap().keys().collect();
    assert_eq!(per_index, ["books", "logs-a"], "{st:#}");
    assert_eq!(st["source_totals"], "proved", "{st:#}");
    assert_eq!(st["docs_done"], 80, "{st:#}");
    assert_eq!(st["finished"], true, "{st:#}");

    // --create-only into files is a usage error, not ignored.
    let other = tempfile::tempdir().unwrap();
    let r = run(copy(
        other.path(),
        &from,
        &format!("file://{}", other.path().join("out").display()),
        &["--create-only"],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(
        r.all()
            .contains("--create-only applies to an http(s):// sink"),
        "{r}"
    );
}

/// `--rename` then `--index-prefix`/`--index-suffix` name each document's target index
/// (JSON lines into files: one file per target index); a program is part of the
/// migration's identity: the same store with another program is another migration.
#[test]
fn copy_renames_indices_and_a_program_is_part_of_the_identity() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    std::fs::create_dir_all(&lines).unwrap();
    let mut want = BTreeMap::new();
    let mut text = String::new();
    for (index, target) in [("logs", "p-events-s"), ("books", "p-books-s")] {
        for i in 0..20 {
            let id = format!("{index}-{i}");
            let source = json!({"n": i});
            text.push_str(&format!(
                "{}\n",
                json!({"_index": index, "_id": id, "_source": source})
            ));
            want.insert(id, (target.to_string(), source));
        }
    }
    std::fs::write(lines.join("all.jsonl"), text).unwrap();
    let out = dir.path().join("out");
    let to = format!("file://{}", out.display());
    let args = [
        "--rename",
        "logs=events",
        "--index-prefix",
        "p-",
        "--index-suffix=-s",
        "--transform",
        ".",
    ];
    let r = run(copy(dir.path(), &lines.display().to_string(), &to, &args));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(file_documents(&out), want);
    // The same store with another program: refused as another migration, nothing written.
    let r = run(copy(
        dir.path(),
        &lines.display().to_string(),
        &format!("file://{}", dir.path().join("out2").display()),
        &["--transform", "del(._source.n)"],
    ));
    assert_eq!(r.code, Some(2), "{r}");
    assert!(r.all().contains("program"), "{r}");
    let out2 = dir.path().join("out2");
    assert!(!out2.exists() || file_documents(&out2).is_empty());
    // Renames with a sink URL naming one index do nothing: a usage error.
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let other = tempfile::tempdir().unwrap();
    let r = run(copy(
        other.path(),
        &lines.display().to_string(),
        &format!("{}/one", target.url()),
        &["--rename", "logs=events"],
    ));
    assert_ne!(r.code, Some(0), "{r}");
    assert!(
        r.all()
            .contains("the sink URL sends every document into index one"),
        "{r}"
    );
}
