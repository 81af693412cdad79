//! The failure log: one JSON line per document that was not delivered — refused by the
//! target, or skipped because the source or the transform could not turn it into a target
//! document — with why and where it sits in its partition, so it can be found again.
//!
//! It is written either to one local file (appended, shared by every item worker of a
//! process) or, for a fleet whose workers' disks do not outlive them (pods), as **parts**
//! into a [`PartStore`] (an object-store prefix): each append is one gzip-compressed
//! JSON-lines object `WRITER/NNNNNNNNNN.ndjson.gz`, stored before the append returns, so
//! the records of every batch whose cursor moved are kept when the process dies.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read as _, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use coordination::Position;

/// The skip reason, in a log read back by `rfs redrive`, of a refused document whose
/// record holds no `_source` (not the snapshot source's `no_source`: this one is a
/// refusal the log cannot re-drive).
pub const NO_SOURCE: &str = "refused_without_source";
/// The skip reason, in a log read back by `rfs redrive`, of a document the source or the
/// transform could not produce.
pub const SKIPPED_BY_SOURCE: &str = "skipped_by_source";

/// The failure log could not be written or read: documents would be lost, so this is fatal.
#[derive(Debug, thiserror::Error)]
#[error("failure log {location}")]
pub struct FailureLogError {
    /// The file, or the object (`s3://bucket/prefix/WRITER/0000000001.ndjson.gz`).
    pub location: String,
    #[source]
    pub source: std::io::Error,
}

impl FailureLogError {
    fn at(path: &Path) -> impl Fn(std::io::Error) -> FailureLogError + '_ {
        move |source| FailureLogError {
            location: path.display().to_string(),
            source,
        }
    }
}

/// Where a failure log's parts are stored: one object-store prefix, whose parts are whole
/// objects written once. Names are `/`-separated, relative to the prefix.
pub trait PartStore: Send + Sync + std::fmt::Debug {
    /// The prefix, for messages (`s3://bucket/failures/`), without secrets.
    fn location(&self) -> String;
    /// Stores one whole part; returns once it is stored.
    fn put(&self, name: &str, bytes: Vec<u8>) -> std::io::Result<()>;
}

/// The suffix of a failure-log part.
pub const PART_SUFFIX: &str = ".ndjson.gz";

/// A writer's name as a part's directory: characters other than ASCII letters, digits,
/// `.`, `_` and `-` become `_`, at most 100 of them, never empty, never `.` or `..`.
pub fn writer_name(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        s = format!("writer{s}").replace('.', "_");
    }
    s
}

/// Records as gzip-compressed JSON lines (one part).
pub fn encode_part(records: &[FailureRecord]) -> std::io::Result<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for r in records {
        serde_json::to_writer(&mut gz, r)?;
        gz.write_all(b"\n")?;
    }
    gz.finish()
}

/// The records of one part (gzip-compressed JSON lines). `name` is for messages. At most
/// `max_bytes` are inflated: a part that would be larger is an error naming it.
pub fn decode_part(
    name: &str,
    bytes: &[u8],
    max_bytes: u64,
) -> Result<Vec<FailureRecord>, FailureLogError> {
    let err = |source| FailureLogError {
        location: name.to_string(),
        source,
    };
    let mut text = Vec::new();
    let mut gz = flate2::read::GzDecoder::new(bytes).take(max_bytes.saturating_add(1));
    std::io::Read::read_to_end(&mut gz, &mut text).map_err(err)?;
    if text.len() as u64 > max_bytes {
        return Err(err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("inflates to more than {max_bytes} bytes"),
        )));
    }
    parse_lines(&text[..], name)
}

fn parse_lines(r: impl BufRead, location: &str) -> Result<Vec<FailureRecord>, FailureLogError> {
    let err = |source| FailureLogError {
        location: location.to_string(),
        source,
    };
    let mut out = Vec::new();
    for (n, line) in r.lines().enumerate() {
        let line = line.map_err(err)?;
        if line.trim().is_empty() {
            continue;
        }
        let rec = serde_json::from_str(&line).map_err(|e| {
            err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("line {}: {e}", n + 1),
            ))
        })?;
        out.push(rec);
    }
    Ok(out)
}

/// Which side could not deliver a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The source could not produce it (no `_source`, undecodable, bad id, bad row).
    Source,
    /// The transform found no route for it (a mapping type without a target index).
    Transform,
    /// The target (or the sink's own limits) refused it.
    Target,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Source => "source",
            Stage::Transform => "transform",
            Stage::Target => "target",
        }
    }

    /// The key this stage's counts go under in the store (`skipped:…`, `refused:…`).
    pub fn reason_key(self, error_type: &str) -> String {
        match self {
            Stage::Source | Stage::Transform => format!("skipped:{error_type}"),
            Stage::Target => format!("refused:{error_type}"),
        }
    }
}

/// One document that was not delivered.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailureRecord {
    /// RFC 3339 UTC time of the final attempt.
    pub time: String,
    pub stage: Stage,
    /// The index (target index for refusals, source index or table for skips).
    pub index: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<String>,
    /// Where the document sits in its source partition (`group`, `part`, `position`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    /// `mapper_parsing_exception`, … (`document_too_large` and the like for local
    /// refusals; `no_source`, `bad_source`, `no_route`, … for skips).
    pub error_type: String,
    pub reason: String,
    /// HTTP status of the item (0 when the document was refused before sending).
    pub status: u16,
    /// Times the document was sent.
    pub attempts: u32,
    /// Delete (`true`) rather than index: re-driving it deletes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete: bool,
    /// The `_source`, when the log was opened with sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Box<RawValue>>,
}

/// An append-only log shared by every item worker of a process: a JSON-lines file,
/// created with the first record (a run without failures leaves none behind), or parts in
/// a [`PartStore`], the first one written with the first record.
pub struct FailureLog {
    out: Out,
    written: AtomicU64,
    include_source: bool,
}

enum Out {
    File {
        path: PathBuf,
        file: Mutex<Option<BufWriter<File>>>,
    },
    Parts {
        store: Arc<dyn PartStore>,
        writer: String,
        /// The number of the next part.
        next: Mutex<u64>,
    },
}

impl std::fmt::Debug for FailureLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailureLog")
            .field("location", &self.location())
            .field("written", &self.written())
            .finish()
    }
}

impl FailureLog {
    /// Prepare appending to `path`: its directory is created now (so a path that cannot
    /// be written fails at once), the file itself with the first record.
    pub fn open(path: impl Into<PathBuf>) -> Result<FailureLog, FailureLogError> {
        let path = path.into();
        {
            let err = FailureLogError::at(&path);
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(&err)?;
            }
            if path.is_dir() {
                return Err(err(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "the failure log path is a directory",
                )));
            }
        }
        Ok(FailureLog {
            out: Out::File {
                path,
                file: Mutex::new(None),
            },
            written: AtomicU64::new(0),
            include_source: false,
        })
    }

    /// Write parts into `store`, under the directory `writer` (made a safe name by
    /// [`writer_name`]; give each process its own, so that no two write the same part).
    pub fn to_parts(store: Arc<dyn PartStore>, writer: &str) -> FailureLog {
        FailureLog {
            out: Out::Parts {
                store,
                writer: writer_name(writer),
                next: Mutex::new(1),
            },
            written: AtomicU64::new(0),
            include_source: false,
        }
    }

    /// Also record each failed document's `_source` (so it can be fixed and re-sent).
    pub fn with_sources(mut self, include: bool) -> FailureLog {
        self.include_source = include;
        self
    }

    pub fn include_source(&self) -> bool {
        self.include_source
    }

    /// The file, or the prefix and this writer's directory in it.
    pub fn location(&self) -> String {
        match &self.out {
            Out::File { path, .. } => path.display().to_string(),
            Out::Parts { store, writer, .. } => format!("{}{writer}/", store.location()),
        }
    }

    /// Records written through this handle.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Append records and flush them to the file before returning.
    pub fn append(&self, records: &[FailureRecord]) -> Result<(), FailureLogError> {
        if records.is_empty() {
            return Ok(());
        }
        match &self.out {
            Out::File { path, file } => {
                let err = FailureLogError::at(path);
                let mut guard = file.lock().unwrap_or_else(|p| p.into_inner());
                let file = match &mut *guard {
                    Some(f) => f,
                    slot => {
                        let f = OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(path)
                            .map_err(&err)?;
                        slot.insert(BufWriter::new(f))
                    }
                };
                for r in records {
                    serde_json::to_writer(&mut *file, r).map_err(|e| err(e.into()))?;
                    file.write_all(b"\n").map_err(&err)?;
                }
                file.flush().map_err(err)?;
            }
            Out::Parts {
                store,
                writer,
                next,
            } => {
                // One part at a time: numbers are taken in order and never reused, and a
                // part that failed is not skipped over (its number is tried again).
                let mut next = next.lock().unwrap_or_else(|p| p.into_inner());
                let name = format!("{writer}/{:010}{PART_SUFFIX}", *next);
                let err = |source| FailureLogError {
                    location: format!("{}{name}", store.location()),
                    source,
                };
                let bytes = encode_part(records).map_err(err)?;
                store.put(&name, bytes).map_err(err)?;
                *next += 1;
            }
        }
        self.written
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Read a failure log back (for reports, re-drives and tests). A log that was never
    /// created holds no records (the file appears with the first failure).
    pub fn read(path: &Path) -> Result<Vec<FailureRecord>, FailureLogError> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(FailureLogError::at(path)(e)),
        };
        parse_lines(BufReader::new(file), &path.display().to_string())
    }
}

/// Now, as the failure log writes times.
pub fn now_rfc3339() -> String {
    cluster::UtcTime::from_system(std::time::SystemTime::now()).rfc3339()
}

/// The source as embedded JSON, or as a JSON string when it is not valid JSON.
pub fn source_value(source: &[u8]) -> Box<RawValue> {
    let text = String::from_utf8_lossy(source);
    RawValue::from_string(text.trim().to_owned()).unwrap_or_else(|_| {
        RawValue::from_string(serde_json::to_string(&text).expect("strings serialise"))
            .expect("a JSON string is valid JSON")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn appends_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/failures.jsonl");
        let log = FailureLog::open(&path).unwrap().with_sources(true);
        let rec = |id: &str, src: &[u8]| FailureRecord {
            time: "2026-01-01T00:00:00.000Z".into(),
            stage: Stage::Target,
            index: "i".into(),
            group: Some("i".into()),
            part: Some(0),
            position: Some(Position::Doc(7)),
            id: id.into(),
            doc_type: None,
            routing: Some("r".into()),
            error_type: "mapper_parsing_exception".into(),
            reason: "failed to parse".into(),
            status: 400,
            attempts: 1,
            delete: false,
            source: Some(source_value(src)),
        };
        log.append(&[rec("1", b"{\"a\": 1}"), rec("2", b"not json\n")])
            .unwrap();
        drop(log);
        let log = FailureLog::open(&path).unwrap();
        log.append(&[rec("3", b"{}")]).unwrap();
        assert_eq!(log.written(), 1);
        let back = FailureLog::read(&path).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[0].id, "1");
        assert_eq!(back[0].source.as_ref().unwrap().get(), "{\"a\": 1}");
        assert_eq!(back[1].source.as_ref().unwrap().get(), "\"not json\\n\"");
        assert_eq!(back[2].routing.as_deref(), Some("r"));
        assert_eq!(back[2].position, Some(Position::Doc(7)));
        assert_eq!(back[2].stage, Stage::Target);
    }

    /// Parts kept in memory, as an object store keeps them.
    #[derive(Debug, Default)]
    struct Parts(Mutex<BTreeMap<String, Vec<u8>>>, AtomicU64);

    impl PartStore for Parts {
        fn location(&self) -> String {
            "mem://bucket/failures/".into()
        }
        fn put(&self, name: &str, bytes: Vec<u8>) -> std::io::Result<()> {
            if self.1.fetch_sub(1, Ordering::Relaxed) == 1 {
                return Err(std::io::Error::other("503 Slow Down"));
            }
            self.0.lock().unwrap().insert(name.to_string(), bytes);
            Ok(())
        }
    }

    #[test]
    fn parts_are_numbered_compressed_and_read_back() {
        let rec = |id: &str| FailureRecord {
            time: "2026-01-01T00:00:00.000Z".into(),
            stage: Stage::Target,
            index: "i".into(),
            group: None,
            part: None,
            position: None,
            id: id.into(),
            doc_type: None,
            routing: None,
            error_type: "x".into(),
            reason: "y".into(),
            status: 400,
            attempts: 1,
            delete: false,
            source: Some(source_value(b"{}")),
        };
        // The second put fails.
        let store = Arc::new(Parts(Mutex::default(), AtomicU64::new(2)));
        let log = FailureLog::to_parts(store.clone(), "pod/1 ..");
        assert_eq!(log.location(), "mem://bucket/failures/pod_1_../");
        log.append(&[rec("a"), rec("b")]).unwrap();
        let e = log.append(&[rec("c")]).unwrap_err();
        // The error names the part it could not write, and the cause.
        assert_eq!(
            e.location,
            "mem://bucket/failures/pod_1_../0000000002.ndjson.gz"
        );
        assert!(redact::chain(&e).contains("503 Slow Down"), "{e}");
        // The failed part's number is written next, not skipped.
        log.append(&[rec("c")]).unwrap();
        assert_eq!(log.written(), 3);
        let parts = store.0.lock().unwrap();
        assert_eq!(
            parts.keys().collect::<Vec<_>>(),
            [
                "pod_1_../0000000001.ndjson.gz",
                "pod_1_../0000000002.ndjson.gz"
            ]
        );
        let first = decode_part("p1", &parts["pod_1_../0000000001.ndjson.gz"], 1 << 20).unwrap();
        assert_eq!(
            first.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        // A part that inflates beyond the limit is refused, named.
        let e = decode_part("p1", &parts["pod_1_../0000000001.ndjson.gz"], 10).unwrap_err();
        assert_eq!(e.location, "p1");
        // Not gzip: an error naming the part, no panic.
        assert!(decode_part("p9", b"not gzip", 1 << 20).is_err());
    }

    #[test]
    fn writer_names_are_safe_directory_names() {
        assert_eq!(
            writer_name("host-1.example-42-0badf00d"),
            "host-1.example-42-0badf00d"
        );
        assert_eq!(writer_name("../../etc"), ".._.._etc");
        assert_eq!(writer_name(".."), "writer__");
        assert_eq!(writer_name(""), "writer");
        assert_eq!(writer_name(&"x".repeat(300)).len(), 100);
    }
}
