//! Helpers shared by the integration tests: fixture discovery, bwc zips unpacked into
//! temporary directories, golden-file parsing and dumping an index into the same shape.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use lucene::{Directory, FieldInfo, FsDirectory, IndexReader, OpenOptions, StoredValue};

/// A stored value as the golden files describe it; floats and doubles by their bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    String(String),
    Binary(Vec<u8>),
    Int(i32),
    Long(i64),
    Float(u32),
    Double(u64),
}

/// One document line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    pub seg: String,
    pub doc: u32,
    pub fields: Vec<(String, Value)>,
}

/// A golden file: its header and its document lines.
pub struct Golden {
    pub header: serde_json::Value,
    pub docs: Vec<Doc>,
}

/// One fixture index ready to open.
pub struct Fixture {
    pub name: String,
    pub dir: PathBuf,
    pub golden: Option<PathBuf>,
    pub expected: Option<PathBuf>,
    /// Keeps an unzipped bwc index alive.
    _tmp: Option<tempfile::TempDir>,
}

impl Fixture {
    /// The soft-deletes field the golden was made with.
    pub fn soft_deletes_field(&self) -> Option<String> {
        self.name
            .ends_with("-soft")
            .then(|| "__soft_deletes".to_string())
    }

    /// Options for the fixture: its soft-deletes field, checksums checked as files are read.
    pub fn options(&self) -> OpenOptions {
        OpenOptions {
            soft_deletes_field: self.soft_deletes_field(),
            verify_checksums: true,
            verified: None,
        }
    }

    pub fn open(&self, opts: &OpenOptions) -> lucene::Result<IndexReader> {
        IndexReader::open(Arc::new(FsDirectory::open(&self.dir)?), opts)
    }
}

/// Every index folder under `generated/`.
pub fn generated(fixtures: &Path) -> Vec<Fixture> {
    let root = fixtures.join("lucene").join("generated");
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for dir in entries {
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let golden = root.join(format!("{name}.golden.jsonl"));
        let expected = root.join(format!("{name}.expected.txt"));
        out.push(Fixture {
            golden: golden.exists().then_some(golden),
            expected: expected.exists().then_some(expected),
            name,
            dir,
            _tmp: None,
        });
    }
    assert!(
        out.len() >= 30,
        "expected 30 generated indexes, found {}",
        out.len()
    );
    out
}

/// Every bwc zip, unpacked into a temporary directory.
pub fn bwc(fixtures: &Path) -> Vec<Fixture> {
    let root = fixtures.join("lucene").join("bwc");
    let mut zips: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "zip"))
        .collect();
    zips.sort();
    zips.into_iter()
        .map(|zip| {
            let name = zip.file_stem().unwrap().to_str().unwrap().to_string();
            let tmp = tempfile::tempdir().unwrap();
            unzip(&zip, tmp.path());
            let golden = root.join(format!("{name}.golden.jsonl"));
            Fixture {
                golden: golden.exists().then_some(golden),
                expected: None,
                dir: tmp.path().to_path_buf(),
                name,
                _tmp: Some(tmp),
            }
        })
        .collect()
}

/// Extracts the regular files of `zip` (flattened) into `dest`.
pub fn unzip(zip: &Path, dest: &Path) {
    let file = std::fs::File::open(zip).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        if entry.is_dir() {
            continue;
        }
        let entry_name = entry.name().unwrap().to_string();
        let name = Path::new(&entry_name)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let mut out = std::fs::File::create(dest.join(name)).unwrap();
        std::io::copy(&mut entry, &mut out).unwrap();
    }
}

pub fn parse_doc_line(line: &str) -> Doc {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let fields = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = f["name"].as_str().unwrap().to_string();
            let value = match f["type"].as_str().unwrap() {
                "string" => Value::String(f["value"].as_str().unwrap().to_string()),
                "binary" => Value::Binary(
                    base64::engine::general_purpose::STANDARD
                        .decode(f["value"].as_str().unwrap())
                        .unwrap(),
                ),
                "int" => Value::Int(f["value"].as_i64().unwrap() as i32),
                "long" => Value::Long(f["value"].as_i64().unwrap()),
                "float" => {
                    Value::Float(u32::from_str_radix(f["bits"].as_str().unwrap(), 16).unwrap())
                }
                "double" => {
                    Value::Double(u64::from_str_radix(f["bits"].as_str().unwrap(), 16).unwrap())
                }
                t => panic!("unknown type {t}"),
            };
            (name, value)
        })
        .collect();
    Doc {
        seg: v["seg"].as_str().unwrap().to_string(),
        doc: v["doc"].as_u64().unwrap() as u32,
        fields,
    }
}

pub fn read_golden(path: &Path) -> Golden {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let docs = lines.map(parse_doc_line).collect();
    Golden { header, docs }
}

/// Golden documents in our order: segments by generation (name counter), then doc id.
pub fn in_generation_order(mut docs: Vec<Doc>) -> Vec<Doc> {
    docs.sort_by_key(|d| (lucene::names::segment_counter(&d.seg), d.doc));
    docs
}

pub fn to_value(v: StoredValue<'_>) -> Value {
    match v {
        StoredValue::String(s) => Value::String(s.to_string()),
        StoredValue::Binary(b) => Value::Binary(b.to_vec()),
        StoredValue::Int(i) => Value::Int(i),
        StoredValue::Long(l) => Value::Long(l),
        StoredValue::Float(f) => Value::Float(f.to_bits()),
        StoredValue::Double(d) => Value::Double(d.to_bits()),
    }
}

/// Every live document of `reader` with a global id in `range`.
pub fn dump_range(reader: &IndexReader, range: std::ops::Range<u64>) -> lucene::Result<Vec<Doc>> {
    let mut out = Vec::new();
    let mut docs = reader.documents(range)?;
    loop {
        let mut fields = Vec::new();
        let next = docs.next(&mut |f: &FieldInfo, v: StoredValue<'_>| {
            fields.push((f.name.clone(), to_value(v)));
            Ok(())
        })?;
        let Some(global) = next else { break };
        let seg = reader
            .segments()
            .iter()
            .find(|s| global >= s.doc_base() && global < s.doc_base() + u64::from(s.max_doc()))
            .unwrap();
        out.push(Doc {
            seg: seg.name().to_string(),
            doc: (global - seg.doc_base()) as u32,
            fields,
        });
    }
    Ok(out)
}

pub fn dump(reader: &IndexReader) -> lucene::Result<Vec<Doc>> {
    dump_range(reader, 0..u64::MAX)
}

/// `key=value` pairs of an `.expected.txt`.
pub fn read_expected(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_whitespace()
        .filter_map(|t| t.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Asserts two document lists are equal, reporting the first difference readably.
pub fn assert_docs_eq(name: &str, got: &[Doc], want: &[Doc]) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            let short = |d: &Doc| {
                let s = format!("{d:?}");
                s.chars().take(600).collect::<String>()
            };
            panic!(
                "{name}: document {i} differs\n  got:  {}\n  want: {}",
                short(g),
                short(w)
            );
        }
    }
    assert_eq!(got.len(), want.len(), "{name}: number of live documents");
}

/// All files of `dir` loaded into memory, for mutation tests.
pub fn load_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let d = FsDirectory::open(dir).unwrap();
    d.list_files()
        .unwrap()
        .into_iter()
        .filter(|n| n != "write.lock")
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

/// A directory over in-memory copies of `files`.
pub fn memory_dir(files: &BTreeMap<String, Vec<u8>>) -> Arc<dyn Directory> {
    let mut d = lucene::SliceDirectory::new();
    for (name, bytes) in files {
        d.insert(
            name.clone(),
            lucene::FileSlice::from_bytes(name.clone(), bytes.clone()),
        );
    }
    Arc::new(d)
}
