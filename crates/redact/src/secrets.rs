//! The secrets of one URL, masked wherever they turn up: a server's message can quote a
//! password outside any URL (`password authentication failed for "p@ss"`), so the values
//! themselves are looked for, as written and percent-decoded.

use serde_json::Value;

use crate::{is_secret_param, text, url as mask_url, MASK};

/// Values shorter than this would mask innocent text everywhere (`a`, `1`); they are
/// still masked inside URLs by [`text`].
const MIN_SECRET_LEN: usize = 3;

/// The secrets of one URL (a store URL, a target URL), to be masked in any text.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Longest first, so that a secret containing another is masked whole.
    values: Vec<String>,
}

impl Secrets {
    /// The secrets of `url`: its password (as written and percent-decoded) and the values
    /// of query parameters whose names say they are secret ([`is_secret_param`]).
    pub fn from_url(url: &str) -> Self {
        let mut values = Vec::new();
        if let Ok(u) = url::Url::parse(url) {
            if let Some(p) = u.password() {
                values.push(p.to_string());
                if let Ok(d) = percent_encoding::percent_decode_str(p).decode_utf8() {
                    values.push(d.into_owned());
                }
            }
            for (k, v) in u.query_pairs() {
                if is_secret_param(&k) {
                    values.push(v.into_owned());
                }
            }
        } else if let Some((_, rest)) = url.split_once("://") {
            // Not a URL the parser takes: everything between "://" and the last '@' of
            // the authority is the userinfo.
            let authority = rest.split('/').next().unwrap_or(rest);
            if let Some((userinfo, _)) = authority.rsplit_once('@') {
                if let Some((_, pw)) = userinfo.split_once(':') {
                    values.push(pw.to_string());
                }
            }
        }
        values.retain(|v| v.len() >= MIN_SECRET_LEN);
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Secrets { values }
    }

    /// `s` without any secret: every URL masked ([`text`]), then the known values.
    pub fn scrub(&self, s: &str) -> String {
        let mut out = text(s).into_owned();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), MASK);
            }
        }
        out
    }

    /// Scrubs every string (and object key) of `v` in place.
    pub fn scrub_value(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                let clean = self.scrub(s);
                if clean != *s {
                    *s = clean;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.scrub_value(x)),
            Value::Object(m) => {
                let dirty: Vec<String> =
                    m.keys().filter(|k| self.scrub(k) != **k).cloned().collect();
                for k in dirty {
                    if let Some(x) = m.remove(&k) {
                        m.insert(self.scrub(&k), x);
                    }
                }
                m.values_mut().for_each(|x| self.scrub_value(x));
            }
            _ => {}
        }
    }
}

/// How a page names a URL it must not reveal: scheme, host, port and path only (no
/// userinfo, no query), or the path of a SQLite file.
pub fn display_url(url: &str) -> String {
    if let Some(path) = url.strip_prefix("sqlite://") {
        return format!("sqlite://{}", path.split('?').next().unwrap_or(path));
    }
    match url::Url::parse(url) {
        Ok(u) => {
            let host = u.host_str().unwrap_or("");
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{}://{host}{port}{}", u.scheme(), u.path())
        }
        Err(_) => mask_url(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_of_the_url_is_masked_everywhere() {
        let s = Secrets::from_url(
            "postgres://rfs:p%40ss-W0rd@db.example:5432/rfs?sslpassword=keyPW1&table=t",
        );
        assert_eq!(
            s.scrub("auth failed for p@ss-W0rd and p%40ss-W0rd and keyPW1"),
            "auth failed for *** and *** and ***"
        );
        let mut v = serde_json::json!({"a": ["x p@ss-W0rd y"], "p@ss-W0rd": 1, "n": 3});
        s.scrub_value(&mut v);
        assert_eq!(v, serde_json::json!({"a": ["x *** y"], "***": 1, "n": 3}));
    }

    #[test]
    fn any_url_userinfo_is_masked_and_short_values_only_inside_urls() {
        let s = Secrets::from_url("redis://:pw@h:6379");
        assert_eq!(
            s.scrub("error sending to https://admin:hunter2@target:9200/_bulk: 401"),
            "error sending to https://admin:***@target:9200/_bulk: 401"
        );
        assert_eq!(
            s.scrub("a redis://:pw@h:6379 and \"http://u@h/\" and http://h/x, pw kept"),
            "a redis://:***@h:6379 and \"http://u@h/\" and http://h/x, pw kept"
        );
    }

    #[test]
    fn a_bad_percent_escape_in_the_password_keeps_the_password_as_written() {
        let s = Secrets::from_url("postgres://rfs:ab%zzcd@db/rfs");
        assert_eq!(s.scrub("refused ab%zzcd"), "refused ***");
    }

    #[test]
    fn the_url_is_shown_without_userinfo_or_query() {
        assert_eq!(
            display_url("postgres://rfs:secret@db:5432/rfs?sslrootcert=/ca.pem&password=x"),
            "postgres://db:5432/rfs"
        );
        assert_eq!(
            display_url("redis://:secret@127.0.0.1:6379/0"),
            "redis://127.0.0.1:6379/0"
        );
        assert_eq!(
            display_url("sqlite:///var/lib/rfs/state.db"),
            "sqlite:///var/lib/rfs/state.db"
        );
        assert_eq!(display_url("weird://u:pw@h"), "weird://h");
        assert_eq!(display_url("no url: u:pw@h"), "no url: u:pw@h");
    }
}
