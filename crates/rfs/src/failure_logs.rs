//! The workers' failure logs (JSON lines, one refused document each) as `rfs status` and
//! the dashboard see them: counts by error type and the newest entries. Files are read
//! incrementally — each refresh reads only what was appended since the last one — so a
//! page that refreshes every few seconds never re-reads a large log. An object-store
//! prefix (`s3://bucket/failures/`) is listed at each refresh and only the parts not read
//! before are read (a part is written once and never changes).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;

use connectors::failure_log::location::{list_parts, read_part};
use connectors::failure_log::FailureLogAt;

use serde::Serialize;
use serde_json::Value;

/// Counted under this type: a line that is not a JSON object with an `error_type`.
pub const UNPARSABLE: &str = "unparsable_line";
/// Counted under this type: a line longer than [`MAX_LINE`] (not parsed).
pub const TOO_LONG: &str = "line_too_long";
/// Longest line parsed; a failure log written with `_source`s can hold large lines.
pub const MAX_LINE: usize = 16 << 20;
/// Longest `reason` kept for an entry shown on the page (the rest is cut, with "…").
const MAX_REASON: usize = 2000;

/// One refused document, without its `_source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureLogEntry {
    pub time: String,
    pub index: String,
    pub id: String,
    pub error_type: String,
    pub reason: String,
    pub status: u64,
    /// Which of the files given it came from (its position in the list).
    #[serde(skip)]
    file: usize,
}

/// Several failure-log files, read incrementally.
#[derive(Debug)]
pub struct FailureLogs {
    files: Vec<LogFile>,
    newest: VecDeque<FailureLogEntry>,
    keep: usize,
}

#[derive(Debug)]
struct LogFile {
    path: PathBuf,
    /// Bytes consumed so far (always at a line start).
    offset: u64,
    /// Device and inode when last read: a different file at the path starts over.
    identity: Option<(u64, u64)>,
    /// For an object-store prefix: the store once opened, and the parts read.
    parts: Option<Parts>,
    by_type: BTreeMap<String, u64>,
}

#[derive(Debug)]
struct Parts {
    at: FailureLogAt,
    store: Option<Arc<dyn snapshot::BlobStore>>,
    read: BTreeSet<String>,
}

impl FailureLogs {
    /// The files at `paths` (missing ones count as empty until they appear); keeps the
    /// `keep` newest entries.
    pub fn new(paths: &[PathBuf], keep: usize) -> Self {
        FailureLogs {
            files: paths
                .iter()
                .map(|p| {
                    let at = FailureLogAt::parse(p);
                    LogFile {
                        path: p.clone(),
                        offset: 0,
                        identity: None,
                        parts: matches!(at, FailureLogAt::Parts(_)).then_some(Parts {
                            at,
                            store: None,
                            read: BTreeSet::new(),
                        }),
                        by_type: BTreeMap::new(),
                    }
                })
                .collect(),
            newest: VecDeque::new(),
            keep,
        }
    }

    /// Reads what was appended to every file since the last call. A file that shrank or
    /// was replaced is counted again from its start. Files that cannot be read are
    /// skipped (a worker may not have created its log yet).
    pub fn refresh(&mut self) {
        for i in 0..self.files.len() {
            self.refresh_file(i);
        }
    }

    /// Refused documents by error type, over every file.
    pub fn by_type(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for f in &self.files {
            for (t, n) in &f.by_type {
                *out.entry(t.clone()).or_insert(0) += n;
            }
        }
        out
    }

    /// The newest entries, newest first (by position in the files, which are appended
    /// in time order; entries of different files are ordered by their `time`).
    pub fn newest(&self) -> Vec<FailureLogEntry> {
        let mut v: Vec<FailureLogEntry> = self.newest.iter().cloned().collect();
        v.reverse();
        // Stable: entries of one file keep their order when times are equal.
        v.sort_by(|a, b| b.time.cmp(&a.time));
        v
    }

    /// Reads the parts of prefix `i` not read before. A prefix that cannot be listed yet
    /// is tried again next time; a part that cannot be read or parsed is counted once as
    /// [`UNPARSABLE`] (a part never changes: reading it again would say the same).
    fn refresh_parts(&mut self, i: usize) {
        let f = &mut self.files[i];
        let Some(parts) = f.parts.as_mut() else {
            return;
        };
        if parts.store.is_none() {
            match parts.at.open_store() {
                Ok(s) => parts.store = s,
                Err(e) => {
                    tracing::debug!("failure log {}: {}", parts.at.shown(), redact::chain(&e));
                    return;
                }
            }
        }
        let Some(store) = parts.store.clone() else {
            return;
        };
        let listed = match list_parts(store.as_ref()) {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!("{}", redact::chain(&e));
                return;
            }
        };
        for part in listed {
            if parts.read.contains(&part.name) {
                continue;
            }
            match read_part(store.as_ref(), &part) {
                Ok(records) => {
                    for r in records {
                        *f.by_type.entry(r.error_type.clone()).or_insert(0) += 1;
                        self.newest.push_back(FailureLogEntry {
                            time: r.time,
                            index: r.index,
                            id: r.id,
                            error_type: r.error_type,
                            reason: cut_reason(r.reason),
                            status: u64::from(r.status),
                            file: i,
                        });
                        if self.newest.len() > self.keep {
                            self.newest.pop_front();
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!("{}", redact::chain(&e));
                    *f.by_type.entry(UNPARSABLE.to_string()).or_insert(0) += 1;
                }
            }
            parts.read.insert(part.name);
        }
    }

    fn refresh_file(&mut self, i: usize) {
        if self.files[i].parts.is_some() {
            return self.refresh_parts(i);
        }
        let f = &mut self.files[i];
        let Ok(file) = File::open(&f.path) else {
            return;
        };
        let Ok(meta) = file.metadata() else {
            return;
        };
        let identity = file_identity(&meta);
        if meta.len() < f.offset || (f.identity.is_some() && f.identity != identity) {
            f.offset = 0;
            f.by_type.clear();
            self.newest.retain(|e| e.file != i);
        }
        let f = &mut self.files[i];
        f.identity = identity;
        if meta.len() == f.offset {
            return;
        }
        let mut reader = BufReader::with_capacity(256 << 10, file);
        if reader.seek(SeekFrom::Start(f.offset)).is_err() {
            return;
        }
        let mut line = Vec::new();
        loop {
            line.clear();
            let (used, complete) = match read_line(&mut reader, &mut line) {
                Ok(Some(r)) => r,
                Ok(None) | Err(_) => break,
            };
            let too_long = line.len() > MAX_LINE;
            let parsed = if too_long { None } else { parse(&line, i) };
            // A last line without its newline may still be being written: take it only
            // when it already parses, otherwise read it again next time.
            if !complete && parsed.is_none() {
                break;
            }
            f.offset += used;
            let kind = if too_long {
                Some(TOO_LONG.to_string())
            } else if line.iter().all(u8::is_ascii_whitespace) {
                None
            } else {
                Some(
                    parsed
                        .as_ref()
                        .map_or_else(|| UNPARSABLE.to_string(), |e| e.error_type.clone()),
                )
            };
            if let Some(k) = kind {
                *f.by_type.entry(k).or_insert(0) += 1;
            }
            if let Some(e) = parsed {
                self.newest.push_back(e);
                if self.newest.len() > self.keep {
                    self.newest.pop_front();
                }
            }
        }
    }
}

#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_identity(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Reads one line into `line`, keeping at most `MAX_LINE + 1` bytes of it (the rest is
/// consumed and dropped). Returns the bytes consumed and whether the line ended with a
/// newline; `None` at the end of the file.
fn read_line(r: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<(u64, bool)>> {
    let mut used = 0u64;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((used > 0).then_some((used, false)));
        }
        let (chunk, done) = match memchr(b'\n', buf) {
            Some(n) => (&buf[..=n], true),
            None => (buf, false),
        };
        let room = (MAX_LINE + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let n = chunk.len();
        r.consume(n);
        used += n as u64;
        if done {
            return Ok(Some((used, true)));
        }
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// At most [`MAX_REASON`] bytes of a reason, cut on a character boundary, with "…".
fn cut_reason(mut reason: String) -> String {
    if reason.len() > MAX_REASON {
        let mut cut = MAX_REASON;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
        reason.push('…');
    }
    reason
}

fn parse(line: &[u8], file: usize) -> Option<FailureLogEntry> {
    let v: Value = serde_json::from_slice(line).ok()?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let error_type = v.get("error_type")?.as_str()?.to_string();
    Some(FailureLogEntry {
        time: s("time"),
        index: s("index"),
        id: s("id"),
        error_type,
        reason: cut_reason(s("reason")),
        status: v.get("status").and_then(Value::as_u64).unwrap_or(0),
        file,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(time: &str, id: &str, t: &str) -> String {
        format!(
            "{{\"time\":\"{time}\",\"index\":\"books\",\"id\":\"{id}\",\"error_type\":\"{t}\",\"reason\":\"bad {id}\",\"status\":400,\"attempts\":1,\"source\":{{\"secret\":1}}}}\n"
        )
    }

    #[test]
    fn counts_by_type_and_reads_only_what_was_appended() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.jsonl");
        let mut f = File::create(&p).unwrap();
        f.write_all(line("2024-01-01T00:00:01Z", "a", "mapper_parsing_exception").as_bytes())
            .unwrap();
        f.write_all(b"not json\n\n").unwrap();
        let mut logs = FailureLogs::new(&[p.clone(), dir.path().join("missing.jsonl")], 2);
        logs.refresh();
        let want: BTreeMap<String, u64> = [
            ("mapper_parsing_exception".to_string(), 1),
            (UNPARSABLE.to_string(), 1),
        ]
        .into();
        assert_eq!(logs.by_type(), want);
        // Nothing new: same counts.
        logs.refresh();
        assert_eq!(logs.by_type(), want);
        // A half-written line is left for later, then counted once complete.
        let full = line("2024-01-01T00:00:02Z", "b", "version_conflict");
        let (head, tail) = full.split_at(20);
        f.write_all(head.as_bytes()).unwrap();
        logs.refresh();
        assert_eq!(logs.by_type(), want);
        f.write_all(tail.as_bytes()).unwrap();
        f.write_all(line("2024-01-01T00:00:03Z", "c", "version_conflict").as_bytes())
            .unwrap();
        logs.refresh();
        assert_eq!(logs.by_type()["version_conflict"], 2);
        assert_eq!(logs.by_type()["mapper_parsing_exception"], 1);
        let newest = logs.newest();
        assert_eq!(
            newest.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
            ["c", "b"]
        );
        assert_eq!(newest[0].reason, "bad c");
        assert_eq!(newest[0].status, 400);
        // The document's _source is never kept.
        let shown = serde_json::to_string(&newest).unwrap();
        assert!(!shown.contains("secret"), "{shown}");
    }

    #[test]
    fn a_truncated_or_replaced_file_is_counted_again() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.jsonl");
        std::fs::write(
            &p,
            line("t1", "a", "x") + &line("t2", "b", "x") + &line("t3", "c", "x"),
        )
        .unwrap();
        let mut logs = FailureLogs::new(std::slice::from_ref(&p), 10);
        logs.refresh();
        assert_eq!(logs.by_type()["x"], 3);
        std::fs::write(&p, line("t4", "d", "y")).unwrap();
        logs.refresh();
        assert_eq!(logs.by_type().get("x"), None);
        assert_eq!(logs.by_type()["y"], 1);
        assert_eq!(logs.newest().len(), 1);
        // Replaced by another file of the same length or longer.
        let q = dir.path().join("g.jsonl");
        std::fs::write(&q, line("t5", "e", "z") + &line("t6", "f", "z")).unwrap();
        std::fs::rename(&q, &p).unwrap();
        logs.refresh();
        assert_eq!(logs.by_type().get("y"), None);
        assert_eq!(logs.by_type()["z"], 2);
    }

    #[test]
    fn an_overlong_line_is_counted_not_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.jsonl");
        let mut text = String::from("{\"error_type\":\"x\",\"reason\":\"");
        text.push_str(&"a".repeat(MAX_LINE + 10));
        text.push_str("\"}\n");
        text.push_str(&line("t", "b", "y"));
        std::fs::write(&p, text).unwrap();
        let mut logs = FailureLogs::new(std::slice::from_ref(&p), 10);
        logs.refresh();
        let want: BTreeMap<String, u64> = [(TOO_LONG.to_string(), 1), ("y".to_string(), 1)].into();
        assert_eq!(logs.by_type(), want);
    }

    #[test]
    fn long_reasons_are_cut_on_a_character_boundary() {
        let reason = "é".repeat(MAX_REASON);
        let text = serde_json::json!({"error_type": "x", "reason": reason}).to_string();
        let e = parse(text.as_bytes(), 0).unwrap();
        assert!(e.reason.len() <= MAX_REASON + '…'.len_utf8());
        assert!(e.reason.ends_with('…'));
    }
}
