//! Stored fields read from indexes written by real Lucene, compared doc by doc with the
//! golden dumps made by Lucene itself; corrupted copies of those files must give
//! errors, never panics; zstd chunks built here from the format description.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;

use super::*;
use crate::codec_util;
use crate::data_input::Endian;
use crate::directory::{FsDirectory, MemoryFile, SliceDirectory};

// ---------------------------------------------------------------- fixture helpers

/// A segment of a fixture index: the directory holding its files (the compound file's
/// entries when compound), its id and max doc.
pub(crate) struct TestSegment {
    pub name: String,
    pub dir: SliceDirectory,
    pub id: [u8; 16],
    pub max_doc: u32,
}

/// All files of an index folder or of a `.zip` of one, in memory.
pub(crate) fn index_files(path: &Path) -> BTreeMap<String, Bytes> {
    if path.extension().is_some_and(|e| e == "zip") {
        return unzip(&std::fs::read(path).unwrap());
    }
    let dir = FsDirectory::open(path).unwrap();
    dir.list_files()
        .unwrap()
        .into_iter()
        .map(|n| {
            let b = dir.open_file(&n).unwrap().read_all().unwrap();
            (n, b)
        })
        .collect()
}

/// A minimal zip reader (stored and deflated entries) for Lucene's bwc zips.
fn unzip(data: &[u8]) -> BTreeMap<String, Bytes> {
    let u16le = |p: usize| u16::from_le_bytes([data[p], data[p + 1]]) as usize;
    let u32le = |p: usize| u32::from_le_bytes(data[p..p + 4].try_into().unwrap()) as usize;
    let eocd = (0..data.len() - 21)
        .rev()
        .find(|&p| data[p..p + 4] == [0x50, 0x4b, 0x05, 0x06])
        .expect("zip end record");
    let (count, mut p) = (u16le(eocd + 10), u32le(eocd + 16));
    let mut out = BTreeMap::new();
    for _ in 0..count {
        assert_eq!(&data[p..p + 4], &[0x50, 0x4b, 0x01, 0x02]);
        let method = u16le(p + 10);
        let csize = u32le(p + 20);
        let usize_ = u32le(p + 24);
        let (nlen, xlen, clen) = (u16le(p + 28), u16le(p + 30), u16le(p + 32));
        let local = u32le(p + 42);
        let name = String::from_utf8(data[p + 46..p + 46 + nlen].to_vec()).unwrap();
        p += 46 + nlen + xlen + clen;
        let start = local + 30 + u16le(local + 26) + u16le(local + 28);
        let raw = &data[start..start + csize];
        let bytes = match method {
            0 => raw.to_vec(),
            8 => {
                let mut v = Vec::with_capacity(usize_);
                flate2::read::DeflateDecoder::new(raw)
                    .read_to_end(&mut v)
                    .unwrap();
                v
            }
            m => panic!("zip method {m}"),
        };
        if !name.ends_with('/') {
            let base = name.rsplit('/').next().unwrap().to_string();
            out.insert(base, Bytes::from(bytes));
        }
    }
    out
}

/// The directory of `segment`'s files: its compound entries when `.cfe` exists.
pub(crate) fn segment_dir(files: &BTreeMap<String, Bytes>, segment: &str) -> SliceDirectory {
    let mut dir = SliceDirectory::new();
    if let Some(cfe) = files.get(&format!("{segment}.cfe")) {
        let cfs = FileSlice::new(Arc::new(MemoryFile::new(
            format!("{segment}.cfs"),
            files[&format!("{segment}.cfs")].clone(),
        )));
        let mut input = DataInput::new("cfe", cfe);
        let h = codec_util::read_index_header_any(&mut input).unwrap();
        let endian = if h.codec.starts_with("Lucene90") {
            Endian::Little
        } else {
            Endian::Big
        };
        let n = input.read_vint().unwrap();
        for _ in 0..n {
            let name = input.read_string().unwrap().to_string();
            let off = input.read_i64(endian).unwrap() as u64;
            let len = input.read_i64(endian).unwrap() as u64;
            dir.insert(
                format!("{segment}{name}"),
                cfs.slice(off..off + len).unwrap(),
            );
        }
    } else {
        for (name, bytes) in files {
            if name.starts_with(&format!("{segment}.")) || name.starts_with(&format!("{segment}_"))
            {
                dir.insert(
                    name.clone(),
                    FileSlice::from_bytes(name.clone(), bytes.clone()),
                );
            }
        }
    }
    dir
}

fn segment_id(files: &BTreeMap<String, Bytes>, segment: &str) -> [u8; 16] {
    let si = &files[&format!("{segment}.si")];
    let mut input = DataInput::new("si", si);
    codec_util::read_index_header_any(&mut input).unwrap().id
}

/// One golden doc line: segment, doc id and its fields as (name, value) pairs.
struct GoldenDoc {
    doc: u32,
    fields: Vec<(String, Value)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    String(String),
    Binary(Vec<u8>),
    Int(i64),
    Long(i64),
    Float(u32),
    Double(u64),
}

impl Value {
    fn of(v: &StoredValue<'_>) -> Value {
        match *v {
            StoredValue::String(s) => Value::String(s.to_string()),
            StoredValue::Binary(b) => Value::Binary(b.to_vec()),
            StoredValue::Int(i) => Value::Int(i64::from(i)),
            StoredValue::Long(l) => Value::Long(l),
            StoredValue::Float(f) => Value::Float(f.to_bits()),
            StoredValue::Double(d) => Value::Double(d.to_bits()),
        }
    }

    fn from_json(f: &serde_json::Value) -> Value {
        let v = &f["value"];
        let bits = || f["bits"].as_str().unwrap();
        match f["type"].as_str().unwrap() {
            "string" => Value::String(v.as_str().unwrap().to_string()),
            "binary" => Value::Binary(
                base64::engine::general_purpose::STANDARD
                    .decode(v.as_str().unwrap())
                    .unwrap(),
            ),
            "int" => Value::Int(v.as_i64().unwrap()),
            "long" => Value::Long(v.as_i64().unwrap()),
            "float" => Value::Float(u32::from_str_radix(bits(), 16).unwrap()),
            "double" => Value::Double(u64::from_str_radix(bits(), 16).unwrap()),
            t => panic!("golden type {t}"),
        }
    }
}

/// Golden doc lines per segment name.
type GoldenDocs = HashMap<String, Vec<GoldenDoc>>;

/// Segments (name, maxDoc) of the golden header and its doc lines per segment.
fn read_golden(path: &Path) -> (Vec<(String, u32)>, GoldenDocs) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let segments = header["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["maxDoc"].as_u64().unwrap() as u32,
            )
        })
        .collect();
    let mut docs: HashMap<String, Vec<GoldenDoc>> = HashMap::new();
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let fields = v["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["name"].as_str().unwrap().to_string(), Value::from_json(f)))
            .collect();
        docs.entry(v["seg"].as_str().unwrap().to_string())
            .or_default()
            .push(GoldenDoc {
                doc: v["doc"].as_u64().unwrap() as u32,
                fields,
            });
    }
    (segments, docs)
}

pub(crate) fn open_segments(
    files: &BTreeMap<String, Bytes>,
    segs: &[(String, u32)],
) -> Vec<TestSegment> {
    segs.iter()
        .map(|(name, max_doc)| TestSegment {
            name: name.clone(),
            dir: segment_dir(files, name),
            id: segment_id(files, name),
            max_doc: *max_doc,
        })
        .collect()
}

/// Reads every doc of every segment sequentially and compares the golden (live) docs
/// field by field. Field numbers are mapped to names by the first golden doc that
/// shows them and must stay consistent. Returns (docs compared, format names).
fn check_index(files: &BTreeMap<String, Bytes>, golden: &Path) -> (usize, Vec<String>) {
    let (segs, mut docs) = read_golden(golden);
    let mut compared = 0;
    let mut formats = Vec::new();
    for seg in open_segments(files, &segs) {
        let ctx = format!("{} {}", golden.display(), seg.name);
        let reader = StoredFieldsReader::open(&seg.dir, &seg.name, &seg.id, seg.max_doc)
            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
        reader.verify_checksums().unwrap();
        formats.push(format!("{} {}", reader.format(), reader.mode()));
        let expected = docs.remove(&seg.name).unwrap_or_default();
        let mut expected = expected.iter().peekable();
        let mut names: HashMap<u32, String> = HashMap::new();
        let mut cursor = reader.verifying_cursor();
        for doc in 0..seg.max_doc {
            let mut got = Vec::new();
            cursor
                .visit(doc, &mut |n, v| {
                    got.push((n, Value::of(&v)));
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{ctx} doc {doc}: {e}"));
            if expected.peek().is_some_and(|g| g.doc == doc) {
                let g = expected.next().unwrap();
                assert_eq!(got.len(), g.fields.len(), "{ctx} doc {doc}: field count");
                for ((n, v), (name, gv)) in got.iter().zip(&g.fields) {
                    let known = names.entry(*n).or_insert_with(|| name.clone());
                    assert_eq!(known, name, "{ctx} doc {doc}: field number {n}");
                    assert_eq!(v, gv, "{ctx} doc {doc} field {name}");
                }
                compared += 1;
            }
        }
        assert!(
            expected.next().is_none(),
            "{ctx}: golden docs beyond maxDoc"
        );
        // The walk covered the file: its CRC-32 was checked on the way.
        assert_eq!(cursor.finish().unwrap(), Verified::Whole, "{ctx}");
        // Random access (backwards) gives the same docs.
        let mut back = reader.cursor();
        let mut fwd = reader.cursor();
        for doc in (0..seg.max_doc).rev().step_by(7) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            back.visit(doc, &mut |n, v| {
                a.push((n, Value::of(&v)));
                Ok(())
            })
            .unwrap();
            fwd.visit(doc, &mut |n, v| {
                b.push((n, Value::of(&v)));
                Ok(())
            })
            .unwrap();
            assert_eq!(a, b);
        }
    }
    assert!(
        docs.is_empty(),
        "golden segments not in header: {:?}",
        docs.keys()
    );
    (compared, formats)
}

fn fixture_dirs(test: &str) -> Option<(PathBuf, PathBuf)> {
    let root = testkit::fixtures::require_fixtures(test)?.join("lucene");
    Some((root.join("generated"), root.join("bwc")))
}

// ---------------------------------------------------------------- golden comparisons

#[test]
fn generated_indexes_match_lucene_goldens() {
    let Some((generated, _)) = fixture_dirs("generated_indexes_match_lucene_goldens") else {
        return;
    };
    let mut names: Vec<_> = std::fs::read_dir(&generated)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    assert_eq!(names.len(), 30, "generated fixture folders");
    for dir in names {
        let golden = PathBuf::from(format!("{}.golden.jsonl", dir.display()));
        let files = index_files(&dir);
        let (n, formats) = check_index(&files, &golden);
        eprintln!("{}: {n} docs match; {:?}", dir.display(), formats);
        assert!(n > 0);
    }
}

#[test]
fn bwc_indexes_match_lucene_goldens() {
    let Some((_, bwc)) = fixture_dirs("bwc_indexes_match_lucene_goldens") else {
        return;
    };
    let mut zips: Vec<_> = std::fs::read_dir(&bwc)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "zip"))
        .collect();
    zips.sort();
    let mut with_golden = 0;
    for zip in zips {
        let stem = zip.file_stem().unwrap().to_str().unwrap().to_string();
        let golden = bwc.join(format!("{stem}.golden.jsonl"));
        let files = index_files(&zip);
        if golden.exists() {
            let (n, formats) = check_index(&files, &golden);
            eprintln!("{stem}: {n} docs match; {formats:?}");
            with_golden += 1;
        } else {
            // No golden (Lucene 5.5/6.6): every segment's stored fields open and read.
            let mut segs: Vec<_> = files
                .keys()
                .filter_map(|n| n.strip_suffix(".si"))
                .map(str::to_string)
                .collect();
            segs.sort();
            for seg in segs {
                let dir = segment_dir(&files, &seg);
                let id = segment_id(&files, &seg);
                let max_doc = si_max_doc_legacy(&files[&format!("{seg}.si")]);
                let reader = StoredFieldsReader::open(&dir, &seg, &id, max_doc)
                    .unwrap_or_else(|e| panic!("{stem} {seg}: {e}"));
                let mut cursor = reader.cursor();
                let mut fields = 0;
                for doc in 0..max_doc {
                    fields += cursor.num_fields(doc).unwrap();
                }
                eprintln!(
                    "{stem} {seg}: {} {max_doc} docs, {fields} fields",
                    reader.format()
                );
                assert!(fields > 0);
            }
        }
    }
    assert!(with_golden >= 13, "bwc goldens compared: {with_golden}");
}

/// MaxDoc of a Lucene 5/6 `.si` (Lucene50SegmentInfo / Lucene62SegmentInfo): header,
/// then the version as 3 big-endian ints, then MaxDoc.
fn si_max_doc_legacy(si: &[u8]) -> u32 {
    let mut input = DataInput::new("si", si);
    codec_util::read_index_header_any(&mut input).unwrap();
    input.skip(12).unwrap();
    input.read_i32(Endian::Big).unwrap() as u32
}

// ---------------------------------------------------------------- corrupted real files

/// Small PRNG for reproducible mutations.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Rewrites the CRC in the footer so a mutation reaches the decoders behind the check.
fn fix_crc(bytes: &mut [u8]) {
    if bytes.len() >= 16 {
        let n = bytes.len();
        let crc = crc32fast::hash(&bytes[..n - 8]);
        bytes[n - 8..].copy_from_slice(&u64::from(crc).to_be_bytes());
    }
}

/// Opens a segment and reads every doc; returns the first error.
fn read_all(dir: &SliceDirectory, seg: &TestSegment) -> Result<u64> {
    let reader = StoredFieldsReader::open(dir, &seg.name, &seg.id, seg.max_doc)?;
    let mut cursor = reader.cursor();
    let mut n = 0u64;
    for doc in 0..seg.max_doc {
        cursor.visit(doc, &mut |_, v| {
            if let StoredValue::Binary(b) = v {
                n += b.len() as u64;
            }
            Ok(())
        })?;
    }
    Ok(n)
}

#[test]
fn mutated_and_truncated_files_give_errors_not_panics() {
    let Some((generated, bwc)) = fixture_dirs("mutated_and_truncated_files_give_errors_not_panics")
    else {
        return;
    };
    let indexes = [
        generated.join("l8-best_compression-nocfs-types"),
        generated.join("l10-best_speed-cfs-types"),
        generated.join("l9-best_speed-nocfs-large"),
        bwc.join("index.8.0.0-nocfs.zip"),
        bwc.join("index.8.5.0-nocfs.zip"),
        bwc.join("index.8.11.2-nocfs.zip"),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut errors = 0;
    for path in indexes {
        let files = index_files(&path);
        let golden = if path.extension().is_some_and(|e| e == "zip") {
            path.with_extension("golden.jsonl")
        } else {
            PathBuf::from(format!("{}.golden.jsonl", path.display()))
        };
        let (segs, _) = read_golden(&golden);
        let seg = open_segments(&files, &segs[..1]).remove(0);
        let clean = read_all(&seg.dir, &seg).unwrap();
        for ext in ["fdt", "fdx", "fdm"] {
            let name = format!("{}.{ext}", seg.name);
            let Ok(orig) = seg.dir.open_file(&name) else {
                continue;
            };
            let orig = orig.read_all().unwrap().to_vec();
            let rounds = if ext == "fdt" && orig.len() > 100_000 {
                60
            } else {
                150
            };
            for round in 0..rounds {
                let mut bytes = orig.clone();
                match round % 4 {
                    0 => bytes.truncate(rng.below(bytes.len())),
                    _ => {
                        for _ in 0..1 + rng.below(4) {
                            let i = rng.below(bytes.len());
                            bytes[i] ^= 1 << rng.below(8);
                        }
                        if round % 4 == 2 {
                            fix_crc(&mut bytes);
                        }
                    }
                }
                let mut dir = seg.dir.clone();
                dir.insert(
                    name.clone(),
                    FileSlice::from_bytes(name.clone(), bytes.clone()),
                );
                match read_all(&dir, &seg) {
                    Err(e) => {
                        let msg = e.to_string();
                        assert!(
                            msg.contains(&seg.name),
                            "error does not name the file: {msg}"
                        );
                        errors += 1;
                    }
                    // A flip inside a stored value is invisible without the full checksum,
                    // which must then catch it.
                    Ok(_) => {
                        let r = StoredFieldsReader::open(&dir, &seg.name, &seg.id, seg.max_doc)
                            .unwrap();
                        if bytes != orig {
                            assert!(
                                r.verify_checksums().is_err() || round % 4 == 2,
                                "{name} round {round}"
                            );
                        }
                        let _ = clean;
                    }
                }
            }
        }
    }
    assert!(errors > 500, "only {errors} mutations were detected");
}

// ---------------------------------------------------------------- synthetic segments (zstd, plain DEFLATE)

/// What the synthetic writer puts in a chunk payload.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Synth {
    /// Lucene50StoredFieldsHighData v1: legacy container, raw DEFLATE with length prefix.
    LegacyDeflate,
    /// ZstdStoredFields814: one zstd frame.
    EsZstd,
    /// CustomStoredFieldsZstd: DEFLATE-dict-like framing with zstd and raw-content dictionary.
    OsZstd,
    /// CustomStoredFieldsZstdNoDict: 10 sub-blocks of zstd frames.
    OsZstdNoDict,
    /// Lucene90StoredFieldsFastData: LZ4 with a preset dictionary, blocks longer than it.
    Lz4Dict,
    /// The same with a dictionary longer than the blocks (not what Lucene writes, but
    /// valid framing: each block's window then reaches back over earlier blocks).
    Lz4DictWide,
}

impl Synth {
    fn codec(self) -> &'static str {
        match self {
            Synth::LegacyDeflate => "Lucene50StoredFieldsHighData",
            Synth::EsZstd => "ZstdStoredFields814",
            Synth::OsZstd => "CustomStoredFieldsZstd",
            Synth::OsZstdNoDict => "CustomStoredFieldsZstdNoDict",
            Synth::Lz4Dict | Synth::Lz4DictWide => "Lucene90StoredFieldsFastData",
        }
    }
    fn legacy(self) -> bool {
        self == Synth::LegacyDeflate
    }
}

fn vint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7F) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn index_header(out: &mut Vec<u8>, codec: &str, version: i32, id: &[u8; 16]) {
    out.extend_from_slice(&0x3FD7_6C17u32.to_be_bytes());
    vint(out, codec.len() as u64);
    out.extend_from_slice(codec.as_bytes());
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(id);
    out.push(0);
}

fn footer(out: &mut Vec<u8>) {
    out.extend_from_slice(&0xC028_93E8u32.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    let crc = crc32fast::hash(out);
    out.extend_from_slice(&u64::from(crc).to_be_bytes());
}

fn zstd_frame(data: &[u8], dict: &[u8]) -> Vec<u8> {
    if dict.is_empty() {
        zstd::bulk::compress(data, 3).unwrap()
    } else {
        zstd::bulk::Compressor::with_dictionary(3, dict)
            .unwrap()
            .compress(data)
            .unwrap()
    }
}

/// One compressor output for `data` in the payload framing of `kind`.
fn compress_payload(kind: Synth, data: &[u8], out: &mut Vec<u8>) {
    match kind {
        Synth::LegacyDeflate => {
            let mut c = flate2::Compress::new(flate2::Compression::new(6), false);
            let mut z = Vec::with_capacity(data.len() + 64);
            c.compress_vec(data, &mut z, flate2::FlushCompress::Finish)
                .unwrap();
            vint(out, z.len() as u64);
            out.extend_from_slice(&z);
        }
        Synth::EsZstd => {
            if !data.is_empty() {
                let z = zstd_frame(data, &[]);
                vint(out, z.len() as u64);
                out.extend_from_slice(&z);
            }
        }
        Synth::OsZstd => {
            let dict_len = data.len() / 60;
            let block_len = (data.len() - dict_len).div_ceil(10);
            vint(out, dict_len as u64);
            vint(out, block_len as u64);
            let dict = &data[..dict_len];
            let z = if dict.is_empty() {
                Vec::new()
            } else {
                zstd_frame(dict, &[])
            };
            vint(out, z.len() as u64);
            out.extend_from_slice(&z);
            for block in data[dict_len..].chunks(block_len.max(1)) {
                let z = zstd_frame(block, dict);
                vint(out, z.len() as u64);
                out.extend_from_slice(&z);
            }
        }
        Synth::Lz4Dict | Synth::Lz4DictWide => {
            let dict_len = data.len() / if kind == Synth::Lz4Dict { 40 } else { 3 };
            let block_len = (data.len() - dict_len).div_ceil(10).max(1);
            let dict = &data[..dict_len];
            let zdict = crate::compress::lz4::tests::compress(dict, &[]);
            let blocks: Vec<Vec<u8>> = data[dict_len..]
                .chunks(block_len)
                .map(|b| crate::compress::lz4::tests::compress(b, dict))
                .collect();
            vint(out, dict_len as u64);
            vint(out, block_len as u64);
            vint(out, zdict.len() as u64);
            for z in &blocks {
                vint(out, z.len() as u64);
            }
            out.extend_from_slice(&zdict);
            for z in &blocks {
                out.extend_from_slice(z);
            }
        }
        Synth::OsZstdNoDict => {
            let block_len = data.len().div_ceil(10);
            vint(out, block_len as u64);
            for block in data.chunks(block_len.max(1)) {
                let z = zstd_frame(block, &[]);
                vint(out, z.len() as u64);
                out.extend_from_slice(&z);
            }
        }
    }
}

/// A synthetic document: (field number, value) pairs, serialized as in Lucene 9+ (or
/// big-endian for the legacy container; only endian-free types are used here).
type SynthDoc = Vec<(u32, Value)>;

fn serialize(doc: &SynthDoc) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in doc {
        let (t, body): (u64, Vec<u8>) = match v {
            Value::String(s) => {
                let mut b = Vec::new();
                vint(&mut b, s.len() as u64);
                b.extend_from_slice(s.as_bytes());
                (0, b)
            }
            Value::Binary(x) => {
                let mut b = Vec::new();
                vint(&mut b, x.len() as u64);
                b.extend_from_slice(x);
                (1, b)
            }
            Value::Int(i) => {
                let mut b = Vec::new();
                let i = *i as i32;
                vint(&mut b, ((i << 1) ^ (i >> 31)) as u32 as u64);
                (2, b)
            }
            other => panic!("synthetic writer does not encode {other:?}"),
        };
        vint(&mut out, (u64::from(*n) << 3) | t);
        out.extend_from_slice(&body);
    }
    out
}

/// Writes `.fdt`, `.fdx` (and `.fdm`) of a segment `_0` holding `chunks` (each a list
/// of docs) in the format of `kind`, with `chunk_size` deciding sliced chunks.
fn write_segment(
    kind: Synth,
    chunks: &[Vec<SynthDoc>],
    chunk_size: usize,
    id: &[u8; 16],
) -> SliceDirectory {
    let mut fdt = Vec::new();
    let version = 1;
    index_header(&mut fdt, kind.codec(), version, id);
    if kind.legacy() {
        vint(&mut fdt, chunk_size as u64);
        vint(&mut fdt, 2);
    }
    let mut docs = vec![0u64];
    let mut pointers = Vec::new();
    for chunk in chunks {
        pointers.push(fdt.len() as u64);
        let base = *docs.last().unwrap();
        let bytes: Vec<Vec<u8>> = chunk.iter().map(serialize).collect();
        let data: Vec<u8> = bytes.concat();
        let sliced = data.len() >= 2 * chunk_size;
        vint(&mut fdt, base);
        let n = chunk.len() as u64;
        vint(
            &mut fdt,
            if kind.legacy() { n << 1 } else { n << 2 } | sliced as u64,
        );
        let counts: Vec<u32> = chunk.iter().map(|d| d.len() as u32).collect();
        let lens: Vec<u32> = bytes.iter().map(|b| b.len() as u32).collect();
        if n == 1 {
            vint(&mut fdt, u64::from(counts[0]));
            vint(&mut fdt, u64::from(lens[0]));
        } else {
            for vals in [&counts, &lens] {
                if vals.iter().all(|&v| v == vals[0]) {
                    if kind.legacy() {
                        vint(&mut fdt, 0);
                    } else {
                        fdt.push(0);
                    }
                    vint(&mut fdt, u64::from(vals[0]));
                } else if kind.legacy() {
                    vint(&mut fdt, 32);
                    vals.iter()
                        .for_each(|v| fdt.extend_from_slice(&v.to_be_bytes()));
                } else {
                    assert!(vals.len() < 128, "synthetic writer packs only tails");
                    fdt.push(32);
                    vals.iter()
                        .for_each(|v| fdt.extend_from_slice(&v.to_le_bytes()));
                }
            }
        }
        if sliced {
            for slice in data.chunks(chunk_size) {
                compress_payload(kind, slice, &mut fdt);
            }
        } else {
            compress_payload(kind, &data, &mut fdt);
        }
        docs.push(base + n);
    }
    let max_pointer = fdt.len() as u64;
    let max_doc = *docs.last().unwrap();
    let mut dir = SliceDirectory::new();
    if kind.legacy() {
        vint(&mut fdt, chunks.len() as u64);
        vint(&mut fdt, 0);
        let mut fdx = Vec::new();
        index_header(&mut fdx, "Lucene50StoredFieldsHighIndex", version, id);
        vint(&mut fdx, 2);
        vint(&mut fdx, chunks.len() as u64);
        vint(&mut fdx, 0); // doc base
        vint(&mut fdx, 0); // avg chunk docs: deltas carry everything
        vint(&mut fdx, 32);
        for d in &docs[..chunks.len()] {
            fdx.extend_from_slice(&((*d as u32) << 1).to_be_bytes()); // zig-zag of d ≥ 0
        }
        vint(&mut fdx, pointers[0]);
        vint(&mut fdx, 0);
        vint(&mut fdx, 64);
        for p in &pointers {
            fdx.extend_from_slice(&((p - pointers[0]) << 1).to_be_bytes());
        }
        vint(&mut fdx, 0);
        vint(&mut fdx, max_pointer);
        footer(&mut fdx);
        dir.insert("_0.fdx", FileSlice::from_bytes("_0.fdx", fdx));
    } else {
        pointers.push(max_pointer);
        let mut fdx = Vec::new();
        index_header(&mut fdx, "Lucene90FieldsIndexIdx", 0, id);
        let docs_start = fdx.len() as u64;
        docs.iter()
            .for_each(|d| fdx.extend_from_slice(&d.to_le_bytes()));
        let docs_end = fdx.len() as u64;
        pointers
            .iter()
            .for_each(|p| fdx.extend_from_slice(&p.to_le_bytes()));
        let ptrs_end = fdx.len() as u64;
        footer(&mut fdx);
        let mut fdm = Vec::new();
        index_header(&mut fdm, "Lucene90FieldsIndexMeta", 1, id);
        vint(&mut fdm, chunk_size as u64);
        fdm.extend_from_slice(&(max_doc as i32).to_le_bytes());
        fdm.extend_from_slice(&10i32.to_le_bytes());
        fdm.extend_from_slice(&(docs.len() as i32).to_le_bytes());
        let monotonic = |fdm: &mut Vec<u8>| {
            fdm.extend_from_slice(&0i64.to_le_bytes()); // min
            fdm.extend_from_slice(&0f32.to_bits().to_le_bytes()); // avg slope
            fdm.extend_from_slice(&0i64.to_le_bytes()); // offset
            fdm.push(64);
        };
        fdm.extend_from_slice(&docs_start.to_le_bytes());
        monotonic(&mut fdm);
        fdm.extend_from_slice(&docs_end.to_le_bytes());
        monotonic(&mut fdm);
        fdm.extend_from_slice(&ptrs_end.to_le_bytes());
        fdm.extend_from_slice(&max_pointer.to_le_bytes());
        vint(&mut fdm, chunks.len() as u64);
        vint(&mut fdm, 0);
        vint(&mut fdm, 0);
        footer(&mut fdm);
        dir.insert("_0.fdx", FileSlice::from_bytes("_0.fdx", fdx));
        dir.insert("_0.fdm", FileSlice::from_bytes("_0.fdm", fdm));
    }
    footer(&mut fdt);
    dir.insert("_0.fdt", FileSlice::from_bytes("_0.fdt", fdt));
    dir
}

fn synth_chunks(seed: u64) -> Vec<Vec<SynthDoc>> {
    let mut rng = Rng(seed | 1);
    let mut text = |n: usize| -> Vec<u8> {
        let words = [
            "{\"user\":",
            "\"kimchy\"",
            ",\"message\":",
            "\"trying out\"",
            " rfs ",
            "}",
            "42",
        ];
        let mut v = Vec::new();
        while v.len() < n {
            v.extend_from_slice(words[rng.below(words.len())].as_bytes());
        }
        v.truncate(n);
        v
    };
    let doc = |i: u64, src: Vec<u8>| -> SynthDoc {
        vec![
            (0, Value::Binary(format!("doc-{i}").into_bytes())),
            (1, Value::Binary(src)),
            (2, Value::String(format!("routing-{}", i % 3))),
            (3, Value::Int(i as i64 - 50)),
        ]
    };
    vec![
        (0..40)
            .map(|i| doc(i, text(200 + (i as usize * 37) % 400)))
            .collect(),
        // One doc, larger than two chunks: sliced.
        vec![doc(40, text(9_000))],
        // Docs without stored fields only (T = 0).
        vec![Vec::new(); 30],
        (71..73)
            .map(|i| doc(i, text(50)))
            .chain([Vec::new()])
            .collect(),
        vec![doc(74, Vec::new())],
    ]
}

#[test]
fn synthetic_zstd_deflate_and_lz4_segments_read_back() {
    let id = [7u8; 16];
    for kind in [
        Synth::LegacyDeflate,
        Synth::EsZstd,
        Synth::OsZstd,
        Synth::OsZstdNoDict,
        Synth::Lz4Dict,
        Synth::Lz4DictWide,
    ] {
        let chunks = synth_chunks(kind as u64 + 11);
        let dir = write_segment(kind, &chunks, 4096, &id);
        let expected: Vec<&SynthDoc> = chunks.iter().flatten().collect();
        let max_doc = expected.len() as u32;
        let reader = StoredFieldsReader::open(&dir, "_0", &id, max_doc)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert!(
            reader.format().starts_with(kind.codec()),
            "{}",
            reader.format()
        );
        reader.verify_checksums().unwrap();
        let mut cursor = reader.verifying_cursor();
        for (doc, want) in expected.iter().enumerate() {
            let mut got: SynthDoc = Vec::new();
            cursor
                .visit(doc as u32, &mut |n, v| {
                    got.push((n, Value::of(&v)));
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{kind:?} doc {doc}: {e}"));
            assert_eq!(&got, *want, "{kind:?} doc {doc}");
        }
        assert_eq!(cursor.finish().unwrap(), Verified::Whole, "{kind:?}");
        // Wrong id, wrong max doc and a flipped payload byte are errors naming the file.
        assert!(StoredFieldsReader::open(&dir, "_0", &[8u8; 16], max_doc).is_err());
        let wrong = TestSegment {
            name: "_0".into(),
            dir: dir.clone(),
            id,
            max_doc: max_doc + 1,
        };
        assert!(read_all(&dir, &wrong).is_err());
        let fdt = dir
            .open_file("_0.fdt")
            .unwrap()
            .read_all()
            .unwrap()
            .to_vec();
        let mut rng = Rng(99);
        for _ in 0..100 {
            let mut bad = fdt.clone();
            let i = 40 + rng.below(bad.len() - 56);
            bad[i] ^= 1 << rng.below(8);
            let mut d = dir.clone();
            d.insert("_0.fdt", FileSlice::from_bytes("_0.fdt", bad));
            let seg = TestSegment {
                name: "_0".into(),
                dir: d.clone(),
                id,
                max_doc,
            };
            if let Err(e) = read_all(&d, &seg) {
                assert!(e.to_string().contains("_0.fdt"), "{e}");
            }
        }
    }
}

/// A walk checks the `.fdt` CRC-32 from the chunks it reads: a file whose bytes decode
/// but do not match the footer fails when the walk is finished, whatever documents the
/// walk skipped (deleted ones at the start, in the middle, at the end); an out-of-order
/// walk or a plain cursor checks nothing.
#[test]
fn walks_check_the_stored_fields_checksum() {
    let id = [7u8; 16];
    let chunks = synth_chunks(5);
    let dir = write_segment(Synth::EsZstd, &chunks, 4096, &id);
    let max_doc = chunks.iter().map(Vec::len).sum::<usize>() as u32;
    let fdt = dir
        .open_file("_0.fdt")
        .unwrap()
        .read_all()
        .unwrap()
        .to_vec();
    // Same content, wrong CRC in the footer (its low 32 bits).
    let mut bad = fdt.clone();
    let n = bad.len();
    bad[n - 1] ^= 0x10;
    let mut bad_dir = dir.clone();
    bad_dir.insert("_0.fdt", FileSlice::from_bytes("_0.fdt", bad));

    let walk = |d: &SliceDirectory, docs: &mut dyn Iterator<Item = u32>, verifying: bool| {
        let reader = StoredFieldsReader::open(d, "_0", &id, max_doc).unwrap();
        let mut cursor = if verifying {
            reader.verifying_cursor()
        } else {
            reader.cursor()
        };
        for doc in docs {
            cursor.visit(doc, &mut |_, _| Ok(())).unwrap();
        }
        cursor.finish()
    };
    let all = || 0..max_doc;
    let sparse = || (0..max_doc).filter(|d| d % 3 == 1 && *d > max_doc / 4);
    let few = || [max_doc / 2].into_iter();
    for docs in [
        &mut all() as &mut dyn Iterator<Item = u32>,
        &mut sparse(),
        &mut few(),
        &mut std::iter::empty(),
    ] {
        let docs: Vec<u32> = docs.collect();
        assert_eq!(
            walk(&dir, &mut docs.iter().copied(), true).unwrap(),
            Verified::Whole
        );
        match walk(&bad_dir, &mut docs.iter().copied(), true) {
            Err(Error::Checksum { file, .. }) => assert_eq!(file, "_0.fdt"),
            other => panic!("{docs:?}: {other:?}"),
        }
        assert_eq!(
            walk(&bad_dir, &mut docs.iter().copied(), false).unwrap(),
            Verified::No
        );
    }
    // Backwards: verification is given up, nothing fails.
    assert_eq!(
        walk(&bad_dir, &mut (0..max_doc).rev(), true).unwrap(),
        Verified::No
    );
}

/// Binary values kept as shares of the decompressed chunk ([`StoredFieldsCursor::decode`]
/// and `slice_ref`) keep their bytes while the cursor decodes the following chunks: a
/// chunk's buffer is reused only once nothing holds it.
#[test]
fn values_shared_from_a_chunk_survive_later_chunks() {
    let id = [7u8; 16];
    for kind in [Synth::EsZstd, Synth::LegacyDeflate] {
        let chunks = synth_chunks(kind as u64 + 3);
        assert!(chunks.len() > 2);
        let dir = write_segment(kind, &chunks, 4096, &id);
        let expected: Vec<&SynthDoc> = chunks.iter().flatten().collect();
        let reader = StoredFieldsReader::open(&dir, "_0", &id, expected.len() as u32).unwrap();
        let mut cursor = reader.cursor();
        // (doc, position of the field in the doc, the value shared from the chunk)
        let mut kept: Vec<(usize, usize, Bytes)> = Vec::new();
        for doc in 0..expected.len() {
            let chunk = cursor.decode(doc as u32).unwrap().clone();
            let mut k = 0;
            cursor
                .visit(doc as u32, &mut |_, v| {
                    if let StoredValue::Binary(b) = v {
                        kept.push((doc, k, chunk.slice_ref(b)));
                    }
                    k += 1;
                    Ok(())
                })
                .unwrap();
        }
        assert!(!kept.is_empty(), "{kind:?}: no binary values");
        for (doc, k, b) in &kept {
            assert_eq!(
                Value::of(&StoredValue::Binary(b)),
                expected[*doc][*k].1,
                "{kind:?} doc {doc} field {k}"
            );
        }
    }
}
