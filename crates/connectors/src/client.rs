//! The HTTP client of a cluster named by a URL (`http(s)://[user:pw@]host:port[/path]`),
//! shared by the live-cluster source, its listing and the `_bulk` sink.

use crate::ConnectError;

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

/// `from_url` (a [`client_config`]) with what a command's flags set up (`flags`, whose
/// `urls` are not used): the flags' client with the URL's base; the URL's userinfo
/// applies when the flags authenticate no way of their own (an authentication flag wins
/// over it).
pub(crate) fn with_flags(
    from_url: cluster::ClientConfig,
    flags: Option<&cluster::ClientConfig>,
) -> cluster::ClientConfig {
    let Some(flags) = flags else {
        return from_url;
    };
    let mut config = flags.clone();
    config.urls = from_url.urls;
    if matches!(config.auth, cluster::Auth::None) {
        config.auth = from_url.auth;
    }
    config
}
