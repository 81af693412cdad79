//! Credentials and region the usual AWS way: the environment first, then the profile
//! (`AWS_PROFILE`, else `default`) in the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`,
//! else `~/.aws/credentials`) and the config file (`AWS_CONFIG_FILE`, else `~/.aws/config`).
//!
//! Only static keys are read. A profile that gets its credentials another way (`role_arn`,
//! `sso_*`, `credential_process`, `web_identity_token_file`) is an error that says so. No
//! error or `Debug` output ever holds a secret key, a session token or a line of a file.

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

/// Why no credentials (or no region) could be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    #[error(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN \
         optional), or give profile {profile:?} aws_access_key_id and aws_secret_access_key in {files}"
    )]
    Missing { profile: String, files: String },
    #[error("{set} is set but {unset} is not")]
    IncompleteEnv {
        set: &'static str,
        unset: &'static str,
    },
    #[error("AWS profile {profile:?} (AWS_PROFILE) is in neither {files}")]
    ProfileNotFound { profile: String, files: String },
    #[error("{}: cannot read: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error("{}, line {line}: {reason}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        reason: &'static str,
    },
    #[error(
        "AWS profile {profile:?} in {} has {has} but not {missing}",
        path.display()
    )]
    IncompleteProfile {
        profile: String,
        path: PathBuf,
        has: &'static str,
        missing: &'static str,
    },
    #[error(
        "AWS profile {profile:?} in {} gets its credentials through `{setting}`, which is not \
         supported: give the profile aws_access_key_id and aws_secret_access_key, or set \
         AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        path.display()
    )]
    Unsupported {
        profile: String,
        path: PathBuf,
        setting: String,
    },
}

/// Settings that mean "credentials come from somewhere else", which only the AWS SDKs follow.
const INDIRECT: &[&str] = &[
    "role_arn",
    "source_profile",
    "credential_source",
    "credential_process",
    "web_identity_token_file",
    "sso_session",
    "sso_start_url",
    "sso_account_id",
    "sso_role_name",
    "login_session",
];

impl AwsCredentials {
    /// The environment, then the profile in the shared credentials and config files.
    pub fn resolve() -> Result<AwsCredentials, CredentialsError> {
        Self::resolve_with(&process_env)
    }

    /// As [`AwsCredentials::resolve`], with `env` standing for the process environment
    /// (`HOME` and the `AWS_*` variables are looked up through it).
    pub fn resolve_with(
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<AwsCredentials, CredentialsError> {
        match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            (Some(access_key_id), Some(secret_access_key)) => {
                return Ok(AwsCredentials {
                    access_key_id,
                    secret_access_key,
                    session_token: env("AWS_SESSION_TOKEN"),
                })
            }
            (Some(_), None) => {
                return Err(CredentialsError::IncompleteEnv {
                    set: "AWS_ACCESS_KEY_ID",
                    unset: "AWS_SECRET_ACCESS_KEY",
                })
            }
            (None, Some(_)) => {
                return Err(CredentialsError::IncompleteEnv {
                    set: "AWS_SECRET_ACCESS_KEY",
                    unset: "AWS_ACCESS_KEY_ID",
                })
            }
            (None, None) => {}
        }
        let files = ProfileFiles::from_env(env);
        let mut found = false;
        for (path, section) in files.sections() {
            let Some(path) = path else { continue };
            let Some(values) = read_section(path, &section)? else {
                continue;
            };
            found = true;
            let get = |k: &str| values.get(k).filter(|v| !v.is_empty()).cloned();
            match (get("aws_access_key_id"), get("aws_secret_access_key")) {
                (Some(access_key_id), Some(secret_access_key)) => {
                    return Ok(AwsCredentials {
                        access_key_id,
                        secret_access_key,
                        session_token: get("aws_session_token"),
                    })
                }
                (Some(_), None) | (None, Some(_)) => {
                    let has_id = values.contains_key("aws_access_key_id");
                    return Err(CredentialsError::IncompleteProfile {
                        profile: files.profile.clone(),
                        path: path.to_path_buf(),
                        has: if has_id {
                            "aws_access_key_id"
                        } else {
                            "aws_secret_access_key"
                        },
                        missing: if has_id {
                            "aws_secret_access_key"
                        } else {
                            "aws_access_key_id"
                        },
                    });
                }
                (None, None) => {
                    if let Some(setting) = INDIRECT.iter().find(|k| values.contains_key(**k)) {
                        return Err(CredentialsError::Unsupported {
                            profile: files.profile.clone(),
                            path: path.to_path_buf(),
                            setting: setting.to_string(),
                        });
                    }
                }
            }
        }
        if !found && files.explicit {
            return Err(CredentialsError::ProfileNotFound {
                profile: files.profile.clone(),
                files: files.describe(),
            });
        }
        Err(CredentialsError::Missing {
            profile: files.profile.clone(),
            files: files.describe(),
        })
    }
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

/// Where the profile is looked for.
struct ProfileFiles {
    profile: String,
    /// `AWS_PROFILE` named it (so its absence is an error of its own).
    explicit: bool,
    credentials: Option<PathBuf>,
    config: Option<PathBuf>,
}

impl ProfileFiles {
    fn from_env(env: &dyn Fn(&str) -> Option<String>) -> ProfileFiles {
        let home = env("HOME").map(PathBuf::from);
        let file = |var: &str, name: &str| {
            env(var)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
        };
        let explicit = env("AWS_PROFILE");
        ProfileFiles {
            profile: explicit.clone().unwrap_or_else(|| "default".to_string()),
            explicit: explicit.is_some(),
            credentials: file("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
            config: file("AWS_CONFIG_FILE", "config"),
        }
    }

    /// The files in the order they win, each with the section that holds the profile.
    fn sections(&self) -> [(Option<&Path>, String); 2] {
        [
            (self.credentials.as_deref(), self.profile.clone()),
            (self.config.as_deref(), config_section(&self.profile)),
        ]
    }

    fn describe(&self) -> String {
        let name = |p: &Option<PathBuf>| {
            p.as_ref()
                .map_or("(no HOME)".to_string(), |p| p.display().to_string())
        };
        format!("{} or {}", name(&self.credentials), name(&self.config))
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

    fn home_with(credentials: Option<&str>, config: Option<&str>) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".aws")).unwrap();
        if let Some(c) = credentials {
            std::fs::write(home.path().join(".aws/credentials"), c).unwrap();
        }
        if let Some(c) = config {
            std::fs::write(home.path().join(".aws/config"), c).unwrap();
        }
        home
    }

    #[test]
    fn the_environment_wins() {
        let home = home_with(
            Some("[default]\naws_access_key_id = FILE\naws_secret_access_key = FILESECRET\n"),
            None,
        );
        let h = home.path().to_str().unwrap();
        let env = env_of(&[
            ("HOME", h),
            ("AWS_ACCESS_KEY_ID", "ENVKEY"),
            ("AWS_SECRET_ACCESS_KEY", "ENVSECRET"),
            ("AWS_SESSION_TOKEN", "TOKEN"),
        ]);
        let c = AwsCredentials::resolve_with(&env).unwrap();
        assert_eq!(c.access_key_id, "ENVKEY");
        assert_eq!(c.secret_access_key, "ENVSECRET");
        assert_eq!(c.session_token.as_deref(), Some("TOKEN"));
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("ENVSECRET") && !shown.contains("TOKEN"),
            "{shown}"
        );

        let half = env_of(&[("HOME", h), ("AWS_ACCESS_KEY_ID", "ENVKEY")]);
        assert_eq!(
            AwsCredentials::resolve_with(&half),
            Err(CredentialsError::IncompleteEnv {
                set: "AWS_ACCESS_KEY_ID",
                unset: "AWS_SECRET_ACCESS_KEY"
            })
        );
    }

    #[test]
    fn profiles_from_the_credentials_file_then_the_config_file() {
        let home = home_with(
            Some(
                "# comment\n[default]\naws_access_key_id=DEFKEY\naws_secret_access_key = DEFSECRET\n\n\
                 [dev]\n; another comment\nAWS_ACCESS_KEY_ID = DEVKEY\naws_secret_access_key = DEV/SECRET+x=\n\
                 aws_session_token = DEVTOKEN\n",
            ),
            Some(
                "[default]\nregion = eu-west-3\n[profile ops]\nregion = ap-south-1\n\
                 aws_access_key_id = OPSKEY\naws_secret_access_key = OPSSECRET\ns3 =\n  max_concurrent_requests = 4\n\
                 [profile sso]\nsso_session = corp\n[profile half]\naws_access_key_id = HALF\n",
            ),
        );
        let h = home.path().to_str().unwrap();
        let c = AwsCredentials::resolve_with(&env_of(&[("HOME", h)])).unwrap();
        assert_eq!(
            (
                c.access_key_id.as_str(),
                c.secret_access_key.as_str(),
                c.session_token
            ),
            ("DEFKEY", "DEFSECRET", None)
        );
        let c =
            AwsCredentials::resolve_with(&env_of(&[("HOME", h), ("AWS_PROFILE", "dev")])).unwrap();
        assert_eq!(c.access_key_id, "DEVKEY");
        assert_eq!(
            c.secret_access_key, "DEV/SECRET+x=",
            "the value keeps its `=`"
        );
        assert_eq!(c.session_token.as_deref(), Some("DEVTOKEN"));
        let ops = env_of(&[("HOME", h), ("AWS_PROFILE", "ops")]);
        let c = AwsCredentials::resolve_with(&ops).unwrap();
        assert_eq!(
            c.access_key_id, "OPSKEY",
            "`[profile ops]` in the config file"
        );
        assert_eq!(region_with(&ops).unwrap().as_deref(), Some("ap-south-1"));
        assert_eq!(
            region_with(&env_of(&[("HOME", h)])).unwrap().as_deref(),
            Some("eu-west-3")
        );
        assert_eq!(
            region_with(&env_of(&[("HOME", h), ("AWS_DEFAULT_REGION", "us-west-2")]))
                .unwrap()
                .as_deref(),
            Some("us-west-2")
        );

        let e = AwsCredentials::resolve_with(&env_of(&[("HOME", h), ("AWS_PROFILE", "sso")]))
            .unwrap_err();
        assert!(
            matches!(&e, CredentialsError::Unsupported { setting, .. } if setting == "sso_session"),
            "{e}"
        );
        let e = AwsCredentials::resolve_with(&env_of(&[("HOME", h), ("AWS_PROFILE", "half")]))
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("has aws_access_key_id but not aws_secret_access_key"),
            "{e}"
        );
        let e = AwsCredentials::resolve_with(&env_of(&[("HOME", h), ("AWS_PROFILE", "nope")]))
            .unwrap_err();
        assert!(matches!(e, CredentialsError::ProfileNotFound { .. }), "{e}");
    }

    #[test]
    fn explicit_file_variables_and_nothing_found() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("creds");
        std::fs::write(
            &creds,
            "[default]\naws_access_key_id = K\naws_secret_access_key = S\n",
        )
        .unwrap();
        let env = env_of(&[("AWS_SHARED_CREDENTIALS_FILE", creds.to_str().unwrap())]);
        assert_eq!(
            AwsCredentials::resolve_with(&env).unwrap().access_key_id,
            "K"
        );

        let empty = home_with(None, None);
        let e = AwsCredentials::resolve_with(&env_of(&[("HOME", empty.path().to_str().unwrap())]))
            .unwrap_err();
        assert!(matches!(e, CredentialsError::Missing { .. }), "{e}");
        assert!(e.to_string().contains("AWS_ACCESS_KEY_ID"), "{e}");
        assert_eq!(region_with(&env_of(&[])).unwrap(), None);
    }

    #[test]
    fn a_bad_line_is_named_without_its_text() {
        let home = home_with(
            Some("[default]\naws_access_key_id = K\nwJalrXUtnFEMI/K7MDENG+SECRET\n"),
            None,
        );
        let e = AwsCredentials::resolve_with(&env_of(&[("HOME", home.path().to_str().unwrap())]))
            .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("credentials, line 3"), "{msg}");
        assert!(!msg.contains("SECRET"), "{msg}");
        let e = parse_section("[default\n", "default").unwrap_err();
        assert_eq!(e.0, 1);
    }
}
