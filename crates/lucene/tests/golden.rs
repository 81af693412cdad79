//! The reader against real Lucene: every generated fixture index and every bwc index with
//! a golden file must yield exactly the documents Lucene itself reads, with the live counts
//! and `_source` CRC sums the writer recorded.

mod common;

use common::{assert_docs_eq, in_generation_order, read_expected, read_golden, Value};

fn check_against_golden(fx: &common::Fixture) {
    let golden = read_golden(fx.golden.as_ref().unwrap());
    let reader = fx
        .open(&fx.options())
        .unwrap_or_else(|e| panic!("{}: open failed: {e}", fx.name));
    let got = common::dump(&reader).unwrap_or_else(|e| panic!("{}: dump failed: {e}", fx.name));
    let want = in_generation_order(golden.docs);
    assert_docs_eq(&fx.name, &got, &want);

    // Index and per-segment counts against the golden header.
    let h = &golden.header;
    assert_eq!(
        reader.max_doc(),
        h["maxDoc"].as_u64().unwrap(),
        "{}: maxDoc",
        fx.name
    );
    assert_eq!(
        reader.num_live_docs(),
        h["numDocs"].as_u64().unwrap(),
        "{}: numDocs",
        fx.name
    );
    assert_eq!(
        reader.commit().file_name,
        h["segmentsFile"].as_str().unwrap(),
        "{}",
        fx.name
    );
    let segs = h["segments"].as_array().unwrap();
    assert_eq!(
        reader.segments().len(),
        segs.len(),
        "{}: segment count",
        fx.name
    );
    for s in segs {
        let name = s["name"].as_str().unwrap();
        let seg = reader
            .segments()
            .iter()
            .find(|r| r.name() == name)
            .unwrap_or_else(|| panic!("{}: segment {name} missing", fx.name));
        let ctx = format!("{} {name}", fx.name);
        assert_eq!(
            u64::from(seg.max_doc()),
            s["maxDoc"].as_u64().unwrap(),
            "{ctx}: maxDoc"
        );
        assert_eq!(
            u64::from(seg.live_count()),
            s["numDocs"].as_u64().unwrap(),
            "{ctx}: numDocs"
        );
        assert_eq!(
            u64::from(seg.commit_info().del_count),
            s["delCount"].as_u64().unwrap(),
            "{ctx}"
        );
        assert_eq!(
            u64::from(seg.commit_info().soft_del_count),
            s["softDelCount"].as_u64().unwrap(),
            "{ctx}"
        );
        if fx.soft_deletes_field().is_some() {
            assert_eq!(
                seg.soft_deleted_count(),
                seg.commit_info().soft_del_count,
                "{ctx}: soft deletes found in doc values vs commit"
            );
        }
        assert_eq!(seg.codec(), s["codec"].as_str().unwrap(), "{ctx}: codec");
        assert_eq!(
            seg.is_compound(),
            s["useCompoundFile"].as_bool().unwrap(),
            "{ctx}"
        );
        assert_eq!(
            seg.lucene_version().to_string(),
            s["version"].as_str().unwrap(),
            "{ctx}"
        );
        if let Some(mode) = s["attributes"].as_object().and_then(|a| {
            a.iter()
                .find(|(k, _)| k.ends_with("StoredFieldsFormat.mode"))
        }) {
            assert_eq!(
                seg.stored_fields_mode(),
                mode.1.as_str(),
                "{ctx}: stored-fields mode"
            );
        }
    }

    // The writer's own record of what is live.
    if let Some(expected) = &fx.expected {
        let e = read_expected(expected);
        let live: u64 = e["expectedLive"].parse().unwrap();
        assert_eq!(reader.num_live_docs(), live, "{}: expectedLive", fx.name);
        assert_eq!(got.len() as u64, live, "{}: dumped docs", fx.name);
        let mut crc_sum = 0u64;
        let mut with_source = 0u64;
        let mut no_fields = 0u64;
        for d in &got {
            if d.fields.is_empty() {
                no_fields += 1;
            }
            if let Some((_, Value::Binary(src))) = d.fields.iter().find(|(n, _)| n == "_source") {
                crc_sum += u64::from(crc32fast::hash(src));
                with_source += 1;
            }
        }
        let want_crc: u64 = e["expectedSourceCrcSum"].parse().unwrap();
        assert_eq!(crc_sum, want_crc, "{}: expectedSourceCrcSum", fx.name);
        if let Some(v) = e.get("expectedLiveWithSource") {
            assert_eq!(
                with_source,
                v.parse::<u64>().unwrap(),
                "{}: expectedLiveWithSource",
                fx.name
            );
        }
        if let Some(v) = e.get("expectedNoStoredFields") {
            assert_eq!(
                no_fields,
                v.parse::<u64>().unwrap(),
                "{}: expectedNoStoredFields",
                fx.name
            );
        }
    }
}

#[test]
fn generated_indexes_match_golden() {
    let Some(fixtures) = testkit::fixtures::require_fixtures("generated_indexes_match_golden")
    else {
        return;
    };
    let all = common::generated(&fixtures);
    for fx in &all {
        check_against_golden(fx);
    }
    eprintln!("{} generated indexes match their golden files", all.len());
}

#[test]
fn bwc_indexes_match_golden() {
    let Some(fixtures) = testkit::fixtures::require_fixtures("bwc_indexes_match_golden") else {
        return;
    };
    let all = common::bwc(&fixtures);
    let with_golden: Vec<_> = all.iter().filter(|f| f.golden.is_some()).collect();
    assert!(
        with_golden.len() >= 13,
        "bwc goldens: {}",
        with_golden.len()
    );
    for fx in with_golden {
        check_against_golden(fx);
    }
}

/// Lucene 5.5 and 6.6 indexes (which today's Lucene no longer opens) open and dump, and
/// hold the same documents as the 7.7 index made by the same Lucene test code.
#[test]
fn old_bwc_indexes_open_and_dump() {
    let Some(fixtures) = testkit::fixtures::require_fixtures("old_bwc_indexes_open_and_dump")
    else {
        return;
    };
    let all = common::bwc(&fixtures);
    for name in [
        "unsupported.5.5.5-nocfs",
        "unsupported.6.6.6-nocfs",
        "unsupported.7.7.3-nocfs",
        "unsupported.7.7.3-cfs",
    ] {
        let fx = all
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        let reader = fx
            .open(&fx.options())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let docs = common::dump(&reader).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(docs.len() as u64, reader.num_live_docs(), "{name}");
        assert!(!docs.is_empty(), "{name}: no documents");
        let major = reader.segments()[0].lucene_version().major;
        assert_eq!(
            major.to_string(),
            name.split('.').nth(1).unwrap(),
            "{name}: segment version"
        );
    }
}

/// Reading from any global doc id yields exactly the tail of the full dump.
#[test]
fn documents_start_at_any_global_doc_id() {
    let Some(fixtures) =
        testkit::fixtures::require_fixtures("documents_start_at_any_global_doc_id")
    else {
        return;
    };
    for fx in common::generated(&fixtures).iter().filter(|f| {
        f.name == "l9-best_speed-nocfs-soft" || f.name == "l8-best_compression-cfs-soft"
    }) {
        let reader = fx.open(&fx.options()).unwrap();
        let all = common::dump(&reader).unwrap();
        let global = |d: &common::Doc| {
            let s = reader
                .segments()
                .iter()
                .find(|s| s.name() == d.seg)
                .unwrap();
            s.doc_base() + u64::from(d.doc)
        };
        let max = reader.max_doc();
        for start in [0, 1, 7, 449, 450, 451, 900, max / 2, max - 1, max, max + 5] {
            for end in [start, start + 1, start + 300, max, u64::MAX] {
                let got = common::dump_range(&reader, start..end).unwrap();
                let want: Vec<_> = all
                    .iter()
                    .filter(|d| (start..end).contains(&global(d)))
                    .cloned()
                    .collect();
                assert_docs_eq(&format!("{} {start}..{end}", fx.name), &got, &want);
            }
        }
    }
}

/// Full checksum verification of every file read passes on intact indexes.
#[test]
fn verify_checksums_passes_on_intact_indexes() {
    let Some(fixtures) =
        testkit::fixtures::require_fixtures("verify_checksums_passes_on_intact_indexes")
    else {
        return;
    };
    for fx in common::generated(&fixtures)
        .iter()
        .chain(common::bwc(&fixtures).iter())
    {
        let mut opts = fx.options();
        opts.verify_checksums = true;
        let reader = fx
            .open(&opts)
            .unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        reader
            .verify_checksums()
            .unwrap_or_else(|e| panic!("{}: {e}", fx.name));
    }
}
