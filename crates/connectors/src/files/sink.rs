//! The file sink: documents as JSON lines or `_bulk` bodies, one file per target index in
//! a directory (names made safe by [`super::names::file_name_for`]) or all to stdout.
//! What `rfs export` writes; no cluster needed.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use cluster::{BulkAction, BulkEncoder, EntryKeys, OpType, ProductVersion, Target};

use super::names::file_name_for;
use engine::document::{Document, Op};
use engine::error::SinkError;
use engine::sink::BatchLimits;
use engine::sink::{Delivered, Refusal, Sink, SinkWriter};

/// How documents are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileFormat {
    /// One `{"_index","_id","_type"?,"_routing"?,"_source"}` object per line (deletes:
    /// `{"_op":"delete","_index","_id"}`).
    #[default]
    Jsonl,
    /// Action and source lines for `curl --data-binary @FILE …/_bulk` (no `_type`).
    Bulk,
}

impl FileFormat {
    fn extension(self) -> &'static str {
        match self {
            FileFormat::Jsonl => "jsonl",
            FileFormat::Bulk => "bulk",
        }
    }
}

/// Where the files go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// One `<index>.<jsonl|bulk>` file per target index.
    Directory(PathBuf),
    Stdout,
}

impl Output {
    /// The output's name in a migration's identity (the store records it).
    pub fn identity(&self) -> String {
        match self {
            Output::Stdout => "stdout".into(),
            Output::Directory(d) => d.display().to_string(),
        }
    }
}

/// Documents into files.
pub struct FileSink {
    output: Output,
    format: FileFormat,
    limits: BatchLimits,
    encoder: BulkEncoder,
    files: Mutex<HashMap<Arc<str>, Arc<Mutex<File>>>>,
    /// Files created by this sink, by target index.
    created: Mutex<BTreeMap<String, PathBuf>>,
    /// With a tag, files are `<index>.<tag>.<ext>` opened for appending (table workers:
    /// each process its own file, a restarted one never truncates what was written).
    tag: Option<String>,
    /// Set when a follower (`--follow`) took the change feed over: its files are
    /// `<index>.~follow-<claim, 12 digits>[-<tag>].<ext>`, appended to. `~` sorts after every
    /// character a tag can hold and the claim numbers in order, so files read in name order
    /// (as readers do) give each `_id`'s lines in the order they were written: the backfill,
    /// then each holder of the feed in turn.
    follow: Mutex<Option<String>>,
    /// Documents and bytes (of `_source`) per second at most, through this sink.
    docs_rate: Option<pacing::RateLimiter>,
    bytes_rate: Option<pacing::RateLimiter>,
}

impl FileSink {
    /// A sink writing to `output`; the directory is created if missing.
    pub fn new(output: Output, format: FileFormat, limits: BatchLimits) -> Result<Self, SinkError> {
        if let Output::Directory(dir) = &output {
            std::fs::create_dir_all(dir)
                .map_err(|e| SinkError::fatal(format!("creating {}: {e}", dir.display())))?;
        }
        // Untyped, non-underscored action lines: what current clusters read.
        let target = Target::new(ProductVersion::os(2, 0));
        Ok(FileSink {
            output,
            format,
            limits,
            encoder: BulkEncoder::new(&target, OpType::Index, false, usize::MAX),
            files: Mutex::new(HashMap::new()),
            created: Mutex::new(BTreeMap::new()),
            tag: None,
            follow: Mutex::new(None),
            docs_rate: None,
            bytes_rate: None,
        })
    }

    /// At most `docs` documents and `bytes` bytes of `_source` per second (`--max-docs-per-sec`,
    /// `--max-bytes-per-sec`) through this sink, all its writers together.
    pub fn with_rates(mut self, docs: Option<f64>, bytes: Option<f64>) -> Self {
        let rate = |r: Option<f64>| {
            r.filter(|r| r.is_finite() && *r > 0.0)
                .map(pacing::RateLimiter::new)
        };
        self.docs_rate = rate(docs);
        self.bytes_rate = rate(bytes);
        self
    }

    /// Files named `<index>.<tag>.<ext>`, appended to rather than truncated: processes
    /// sharing a directory each write their own files (give each a different tag), and
    /// documents written again after a restart follow the first copies (readers keep the
    /// last line of each `_id`). The tag is made safe for a file name.
    pub fn with_tag(mut self, tag: &str) -> Self {
        self.tag = Some(file_name_for(tag));
        self
    }

    /// The files written so far, by target index.
    pub fn files(&self) -> BTreeMap<String, PathBuf> {
        self.created
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Creates the (empty) file of each of `indices` now, so that an index without
    /// documents still has its file. Nothing for stdout.
    pub fn create_files<'a>(
        &self,
        indices: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), SinkError> {
        if let Output::Directory(dir) = &self.output {
            for index in indices {
                self.file(dir, &Arc::from(index))?;
            }
        }
        Ok(())
    }

    fn file(&self, dir: &std::path::Path, index: &Arc<str>) -> Result<Arc<Mutex<File>>, SinkError> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = files.get(index) {
            return Ok(f.clone());
        }
        let follow = self
            .follow
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let path = match (&follow, &self.tag) {
            (Some(infix), _) => dir.join(format!(
                "{}.{infix}.{}",
                file_name_for(index),
                self.format.extension()
            )),
            (None, Some(tag)) => dir.join(format!(
                "{}.{tag}.{}",
                file_name_for(index),
                self.format.extension()
            )),
            (None, None) => dir.join(format!(
                "{}.{}",
                file_name_for(index),
                self.format.extension()
            )),
        };
        let f = if self.tag.is_some() || follow.is_some() {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
        } else {
            File::create(&path)
        }
        .map_err(|e| SinkError::fatal(format!("creating {}: {e}", path.display())))?;
        let f = Arc::new(Mutex::new(f));
        files.insert(index.clone(), f.clone());
        self.created
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(index.to_string(), path);
        Ok(f)
    }
}

/// Lines per target index, in document order.
#[derive(Debug, Default)]
pub struct Lines {
    by_index: Vec<(Arc<str>, Vec<u8>)>,
    docs: usize,
    bytes: usize,
    source_bytes: u64,
}

/// Frames documents into [`Lines`].
pub struct FileWriter {
    format: FileFormat,
    encoder: BulkEncoder,
    limits: BatchLimits,
    lines: Lines,
    /// Bytes of the last full batch: a new buffer starts that large, so it is seldom grown
    /// (growing copies what it holds).
    last_bytes: usize,
}

impl FileWriter {
    /// The slot of `index`'s buffer in the batch (the last one used, usually).
    fn slot(&mut self, index: &Arc<str>) -> usize {
        match self.lines.by_index.iter().rposition(|(i, _)| i == index) {
            Some(p) => p,
            None => {
                let most = self.limits.max_bytes.min(64 << 20) + 4096;
                let room = (self.last_bytes + self.last_bytes / 8)
                    .max(64 << 10)
                    .min(most);
                self.lines
                    .by_index
                    .push((index.clone(), Vec::with_capacity(room)));
                self.lines.by_index.len() - 1
            }
        }
    }
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// One document as a JSON line.
pub fn render_jsonl(out: &mut Vec<u8>, doc: &Document) {
    out.extend_from_slice(match doc.op {
        Op::Index | Op::Create => b"{\"_index\":".as_slice(),
        Op::Delete => b"{\"_op\":\"delete\",\"_index\":".as_slice(),
    });
    json_str(out, &doc.index);
    out.extend_from_slice(b",\"_id\":");
    json_str(out, &doc.id);
    if let Some(t) = &doc.doc_type {
        out.extend_from_slice(b",\"_type\":");
        json_str(out, t);
    }
    if let Some(r) = &doc.routing {
        out.extend_from_slice(b",\"_routing\":");
        json_str(out, r);
    }
    if doc.op != Op::Delete {
        out.extend_from_slice(b",\"_source\":");
        out.extend_from_slice(&doc.source);
    }
    out.extend_from_slice(b"}\n");
}

impl SinkWriter for FileWriter {
    type Batch = Lines;

    fn push(&mut self, doc: Document) -> Result<Option<Lines>, Box<Refusal>> {
        let slot = self.slot(&doc.index);
        let buf = &mut self.lines.by_index[slot].1;
        let before = buf.len();
        match self.format {
            FileFormat::Jsonl => render_jsonl(buf, &doc),
            FileFormat::Bulk => {
                let action = match doc.op {
                    Op::Index => BulkAction::Write,
                    Op::Delete => BulkAction::Delete,
                    Op::Create => BulkAction::Create,
                };
                let keys = EntryKeys {
                    index: &doc.index,
                    id: &doc.id,
                    doc_type: None,
                    routing: doc.routing.as_deref(),
                };
                // The one bulk framing of the project, straight into the file's buffer.
                if let Err(e) = self.encoder.frame(buf, action, keys, None, &doc.source) {
                    return Err(Box::new(Refusal {
                        index: doc.index,
                        id: doc.id,
                        doc_type: doc.doc_type,
                        routing: doc.routing,
                        delete: action == BulkAction::Delete,
                        error_type: e.error_type,
                        reason: e.reason,
                        status: 0,
                        attempts: 0,
                        source: doc.source,
                    }));
                }
            }
        }
        let written = buf.len() - before;
        self.lines.docs += 1;
        self.lines.bytes += written;
        self.lines.source_bytes += doc.source.len() as u64;
        if self.lines.docs >= self.limits.max_docs || self.lines.bytes >= self.limits.max_bytes {
            self.last_bytes = self.lines.bytes;
            return Ok(Some(std::mem::take(&mut self.lines)));
        }
        Ok(None)
    }

    fn finish(&mut self) -> Option<Lines> {
        (self.lines.docs > 0).then(|| std::mem::take(&mut self.lines))
    }

    fn size(batch: &Lines) -> usize {
        batch.bytes
    }
}

impl Sink for FileSink {
    type Writer = FileWriter;

    fn writer(&self) -> FileWriter {
        FileWriter {
            format: self.format,
            encoder: self.encoder.clone(),
            limits: self.limits,
            lines: Lines::default(),
            last_bytes: 0,
        }
    }

    async fn send(&self, batch: Lines) -> Result<Delivered, SinkError> {
        let Lines {
            by_index,
            docs,
            bytes,
            source_bytes,
        } = batch;
        if let Some(r) = &self.docs_rate {
            r.acquire(docs as f64).await;
        }
        if let Some(r) = &self.bytes_rate {
            r.acquire(source_bytes as f64).await;
        }
        let write_err =
            |what: &str, e: std::io::Error| SinkError::fatal(format!("writing {what}: {e}"));
        match &self.output {
            Output::Stdout => {
                let out = std::io::stdout();
                let mut lock = out.lock();
                for (_, buf) in &by_index {
                    lock.write_all(buf).map_err(|e| write_err("stdout", e))?;
                }
                lock.flush().map_err(|e| write_err("stdout", e))?;
            }
            Output::Directory(dir) => {
                // A buffer stays empty when its index's documents were all refused: such an
                // index gets no file.
                for (index, buf) in by_index.iter().filter(|(_, b)| !b.is_empty()) {
                    let f = self.file(dir, index)?;
                    let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                    f.write_all(buf)
                        .map_err(|e| write_err(&format!("the file of index {index}"), e))?;
                }
            }
        }
        Ok(Delivered {
            possible_duplicates: 0,
            pressure: Vec::new(),
            delivered: docs as u64,
            bytes: bytes as u64,
            source_bytes,
            refused: Vec::new(),
        })
    }

    fn identity(&self) -> String {
        self.output.identity()
    }

    fn prepare(&self, groups: &[String]) -> Result<(), SinkError> {
        self.create_files(groups.iter().map(String::as_str))
    }

    fn follow_claimed(&self, claim: u64) -> Result<(), SinkError> {
        if matches!(self.output, Output::Stdout) {
            return Ok(());
        }
        let infix = match &self.tag {
            Some(tag) => format!("~follow-{claim:012}-{tag}"),
            None => format!("~follow-{claim:012}"),
        };
        // Files are opened anew under the new name; batches already framed go there too.
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        *self.follow.lock().unwrap_or_else(|p| p.into_inner()) = Some(infix);
        files.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordination::Position;

    fn doc(index: &str, id: &str, op: Op) -> Document {
        Document {
            position: Position::Doc(0),
            op,
            index: index.into(),
            id: id.into(),
            doc_type: Some("t".into()),
            routing: Some("r".into()),
            source: if op == Op::Index {
                bytes::Bytes::from_static(br#"{"x":1}"#)
            } else {
                bytes::Bytes::new()
            },
        }
    }

    #[test]
    fn renders_json_lines_and_deletes() {
        let mut out = Vec::new();
        render_jsonl(&mut out, &doc("i", "a\"b", Op::Index));
        render_jsonl(&mut out, &doc("i", "gone", Op::Delete));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"_index\":\"i\",\"_id\":\"a\\\"b\",\"_type\":\"t\",\"_routing\":\"r\",\"_source\":{\"x\":1}}\n\
             {\"_op\":\"delete\",\"_index\":\"i\",\"_id\":\"gone\",\"_type\":\"t\",\"_routing\":\"r\"}\n"
        );
    }

    #[tokio::test]
    async fn one_file_per_index_with_safe_names() {
        let dir = tempfile::tempdir().unwrap();
        let sink = FileSink::new(
            Output::Directory(dir.path().join("out")),
            FileFormat::Bulk,
            BatchLimits {
                max_docs: 2,
                max_bytes: 1 << 20,
            },
        )
        .unwrap();
        let mut w = sink.writer();
        assert!(w.push(doc("a", "1", Op::Index)).unwrap().is_none());
        let batch = w
            .push(doc("../evil", "2", Op::Index))
            .unwrap()
            .expect("full at 2");
        let d = sink.send(batch).await.unwrap();
        assert_eq!(d.delivered, 2);
        w.push(doc("a", "3", Op::Delete)).unwrap();
        let d = sink.send(w.finish().unwrap()).await.unwrap();
        assert_eq!(d.delivered, 1);
        assert!(w.finish().is_none());
        let files = sink.files();
        assert_eq!(files.len(), 2);
        for path in files.values() {
            assert_eq!(path.parent().unwrap(), dir.path().join("out"));
        }
        let a = std::fs::read_to_string(&files["a"]).unwrap();
        assert_eq!(
            a,
            "{\"index\":{\"_index\":\"a\",\"_id\":\"1\",\"routing\":\"r\"}}\n{\"x\":1}\n\
             {\"delete\":{\"_index\":\"a\",\"_id\":\"3\",\"routing\":\"r\"}}\n"
        );
    }

    #[tokio::test]
    async fn a_refused_document_is_given_back_and_leaves_no_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let sink = FileSink::new(
            Output::Directory(dir.path().join("out")),
            FileFormat::Bulk,
            BatchLimits::default(),
        )
        .unwrap();
        let mut w = sink.writer();
        let mut empty = doc("lost", "e", Op::Index);
        empty.source = bytes::Bytes::from_static(b" \n ");
        let r = w.push(empty).unwrap_err();
        assert_eq!((&*r.index, r.id.as_str()), ("lost", "e"));
        assert_eq!(r.error_type, "invalid_document");
        assert!(w.finish().is_none(), "nothing framed");
        w.push(doc("kept", "k", Op::Index)).unwrap();
        let mut empty = doc("kept", "e2", Op::Index);
        empty.source = bytes::Bytes::new();
        assert!(w.push(empty).is_err());
        let batch = w.finish().unwrap();
        assert_eq!(sink.send(batch).await.unwrap().delivered, 1);
        let files = sink.files();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            vec!["kept"],
            "no file for `lost`"
        );
        assert_eq!(
            std::fs::read_to_string(&files["kept"]).unwrap(),
            "{\"index\":{\"_index\":\"kept\",\"_id\":\"k\",\"routing\":\"r\"}}\n{\"x\":1}\n"
        );
    }
}
