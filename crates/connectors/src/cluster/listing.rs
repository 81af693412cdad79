//! Verify's own listing of a live cluster's indices: the indices an index pattern matches,
//! asked with a request of verify's own (`GET _cat/indices/PATTERN?expand_wildcards=all`),
//! never through the copy source's listing, so an index the copy leaves out (a dot-named
//! or hidden index, a data stream's `.ds-…` backing indices) is named, not silently agreed
//! on. What the pattern itself excludes (`logs-*,-logs-old`) the cluster leaves out of the
//! answer: that is an explicit exclusion, not a miss.
//!
//! `expand_wildcards=all` lets wildcards match hidden indices too (Elasticsearch 7.7+, and
//! every OpenSearch: the `_cat/indices` API takes the indices options since
//! elastic/elasticsearch#53248, in 7.7; hidden indices came in the same release,
//! elastic/elasticsearch#50452). Older Elasticsearch has no hidden indices, and its
//! `_cat/indices` refuses parameters it does not know, so the option is not sent there.

use cluster::{encode_segment, Client, ClusterError, Method};
use serde::Deserialize;

/// Why the listing failed.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error("{url}: {why}")]
    Url { url: String, why: String },
    #[error("listing the indices of {pattern}")]
    Cluster {
        pattern: String,
        #[source]
        source: Box<ClusterError>,
    },
}

#[derive(Deserialize)]
struct CatRow {
    index: String,
    #[serde(rename = "docs.count", default)]
    docs: Option<String>,
}

/// The client and the index pattern of a live-cluster source URL
/// (`http(s)://[user:pw@]host:port[/base]/PATTERN`), read here rather than by the copy
/// source's code. `flags`: the client a command's `--from-*` flags set up (authentication,
/// TLS trust), whose authentication wins over the URL's userinfo, as the source's.
pub fn cluster_of(
    url: &str,
    flags: Option<&cluster::ClientConfig>,
) -> Result<(Client, String), ListingError> {
    let bad = |why: String| ListingError::Url {
        url: redact::url(url),
        why,
    };
    let mut u = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    let decode = |s: &str| redact::percent_decode(s).into_owned();
    let user = decode(u.username());
    let password = u.password().map(decode);
    let path = u.path().to_string();
    let (base, pattern) = match path.rfind('/') {
        Some(at) if at + 1 < path.len() => (path[..at].to_string(), decode(&path[at + 1..])),
        _ => return Err(bad("no index pattern in the URL's path".into())),
    };
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_path(&base);
    u.set_query(None);
    u.set_fragment(None);
    let mut config = cluster::ClientConfig::new(u.to_string().trim_end_matches('/'));
    if !user.is_empty() {
        config.auth = cluster::Auth::Basic {
            username: user,
            password: password.unwrap_or_default(),
        };
    }
    let config = crate::client::with_flags(config, flags);
    let client = Client::new(config).map_err(|e| bad(e.to_string()))?;
    Ok((client, pattern))
}

/// Every index `pattern` matches on the cluster, hidden ones included, with its document
/// count.
pub async fn matched_indices(
    client: &Client,
    pattern: &str,
) -> Result<Vec<(String, u64)>, ListingError> {
    let failed = |e: ClusterError| ListingError::Cluster {
        pattern: pattern.to_string(),
        source: Box::new(e),
    };
    let target = client.detect().await.map_err(failed)?;
    let v = &target.version;
    let expand = if v.is_os() || v.at_least_es(7, 7) {
        "&expand_wildcards=all"
    } else {
        ""
    };
    let segment = pattern
        .split(',')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join(",");
    let path = format!("/_cat/indices/{segment}?format=json&h=index,docs.count{expand}");
    let rows: Vec<CatRow> = client
        .request(Method::GET, &path, None)
        .await
        .and_then(|r| r.error_for_status())
        .and_then(|r| r.json())
        .map_err(failed)?;
    let mut out: Vec<(String, u64)> = rows
        .into_iter()
        .map(|r| {
            let docs = r.docs.and_then(|d| d.parse().ok()).unwrap_or(0);
            (r.index, docs)
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}
