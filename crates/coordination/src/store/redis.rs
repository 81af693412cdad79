//! Redis backend: each record is a hash (`d` = JSON, `v` = version); open work items sit in
//! a sorted set scored by lease expiry, so "never leased or expired" is a rank range. Every
//! write is a Lua script (atomic on the server); the clock is the server's `TIME`. All keys
//! share the hash tag `{prefix}` so they live in one slot of a Redis Cluster too. `rediss://`
//! connects over TLS (`cacert=CA.pem` for a private CA).

use async_trait::async_trait;
use rand::Rng;
use redis::aio::ConnectionManager;
use redis::Script;

use super::{check_name, is_certificate_error, redact, take_query_param, Store};
use crate::record::{Kind, Record, Revision};
use crate::Error;

const BACKEND: &str = "redis";

const CREATE: &str = r#"
local p = ARGV[1]
local n = 0
for i = 2, #ARGV, 5 do
  local id = ARGV[i]
  local key = p .. ':r:' .. id
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 'd', ARGV[i + 4], 'v', 1)
    redis.call('SADD', p .. ':k:' .. ARGV[i + 1], id)
    if ARGV[i + 2] == '1' then redis.call('ZADD', p .. ':open', ARGV[i + 3], id) end
    n = n + 1
  end
end
return n
"#;

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
return nv
"#;

const CANDIDATES: &str = r#"
local p = ARGV[1]
local z = p .. ':open'
local limit = tonumber(ARGV[3])
local cnt = redis.call('ZCOUNT', z, '-inf', ARGV[2])
if cnt == 0 then return {} end
local off = math.floor(tonumber(ARGV[4]) * math.max(1, cnt - limit + 1))
if off > cnt - 1 then off = cnt - 1 end
local stop = math.min(off + limit, cnt) - 1
local ids = redis.call('ZRANGE', z, off, stop)
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
redis.call('DEL', p .. ':open')
return 1
"#;

/// Coordination records in Redis under one key prefix.
pub struct RedisStore {
    conn: ConnectionManager,
    prefix: String,
    create: Script,
    update: Script,
    candidates: Script,
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
        for kind in Kind::ALL {
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
        let conn = ConnectionManager::new(client).await.map_err(err)?;
        Ok(RedisStore {
            conn,
            prefix: format!("{{{prefix}}}"),
            create: Script::new(CREATE),
            update: Script::new(UPDATE),
            candidates: Script::new(CANDIDATES),
            list: Script::new(LIST),
            clear: Script::new(CLEAR),
        })
    }
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
        let nv: i64 = self
            .update
            .prepare_invoke()
            .arg(&self.prefix)
            .arg(&rec.id)
            .arg(expected.seq)
            .arg(if rec.is_candidate() { "1" } else { "0" })
            .arg(rec.expiry)
            .arg(rec.to_json())
            .invoke_async(&mut c)
            .await
            .map_err(err)?;
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

    async fn list(&self, kind: Kind) -> Result<Vec<Record>, Error> {
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
            .arg(Kind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>())
            .invoke_async(&mut c)
            .await
            .map_err(err)?;
        Ok(())
    }
}
