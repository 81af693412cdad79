//! A basic-auth gate in front of a test server (which has no authentication of its own),
//! for tests of credentials: it forwards requests that carry the expected
//! `Authorization: Basic …` and answers the others 401, counting both.

use std::io::{BufRead, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// Every request must carry `Authorization: Basic base64(user:password)`; one that does not
/// is answered 401 and its connection closed. Accepted requests are forwarded unchanged.
pub struct AuthGate {
    addr: SocketAddr,
    /// (request line, accepted) for every request seen.
    pub seen: Arc<Mutex<Vec<(String, bool)>>>,
}

impl AuthGate {
    pub fn start(upstream: SocketAddr, user: &str, password: &str) -> AuthGate {
        use base64::Engine as _;
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let (expected, log) = (expected.clone(), log.clone());
                std::thread::spawn(move || {
                    let _ = AuthGate::serve(client, upstream, &expected, &log);
                });
            }
        });
        AuthGate { addr, seen }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// (accepted, refused) requests so far.
    pub fn counts(&self) -> (usize, usize) {
        let seen = self.seen.lock().unwrap();
        let ok = seen.iter().filter(|(_, ok)| *ok).count();
        (ok, seen.len() - ok)
    }

    fn serve(
        client: TcpStream,
        upstream: SocketAddr,
        expected: &str,
        log: &Mutex<Vec<(String, bool)>>,
    ) -> std::io::Result<()> {
        let mut up = TcpStream::connect(upstream)?;
        let (mut up_read, mut to_client) = (up.try_clone()?, client.try_clone()?);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut up_read, &mut to_client);
            let _ = to_client.shutdown(Shutdown::Both);
        });
        let mut to_client = client.try_clone()?;
        let mut reader = std::io::BufReader::new(client);
        loop {
            let mut head = Vec::new();
            loop {
                let mut line = Vec::new();
                if reader.read_until(b'\n', &mut line)? == 0 {
                    let _ = up.shutdown(Shutdown::Write);
                    return Ok(());
                }
                head.extend_from_slice(&line);
                if line == b"\r\n" {
                    break;
                }
            }
            let text = String::from_utf8_lossy(&head).into_owned();
            let header = |name: &str| {
                text.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| v.trim().to_string())
                })
            };
            let accepted = header("authorization").as_deref() == Some(expected);
            let request_line = text.lines().next().unwrap_or("").to_string();
            log.lock().unwrap().push((request_line, accepted));
            if !accepted {
                let body = r#"{"error":{"type":"security_exception","reason":"missing authentication credentials"},"status":401}"#;
                write!(
                    to_client,
                    "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )?;
                let _ = to_client.shutdown(Shutdown::Both);
                let _ = up.shutdown(Shutdown::Both);
                return Ok(());
            }
            up.write_all(&head)?;
            let len: u64 = header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            std::io::copy(&mut (&mut reader).take(len), &mut up)?;
        }
    }
}
