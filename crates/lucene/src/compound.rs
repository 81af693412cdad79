//! Compound files: `<segment>.cfs` holds the segment's files back to back, `<segment>.cfe`
//! lists them (name without the segment prefix, offset, length).
//!
//! `Lucene50CompoundEntries` (Lucene 5.0–8.x) stores offsets big-endian,
//! `Lucene90CompoundEntries` (9.0+) little-endian. Each inner file keeps its own header and
//! footer, so it is exposed as a plain slice of the `.cfs`.

use crate::codec_util::{self, ID_LEN};
use crate::data_input::{DataInput, Endian};
use crate::directory::{Directory, SliceDirectory};
use crate::error::{Error, Result};
use crate::names;

/// Opens the compound file of `segment` in `dir` as a directory of its inner files, named
/// as they would be outside (`_0.fdt`). The `.cfe` is fully verified; the `.cfs` header
/// and footer are checked structurally (full verification: [`verify_compound_data`]).
pub fn open_compound(
    dir: &dyn Directory,
    segment: &str,
    segment_id: &[u8; ID_LEN],
) -> Result<SliceDirectory> {
    let cfe_name = names::segment_file_name(segment, "", "cfe");
    let cfs_name = names::segment_file_name(segment, "", "cfs");
    let cfe = dir.open_file(&cfe_name)?;
    let cfe_bytes = cfe.read_all()?;
    let entries = parse_entries(cfe.name(), &cfe_bytes, segment_id)?;

    let cfs = dir.open_file(&cfs_name)?;
    let data_codec = match entries.codec {
        "Lucene50CompoundEntries" => "Lucene50CompoundData",
        _ => "Lucene90CompoundData",
    };
    let header_len = codec_util::index_header_len(data_codec, "") as u64;
    if cfs.len() < header_len + codec_util::FOOTER_LEN as u64 {
        return Err(Error::corrupt(
            cfs.name(),
            format!("{} bytes is too short for a compound file", cfs.len()),
        ));
    }
    let head = cfs.read_bytes(0..header_len)?;
    let mut input = DataInput::new(cfs.name(), &head);
    codec_util::check_index_header(
        &mut input,
        data_codec,
        entries.version,
        entries.version,
        segment_id,
        "",
    )?;
    codec_util::check_footer(&cfs)?;
    let data_end = cfs.len() - codec_util::FOOTER_LEN as u64;
    slice_entries(
        cfe.name(),
        &cfs,
        segment,
        entries.entries,
        header_len,
        data_end,
    )
}

/// The entries of a compound file as slices of its `.cfs`, each checked to lie within
/// `header_len..data_end`.
fn slice_entries(
    cfe_name: &str,
    cfs: &crate::directory::FileSlice,
    segment: &str,
    entries: Vec<(String, u64, u64)>,
    header_len: u64,
    data_end: u64,
) -> Result<SliceDirectory> {
    let cfs_name = cfs.name();
    let mut out = SliceDirectory::new();
    for (name, offset, length) in entries {
        let end = offset.checked_add(length);
        match end {
            Some(end) if offset >= header_len && end <= data_end => {}
            _ => {
                return Err(Error::corrupt(
                    cfe_name,
                    format!(
                    "entry {name:?} at {offset}+{length} lies outside the data of {} ({} bytes)",
                    cfs_name,
                    cfs.len()
                ),
                ))
            }
        }
        let full = format!("{segment}{name}");
        let slice = cfs
            .slice(offset..offset + length)?
            .renamed(format!("{}[{full}]", cfs.name()));
        out.insert(full, slice);
    }
    Ok(out)
}

/// Opens a Lucene 4.x compound file (`CompoundFileWriterEntries`/`CompoundFileWriterData`
/// v0–1, plain headers; v1 ends both files with a footer) as a directory of its inner
/// files. The `.cfe` is fully verified, the `.cfs` header and footer structurally.
pub fn open_compound_4x(dir: &dyn Directory, segment: &str) -> Result<SliceDirectory> {
    let cfe_name = names::segment_file_name(segment, "", "cfe");
    let cfs_name = names::segment_file_name(segment, "", "cfs");
    let cfe = dir.open_file(&cfe_name)?;
    let bytes = cfe.read_all()?;
    let display = cfe.name();
    let mut probe = DataInput::new(display, &bytes);
    let version = codec_util::check_header(&mut probe, "CompoundFileWriterEntries", 0, 1)?;
    let body = if version >= 1 {
        codec_util::verify_checksum_bytes(display, &bytes)?;
        &bytes[..bytes.len() - codec_util::FOOTER_LEN]
    } else {
        &bytes[..]
    };
    let mut input = DataInput::new(display, body);
    codec_util::check_header(&mut input, "CompoundFileWriterEntries", version, version)?;
    let entries = read_entries(&mut input, Endian::Big)?;

    let cfs = dir.open_file(&cfs_name)?;
    let data_codec = "CompoundFileWriterData";
    let header_len = codec_util::header_len(data_codec) as u64;
    let footer_len = if version >= 1 {
        codec_util::FOOTER_LEN as u64
    } else {
        0
    };
    if cfs.len() < header_len + footer_len {
        return Err(Error::corrupt(
            cfs.name(),
            format!("{} bytes is too short for a compound file", cfs.len()),
        ));
    }
    let head = cfs.read_bytes(0..header_len)?;
    let mut head_in = DataInput::new(cfs.name(), &head);
    codec_util::check_header(&mut head_in, data_codec, version, version)?;
    if version >= 1 {
        codec_util::check_footer(&cfs)?;
    }
    slice_entries(
        display,
        &cfs,
        segment,
        entries,
        header_len,
        cfs.len() - footer_len,
    )
}

/// Verifies the CRC-32 of the whole `.cfs` of `segment`.
pub fn verify_compound_data(dir: &dyn Directory, segment: &str) -> Result<()> {
    let cfs = dir.open_file(&names::segment_file_name(segment, "", "cfs"))?;
    codec_util::verify_checksum(&cfs)?;
    Ok(())
}

/// The parsed entry table of a `.cfe`.
#[derive(Debug)]
pub struct CompoundEntries<'a> {
    pub codec: &'a str,
    pub version: i32,
    /// (name without segment prefix, offset, length).
    pub entries: Vec<(String, u64, u64)>,
}

/// Parses (and fully verifies) a `.cfe` file.
pub fn parse_entries<'a>(
    display: &'a str,
    bytes: &'a [u8],
    segment_id: &[u8; ID_LEN],
) -> Result<CompoundEntries<'a>> {
    codec_util::verify_checksum_bytes(display, bytes)?;
    let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
    let mut input = DataInput::new(display, body);
    let header = codec_util::read_index_header_any(&mut input)?;
    let endian = match header.codec {
        "Lucene50CompoundEntries" => Endian::Big,
        "Lucene90CompoundEntries" => Endian::Little,
        other => {
            return Err(Error::unsupported(
                display,
                format!(
                    "compound entries codec {other:?} (version {})",
                    header.version
                ),
            ))
        }
    };
    codec_util::check_name_version(display, header.codec, header.version, header.codec, 0, 0)?;
    codec_util::check_id_suffix(display, &header, segment_id, "")?;
    let entries = read_entries(&mut input, endian)?;
    Ok(CompoundEntries {
        codec: header.codec,
        version: header.version,
        entries,
    })
}

/// The entry table after the header: a count, then (name, offset, length) each; nothing
/// may follow it.
fn read_entries(input: &mut DataInput<'_>, endian: Endian) -> Result<Vec<(String, u64, u64)>> {
    let n = input.read_count(17, "compound entry")?;
    let mut entries: Vec<(String, u64, u64)> = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..n {
        let name = input.read_string()?.to_string();
        let offset = input.read_i64(endian)?;
        let length = input.read_i64(endian)?;
        if offset < 0 || length < 0 {
            return Err(input.corrupt(format!(
                "entry {name:?} has negative offset {offset} or length {length}"
            )));
        }
        if name.is_empty() || name.contains(['/', '\\']) {
            return Err(input.corrupt(format!("invalid entry name {name:?}")));
        }
        if !seen.insert(name.clone()) {
            return Err(input.corrupt(format!("duplicate entry {name:?}")));
        }
        entries.push((name, offset as u64, length as u64));
    }
    if input.remaining() != 0 {
        return Err(input.corrupt(format!(
            "{} unexpected bytes before the footer",
            input.remaining()
        )));
    }
    Ok(entries)
}
