//! The JSON-lines source: what `rfs export` (and the file sink) writes, one
//! `{"_index","_id","_type"?,"_routing"?,"_source"}` object per line (deletes:
//! `{"_op":"delete","_index","_id"}`), in the files of a directory or an object store
//! prefix (any [`snapshot::BlobStore`]: local, S3, …): `*.jsonl` and `*.ndjson` (any
//! case), compressed `*.jsonl.gz` / `*.jsonl.zst` (and `.ndjson.*`), and, in a local
//! directory, those of its sub-directories (named by their path from the root). Any other
//! file is named in a warning as not read.
//!
//! Partitions of a plain file are byte ranges of it ([`JsonlOptions::chunk_bytes`] each):
//! an item reads the lines that *begin* inside its range (the last one may run past its
//! end). A compressed file cannot be cut into byte ranges: it is one item, read as a
//! stream from its start. A line's position is the byte offset where it begins (in the
//! decompressed stream for a compressed file), so resuming after a cursor is a ranged
//! read from there (a compressed file is read again from its start and the lines up to
//! the cursor passed over). A line that is not such an object is a skip (`bad_line`), one
//! without `_source` a skip (`no_source`), one longer than
//! [`JsonlOptions::max_line_bytes`] a skip (`line_too_long`) that is never buffered whole.
//!
//! The plan records each item's extent ([`Extent`] in [`WorkItem::extent`]): the file,
//! its byte range, the file's length and a digest of its last bytes. A worker reads the
//! range recorded there, never one recomputed from its own `--item-bytes`; when a read
//! reaches the range's end it proves, by a second route, that it read the range whole
//! (the lines counted from the newlines of the bytes fetched were each walked, the walk
//! reached the recorded end) and that the file is the one planned (same length, same
//! last bytes). A shortfall or a changed file fails the item, never finishes it.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use coordination::{Cursor, Position, WorkItem};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use snapshot::BlobStore;

use engine::document::{Document, Op, Read, Skip};
use engine::error::SourceError;
use engine::source::{GroupTotals, Plan, Source, TotalCount, Totals};

/// Options of the JSON-lines source.
#[derive(Debug, Clone)]
pub struct JsonlOptions {
    /// Bytes of a file per work item (the last item of a file may be shorter). Used when
    /// the plan is made; items of an existing plan keep the ranges recorded in it.
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

/// How a file's bytes are stored, told by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// How the file `name` is read, by its (case-insensitive) ending; `None`: not a file of
    /// JSON lines.
    pub fn of(name: &str) -> Option<Compression> {
        let lower = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
        let (stem, compression) = if let Some(s) = lower.strip_suffix(".gz") {
            (s, Compression::Gzip)
        } else if let Some(s) = lower
            .strip_suffix(".zst")
            .or_else(|| lower.strip_suffix(".zstd"))
        {
            (s, Compression::Zstd)
        } else {
            (lower.as_str(), Compression::None)
        };
        (stem.ends_with(".jsonl") || stem.ends_with(".ndjson")).then_some(compression)
    }
}

/// What the plan records of one item ([`WorkItem::extent`]): every worker reads this,
/// whatever its own flags say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extent {
    /// The file (its path from the root).
    pub file: String,
    /// The lines beginning in `start..end` (bytes of the file; for a compressed file the
    /// whole file, `0..file_len`).
    pub start: u64,
    pub end: u64,
    /// The file's length when the plan was made.
    pub file_len: u64,
    /// A digest of the file's last bytes when the plan was made ([`TAIL_BYTES`]).
    pub tail: String,
    /// The `--item-bytes` the plan was made with.
    pub item_bytes: u64,
    #[serde(default)]
    pub compression: Compression,
}

/// Bytes at the end of a file whose digest the plan records.
pub const TAIL_BYTES: u64 = 4096;

/// Documents of the JSON-lines files of a blob store.
pub struct JsonlSource {
    store: Arc<dyn BlobStore>,
    files: Vec<(String, u64)>,
    opts: JsonlOptions,
    /// Warned once: an item's recorded `--item-bytes` differs from this worker's.
    warned_flags: AtomicBool,
    /// Warned once: an item without an extent (planned by an older rfs).
    warned_old: AtomicBool,
    /// Test hook: a walker bug that forgets the line beginning at this offset.
    #[cfg(test)]
    forget_line_at: Option<u64>,
}

/// Sub-directories walked below the root at most.
const MAX_DEPTH: usize = 16;

/// The files of `store` this source reads, by name: `*.jsonl`, `*.ndjson` and their `.gz`
/// and `.zst` forms at its root and, for a local directory, in its sub-directories. Files
/// of other names are named in a warning (never passed over without a word).
pub fn jsonl_files(store: &dyn BlobStore) -> Result<Vec<(String, u64)>, SourceError> {
    let (files, others) = lines_files(store)?;
    if !files.is_empty() && !others.is_empty() {
        let shown: Vec<&str> = others.iter().take(20).map(String::as_str).collect();
        tracing::warn!(
            location = %redact::url(&store.location()),
            not_read = others.len(),
            "{}: {} file(s) that are not JSON lines are not read (*.jsonl, *.ndjson, with .gz or .zst): {}{}",
            redact::url(&store.location()),
            others.len(),
            shown.join(", "),
            if others.len() > shown.len() { ", …" } else { "" }
        );
    }
    Ok(files)
}

/// Whether `store` holds a file this source reads (no warning about the others).
pub fn holds_lines(store: &dyn BlobStore) -> bool {
    lines_files(store).is_ok_and(|(files, _)| !files.is_empty())
}

/// The files read (name and length) and the names of the files left unread.
type LinesFiles = (Vec<(String, u64)>, Vec<String>);

/// The files read and the names of the others.
fn lines_files(store: &dyn BlobStore) -> Result<LinesFiles, SourceError> {
    let listing = |dir: &str| {
        store.list(dir, "").map_err(|e| {
            SourceError::fatal(format!(
                "listing {}/{dir}: {e}",
                redact::url(&store.location())
            ))
        })
    };
    let mut files = Vec::new();
    let mut others = Vec::new();
    // Sub-directories (an object store's common prefixes) are walked the same way.
    let mut dirs = vec![(String::new(), 0usize)];
    while let Some((dir, depth)) = dirs.pop() {
        for b in listing(&dir)? {
            let name = snapshot::blob::join(&dir, &b.name);
            if Compression::of(&name).is_some() {
                files.push((name, b.len));
            } else {
                others.push(name);
            }
        }
        let subs = store.list_dirs(&dir).map_err(|e| {
            SourceError::fatal(format!(
                "{}/{dir}: cannot list the directory: {e}",
                redact::url(&store.location())
            ))
        })?;
        for name in subs {
            let sub = snapshot::blob::join(&dir, &name);
            if name.starts_with('.') {
                // A hidden directory is not read, and said so with the other unread names.
                others.push(sub);
                continue;
            }
            if depth + 1 > MAX_DEPTH {
                return Err(SourceError::fatal(format!(
                    "{}/{sub}: directories nested deeper than {MAX_DEPTH} are not read",
                    redact::url(&store.location())
                )));
            }
            dirs.push((sub, depth + 1));
        }
    }
    files.sort();
    others.sort();
    Ok((files, others))
}

impl JsonlSource {
    /// The JSON-lines files of `store`; an error when there is none.
    pub fn open(store: Arc<dyn BlobStore>, opts: JsonlOptions) -> Result<Self, SourceError> {
        let files = jsonl_files(store.as_ref())?;
        if files.is_empty() {
            return Err(SourceError::fatal(format!(
                "{}: no *.jsonl, *.ndjson, *.jsonl.gz or *.jsonl.zst file to read",
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
            warned_flags: AtomicBool::new(false),
            warned_old: AtomicBool::new(false),
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

    fn place(&self, name: &str) -> String {
        format!("{}/{name}", self.store.location())
    }

    /// A digest of the last [`TAIL_BYTES`] of a file `len` bytes long.
    fn tail_digest(&self, name: &str, len: u64) -> Result<String, SourceError> {
        use sha2::Digest;
        let from = len.saturating_sub(TAIL_BYTES);
        let bytes = if len == 0 {
            Bytes::new()
        } else {
            self.store.read_range(name, from..len).map_err(|e| {
                SourceError::item(format!(
                    "{}: reading bytes {from}..{len}: {e}",
                    self.place(name)
                ))
            })?
        };
        let d = sha2::Sha256::digest(&bytes);
        Ok(d[..16].iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The item's extent: as the plan recorded it, or (an item planned by an rfs that did
    /// not record it) recomputed from this worker's `--item-bytes`, with a warning.
    fn extent_of(&self, item: &WorkItem) -> Result<(Extent, bool), SourceError> {
        let place = self.place(&item.group);
        if let Some(v) = &item.extent {
            let e: Extent = serde_json::from_value(v.clone()).map_err(|e| {
                SourceError::permanent(format!(
                    "{place}: item {}: the plan's extent is not one this rfs reads: {e}",
                    item.id()
                ))
            })?;
            if e.file != item.group || e.start > e.end || e.end > e.file_len {
                return Err(SourceError::permanent(format!(
                    "{place}: item {}: the plan's extent ({}, bytes {}..{} of {}) does not fit the item",
                    item.id(),
                    e.file,
                    e.start,
                    e.end,
                    e.file_len
                )));
            }
            if e.compression == Compression::None
                && e.item_bytes != self.opts.chunk_bytes
                && !self.warned_flags.swap(true, Ordering::Relaxed)
            {
                tracing::warn!(
                    plan = e.item_bytes,
                    flag = self.opts.chunk_bytes,
                    "--item-bytes {} is ignored: the plan was made with {} bytes per item and the plan's value wins (items keep the byte ranges recorded in the store)",
                    self.opts.chunk_bytes,
                    e.item_bytes
                );
            }
            return Ok((e, true));
        }
        if !self.warned_old.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                item = %item.id(),
                item_bytes = self.opts.chunk_bytes,
                "{place}: the plan records no byte range for its items (made by an older rfs): ranges are recomputed from this worker's --item-bytes {}, which must be the value the plan was made with",
                self.opts.chunk_bytes
            );
        }
        let len = self.len_of(&item.group)?;
        let compression = Compression::of(&item.group).unwrap_or_default();
        let (start, end) = if compression == Compression::None {
            let start = u64::from(item.part).saturating_mul(self.opts.chunk_bytes);
            (start, start.saturating_add(self.opts.chunk_bytes).min(len))
        } else {
            (0, len)
        };
        Ok((
            Extent {
                file: item.group.clone(),
                start,
                end,
                file_len: len,
                tail: String::new(),
                item_bytes: self.opts.chunk_bytes,
                compression,
            },
            false,
        ))
    }

    /// The file must be the one planned: the same length now as when the plan was made
    /// (listed when this worker opened, and again now) and the same last bytes.
    fn check_unchanged(&self, e: &Extent) -> Result<(), SourceError> {
        let listed = self.len_of(&e.file)?;
        let now = self.store.len(&e.file).map_err(|err| {
            SourceError::item(format!("{}: its length: {err}", self.place(&e.file)))
        })?;
        if listed != e.file_len || now != e.file_len {
            return Err(SourceError::coverage(format!(
                "{}: the file changed since the plan was made ({} bytes then, {now} now): its items cannot be proven read whole; the item fails rather than end as done",
                self.place(&e.file),
                e.file_len
            )));
        }
        if self.tail_digest(&e.file, e.file_len)? != e.tail {
            return Err(SourceError::coverage(format!(
                "{}: the file changed since the plan was made (its last {TAIL_BYTES} bytes differ): its items cannot be proven read whole; the item fails rather than end as done",
                self.place(&e.file)
            )));
        }
        Ok(())
    }
}

impl Source for JsonlSource {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("kind".to_string(), "jsonl".to_string()),
            (
                "location".to_string(),
                engine::job::identity_location(&self.store.location()),
            ),
        ])
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        let mut plan = Plan::default();
        let mut totals = Totals::default();
        for (name, len) in &self.files {
            let compression = Compression::of(name).unwrap_or_default();
            let tail = self.tail_digest(name, *len)?;
            let extent = |part: u32, start: u64, end: u64| {
                let e = Extent {
                    file: name.clone(),
                    start,
                    end,
                    file_len: *len,
                    tail: tail.clone(),
                    item_bytes: self.opts.chunk_bytes,
                    compression,
                };
                serde_json::to_value(&e)
                    .map(|v| WorkItem::whole(name.clone(), part).with_extent(v))
                    .map_err(|e| SourceError::fatal(format!("{}: {e}", self.place(name))))
            };
            let parts = if compression == Compression::None {
                let parts = len.div_ceil(self.opts.chunk_bytes);
                let parts = u32::try_from(parts).map_err(|_| {
                    SourceError::fatal(format!(
                        "{}/{name}: {len} bytes make too many items of {} bytes",
                        self.store.location(),
                        self.opts.chunk_bytes
                    ))
                })?;
                for part in 0..parts {
                    let start = u64::from(part) * self.opts.chunk_bytes;
                    let end = start.saturating_add(self.opts.chunk_bytes).min(*len);
                    plan.items.push(extent(part, start, end)?);
                }
                parts
            } else {
                // A compressed file is one stream: one item, read from its start.
                plan.items.push(extent(0, 0, *len)?);
                1
            };
            let docs = if compression == Compression::None {
                estimate_lines(self.store.as_ref(), name, *len)
            } else {
                0
            };
            totals.add(
                name,
                GroupTotals {
                    parts,
                    docs,
                    bytes: *len,
                    // Lines are known only as items read them: each proves its own.
                    count: Some(TotalCount::PerItem),
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
        let (extent, recorded) = self.extent_of(item)?;
        let len = self.len_of(&item.group)?;
        if recorded && len != extent.file_len {
            return Err(SourceError::coverage(format!(
                "{}: the file changed since the plan was made ({} bytes then, {len} now): its items cannot be proven read whole; the item fails rather than end as done",
                self.place(&item.group),
                extent.file_len
            )));
        }
        let offset = |p: &Cursor| match p {
            None => Ok(None),
            Some(Position::Doc(p)) => Ok(Some(*p)),
            Some(Position::Key(k)) => Err(SourceError::item(format!(
                "{}/{}: position {k:?} is not a byte offset",
                self.store.location(),
                item.group
            ))),
        };
        let after = [offset(&item.after)?, offset(after)?]
            .into_iter()
            .flatten()
            .max();
        let until = offset(&item.until)?;
        let done = if extent.compression == Compression::None {
            self.read_range(item, &extent, len, after, until, emit)?
        } else {
            self.read_stream(item, &extent, after, until, emit)?
        };
        // The read reached its end: the file must be the one planned.
        if done && recorded {
            self.check_unchanged(&extent)?;
        }
        Ok(())
    }
}

impl JsonlSource {
    /// The lines beginning in the extent's byte range after `after` (and before `until`);
    /// `true` when the read reached the range's end (and proved it walked every line).
    fn read_range(
        &self,
        item: &WorkItem,
        extent: &Extent,
        len: u64,
        after: Option<u64>,
        until: Option<u64>,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<bool, SourceError> {
        let start = extent.start;
        // A successor item (after a lease ran out) starts after its predecessor's cursor.
        let mut end = extent.end.min(len);
        if let Some(u) = until {
            end = end.min(u);
        }
        let from = after.map_or(start, |p| start.max(p.saturating_add(1)));
        let mut lines = Lines::new(self, &item.group, len, from..end);
        let Some(mut at) = lines.first_line_at_or_after(from)? else {
            return Ok(true);
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
                    None => at = len,
                }
                continue;
            }
            let read = self.line_read(line, at, &group);
            if let Some(r) = read {
                given += 1;
                if !emit(r) {
                    return Ok(false);
                }
            } else {
                blank += 1;
            }
            match next {
                Some(n) => at = n,
                None => at = len,
            }
        }
        let place = self.place(&item.group);
        // The walk reached the range's recorded end (or the file's).
        if at < end {
            return Err(SourceError::coverage(format!(
                "{place}: bytes {from}..{end}: the walk stopped at byte {at}, short of the range's end; the item fails rather than end as done"
            )));
        }
        // Coverage: the lines beginning in the range, counted from its newlines as the
        // windows were fetched, were each walked — given as a document or a skip, or blank.
        let starts = lines.starts();
        if given + blank != starts {
            return Err(SourceError::coverage(format!(
                "{place}: bytes {from}..{end} begin {starts} lines, but {given} were given and {blank} are blank: lines were lost on the way; the item fails rather than end as done"
            )));
        }
        Ok(true)
    }

    /// What one line gives: a document or a skip; `None` for a blank line.
    fn line_read(&self, line: Line, at: u64, group: &Arc<str>) -> Option<Read> {
        match line {
            Line::Blank => None,
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
                    group,
                    self.opts.max_line_bytes
                ),
                source: None,
            })),
            Line::Text(text) => Some(parse_line(&text, at, group, || {
                format!("{}/{} at byte {at}", self.store.location(), group)
            })),
        }
    }

    /// A compressed file, as one stream from its start: the lines after `after` (and
    /// before `until`), positions being offsets in the decompressed stream; `true` when
    /// the read reached the stream's end (and proved it walked every line).
    fn read_stream(
        &self,
        item: &WorkItem,
        extent: &Extent,
        after: Option<u64>,
        until: Option<u64>,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<bool, SourceError> {
        let place = self.place(&item.group);
        let io = |e: std::io::Error| {
            SourceError::item(format!("{place}: reading the compressed stream: {e}"))
        };
        let blob = BlobReader {
            source: self,
            name: &item.group,
            at: 0,
            len: extent.file_len,
            buf: Bytes::new(),
        };
        let decoded: Box<dyn std::io::Read + '_> = match extent.compression {
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(blob)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(blob).map_err(io)?),
            Compression::None => Box::new(blob),
        };
        let counted = NewlineCounter {
            inner: decoded,
            newlines: 0,
            bytes: 0,
            last: None,
        };
        let cap = usize::try_from(self.opts.read_bytes.min(4 << 20)).unwrap_or(4 << 20);
        let mut r = std::io::BufReader::with_capacity(cap.max(1), counted);
        let group: Arc<str> = Arc::from(item.group.as_str());
        let max = self.opts.max_line_bytes;
        // Lines walked: passed over (up to the cursor), given, blank.
        let (mut walked, mut at) = (0u64, 0u64);
        if let Some(u) = until {
            return Err(SourceError::permanent(format!(
                "{place}: a compressed file is read as one item: it cannot end at byte {u}"
            )));
        }
        loop {
            let mut text = Vec::new();
            let mut n = 0usize;
            let mut ended = false;
            loop {
                let held = r.fill_buf().map_err(io)?;
                if held.is_empty() {
                    break;
                }
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
                let used = chunk.len() + usize::from(newline);
                r.consume(used);
                if newline {
                    ended = true;
                    break;
                }
            }
            if n == 0 && !ended {
                break;
            }
            let line_at = at;
            at += n as u64 + u64::from(ended);
            walked += 1;
            if after.is_some_and(|a| line_at <= a) {
                continue;
            }
            let line = if n > max {
                Line::TooLong(n)
            } else if text.iter().all(|c| c.is_ascii_whitespace()) {
                Line::Blank
            } else {
                Line::Text(text)
            };
            if let Some(read) = self.line_read(line, line_at, &group) {
                if !emit(read) {
                    return Ok(false);
                }
            }
        }
        // Coverage: the stream's lines, counted from its newlines as it was decompressed,
        // were each walked (passed over up to the cursor, given, or blank).
        let counted = r.get_ref();
        let lines = counted.newlines + u64::from(counted.last.is_some_and(|c| c != b'\n'));
        if walked != lines || counted.bytes != at {
            return Err(SourceError::coverage(format!(
                "{place}: the decompressed stream ({} bytes) holds {lines} lines, but {walked} were walked up to byte {at}: lines were lost on the way; the item fails rather than end as done",
                counted.bytes
            )));
        }
        Ok(true)
    }
}

/// A blob read front to back by ranged reads (the compressed stream under a decoder).
struct BlobReader<'a> {
    source: &'a JsonlSource,
    name: &'a str,
    at: u64,
    len: u64,
    buf: Bytes,
}

impl std::io::Read for BlobReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            if self.at >= self.len {
                return Ok(0);
            }
            let to = self
                .at
                .saturating_add(self.source.opts.read_bytes)
                .min(self.len);
            let b = self
                .source
                .store
                .read_range(self.name, self.at..to)
                .map_err(|e| std::io::Error::other(format!("bytes {}..{to}: {e}", self.at)))?;
            if b.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("bytes {}..{to} came back empty (the file shrank?)", self.at),
                ));
            }
            self.at += b.len() as u64;
            self.buf = b;
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf = self.buf.slice(n..);
        Ok(n)
    }
}

/// Counts the newlines and bytes that pass through it (the second route of a stream's
/// coverage check).
struct NewlineCounter<R> {
    inner: R,
    newlines: u64,
    bytes: u64,
    last: Option<u8>,
}

impl<R: std::io::Read> std::io::Read for NewlineCounter<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(out)?;
        let got = &out[..n];
        self.newlines += got.iter().filter(|&&c| c == b'\n').count() as u64;
        self.bytes += n as u64;
        if let Some(&c) = got.last() {
            self.last = Some(c);
        }
        Ok(n)
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
            assert_eq!(e.severity, engine::error::Severity::Item);
            assert!(
                e.message.contains("a.jsonl") && e.message.contains("lines were lost"),
                "{e}"
            );
        }
    }
}
