//! The JSON-lines source: what `rfs export` (and the file sink) writes, one
//! `{"_index","_id","_type"?,"_routing"?,"_source"}` object per line (deletes:
//! `{"_op":"delete","_index","_id"}`), in the `*.jsonl` files of a directory or an object
//! store prefix (any [`snapshot::BlobStore`]: local, S3, …).
//!
//! Partitions are byte ranges of one file ([`JsonlOptions::chunk_bytes`] each): an item
//! reads the lines that *begin* inside its range (the last one may run past its end).
//! A line's position is the byte offset where it begins, so resuming after a cursor is a
//! ranged read from there. A line that is not such an object is a skip (`bad_line`), one
//! without `_source` a skip (`no_source`), one longer than
//! [`JsonlOptions::max_line_bytes`] a skip (`line_too_long`) that is never buffered whole.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use coordination::{Cursor, Position, WorkItem};
use serde::Deserialize;
use serde_json::value::RawValue;
use snapshot::BlobStore;

use crate::document::{Document, Op, Read, Skip};
use crate::error::SourceError;
use crate::source::{GroupTotals, Plan, Source, Totals};

/// Options of the JSON-lines source.
#[derive(Debug, Clone)]
pub struct JsonlOptions {
    /// Bytes of a file per work item (the last item of a file may be shorter).
    pub chunk_bytes: u64,
    /// Bytes fetched per ranged read.
    pub read_bytes: u64,
    /// A longer line is skipped (`line_too_long`) without being held in memory.
    pub max_line_bytes: usize,
}

impl Default for JsonlOptions {
    fn default() -> Self {
        JsonlOptions {
            chunk_bytes: 64 << 20,
            read_bytes: 4 << 20,
            max_line_bytes: 100 << 20,
        }
    }
}

/// Documents of the `*.jsonl` files at the root of a blob store.
pub struct JsonlSource {
    store: Arc<dyn BlobStore>,
    files: Vec<(String, u64)>,
    opts: JsonlOptions,
    /// Test hook: a walker bug that forgets the line beginning at this offset.
    #[cfg(test)]
    forget_line_at: Option<u64>,
}

/// The files of `store` this source reads: `*.jsonl` at its root, by name.
pub fn jsonl_files(store: &dyn BlobStore) -> Result<Vec<(String, u64)>, SourceError> {
    let mut files: Vec<(String, u64)> = store
        .list("", "")
        .map_err(|e| SourceError::fatal(format!("listing {}: {e}", store.location())))?
        .into_iter()
        .filter(|b| b.name.ends_with(".jsonl"))
        .map(|b| (b.name, b.len))
        .collect();
    files.sort();
    Ok(files)
}

impl JsonlSource {
    /// The `*.jsonl` files at the root of `store`; an error when there is none.
    pub fn open(store: Arc<dyn BlobStore>, opts: JsonlOptions) -> Result<Self, SourceError> {
        let files = jsonl_files(store.as_ref())?;
        if files.is_empty() {
            return Err(SourceError::fatal(format!(
                "{}: no *.jsonl file to read",
                store.location()
            )));
        }
        let opts = JsonlOptions {
            chunk_bytes: opts.chunk_bytes.max(1),
            read_bytes: opts.read_bytes.max(1),
            max_line_bytes: opts.max_line_bytes.max(1),
        };
        Ok(JsonlSource {
            store,
            files,
            opts,
            #[cfg(test)]
            forget_line_at: None,
        })
    }

    /// The files read, with their lengths.
    pub fn files(&self) -> &[(String, u64)] {
        &self.files
    }

    fn len_of(&self, name: &str) -> Result<u64, SourceError> {
        self.files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| *l)
            .ok_or_else(|| {
                SourceError::item(format!(
                    "{}/{name}: not one of the files planned",
                    self.store.location()
                ))
            })
    }
}

impl Source for JsonlSource {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("kind".to_string(), "jsonl".to_string()),
            (
                "location".to_string(),
                crate::job::identity_location(&self.store.location()),
            ),
        ])
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        let mut plan = Plan::default();
        let mut totals = Totals::default();
        for (name, len) in &self.files {
            let parts = len.div_ceil(self.opts.chunk_bytes);
            let parts = u32::try_from(parts).map_err(|_| {
                SourceError::fatal(format!(
                    "{}/{name}: {len} bytes make too many items of {} bytes",
                    self.store.location(),
                    self.opts.chunk_bytes
                ))
            })?;
            for part in 0..parts {
                plan.items.push(WorkItem::whole(name.clone(), part));
            }
            let docs = estimate_lines(self.store.as_ref(), name, *len);
            totals.add(
                name,
                GroupTotals {
                    parts,
                    docs,
                    bytes: *len,
                    ..GroupTotals::default()
                },
            );
        }
        totals.items = plan.items.len();
        plan.totals = totals;
        Ok(plan)
    }

    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let len = self.len_of(&item.group)?;
        let start = u64::from(item.part).saturating_mul(self.opts.chunk_bytes);
        let offset = |p: &Cursor| match p {
            None => Ok(None),
            Some(Position::Doc(p)) => Ok(Some(*p)),
            Some(Position::Key(k)) => Err(SourceError::item(format!(
                "{}/{}: position {k:?} is not a byte offset",
                self.store.location(),
                item.group
            ))),
        };
        // A successor item (after a lease ran out) starts after its predecessor's cursor.
        let mut end = start.saturating_add(self.opts.chunk_bytes).min(len);
        if let Some(u) = offset(&item.until)? {
            end = end.min(u);
        }
        let from = [offset(&item.after)?, offset(after)?]
            .into_iter()
            .flatten()
            .fold(start, |f, p| f.max(p.saturating_add(1)));
        let mut lines = Lines::new(self, &item.group, len, from..end);
        let Some(mut at) = lines.first_line_at_or_after(from)? else {
            return Ok(());
        };
        let group: Arc<str> = Arc::from(item.group.as_str());
        // Lines walked: given (documents and skips) and blank.
        let (mut given, mut blank) = (0u64, 0u64);
        while at < end {
            let (line, next) = lines.line(at)?;
            #[cfg(test)]
            if self.forget_line_at == Some(at) {
                match next {
                    Some(n) => at = n,
                    None => break,
                }
                continue;
            }
            let read = match line {
                Line::Blank => {
                    blank += 1;
                    None
                }
                Line::TooLong(n) => Some(Read::Skip(Skip {
                    position: Position::Doc(at),
                    index: group.clone(),
                    id: None,
                    doc_type: None,
                    routing: None,
                    reason: "line_too_long",
                    detail: format!(
                        "{}/{} at byte {at}: a line of {n} bytes or more (at most {})",
                        self.store.location(),
                        item.group,
                        self.opts.max_line_bytes
                    ),
                    source: None,
                })),
                Line::Text(text) => Some(parse_line(&text, at, &group, || {
                    format!("{}/{} at byte {at}", self.store.location(), item.group)
                })),
            };
            if let Some(r) = read {
                given += 1;
                if !emit(r) {
                    return Ok(());
                }
            }
            match next {
                Some(n) => at = n,
                None => break,
            }
        }
        // Coverage: the lines beginning in the range, counted from its newlines as the
        // windows were fetched, were each walked — given as a document or a skip, or blank.
        let starts = lines.starts();
        if given + blank != starts {
            return Err(SourceError::coverage(format!(
                "{}/{}: bytes {from}..{end} begin {starts} lines, but {given} were given and {blank} are blank: lines were lost on the way; the item fails rather than end as done",
                self.store.location(),
                item.group
            )));
        }
        Ok(())
    }
}

/// Lines in about the first window of a file, scaled to its length.
fn estimate_lines(store: &dyn BlobStore, name: &str, len: u64) -> u64 {
    let window = len.min(1 << 20);
    if window == 0 {
        return 0;
    }
    match store.read_range(name, 0..window) {
        Ok(b) => {
            let lines = b.iter().filter(|&&c| c == b'\n').count().max(1) as u64;
            (lines as u128 * len as u128 / window as u128) as u64
        }
        Err(_) => 0,
    }
}

/// One line's shape in the file.
#[derive(Deserialize)]
struct LineDoc<'a> {
    #[serde(rename = "_op", default)]
    op: Option<String>,
    #[serde(rename = "_index")]
    index: String,
    #[serde(rename = "_id")]
    id: String,
    #[serde(rename = "_type", default)]
    doc_type: Option<String>,
    #[serde(rename = "_routing", default)]
    routing: Option<String>,
    #[serde(rename = "_source", borrow, default)]
    source: Option<&'a RawValue>,
}

fn parse_line(text: &[u8], at: u64, group: &Arc<str>, place: impl Fn() -> String) -> Read {
    let skip = |reason: &'static str, id: Option<String>, detail: String| {
        Read::Skip(Skip {
            position: Position::Doc(at),
            index: group.clone(),
            id,
            doc_type: None,
            routing: None,
            reason,
            detail,
            source: Some(Bytes::copy_from_slice(text)),
        })
    };
    let doc: LineDoc = match serde_json::from_slice(text) {
        Ok(d) => d,
        Err(e) => {
            return skip(
                "bad_line",
                None,
                format!(
                    "{}: not a {{\"_index\",\"_id\",\"_source\"}} object: {e}",
                    place()
                ),
            )
        }
    };
    let op = match doc.op.as_deref() {
        None | Some("index") => Op::Index,
        Some("create") => Op::Create,
        Some("delete") => Op::Delete,
        Some(other) => {
            return skip(
                "bad_line",
                Some(doc.id),
                format!("{}: unknown _op {other:?} (index, create, delete)", place()),
            )
        }
    };
    let source = match (op, doc.source) {
        (Op::Delete, _) => Bytes::new(),
        (_, Some(s)) if s.get().starts_with('{') => Bytes::copy_from_slice(s.get().as_bytes()),
        (_, Some(_)) => {
            return skip(
                "bad_line",
                Some(doc.id),
                format!("{}: _source is not an object", place()),
            )
        }
        (_, None) => {
            return skip(
                "no_source",
                Some(doc.id),
                format!("{}: the line has no _source", place()),
            )
        }
    };
    Read::Doc(Document {
        position: Position::Doc(at),
        op,
        index: Arc::from(doc.index),
        id: doc.id,
        doc_type: doc.doc_type.map(Arc::from),
        routing: doc.routing,
        source,
    })
}

/// What is at one offset of a file.
enum Line {
    /// Only whitespace: no document.
    Blank,
    /// The line's bytes, without its newline.
    Text(Vec<u8>),
    /// Too long to hold: at least this many bytes.
    TooLong(usize),
}

/// Ranged reads of one file, a window at a time.
struct Lines<'a> {
    source: &'a JsonlSource,
    name: &'a str,
    len: u64,
    /// The bytes held and the offset of their first byte.
    buf: Bytes,
    buf_at: u64,
    /// The read's range: lines beginning in it are counted as windows are fetched.
    range: std::ops::Range<u64>,
    /// Bytes up to here were looked at for line starts.
    counted_to: u64,
    /// Lines beginning in `range` (in the bytes fetched so far).
    starts: u64,
}

impl<'a> Lines<'a> {
    fn new(source: &'a JsonlSource, name: &'a str, len: u64, range: std::ops::Range<u64>) -> Self {
        Lines {
            source,
            name,
            len,
            buf: Bytes::new(),
            buf_at: 0,
            // The file's first line begins at 0, with no newline before it.
            starts: u64::from(range.start == 0 && range.end > 0 && len > 0),
            counted_to: 0,
            range,
        }
    }

    /// Lines beginning in the read's range, counted from the newlines of every window
    /// fetched (independently of the walk over them): what the walk must have met once
    /// it reached the range's end.
    fn starts(&self) -> u64 {
        self.starts
    }

    /// Counts the line starts in the window `[at, at + buf.len())` not looked at before:
    /// a newline at `p` begins a line at `p + 1` (unless the file ends there).
    fn count_starts(&mut self, at: u64) {
        let from = at.max(self.counted_to);
        let to = at + self.buf.len() as u64;
        if from < to {
            let bytes = &self.buf[(from - at) as usize..];
            self.starts += bytes
                .iter()
                .enumerate()
                .filter(|&(i, &c)| {
                    let begins = from + i as u64 + 1;
                    c == b'\n' && begins < self.len && self.range.contains(&begins)
                })
                .count() as u64;
        }
        self.counted_to = self.counted_to.max(to);
    }

    /// The byte at `at`, reading a window from there when it is not held.
    fn byte(&mut self, at: u64) -> Result<Option<u8>, SourceError> {
        if at >= self.len {
            return Ok(None);
        }
        if at < self.buf_at || at >= self.buf_at + self.buf.len() as u64 {
            let to = at.saturating_add(self.source.opts.read_bytes).min(self.len);
            let b = self
                .source
                .store
                .read_range(self.name, at..to)
                .map_err(|e| {
                    SourceError::item(format!(
                        "{}/{}: reading bytes {at}..{to}: {e}",
                        self.source.store.location(),
                        self.name
                    ))
                })?;
            if b.is_empty() {
                return Err(SourceError::item(format!(
                    "{}/{}: bytes {at}..{to} came back empty (the file shrank?)",
                    self.source.store.location(),
                    self.name
                )));
            }
            self.buf = b;
            self.buf_at = at;
            self.count_starts(at);
        }
        Ok(Some(self.buf[(at - self.buf_at) as usize]))
    }

    /// Where the first line beginning at or after `from` begins (`None`: at the end).
    fn first_line_at_or_after(&mut self, from: u64) -> Result<Option<u64>, SourceError> {
        if from == 0 {
            return Ok((self.len > 0).then_some(0));
        }
        let mut at = from - 1;
        loop {
            match self.byte(at)? {
                None => return Ok(None),
                Some(b'\n') => return Ok((at + 1 < self.len).then_some(at + 1)),
                Some(_) => at += 1,
            }
        }
    }

    /// The line beginning at `at`, and where the next one begins (`None`: the file ends).
    fn line(&mut self, at: u64) -> Result<(Line, Option<u64>), SourceError> {
        let max = self.source.opts.max_line_bytes;
        let mut text = Vec::new();
        let mut n = 0usize;
        let mut pos = at;
        loop {
            // Copy the rest of the held window up to a newline in one step.
            if self.byte(pos)?.is_none() {
                break;
            }
            let held = &self.buf[(pos - self.buf_at) as usize..];
            let (chunk, newline) = match held.iter().position(|&c| c == b'\n') {
                Some(i) => (&held[..i], true),
                None => (held, false),
            };
            if n + chunk.len() <= max {
                text.extend_from_slice(chunk);
            } else {
                text = Vec::new();
            }
            n += chunk.len();
            pos += chunk.len() as u64;
            if newline {
                pos += 1;
                break;
            }
        }
        let next = (pos < self.len).then_some(pos);
        let line = if n > max {
            Line::TooLong(n)
        } else if text.iter().all(|c| c.is_ascii_whitespace()) {
            Line::Blank
        } else {
            Line::Text(text)
        };
        Ok((line, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(dir: &std::path::Path, opts: JsonlOptions) -> JsonlSource {
        let store =
            snapshot::open_blob_store(&dir.display().to_string(), &Default::default()).unwrap();
        JsonlSource::open(store, opts).unwrap()
    }

    fn read(s: &JsonlSource, item: &WorkItem, after: &Cursor) -> Result<Vec<u64>, SourceError> {
        let mut at = Vec::new();
        s.read(item, after, &mut |r| {
            at.push(r.position().doc().unwrap());
            true
        })?;
        Ok(at)
    }

    /// Lines of every shape across item and window boundaries: whatever the cut, every
    /// line beginning in an item is walked (the coverage check passes), and a walker that
    /// forgets one line fails the item instead of ending it as done.
    #[test]
    fn a_read_proves_every_line_of_its_range_was_walked() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..300 {
            match i % 9 {
                0 => text.push_str("   \n"),
                1 => text.push_str("not json\n"),
                2 => text.push_str(&format!("{{\"_index\":\"i\",\"_id\":\"{i}\"}}\n")),
                3 => text.push_str(&format!(
                    "{{\"_index\":\"i\",\"_id\":\"{i}\",\"_source\":{{\"pad\":\"{}\"}}}}\n",
                    "x".repeat(300)
                )),
                _ => text.push_str(&format!(
                    "{{\"_index\":\"i\",\"_id\":\"{i}\",\"_source\":{{\"n\":{i}}}}}\n"
                )),
            }
        }
        text.push_str("{\"_index\":\"i\",\"_id\":\"last\",\"_source\":{}}");
        std::fs::write(dir.path().join("a.jsonl"), &text).unwrap();
        let starts: Vec<u64> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(p, _)| p as u64 + 1))
            .filter(|p| (*p as usize) < text.len())
            .collect();
        let blank = |p: u64| text[p as usize..].starts_with("   \n");
        for (chunk, window, max_line) in [(997, 61, 2048), (64, 7, 100), (5000, 4096, 2048)] {
            let opts = JsonlOptions {
                chunk_bytes: chunk,
                read_bytes: window,
                max_line_bytes: max_line,
            };
            let s = source(dir.path(), opts.clone());
            let mut all = Vec::new();
            for item in s.plan().unwrap().items {
                let got =
                    read(&s, &item, &None).unwrap_or_else(|e| panic!("{chunk}/{window}: {e}"));
                // Resuming after any position proves the rest.
                if let Some(mid) = got.get(got.len() / 2) {
                    let rest = read(&s, &item, &Some(Position::Doc(*mid))).unwrap();
                    assert_eq!(rest[..], got[got.len() / 2 + 1..]);
                }
                all.extend(got);
            }
            let want: Vec<u64> = starts.iter().copied().filter(|p| !blank(*p)).collect();
            assert_eq!(all, want, "{chunk}/{window}");

            // The lossy walker: one line in the middle of the file is forgotten.
            let mut lossy = source(dir.path(), opts);
            let items = lossy.plan().unwrap().items;
            let forgotten = *starts[starts.len() / 2..]
                .iter()
                .find(|p| !blank(**p))
                .unwrap();
            let item = &items[(forgotten / chunk) as usize];
            lossy.forget_line_at = Some(forgotten);
            let e = read(&lossy, item, &None).unwrap_err();
            assert!(e.coverage, "{e}");
            assert_eq!(e.severity, crate::error::Severity::Item);
            assert!(
                e.message.contains("a.jsonl") && e.message.contains("lines were lost"),
                "{e}"
            );
        }
    }
}
