//! Property tests of every decoder this crate owns (segments_N, .si, .fnm, .cfe, .liv,
//! doc-values metadata, IndexedDISI), each fed mutated copies of real files: random byte
//! changes, truncations and insertions, with the footer CRC recomputed half of the time so
//! that the parser itself (not only the checksum) meets the damage. No input may panic.
//! Also walks every doc-values metadata file of the bwc indexes, whose fields cover every
//! doc-values type, to check the entry walker against real Lucene 7–10 files.

mod common;

use std::sync::Arc;

use lucene::data_input::Endian;
use lucene::doc_values::{self, DocsWithField};
use lucene::{
    commit, compound, field_infos, live_docs, names, segment_info, DocValuesType, IndexReader,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

type Parser = Box<dyn Fn(&[u8]) -> lucene::Result<()>>;

struct Sample {
    what: String,
    bytes: Vec<u8>,
    parse: Parser,
}

/// Rewrites the footer checksum so that the CRC matches the (mutated) bytes.
fn reseal(b: &mut [u8]) {
    let n = b.len();
    if n >= 16 {
        let crc = crc32fast::hash(&b[..n - 8]);
        b[n - 8..].copy_from_slice(&u64::from(crc).to_be_bytes());
    }
}

#[derive(Debug, Clone)]
enum Edit {
    Xor(usize, u8),
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
}

fn edit_strategy() -> impl Strategy<Value = (Vec<Edit>, bool)> {
    let edit = prop_oneof![
        6 => (any::<usize>(), 1u8..).prop_map(|(i, x)| Edit::Xor(i, x)),
        3 => (any::<usize>(), prop_oneof![Just(0u8), Just(0xFF), Just(0x7F), Just(0x80), any::<u8>()])
            .prop_map(|(i, v)| Edit::Set(i, v)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, v)| Edit::Insert(i, v)),
        1 => any::<usize>().prop_map(Edit::Remove),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ];
    (proptest::collection::vec(edit, 1..6), any::<bool>())
}

fn apply(original: &[u8], edits: &[Edit], seal: bool) -> Vec<u8> {
    let mut b = original.to_vec();
    for e in edits {
        if b.is_empty() {
            break;
        }
        let n = b.len();
        match *e {
            Edit::Xor(i, x) => b[i % n] ^= x,
            Edit::Set(i, v) => b[i % n] = v,
            Edit::Insert(i, v) => b.insert(i % (n + 1), v),
            Edit::Remove(i) => {
                b.remove(i % n);
            }
            Edit::Truncate(i) => b.truncate(i % n),
        }
    }
    if seal {
        reseal(&mut b);
    }
    b
}

fn samples_of(fx: &common::Fixture) -> Vec<Sample> {
    let dir: Arc<dyn lucene::Directory> = Arc::new(lucene::FsDirectory::open(&fx.dir).unwrap());
    let reader = IndexReader::open(dir.clone(), &fx.options()).unwrap();
    let read = |d: &dyn lucene::Directory, name: &str| {
        d.open_file(name).unwrap().read_all().unwrap().to_vec()
    };
    let mut out = Vec::new();

    let c = reader.commit();
    let (file, gen) = (c.file_name.clone(), c.generation);
    out.push(Sample {
        what: format!("{} {file}", fx.name),
        bytes: read(dir.as_ref(), &file),
        parse: Box::new(move |b| commit::parse_commit("segments", &file, gen, b).map(drop)),
    });

    for seg in reader.segments().iter().take(2) {
        let id = *seg.id();
        let name = seg.name().to_string();
        let ci = seg.commit_info().clone();
        let max_doc = seg.max_doc();
        out.push(Sample {
            what: format!("{} {name}.si", fx.name),
            bytes: read(dir.as_ref(), &format!("{name}.si")),
            parse: Box::new(move |b| segment_info::parse_segment_info("si", b, &id).map(drop)),
        });
        if seg.is_compound() {
            out.push(Sample {
                what: format!("{} {name}.cfe", fx.name),
                bytes: read(dir.as_ref(), &format!("{name}.cfe")),
                parse: Box::new(move |b| compound::parse_entries("cfe", b, &id).map(drop)),
            });
        }
        let (fnm_dir, suffix) = if ci.field_infos_gen == -1 {
            (seg.directory().clone(), String::new())
        } else {
            (dir.clone(), names::base36(ci.field_infos_gen as u64))
        };
        let fnm_suffix = suffix.clone();
        out.push(Sample {
            what: format!("{} {name} fnm", fx.name),
            bytes: read(
                fnm_dir.as_ref(),
                &names::segment_file_name(&name, &suffix, "fnm"),
            ),
            parse: Box::new(move |b| {
                field_infos::parse_field_infos("fnm", b, &id, &fnm_suffix).map(drop)
            }),
        });
        if ci.del_gen != -1 {
            let suffix = names::base36(ci.del_gen as u64);
            let liv = names::segment_file_name(&name, &suffix, "liv");
            let del_count = ci.del_count;
            out.push(Sample {
                what: format!("{} {liv}", fx.name),
                bytes: read(dir.as_ref(), &liv),
                parse: Box::new(move |b| {
                    live_docs::parse_live_docs("liv", b, &id, &suffix, max_doc, del_count).map(drop)
                }),
            });
        }
        // Doc-values metadata: every numeric field's entry (walking past all others).
        // (Lucene 5/6 doc values — Lucene54 — predate soft deletes and are not read.)
        let old_dv = fx.name.starts_with("unsupported.5") || fx.name.starts_with("unsupported.6");
        for f in seg
            .field_infos()
            .iter()
            .filter(|_| !old_dv)
            .filter(|f| f.doc_values_type == DocValuesType::Numeric)
            .take(2)
        {
            let suffix = doc_values::doc_values_suffix("fnm", f).unwrap();
            let d = if f.doc_values_gen == -1 {
                seg.directory().clone()
            } else {
                dir.clone()
            };
            let dvm = names::segment_file_name(&name, &suffix, "dvm");
            let infos = seg.field_infos().clone();
            let number = f.number;
            let meta_bytes = read(d.as_ref(), &dvm);
            let docs =
                doc_values::parse_numeric_meta("dvm", &meta_bytes, &id, &suffix, &infos, number)
                    .unwrap();
            out.push(Sample {
                what: format!("{} {dvm} field {}", fx.name, f.name),
                bytes: meta_bytes,
                parse: Box::new(move |b| {
                    doc_values::parse_numeric_meta("dvm", b, &id, &suffix, &infos, number).map(drop)
                }),
            });
            if let DocsWithField::Disi {
                offset,
                length,
                dense_rank_power,
            } = docs
            {
                let dvd = read(
                    d.as_ref(),
                    &names::segment_file_name(
                        &name,
                        &doc_values::doc_values_suffix("fnm", f).unwrap(),
                        "dvd",
                    ),
                );
                let disi = dvd[offset as usize..(offset + length) as usize].to_vec();
                out.push(Sample {
                    what: format!("{} {name} IndexedDISI of {}", fx.name, f.name),
                    bytes: disi,
                    parse: Box::new(move |b| {
                        for endian in [Endian::Big, Endian::Little] {
                            let _ = doc_values::read_indexed_disi(
                                "dvd",
                                b,
                                endian,
                                dense_rank_power,
                                max_doc,
                                &mut |_| {},
                            );
                        }
                        Ok(())
                    }),
                });
            }
        }
    }
    out
}

#[test]
fn decoders_survive_mutated_real_files() {
    let Some(fixtures) = testkit::fixtures::require_fixtures("decoders_survive_mutated_real_files")
    else {
        return;
    };
    let generated = common::generated(&fixtures);
    let bwc = common::bwc(&fixtures);
    let chosen = [
        "l10-best_speed-cfs-soft",
        "l8-best_compression-nocfs-soft",
        "l9-best_compression-cfs-nested",
    ];
    let chosen_bwc = [
        "unsupported.5.5.5-nocfs",
        "unsupported.6.6.6-nocfs",
        "unsupported.7.7.3-cfs",
        "index.8.6.0-nocfs",
        "index.9.12.2-cfs",
        "dvupdates.10.0.0",
    ];
    let mut samples = Vec::new();
    for fx in generated
        .iter()
        .filter(|f| chosen.contains(&f.name.as_str()))
    {
        samples.extend(samples_of(fx));
    }
    for fx in bwc.iter().filter(|f| chosen_bwc.contains(&f.name.as_str())) {
        samples.extend(samples_of(fx));
    }
    assert!(samples.len() > 40, "{} samples", samples.len());
    for s in &samples {
        // The intact file parses.
        (s.parse)(&s.bytes).unwrap_or_else(|e| panic!("{}: intact file fails: {e}", s.what));
        let mut runner = TestRunner::new(Config {
            cases: 256,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&edit_strategy(), |(edits, seal)| {
                let b = apply(&s.bytes, &edits, seal);
                let r = (s.parse)(&b);
                if let Err(e) = r {
                    if e.to_string().is_empty() {
                        return Err(TestCaseError::fail("empty error message"));
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e}", s.what));
    }
    eprintln!("{} decoder samples mutated", samples.len());
}

/// Every numeric field of every doc-values metadata file of the bwc indexes (which hold
/// fields of all five doc-values types, Lucene70/80/90 formats) is found by the walker,
/// which must end exactly at the footer; its docs-with-field set decodes.
#[test]
fn doc_values_walker_reads_every_bwc_metadata_file() {
    let Some(fixtures) =
        testkit::fixtures::require_fixtures("doc_values_walker_reads_every_bwc_metadata_file")
    else {
        return;
    };
    let mut walked = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for fx in common::bwc(&fixtures) {
        if fx.name.starts_with("unsupported.5") || fx.name.starts_with("unsupported.6") {
            continue; // Lucene54 doc values: no soft deletes before Lucene 7
        }
        let dir: Arc<dyn lucene::Directory> = Arc::new(lucene::FsDirectory::open(&fx.dir).unwrap());
        let reader = IndexReader::open(dir.clone(), &fx.options()).unwrap();
        for seg in reader.segments() {
            for f in seg.field_infos().iter() {
                if f.doc_values_type != DocValuesType::None {
                    kinds.insert(format!("{:?}", f.doc_values_type));
                }
                if f.doc_values_type != DocValuesType::Numeric {
                    continue;
                }
                let mut infos_field = f.clone();
                infos_field.name = f.name.clone();
                let docs = doc_values::open_numeric_docs_with_field(
                    seg.directory().as_ref(),
                    dir.as_ref(),
                    seg.name(),
                    seg.id(),
                    "fnm",
                    seg.field_infos(),
                    f,
                    true,
                )
                .unwrap_or_else(|e| panic!("{} {} {}: {e}", fx.name, seg.name(), f.name));
                let mut n = 0u32;
                docs.for_each_doc(seg.max_doc(), |_| n += 1)
                    .unwrap_or_else(|e| panic!("{} {} {}: {e}", fx.name, seg.name(), f.name));
                assert!(n <= seg.max_doc());
                walked += 1;
            }
        }
    }
    assert!(walked > 20, "walked {walked}");
    assert_eq!(kinds.len(), 5, "doc-values types seen: {kinds:?}");
}
