//! The optional TOML config file (`--config FILE` or `RFS_CONFIG`), read through the same
//! parser as the command line: each top-level key is a flag's long name (`max-docs-per-sec`
//! or `max_docs_per_sec`), and its value becomes that flag on the command line, so a typo
//! or a bad value in the file is an error like a typo on the command line — naming the key
//! and the file. Precedence is flag > environment > config file: a key is used only for
//! a flag the command line and the `RFS_*` variables left unset.
//!
//! A key that no command has is an error; a key of another command (`target` in a file
//! also used by `rfs status`) is checked the same way and then left out.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};

/// What went wrong with the config file; the binary prints it and exits with code 2.
#[derive(Debug)]
pub struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// `argv` with the config file's keys appended as flags, for every flag of the chosen
/// subcommand that neither `argv` nor the environment sets. Without a config file (or
/// when `argv` only asks for help or the version), `argv` comes back unchanged.
pub fn apply(cmd: Command, argv: Vec<OsString>) -> Result<Vec<OsString>, ConfigError> {
    let Ok(pre) = cmd
        .clone()
        .ignore_errors(true)
        .try_get_matches_from(argv.iter())
    else {
        return Ok(argv); // --help, --version: the real parse shows them
    };
    let mut cmd = cmd;
    cmd.build();
    let Some(path) = pre.get_one::<PathBuf>("config").cloned() else {
        return Ok(argv);
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ConfigError(format!("config file {}: {e}", path.display())))?;
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| ConfigError(format!("config file {}: {e}", path.display())))?;

    // The subcommand chosen on the command line and its matches so far.
    let (leaf, leaf_matches) = chosen(&cmd, &pre);
    let mut extra = Vec::new();
    for (key, value) in &table {
        let err = |reason: String| {
            ConfigError(format!(
                "config file {}: key `{key}`: {reason}",
                path.display()
            ))
        };
        let long = key.replace('_', "-");
        if matches!(long.as_str(), "config" | "help" | "version") {
            return Err(err("cannot be set in a config file".into()));
        }
        match find_arg(leaf, &long) {
            Some(arg) => {
                let tokens = tokens(arg, &long, value).map_err(err)?;
                let set_elsewhere = matches!(
                    leaf_matches.value_source(arg.get_id().as_str()),
                    Some(ValueSource::CommandLine | ValueSource::EnvVariable)
                );
                if !set_elsewhere {
                    extra.extend(tokens);
                }
            }
            None => match find_anywhere(&cmd, &long) {
                // Another command's flag: checked, then left for that command.
                Some(arg) => {
                    tokens(arg, &long, value).map_err(err)?;
                }
                None => {
                    return Err(err(format!(
                        "no command of rfs has a flag --{long}{}",
                        suggestion(&cmd, &long)
                    )))
                }
            },
        }
    }
    let mut argv = argv;
    let at = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    argv.splice(at..at, extra);
    Ok(argv)
}

/// The deepest subcommand named in `matches`, with its matches.
fn chosen<'a>(cmd: &'a Command, matches: &'a ArgMatches) -> (&'a Command, &'a ArgMatches) {
    let (mut cmd, mut m) = (cmd, matches);
    while let Some((name, sub)) = m.subcommand() {
        match cmd.find_subcommand(name) {
            Some(c) => (cmd, m) = (c, sub),
            None => break,
        }
    }
    (cmd, m)
}

fn find_arg<'a>(cmd: &'a Command, long: &str) -> Option<&'a Arg> {
    cmd.get_arguments().find(|a| a.get_long() == Some(long))
}

/// The first flag `--long` of the command tree (depth first).
fn find_anywhere<'a>(cmd: &'a Command, long: &str) -> Option<&'a Arg> {
    find_arg(cmd, long).or_else(|| cmd.get_subcommands().find_map(|c| find_anywhere(c, long)))
}

/// ` (did you mean `x`?)` for the closest long name in the tree, if one is close.
fn suggestion(cmd: &Command, long: &str) -> String {
    let mut names = Vec::new();
    collect_longs(cmd, &mut names);
    names
        .into_iter()
        .map(|n| (edit_distance(long, &n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 4))
        .min()
        .map(|(_, n)| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default()
}

fn collect_longs(cmd: &Command, out: &mut Vec<String>) {
    out.extend(
        cmd.get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string)),
    );
    for c in cmd.get_subcommands() {
        collect_longs(c, out);
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The command-line tokens for `key = value`, each value checked by the flag's own parser.
fn tokens(arg: &Arg, long: &str, value: &toml::Value) -> Result<Vec<OsString>, String> {
    let flag = format!("--{long}");
    match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse => match value {
            toml::Value::Boolean(b) => {
                let on = *b == matches!(arg.get_action(), ArgAction::SetTrue);
                Ok(if on { vec![flag.into()] } else { Vec::new() })
            }
            other => Err(format!("expected true or false, found {}", kind(other))),
        },
        ArgAction::Count => match value {
            toml::Value::Integer(n) if (0..=255).contains(n) => {
                Ok((0..*n).map(|_| OsString::from(&flag)).collect())
            }
            other => Err(format!("expected a count 0–255, found {}", shown(other))),
        },
        ArgAction::Set | ArgAction::Append => {
            let values: Vec<&toml::Value> = match value {
                toml::Value::Array(items) if matches!(arg.get_action(), ArgAction::Append) => {
                    items.iter().collect()
                }
                toml::Value::Array(_) => {
                    return Err("takes one value, found an array".into());
                }
                one => vec![one],
            };
            let mut out = Vec::new();
            for v in values {
                let text = scalar(v)?;
                check(arg, &text)?;
                out.push(OsString::from(format!("{flag}={text}")));
            }
            Ok(out)
        }
        _ => Err("cannot be set in a config file".into()),
    }
}

/// A TOML string or number as the text a user would type.
fn scalar(v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        other => Err(format!(
            "expected a string or a number, found {}",
            kind(other)
        )),
    }
}

/// Runs the flag's value parser on `text` (through a command holding only that flag, so
/// nothing else of the command line is involved); the error is clap's, without secrets.
fn check(arg: &Arg, text: &str) -> Result<(), String> {
    let mut probe = Arg::new("value")
        .value_parser(arg.get_value_parser().clone())
        .action(ArgAction::Set)
        .allow_hyphen_values(true);
    if let Some(names) = arg.get_value_names() {
        probe = probe.value_names(names.to_vec());
    }
    if let Some(d) = arg.get_value_delimiter() {
        probe = probe.value_delimiter(d);
    }
    let probe = Command::new("rfs").no_binary_name(true).arg(probe);
    match probe.try_get_matches_from([text]) {
        Ok(_) => Ok(()),
        Err(e) => {
            let rendered = e.render().to_string();
            let reason: Vec<&str> = rendered
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
                .map(|l| l.trim_start_matches("error: "))
                .collect();
            Err(redact::text(&reason.join(" ")).into_owned())
        }
    }
}

fn kind(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::Integer(i) => i.to_string(),
        other => kind(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    const DOCS: &[&str] = &[
        "documents",
        "--repo",
        "r",
        "--snapshot",
        "s",
        "--target",
        "t",
    ];

    /// `rfs --config FILE ARGS…` with `toml` in FILE, through [`apply`].
    fn apply_with(toml: &str, args: &[&str]) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rfs.toml");
        std::fs::write(&path, toml).unwrap();
        let mut argv: Vec<OsString> = vec!["rfs".into()];
        argv.extend(args.iter().map(OsString::from));
        argv.push("--config".into());
        argv.push(path.clone().into());
        apply(crate::Cli::command(), argv)
            .map(|a| a.iter().map(|s| s.to_string_lossy().into_owned()).collect())
            .map_err(|e| {
                let msg = e.to_string();
                assert!(
                    msg.contains(&path.display().to_string()),
                    "file not named: {msg}"
                );
                msg
            })
    }

    fn worker(argv: &[String]) -> crate::cmd::documents::Args {
        match crate::Cli::try_parse_from(argv).unwrap().command {
            crate::Command::Documents(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn keys_become_flags_of_the_chosen_command() {
        let argv = apply_with(
            r#"
            lease-seconds = 5
            max_docs_per_sec = 2.5
            index = ["a", "b"]
            no-progress = true
            create-only = false
            multi-type = "split"
            store = "postgres://u:pw@db/rfs"
            log-format = "json"
            verbose = 2
            "#,
            DOCS,
        )
        .unwrap();
        let a = worker(&argv);
        assert_eq!(a.worker.lease_seconds, 5);
        assert_eq!(a.worker.max_docs_per_sec, Some(2.5));
        assert_eq!(a.filter.index, ["a", "b"]);
        assert!(a.worker.no_progress);
        assert!(!a.worker.create_only);
        assert_eq!(a.filter.multi_type, crate::args::MultiType::Split);
        assert_eq!(a.store.store, "postgres://u:pw@db/rfs");
        let cli = crate::Cli::try_parse_from(&argv).unwrap();
        assert_eq!(cli.global.log_format, crate::logging::LogFormat::Json);
        assert_eq!(cli.global.verbose, 2);
    }

    /// `rfs copy`'s connection options of both ends and its program come from the file
    /// like any flag (the key's value is not shown by the parsed arguments' `Debug`).
    #[test]
    fn copy_takes_both_ends_connection_options_from_the_file() {
        let argv = apply_with(
            r#"
            from-api-key = "a2V5LWZyb20tZmlsZQ=="
            from-ca = "/etc/ca.pem"
            from-insecure = false
            to-username = "writer"
            to-password = "pw-from-file"
            to-ca = "/etc/to-ca.pem"
            transform = "del(._source.tmp)"
            "#,
            &[
                "copy",
                "--from",
                "https://h:9200/books",
                "--to",
                "https://t:9200",
            ],
        )
        .unwrap();
        let a = match crate::Cli::try_parse_from(&argv).unwrap().command {
            crate::Command::Copy(a) => a,
            other => panic!("{other:?}"),
        };
        let from = a.ends.from_conn.client_config().unwrap();
        assert!(matches!(from.auth, cluster::Auth::ApiKey(ref k) if k == "a2V5LWZyb20tZmlsZQ=="));
        assert_eq!(
            from.tls.ca_file.as_deref(),
            Some(std::path::Path::new("/etc/ca.pem"))
        );
        assert!(from.urls.is_empty());
        let to = a.ends.to_conn.client_config().unwrap();
        assert!(
            matches!(to.auth, cluster::Auth::Basic { ref username, ref password } if username == "writer" && password == "pw-from-file")
        );
        assert_eq!(
            to.tls.ca_file.as_deref(),
            Some(std::path::Path::new("/etc/to-ca.pem"))
        );
        assert_eq!(a.transform.transform.as_deref(), Some("del(._source.tmp)"));
        let shown = format!("{a:?}");
        assert!(
            !shown.contains("a2V5LWZyb20tZmlsZQ") && !shown.contains("pw-from-file"),
            "{shown}"
        );
    }

    #[test]
    fn the_command_line_wins_over_the_file() {
        let mut args = DOCS.to_vec();
        args.extend(["--lease-seconds", "7", "--index", "c"]);
        let argv = apply_with(
            "lease-seconds = 5\nindex = [\"a\"]\nsplit-docs = 9\n",
            &args,
        )
        .unwrap();
        let a = worker(&argv);
        assert_eq!(a.worker.lease_seconds, 7);
        assert_eq!(a.filter.index, ["c"]);
        assert_eq!(a.worker.split_docs, 9);
    }

    #[test]
    fn required_flags_may_come_from_the_file() {
        let argv = apply_with(
            "repo = \"r\"\nsnapshot = \"s\"\ntarget = \"http://t:9200\"\n",
            &["documents"],
        )
        .unwrap();
        let a = worker(&argv);
        assert_eq!(a.source.snapshot, "s");
        assert_eq!(a.target.target, "http://t:9200");
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        let e = apply_with("lease-secs = 5\n", DOCS).unwrap_err();
        assert!(e.contains("`lease-secs`"), "{e}");
        assert!(e.contains("did you mean `lease-seconds`"), "{e}");
        let e = apply_with("[documents]\ntarget = \"x\"\n", DOCS).unwrap_err();
        assert!(e.contains("`documents`"), "{e}");
        for key in ["config", "help", "version"] {
            let e = apply_with(&format!("{key} = \"x\"\n"), DOCS).unwrap_err();
            assert!(e.contains(&format!("`{key}`")), "{e}");
        }
    }

    #[test]
    fn wrong_types_and_bad_values_are_errors_naming_the_key() {
        for (toml, key) in [
            ("no-progress = \"yes\"", "no-progress"),
            ("lease-seconds = true", "lease-seconds"),
            ("lease-seconds = 0", "lease-seconds"),
            ("lease-seconds = 18446744073709551615", "lease-seconds"), // not a TOML integer
            ("lease-seconds = 86401", "lease-seconds"),
            ("max-docs-per-sec = 0", "max-docs-per-sec"),
            ("max-docs-per-sec = nan", "max-docs-per-sec"),
            ("max-docs-per-sec = \"fast\"", "max-docs-per-sec"),
            ("multi-type = \"join\"", "multi-type"),
            ("log-format = \"xml\"", "log-format"),
            ("snapshot = [\"a\", \"b\"]", "snapshot"),
            ("target = { url = \"x\" }", "target"),
            ("verbose = -1", "verbose"),
            ("metrics-addr = \"here\"", "metrics-addr"),
            // Another command's flag is checked too.
            ("watch = 0", "watch"),
        ] {
            let e = apply_with(toml, DOCS).unwrap_err();
            assert!(e.contains(key), "{toml}: {e}");
        }
    }

    #[test]
    fn another_commands_keys_are_left_out() {
        // `target` and `lease-seconds` are not flags of `status`.
        let argv = apply_with(
            "target = \"http://t\"\nlease-seconds = 5\njson = true\n",
            &["status"],
        )
        .unwrap();
        assert_eq!(
            argv.iter().filter(|a| a.starts_with("--target")).count(),
            0,
            "{argv:?}"
        );
        assert!(argv.contains(&"--json".to_string()), "{argv:?}");
        assert!(crate::Cli::try_parse_from(&argv).is_ok());
    }

    #[test]
    fn secrets_in_bad_values_are_masked() {
        let e = apply_with("metrics-addr = \"http://u:SECRET@h\"\n", DOCS).unwrap_err();
        assert!(!e.contains("SECRET"), "{e}");
    }

    #[test]
    fn no_config_file_leaves_argv_alone() {
        let argv: Vec<OsString> = ["rfs", "status", "--json"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(apply(crate::Cli::command(), argv.clone()).unwrap(), argv);
        let help: Vec<OsString> = ["rfs", "--help"].iter().map(OsString::from).collect();
        assert_eq!(apply(crate::Cli::command(), help.clone()).unwrap(), help);
    }

    #[test]
    fn a_missing_or_broken_file_is_an_error_naming_it() {
        let argv: Vec<OsString> = ["rfs", "status", "--config", "/nonexistent/rfs.toml"]
            .iter()
            .map(OsString::from)
            .collect();
        let e = apply(crate::Cli::command(), argv).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/rfs.toml"), "{e}");
        let e = apply_with("lease-seconds = = 5", DOCS).unwrap_err();
        assert!(e.contains("config file"), "{e}");
    }
}
