//! The `_testkit/*` admin endpoints: faults, down/up, request log, stats.

#[allow(unused_imports)]
use super::*;

pub(super) fn admin_handle(shared: &Arc<Shared>, method: &Method, path: &str, body: &[u8]) -> Resp {
    let ok = |v: Value| json_resp(shared, 200, &v);
    let bad = |msg: String| json_resp(shared, 400, &json!({"error": msg, "status": 400}));
    match (method.clone(), path.trim_end_matches('/')) {
        (Method::GET, "/_testkit/faults") => {
            ok(serde_json::to_value(shared.faults()).unwrap_or_default())
        }
        (Method::POST | Method::PUT, "/_testkit/faults") => {
            match serde_json::from_slice::<Faults>(body) {
                Ok(f) => {
                    shared.set_faults(f.clone());
                    ok(serde_json::to_value(f).unwrap_or_default())
                }
                Err(e) => bad(format!("bad faults JSON: {e}")),
            }
        }
        (Method::POST | Method::PUT, "/_testkit/down") => {
            let v: Value = serde_json::from_slice(body).unwrap_or(json!({"down": true}));
            let down = v.get("down").and_then(Value::as_bool).unwrap_or(true);
            let secs = v.get("seconds").and_then(Value::as_f64);
            shared.set_down(down, secs);
            ok(json!({"down": down}))
        }
        (Method::POST | Method::PUT, "/_testkit/up") => {
            shared.set_down(false, None);
            ok(json!({"down": false}))
        }
        (Method::GET, "/_testkit/down") => ok(json!({"down": *shared.down.borrow()})),
        (Method::GET, "/_testkit/requests") => {
            ok(serde_json::to_value(crate::server::lock(&shared.log).clone()).unwrap_or_default())
        }
        (Method::GET, "/_testkit/stats") => {
            let mut v = serde_json::to_value(shared.stats()).unwrap_or_default();
            v["uptime_ms"] = json!(shared.started.elapsed().as_millis() as u64);
            ok(v)
        }
        (Method::GET, "/_testkit/documents") => {
            let st = shared.state();
            let counts: Map<String, Value> = st
                .indices
                .iter()
                .map(|(n, i)| (n.clone(), json!(i.doc_count())))
                .collect();
            ok(Value::Object(counts))
        }
        _ => json_resp(
            shared,
            404,
            &json!({"error": format!("unknown admin endpoint {method} {path}"), "status": 404}),
        ),
    }
}
