//! How an error that stops a command is shown: one line, each cause once, bounded in
//! length, and the exit code it means. Errors wrap their causes and many causes repeat
//! what wraps them (`opening repository /r: /r: No such file…`); `{e:#}` would print such
//! a path twice and a server's whole answer inline. Here a part already said is left
//! out, a long part is cut in the middle, and the whole line is kept short; `-v` shows
//! every cause in full.

/// Longest part of the line kept whole; longer ones keep their start and end.
const PART_MAX: usize = 200;
/// Longest line.
const LINE_MAX: usize = 400;

/// The error as one line: its causes outermost first, joined by ": ", each said once.
pub fn render(e: &anyhow::Error, full: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = one_line(&cause.to_string());
        for part in text.split(": ") {
            let part = part.trim();
            if part.is_empty() || said(&parts, part) {
                continue;
            }
            parts.push(part.to_string());
        }
    }
    if full {
        return parts.join(": ");
    }
    let mut line = parts
        .iter()
        .map(|p| shorten(p, PART_MAX))
        .collect::<Vec<_>>()
        .join(": ");
    if line.chars().count() > LINE_MAX {
        line = shorten(&line, LINE_MAX);
    }
    line
}

/// `part` adds nothing to what was said: an earlier part is it or ends with it (a cause
/// that starts by naming the file its wrapper named), or contains it whole (a wrapper
/// that embedded its cause's text; only for parts long enough not to be a common word).
fn said(parts: &[String], part: &str) -> bool {
    let n = part.chars().count();
    n >= 2
        && parts
            .iter()
            .any(|p| p == part || p.ends_with(part) || (n >= 8 && p.contains(part)))
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
            c.downcast_ref::<migrate::JobError>(),
            Some(migrate::JobError::Store(
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

    #[derive(Debug)]
    struct Plain(String);

    impl std::fmt::Display for Plain {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Plain {}

    /// An error that puts its cause's text in its own (as `#[error("…: {source}")]` does).
    #[derive(Debug)]
    struct Embeds {
        path: String,
        source: Plain,
    }

    impl std::fmt::Display for Embeds {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "reading {}: {}", self.path, self.source)
        }
    }

    impl std::error::Error for Embeds {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_that_repeats_its_wrapper_is_said_once() {
        let e = anyhow::Error::new(Plain("/r: No such file or directory (os error 2)".into()))
            .context("opening repository /r");
        assert_eq!(
            render(&e, false),
            "opening repository /r: No such file or directory (os error 2)"
        );
        // A wrapper that embeds its cause's text (thiserror's `{source}`).
        let e = anyhow::Error::new(Embeds {
            path: "/x".into(),
            source: Plain("bad magic".into()),
        })
        .context("opening the snapshot");
        assert_eq!(
            render(&e, false),
            "opening the snapshot: reading /x: bad magic"
        );
        let e = anyhow::anyhow!("sqlite store: /d/x.db: unable to open database file: /d/x.db")
            .context("opening the coordination store sqlite:///d/x.db");
        assert_eq!(
            render(&e, false),
            "opening the coordination store sqlite:///d/x.db: sqlite store: unable to open database file"
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
