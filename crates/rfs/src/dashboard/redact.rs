//! Keeping secrets off the page: the store URL shown without userinfo or query, and every
//! string the server sends scrubbed of the store URL's password (and password-like query
//! values) and of any `scheme://user:password@` it contains.

use serde_json::Value;

/// What replaces a secret.
pub const MASK: &str = "***";

/// The secrets of one store URL, and how to show that URL.
#[derive(Debug, Clone)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// Secrets found in `url`: its password (as written and percent-decoded) and the values
    /// of query parameters whose names say they are secret (`password=`, `sslpassword=`,
    /// `token=`, `secret=`, `key=`…).
    pub fn from_url(url: &str) -> Self {
        let mut values = Vec::new();
        if let Ok(u) = url::Url::parse(url) {
            if let Some(p) = u.password() {
                values.push(p.to_string());
                if let Ok(d) = percent_decode(p) {
                    values.push(d);
                }
            }
            for (k, v) in u.query_pairs() {
                let k = k.to_ascii_lowercase();
                if ["pass", "secret", "token", "key", "auth"]
                    .iter()
                    .any(|s| k.contains(s))
                {
                    values.push(v.into_owned());
                }
            }
        } else if let Some((_, rest)) = url.split_once("://") {
            // Not a URL the parser takes: treat everything between "://" and the last
            // '@' of the authority as userinfo.
            let authority = rest.split('/').next().unwrap_or(rest);
            if let Some((userinfo, _)) = authority.rsplit_once('@') {
                if let Some((_, pw)) = userinfo.split_once(':') {
                    values.push(pw.to_string());
                }
            }
        }
        // Short values would mask innocent text everywhere ("a", "1"); they are still
        // removed from URLs by `scrub_userinfo`.
        values.retain(|v| v.len() >= 3);
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Secrets { values }
    }

    /// `s` without any secret: known values masked, URL userinfo passwords masked.
    pub fn scrub(&self, s: &str) -> String {
        let mut out = scrub_userinfo(s);
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

/// How the page names the store: scheme, host, port and path only (no userinfo, no
/// query), or the path of a SQLite file.
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
        Err(_) => scrub_userinfo(url),
    }
}

/// Masks the password of every `scheme://user:password@host` in `s`.
pub fn scrub_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        // The authority ends at the first '/', '?', '#', whitespace or quote.
        let end = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>') || c.is_whitespace()
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.split_once(':') {
                    Some((user, _)) => {
                        out.push_str(user);
                        out.push(':');
                        out.push_str(MASK);
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn percent_decode(s: &str) -> Result<String, ()> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).map_err(|_| ())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ())?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_of_the_store_url_is_masked_everywhere() {
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
    fn any_url_userinfo_is_masked() {
        assert_eq!(
            scrub_userinfo("error sending to https://admin:hunter2@target:9200/_bulk: 401"),
            "error sending to https://admin:***@target:9200/_bulk: 401"
        );
        assert_eq!(
            scrub_userinfo("a redis://:pw@h:6379 and \"http://u@h/\" and http://h/x"),
            "a redis://:***@h:6379 and \"http://u@h/\" and http://h/x"
        );
        assert_eq!(scrub_userinfo("no url here"), "no url here");
        assert_eq!(scrub_userinfo("ends with ://"), "ends with ://");
    }

    #[test]
    fn the_store_is_shown_without_userinfo_or_query() {
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
    }

    #[test]
    fn percent_decoding_is_total() {
        assert_eq!(percent_decode("a%41%").unwrap(), "aA%");
        assert_eq!(percent_decode("%4").unwrap(), "%4");
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("%ff").is_err());
    }
}
