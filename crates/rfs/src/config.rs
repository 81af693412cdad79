//! The optional TOML config file. Each top-level key is a flag's long name; its value
//! becomes the default of the matching `RFS_*` environment variable, so precedence is
//! flag > environment > config file, and clap's `env` support does the rest.

use anyhow::{bail, Context};

/// Finds `--config FILE` (or `RFS_CONFIG`) before clap parses, and exports every key of
/// the file as `RFS_<KEY>` unless that variable is already set.
pub fn apply_config_file_to_env() -> anyhow::Result<()> {
    let mut path = std::env::var_os("RFS_CONFIG").map(std::path::PathBuf::from);
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        let a = a.to_string_lossy().into_owned();
        if a == "--" {
            break;
        }
        if a == "--config" {
            path = args.next().map(Into::into);
        } else if let Some(v) = a.strip_prefix("--config=") {
            path = Some(v.into());
        }
    }
    let Some(path) = path else { return Ok(()) };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("parsing config file {}", path.display()))?;
    for (key, value) in table {
        let var = env_name(&key);
        let value = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Array(items) => {
                let mut parts = Vec::new();
                for item in items {
                    match item {
                        toml::Value::String(s) => parts.push(s),
                        other => parts.push(other.to_string()),
                    }
                }
                parts.join(",")
            }
            other => bail!(
                "config file {}: key `{key}` has an unsupported value {other}",
                path.display()
            ),
        };
        if std::env::var_os(&var).is_none() {
            // SAFETY-free: set_var is safe in edition 2021; this runs before any thread starts.
            std::env::set_var(&var, value);
        }
    }
    Ok(())
}

/// `max-docs` → `RFS_MAX_DOCS`.
pub fn env_name(key: &str) -> String {
    format!("RFS_{}", key.replace(['-', '.'], "_").to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    #[test]
    fn env_names() {
        assert_eq!(super::env_name("max-docs"), "RFS_MAX_DOCS");
        assert_eq!(super::env_name("store"), "RFS_STORE");
    }
}
