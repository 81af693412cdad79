//! Each real test server starts, answers its own protocol, stops and comes back where it can.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use testkit::services::{raw_http, FakeGcs, Osmem, Postgres, Redis, S3rver};

/// Sends one Redis command (inline protocol) and returns the first reply line.
fn redis_cmd(port: u16, cmd: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(format!("{cmd}\r\n").as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    if let Some(len) = line.strip_prefix('$') {
        let len: i64 = len.trim().parse().unwrap();
        if len < 0 {
            return "(nil)".into();
        }
        let mut buf = vec![0u8; len as usize + 2];
        r.read_exact(&mut buf).unwrap();
        return String::from_utf8_lossy(&buf[..len as usize]).into_owned();
    }
    line.trim_end().to_string()
}

#[test]
fn redis_starts_keeps_data_across_restart_and_cleans_up() {
    let Some(mut r) = Redis::start("redis_starts_keeps_data_across_restart_and_cleans_up") else {
        return;
    };
    assert!(r.url().starts_with("redis://127.0.0.1:"));
    let port = r.port();
    assert_eq!(redis_cmd(port, "SET k v1"), "+OK");
    r.restart();
    assert_eq!(r.port(), port);
    assert_eq!(redis_cmd(port, "GET k"), "v1");
    r.stop();
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "stopped redis still accepts"
    );
    r.start_again();
    assert_eq!(redis_cmd(port, "GET k"), "v1");
    drop(r);
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "dropped redis still accepts"
    );
}

/// The PostgreSQL startup handshake with trust auth: StartupMessage → AuthenticationOk ('R', 0).
fn pg_handshake(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes()); // protocol 3.0
    for kv in ["user", "postgres", "database", "postgres"] {
        body.extend_from_slice(kv.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.write_all(&msg).unwrap();
    let mut head = [0u8; 9];
    if s.read_exact(&mut head).is_err() {
        return false;
    }
    head[0] == b'R' && head[5..9] == [0, 0, 0, 0]
}

#[test]
fn postgres_starts_stops_and_starts_again_on_the_same_port() {
    let Some(mut pg) = Postgres::start("postgres_starts_stops_and_starts_again_on_the_same_port")
    else {
        return;
    };
    let port = pg.port();
    assert_eq!(
        pg.url(),
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    );
    assert!(pg_handshake(port), "no AuthenticationOk from PostgreSQL");
    pg.stop();
    assert!(!pg_handshake(port), "stopped PostgreSQL still answers");
    pg.start_again();
    assert_eq!(pg.port(), port);
    assert!(pg_handshake(port), "restarted PostgreSQL does not answer");
    drop(pg);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn osmem_answers_root_and_stops_on_drop() {
    let Some(o) = Osmem::start("osmem_answers_root_and_stops_on_drop") else {
        return;
    };
    let port = o.port();
    assert_eq!(o.url(), format!("http://127.0.0.1:{port}"));
    let (status, body) = raw_http(port, "GET", "/", &[], b"").unwrap();
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["version"]["distribution"], "opensearch");
    drop(o);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn s3rver_serves_buckets_and_objects() {
    let Some(s3) = S3rver::start("s3rver_serves_buckets_and_objects") else {
        return;
    };
    let port = s3.port();
    assert_eq!(s3.endpoint(), format!("http://127.0.0.1:{port}"));
    assert_eq!((s3.access_key(), s3.secret_key()), ("S3RVER", "S3RVER"));
    s3.create_bucket("repo");
    s3.put_object("repo", "dir/blob", b"hello blob");
    let (status, body) = raw_http(port, "GET", "/repo/dir/blob", &[], b"").unwrap();
    assert_eq!((status, body.as_slice()), (200, &b"hello blob"[..]));
    let (status, body) = raw_http(port, "GET", "/repo?list-type=2", &[], b"").unwrap();
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("<Key>dir/blob</Key>"));
    assert!(s3.data_dir().join("repo").is_dir());
    let data = s3.data_dir();
    drop(s3);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    assert!(!data.exists(), "s3rver temp dir not removed");
}

#[test]
fn fake_gcs_serves_buckets_and_objects_by_both_apis() {
    let Some(gcs) = FakeGcs::start("fake_gcs_serves_buckets_and_objects_by_both_apis") else {
        return;
    };
    let port = gcs.port();
    assert_eq!(gcs.endpoint(), format!("http://127.0.0.1:{port}"));
    gcs.create_bucket("repo");
    gcs.put_object("repo", "dir/a b+c.dat", b"hello blob");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("x/y")).unwrap();
    std::fs::write(dir.path().join("x/y/z"), b"deep").unwrap();
    gcs.put_dir("repo", "up", dir.path());
    // The XML API, path-style, as object_store reads it.
    let (status, body) = raw_http(port, "GET", "/repo/dir/a%20b%2Bc.dat", &[], b"").unwrap();
    assert_eq!((status, body.as_slice()), (200, &b"hello blob"[..]));
    let (status, body) = raw_http(
        port,
        "GET",
        "/repo/up/x/y/z",
        &[("Range", "bytes=1-2")],
        b"",
    )
    .unwrap();
    assert_eq!((status, body.as_slice()), (206, &b"ee"[..]));
    let (status, body) = raw_http(port, "GET", "/repo?list-type=2&prefix=dir/", &[], b"").unwrap();
    assert_eq!(status, 200);
    assert!(
        String::from_utf8_lossy(&body).contains("<Key>dir/a b+c.dat</Key>"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    // The JSON API.
    let (status, body) = raw_http(port, "GET", "/storage/v1/b/repo/o", &[], b"").unwrap();
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let mut names: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["dir/a b+c.dat", "up/x/y/z"]);
    drop(gcs);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}
