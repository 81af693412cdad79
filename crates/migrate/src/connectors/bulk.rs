//! Sink: a cluster through `_bulk`, `http(s)://[user:pw@]host:port[/INDEX]` (every
//! document into INDEX when the path names one; else each keeps its index).

use super::{BoxedSink, ConnectError, OpenedSink, OpenedSource, Settings, SinkConnector};
use crate::sinks::bulk::BulkSink;

pub(super) const SINK: SinkConnector = SinkConnector {
    name: "bulk",
    schemes: &["http", "https"],
    open: |url, settings, source| Box::pin(open(url, settings, source)),
};

/// The client's configuration (credentials from the URL's userinfo) and the index the
/// URL's path names.
pub(crate) fn client_config(
    url: &str,
    tls: &cluster::TlsConfig,
) -> Result<(cluster::ClientConfig, Option<String>), ConnectError> {
    let mut u = url::Url::parse(url).map_err(|e| ConnectError::new(url, e))?;
    let decode = |s: &str| redact::percent_decode(s).into_owned();
    let user = decode(u.username());
    let password = u.password().map(decode);
    let index = u
        .path_segments()
        .and_then(|mut p| p.next_back().map(decode))
        .filter(|i| !i.is_empty());
    let path = u.path().to_string();
    let base_path = match &index {
        Some(_) => path[..path.rfind('/').unwrap_or(0)].to_string(),
        None => path.trim_end_matches('/').to_string(),
    };
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_path(&base_path);
    u.set_query(None);
    u.set_fragment(None);
    let mut c = cluster::ClientConfig::new(u.to_string().trim_end_matches('/'));
    if !user.is_empty() {
        c.auth = cluster::Auth::Basic {
            username: user,
            password: password.unwrap_or_default(),
        };
    }
    c.tls = tls.clone();
    Ok((c, index))
}

async fn open(
    url: &str,
    settings: &Settings,
    _source: &OpenedSource,
) -> Result<OpenedSink, ConnectError> {
    let (config, index) = client_config(url, &settings.tls)?;
    let client = cluster::Client::connect(config)
        .await
        .map_err(|e| ConnectError::new(url, e))?;
    let sender = cluster::BulkSender::new(client, settings.bulk.clone())
        .map_err(|e| ConnectError::new(url, e))?;
    Ok(OpenedSink {
        sink: BoxedSink::new(BulkSink::new(sender, settings.batch, redact::url(url))),
        index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_index_and_credentials() {
        let tls = cluster::TlsConfig::default();
        let (c, i) = client_config("http://u:p%40ss@h:9200/events", &tls).unwrap();
        assert_eq!(c.urls, vec!["http://h:9200".to_string()]);
        assert_eq!(i.as_deref(), Some("events"));
        assert!(
            matches!(c.auth, cluster::Auth::Basic { ref username, ref password } if username == "u" && password == "p@ss")
        );
        let (c, i) = client_config("https://h/proxy/ev%20x", &tls).unwrap();
        assert_eq!(c.urls, vec!["https://h/proxy".to_string()]);
        assert_eq!(i.as_deref(), Some("ev x"));
        let (c, i) = client_config("http://h:9200/", &tls).unwrap();
        assert_eq!(c.urls, vec!["http://h:9200".to_string()]);
        assert_eq!(i, None);
    }
}
