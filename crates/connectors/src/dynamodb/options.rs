//! The DynamoDB sink's typed options: its URL with what its parameters add
//! (`create-table`, `partition-key`, `sort-key`), parsed once into [`DynamoOptions`]. The
//! registry refuses these parameters for the other sinks, naming this one.

use super::sink::DynamoUrl;
use crate::{ConnectError, Context, Params};

/// The parameters a DynamoDB sink takes besides its URL's query.
pub(super) const PARAMS: &[&str] = &["create-table", "partition-key", "sort-key"];

/// A DynamoDB sink's options, from its URL, its parameters and the context.
#[derive(Debug, Clone)]
pub struct DynamoOptions {
    /// The URL with the key parameters folded in.
    pub url: DynamoUrl,
    /// Create the table when it is missing (`create-table=true`).
    pub create_table: bool,
    /// Write even when the key mapping is not unique in a table source (the context's
    /// `allow_key_collisions`).
    pub allow_key_collisions: bool,
}

impl DynamoOptions {
    /// `url` with the `partition-key`/`sort-key` parameters folded in; refused: a URL
    /// that is no DynamoDB one (redacted), keys given twice differently, a sort key
    /// without a partition key, `--create-only`, TLS trust of an `https://` sink
    /// (`--sink-ca`, `--sink-insecure`: the AWS client trusts the system's certificates),
    /// a parameter it does not take.
    pub fn parse(url: &str, params: &Params, ctx: &Context) -> Result<Self, ConnectError> {
        for (flag, set) in [
            ("--sink-ca", ctx.to.tls.ca_file.is_some()),
            ("--sink-insecure", ctx.to.tls.insecure),
        ] {
            if set {
                return Err(ConnectError::message(format!(
                    "{flag} applies to http(s):// sinks only (a dynamodb:// sink trusts the system's certificates)"
                )));
            }
        }
        params.refuse_unknown("dynamodb", PARAMS)?;
        let mut u = DynamoUrl::parse(url)
            .map_err(|e| ConnectError::message(redact::text(&e.to_string()).into_owned()))?;
        for (key, in_url) in [
            ("partition-key", &mut u.partition_key),
            ("sort-key", &mut u.sort_key),
        ] {
            match (params.get(key), &in_url) {
                (Some(g), Some(v)) if g != v => {
                    return Err(ConnectError::message(format!(
                        "{} {g} and the sink URL's {key} ({v}) disagree; give one",
                        flag_of(params, key)
                    )))
                }
                (Some(g), _) => *in_url = Some(g.to_string()),
                (None, _) => {}
            }
        }
        if u.sort_key.is_some() && u.partition_key.is_none() {
            return Err(ConnectError::message(
                "a sort key needs a partition key too (--partition-key or partition-key= in the sink URL)",
            ));
        }
        if matches!(ctx.bulk.op_type, cluster::OpType::Create) {
            return Err(ConnectError::message(
                "--create-only applies to _bulk sinks (BatchWriteItem overwrites items of the same key)",
            ));
        }
        Ok(DynamoOptions {
            url: u,
            create_table: params.flag("create-table")?.unwrap_or(false),
            allow_key_collisions: ctx.allow_key_collisions,
        })
    }
}

/// How an error names the parameter `key`: its flag, else `--KEY` (as the flags spell it).
fn flag_of(params: &Params, key: &str) -> String {
    let shown = params.shown(key);
    if shown == key {
        format!("--{key}")
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sink end's TLS trust (what `--sink-ca`/`--sink-insecure` set) is refused, each
    /// named, before the URL is even read.
    #[test]
    fn tls_trust_of_an_https_sink_is_refused() {
        let url = "dynamodb://events?region=us-east-1";
        let none = Params::new();
        let mut ctx = Context::default();
        ctx.to.tls.ca_file = Some("ca.pem".into());
        let e = DynamoOptions::parse(url, &none, &ctx)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--sink-ca applies to http(s):// sinks only (a dynamodb:// sink trusts the system's certificates)"
        );
        let mut ctx = Context::default();
        ctx.to.tls.insecure = true;
        let e = DynamoOptions::parse("dynamodb://t", &none, &ctx)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--sink-insecure applies to http(s):// sinks only (a dynamodb:// sink trusts the system's certificates)"
        );
        assert!(DynamoOptions::parse(url, &none, &Context::default()).is_ok());
    }

    #[test]
    fn urls_and_parameters_fold_into_the_options() {
        let ctx = Context::default();
        let none = Params::new();
        let o = DynamoOptions::parse(
            "dynamodb://events?region=us-east-1&partition-key=room",
            &none,
            &ctx,
        )
        .unwrap();
        assert_eq!(o.url.table, "events");
        assert_eq!(o.url.region.as_deref(), Some("us-east-1"));
        assert_eq!(o.url.partition_key.as_deref(), Some("room"));
        let o = DynamoOptions::parse(
            "dynamodb://events?region=r",
            &Params::new()
                .with("partition-key", "room")
                .with("sort-key", "id")
                .with("create-table", "true"),
            &ctx,
        )
        .unwrap();
        assert_eq!(
            (o.url.partition_key.as_deref(), o.url.sort_key.as_deref()),
            (Some("room"), Some("id"))
        );
        assert!(o.create_table);
        let e = DynamoOptions::parse("dynamodb://t?region=us-east-1", &none, &ctx)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 to 255"), "{e}");
        let mut p = Params::new();
        p.set_by("--partition-key", "partition-key", "b");
        let e = DynamoOptions::parse("dynamodb://events?partition-key=a", &p, &ctx)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--partition-key b and the sink URL's partition-key (a) disagree; give one"
        );
        let e = DynamoOptions::parse("dynamodb://events?sort-key=a", &none, &ctx)
            .unwrap_err()
            .to_string();
        assert!(e.contains("partition"), "{e}");
        let e = DynamoOptions::parse(
            "dynamodb://events?endpoint=http%3A%2F%2Fu%3Asecret%40h%3A1&bogus=1",
            &none,
            &ctx,
        )
        .unwrap_err()
        .to_string();
        assert!(!e.contains("secret"), "{e}");
        let e = DynamoOptions::parse(
            "dynamodb://events",
            &Params::new().with("path", "base"),
            &ctx,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("path: the dynamodb connector takes no such parameter"),
            "{e}"
        );
    }
}
