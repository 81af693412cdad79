//! Credentials as the signer uses them, and the region the usual AWS way: `AWS_REGION`,
//! `AWS_DEFAULT_REGION`, then `region` of the profile (`AWS_PROFILE`, else `default`) in the
//! config file (`AWS_CONFIG_FILE`, else `~/.aws/config`). Credentials are found by
//! [`crate::CredentialsProvider`] (the AWS SDKs' default chain). No error or `Debug` output
//! ever holds a secret key, a session token or a line of a file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Long-lived or session credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Why the region could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    #[error("{}: cannot read: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error("{}, line {line}: {reason}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        reason: &'static str,
    },
}

/// The region: `AWS_REGION`, `AWS_DEFAULT_REGION`, then `region` of the profile in the
/// config file. `Ok(None)` when none of them says.
pub fn region() -> Result<Option<String>, CredentialsError> {
    region_with(&process_env)
}

/// As [`region`], with `env` standing for the process environment.
pub fn region_with(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, CredentialsError> {
    if let Some(r) = region_from_env_with(env) {
        return Ok(Some(r));
    }
    let files = ProfileFiles::from_env(env);
    let Some(path) = &files.config else {
        return Ok(None);
    };
    let section = config_section(&files.profile);
    Ok(read_section(path, &section)?
        .and_then(|v| v.get("region").filter(|r| !r.is_empty()).cloned()))
}

/// The region from `AWS_REGION` or `AWS_DEFAULT_REGION` alone.
pub fn region_from_env() -> Option<String> {
    region_from_env_with(&process_env)
}

fn region_from_env_with(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .find_map(|n| env(n))
}

/// A variable of the process environment, unset when empty.
fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where the profile's region is looked for.
struct ProfileFiles {
    profile: String,
    config: Option<PathBuf>,
}

impl ProfileFiles {
    fn from_env(env: &dyn Fn(&str) -> Option<String>) -> ProfileFiles {
        let home = env("HOME").map(PathBuf::from);
        ProfileFiles {
            profile: env("AWS_PROFILE").unwrap_or_else(|| "default".to_string()),
            config: env("AWS_CONFIG_FILE")
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".aws").join("config"))),
        }
    }
}

/// The config file names non-default profiles `[profile NAME]`.
fn config_section(profile: &str) -> String {
    if profile == "default" {
        profile.to_string()
    } else {
        format!("profile {profile}")
    }
}

/// The `key = value` settings of section `[name]` in an INI-style AWS file; `None` when the
/// file or the section does not exist. Keys are lower-cased; indented lines (nested
/// settings such as `s3 =` blocks) and comments are passed over.
fn read_section(
    path: &Path,
    name: &str,
) -> Result<Option<BTreeMap<String, String>>, CredentialsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CredentialsError::Read {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
        }
    };
    parse_section(&text, name).map_err(|(line, reason)| CredentialsError::Syntax {
        path: path.to_path_buf(),
        line,
        reason,
    })
}

type SyntaxError = (usize, &'static str);

fn parse_section(text: &str, name: &str) -> Result<Option<BTreeMap<String, String>>, SyntaxError> {
    let mut found: Option<BTreeMap<String, String>> = None;
    let mut in_section = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(header) = rest.strip_suffix(']') else {
                return Err((i + 1, "a section header must end with `]`"));
            };
            let header = header.split_whitespace().collect::<Vec<_>>().join(" ");
            in_section = header == name;
            if in_section {
                found.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        if raw.starts_with([' ', '\t']) {
            continue; // a nested setting
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err((i + 1, "expected `name = value`"));
        };
        if in_section {
            if let Some(values) = found.as_mut() {
                values.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    fn home_with_config(config: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".aws")).unwrap();
        std::fs::write(home.path().join(".aws/config"), config).unwrap();
        home
    }

    #[test]
    fn credentials_never_show_their_secrets() {
        let c = AwsCredentials {
            access_key_id: "ENVKEY".into(),
            secret_access_key: "ENVSECRET".into(),
            session_token: Some("TOKEN".into()),
        };
        let shown = format!("{c:?}");
        assert!(shown.contains("ENVKEY"), "{shown}");
        assert!(
            !shown.contains("ENVSECRET") && !shown.contains("TOKEN"),
            "{shown}"
        );
    }

    #[test]
    fn the_region_from_the_environment_then_the_profile_in_the_config_file() {
        let home = home_with_config(
            "# comment\n[default]\nregion = eu-west-3\n[profile ops]\n; another comment\n\
             REGION = ap-south-1\ns3 =\n  region = not-this-one\n[profile none]\noutput = json\n",
        );
        let h = home.path().to_str().unwrap();
        let region = |vars: &[(&str, &str)]| {
            let mut all = vec![("HOME", h)];
            all.extend_from_slice(vars);
            region_with(&env_of(&all)).unwrap()
        };
        assert_eq!(region(&[]).as_deref(), Some("eu-west-3"));
        assert_eq!(
            region(&[("AWS_PROFILE", "ops")]).as_deref(),
            Some("ap-south-1"),
            "`[profile ops]`, keys in any case, nested settings passed over"
        );
        assert_eq!(region(&[("AWS_PROFILE", "none")]), None);
        assert_eq!(region(&[("AWS_PROFILE", "nope")]), None);
        assert_eq!(
            region(&[("AWS_DEFAULT_REGION", "us-west-2")]).as_deref(),
            Some("us-west-2")
        );
        assert_eq!(
            region(&[
                ("AWS_DEFAULT_REGION", "us-west-2"),
                ("AWS_REGION", "ca-central-1")
            ])
            .as_deref(),
            Some("ca-central-1")
        );
        // AWS_CONFIG_FILE names the file.
        let other = home.path().join("other-config");
        std::fs::write(&other, "[default]\nregion = sa-east-1\n").unwrap();
        assert_eq!(
            region(&[("AWS_CONFIG_FILE", other.to_str().unwrap())]).as_deref(),
            Some("sa-east-1")
        );
        assert_eq!(region_with(&env_of(&[])).unwrap(), None, "no HOME, no file");
    }

    #[test]
    fn a_bad_line_is_named_without_its_text() {
        let home =
            home_with_config("[default]\nregion = eu-west-1\nwJalrXUtnFEMI/K7MDENG+SECRET\n");
        let e = region_with(&env_of(&[("HOME", home.path().to_str().unwrap())])).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("config, line 3"), "{msg}");
        assert!(!msg.contains("SECRET"), "{msg}");
        let e = parse_section("[default\n", "default").unwrap_err();
        assert_eq!(e.0, 1);
    }
}
