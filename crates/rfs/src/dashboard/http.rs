//! The HTTP side: the embedded page, `GET /api/status` (the JSON of `rfs status --json`),
//! `GET /api/dashboard` (everything the page shows) and `POST /api/control`.
//!
//! Who may do what:
//! - The page itself (static, no data) is served to anyone who can connect.
//! - Reads: a caller sending the token; or, with a `Host` that is an IP address or
//!   `localhost` (a DNS-rebinding page cannot send one), a caller on loopback, or anyone
//!   when no token is configured.
//! - Control: with a token configured, only callers sending it; without, only callers on
//!   loopback with such a `Host`. Always: the `X-RFS-Request` header and a JSON body
//!   (neither can be sent cross-origin without a CORS preflight, which is never granted),
//!   and an `Origin` and `Sec-Fetch-Site`, when the browser sends them, of this server.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::assets;
use super::sampler::{now_ms, DashboardState, WINDOW_MS};

/// Header a control request must carry (any value; the page sends `dashboard`).
pub const REQUEST_HEADER: &str = "x-rfs-request";
/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 128;
/// Largest control request body.
const MAX_BODY: usize = 1024;

/// What the server knows and needs per request.
pub struct Server {
    pub shared: Arc<DashboardState>,
    pub token: Option<String>,
    /// How the page names the store (no secrets).
    pub store: String,
}

/// Accepts connections until the process ends.
pub async fn serve(listener: TcpListener, server: Arc<Server>) -> anyhow::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = slots.clone().acquire_owned().await?;
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("dashboard: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let server = server.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let server = server.clone();
                async move { Ok::<_, Infallible>(handle(req, peer, &server).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(15))
                .serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!("dashboard: connection from {peer}: {e}");
            }
            drop(permit);
        });
    }
}

type Resp = Response<Full<Bytes>>;

async fn handle(req: Request<Incoming>, peer: SocketAddr, server: &Server) -> Resp {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    let resp = match path.as_str() {
        "/" | "/index.html" if get => asset(assets::INDEX_HTML, "text/html; charset=utf-8"),
        "/app.js" if get => asset(assets::APP_JS, "text/javascript; charset=utf-8"),
        "/style.css" if get => asset(assets::STYLE_CSS, "text/css; charset=utf-8"),
        "/favicon.svg" | "/favicon.ico" if get => asset(assets::FAVICON_SVG, "image/svg+xml"),
        "/api/status" | "/api/dashboard" if get => {
            let who = Caller::of(&req, peer, server.token.as_deref());
            if who.may_read(server.token.is_some()) {
                if path == "/api/status" {
                    status(server)
                } else {
                    dashboard(server, who.may_control(server.token.is_some()))
                }
            } else {
                refuse(&who, server.token.is_some())
            }
        }
        "/api/control" if method == Method::POST => control(req, peer, server).await,
        "/" | "/index.html" | "/app.js" | "/style.css" | "/favicon.svg" | "/favicon.ico"
        | "/api/status" | "/api/dashboard" => with_allow(
            error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
            "GET, HEAD",
        ),
        "/api/control" => with_allow(
            error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
            "POST",
        ),
        _ => error(StatusCode::NOT_FOUND, "not found"),
    };
    let mut resp = resp;
    if method == Method::HEAD {
        *resp.body_mut() = Full::new(Bytes::new());
    }
    secure(resp)
}

/// Who is asking, as far as the rules above care.
struct Caller {
    loopback: bool,
    /// `Host` is an IP address or `localhost`.
    plain_host: bool,
    /// Sent the configured token.
    token: bool,
    host: Option<String>,
}

impl Caller {
    fn of<B>(req: &Request<B>, peer: SocketAddr, token: Option<&str>) -> Caller {
        let host = req
            .headers()
            .get(hyper::header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_string);
        let sent = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "));
        Caller {
            loopback: is_loopback(peer.ip()),
            plain_host: host.as_deref().is_some_and(plain_host),
            token: matches!((token, sent), (Some(t), Some(s)) if same(t.as_bytes(), s.trim().as_bytes())),
            host,
        }
    }

    fn may_read(&self, token_configured: bool) -> bool {
        self.token || (self.plain_host && (self.loopback || !token_configured))
    }

    fn may_control(&self, token_configured: bool) -> bool {
        if token_configured {
            self.token
        } else {
            self.loopback && self.plain_host
        }
    }
}

fn refuse(who: &Caller, token_configured: bool) -> Resp {
    if token_configured && !who.token {
        let mut r = error(
            StatusCode::UNAUTHORIZED,
            "this dashboard needs its token (--serve-token): send it as `Authorization: Bearer TOKEN`",
        );
        r.headers_mut()
            .insert("www-authenticate", HeaderValue::from_static("Bearer"));
        r
    } else if !who.plain_host {
        error(
            StatusCode::FORBIDDEN,
            "open the dashboard by IP address or localhost (or configure --serve-token)",
        )
    } else {
        error(
            StatusCode::FORBIDDEN,
            "control is allowed only from loopback unless --serve-token is configured and sent",
        )
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// `localhost` or an IP literal, with or without a port.
fn plain_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((ip, port)) if port.is_empty() || port.starts_with(':') => {
                return ip.parse::<std::net::Ipv6Addr>().is_ok();
            }
            _ => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok()
}

/// Compares without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn status(server: &Server) -> Resp {
    let Ok(r) = server.shared.reading.read() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "state unavailable");
    };
    match (&r.status, &r.error) {
        (_, Some((message, since))) => {
            let mut resp = json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({
                    "error": format!("coordination store unreachable: {message}"),
                    "since_ms": since,
                    "last_status": r.status,
                    "last_read_ms": r.read_at_ms,
                }),
            );
            resp.headers_mut().insert(
                "retry-after",
                HeaderValue::from(server.shared.interval.as_secs().max(1)),
            );
            resp
        }
        (Some(s), None) => json_response(StatusCode::OK, s),
        (None, None) => {
            let mut resp = error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the store has not been read yet",
            );
            resp.headers_mut()
                .insert("retry-after", HeaderValue::from_static("1"));
            resp
        }
    }
}

fn dashboard(server: &Server, may_control: bool) -> Resp {
    let Ok(r) = server.shared.reading.read() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "state unavailable");
    };
    let body = json!({
        "store": server.store,
        "interval_ms": server.shared.interval.as_millis() as u64,
        "now_ms": now_ms(),
        "read_at_ms": r.read_at_ms,
        "reads": r.reads,
        "error": r.error.as_ref().map(|(m, since)| json!({
            "message": m,
            "since_ms": since,
        })),
        "status": r.status,
        "items": r.items,
        "failures": r.failures,
        "rates": {
            "window_s": WINDOW_MS / 1000,
            "points": r.rates.iter().map(|(t, d, b)| json!([t, d, b])).collect::<Vec<_>>(),
        },
        "control": {
            "allowed": may_control,
            "token_configured": server.token.is_some(),
        },
    });
    json_response(StatusCode::OK, &body)
}

async fn control(req: Request<Incoming>, peer: SocketAddr, server: &Server) -> Resp {
    let who = Caller::of(&req, peer, server.token.as_deref());
    if !who.may_control(server.token.is_some()) {
        return refuse(&who, server.token.is_some());
    }
    if let Err(why) = same_origin(&req, who.host.as_deref()) {
        return error(StatusCode::FORBIDDEN, why);
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "a control request is a small JSON object",
            )
        }
    };
    let value = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("control").and_then(Value::as_str).map(str::to_string))
        .and_then(|s| s.parse::<coordination::Control>().ok());
    let Some(value) = value else {
        return error(
            StatusCode::BAD_REQUEST,
            "expected {\"control\": \"PAUSE\" | \"RUN\" | \"STOP\"}",
        );
    };
    let coord = server
        .shared
        .coord
        .read()
        .map(|c| c.clone())
        .unwrap_or(None);
    let Some(coord) = coord else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the coordination store is unreachable; the control value was not changed",
        );
    };
    match tokio::time::timeout(Duration::from_secs(15), coord.set_control(value)).await {
        Ok(Ok(())) => {
            tracing::info!(peer = %peer, "dashboard: control set to {}", value.as_str());
            server.shared.wake.notify_one();
            json_response(StatusCode::OK, &json!({"control": value.as_str()}))
        }
        Ok(Err(e)) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            &server
                .shared
                .secrets
                .scrub(&format!("setting the control value: {e}")),
        ),
        Err(_) => error(
            StatusCode::GATEWAY_TIMEOUT,
            "the coordination store did not answer; the control value may not have changed",
        ),
    }
}

/// The checks that make a cross-site request fail (see the module comment).
fn same_origin<B>(req: &Request<B>, host: Option<&str>) -> Result<(), &'static str> {
    let h = req.headers();
    if h.get(REQUEST_HEADER).is_none() {
        return Err("a control request needs the X-RFS-Request header");
    }
    let json = h
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json {
        return Err("a control request is application/json");
    }
    if let Some(origin) = h.get(hyper::header::ORIGIN) {
        let ok = host.is_some_and(|host| {
            origin
                .to_str()
                .is_ok_and(|o| o.eq_ignore_ascii_case(&format!("http://{host}")))
        });
        if !ok {
            return Err("cross-origin control requests are refused");
        }
    }
    if let Some(site) = h.get("sec-fetch-site") {
        if !matches!(site.to_str(), Ok("same-origin" | "none")) {
            return Err("cross-site control requests are refused");
        }
    }
    Ok(())
}

fn asset(body: &'static str, content_type: &'static str) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json_response(status: StatusCode, v: &Value) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(v.to_string())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error(status: StatusCode, message: &str) -> Resp {
    json_response(status, &json!({ "error": message }))
}

fn with_allow(mut r: Resp, allow: &'static str) -> Resp {
    r.headers_mut()
        .insert("allow", HeaderValue::from_static(allow));
    r
}

/// Headers on every response: nothing cached, no sniffing, no framing, no referrer; the
/// page may load only its own scripts and styles and talk only to this server.
fn secure(mut r: Resp) -> Resp {
    let h = r.headers_mut();
    h.insert("cache-control", HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_hosts_are_ip_literals_or_localhost() {
        for h in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:1",
            "LOCALHOST",
            "[::1]:80",
            "[::1]",
            "10.1.2.3:9",
        ] {
            assert!(plain_host(h), "{h}");
        }
        for h in [
            "evil.example:8080",
            "localhost.evil.example",
            "[::1",
            "[::1]x",
            "",
            "1.2.3:80",
        ] {
            assert!(!plain_host(h), "{h}");
        }
    }

    #[test]
    fn token_comparison() {
        assert!(same(b"abcdef", b"abcdef"));
        assert!(!same(b"abcdef", b"abcdeg"));
        assert!(!same(b"abcdef", b"abcde"));
    }

    fn caller(peer: &str, host: &str, auth: Option<&str>, token: Option<&str>) -> Caller {
        let mut b = Request::builder().uri("/api/status").header("host", host);
        if let Some(a) = auth {
            b = b.header("authorization", a);
        }
        let req = b.body(()).unwrap();
        Caller::of(&req, peer.parse().unwrap(), token)
    }

    #[test]
    fn who_may_read_and_control() {
        // No token: loopback reads and controls; others read only; a foreign Host nothing.
        let c = caller("127.0.0.1:5000", "127.0.0.1:8080", None, None);
        assert!(c.may_read(false) && c.may_control(false));
        let c = caller("[::ffff:127.0.0.1]:5000", "localhost:8080", None, None);
        assert!(c.may_read(false) && c.may_control(false));
        let c = caller("10.0.0.5:5000", "10.0.0.1:8080", None, None);
        assert!(c.may_read(false) && !c.may_control(false));
        let c = caller("127.0.0.1:5000", "rebound.evil.example:8080", None, None);
        assert!(!c.may_read(false) && !c.may_control(false));
        // A token: it is needed for control from anywhere and for reads from elsewhere.
        let t = Some("0123456789abcdef");
        let c = caller("127.0.0.1:5000", "127.0.0.1:8080", None, t);
        assert!(c.may_read(true) && !c.may_control(true));
        let c = caller("10.0.0.5:5000", "10.0.0.1:8080", None, t);
        assert!(!c.may_read(true) && !c.may_control(true));
        let c = caller(
            "10.0.0.5:5000",
            "rfs.example:8080",
            Some("Bearer 0123456789abcdef"),
            t,
        );
        assert!(c.may_read(true) && c.may_control(true));
        let c = caller(
            "10.0.0.5:5000",
            "10.0.0.1:8080",
            Some("Bearer 0123456789abcdeX"),
            t,
        );
        assert!(!c.may_read(true) && !c.may_control(true));
    }

    fn post(headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().method("POST").uri("/api/control");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn cross_site_control_requests_are_refused() {
        let host = Some("127.0.0.1:8080");
        let ok = [
            ("x-rfs-request", "dashboard"),
            ("content-type", "application/json"),
            ("origin", "http://127.0.0.1:8080"),
            ("sec-fetch-site", "same-origin"),
        ];
        assert_eq!(same_origin(&post(&ok), host), Ok(()));
        // curl sends neither Origin nor Sec-Fetch-Site.
        assert_eq!(same_origin(&post(&ok[..2]), host), Ok(()));
        assert!(
            same_origin(&post(&ok[1..]), host).is_err(),
            "no custom header"
        );
        let form = [ok[0], ("content-type", "text/plain"), ok[2], ok[3]];
        assert!(same_origin(&post(&form), host).is_err());
        let other = [ok[0], ok[1], ("origin", "http://evil.example"), ok[3]];
        assert!(same_origin(&post(&other), host).is_err());
        let site = [ok[0], ok[1], ok[2], ("sec-fetch-site", "cross-site")];
        assert!(same_origin(&post(&site), host).is_err());
    }
}
