//! Connection flags turned into a cluster client's configuration, in one place for every
//! spelling (`--target-*`, `--source-*`, `--from-*`, `--to-*`).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use crate::args::{End, EndConnectionArgs, Gzip, SigV4Service, SourceClusterArgs, TargetArgs};

impl TargetArgs {
    fn connection(&self) -> Connection<'_> {
        Connection {
            url: &self.target,
            username: self.target_username.as_deref(),
            password: self.target_password.as_deref(),
            api_key: self.target_api_key.as_deref(),
            sigv4: self.target_sigv4,
            aws_region: self.target_aws_region.as_deref(),
            ca: self.target_ca.as_deref(),
            client_cert: self.target_client_cert.as_deref(),
            client_key: self.target_client_key.as_deref(),
            insecure: self.target_insecure,
            max_attempts: Some(self.target_max_attempts),
            timeout: Some(self.target_timeout),
            gzip: Some(self.gzip),
        }
    }

    pub fn config(&self) -> anyhow::Result<cluster::ClientConfig> {
        self.connection().config()
    }

    /// The parts (`ctx` and the sink's parameters) for the registry to reach the `--target` cluster as
    /// `rfs run` writes it: the flags' client (the URL says where, the flags say how), the
    /// URL's path a base path (`path=base`), never an index. A URL that is no http(s) one
    /// is refused; the error, like the registry's, is read under "connecting to the
    /// target URL" (see [`Self::connecting`]).
    pub fn reached_by(&self, mut ctx: connectors::Context) -> anyhow::Result<super::Parts> {
        if !matches!(connectors::scheme(&self.target).as_str(), "http" | "https") {
            anyhow::bail!(
                "{}: the URL's scheme must be http or https",
                self.connecting()
            );
        }
        let mut client = self.config()?;
        client.urls.clear();
        ctx.to.client = Some(client);
        Ok(super::Parts::new(ctx).to(connectors::Params::new().with("path", "base")))
    }

    /// What an error reaching the target is said under.
    pub fn connecting(&self) -> String {
        format!("connecting to the target {}", redact::url(&self.target))
    }
}

impl SourceClusterArgs {
    /// Whether a source cluster was given (`run` then takes the snapshot first).
    pub fn is_set(&self) -> bool {
        self.source_cluster.is_some()
    }

    /// Connects to the source cluster, registers the `fs` repository if asked, then creates
    /// snapshot `name` (or finds it) and waits until it is SUCCESS. Returns the final state.
    pub async fn take_snapshot(&self, name: &str) -> anyhow::Result<serde_json::Value> {
        let url = self
            .source_cluster
            .as_deref()
            .context("no source cluster given (--source-cluster)")?;
        let repository = self
            .source_repository
            .as_deref()
            .context("--source-cluster needs --source-repository")?;
        let connection = Connection {
            url,
            username: self.source_username.as_deref(),
            password: self.source_password.as_deref(),
            api_key: self.source_api_key.as_deref(),
            sigv4: self.source_sigv4,
            aws_region: self.source_aws_region.as_deref(),
            ca: self.source_ca.as_deref(),
            client_cert: self.source_client_cert.as_deref(),
            client_key: self.source_client_key.as_deref(),
            insecure: self.source_insecure,
            max_attempts: Some(self.source_max_attempts),
            timeout: None,
            gzip: Some(Gzip::Auto),
        };
        let client = connection.connect("the source cluster").await?;
        if let Some(location) = &self.register_fs {
            client
                .register_fs_repository(repository, location)
                .await
                .with_context(|| {
                    format!(
                        "registering repository {repository} at {location} on {}",
                        redact::url(url)
                    )
                })?;
        }
        Ok(engine::phases::create_snapshot(&client, repository, name).await?)
    }
}

/// How to reach one cluster: what [`TargetArgs`], [`SourceClusterArgs`] and copy's
/// [`FromConnectionArgs`] / [`ToConnectionArgs`] share, turned into a
/// [`cluster::ClientConfig`] in one place.
struct Connection<'a> {
    url: &'a str,
    username: Option<&'a str>,
    password: Option<&'a str>,
    api_key: Option<&'a str>,
    sigv4: Option<SigV4Service>,
    aws_region: Option<&'a str>,
    ca: Option<&'a Path>,
    client_cert: Option<&'a Path>,
    client_key: Option<&'a Path>,
    insecure: bool,
    /// Attempts per request (`None`: the client's default).
    max_attempts: Option<u32>,
    /// Seconds per request (`None`: the client's default).
    timeout: Option<u64>,
    /// `None`: the client's default (`auto`).
    gzip: Option<Gzip>,
}

impl Connection<'_> {
    fn config(&self) -> anyhow::Result<cluster::ClientConfig> {
        let mut c = cluster::ClientConfig::new(self.url);
        c.auth = if let Some(service) = self.sigv4 {
            cluster::Auth::SigV4(cluster::SigV4Config {
                region: self.aws_region.map(str::to_string),
                service: match service {
                    SigV4Service::Aoss => cluster::AwsService::Aoss,
                    SigV4Service::Es => cluster::AwsService::Es,
                },
                credentials: None,
            })
        } else if let Some(key) = self.api_key {
            cluster::Auth::ApiKey(key.to_string())
        } else if let Some(user) = self.username {
            cluster::Auth::Basic {
                username: user.to_string(),
                password: self.password.unwrap_or_default().to_string(),
            }
        } else {
            cluster::Auth::None
        };
        c.tls = cluster::TlsConfig {
            ca_file: self.ca.map(Path::to_path_buf),
            client_cert: self.client_cert.map(Path::to_path_buf),
            client_key: self.client_key.map(Path::to_path_buf),
            insecure: self.insecure,
        };
        if let Some(n) = self.max_attempts {
            c.retry.max_attempts = n.max(1);
        }
        if let Some(secs) = self.timeout {
            c.request_timeout = Duration::from_secs(secs.clamp(1, 3600));
        }
        if let Some(gzip) = self.gzip {
            c.compression = match gzip {
                Gzip::On => cluster::RequestCompression::On,
                Gzip::Off => cluster::RequestCompression::Off,
                Gzip::Auto => cluster::RequestCompression::Auto,
            };
        }
        Ok(c)
    }

    /// [`Connection::config`] without URLs, for a connector that takes them from its own
    /// URL (copy's `--from` / `--to`).
    fn client_config(&self) -> anyhow::Result<cluster::ClientConfig> {
        let mut c = self.config()?;
        c.urls.clear();
        Ok(c)
    }

    /// Whether any option is given (the URL aside).
    fn is_set(&self) -> bool {
        self.username.is_some()
            || self.password.is_some()
            || self.api_key.is_some()
            || self.sigv4.is_some()
            || self.aws_region.is_some()
            || self.ca.is_some()
            || self.client_cert.is_some()
            || self.client_key.is_some()
            || self.insecure
            || self.max_attempts.is_some()
            || self.timeout.is_some()
            || self.gzip.is_some()
    }

    async fn connect(&self, what: &str) -> anyhow::Result<cluster::Client> {
        cluster::Client::connect(self.config()?)
            .await
            .with_context(|| format!("connecting to {what} {}", redact::url(self.url)))
    }
}

impl<E: End> EndConnectionArgs<E> {
    fn connection(&self) -> Connection<'_> {
        Connection {
            url: "",
            username: self.username.as_deref(),
            password: self.password.as_deref(),
            api_key: self.api_key.as_deref(),
            sigv4: self.sigv4,
            aws_region: self.aws_region.as_deref(),
            ca: self.ca.as_deref(),
            client_cert: self.client_cert.as_deref(),
            client_key: self.client_key.as_deref(),
            insecure: self.insecure,
            max_attempts: self.max_attempts,
            timeout: self.timeout,
            gzip: self.gzip,
        }
    }

    /// The end's client configuration without URLs (the `--from` / `--to` URL says where;
    /// `connectors::End::client` of the context).
    pub fn client_config(&self) -> anyhow::Result<cluster::ClientConfig> {
        self.connection().client_config()
    }

    /// Whether any of these flags is given.
    pub fn is_set(&self) -> bool {
        self.connection().is_set()
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args, FromArgMatches};

    use crate::args::{FromConnectionArgs, ToConnectionArgs};

    fn parse(argv: &[&str]) -> Result<(FromConnectionArgs, ToConnectionArgs), clap::Error> {
        let cmd = ToConnectionArgs::augment_args(FromConnectionArgs::augment_args(
            clap::Command::new("t"),
        ));
        let m = cmd.try_get_matches_from(std::iter::once("t").chain(argv.iter().copied()))?;
        Ok((
            FromConnectionArgs::from_arg_matches(&m)?,
            ToConnectionArgs::from_arg_matches(&m)?,
        ))
    }

    #[test]
    fn each_end_reads_its_own_flags_into_its_client() {
        let (from, to) = parse(&[
            "--from-api-key",
            "a2V5",
            "--from-timeout",
            "7",
            "--from-ca",
            "/ca.pem",
            "--to-username",
            "u",
            "--to-password",
            "p",
            "--to-max-attempts",
            "3",
            "--gzip",
            "off",
        ])
        .unwrap();
        let f = from.client_config().unwrap();
        assert!(matches!(&f.auth, cluster::Auth::ApiKey(k) if k == "a2V5"));
        assert_eq!(f.request_timeout, std::time::Duration::from_secs(7));
        assert_eq!(
            f.retry.max_attempts, 8,
            "the source keeps the default attempts"
        );
        assert_eq!(
            f.tls.ca_file.as_deref(),
            Some(std::path::Path::new("/ca.pem"))
        );
        assert!(f.urls.is_empty());
        let t = to.client_config().unwrap();
        assert!(
            matches!(&t.auth, cluster::Auth::Basic { username, password } if username == "u" && password == "p")
        );
        assert_eq!(t.retry.max_attempts, 3);
        assert_eq!(t.request_timeout, std::time::Duration::from_secs(120));
        assert!(matches!(t.compression, cluster::RequestCompression::Off));
        assert!(from.is_set() && to.is_set());
        let (from, to) = parse(&[]).unwrap();
        assert!(!from.is_set() && !to.is_set());
        assert!(from.gzip.is_none() && to.gzip.is_none());
    }

    #[test]
    fn the_parser_refuses_what_the_derived_groups_refused() {
        for argv in [
            &["--to-timeout", "0"][..],
            &["--from-max-attempts", "101"],
            &["--from-username", "u", "--from-api-key", "k"],
            &["--to-password", "p"],
            &["--to-client-cert", "/c.pem"],
            &["--from-aws-region", "eu-west-1"],
            &["--from-gzip", "on"],
        ] {
            assert!(parse(argv).is_err(), "{argv:?} was accepted");
        }
    }
}
