//! `rfs lucene dump|info`: read a Lucene index directory directly.
//!
//! `dump` prints one JSON line per live document in the document-line format of the
//! Lucene fixtures' golden files (ASCII only, binary as base64, floats as Java's
//! `toString` plus their IEEE-754 bits), so output can be compared with Lucene's own.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use base64::Engine;
use clap::Subcommand;
use lucene::{FieldInfo, IndexReader, OpenOptions, StoredValue};

#[derive(Debug, Subcommand)]
pub enum LuceneCommand {
    /// Print one JSON line per live document (the format of the fixtures' golden files).
    Dump {
        /// The index directory (holding `segments_N`).
        dir: std::path::PathBuf,
        /// Numeric doc-values field that marks soft-deleted documents (Elasticsearch and
        /// OpenSearch: `__soft_deletes`). Without it only hard deletes are applied.
        #[arg(long, env = "RFS_SOFT_DELETES_FIELD")]
        soft_deletes_field: Option<String>,
        /// Verify the CRC-32 of every file read before dumping.
        #[arg(long, env = "RFS_VERIFY_CHECKSUMS")]
        verify_checksums: bool,
        /// First shard-global doc id to dump (any u64).
        #[arg(long, env = "RFS_LUCENE_FROM", default_value_t = 0, value_name = "DOC")]
        from: u64,
        /// Stop before this shard-global doc id (any u64; default: the end).
        #[arg(long, env = "RFS_LUCENE_TO", value_name = "DOC")]
        to: Option<u64>,
        /// Also print each document's doc values: `"values":{"field":[…]}`, numbers as
        /// longs, terms and binaries in base64 (the format of the doc-values goldens).
        #[arg(long, env = "RFS_LUCENE_DOC_VALUES")]
        doc_values: bool,
    },
    /// Print segments, Lucene versions, codecs and modes, max doc and live counts.
    Info {
        /// The index directory (holding `segments_N`).
        dir: std::path::PathBuf,
        /// Numeric doc-values field that marks soft-deleted documents.
        #[arg(long, env = "RFS_SOFT_DELETES_FIELD")]
        soft_deletes_field: Option<String>,
        /// One JSON object instead of a table.
        #[arg(long, env = "RFS_JSON")]
        json: bool,
    },
}

pub fn run(cmd: LuceneCommand) -> anyhow::Result<u8> {
    match cmd {
        LuceneCommand::Dump {
            dir,
            soft_deletes_field,
            verify_checksums,
            from,
            to,
            doc_values,
        } => {
            let reader = open(&dir, soft_deletes_field, verify_checksums)?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            dump_with(&reader, from..to.unwrap_or(u64::MAX), doc_values, &mut out)?;
            out.flush()?;
            Ok(0)
        }
        LuceneCommand::Info {
            dir,
            soft_deletes_field,
            json,
        } => {
            let reader = open(&dir, soft_deletes_field, false)?;
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            if json {
                writeln!(out, "{}", info_json(&reader))?;
            } else {
                write_info_table(&reader, &mut out)?;
            }
            Ok(0)
        }
    }
}

fn open(
    dir: &std::path::Path,
    soft_deletes_field: Option<String>,
    verify_checksums: bool,
) -> anyhow::Result<IndexReader> {
    let d = lucene::FsDirectory::open(dir)?;
    let opts = OpenOptions {
        soft_deletes_field,
        verify_checksums,
        verified: None,
    };
    IndexReader::open(Arc::new(d), &opts)
        .with_context(|| format!("opening the Lucene index in {}", dir.display()))
}

/// Writes every live document with a shard-global doc id in `range` as a golden-format
/// line, with its doc values when `doc_values`.
pub fn dump_with(
    reader: &IndexReader,
    range: std::ops::Range<u64>,
    doc_values: bool,
    out: &mut dyn Write,
) -> anyhow::Result<u64> {
    let mut dv_seg = usize::MAX;
    let mut dv_fields: Vec<lucene::FieldValues> = Vec::new();
    let mut dv_value = lucene::DocValue::default();
    let segments = reader.segments();
    let mut docs = reader.documents(range)?;
    let mut line = String::with_capacity(4096);
    let mut fields = String::with_capacity(4096);
    let mut count = 0u64;
    let mut seg_index = 0usize;
    loop {
        fields.clear();
        let mut first = true;
        let next = docs.next(&mut |field: &FieldInfo, value: StoredValue<'_>| {
            if !first {
                fields.push(',');
            }
            first = false;
            write_field(&mut fields, &field.name, value);
            Ok(())
        })?;
        let Some(global) = next else { break };
        while segments[seg_index].doc_base() + u64::from(segments[seg_index].max_doc()) <= global {
            seg_index += 1;
        }
        let seg = &segments[seg_index];
        line.clear();
        line.push_str("{\"seg\":");
        push_json_string(&mut line, seg.name());
        line.push_str(&format!(
            ",\"doc\":{},\"fields\":[",
            global - seg.doc_base()
        ));
        line.push_str(&fields);
        line.push(']');
        if doc_values {
            if dv_seg != seg_index {
                dv_seg = seg_index;
                dv_fields.clear();
                let mut dv = seg.doc_values();
                let mut names: Vec<&str> = seg
                    .field_infos()
                    .iter()
                    .filter(|f| f.doc_values_type != lucene::DocValuesType::None)
                    .map(|f| f.name.as_str())
                    .collect();
                names.sort_unstable();
                for n in names {
                    if let Some(f) = dv.field(n)? {
                        dv_fields.push(f);
                    }
                }
            }
            line.push_str(",\"values\":{");
            let mut first = true;
            let local = (global - seg.doc_base()) as u32;
            for f in dv_fields.iter_mut() {
                if !f.read(local, &mut dv_value)? {
                    continue;
                }
                if !first {
                    line.push(',');
                }
                first = false;
                push_json_string(&mut line, f.name());
                line.push_str(":[");
                let mut items: Vec<String> =
                    dv_value.numbers.iter().map(|n| n.to_string()).collect();
                for b in &dv_value.bytes {
                    let mut t = String::from("\"");
                    base64::engine::general_purpose::STANDARD.encode_string(b, &mut t);
                    t.push('"');
                    items.push(t);
                }
                line.push_str(&items.join(","));
                line.push(']');
            }
            line.push('}');
        }
        line.push_str("}\n");
        out.write_all(line.as_bytes())?;
        count += 1;
    }
    Ok(count)
}

fn write_field(out: &mut String, name: &str, value: StoredValue<'_>) {
    out.push_str("{\"name\":");
    push_json_string(out, name);
    match value {
        StoredValue::String(s) => {
            out.push_str(",\"type\":\"string\",\"value\":");
            push_json_string(out, s);
        }
        StoredValue::Binary(b) => {
            out.push_str(",\"type\":\"binary\",\"value\":\"");
            base64::engine::general_purpose::STANDARD.encode_string(b, out);
            out.push('"');
        }
        StoredValue::Int(v) => out.push_str(&format!(",\"type\":\"int\",\"value\":{v}")),
        StoredValue::Long(v) => out.push_str(&format!(",\"type\":\"long\",\"value\":{v}")),
        StoredValue::Float(v) => out.push_str(&format!(
            ",\"type\":\"float\",\"value\":\"{}\",\"bits\":\"{:08x}\"",
            java_float_string(f64::from(v), v.is_nan(), &float_digits(v)),
            v.to_bits()
        )),
        StoredValue::Double(v) => out.push_str(&format!(
            ",\"type\":\"double\",\"value\":\"{}\",\"bits\":\"{:016x}\"",
            java_float_string(v, v.is_nan(), &double_digits(v)),
            v.to_bits()
        )),
    }
    out.push('}');
}

/// A JSON string with every character outside printable ASCII escaped as `\uXXXX`
/// (UTF-16 surrogate pairs beyond the BMP), as the golden files write them.
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            ' '..='\u{7e}' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Shortest round-trip digits of `|v|` in `{:e}` form; when that is a single digit, Java
/// prints two (`d.d`) and picks the two-digit decimal closest to the exact value.
fn float_digits(v: f32) -> String {
    let a = v.abs();
    let s = format!("{a:e}");
    if a.is_finite() && !s.contains('.') {
        let two = format!("{a:.1e}");
        if two.parse::<f32>().ok() == Some(a) {
            return two;
        }
    }
    s
}

/// As [`float_digits`], for doubles.
fn double_digits(v: f64) -> String {
    let a = v.abs();
    let s = format!("{a:e}");
    if a.is_finite() && !s.contains('.') {
        let two = format!("{a:.1e}");
        if two.parse::<f64>().ok() == Some(a) {
            return two;
        }
    }
    s
}

/// Java's `Float.toString`/`Double.toString` from the shortest round-trip digits
/// (`sci` is Rust's `{:e}` of the absolute value): plain notation for magnitudes in
/// [1e-3, 1e7), computerized scientific notation (`1.0E10`) otherwise.
fn java_float_string(v: f64, nan: bool, sci: &str) -> String {
    if nan {
        return "NaN".into();
    }
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_infinite() {
        return format!("{sign}Infinity");
    }
    if v == 0.0 {
        return format!("{sign}0.0");
    }
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    if (-3..7).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let mut s = String::from(sign);
        if point <= 0 {
            s.push_str("0.");
            s.extend(std::iter::repeat_n('0', (-point) as usize));
            s.push_str(&digits);
        } else {
            let p = point as usize;
            if digits.len() > p {
                s.push_str(&digits[..p]);
                s.push('.');
                s.push_str(&digits[p..]);
            } else {
                s.push_str(&digits);
                s.extend(std::iter::repeat_n('0', p - digits.len()));
                s.push_str(".0");
            }
        }
        s
    } else {
        let rest = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{rest}E{exp}", &digits[..1])
    }
}

fn info_json(reader: &IndexReader) -> serde_json::Value {
    let commit = reader.commit();
    let segments: Vec<serde_json::Value> = reader
        .segments()
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name(),
                "docBase": s.doc_base(),
                "maxDoc": s.max_doc(),
                "liveDocs": s.live_count(),
                "hardDeleted": s.hard_deleted_count(),
                "softDeleted": s.soft_deleted_count(),
                "version": s.lucene_version().to_string(),
                "minVersion": s.segment_info().min_version.map(|v| v.to_string()),
                "codec": s.codec(),
                "compound": s.is_compound(),
                "storedFieldsFormat": s.stored_fields_format(),
                "storedFieldsMode": s.stored_fields_mode(),
                "fieldInfos": s.field_infos().format,
                "fields": s.field_infos().len(),
                "delGen": s.commit_info().del_gen,
                "fieldInfosGen": s.commit_info().field_infos_gen,
                "docValuesGen": s.commit_info().doc_values_gen,
                "attributes": s.segment_info().attributes,
            })
        })
        .collect();
    serde_json::json!({
        "segmentsFile": commit.file_name,
        "generation": commit.generation,
        "format": commit.format,
        "luceneVersion": commit.lucene_version.map(|v| v.to_string()),
        "indexCreatedVersionMajor": commit.index_created_major,
        "maxDoc": reader.max_doc(),
        "liveDocs": reader.num_live_docs(),
        "userData": commit.user_data,
        "segments": segments,
    })
}

fn write_info_table(reader: &IndexReader, out: &mut dyn Write) -> anyhow::Result<()> {
    let commit = reader.commit();
    writeln!(
        out,
        "commit {} (format {}, written by Lucene {}, index created by Lucene {})",
        commit.file_name,
        commit.format,
        commit
            .lucene_version
            .map_or("<5.3".to_string(), |v| v.to_string()),
        commit
            .index_created_major
            .map_or("?".to_string(), |v| format!("{v}.x")),
    )?;
    writeln!(
        out,
        "{} segments, {} docs, {} live",
        reader.segments().len(),
        reader.max_doc(),
        reader.num_live_docs()
    )?;
    let rows: Vec<[String; 9]> = reader
        .segments()
        .iter()
        .map(|s| {
            [
                s.name().to_string(),
                s.lucene_version().to_string(),
                s.codec().to_string(),
                if s.is_compound() { "cfs" } else { "files" }.to_string(),
                s.stored_fields_format().unwrap_or("-").to_string(),
                s.stored_fields_mode().unwrap_or("-").to_string(),
                s.max_doc().to_string(),
                s.live_count().to_string(),
                format!("{}/{}", s.hard_deleted_count(), s.soft_deleted_count()),
            ]
        })
        .collect();
    let header = [
        "segment",
        "version",
        "codec",
        "layout",
        "stored fields",
        "mode",
        "max doc",
        "live",
        "deleted hard/soft",
    ];
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[&str]| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    writeln!(out, "{}", line(&header))?;
    for r in &rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(&cells))?;
    }
    if !commit.user_data.is_empty() {
        writeln!(out, "user data:")?;
        for (k, v) in &commit.user_data {
            writeln!(out, "  {k} = {v}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jf(v: f32) -> String {
        java_float_string(f64::from(v), v.is_nan(), &float_digits(v))
    }
    fn jd(v: f64) -> String {
        java_float_string(v, v.is_nan(), &double_digits(v))
    }

    #[test]
    fn floats_print_like_java() {
        assert_eq!(jf(-0.0), "-0.0");
        assert_eq!(jf(f32::from_bits(1)), "1.4E-45");
        assert_eq!(jd(f64::from_bits(1)), "4.9E-324");
        assert_eq!(jd(2.0E23), "2.0E23");
        assert_eq!(jd(100.0), "100.0");
        assert_eq!(jd(0.1), "0.1");
        assert_eq!(jf(0.1), "0.1");
        assert_eq!(jf(1.0), "1.0");
        assert_eq!(jf(-0.1), "-0.1");
        assert_eq!(jf(-6.0712216E-7), "-6.0712216E-7");
        assert_eq!(jf(-1.5536528), "-1.5536528");
        assert_eq!(jf(-1.0452841E35), "-1.0452841E35");
        assert_eq!(jf(f32::NAN), "NaN");
        assert_eq!(jf(f32::NEG_INFINITY), "-Infinity");
        assert_eq!(jd(0.002), "0.002");
        assert_eq!(jd(1e7), "1.0E7");
        assert_eq!(jd(9999999.0), "9999999.0");
        assert_eq!(jd(0.001), "0.001");
        assert_eq!(jd(0.0001), "1.0E-4");
        assert_eq!(jd(123.5), "123.5");
        assert_eq!(jd(10.346235548784492), "10.346235548784492");
        assert_eq!(jd(-1.3675479654292703E237), "-1.3675479654292703E237");
    }

    #[test]
    fn strings_escape_like_the_goldens() {
        let mut s = String::new();
        push_json_string(
            &mut s,
            "quote\" backslash\\ newline\n tab\t cr\r nul\0 \u{7f}é😀",
        );
        assert_eq!(
            s,
            r#""quote\" backslash\\ newline\n tab\t cr\r nul\u0000 \u007f\u00e9\ud83d\ude00""#
        );
    }
}
