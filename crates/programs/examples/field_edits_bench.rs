//! What the field-edit fast path costs per document, apart from the pipeline: on documents
//! shaped like `scripts/bench-e2e`'s (the fixture tools' `MakeIndex`), the `_source` check
//! alone (what the reader does without a program), and the check followed by the
//! benchmark's rename or general program through the fast path (what the reader does with
//! one), in nanoseconds of CPU per document (median of the passes, interleaved).
//!
//!     cargo run --release -p programs --example field_edits_bench [DOCS] [PASSES] [NAME]

use std::sync::Arc;

use bytes::Bytes;
use coordination::Position;
use engine::document::{Document, Op};
use programs::field_edits::FieldEdits;
use programs::program::JqProgram;
use programs::reshape::DocumentProgram;

mod common;
use common::{cpu_ns, source};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let passes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    // only the programs whose name holds this (for a profile of one)
    let only = args.next().unwrap_or_default();
    // FIELD_EDITS_BENCH_NO_NOTE=1: the reader's check not noted, so the program checks
    // the source again (as before the note)
    let note = std::env::var_os("FIELD_EDITS_BENCH_NO_NOTE").is_none();
    let programs = [
        ("jq_fast", "._source |= (.buyer = .customer | del(.customer))"),
        (
            "jq_gen",
            "._source.customer.name |= ascii_upcase | ._source.total = (._source.price * ._source.qty)",
        ),
    ];
    let programs: Vec<(&str, FieldEdits)> = programs
        .iter()
        .filter(|(name, _)| name.contains(only.as_str()))
        .map(|(name, text)| {
            let jq = Arc::new(JqProgram::compile(text).expect("compiles"));
            (
                *name,
                FieldEdits::recognise(jq).expect("the fast path takes it"),
            )
        })
        .collect();
    for size in [390, 1000] {
        let docs: Vec<Document> = (0..n)
            .map(|i| Document {
                position: Position::Doc(i as u64),
                op: Op::Index,
                index: Arc::from("big"),
                id: format!("doc-{i:08}"),
                doc_type: None,
                routing: None,
                source: Bytes::from(source(i, size)),
            })
            .collect();
        let bytes: usize = docs.iter().map(|d| d.source.len()).sum();
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); programs.len() + 1];
        let mut out = Vec::with_capacity(1);
        let mut sink = 0usize;
        for _ in 0..passes {
            let t = cpu_ns();
            for d in &docs {
                sink += usize::from(snapshot::json::check_value(&d.source).is_ok());
            }
            times[0].push((cpu_ns() - t) as f64 / 1e9);
            for (k, (_, p)) in programs.iter().enumerate() {
                let t = cpu_ns();
                for d in &docs {
                    // as the pipeline's reader: the source checked and noted first
                    if let Ok(scan) = snapshot::json::check_value(&d.source) {
                        if !scan.line_breaks && !scan.comments && note {
                            snapshot::json::note_checked(&d.source);
                        }
                    }
                    p.reshape(d, &mut out).expect("runs");
                    sink += out.drain(..).map(|d| d.source.len()).sum::<usize>();
                }
                times[k + 1].push((cpu_ns() - t) as f64 / 1e9);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        print!("~{size} B ({} B average):", bytes / n);
        let per_doc = |s: f64| s * 1e9 / n as f64;
        print!(" check {:.0} ns", per_doc(median(&mut times[0])));
        for (k, (name, _)) in programs.iter().enumerate() {
            print!(", {name} {:.0} ns", per_doc(median(&mut times[k + 1])));
        }
        println!(" per document ({sink} bytes out)");
    }
}
