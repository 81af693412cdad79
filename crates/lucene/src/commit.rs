//! The commit point: the latest `segments_N` file (formats 0–3, Lucene 4.0 to 4.10, and
//! formats 4–10, Lucene 5.0 to 10.x).
//!
//! Fixed-width integers are big-endian in every format. The file lists the segments of the
//! commit with their ids (5.0+), deletion/field-infos/doc-values generations and delete
//! counts; `maxDoc` and everything else about a segment is in its `.si` file. Lucene 4.x
//! commits carry no ids and a plain header (docs/specs/lucene4.md).

use std::collections::BTreeMap;

use crate::codec_util::{self, ID_LEN};
use crate::data_input::{DataInput, Endian};
use crate::directory::Directory;
use crate::error::{Error, Result};
use crate::names;
use crate::version::LuceneVersion;

/// `segments_N` format versions of Lucene 4.x (plain header, no ids).
const FORMAT_40: i32 = 0;
const FORMAT_46: i32 = 1;
const FORMAT_48: i32 = 2;
const FORMAT_49: i32 = 3;
/// `segments_N` format versions.
const FORMAT_50: i32 = 4;
const FORMAT_51: i32 = 5;
const FORMAT_53: i32 = 6;
const FORMAT_70: i32 = 7;
const FORMAT_72: i32 = 8;
const FORMAT_74: i32 = 9;
const FORMAT_86: i32 = 10;

/// One commit point of an index.
#[derive(Debug, Clone)]
pub struct CommitInfo {
    /// `segments_N`.
    pub file_name: String,
    /// N.
    pub generation: u64,
    /// Format version of the file (0–3: Lucene 4.x; 4–10: Lucene 5.0+).
    pub format: i32,
    /// Commit id (16 bytes).
    pub id: [u8; ID_LEN],
    /// Lucene version that wrote the commit (formats ≥ 6).
    pub lucene_version: Option<LuceneVersion>,
    /// Major version that created the index (formats ≥ 7).
    pub index_created_major: Option<u32>,
    /// Commit counter ("version" of the segment infos).
    pub version: i64,
    /// Next segment name counter.
    pub counter: i64,
    /// Oldest Lucene version among the segments (formats ≥ 6, when there are segments).
    pub min_segment_version: Option<LuceneVersion>,
    /// Segments in commit order.
    pub segments: Vec<SegmentCommitInfo>,
    /// Commit user data (Elasticsearch: translog uuid, history uuid, max seq no, …).
    pub user_data: BTreeMap<String, String>,
}

/// A segment as the commit records it.
#[derive(Debug, Clone)]
pub struct SegmentCommitInfo {
    /// `_0`, `_1k`, …
    pub name: String,
    /// Segment id; every per-segment file's header carries it (all zeros for a Lucene 4.x
    /// segment, which has none: see [`SegmentCommitInfo::lucene4`]).
    pub id: [u8; ID_LEN],
    /// Whether the commit is a Lucene 4.x one: the segment's files have plain headers
    /// (no id, no suffix) and Lucene 4 formats.
    pub lucene4: bool,
    /// Codec name (informational only; Elasticsearch and OpenSearch write their own).
    pub codec: String,
    /// Generation of the `.liv` file; −1 for none.
    pub del_gen: i64,
    /// Hard-deleted documents.
    pub del_count: u32,
    /// Generation of the field-infos update; −1 for none.
    pub field_infos_gen: i64,
    /// Generation of the latest doc-values update; −1 for none.
    pub doc_values_gen: i64,
    /// Soft-deleted documents that are not also hard-deleted (format ≥ 9, else 0).
    pub soft_del_count: u32,
    /// Id of this commit of the segment (format ≥ 10).
    pub commit_id: Option<[u8; ID_LEN]>,
    /// Files of the field-infos update.
    pub field_infos_files: Vec<String>,
    /// Doc-values update files per field number.
    pub doc_values_update_files: Vec<(u32, Vec<String>)>,
}

/// Finds the `segments_N` with the highest generation in `dir`.
pub fn latest_commit_file(dir: &dyn Directory) -> Result<(String, u64)> {
    let mut best: Option<(String, u64)> = None;
    for name in dir.list_files()? {
        if let Some(generation) = names::segments_generation(&name) {
            if best.as_ref().is_none_or(|(_, g)| generation > *g) {
                best = Some((name, generation));
            }
        }
    }
    best.ok_or_else(|| {
        Error::corrupt(
            format!("{dir:?}"),
            "no segments_N file: not a Lucene index directory",
        )
    })
}

impl CommitInfo {
    /// Whether the commit was written by Lucene 4.x (formats 0–3).
    pub fn is_lucene4(&self) -> bool {
        self.format < FORMAT_50
    }
}

/// Reads and fully checks (CRC-32 included) the latest commit of `dir`.
pub fn read_latest_commit(dir: &dyn Directory) -> Result<CommitInfo> {
    let (file, generation) = latest_commit_file(dir)?;
    let slice = dir.open_file(&file)?;
    let bytes = slice.read_all()?;
    parse_commit(slice.name(), &file, generation, &bytes)
}

/// Parses the bytes of `segments_N`; `display` names the file in errors.
pub fn parse_commit(
    display: &str,
    file_name: &str,
    generation: u64,
    bytes: &[u8],
) -> Result<CommitInfo> {
    {
        let mut probe = DataInput::new(display, bytes);
        let (codec, version) = codec_util::read_header(&mut probe)?;
        if codec == "segments" && (FORMAT_40..FORMAT_50).contains(&version) {
            return parse_commit_4x(display, file_name, generation, bytes, version);
        }
    }
    codec_util::verify_checksum_bytes(display, bytes)?;
    let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
    let mut input = DataInput::new(display, body);

    let header = codec_util::read_index_header_any(&mut input)?;
    if header.codec != "segments" {
        return Err(Error::corrupt(
            display,
            format!("codec {:?} in header, expected \"segments\"", header.codec),
        ));
    }
    let format = header.version;
    if !(FORMAT_50..=FORMAT_86).contains(&format) {
        return Err(Error::unsupported(
            display,
            format!(
                "segments format {format} (supported: {FORMAT_40} (Lucene 4.0) to {FORMAT_86} (Lucene 8.6–10.x))"
            ),
        ));
    }
    let expected_suffix = names::base36(generation);
    if header.suffix != expected_suffix {
        return Err(Error::corrupt(
            display,
            format!(
                "header suffix {:?} does not match the file's generation {expected_suffix:?}",
                header.suffix
            ),
        ));
    }

    let lucene_version = if format >= FORMAT_53 {
        Some(read_version(&mut input)?)
    } else {
        None
    };
    let index_created_major = if format >= FORMAT_70 {
        Some(read_u32_vint(&mut input, "index created major version")?)
    } else {
        None
    };
    let version = input.read_i64(Endian::Big)?;
    let counter = if format > FORMAT_70 {
        input.read_vlong()?
    } else {
        i64::from(input.read_i32(Endian::Big)?)
    };
    let num_segments = input.read_i32(Endian::Big)?;
    // Each segment takes at least a name, an id and four fixed-width fields.
    let num_segments = input.check_count(i64::from(num_segments), 30, "segment")?;
    let min_segment_version = if num_segments > 0 && format >= FORMAT_53 {
        Some(read_version(&mut input)?)
    } else {
        None
    };

    let mut segments = Vec::with_capacity(num_segments);
    for _ in 0..num_segments {
        segments.push(read_segment(&mut input, format)?);
    }
    let user_data = if format >= FORMAT_51 {
        input.read_map_of_strings()?
    } else {
        input.read_legacy_map_of_strings()?
    };
    if input.remaining() != 0 {
        return Err(input.corrupt(format!(
            "{} unexpected bytes before the footer",
            input.remaining()
        )));
    }
    check_unique(display, &segments)?;
    Ok(CommitInfo {
        file_name: file_name.to_string(),
        generation,
        format,
        id: header.id,
        lucene_version,
        index_created_major,
        version,
        counter,
        min_segment_version,
        segments,
        user_data,
    })
}

fn check_unique(display: &str, segments: &[SegmentCommitInfo]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for s in segments {
        if !seen.insert(s.name.as_str()) {
            return Err(Error::corrupt(
                display,
                format!("segment {} is listed twice", s.name),
            ));
        }
    }
    Ok(())
}

/// Parses a Lucene 4.x `segments_N` (formats 0–3): plain header, no ids; formats 2–3 end
/// with a CodecUtil footer, 0–1 with the CRC-32 of every byte before it as a big-endian
/// long.
fn parse_commit_4x(
    display: &str,
    file_name: &str,
    generation: u64,
    bytes: &[u8],
    format: i32,
) -> Result<CommitInfo> {
    let body = if format >= FORMAT_48 {
        codec_util::verify_checksum_bytes(display, bytes)?;
        &bytes[..bytes.len() - codec_util::FOOTER_LEN]
    } else {
        codec_util::verify_legacy_checksum_bytes(display, bytes)?;
        &bytes[..bytes.len() - 8]
    };
    let mut input = DataInput::new(display, body);
    codec_util::check_header(&mut input, "segments", FORMAT_40, FORMAT_49)?;
    let version = input.read_i64(Endian::Big)?;
    let counter = i64::from(input.read_i32(Endian::Big)?);
    let num_segments = input.read_i32(Endian::Big)?;
    // Each segment takes at least a name, a codec and three fixed-width fields.
    let num_segments = input.check_count(i64::from(num_segments), 22, "segment")?;
    let mut segments = Vec::with_capacity(num_segments);
    for _ in 0..num_segments {
        let name = read_segment_name(&mut input)?;
        let codec = input.read_string()?.to_string();
        let del_gen = input.read_i64(Endian::Big)?;
        let del_count = input.read_i32(Endian::Big)?;
        let field_infos_gen = if format >= FORMAT_46 {
            input.read_i64(Endian::Big)?
        } else {
            -1
        };
        // Before format 3 one generation served field infos and doc values alike.
        let doc_values_gen = if format >= FORMAT_49 {
            input.read_i64(Endian::Big)?
        } else {
            field_infos_gen
        };
        check_generations(
            &input,
            &name,
            del_gen,
            del_count,
            0,
            field_infos_gen,
            doc_values_gen,
        )?;
        let mut field_infos_files = Vec::new();
        let mut doc_values_update_files = Vec::new();
        if format >= FORMAT_49 {
            field_infos_files = input.read_legacy_set_of_strings()?;
            let n = input.read_i32(Endian::Big)?;
            let n = input.check_count(i64::from(n), 8, "doc-values update field")?;
            for _ in 0..n {
                let field = input.read_i32(Endian::Big)?;
                if field < 0 {
                    return Err(
                        input.corrupt(format!("segment {name}: negative field number {field}"))
                    );
                }
                doc_values_update_files.push((field as u32, input.read_legacy_set_of_strings()?));
            }
        } else if format >= FORMAT_46 {
            // Files per update generation (formats 1–2); kept as field-infos files.
            let n = input.read_i32(Endian::Big)?;
            let n = input.check_count(i64::from(n), 12, "update generation")?;
            for _ in 0..n {
                input.read_i64(Endian::Big)?;
                field_infos_files.extend(input.read_legacy_set_of_strings()?);
            }
        }
        segments.push(SegmentCommitInfo {
            name,
            id: [0; ID_LEN],
            lucene4: true,
            codec,
            del_gen,
            del_count: del_count as u32,
            field_infos_gen,
            doc_values_gen,
            soft_del_count: 0,
            commit_id: None,
            field_infos_files,
            doc_values_update_files,
        });
    }
    let user_data = input.read_legacy_map_of_strings()?;
    if input.remaining() != 0 {
        return Err(input.corrupt(format!(
            "{} unexpected bytes before the checksum",
            input.remaining()
        )));
    }
    check_unique(display, &segments)?;
    Ok(CommitInfo {
        file_name: file_name.to_string(),
        generation,
        format,
        id: [0; ID_LEN],
        lucene_version: None,
        index_created_major: Some(4),
        version,
        counter,
        min_segment_version: None,
        segments,
        user_data,
    })
}

fn read_segment_name(input: &mut DataInput<'_>) -> Result<String> {
    let name = input.read_string()?.to_string();
    if !name.starts_with('_') || name.len() < 2 || name.contains(['/', '\\', '.']) {
        return Err(input.corrupt(format!("invalid segment name {name:?}")));
    }
    Ok(name)
}

/// Checks a segment's generations and delete counts are consistent.
fn check_generations(
    input: &DataInput<'_>,
    name: &str,
    del_gen: i64,
    del_count: i32,
    soft_del_count: i32,
    field_infos_gen: i64,
    doc_values_gen: i64,
) -> Result<()> {
    for (what, gen) in [
        ("deletion", del_gen),
        ("field infos", field_infos_gen),
        ("doc values", doc_values_gen),
    ] {
        if gen < -1 || gen == 0 {
            return Err(input.corrupt(format!("segment {name}: invalid {what} generation {gen}")));
        }
    }
    if del_count < 0 || soft_del_count < 0 {
        return Err(input.corrupt(format!(
            "segment {name}: negative delete count ({del_count} hard, {soft_del_count} soft)"
        )));
    }
    if del_gen == -1 && del_count != 0 {
        return Err(input.corrupt(format!(
            "segment {name}: {del_count} deletes but no deletion generation"
        )));
    }
    Ok(())
}

fn read_segment(input: &mut DataInput<'_>, format: i32) -> Result<SegmentCommitInfo> {
    let name = read_segment_name(input)?;
    if format < FORMAT_70 {
        match input.read_u8()? {
            1 => {}
            0 => {
                return Err(Error::unsupported(
                    input.file(),
                    format!("segment {name} has no id (written by Lucene 4.x)"),
                ))
            }
            b => return Err(input.corrupt(format!("invalid has-id marker {b}"))),
        }
    }
    let id = input.read_array::<ID_LEN>()?;
    let codec = input.read_string()?.to_string();
    let del_gen = input.read_i64(Endian::Big)?;
    let del_count = input.read_i32(Endian::Big)?;
    let field_infos_gen = input.read_i64(Endian::Big)?;
    let doc_values_gen = input.read_i64(Endian::Big)?;
    let soft_del_count = if format > FORMAT_72 {
        input.read_i32(Endian::Big)?
    } else {
        0
    };
    let commit_id = if format > FORMAT_74 {
        match input.read_u8()? {
            0 => None,
            1 => Some(input.read_array::<ID_LEN>()?),
            b => return Err(input.corrupt(format!("invalid segment commit id marker {b}"))),
        }
    } else {
        None
    };
    check_generations(
        input,
        &name,
        del_gen,
        del_count,
        soft_del_count,
        field_infos_gen,
        doc_values_gen,
    )?;
    let legacy = format < FORMAT_51;
    let field_infos_files = read_set(input, legacy)?;
    let num_dv = input.read_i32(Endian::Big)?;
    let num_dv = input.check_count(i64::from(num_dv), 5, "doc-values update field")?;
    let mut doc_values_update_files = Vec::with_capacity(num_dv);
    for _ in 0..num_dv {
        let field = input.read_i32(Endian::Big)?;
        if field < 0 {
            return Err(input.corrupt(format!("segment {name}: negative field number {field}")));
        }
        doc_values_update_files.push((field as u32, read_set(input, legacy)?));
    }
    Ok(SegmentCommitInfo {
        name,
        id,
        lucene4: false,
        codec,
        del_gen,
        del_count: del_count as u32,
        field_infos_gen,
        doc_values_gen,
        soft_del_count: soft_del_count as u32,
        commit_id,
        field_infos_files,
        doc_values_update_files,
    })
}

fn read_set(input: &mut DataInput<'_>, legacy: bool) -> Result<Vec<String>> {
    if legacy {
        input.read_legacy_set_of_strings()
    } else {
        input.read_set_of_strings()
    }
}

fn read_u32_vint(input: &mut DataInput<'_>, what: &str) -> Result<u32> {
    let v = input.read_vint()?;
    u32::try_from(v).map_err(|_| input.corrupt(format!("negative {what} {v}")))
}

/// A version triple written as three vInts.
fn read_version(input: &mut DataInput<'_>) -> Result<LuceneVersion> {
    let major = read_u32_vint(input, "version major")?;
    let minor = read_u32_vint(input, "version minor")?;
    let bugfix = read_u32_vint(input, "version bugfix")?;
    Ok(LuceneVersion::new(major, minor, bugfix))
}
