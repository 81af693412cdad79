//! Secrets out of text meant for people and log pipelines.
//!
//! Operators give rfs URLs that carry credentials (`postgres://rfs:PASSWORD@db/rfs`,
//! `redis://:PASSWORD@cache`, `https://user:PASSWORD@search:9200`, presigned URLs with
//! `X-Amz-Signature=…`). Everything rfs prints — log lines, errors, status, metrics,
//! `--help` — goes through this crate first, so a password never leaves the process:
//!
//! ```
//! assert_eq!(redact::url("postgres://rfs:s3cret@db:5432/rfs"), "postgres://rfs:***@db:5432/rfs");
//! assert_eq!(
//!     redact::text("connecting to https://u:pw@host:9200?token=abc: refused"),
//!     "connecting to https://u:***@host:9200?token=***: refused"
//! );
//! ```
//!
//! What is masked: the password of a URL's userinfo (the user name is kept, it helps to
//! diagnose "wrong user"), and the value of every query parameter whose name looks like a
//! secret ([`is_secret_param`]). Text that is not a URL is left alone, unless it quotes a
//! secret of a known URL: [`Secrets`] masks those values wherever they are (the dashboard
//! scrubs what the store says with the store URL's), and [`display_url`] shows a URL with
//! neither userinfo nor query.

use std::borrow::Cow;

mod chain;
mod secrets;

pub use chain::{chain, Chain};
pub use secrets::{display_url, Secrets};

/// What replaces a secret.
pub const MASK: &str = "***";

/// Whether a query parameter (or config key) of this name carries a secret: its name,
/// lower-cased without `-`/`_`, contains `pass`, `pwd`, `secret`, `token`, `sig`
/// (`sig`, `signature`, `X-Amz-Signature`), `credential`, `key` (`key`, `apikey`,
/// `access_key`, `sslkey`) or `auth` — except the names of DynamoDB key columns
/// (`partition-key`, `sort-key`), which are column names.
pub fn is_secret_param(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if n == "partitionkey" || n == "sortkey" {
        return false;
    }
    [
        "pass",
        "pwd",
        "secret",
        "token",
        "sig",
        "credential",
        "key",
        "auth",
    ]
    .iter()
    .any(|s| n.contains(s))
}

/// One component of a URL (user name, password, a path segment) percent-decoded: each
/// `%XX` becomes its byte, `+` stays a plus (this is not form encoding, where it means a
/// space), `&` and `=` are ordinary characters, an escape that is not two hex digits is
/// kept as written, and bytes that are not UTF-8 become U+FFFD.
///
/// ```
/// assert_eq!(redact::percent_decode("p%40ss+w&rd%zz"), "p@ss+w&rd%zz");
/// ```
pub fn percent_decode(component: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(component).decode_utf8_lossy()
}

/// One URL given by the user (a flag value), with its secrets masked. The whole string is
/// taken as the URL (up to another `SCHEME://` inside it, which is masked in turn), so a
/// password holding spaces, quotes, `/`, `?`, `#` or `@` is masked too. A value that is
/// not a URL (a plain path) comes back unchanged.
pub fn url(value: &str) -> String {
    mask_urls(value, false).into_owned()
}

/// Every URL inside free text (an error message, a log line, JSON) with its secrets masked.
/// A URL ends at whitespace, a quote, `<`, `>`, `` ` ``, `\`, or where another
/// `SCHEME://` begins; punctuation that ends it (`:,;.)]}`) is left to the sentence.
pub fn text(s: &str) -> Cow<'_, str> {
    mask_urls(s, true)
}

fn mask_urls(s: &str, free_text: bool) -> Cow<'_, str> {
    if !s.contains("://") {
        return Cow::Borrowed(s);
    }
    // Every `SCHEME://` in `s`: (scheme start, position of "://").
    let mut urls = Vec::new();
    let mut search = 0;
    while let Some(found) = s[search..].find("://") {
        let sep = search + found;
        let start = scheme_start(s, sep);
        if start < sep {
            urls.push((start, sep));
        }
        search = sep + 3;
    }
    if urls.is_empty() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut done = 0; // bytes of `s` already in `out`
    for (i, &(start, sep)) in urls.iter().enumerate() {
        if start < done {
            continue; // inside the previous URL's userinfo (a password holding "x://")
        }
        let after = sep + 3;
        let mut end = urls.get(i + 1).map_or(s.len(), |u| u.0.max(after));
        if free_text {
            if let Some(e) = s[after..end].find(|c: char| {
                c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | '\\')
            }) {
                end = after + e;
            }
            // Punctuation of the sentence around the URL: `…/db: connection refused`.
            end = after
                + s[after..end]
                    .trim_end_matches([':', ',', ';', '.', ')', ']', '}'])
                    .len();
        }
        out.push_str(&s[done..after]);
        mask_after_scheme(&s[after..end], &mut out);
        done = end;
    }
    out.push_str(&s[done..]);
    Cow::Owned(out)
}

/// The start of the scheme that ends at `sep` (`sep` itself when there is none).
fn scheme_start(s: &str, sep: usize) -> usize {
    let bytes = s.as_bytes();
    let mut i = sep;
    while i > 0 && is_scheme_byte(bytes[i - 1]) {
        i -= 1;
    }
    // A scheme starts with a letter.
    while i < sep && !bytes[i].is_ascii_alphabetic() {
        i += 1;
    }
    i
}

fn is_scheme_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

/// Appends `rest` (what follows `SCHEME://`) to `out` with the userinfo password and
/// secret query values masked.
fn mask_after_scheme(rest: &str, out: &mut String) {
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = match rest[..authority_end].rfind('@') {
        Some(at) => Some(at),
        // A password holding a raw `/`, `?` or `#` ends the authority early: `u:pa/ss@h`.
        // The part after the first `:` is then not a port (digits only).
        None => rest[authority_end..]
            .find('@')
            .map(|a| authority_end + a)
            .filter(|_| {
                rest[..authority_end]
                    .split_once(':')
                    .is_some_and(|(_, p)| !p.bytes().all(|b| b.is_ascii_digit()))
            }),
    };
    let after_userinfo = match at {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(MASK);
                }
                None => out.push_str(userinfo),
            }
            out.push('@');
            at + 1
        }
        None => 0,
    };
    let rest = &rest[after_userinfo..];
    let Some(q) = rest.find('?') else {
        out.push_str(rest);
        return;
    };
    out.push_str(&rest[..=q]);
    let (query, fragment) = match rest[q + 1..].find('#') {
        Some(h) => (&rest[q + 1..q + 1 + h], &rest[q + 1 + h..]),
        None => (&rest[q + 1..], ""),
    };
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((name, _)) if is_secret_param(name) => {
                out.push_str(name);
                out.push('=');
                out.push_str(MASK);
            }
            _ => out.push_str(pair),
        }
    }
    out.push_str(fragment);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_components_decode_without_form_rules() {
        assert_eq!(percent_decode("a%41%"), "aA%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("a+b&c=d"), "a+b&c=d");
        assert_eq!(percent_decode("%C3%A9%2B"), "é+");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
        assert!(matches!(percent_decode("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn userinfo_passwords_are_masked() {
        for (given, shown) in [
            (
                "postgres://postgres:PW@127.0.0.1:5432/postgres",
                "postgres://postgres:***@127.0.0.1:5432/postgres",
            ),
            (
                "redis://:PW@127.0.0.1:6379/0",
                "redis://:***@127.0.0.1:6379/0",
            ),
            ("rediss://default:PW@h", "rediss://default:***@h"),
            ("https://elastic:PW@h:9200", "https://elastic:***@h:9200"),
            // The user name alone is not a secret.
            ("postgres://postgres@h/db", "postgres://postgres@h/db"),
            // Raw reserved characters in the password.
            ("http://u:p@ss@h:9200", "http://u:***@h:9200"),
            ("http://u:pa/ss@h:9200/i", "http://u:***@h:9200/i"),
            ("http://u:pa?s#s@h", "http://u:***@h"),
            // No userinfo: nothing changes.
            ("http://h:9200/idx?q=a@b", "http://h:9200/idx?q=a@b"),
            ("sqlite://./rfs-state.db", "sqlite://./rfs-state.db"),
            ("/var/snapshots", "/var/snapshots"),
            ("", ""),
        ] {
            assert_eq!(url(given), shown, "{given}");
            assert_eq!(text(given), shown, "{given}");
        }
    }

    #[test]
    fn secret_query_parameters_are_masked() {
        assert_eq!(
            url("s3://b/p?region=eu-west-1&X-Amz-Signature=abc&X-Amz-Credential=AK/x&endpoint=http://m:9000"),
            "s3://b/p?region=eu-west-1&X-Amz-Signature=***&X-Amz-Credential=***&endpoint=http://m:9000"
        );
        assert_eq!(
            url("postgres://h/db?sslmode=require&password=PW&table=t#frag"),
            "postgres://h/db?sslmode=require&password=***&table=t#frag"
        );
        assert_eq!(
            url("https://h/x?sig=S&api_key=K&access_token=T&flag"),
            "https://h/x?sig=***&api_key=***&access_token=***&flag"
        );
        assert_eq!(
            url("dynamodb://t?region=r&partition-key=room&sort-key=id&key=K"),
            "dynamodb://t?region=r&partition-key=room&sort-key=id&key=***"
        );
        for name in [
            "password",
            "PASSWD",
            "secret",
            "token",
            "sig",
            "X-Amz-Signature",
            "apiKey",
        ] {
            assert!(is_secret_param(name), "{name}");
        }
        for name in ["region", "endpoint", "table", "prefix", "sslmode", "cacert"] {
            assert!(!is_secret_param(name), "{name}");
        }
    }

    #[test]
    fn urls_inside_text_are_masked_and_the_rest_kept() {
        let line = r#"INFO worker ready store=postgres://postgres:PW@127.0.0.1:5/p target="http://u:PW2@h:1/" done"#;
        assert_eq!(
            text(line),
            r#"INFO worker ready store=postgres://postgres:***@127.0.0.1:5/p target="http://u:***@h:1/" done"#
        );
        let json =
            r#"{"fields":{"message":"error: GET https://u:PW@h:9200/_bulk?token=T: refused"}}"#;
        assert_eq!(
            text(json),
            r#"{"fields":{"message":"error: GET https://u:***@h:9200/_bulk?token=***: refused"}}"#
        );
        // No URL: borrowed, unchanged.
        assert!(matches!(text("plain words, no URL"), Cow::Borrowed(_)));
        assert_eq!(text("plain words: a://"), "plain words: a://");
        assert_eq!(text("ends with ://"), "ends with ://");
        assert_eq!(text("://u:p@h"), "://u:p@h", "no scheme, not a URL");
        // Non-ASCII around a URL stays intact.
        assert_eq!(text("é→redis://:PW@h ü"), "é→redis://:***@h ü");
        // Two URLs back to back.
        assert_eq!(
            text("a=http://u:1@h,b=http://v:2@k"),
            "a=http://u:***@h,b=http://v:***@k"
        );
        // A URL inside another one's query.
        assert_eq!(
            url("s3://b/p?endpoint=http://k:SECRET@m:9000&region=r"),
            "s3://b/p?endpoint=http://k:***@m:9000&region=r"
        );
    }
}
