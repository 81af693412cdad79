//! The DynamoDB sink's typed options: its URL with what the flags add ([`DynamoSettings`],
//! in [`crate::Settings::dynamodb`]), parsed once into [`DynamoOptions`]. The registry
//! refuses DynamoDB's settings for the other sinks ([`DynamoSettings::refuse_elsewhere`]).

use super::sink::DynamoUrl;
use crate::{ConnectError, Settings};

/// What a command's flags say about a DynamoDB sink.
#[derive(Debug, Clone, Default)]
pub struct DynamoSettings {
    /// Create the table when it is missing (`--create-table`).
    pub create_table: bool,
    /// The attributes that are the partition and sort keys (`--partition-key`,
    /// `--sort-key`); the URL's `partition-key=`/`sort-key=` say the same and must agree.
    pub partition_key: Option<String>,
    pub sort_key: Option<String>,
    /// Write even when the key mapping is not unique in a table source
    /// (`--allow-key-collisions`).
    pub allow_key_collisions: bool,
}

impl DynamoSettings {
    /// What only a DynamoDB sink takes, refused (by the registry) for the other sinks.
    pub fn refuse_elsewhere(&self) -> Result<(), ConnectError> {
        for (flag, set) in [
            ("--create-table", self.create_table),
            ("--partition-key", self.partition_key.is_some()),
            ("--sort-key", self.sort_key.is_some()),
        ] {
            if set {
                return Err(ConnectError::message(format!(
                    "{flag} applies to a dynamodb:// sink only"
                )));
            }
        }
        Ok(())
    }
}

/// A DynamoDB sink's options, from its URL and the settings.
#[derive(Debug, Clone)]
pub struct DynamoOptions {
    /// The URL with the key flags folded in.
    pub url: DynamoUrl,
    pub create_table: bool,
    pub allow_key_collisions: bool,
}

impl DynamoOptions {
    /// `url` with `settings.dynamodb`'s keys folded in; refused: a URL that is no DynamoDB
    /// one (redacted), keys given twice differently, a sort key without a partition key,
    /// `--create-only`.
    pub fn parse(url: &str, settings: &Settings) -> Result<Self, ConnectError> {
        let mut u = DynamoUrl::parse(url)
            .map_err(|e| ConnectError::message(redact::text(&e.to_string()).into_owned()))?;
        let d = &settings.dynamodb;
        for (flag, given, in_url) in [
            ("--partition-key", &d.partition_key, &mut u.partition_key),
            ("--sort-key", &d.sort_key, &mut u.sort_key),
        ] {
            match (given, &in_url) {
                (Some(g), Some(v)) if g != v => {
                    return Err(ConnectError::message(format!(
                        "{flag} {g} and the sink URL's {} ({v}) disagree; give one",
                        &flag[2..]
                    )))
                }
                (Some(g), _) => *in_url = Some(g.clone()),
                (None, _) => {}
            }
        }
        if u.sort_key.is_some() && u.partition_key.is_none() {
            return Err(ConnectError::message(
                "a sort key needs a partition key too (--partition-key or partition-key= in the sink URL)",
            ));
        }
        if matches!(settings.bulk.op_type, cluster::OpType::Create) {
            return Err(ConnectError::message(
                "--create-only applies to _bulk sinks (BatchWriteItem overwrites items of the same key)",
            ));
        }
        Ok(DynamoOptions {
            url: u,
            create_table: d.create_table,
            allow_key_collisions: d.allow_key_collisions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(d: DynamoSettings) -> Settings {
        Settings {
            dynamodb: d,
            ..Settings::default()
        }
    }

    #[test]
    fn urls_and_flags_fold_into_the_options() {
        let o = DynamoOptions::parse(
            "dynamodb://events?region=us-east-1&partition-key=room",
            &Settings::default(),
        )
        .unwrap();
        assert_eq!(o.url.table, "events");
        assert_eq!(o.url.region.as_deref(), Some("us-east-1"));
        assert_eq!(o.url.partition_key.as_deref(), Some("room"));
        let o = DynamoOptions::parse(
            "dynamodb://events?region=r",
            &with(DynamoSettings {
                partition_key: Some("room".into()),
                sort_key: Some("id".into()),
                create_table: true,
                ..DynamoSettings::default()
            }),
        )
        .unwrap();
        assert_eq!(
            (o.url.partition_key.as_deref(), o.url.sort_key.as_deref()),
            (Some("room"), Some("id"))
        );
        assert!(o.create_table);
        let e = DynamoOptions::parse("dynamodb://t?region=us-east-1", &Settings::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 to 255"), "{e}");
        let e = DynamoOptions::parse(
            "dynamodb://events?partition-key=a",
            &with(DynamoSettings {
                partition_key: Some("b".into()),
                ..DynamoSettings::default()
            }),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("disagree"), "{e}");
        let e = DynamoOptions::parse("dynamodb://events?sort-key=a", &Settings::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("partition"), "{e}");
        let e = DynamoOptions::parse(
            "dynamodb://events?endpoint=http%3A%2F%2Fu%3Asecret%40h%3A1&bogus=1",
            &Settings::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn other_sinks_refuse_dynamodb_settings() {
        assert!(DynamoSettings::default().refuse_elsewhere().is_ok());
        let e = DynamoSettings {
            create_table: true,
            ..DynamoSettings::default()
        }
        .refuse_elsewhere()
        .unwrap_err()
        .to_string();
        assert_eq!(e, "--create-table applies to a dynamodb:// sink only");
        for (s, flag) in [
            (
                DynamoSettings {
                    partition_key: Some("k".into()),
                    ..DynamoSettings::default()
                },
                "--partition-key",
            ),
            (
                DynamoSettings {
                    sort_key: Some("k".into()),
                    ..DynamoSettings::default()
                },
                "--sort-key",
            ),
        ] {
            let e = s.refuse_elsewhere().unwrap_err().to_string();
            assert!(e.starts_with(flag), "{e}");
        }
        // Through the registry: a cluster or files sink refuses them.
        let s = with(DynamoSettings {
            create_table: true,
            ..DynamoSettings::default()
        });
        for url in ["http://u:secret@h:9200/ev", "out/dir", "file:///tmp/out"] {
            let e = crate::sink_identity(url, &s).unwrap_err().to_string();
            assert!(
                e.contains("--create-table applies to a dynamodb:// sink only")
                    && !e.contains("secret"),
                "{e}"
            );
        }
    }
}
