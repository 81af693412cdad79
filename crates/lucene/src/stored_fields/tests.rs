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

/// Segments (name, maxDoc) of the golden header and its doc lines per segment.
fn read_golden(path: &Path) -> (Vec<(String, u32)>, HashMap<String, Vec<GoldenDoc>>) {
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
        let mut cursor = reader.cursor();
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
