//! The `snapshot_follow` block of `rfs status` (`rfs run --follow`): the snapshot the
//! target holds and when it was taken, what is pending, what the fleet is doing.

use engine::generations::FollowState;
use serde_json::{json, Value};

/// The block from the base store's follow record (`null` when the migration does not
/// follow a repository); `control`: the fleet's control value (`STOP`: stopped).
pub async fn read(store: &dyn coordination::Store, control: &str) -> anyhow::Result<Value> {
    let Some((state, _)) = engine::generations::load(store).await? else {
        return Ok(Value::Null);
    };
    let now = store.now().await?;
    Ok(to_json(&state, control, now))
}

/// The block of `state` at store time `now` (ms).
pub fn to_json(state: &FollowState, control: &str, now: i64) -> Value {
    let ago = |t: i64| (now.saturating_sub(t).max(0) as f64) / 1000.0;
    let activity = if control.eq_ignore_ascii_case("stop") {
        "stopped"
    } else if state.applying.is_some() {
        "applying"
    } else {
        "watching"
    };
    let a = &state.applied;
    json!({
        "state": activity,
        "applied": {
            "snapshot": a.name,
            "uuid": a.uuid,
            "taken_at_ms": a.start_ms,
            "age_seconds": a.start_ms.map(ago),
            "applied_at_ms": a.applied_at,
        },
        "applying": state.applying.as_ref().map(|s| json!({
            "snapshot": s.snapshot.name,
            "since": s.since,
            "generation": s.generation,
            "store_tag": state.store_tag(s.generation),
            "started_at_ms": s.started_at,
        })),
        "pending": state.pending,
        "not_applied": state.not_applicable.iter()
            .map(|(name, st)| json!({"snapshot": name, "state": st}))
            .collect::<Vec<_>>(),
        "checked_at_ms": state.checked_at,
        "checked_seconds_ago": state.checked_at.map(ago),
        "problem": state.problem,
        "deltas_applied": state.generations.saturating_sub(u32::from(state.applying.is_some())),
        "totals": state.totals,
        "history": state.history,
    })
}

/// The block as text (empty for `null`).
pub fn to_text(v: &Value) -> String {
    if v.is_null() {
        return String::new();
    }
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    let a = &v["applied"];
    let age = a["age_seconds"].as_f64().map_or_else(
        || "taken at an unknown time".into(),
        |s| format!("taken {} ago", human(s)),
    );
    let mut out = format!(
        "following the repository: {}; snapshot {} applied ({age})\n",
        s("state"),
        a["snapshot"].as_str().unwrap_or_default()
    );
    if let Some(step) = v["applying"].as_object() {
        out.push_str(&format!(
            "  applying snapshot {} as a delta since {} (generation {})\n",
            step["snapshot"].as_str().unwrap_or_default(),
            step["since"].as_str().unwrap_or_default(),
            step["generation"]
        ));
    }
    let names = |k: &str| -> Vec<String> {
        v[k].as_array()
            .into_iter()
            .flatten()
            .map(|p| match p {
                Value::String(n) => n.clone(),
                o => format!(
                    "{} ({})",
                    o["snapshot"].as_str().unwrap_or_default(),
                    o["state"].as_str().unwrap_or_default()
                ),
            })
            .collect()
    };
    let pending = names("pending");
    out.push_str(&if pending.is_empty() {
        "  pending: none\n".to_string()
    } else {
        format!("  pending: {}\n", pending.join(", "))
    });
    let skipped = names("not_applied");
    if !skipped.is_empty() {
        out.push_str(&format!(
            "  not applied (not SUCCESS): {}\n",
            skipped.join(", ")
        ));
    }
    if let Some(secs) = v["checked_seconds_ago"].as_f64() {
        out.push_str(&format!("  repository last listed {} ago\n", human(secs)));
    }
    if let Some(p) = v["problem"].as_str() {
        out.push_str(&format!("  PROBLEM: {p}\n"));
    }
    let t = &v["totals"];
    out.push_str(&format!(
        "  {} deltas applied: {} documents delivered, {} refused, {} skipped\n",
        v["deltas_applied"], t["delivered"], t["refused"], t["skipped"]
    ));
    out
}

fn human(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s / 60) % 60),
    }
}

#[cfg(test)]
mod tests {
    use engine::generations::{Applied, Listed, Step};

    use super::*;

    #[test]
    fn says_what_is_applied_its_age_and_what_is_pending() {
        let mut state = FollowState::new(Applied {
            name: "b".into(),
            uuid: "ub".into(),
            start_ms: Some(1_000),
            applied_at: 5_000,
        });
        state.generations = 2;
        state.pending = vec!["c".into(), "d".into()];
        state.not_applicable = vec![("x".into(), "FAILED".into())];
        state.checked_at = Some(60_000);
        state.applying = Some(Step {
            generation: 2,
            since: "b".into(),
            snapshot: Listed {
                name: "c".into(),
                uuid: "uc".into(),
                state: Some("SUCCESS".into()),
                start_ms: Some(2_000),
            },
            started_at: 61_000,
        });
        let v = to_json(&state, "RUN", 181_000);
        assert_eq!(v["state"], "applying");
        assert_eq!(v["applied"]["snapshot"], "b");
        assert_eq!(v["applied"]["age_seconds"], 180.0);
        assert_eq!(v["pending"], json!(["c", "d"]));
        assert_eq!(v["deltas_applied"], 1);
        let text = to_text(&v);
        assert!(
            text.contains(
                "following the repository: applying; snapshot b applied (taken 3m00s ago)"
            ),
            "{text}"
        );
        assert!(
            text.contains("applying snapshot c as a delta since b (generation 2)"),
            "{text}"
        );
        assert!(text.contains("pending: c, d"), "{text}");
        assert!(
            text.contains("not applied (not SUCCESS): x (FAILED)"),
            "{text}"
        );
        assert!(text.contains("last listed 2m01s ago"), "{text}");
        state.applying = None;
        assert_eq!(to_json(&state, "STOP", 0)["state"], "stopped");
        assert_eq!(to_json(&state, "RUN", 0)["state"], "watching");
        assert_eq!(to_text(&Value::Null), "");
    }
}
