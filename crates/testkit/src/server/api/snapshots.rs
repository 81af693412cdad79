//! Snapshot repositories and snapshots (fs repositories written by the project writer).

#[allow(unused_imports)]
use super::*;

pub(super) fn repo_missing(repo: &str) -> EsError {
    EsError::new(
        404,
        "repository_missing_exception",
        format!("[{repo}] missing"),
    )
}

pub(super) fn put_repository(c: &Ctx<'_>, repo: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    let kind = body.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "fs" {
        return Err(EsError::new(
            500,
            "repository_exception",
            format!(
                "[{repo}] repository type [{kind}] does not exist (the testkit server supports fs)"
            ),
        ));
    }
    let location = body
        .pointer("/settings/location")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            EsError::new(
                500,
                "repository_exception",
                format!("[{repo}] missing location"),
            )
        })?;
    std::fs::create_dir_all(location).map_err(|e| {
        EsError::new(
            500,
            "repository_verification_exception",
            format!("[{repo}] cannot create location [{location}]: {e}"),
        )
    })?;
    let settings = body.get("settings").cloned().unwrap_or(json!({}));
    let settings = Value::Object(
        settings
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                (
                    k.clone(),
                    match v {
                        Value::String(s) => Value::String(s.clone()),
                        other => Value::String(other.to_string()),
                    },
                )
            })
            .collect(),
    );
    c.state().repositories.insert(
        repo.to_string(),
        json!({"type": "fs", "settings": settings}),
    );
    c.ok(200, ack())
}

pub(super) fn get_repositories(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let out: Map<String, Value> = select(&st.repositories, name)
        .into_iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    if out.is_empty() && !name.contains('*') && name != "_all" {
        return Err(repo_missing(name));
    }
    c.ok(200, Value::Object(out))
}

pub(super) fn delete_repository(c: &Ctx<'_>, repo: &str) -> Result<Resp, EsError> {
    if c.state().repositories.remove(repo).is_none() {
        return Err(repo_missing(repo));
    }
    c.ok(200, ack())
}

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Index names in a repository's latest `index-N` (plain JSON in ES ≥ 5); empty if unreadable.
pub(super) fn repository_indices(root: &Path) -> Vec<String> {
    let generation = std::fs::read(root.join("index.latest"))
        .ok()
        .filter(|b| b.len() == 8)
        .map(|b| i64::from_be_bytes(b.try_into().unwrap_or([0; 8])));
    let Some(generation) = generation else {
        return Vec::new();
    };
    let Ok(bytes) = std::fs::read(root.join(format!("index-{generation}"))) else {
        return Vec::new();
    };
    serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| {
            v.get("indices")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
        })
        .unwrap_or_default()
}

pub(super) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

pub(super) async fn create_snapshot(c: &Ctx<'_>, repo: &str, snap: &str) -> Result<Resp, EsError> {
    let location = {
        let st = c.state();
        let r = st
            .repositories
            .get(repo)
            .ok_or_else(|| repo_missing(repo))?;
        if st
            .snapshots
            .contains_key(&(repo.to_string(), snap.to_string()))
        {
            return Err(EsError::new(
                400,
                "invalid_snapshot_name_exception",
                format!("[{repo}:{snap}] Invalid snapshot name [{snap}], snapshot with the same name already exists"),
            ));
        }
        PathBuf::from(r["settings"]["location"].as_str().unwrap_or_default())
    };
    let source = c.shared.config.snapshot_source.clone().ok_or_else(|| {
        EsError::new(
            500,
            "snapshot_creation_exception",
            format!("[{repo}:{snap}] the testkit server was started without a snapshot_source"),
        )
    })?;
    let wait = c.flag("wait_for_completion").unwrap_or(false);
    let indices = repository_indices(&source);
    let record = SnapshotRecord {
        uuid: c.state().next_uuid(),
        indices,
        start_ms: now_ms(),
        end_ms: None,
        failure: None,
    };
    let key = (repo.to_string(), snap.to_string());
    c.state().snapshots.insert(key.clone(), record);
    let shared = Arc::clone(c.shared);
    let delay = shared.config.snapshot_duration;
    let job = async move {
        let copied = tokio::task::spawn_blocking(move || copy_tree(&source, &location)).await;
        if !wait {
            tokio::time::sleep(delay).await;
        }
        let mut st = shared.state();
        if let Some(r) = st.snapshots.get_mut(&key) {
            r.end_ms = Some(now_ms());
            match copied {
                Ok(Ok(())) => {}
                Ok(Err(e)) => r.failure = Some(format!("copying the repository failed: {e}")),
                Err(e) => r.failure = Some(format!("copy task failed: {e}")),
            }
        }
    };
    if wait {
        job.await;
        let st = c.state();
        match st.snapshots.get(&(repo.to_string(), snap.to_string())) {
            Some(r) => c.ok(200, json!({ "snapshot": snapshot_info(c, repo, snap, r) })),
            None => Err(EsError::new(
                404,
                "snapshot_missing_exception",
                format!("[{repo}:{snap}] was deleted while it was being created"),
            )),
        }
    } else {
        tokio::spawn(job);
        c.ok(200, json!({"accepted": true}))
    }
}

pub(super) fn snapshot_state(r: &SnapshotRecord) -> &'static str {
    match (&r.failure, r.end_ms) {
        (Some(_), _) => "FAILED",
        (None, Some(_)) => "SUCCESS",
        (None, None) => "IN_PROGRESS",
    }
}

pub(super) fn snapshot_info(c: &Ctx<'_>, repo: &str, snap: &str, r: &SnapshotRecord) -> Value {
    let n = r.indices.len();
    let done = r.end_ms.is_some() && r.failure.is_none();
    let mut v = json!({
        "snapshot": snap,
        "uuid": r.uuid,
        "repository": repo,
        "version_id": c.shared.dialect.version_id(),
        "version": c.shared.dialect.number,
        "indices": r.indices,
        "data_streams": [],
        "include_global_state": true,
        "state": snapshot_state(r),
        "start_time_in_millis": r.start_ms,
        "failures": r.failure.iter().collect::<Vec<_>>(),
        "shards": {"total": n, "failed": if r.failure.is_some() { n } else { 0 }, "successful": if done { n } else { 0 }},
    });
    if let Some(end) = r.end_ms {
        v["end_time_in_millis"] = json!(end);
        v["duration_in_millis"] = json!(end - r.start_ms);
    }
    v
}

pub(super) fn get_snapshots(c: &Ctx<'_>, repo: &str, snap: &str) -> Result<Resp, EsError> {
    let st = c.state();
    if !st.repositories.contains_key(repo) {
        return Err(repo_missing(repo));
    }
    let list: Vec<Value> = st
        .snapshots
        .iter()
        .filter(|((r, s), _)| r == repo && (snap == "_all" || snap.split(',').any(|p| glob(p, s))))
        .map(|((r, s), rec)| snapshot_info(c, r, s, rec))
        .collect();
    if list.is_empty() && snap != "_all" && !snap.contains('*') {
        return Err(EsError::new(
            404,
            "snapshot_missing_exception",
            format!("[{repo}:{snap}] is missing"),
        ));
    }
    c.ok(200, json!({ "snapshots": list }))
}

pub(super) fn delete_snapshot(c: &Ctx<'_>, repo: &str, snap: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    if st
        .snapshots
        .remove(&(repo.to_string(), snap.to_string()))
        .is_none()
    {
        return Err(EsError::new(
            404,
            "snapshot_missing_exception",
            format!("[{repo}:{snap}] is missing"),
        ));
    }
    c.ok(200, ack())
}

pub(super) fn snapshot_status(
    c: &Ctx<'_>,
    repo: Option<&str>,
    snap: Option<&str>,
) -> Result<Resp, EsError> {
    let st = c.state();
    if let Some(repo) = repo {
        if !st.repositories.contains_key(repo) {
            return Err(repo_missing(repo));
        }
    }
    let list: Vec<Value> = st
        .snapshots
        .iter()
        .filter(|((r, s), rec)| {
            repo.is_none_or(|x| x == r)
                && match snap {
                    Some(x) => x.split(',').any(|p| p == s),
                    None => rec.end_ms.is_none(),
                }
        })
        .map(|((r, s), rec)| {
            let n = rec.indices.len();
            let done = usize::from(rec.end_ms.is_some() && rec.failure.is_none()) * n;
            json!({
                "snapshot": s,
                "repository": r,
                "uuid": rec.uuid,
                "state": snapshot_state(rec),
                "include_global_state": true,
                "shards_stats": {"initializing": 0, "started": n - done, "finalizing": 0, "done": done, "failed": 0, "total": n},
                "stats": {"start_time_in_millis": rec.start_ms, "time_in_millis": rec.end_ms.map_or(0, |e| e - rec.start_ms)},
                "indices": rec.indices.iter().map(|i| (i.clone(), json!({}))).collect::<Map<String, Value>>(),
            })
        })
        .collect();
    if let (Some(repo), Some(snap)) = (repo, snap) {
        if list.is_empty() {
            return Err(EsError::new(
                404,
                "snapshot_missing_exception",
                format!("[{repo}:{snap}] is missing"),
            ));
        }
    }
    c.ok(200, json!({ "snapshots": list }))
}
