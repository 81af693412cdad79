//! How an error that stops a command is shown: one line, its causes outermost first,
//! bounded in length, and the exit code it means. Each error of the chain says where and
//! why and leaves its cause to `source()` (never both), so joining the chain says each
//! part once; a long part is cut in the middle, and the whole line is kept short; `-v`
//! shows every cause in full.

/// Longest part of the line kept whole; longer ones keep their start and end.
const PART_MAX: usize = 200;
/// Longest line.
const LINE_MAX: usize = 400;

/// The error as one line: its causes outermost first, joined by ": ".
pub fn render(e: &anyhow::Error, full: bool) -> String {
    let parts: Vec<String> = e
        .chain()
        .map(|cause| one_line(&cause.to_string()))
        .filter(|part| !part.is_empty())
        .collect();
    if full {
        return parts.join(": ");
    }
    // A part is cut at its own ": " pieces, so that one long piece (a server's answer)
    // is shortened without cutting the sentence around it.
    let mut line = parts
        .iter()
        .flat_map(|p| p.split(": "))
        .map(|p| shorten(p, PART_MAX))
        .collect::<Vec<_>>()
        .join(": ");
    if line.chars().count() > LINE_MAX {
        line = shorten(&line, LINE_MAX);
    }
    line
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` cut to at most `max` characters: its start, " … ", its end.
fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(3);
    let head: String = s.chars().take(keep * 2 / 3).collect();
    let tail: String = s.chars().skip(n - (keep - keep * 2 / 3)).collect();
    format!("{head} … {tail}")
}

/// The exit code of an error that stopped a command: a store that belongs to another
/// migration is a usage error (the command line points at the wrong store), anything
/// else is fatal.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    let other_migration = e.chain().any(|c| {
        matches!(
            c.downcast_ref::<coordination::Error>(),
            Some(coordination::Error::OtherMigration { .. })
        ) || matches!(
            c.downcast_ref::<engine::JobError>(),
            Some(engine::JobError::Store(
                coordination::Error::OtherMigration { .. }
            ))
        )
    });
    if other_migration {
        crate::exit::USAGE
    } else {
        crate::exit::FATAL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of typed errors, each naming where and leaving its cause to `source()`:
    /// every part is said once, in order, also a part its wrapper happens to end with
    /// (which the old substring matching dropped).
    #[test]
    fn a_chain_of_typed_errors_says_each_part_once() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let lucene = lucene::Error::from(lucene::DirectoryError::Io {
            file: "_0.cfs".into(),
            source: io,
        });
        let shard = snapshot::Error::Lucene {
            context: "index logs shard 0".into(),
            source: lucene,
        };
        let e = anyhow::Error::new(connectors::ConnectError::caused(
            "s3://u:secret@bucket/repo",
            shard,
        ));
        assert_eq!(
            render(&e, false),
            "s3://u:***@bucket/repo: index logs shard 0: _0.cfs: permission denied"
        );
        let e = anyhow::Error::new(std::io::Error::other("disk full"))
            .context("writing /out/disk full")
            .context("exporting");
        assert_eq!(
            render(&e, true),
            "exporting: writing /out/disk full: disk full"
        );
    }

    #[test]
    fn long_errors_are_one_bounded_line() {
        let body = format!("{{\"error\": \"{}\"}}", "x".repeat(2000));
        let e = anyhow::anyhow!("GET / answered 500\nwith {body}")
            .context("connecting to the target http://h:9200");
        let line = render(&e, false);
        assert!(line.chars().count() <= LINE_MAX, "{}", line.len());
        assert!(!line.contains('\n'));
        assert!(line.starts_with("connecting to the target http://h:9200: GET / answered 500"));
        assert!(render(&e, true).contains(&"x".repeat(2000)));
    }
}
