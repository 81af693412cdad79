//! Redis backend: each record is a hash (`d` = JSON, `v` = version); open work items sit in
//! a sorted set scored by lease expiry, so "never leased or expired" is a rank range. Every
//! write is a Lua script (atomic on the server); the clock is the server's `TIME`. All keys
//! share the hash tag `{prefix}` so they live in one slot of a Redis Cluster too. `rediss://`
//! connects over TLS (`cacert=CA.pem` for a private CA).

use async_trait::async_trait;
use rand::Rng;
use redis::aio::ConnectionManager;
use redis::aio::ConnectionManagerConfig;
use redis::Script;

use std::collections::BTreeMap;
use std::time::Duration;

use super::{check_name, is_certificate_error, redact, take_query_param, Store};

use crate::latency::Latencies;
use crate::record::{Record, RecordKind, RecordState, Revision};
use crate::summary::{is_listed, ItemSummary, StateTotals};
use crate::Error;

const BACKEND: &str = "redis";
/// How long one command may wait for its answer. The client's default (500 ms) failed
/// calls that a fleet of a thousand workers queues on the one multiplexed connection; no
/// script here is O(items) any more, so a longer wait means a server in trouble.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

// Status counters: hash `{p}:agg` holds, per state and group of the work items, the
// number of items (`STATE|n|GROUP`) and the sums of their documents, bytes, refused and
// skipped documents (`|d|`, `|b|`, `|r|`, `|k|`). Each item's hash keeps what it added
// (`as`, `ag`, `ad`, `ab`, `ar`, `ak`) so that a write moves exactly its own share. Set
// `{p}:listed` holds the FAILED items and those with reasons. `{p}:aggv` says the counters
// cover every item (set when the first item is created).
const AGG_LIB: &str = r#"
local function agg_add(p, st, g, vals, sign)
  local agg = p .. ':agg'
  local names = {'n', 'd', 'b', 'r', 'k'}
  for i = 1, 5 do
    local v = vals[i]
    if v and v ~= '0' then
      redis.call('HINCRBY', agg, st .. '|' .. names[i] .. '|' .. g, sign .. v)
    end
  end
end
local function agg_move(p, key, id, st, g, d, b, r, k, listed)
  local old = redis.call('HMGET', key, 'as', 'ag', 'ad', 'ab', 'ar', 'ak')
  if old[1] then
    agg_add(p, old[1], old[2], {'1', old[3], old[4], old[5], old[6]}, '-')
  end
  agg_add(p, st, g, {'1', d, b, r, k}, '')
  redis.call('HSET', key, 'as', st, 'ag', g, 'ad', d, 'ab', b, 'ar', r, 'ak', k)
  if listed == '1' then
    redis.call('SADD', p .. ':listed', id)
  else
    redis.call('SREM', p .. ':listed', id)
  end
end
"#;

// ARGV: prefix, then per record: id, kind, candidate, expiry, json, state, group, docs,
// bytes, refused, skipped, listed.
const CREATE: &str = r#"
local p = ARGV[1]
local n = 0
if redis.call('EXISTS', p .. ':k:item') == 0 then redis.call('SET', p .. ':aggv', 1) end
for i = 2, #ARGV, 12 do
  local id = ARGV[i]
  local key = p .. ':r:' .. id
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 'd', ARGV[i + 4], 'v', 1)
    redis.call('SADD', p .. ':k:' .. ARGV[i + 1], id)
    if ARGV[i + 2] == '1' then redis.call('ZADD', p .. ':open', ARGV[i + 3], id) end
    if ARGV[i + 1] == 'item' then
      agg_move(p, key, id, ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], ARGV[i + 9],
        ARGV[i + 10], ARGV[i + 11])
    end
    n = n + 1
  end
end
return n
"#;

// ARGV: prefix, id, expected version, candidate, expiry, json, kind, state, group, docs,
// bytes, refused, skipped, listed.
const UPDATE: &str = r#"
local p = ARGV[1]
local id = ARGV[2]
local key = p .. ':r:' .. id
local v = redis.call('HGET', key, 'v')
if not v or tonumber(v) ~= tonumber(ARGV[3]) then return 0 end
local nv = tonumber(v) + 1
redis.call('HSET', key, 'd', ARGV[6], 'v', nv)
if ARGV[4] == '1' then
  redis.call('ZADD', p .. ':open', ARGV[5], id)
else
  redis.call('ZREM', p .. ':open', id)
end
if ARGV[7] == 'item' then
  agg_move(p, key, id, ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14])
end
return nv
"#;

// The counters, then the items leased at ARGV[2] (score above it) and the listed ones:
// {covered, #agg entries, agg field, value, ..., id, json, version, ...}.
const SUMMARY: &str = r#"
local p = ARGV[1]
local out = {}
out[1] = redis.call('EXISTS', p .. ':aggv')
local agg = redis.call('HGETALL', p .. ':agg')
out[2] = #agg
for _, x in ipairs(agg) do out[#out + 1] = x end
local seen = {}
local function emit(id)
  if seen[id] then return end
  seen[id] = true
  local h = redis.call('HMGET', p .. ':r:' .. id, 'd', 'v')
  if h[1] then
    out[#out + 1] = id
    out[#out + 1] = h[1]
    out[#out + 1] = h[2]
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. ':open', '(' .. ARGV[2], '+inf')) do
  emit(id)
end
for _, id in ipairs(redis.call('SMEMBERS', p .. ':listed')) do emit(id) end
return out
"#;

// Expired leases (score in 1..=now) first, earliest first; then fresh items (score 0)
// from a random rank among them. Two range reads of the sorted set: O(log n + limit).
const CANDIDATES: &str = r#"
local p = ARGV[1]
local z = p .. ':open'
local limit = tonumber(ARGV[3])
local ids = redis.call('ZRANGEBYSCORE', z, '(0', ARGV[2], 'LIMIT', 0, limit)
if #ids < limit then
  local cnt = redis.call('ZCOUNT', z, '-inf', 0)
  if cnt > 0 then
    local want = limit - #ids
    local off = math.floor(tonumber(ARGV[4]) * cnt)
    if off > cnt - 1 then off = cnt - 1 end
    for _, id in ipairs(redis.call('ZRANGE', z, off, math.min(off + want, cnt) - 1)) do
      ids[#ids + 1] = id
    end
    local wrap = math.min(off, off + want - cnt)
    if wrap > 0 then
      for _, id in ipairs(redis.call('ZRANGE', z, 0, wrap - 1)) do
        ids[#ids + 1] = id
      end
    end
  end
end
local out = {}
for _, id in ipairs(ids) do
  local h = redis.call('HMGET', p .. ':r:' .. id, 'd', 'v')
  if h[1] then
    out[#out + 1] = id
    out[#out + 1] = h[1]
    out[#out + 1] = h[2]
  end
end
return out
"#;

const LIST: &str = r#"
local p = ARGV[1]
local ids = redis.call('SMEMBERS', p .. ':k:' .. ARGV[2])
local out = {}
for _, id in ipairs(ids) do
  local d = redis.call('HGET', p .. ':r:' .. id, 'd')
  if d then
    out[#out + 1] = id
    out[#out + 1] = d
  end
end
return out
"#;

const CLEAR: &str = r#"
local p = ARGV[1]
for i = 2, #ARGV do
  local set = p .. ':k:' .. ARGV[i]
  for _, id in ipairs(redis.call('SMEMBERS', set)) do
    redis.call('DEL', p .. ':r:' .. id)
  end
  redis.call('DEL', set)
end
redis.call('DEL', p .. ':open', p .. ':agg', p .. ':listed', p .. ':aggv')
return 1
"#;

/// Coordination records in Redis under one key prefix.
pub struct RedisStore {
    conn: ConnectionManager,
    prefix: String,
    create: Script,
    update: Script,
    candidates: Script,
    summary: Script,
    list: Script,
    clear: Script,
}

fn err(e: redis::RedisError) -> Error {
    let message = e.to_string();
    if is_permanent(&e) || is_certificate_error(&message) {
        Error::refused(BACKEND, message)
    } else {
        Error::store(BACKEND, message)
    }
}

/// Refusals no retry cures: authentication (wrong or missing password, `NOAUTH`,
/// `WRONGPASS`), no ACL permission, a read-only replica, a bad client configuration, and
/// general `ERR` answers except "max number of clients reached".
fn is_permanent(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    if matches!(e.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM")) {
        return true;
    }
    match e.kind() {
        ErrorKind::AuthenticationFailed | ErrorKind::InvalidClientConfig => true,
        ErrorKind::Server(ServerErrorKind::NoPerm | ServerErrorKind::ReadOnly) => true,
        ErrorKind::Server(ServerErrorKind::ResponseError) => {
            !e.to_string().contains("max number of clients")
        }
        _ => false,
    }
}

impl RedisStore {
    /// Connect to `url`; `?prefix=NAME` picks the key prefix (default `rfs`).
    pub async fn open(url: &str) -> Result<Self, Error> {
        let store = Self::connect(url).await?;
        // The first command: a refused password shows here, not at the first record.
        store.now().await?;
        Ok(store)
    }

    /// Connect to `url` only if records exist under its prefix (nothing is written).
    pub async fn open_existing(url: &str) -> Result<Self, Error> {
        let store = Self::connect(url).await?;
        let mut c = store.conn.clone();
        let mut exists = redis::cmd("EXISTS");
        for kind in RecordKind::ALL {
            exists.arg(format!("{}:k:{}", store.prefix, kind.as_str()));
        }
        let n: i64 = exists.query_async(&mut c).await.map_err(err)?;
        if n == 0 {
            return Err(Error::refused(
                BACKEND,
                format!(
                    "no rfs records under prefix {} (nothing was created; a worker creates them)",
                    store.prefix.trim_matches(|c| c == '{' || c == '}')
                ),
            ));
        }
        Ok(store)
    }

    async fn connect(url: &str) -> Result<Self, Error> {
        let (conn_url, prefix) = take_query_param(url, "prefix")?;
        let (conn_url, ca_file) = take_query_param(&conn_url, "cacert")?;
        let prefix = prefix.unwrap_or_else(|| "rfs".to_string());
        check_name(url, &prefix)?;
        let bad = |reason: String| Error::BadUrl {
            url: redact(url),
            reason,
        };
        // `rediss://` is TLS with the system's trusted roots, or with the CA of `cacert=`.
        let client = match ca_file {
            None => redis::Client::open(conn_url.as_str()),
            Some(_) if !conn_url.starts_with("rediss://") => {
                return Err(bad("cacert is only used with rediss:// (TLS)".into()))
            }
            Some(path) => {
                let pem = std::fs::read(&path).map_err(|e| bad(format!("cacert {path}: {e}")))?;
                redis::Client::build_with_tls(
                    conn_url.as_str(),
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem),
                    },
                )
            }
        }
        .map_err(|e| bad(e.to_string()))?;
        // One plain connection first: a refused password or certificate answers at once
        // here, where the connection manager would retry its first connection with
        // backoff for about ten seconds before giving up.
        client
            .get_multiplexed_async_connection()
            .await
            .map_err(err)?;
        let config = ConnectionManagerConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
        let conn = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(err)?;
        Ok(RedisStore {
            conn,
            prefix: format!("{{{prefix}}}"),
            create: Script::new(&format!("{AGG_LIB}{CREATE}")),
            update: Script::new(&format!("{AGG_LIB}{UPDATE}")),
            candidates: Script::new(CANDIDATES),
            summary: Script::new(SUMMARY),
            list: Script::new(LIST),
            clear: Script::new(CLEAR),
        })
    }
}

/// A record's share of the status counters, as script arguments: state, group, documents,
/// bytes, refused, skipped, and whether status lists it.
fn agg_args(inv: &mut redis::ScriptInvocation<'_>, r: &Record) {
    inv.arg(r.state.as_str())
        .arg(&r.group)
        .arg(r.docs_done)
        .arg(r.bytes_done)
        .arg(r.docs_refused)
        .arg(r.docs_skipped)
        .arg(if is_listed(r) { "1" } else { "0" });
}

/// Status counters from the `{p}:agg` hash (`STATE|FIELD|GROUP` → value).
fn parse_agg(flat: &[String]) -> Result<BTreeMap<(String, RecordState), StateTotals>, Error> {
    let mut out: BTreeMap<(String, RecordState), StateTotals> = BTreeMap::new();
    for kv in flat.chunks_exact(2) {
        let bad = || Error::Corrupt {
            id: "status counters".into(),
            reason: format!("entry {:?} = {:?}", kv[0], kv[1]),
        };
        let mut parts = kv[0].splitn(3, '|');
        let (Some(st), Some(field), Some(group)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let state = match st {
            "open" => RecordState::Open,
            "done" => RecordState::Done,
            "failed" => RecordState::Failed,
            _ => return Err(bad()),
        };
        let v: i64 = kv[1].parse().map_err(|_| bad())?;
        let v = v.max(0) as u64;
        let t = out.entry((group.to_string(), state)).or_default();
        match field {
            "n" => t.items = v,
            "d" => t.docs = v,
            "b" => t.bytes = v,
            "r" => t.refused = v,
            "k" => t.skipped = v,
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

/// `latency_percentiles_usec_CMD:p50=12.031,p99=50.175,p99.9=100.351` lines (Redis 7);
/// the count is not in them (0), the max is p99.9.
fn parse_latencystats(info: &str) -> Vec<(String, Latencies)> {
    let us = |v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| Duration::from_secs_f64(v / 1e6))
    };
    info.lines()
        .filter_map(|line| {
            let (cmd, values) = line
                .trim()
                .strip_prefix("latency_percentiles_usec_")?
                .split_once(':')?;
            let mut l = Latencies::default();
            for kv in values.split(',') {
                match kv.split_once('=')? {
                    ("p50", v) => l.p50 = us(v)?,
                    ("p99", v) => l.p99 = us(v)?,
                    ("p99.9", v) => l.max = us(v)?,
                    _ => {}
                }
            }
            Some((cmd.to_string(), l))
        })
        .collect()
}

fn triples(flat: Vec<String>) -> Result<Vec<(Record, Revision)>, Error> {
    let mut out = Vec::with_capacity(flat.len() / 3);
    for t in flat.chunks_exact(3) {
        let v: i64 = t[2].parse().map_err(|_| Error::Corrupt {
            id: t[0].clone(),
            reason: format!("version {:?} is not a number", t[2]),
        })?;
        out.push((Record::from_json(&t[0], &t[1])?, Revision::row(v)));
    }
    Ok(out)
}

#[async_trait]
impl Store for RedisStore {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn now(&self) -> Result<i64, Error> {
        let mut c = self.conn.clone();
        let (secs, micros): (i64, i64) =
            redis::cmd("TIME").query_async(&mut c).await.map_err(err)?;
        Ok(secs * 1000 + micros / 1000)
    }

    async fn create(&self, rec: &Record) -> Result<Option<Revision>, Error> {
        let n = self.create_many(std::slice::from_ref(rec)).await?;
        Ok((n == 1).then_some(Revision::row(1)))
    }

    async fn create_many(&self, recs: &[Record]) -> Result<usize, Error> {
        let mut c = self.conn.clone();
        let mut n = 0usize;
        for chunk in recs.chunks(500) {
            let mut inv = self.create.prepare_invoke();
            inv.arg(&self.prefix);
            for r in chunk {
                inv.arg(&r.id)
                    .arg(r.kind.as_str())
                    .arg(if r.is_candidate() { "1" } else { "0" })
                    .arg(r.expiry)
                    .arg(r.to_json());
                agg_args(&mut inv, r);
            }
            let created: i64 = inv.invoke_async(&mut c).await.map_err(err)?;
            n += created as usize;
        }
        Ok(n)
    }

    async fn get(&self, id: &str) -> Result<Option<(Record, Revision)>, Error> {
        let mut c = self.conn.clone();
        let key = format!("{}:r:{}", self.prefix, id);
        let (d, v): (Option<String>, Option<i64>) = redis::cmd("HMGET")
            .arg(&key)
            .arg("d")
            .arg("v")
            .query_async(&mut c)
            .await
            .map_err(err)?;
        match (d, v) {
            (Some(d), Some(v)) => Ok(Some((Record::from_json(id, &d)?, Revision::row(v)))),
            _ => Ok(None),
        }
    }

    async fn update(&self, rec: &Record, expected: Revision) -> Result<Option<Revision>, Error> {
        let mut c = self.conn.clone();
        let mut inv = self.update.prepare_invoke();
        inv.arg(&self.prefix)
            .arg(&rec.id)
            .arg(expected.seq)
            .arg(if rec.is_candidate() { "1" } else { "0" })
            .arg(rec.expiry)
            .arg(rec.to_json())
            .arg(rec.kind.as_str());
        agg_args(&mut inv, rec);
        let nv: i64 = inv.invoke_async(&mut c).await.map_err(err)?;
        Ok((nv > 0).then_some(Revision::row(nv)))
    }

    async fn candidates(&self, now: i64, limit: usize) -> Result<Vec<(Record, Revision)>, Error> {
        let mut c = self.conn.clone();
        let r: f64 = rand::thread_rng().gen();
        let flat: Vec<String> = self
            .candidates
            .prepare_invoke()
            .arg(&self.prefix)
            .arg(now)
            .arg(limit)
            .arg(r)
            .invoke_async(&mut c)
            .await
            .map_err(err)?;
        triples(flat)
    }

    async fn earliest_open_expiry(&self) -> Result<Option<i64>, Error> {
        let mut c = self.conn.clone();
        let first: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(format!("{}:open", self.prefix))
            .arg(0)
            .arg(0)
            .arg("WITHSCORES")
            .query_async(&mut c)
            .await
            .map_err(err)?;
        Ok(first.first().map(|(_, s)| *s as i64))
    }

    async fn item_summary(&self, now: i64) -> Result<ItemSummary, Error> {
        let mut c = self.conn.clone();
        let flat: Vec<String> = self
            .summary
            .prepare_invoke()
            .arg(&self.prefix)
            .arg(now)
            .invoke_async(&mut c)
            .await
            .map_err(err)?;
        let corrupt = |reason: &str| Error::Corrupt {
            id: "status counters".into(),
            reason: reason.into(),
        };
        let covered = flat.first().map(String::as_str) == Some("1");
        if !covered {
            // Items written by an earlier version: no counters for them.
            return Ok(ItemSummary::fold(now, self.list(RecordKind::Item).await?));
        }
        let n: usize = flat
            .get(1)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| corrupt("no entry count"))?;
        let agg = flat
            .get(2..2 + n)
            .ok_or_else(|| corrupt("fewer entries than counted"))?;
        let unsplit = parse_agg(agg)?;
        let notable = triples(flat[2 + n..].to_vec())?
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        Ok(ItemSummary::from_unsplit(now, unsplit, notable))
    }

    async fn server_latencies(&self) -> Result<Vec<(String, Latencies)>, Error> {
        let mut c = self.conn.clone();
        let info: String = redis::cmd("INFO")
            .arg("latencystats")
            .query_async(&mut c)
            .await
            .map_err(err)?;
        Ok(parse_latencystats(&info))
    }

    async fn list(&self, kind: RecordKind) -> Result<Vec<Record>, Error> {
        let mut c = self.conn.clone();
        let flat: Vec<String> = self
            .list
            .prepare_invoke()
            .arg(&self.prefix)
            .arg(kind.as_str())
            .invoke_async(&mut c)
            .await
            .map_err(err)?;
        flat.chunks_exact(2)
            .map(|p| Record::from_json(&p[0], &p[1]))
            .collect()
    }

    async fn clear(&self) -> Result<(), Error> {
        let mut c = self.conn.clone();
        let _: i64 = self
            .clear
            .prepare_invoke()
            .arg(&self.prefix)
            .arg(
                RecordKind::ALL
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>(),
            )
            .invoke_async(&mut c)
            .await
            .map_err(err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencystats_lines() {
        let info = "# Latencystats\r\nlatency_percentiles_usec_evalsha:p50=12.031,p99=50.175,p99.9=100.351\r\nlatency_percentiles_usec_time:p50=1.003,p99=2.007,p99.9=3.007\r\nnoise\r\n";
        let l = parse_latencystats(info);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].0, "evalsha");
        assert_eq!(l[0].1.p50, Duration::from_nanos(12_031));
        assert_eq!(l[0].1.p99, Duration::from_nanos(50_175));
        assert_eq!(l[1].1.max, Duration::from_nanos(3_007));
    }

    #[test]
    fn counters_parse_and_refuse_garbage() {
        let flat: Vec<String> = [
            "open|n|logs|2024",
            "3",
            "open|d|logs|2024",
            "70",
            "done|n|x",
            "1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let m = parse_agg(&flat).unwrap();
        let t = &m[&("logs|2024".to_string(), RecordState::Open)];
        assert_eq!((t.items, t.docs), (3, 70));
        assert_eq!(m[&("x".to_string(), RecordState::Done)].items, 1);
        assert!(parse_agg(&["weird|n|x".to_string(), "1".to_string()]).is_err());
        assert!(parse_agg(&["open|n|x".to_string(), "many".to_string()]).is_err());
    }
}
