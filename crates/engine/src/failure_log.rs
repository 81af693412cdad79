//! The failure log: one JSON line per document that was not delivered — refused by the
//! target, or skipped because the source or the transform could not turn it into a target
//! document — with why and where it sits in its partition, so it can be found again.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

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
#[error("failure log {path}")]
pub struct FailureLogError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
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

/// An append-only JSON-lines file shared by every item worker of a process. The file is
/// created with the first record: a run without failures leaves none behind.
pub struct FailureLog {
    path: PathBuf,
    file: Mutex<Option<BufWriter<File>>>,
    written: AtomicU64,
    include_source: bool,
}

impl std::fmt::Debug for FailureLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailureLog")
            .field("path", &self.path)
            .field("written", &self.written())
            .finish()
    }
}

impl FailureLog {
    /// Prepare appending to `path`: its directory is created now (so a path that cannot
    /// be written fails at once), the file itself with the first record.
    pub fn open(path: impl Into<PathBuf>) -> Result<FailureLog, FailureLogError> {
        let path = path.into();
        let err = |source| FailureLogError {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        if path.is_dir() {
            return Err(err(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "the failure log path is a directory",
            )));
        }
        Ok(FailureLog {
            path,
            file: Mutex::new(None),
            written: AtomicU64::new(0),
            include_source: false,
        })
    }

    /// Also record each failed document's `_source` (so it can be fixed and re-sent).
    pub fn with_sources(mut self, include: bool) -> FailureLog {
        self.include_source = include;
        self
    }

    pub fn include_source(&self) -> bool {
        self.include_source
    }

    pub fn path(&self) -> &Path {
        &self.path
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
        let err = |source| FailureLogError {
            path: self.path.clone(),
            source,
        };
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let file = match &mut *guard {
            Some(f) => f,
            slot => {
                let f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
                    .map_err(err)?;
                slot.insert(BufWriter::new(f))
            }
        };
        for r in records {
            serde_json::to_writer(&mut *file, r).map_err(|e| err(e.into()))?;
            file.write_all(b"\n").map_err(err)?;
        }
        file.flush().map_err(err)?;
        self.written
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Read a failure log back (for reports, re-drives and tests). A log that was never
    /// created holds no records (the file appears with the first failure).
    pub fn read(path: &Path) -> Result<Vec<FailureRecord>, FailureLogError> {
        let err = |source| FailureLogError {
            path: path.to_path_buf(),
            source,
        };
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(err(e)),
        };
        let mut out = Vec::new();
        for (n, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(err)?;
            if line.trim().is_empty() {
                continue;
            }
            let r = serde_json::from_str(&line).map_err(|e| {
                err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("line {}: {e}", n + 1),
                ))
            })?;
            out.push(r);
        }
        Ok(out)
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
}
